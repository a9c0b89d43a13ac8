"""Analytic work of PyTorch operators from the shapes of a profiler trace (issue 41).

A Kineto trace recorded with ``record_shapes=True`` gives each ``cpu_op`` its ``Input Dims``,
``Input type`` and often ``Concrete Inputs``. :func:`work` turns one operator's shapes into its
FLOPs (by precision) and compulsory bytes (each input read once, each output written once) with
the family formulas of ``metrics/operators.toml`` (:func:`ncuroof.catalog.load_operators`);
:func:`operator_table` adds the GPU time of the kernels each operator launched
(:func:`ncuroof.parser.timeline.read_operator_launches`) and the device's datasheet roofs
(``metrics/gpus.toml``), one row per operator and input shape (:data:`ncuroof.schema.ANALYTIC_OPS`).
Nothing here comes from ncu: every number is labelled ``analytic (from shapes)``.
"""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .. import catalog, fmt
from ..catalog import GpuSpec, OperatorCatalog, OperatorRule
from ..schema import (
    ANALYTIC_OPS,
    ANALYTIC_PRECISIONS,
    ANALYTIC_SOURCE,
    COMM_SOURCE,
    IDLE_SOURCE,
    MOVED_SOURCE,
)

__all__ = [
    "Work",
    "work",
    "rows_note",
    "operator_table",
    "family_coverage",
    "FP32_MATMUL",
    "NO_FORMULA",
    "NO_OPERATOR",
]

#: ``--fp32-matmul``: the roof of FP32 matmul-class operators (the trace does not say whether
#: TF32 was allowed; PyTorch's default since 1.12 is not).
FP32_MATMUL = ("fp32", "tf32")
#: The flag and work source of an operator without a formula.
NO_FORMULA = "no formula"
#: The operator of kernels launched outside every cpu_op.
NO_OPERATOR = "no operator"
#: The work source of the copy and memset rows (their bytes, as the trace records them) and of
#: the idle row (issue 52: every GPU second in a row).
MOVED, IDLE = MOVED_SOURCE, IDLE_SOURCE
COMM = COMM_SOURCE
#: The idle row's operator: the span's time no kernel, copy or memset runs.
IDLE_OP = "idle (no kernel, copy or memset)"


class _Misfit(ValueError):
    """Shapes that do not fit the operator's formula (the message says how)."""


@dataclass(frozen=True)
class Work:
    """One call's analytic work: FLOPs [FLOP] at ``precision``, compulsory bytes [B], and the
    flag when the shapes do not fit (then both are NaN)."""

    flop: float
    bytes: float
    precision: str
    flag: str = ""


# --- the arguments of one call ------------------------------------------------------------------


class _Args:
    """One call's ``Input Dims``, ``Input type`` and ``Concrete Inputs``, with the dtypes of
    ``metrics/operators.toml``."""

    def __init__(self, dims: Any, types: Any, concrete: Any, dtypes: dict) -> None:
        self.dims = dims if isinstance(dims, list) else []
        self.types = types if isinstance(types, list) else []
        self.concrete = concrete if isinstance(concrete, list) else []
        self.dtypes = dtypes

    def is_tensor(self, i: Any) -> bool:
        return (
            isinstance(i, int)
            and 0 <= i < len(self.dims)
            and i < len(self.types)
            and self.types[i] in self.dtypes
            and isinstance(self.dims[i], list)
            and all(isinstance(d, (int, float)) and d >= 0 for d in self.dims[i])
        )

    def shape(self, i: Any, what: str) -> list[int]:
        """The dims of tensor argument ``i``; _Misfit when it is no tensor, or a shape no GPU
        holds (issue 53: non-integer dims, M=N=K=2**40): a dim that is not a whole number, or
        more bytes than ``[limits] trace_tensor_bytes``."""
        if not self.is_tensor(i):
            raise _Misfit(f"argument {i} ({what}) is not a tensor of a known dtype")
        dims = self.dims[i]
        if any(isinstance(d, float) and not d.is_integer() for d in dims):
            raise _Misfit(f"argument {i} ({what}) has a dimension that is not a whole number")
        shape = [int(d) for d in dims]
        limit = catalog.limits()["trace_tensor_bytes"]
        if math.prod(shape) * self.size(i) > limit:
            raise _Misfit(
                f"argument {i} ({what}) of shape {shape} holds more than {limit:.3g} bytes, more"
                " than a GPU holds (limits.trace_tensor_bytes)"
            )
        return shape

    def size(self, i: int) -> int:
        """Bytes per element of tensor argument ``i``."""
        return self.dtypes[self.types[i]][0]

    def precision(self, i: int) -> str:
        return self.dtypes[self.types[i]][1]

    def nbytes(self, i: Any) -> float:
        """Bytes of tensor argument ``i`` (0 when it is not a tensor: an absent bias)."""
        return float(math.prod(self.shape(i, "")) * self.size(i)) if self.is_tensor(i) else 0.0

    def tensors(self) -> list[int]:
        return [i for i in range(len(self.dims)) if self.is_tensor(i)]

    def value(self, i: Any, default: Any = None) -> Any:
        """The Concrete Input at ``i`` as a Python value (``'[1, 1]'`` a list, ``'True'`` a bool,
        ``'2'`` an int), ``default`` when absent or empty."""
        if not isinstance(i, int) or i >= len(self.concrete):
            return default
        text = self.concrete[i]
        if not isinstance(text, str) or not text.strip():
            return default if not isinstance(text, (int, float, list)) else text
        words = {"True": True, "False": False, "None": None, "true": True, "false": False}
        if text.strip() in words:
            return words[text.strip()]
        try:
            return json.loads(text)
        except ValueError:
            pass
        try:  # Python's spelling of a list of booleans: '[True, False, True]'
            return ast.literal_eval(text.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return text.strip()


def _per_dim(value: Any, n: int, name: str) -> list[int]:
    """A conv parameter (int or list) as ``n`` ints."""
    if isinstance(value, bool) or value is None:
        raise _Misfit(f"{name} is not in Concrete Inputs")
    if isinstance(value, (int, float)):
        return [int(value)] * n
    if isinstance(value, list) and len(value) == 1:
        return [int(value[0])] * n
    if isinstance(value, list) and len(value) == n:
        return [int(v) for v in value]
    raise _Misfit(f"{name} {value!r} does not fit {n} spatial dimensions")


# --- the families -------------------------------------------------------------------------------


def _matmul(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """``A[..., M, K] @ B[..., K, N]`` (+ bias): 2*M*N*K per batch (+ M*N)."""
    A, B = a.shape(p["a"], "A"), a.shape(p["b"], "B")
    A, B = ([1, *A] if len(A) == 1 else A), ([*B, 1] if len(B) == 1 else B)
    if len(A) < 2 or len(B) < 2 or A[-1] != B[-2]:
        raise _Misfit(f"A {A} and B {B} do not multiply")
    m, k, n = A[-2], A[-1], B[-1]
    try:
        batch = math.prod(np.broadcast_shapes(tuple(A[:-2]), tuple(B[:-2])))
    except ValueError:
        raise _Misfit(f"batch dimensions of A {A} and B {B} do not broadcast") from None
    bias = a.is_tensor(p.get("bias"))
    flop = 2.0 * batch * m * n * k + (batch * m * n if bias else 0)
    out = batch * m * n * a.size(p["a"])
    return flop, a.nbytes(p["a"]) + a.nbytes(p["b"]) + a.nbytes(p.get("bias")) + out, p["a"]


def _out_size(a: _Args, p: dict, cat: OperatorCatalog) -> int:
    """Bytes per element of a matmul's output: its ``out_dtype`` (a c10::ScalarType code in
    Concrete Inputs), else A's dtype."""
    code = a.value(p.get("out_dtype"))
    known = isinstance(code, int) and not isinstance(code, bool)
    return cat.scalar_type_bytes.get(code, a.size(p["a"])) if known else a.size(p["a"])


def _scaled_matmul(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """``aten::_scaled_mm``: A [M, K] @ B [K, N] in FP8 or packed FP4 with their scales."""
    A, B = a.shape(p["a"], "A"), a.shape(p["b"], "B")
    if len(A) != 2 or len(B) != 2 or A[1] != B[0]:
        raise _Misfit(f"A {A} and B {B} do not multiply")
    m, n = A[0], B[1]
    k = A[1] * cat.packed.get(a.types[p["a"]], 1)  # packed FP4: two values a stored element
    bias = a.is_tensor(p.get("bias"))
    flop = 2.0 * m * n * k + (m * n if bias else 0)
    read = sum(a.nbytes(p.get(x)) for x in ("a", "b", "scale_a", "scale_b", "bias"))
    return flop, read + m * n * _out_size(a, p, cat), p["a"]


def _grouped_matmul(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """``aten::_grouped_mm``: the rows of A split over B's groups (2-D x 3-D), a batch of
    groups (3-D x 3-D), or K split over the groups of ``offs`` (2-D x 2-D, C [G, M, N])."""
    A, B = a.shape(p["a"], "A"), a.shape(p["b"], "B")
    if len(A) == 2 and len(B) == 3 and A[1] == B[1]:
        flop, out = 2.0 * A[0] * A[1] * B[2], A[0] * B[2]
    elif len(A) == 3 and len(B) == 3 and A[0] == B[0] and A[2] == B[1]:
        flop, out = 2.0 * A[0] * A[1] * A[2] * B[2], A[0] * A[1] * B[2]
    elif len(A) == 2 and len(B) == 2 and A[1] == B[0] and a.is_tensor(p.get("offs")):
        groups = math.prod(a.shape(p["offs"], "offs"))
        flop, out = 2.0 * A[0] * A[1] * B[1], groups * A[0] * B[1]
    else:
        raise _Misfit(f"A {A} and B {B} are not a grouped matmul's")
    read = a.nbytes(p["a"]) + a.nbytes(p["b"]) + a.nbytes(p.get("bias"))
    return flop, read + out * _out_size(a, p, cat), p["a"]


def _fused_moe(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """vLLM's fused experts: each token through its top-k experts' w1 and w2."""
    x, w1, w2 = a.shape(p["x"], "hidden"), a.shape(p["w1"], "w1"), a.shape(p["w2"], "w2")
    ids = a.shape(p["topk_ids"], "topk_ids")
    if len(x) != 2 or len(w1) != 3 or len(w2) != 3 or len(ids) != 2:
        raise _Misfit(f"hidden {x}, w1 {w1}, w2 {w2}, topk_ids {ids} are not a MoE's")
    t, h = x
    e, n, i = w1[0], w1[1], w2[2]
    if w1[2] != h or w2[1] != h or w2[0] != e or ids[0] != t:
        raise _Misfit(f"hidden {x}, w1 {w1}, w2 {w2} and topk_ids {ids} do not fit")
    k = ids[1]
    flop = 2.0 * t * k * n * h + 2.0 * t * k * h * i
    used = min(e, t * k) / e if e else 0.0
    weights = (a.nbytes(p["w1"]) + a.nbytes(p["w2"])) * used
    read = a.nbytes(p["x"]) + a.nbytes(p["topk_ids"]) + a.nbytes(p.get("topk_weights")) + weights
    return flop, read + t * h * a.size(p["x"]), p["x"]


def _linear(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """``x[..., K] @ W[N, K]^T`` (+ bias)."""
    x, w = a.shape(p["x"], "input"), a.shape(p["w"], "weight")
    if not x or len(w) != 2 or x[-1] != w[1]:
        raise _Misfit(f"input {x} and weight {w} do not multiply")
    m, n, k = math.prod(x[:-1]), w[0], w[1]
    bias = a.is_tensor(p.get("bias"))
    flop = 2.0 * m * n * k + (m * n if bias else 0)
    out = m * n * a.size(p["x"])
    return flop, a.nbytes(p["x"]) + a.nbytes(p["w"]) + a.nbytes(p.get("bias")) + out, p["x"]


def _conv_geometry(a: _Args, p: dict) -> tuple[list[int], list[int], list[int], bool, int]:
    """Input, weight and output shapes of a convolution, whether transposed, and its groups."""
    x, w = a.shape(p["input"], "input"), a.shape(p["weight"], "weight")
    nd = len(x) - 2
    if nd < 1 or len(w) != len(x):
        raise _Misfit(f"input {x} and weight {w} are not a convolution's")
    transposed = bool(a.value(p.get("transposed"), False))
    groups = int(a.value(p.get("groups"), 1) or 1)
    stride = _per_dim(a.value(p["stride"]), nd, "stride")
    dilation = _per_dim(a.value(p["dilation"]), nd, "dilation")
    pad_value = a.value(p["padding"])
    if pad_value in ("same", "valid"):
        pad = [0] * nd
        out = x[2:] if pad_value == "same" else None
    else:
        pad, out = _per_dim(pad_value, nd, "padding"), None
    k = w[2:]
    if transposed:
        extra = _per_dim(a.value(p.get("output_padding"), 0), nd, "output_padding")
        sp = [
            (i - 1) * s - 2 * q + d * (kk - 1) + e + 1
            for i, s, q, d, kk, e in zip(x[2:], stride, pad, dilation, k, extra)
        ]
        c_out = w[1] * groups
    else:
        sp = out or [
            (i + 2 * q - d * (kk - 1) - 1) // s + 1
            for i, s, q, d, kk in zip(x[2:], stride, pad, dilation, k)
        ]
        c_out = w[0]
    if min(sp) <= 0 or (not transposed and x[1] != w[1] * groups):
        raise _Misfit(f"input {x}, weight {w} and groups {groups} do not fit")
    return x, w, [x[0], c_out, *sp], transposed, groups


def _conv_flop(x: list[int], w: list[int], y: list[int], transposed: bool) -> float:
    """flop_counter's conv_flop_count: 2 * N * prod(weight) * prod(output spatial), the input's
    spatial size for a transposed convolution."""
    return 2.0 * x[0] * math.prod(w) * math.prod(x[2:] if transposed else y[2:])


def _convolution(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    x, w, y, transposed, _ = _conv_geometry(a, p)
    bias = a.is_tensor(p.get("bias"))
    flop = _conv_flop(x, w, y, transposed) + (math.prod(y) if bias else 0)
    out = math.prod(y) * a.size(p["input"])
    return flop, a.nbytes(p["input"]) + a.nbytes(p["weight"]) + a.nbytes(p.get("bias")) + out, 0


def _convolution_backward(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    x, w, y, transposed, _ = _conv_geometry(a, p)
    mask = a.value(p["output_mask"], [True, True, True])
    if not isinstance(mask, list) or len(mask) != 3:
        raise _Misfit(f"output_mask {mask!r} is not three booleans")
    fwd = _conv_flop(x, w, y, transposed)
    flop = fwd * (bool(mask[0]) + bool(mask[1])) + (math.prod(y) if mask[2] else 0)
    size = a.size(p["input"])
    written = (
        bool(mask[0]) * math.prod(x) + bool(mask[1]) * math.prod(w) + bool(mask[2]) * y[1]
    ) * size
    read = a.nbytes(p["grad_output"]) + a.nbytes(p["input"]) + a.nbytes(p["weight"])
    return flop, read + written, p["input"]


def _bhsd(a: _Args, i: int, layout: str, what: str) -> list[int]:
    """An attention tensor as [B, H, S, D] (``bshd`` layouts transposed; 3-D: B = 1)."""
    s = a.shape(i, what)
    s = [1, *s] if len(s) == 3 else s
    if len(s) != 4:
        raise _Misfit(f"{what} {a.shape(i, what)} is not [B, H, S, D]")
    return [s[0], s[2], s[1], s[3]] if layout == "bshd" else s


def _attention_shapes(a: _Args, p: dict) -> tuple[int, int, int, int, int, int]:
    layout = p.get("layout", "bhsd")
    q, k, v = (_bhsd(a, p[n], layout, n.upper()) for n in ("q", "k", "v"))
    if not (q[0] == k[0] == v[0] and k[2] == v[2] and q[3] == k[3] and q[1] % max(k[1], 1) == 0):
        raise _Misfit(f"Q {q}, K {k} and V {v} do not fit attention")
    return q[0], q[1], q[2], k[2], q[3], v[3]


def _causal(a: _Args, p: dict, cat: OperatorCatalog) -> float:
    return cat.causal_fraction if a.value(p.get("is_causal"), False) else 1.0


def _attention(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    b, h, sq, sk, d, dv = _attention_shapes(a, p)
    flop = 2.0 * b * h * sq * sk * (d + dv) * _causal(a, p, cat)
    read = sum(a.nbytes(p[n]) for n in ("q", "k", "v")) + a.nbytes(p.get("mask"))
    return flop, read + b * h * sq * dv * a.size(p["q"]), p["q"]


def _attention_backward(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    b, h, sq, sk, d, dv = _attention_shapes(a, p)
    flop = 2.0 * b * h * sq * sk * (3 * d + 2 * dv) * _causal(a, p, cat)
    qkv = sum(a.nbytes(p[n]) for n in ("q", "k", "v"))
    read = qkv + a.nbytes(p["grad"]) + a.nbytes(p.get("out"))
    return flop, read + qkv, p["q"]


def _reads(a: _Args, p: dict, default: Sequence[Any]) -> float:
    """Bytes of the tensor arguments read: ``reads`` of the rule (False: none), else ``default``."""
    reads = p.get("reads", list(default))
    return 0.0 if reads is False else float(sum(a.nbytes(i) for i in reads))


def _per_element(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    """Normalisation and softmax: cost per input element (plus the affine cost with a weight);
    the input, weight and bias read (``reads`` where given), the output shaped like the input
    written (and the weight's and bias' gradients with ``writes_weight_grads``)."""
    x = a.shape(p["input"], "input")
    n = math.prod(x)
    w = p.get("weight")
    affine = a.is_tensor(w)
    flop = n * (p["flop_per_element"] + (p.get("affine_flop_per_element", 0) if affine else 0))
    read = _reads(a, p, [p["input"], *((w, w + 1) if isinstance(w, int) else ())])
    written = n * a.size(p["input"])
    if affine and p.get("writes_weight_grads"):
        written += 2 * a.nbytes(w)
    return float(flop), read + written, p["input"]


def _embedding(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    w, idx = a.shape(p["weight"], "weight"), a.shape(p["indices"], "indices")
    if len(w) != 2:
        raise _Misfit(f"weight {w} is not [num_embeddings, dim]")
    rows = math.prod(idx) * w[1] * a.size(p["weight"])
    return 0.0, a.nbytes(p["indices"]) + 2.0 * rows, p["weight"]


def _elementwise(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    tensors = a.tensors()
    if not tensors:
        raise _Misfit("no tensor argument of a known dtype")
    try:
        shape = np.broadcast_shapes(*(tuple(a.shape(i, "")) for i in tensors))
    except ValueError:
        raise _Misfit("the tensor arguments do not broadcast") from None
    n = math.prod(shape)
    return float(n * p["flop_per_element"]), _reads(a, p, tensors) + n * a.size(tensors[0]), 0


def _reduction(a: _Args, p: dict, cat: OperatorCatalog) -> tuple[float, float, int]:
    x = a.shape(p["input"], "input")
    dims = a.value(p.get("dim"))
    dims = [dims] if isinstance(dims, int) and not isinstance(dims, bool) else dims
    if not isinstance(dims, list) or not dims or not x:
        kept = 1
    else:
        try:
            gone = {int(d) % len(x) for d in dims}
        except (TypeError, ValueError):
            raise _Misfit(f"dim {dims!r} is not a list of dimensions") from None
        kept = math.prod(s for i, s in enumerate(x) if i not in gone)
    n = math.prod(x)
    return float(n * p["flop_per_element"]), a.nbytes(p["input"]) + kept * a.size(p["input"]), 0


_FAMILIES = {
    "matmul": _matmul,
    "linear": _linear,
    "convolution": _convolution,
    "convolution_backward": _convolution_backward,
    "attention": _attention,
    "attention_backward": _attention_backward,
    "normalization": _per_element,
    "softmax": _per_element,
    "embedding": _embedding,
    "elementwise": _elementwise,
    "reduction": _reduction,
    "scaled_matmul": _scaled_matmul,
    "grouped_matmul": _grouped_matmul,
    "fused_moe": _fused_moe,
}


def work(rule: OperatorRule, signature: tuple[Any, Any, Any], cat: OperatorCatalog) -> Work:
    """The analytic work of one call of an operator.

    Parameters
    ----------
    rule : OperatorRule
        The operator's rule (``metrics/operators.toml``).
    signature : tuple
        Its ``(Input Dims, Input type, Concrete Inputs)`` as the trace gives them.
    cat : OperatorCatalog
        Dtype sizes and precisions, the causal fraction.

    Returns
    -------
    Work
        FLOPs [FLOP] (0 for an integer type's non-matmul work), compulsory bytes [B] and the
        precision of the first relevant tensor; NaN and a ``shapes do not fit: ...`` flag when the
        shapes do not fit the formula.
    """
    a = _Args(*signature, cat.dtypes)
    fn = _FAMILIES[rule.family]
    try:
        flop, nbytes, first = fn(a, rule.params, cat)
        first = first if a.is_tensor(first) else (a.tensors() or [None])[0]
        precision = a.precision(first) if first is not None else ""
    except (_Misfit, KeyError, TypeError, ValueError, OverflowError, ZeroDivisionError) as exc:
        why = str(exc) if isinstance(exc, _Misfit) else f"{type(exc).__name__} {exc}"
        return Work(math.nan, math.nan, "", f"shapes do not fit: {fmt.printable(why)[:160]}")
    if precision == "int" or (precision == "int8" and not rule.matmul):
        flop = 0.0
    return Work(float(flop), float(nbytes), precision)


# --- what would change the bound ---------------------------------------------------------------

#: The largest number of rows :func:`rows_note` tries (2**16).
_MAX_ROWS_EXP = 16


def _with_rows(rule: OperatorRule, sig: tuple[Any, Any, Any], m: int) -> tuple[Any, Any, Any]:
    """``sig`` with the rows of a matmul's A (a linear's input) set to ``m``."""
    dims = [list(d) if isinstance(d, list) else d for d in sig[0]]
    p = rule.params
    if rule.family == "linear":
        dims[p["x"]] = [m, dims[p["x"]][-1]]
    else:
        old = dims[p["a"]][-2]
        dims[p["a"]][-2] = m
        bias = p.get("bias")
        if isinstance(bias, int) and len(dims[bias]) >= 2 and dims[bias][-2] == old:
            dims[bias][-2] = m
    return dims, sig[1], sig[2]


def rows_note(
    rule: OperatorRule, sig: tuple[Any, Any, Any], cat: OperatorCatalog, ridge: float
) -> str:
    """For a matmul-class operator below its ridge: ``'at M=1 rows; M=512 would reach AI 310
    FLOP/B'``, the smallest power-of-two M whose analytic AI (same N, K and dtypes) reaches the
    ridge, or that none up to 2**16 does; '' for other operators or at the ridge.

    Parameters
    ----------
    rule, sig, cat
        The operator's rule, its shapes, ``metrics/operators.toml``.
    ridge : float
        Its roof over the DRAM bandwidth [FLOP/B].
    """
    if rule.family not in ("matmul", "linear") or not math.isfinite(ridge):
        return ""
    a = _Args(*sig, cat.dtypes)
    try:
        x = a.shape(rule.params["x" if rule.family == "linear" else "a"], "A")
        m = math.prod(x[:-1]) if rule.family == "linear" else (x[-2] if len(x) >= 2 else 0)
    except _Misfit:
        return ""

    def ai(rows: int) -> float:
        w = work(rule, _with_rows(rule, sig, rows), cat)
        return w.flop / w.bytes if w.bytes > 0 else math.nan

    if m < 1 or not ai(m) < ridge:
        return ""
    for e in range(max(m.bit_length(), 1), _MAX_ROWS_EXP + 1):
        if ai(2**e) >= ridge:
            return f"at M={m} rows; M={2**e} would reach AI {fmt.g(ai(2**e))} FLOP/B"
    top = 2**_MAX_ROWS_EXP
    return f"at M={m} rows; no M up to {top} reaches the ridge (AI {fmt.g(ai(top))} FLOP/B there)"


# --- the operator table -------------------------------------------------------------------------


def _shape_text(value: Any) -> str:
    """An Input Dims / Input type / Concrete Inputs list as one printable line."""
    if value is None:
        return ""
    return fmt.printable(json.dumps(value, separators=(",", ":"), default=str), layout=False)


def _calls(launches: pd.DataFrame, ops: pd.DataFrame) -> pd.DataFrame:
    """One row per (operator name, shape code): calls, launches and GPU time of the kernels."""
    per_call = launches.groupby("op_row", sort=False)["duration_s"].agg(["sum", "size"])
    rows = per_call.index.to_numpy(dtype=np.int64)
    has = rows >= 0
    name = np.full(len(rows), NO_OPERATOR, dtype=object)
    shape = np.full(len(rows), -1, dtype=np.int64)
    name[has] = ops["name"].to_numpy(dtype=object)[rows[has]]
    shape[has] = ops["shape"].to_numpy()[rows[has]]
    f = pd.DataFrame(
        {
            "op": name,
            "shape": shape,
            "time_s": per_call["sum"].to_numpy(float),
            "launches": per_call["size"].to_numpy(np.int64),
        }
    )
    g = f.groupby(["op", "shape"], sort=False)
    out = pd.DataFrame(
        {"calls": g.size(), "launches": g["launches"].sum(), "time_s": g["time_s"].sum()}
    ).reset_index()
    for col in _COUNTED:
        if col in launches.columns:  # NaN where any launch of the row has no counted value
            f[col] = (
                _sum_known(launches[col], launches["op_row"]).reindex(per_call.index).to_numpy()
            )
            out[col] = _sum_known(f[col], [f["op"], f["shape"]]).to_numpy(float)
    return out


def _sum_known(values: pd.Series, by: Any) -> pd.Series:
    """Sums of ``values`` grouped ``by`` (first-appearance order), NaN for a group with a missing
    value."""
    v = values.to_numpy(float)
    g = pd.Series(v).groupby(
        by if isinstance(by, pd.Series) else [b.to_numpy() for b in by], sort=False
    )
    missing = (
        pd.Series(np.isnan(v))
        .groupby(by if isinstance(by, pd.Series) else [b.to_numpy() for b in by], sort=False)
        .any()
    )
    return g.sum().where(~missing.to_numpy())


#: Per-launch counted work a caller may give :func:`operator_table` (ncu's, with a report).
_COUNTED = ("counted_flop", "dram_bytes")


def _roof(
    rule: OperatorRule | None, precision: str, gpu: GpuSpec, cat: OperatorCatalog, fp32: str
) -> tuple[str, float]:
    """The compute roof of a row: its gpus.toml name and FLOP/s (NaN where the datasheet has
    none)."""
    if rule is None or not precision or precision == "int":
        return "", math.nan
    if rule.matmul and precision == "fp32" and fp32 == "tf32":
        precision = "tf32"
    choices = (cat.matmul_roofs if rule.matmul else cat.other_roofs).get(precision, "")
    for name in filter(None, choices.split("|")):
        value = gpu.datasheet_value(name)
        if value:
            return name, float(value)
    return (choices.split("|")[0] if choices else ""), math.nan


def _row_work(
    row: Any, values: list, cat: OperatorCatalog, gpu: GpuSpec, fp32: str
) -> dict[str, Any]:
    """The analytic columns of one (operator, shape) row."""
    rule = cat.rules.get(row.op)
    sig = values[row.shape] if row.shape >= 0 else (None, None, None)
    out: dict[str, Any] = {
        "input_dims": _shape_text(sig[0]),
        "input_types": _shape_text(sig[1]),
        "concrete_inputs": _shape_text(sig[2]),
        "family": rule.family if rule else "",
    }
    if rule is None or row.shape < 0:
        why = NO_FORMULA if rule is None else "no shapes recorded for this operator"
        return {**out, "flop": math.nan, "compulsory_bytes": math.nan, "precision": "", "flag": why}
    w = work(rule, sig, cat)
    precision = "tf32" if rule.matmul and w.precision == "fp32" and fp32 == "tf32" else w.precision
    roof, peak = _roof(rule, w.precision, gpu, cat, fp32)
    flag = w.flag or ("" if roof == "" or math.isfinite(peak) else f"no datasheet roof {roof}")
    note = "" if w.flag else rows_note(rule, sig, cat, peak / gpu.dram_bytes_per_s)
    return {
        **out,
        "flop_per_call": w.flop,
        "compulsory_bytes_per_call": w.bytes,
        "flop": w.flop * row.calls,
        "compulsory_bytes": w.bytes * row.calls,
        "precision": precision,
        "roof": roof,
        "roof_flop_per_s": peak,
        "flag": flag,
        "note": note,
    }


def operator_table(
    launches: pd.DataFrame,
    ops: pd.DataFrame,
    values: list[tuple[Any, Any, Any]],
    cat: OperatorCatalog,
    gpu: GpuSpec,
    fp32_matmul: str = "fp32",
) -> pd.DataFrame:
    """One row per PyTorch operator and input shape, with analytic work against the datasheet.

    Parameters
    ----------
    launches, ops, values
        :func:`ncuroof.parser.timeline.read_operator_launches`: the kernels (``duration_s`` [s],
        ``op_row``), the cpu_op events (``name``, ``shape``) and the distinct shapes.
    cat : OperatorCatalog
        ``metrics/operators.toml``.
    gpu : GpuSpec
        The device's datasheet roofs (``metrics/gpus.toml``, at its boost clock).
    fp32_matmul : {'fp32', 'tf32'}
        The roof of FP32 matmul-class operators (``--fp32-matmul``).

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.ANALYTIC_OPS`, most GPU time first. Rows without a formula keep
        their time, ``work_source`` and ``flag`` 'no formula', NaN work and bound ``unknown``.
    """
    if fp32_matmul not in FP32_MATMUL:
        raise ValueError(f"fp32_matmul must be one of {FP32_MATMUL}")
    moved = launches["transfer"].ne("").to_numpy() if "transfer" in launches else None
    comm = launches["collective"].notna().to_numpy() if "collective" in launches else None
    alone = np.ones(len(launches), bool)
    for part in (moved, comm):
        alone &= ~part if part is not None else True
    t = _calls(launches[alone], ops)
    extra = pd.DataFrame([_row_work(r, values, cat, gpu, fp32_matmul) for r in t.itertuples()])
    t = pd.concat([t.drop(columns="shape"), extra.reindex(index=t.index)], axis=1)
    if comm is not None:
        t = pd.concat([t, _comm_rows(launches[comm], cat)], ignore_index=True)
    if moved is not None:
        t = pd.concat([t, _transfer_rows(launches[moved]), _idle_row(launches)], ignore_index=True)
    total = float(t["time_s"].sum())
    t["time_share"] = t["time_s"] / total if total > 0 else math.nan
    t = _beyond_roofs(_link_unroofed(_roofline(t, float(gpu.dram_bytes_per_s))))
    for p in ANALYTIC_PRECISIONS:
        t[f"{p}_flop"] = np.where(t["precision"] == p, t["flop"], t["flop"] * 0.0)
    t["work_source"] = np.select(
        [
            t["family"] == "transfer",
            t["family"] == "communication",
            t["op"] == IDLE_OP,
            t["flag"] == NO_FORMULA,
        ],
        [MOVED, COMM, IDLE, NO_FORMULA],
        ANALYTIC_SOURCE,
    )
    t = _counted(t)
    t["op"] = [fmt.printable(o, layout=False) for o in t["op"]]  # text from the trace
    t = t.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)
    return typed(t)


#: The flag of a row faster than any GPU of its kind could run it (:func:`_beyond_roofs`).
BEYOND_ROOF = "faster than the roof"


def _beyond_roofs(t: pd.DataFrame) -> pd.DataFrame:
    """Rows whose achieved rate is more than ``[limits] trace_max_roof_multiple`` times their roof
    (shapes or durations no kernel has): flagged, bound unknown, their roof numbers empty."""
    most = float(catalog.limits().get("trace_max_roof_multiple", 100.0))
    frac = t["roof_fraction"].to_numpy(float)
    bad = np.isfinite(frac) & (frac > most)
    if not bad.any():
        return t
    t.loc[bad, "flag"] = [
        "; ".join(
            filter(
                None,
                (
                    f,
                    f"{BEYOND_ROOF} (x{fmt.g(r)}): these shapes cannot run in this time on this GPU"
                    " (limits.trace_max_roof_multiple)",
                ),
            )
        )
        for f, r in zip(t.loc[bad, "flag"].fillna(""), frac[bad])
    ]
    for c in ("roof_fraction", "time_at_roof_s", "saving_s"):
        t.loc[bad, c] = math.nan
    t.loc[bad, "bound"] = "unknown"
    return t


#: Copies over the host link: their bytes cross PCIe or NVLink-C2C, whose bandwidth
#: metrics/gpus.toml does not hold.
_LINK = ("memcpy HtoD", "memcpy DtoH", "memcpy HtoH", "memcpy PtoP")


def _transfer_rows(moved: pd.DataFrame) -> pd.DataFrame:
    """One row per kind of copy or memset (``transfer``): calls, time and the bytes it moves at
    DRAM (a device-to-device copy reads and writes each byte, a memset writes it; a copy over the
    host link moves its bytes once)."""
    g = moved.groupby("transfer", sort=False)
    size = g["bytes"].sum(min_count=1)
    kinds = size.index.to_numpy(dtype=object)
    factor = np.where(kinds == "memcpy DtoD", 2.0, 1.0)
    return pd.DataFrame(
        {
            "op": kinds,
            "calls": g.size().to_numpy(np.int64),
            "launches": g.size().to_numpy(np.int64),
            "time_s": g["duration_s"].sum().to_numpy(float),
            "family": "transfer",
            "flop": 0.0,
            "compulsory_bytes": size.to_numpy(float) * factor,
            "precision": "",
            "flag": "",
            "note": [
                "bytes over the host link (no link roof in metrics/gpus.toml)"
                if k in _LINK
                else "read and written at DRAM"
                if k == "memcpy DtoD"
                else "written at DRAM"
                if k == "memset"
                else ""
                for k in kinds
            ],
        }
    )


def _bus_factor(name: str, n: float, factors: Sequence[tuple[str, str]]) -> float:
    """nccl-tests' busbw factor of a collective over ``n`` ranks (1 for one it does not list)."""
    key = name.lower().replace("_", "")
    kind = next((f for k, f in factors if k in key), "1")
    if kind == "1" or not n > 0:
        return 1.0 if kind == "1" else math.nan
    return (2.0 if kind == "2(n-1)/n" else 1.0) * (n - 1) / n


def _comm_rows(comm: pd.DataFrame, cat: OperatorCatalog) -> pd.DataFrame:
    """One row per collective, data size and group of the collective kernels: calls, time, data
    size [B] (max(in, out) elements x the dtype's size), algorithm and bus bandwidth."""
    size = np.fmax(comm["comm_in_nelems"].to_numpy(float), comm["comm_out_nelems"].to_numpy(float))
    each = comm["comm_dtype"].map(lambda d: cat.comm_dtype_bytes.get(str(d), math.nan))
    c = comm.assign(data=size * each.to_numpy(float), dtype=comm["comm_dtype"].astype(str))
    keys = ["collective", "data", "comm_group_size", "dtype"]
    g = c.groupby(keys, sort=False, dropna=False)
    out = g.agg(calls=("duration_s", "size"), time_s=("duration_s", "sum")).reset_index()
    data = out["data"].to_numpy(float)
    n = out["comm_group_size"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(out["time_s"] > 0, data * out["calls"] / out["time_s"], math.nan)
    factor = [_bus_factor(str(k), m, cat.comm_factors) for k, m in zip(out["collective"], n)]
    return pd.DataFrame(
        {
            "op": [f"{k} (collective)" for k in out["collective"]],
            "input_dims": [fmt.plain(d) + " B" if math.isfinite(d) else "" for d in data],
            "input_types": out["dtype"],
            "concrete_inputs": [f"{m:g} ranks" if math.isfinite(m) else "" for m in n],
            "calls": out["calls"].to_numpy(np.int64),
            "launches": out["calls"].to_numpy(np.int64),
            "time_s": out["time_s"].to_numpy(float),
            "family": "communication",
            "flop": 0.0,
            "compulsory_bytes": data * out["calls"],
            "precision": "",
            "flag": "",
            "note": "no link roof in metrics/gpus.toml: bandwidths as nccl-tests reports them",
            "group_size": n,
            "algbw_bytes_per_s": algbw,
            "busbw_bytes_per_s": algbw * np.asarray(factor, dtype=float),
        }
    )


def _idle_row(launches: pd.DataFrame) -> pd.DataFrame:
    """The span's time with nothing running on the device (``span_s - busy_s`` of the launches'
    ``attrs``); no row when there is none."""
    span, busy = float(launches.attrs.get("span_s", 0.0)), float(launches.attrs.get("busy_s", 0.0))
    if not span - busy > 0:
        return pd.DataFrame()
    return pd.DataFrame(
        {
            "op": [IDLE_OP],
            "calls": [0],
            "launches": [0],
            "time_s": [max(span - busy, 0.0)],
            "family": [""],
            "flop": [math.nan],
            "compulsory_bytes": [math.nan],
            "precision": [""],
            "flag": [""],
        }
    )


def _link_unroofed(t: pd.DataFrame) -> pd.DataFrame:
    """The copies over the host link and the collectives without a roof (the DRAM roof is not
    theirs)."""
    link = (t["op"].isin(_LINK) & (t["family"] == "transfer")).to_numpy() | (
        t["family"] == "communication"
    ).to_numpy()
    if link.any():
        for c in ("roof_fraction", "time_at_roof_s", "saving_s"):
            t.loc[link, c] = math.nan
        t.loc[link, "bound"] = "unknown"
    return t


def family_coverage(t: pd.DataFrame) -> pd.DataFrame:
    """The kernels' GPU time by operator family, and the share of it that has a formula.

    Parameters
    ----------
    t : DataFrame
        :func:`operator_table`.

    Returns
    -------
    DataFrame
        One row per family, most time first: ``family`` (the formula family of
        ``metrics/operators.toml``; for operators without one, their namespace: ``vllm::``,
        ``aten::``, or ``other``), ``time_s`` [s], ``time_share`` (of the kernels' time: copies,
        memsets and idle left out) and ``formula_share`` (of the family's time, with a formula;
        a collective's bandwidths count as one).
    """
    k = t[~t["work_source"].isin([MOVED, IDLE])]
    ops = k["op"].astype(str)
    space = ops.str.extract(r"^([^:]+::)", expand=False).fillna("other")
    family = k["family"].astype(str).where(k["family"].astype(str) != "", space)
    timed = k["time_s"].to_numpy(float)
    with_formula = np.where(k["work_source"].isin([ANALYTIC_SOURCE, COMM]), timed, 0.0)
    g = pd.DataFrame({"family": family.to_numpy(), "time_s": timed, "covered": with_formula})
    out = g.groupby("family", sort=False).sum().reset_index()
    total = float(out["time_s"].sum())
    out["time_share"] = out["time_s"] / total if total > 0 else math.nan
    out["formula_share"] = np.where(out["time_s"] > 0, out["covered"] / out["time_s"], math.nan)
    out = out.sort_values("time_s", ascending=False, kind="stable").reset_index(drop=True)
    return out[["family", "time_s", "time_share", "formula_share"]]


def _counted(t: pd.DataFrame) -> pd.DataFrame:
    """Counted over analytic FLOPs, measured DRAM over compulsory bytes and the measured intensity
    where counted work was given; a FLOP ratio below 1 is a flag."""
    for col in _COUNTED:
        if col not in t.columns:
            t[col] = math.nan
    counted, dram = t["counted_flop"].to_numpy(float), t["dram_bytes"].to_numpy(float)
    flop, nbytes = t["flop"].to_numpy(float), t["compulsory_bytes"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t["counted_over_analytic"] = np.where(flop > 0, counted / flop, np.nan)
        t["dram_over_compulsory"] = np.where(nbytes > 0, dram / nbytes, np.nan)
        t["measured_ai_flop_per_byte"] = np.where(dram > 0, counted / dram, np.nan)
    low = t["counted_over_analytic"].to_numpy(float) < 1
    t.loc[low, "flag"] = [
        "; ".join(filter(None, (f, f"counted FLOPs below analytic (x{fmt.g(r)})")))
        for f, r in zip(t.loc[low, "flag"], t.loc[low, "counted_over_analytic"])
    ]
    return t


def typed(t: pd.DataFrame) -> pd.DataFrame:
    """``t`` with the columns and dtypes of :data:`ncuroof.schema.ANALYTIC_OPS`."""
    for name, col in ANALYTIC_OPS.items():
        if name not in t.columns:
            t[name] = "" if col.dtype == "string" else math.nan
        if col.dtype == "string":  # as text first: a column of only NaN is float64
            t[name] = t[name].astype("string").fillna("")
    return t[list(ANALYTIC_OPS)].astype({n: c.dtype for n, c in ANALYTIC_OPS.items()})


def _roofline(t: pd.DataFrame, bandwidth: float) -> pd.DataFrame:
    """AI, achieved rates, ridge, fraction of the attainable roof, bound, time at the roof and
    saving of each row (NaN where the row has no work)."""
    flop, nbytes, time = (t[c].to_numpy(float) for c in ("flop", "compulsory_bytes", "time_s"))
    peak = t["roof_flop_per_s"].to_numpy(float) if "roof_flop_per_s" in t else flop * math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        t["ai_flop_per_byte"] = np.where(nbytes > 0, flop / nbytes, np.nan)
        t["flop_per_s"] = np.where(time > 0, flop / time, np.nan)
        t["bytes_per_s"] = np.where(time > 0, nbytes / time, np.nan)
        t["dram_bytes_per_s"] = bandwidth
        t["ridge_flop_per_byte"] = peak / bandwidth
        ai = t["ai_flop_per_byte"].to_numpy(float)
        no_compute = ~(flop > 0) | ~np.isfinite(peak)
        attainable = np.where(no_compute, np.nan, np.minimum(peak, ai * bandwidth))
        t["roof_fraction"] = np.where(
            no_compute, t["bytes_per_s"] / bandwidth, t["flop_per_s"] / attainable
        )
        at_roof = np.fmax(np.where(no_compute, 0.0, flop / peak), nbytes / bandwidth)
    has = np.isfinite(nbytes)
    t["time_at_roof_s"] = np.where(has, at_roof, np.nan)
    t["saving_s"] = np.where(has, np.clip(time - at_roof, 0.0, None), np.nan)
    bound = np.where(
        no_compute | (ai < t["ridge_flop_per_byte"].to_numpy(float)), "memory", "compute"
    )
    t["bound"] = np.where(has, bound, "unknown")
    return t
