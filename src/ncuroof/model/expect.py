"""Algorithmic FLOPs and bytes the user knows (``--expect FILE``), next to what ncu counted.

The file (TOML, or YAML when PyYAML is installed) names sizes and, per kernel-name pattern, the
work one launch must do::

    [sizes]
    M = 4096
    N = 4096
    K = 4096

    [[kernel]]
    match = "gemm|sgemm"          # regular expression, searched in the function and demangled name
    flop = "2*M*N*K"              # a number or an arithmetic formula of the sizes
    bytes = "2*(M*K + K*N + M*N)" # the DRAM bytes the kernel must move at least

The first matching entry applies. The launch table gets ``expected_flop`` and
``expected_dram_bytes`` per launch; :mod:`ncuroof.model.diagnose` compares them
with the counted work.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import catalog
from ..errors import InputError
from ..parser.files import read_bounded
from ..parser.patterns import UserPattern

__all__ = ["Expectation", "read_expectations", "apply_expectations", "evaluate", "counted_flop"]

_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


#: Characters of one formula: an expectation is a line of arithmetic, not a program.
_MAX_FORMULA = 10_000


def evaluate(formula: str | float | int, sizes: dict[str, float]) -> float:
    """Value of a number or an arithmetic formula (``+ - * / // % **``, parentheses) of ``sizes``.

    Raises
    ------
    ValueError
        For anything else (function calls, attributes, unknown names).
    """
    if isinstance(formula, (int, float)) and not isinstance(formula, bool):
        if not math.isfinite(float(formula)):
            raise ValueError(f"{formula!r} is not a finite number")
        return float(formula)
    text = str(formula)
    tree = _parse_formula(text)
    try:
        return _value(tree, sizes, formula, text)
    except RecursionError:
        raise ValueError(f"a formula nested too deep: {text[:40]!r}...") from None


def _parse_formula(text: str) -> ast.Expression:
    """The syntax tree of ``text``, refused when too long or not an expression."""
    if len(text) > _MAX_FORMULA:
        raise ValueError(
            f"a formula of {len(text)} characters (at most {_MAX_FORMULA}): {text[:40]!r}..."
        )
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise ValueError(f"not a formula: {text[:80]!r}") from exc


def _value(node: ast.AST, sizes: dict[str, float], formula: object, text: str) -> float:
    """Value of one node of ``formula`` (``text``): a number, a size, or an allowed operation."""
    if isinstance(node, ast.Expression):
        return _value(node.body, sizes, formula, text)
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
    ):
        return _constant(node.value, text)
    if isinstance(node, ast.Name):
        if node.id not in sizes:
            raise ValueError(f"unknown size {node.id!r} in {formula!r}; define it under [sizes]")
        return float(sizes[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left = _value(node.left, sizes, formula, text)
        return _operate(node.op, left, _value(node.right, sizes, formula, text), text)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _value(node.operand, sizes, formula, text)
        return -v if isinstance(node.op, ast.USub) else v
    raise ValueError(f"only numbers, sizes and + - * / // % ** are allowed in {formula!r}")


def _constant(value: int | float, text: str) -> float:
    """A number written in the formula, refused when not finite (an int too large for a float)."""
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise ValueError(f"{text[:80]!r} holds a number that is not finite")
    return v


def _operate(op: ast.operator, left: float, right: float, text: str) -> float:
    """``left op right``, refused when it has no finite value (division by zero, overflow)."""
    try:
        v = float(_OPS[type(op)](left, right))
    except (ZeroDivisionError, OverflowError, TypeError) as exc:  # TypeError: a complex power
        raise ValueError(f"{text[:80]!r} has no finite value ({exc})") from None
    if not math.isfinite(v):
        raise ValueError(f"{text[:80]!r} has no finite value")
    return v


@dataclass(frozen=True)
class Expectation:
    """One ``[[kernel]]`` entry: a name pattern and the work one launch must do."""

    pattern: UserPattern
    flop: float
    dram_bytes: float


def read_expectations(path: str | Path) -> list[Expectation]:
    """Read an expectations file.

    Parameters
    ----------
    path : path
        TOML (``.toml``) or YAML (``.yaml``/``.yml``, needs PyYAML).

    Returns
    -------
    list of Expectation
        In file order; ``flop``/``dram_bytes`` NaN where an entry gives none.

    Raises
    ------
    InputError
        Missing or unreadable file, a bad pattern or formula (one line naming the file).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(
            "no such expectations file; give a TOML file with [sizes] and [[kernel]] entries", p
        )
    data = _load_document(p)
    sizes = data.get("sizes", {}) or {}
    entries = data.get("kernel", []) or []
    if not isinstance(sizes, dict) or not isinstance(entries, list) or not entries:
        raise InputError(
            "needs a [sizes] table and at least one [[kernel]] entry with match, flop and/or bytes",
            p,
        )
    try:
        return _expectations_of(sizes, entries)
    except InputError as exc:  # a pattern that does not compile
        raise InputError(exc.message, p) from None
    except ValueError as exc:
        raise InputError(str(exc), p) from exc


def _text(p: Path) -> str:
    """An expectations file's text, through the reading gate (a regular file of at most
    ``[limits].option_file_bytes``)."""
    return read_bounded(p, "pass a YAML or TOML expectations file", "option_file_bytes").decode(
        "utf-8"
    )


def _load_document(p: Path) -> dict:
    """The parsed YAML or TOML of an expectations file; any parser error as one InputError line."""
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError as exc:
                raise InputError(
                    "YAML expectations need PyYAML (pip install pyyaml), or write the file as TOML",
                    p,
                ) from exc
            loader = yaml.SafeLoader(_text(p))  # composed once: bounded, then built
            try:
                node = loader.get_single_node()
                _bounded_yaml(node, p)
                return (loader.construct_document(node) if node is not None else None) or {}
            finally:
                loader.dispose()
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        return tomllib.loads(_text(p))
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - parser errors of either format, reported in one line
        raise InputError(
            f"cannot read it ({type(exc).__name__}:"
            f" {str(exc).splitlines()[0] if str(exc) else ''})",
            p,
        ) from exc


def _bounded_yaml(root: Any, p: Path) -> None:
    """InputError when the YAML document, its aliases expanded, holds more than ``[limits]
    yaml_expanded_chars`` characters of scalars and nodes (issue 53: a 1 KB file of 9 levels of 9
    aliases expanded to a 2.8e9-character formula in 58 s and 3.2 GB). Each node's expanded size
    is computed once (memoized by node), so the check costs the composed graph, not its
    expansion."""
    limit = int(catalog.limits()["yaml_expanded_chars"])
    size: dict[int, int] = {}

    def expanded(node: Any) -> int:
        if id(node) in size:
            return size[id(node)]
        size[id(node)] = limit + 1  # a node reached again while open: a recursive alias
        if isinstance(node.value, str):
            n = 1 + len(node.value)
        else:
            parts = (
                x for item in node.value for x in (item if isinstance(item, tuple) else (item,))
            )
            n = 1
            for child in parts:
                n += expanded(child)
                if n > limit:
                    break
        size[id(node)] = n
        return n

    if root is not None and expanded(root) > limit:
        raise InputError(
            catalog.over_limit(
                "yaml_expanded_chars",
                f"its aliases expand to more than {limit:,} characters",
            ),
            p,
        )


def _expectations_of(sizes: dict, entries: list) -> list[Expectation]:
    """One Expectation per ``[[kernel]]`` entry, its formulas evaluated on the
    resolved ``sizes``."""
    out = []
    resolved = {k: evaluate(v, {}) for k, v in sizes.items()}
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or "match" not in e:
            raise ValueError(f"kernel entry {i + 1} has no 'match'")
        out.append(
            Expectation(
                UserPattern(str(e["match"]), f"[[kernel]] entry {i + 1} match"),
                evaluate(e["flop"], resolved) if "flop" in e else math.nan,
                evaluate(e["bytes"], resolved) if "bytes" in e else math.nan,
            )
        )
    return out


def apply_expectations(
    kernels: pd.DataFrame, expectations: list[Expectation] | None
) -> pd.DataFrame:
    """Fill ``expected_flop`` and ``expected_dram_bytes`` of each launch from the
    first matching entry.

    Parameters
    ----------
    kernels : DataFrame
        The launch table.
    expectations : list of Expectation or None
        From :func:`read_expectations`; None leaves the columns NaN.

    Returns
    -------
    DataFrame
        A copy with the two columns [FLOP], [B] (NaN for launches no pattern matches).
    """
    k = kernels.copy()
    flop = np.full(len(k), np.nan)
    byts = np.full(len(k), np.nan)
    for i, (name, dm) in enumerate(
        zip(k["kernel_name"].astype(str), k["kernel_demangled"].fillna("").astype(str))
    ):
        for e in expectations or []:
            if e.pattern.search(name) or e.pattern.search(dm):
                flop[i], byts[i] = e.flop, e.dram_bytes
                break
    k["expected_flop"] = flop
    k["expected_dram_bytes"] = byts
    return k


def counted_flop(kernels: pd.DataFrame) -> np.ndarray:
    """All FLOPs ncu counted per launch: FP64 + FP32 + FP16 + tensor (NaN when none is known)."""
    cols = [
        kernels[c].to_numpy(float) for c in ("fp64_flop", "fp32_flop", "fp16_flop", "tensor_flop")
    ]
    stacked = np.vstack(cols)
    have = np.isfinite(stacked).any(axis=0)
    return np.where(have, np.nansum(stacked, axis=0), np.nan)
