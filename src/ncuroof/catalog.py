"""Load and validate the metric catalog in ``metrics/``.

The catalog is data (TOML): which ncu metrics give each roofline quantity, with which weights,
per architecture; see ``metrics/README.md`` for the grammar. This module turns the files into
frozen dataclasses and checks them; it does no arithmetic on metric values.

The directory is found, in order, from ``$NCUROOF_METRICS_DIR``, the ``metrics/`` folder of a
source checkout, and the copy shipped inside the package (``ncuroof/_metrics``).
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def tensor_path(key: str) -> str | None:
    """:func:`ncuroof.schema.tensor_path` (imported when first asked: the schema imports pandas,
    which ``ncuroof list-gpus`` and ``--help`` do without)."""
    from .schema import tensor_path as path_of

    return path_of(key)


def cc_in_range(cc: Any, cc_min: float | None = None, cc_max: float | None = None) -> Any:
    """Whether compute capability ``cc`` (a number, or an array of them) is within a catalog
    entry's ``[cc_min, cc_max]`` (a bound None: open), with 1e-9 of slack for a ``"8.9"`` read as
    a float: the one range check of the recipes (``metrics/roofline.toml``) and the collector's
    metric variants (``metrics/collect.toml``)."""
    import numpy as np  # imported here: list-gpus and --help need no numpy (issue 54)

    ok = np.full(np.shape(cc), True) if cc_min is None else cc >= cc_min - 1e-9
    return ok if cc_max is None else ok & (cc <= cc_max + 1e-9)


__all__ = [
    "limits",
    "over_limit",
    "load_toml",
    "Alt",
    "Term",
    "Recipe",
    "Precision",
    "LevelDefinition",
    "Level",
    "MmaShape",
    "TensorCatalog",
    "Pipe",
    "PipeCatalog",
    "InstructionCatalog",
    "OpcodeTable",
    "OpcodeCatalog",
    "Catalog",
    "GpuSpec",
    "Measurement",
    "TensorRoofRule",
    "GpuCatalog",
    "CsvRules",
    "metrics_dir",
    "load",
    "load_gpus",
    "load_csv_rules",
    "parse_term",
    "OperatorRule",
    "OperatorCatalog",
    "OPERATOR_FAMILIES",
    "load_operators",
    "precision_title",
]


@dataclass(frozen=True)
class Alt:
    """One alternative of a term: ``weight * metric``, or the constant ``weight`` if no metric."""

    metric: str | None
    weight: float


@dataclass(frozen=True)
class Term:
    """A term: alternatives tried in order; the first present in a launch is used."""

    alts: tuple[Alt, ...]

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metric names this term may read."""
        return tuple(a.metric for a in self.alts if a.metric is not None)


@dataclass(frozen=True)
class Recipe:
    """``sum(terms) * multiply_by / prod(divide_by)``, valid for ``cc_min <= cc <= cc_max``."""

    label: str
    terms: tuple[Term, ...]
    multiply_by: Term | None = None
    divide_by: tuple[Term, ...] = ()
    cc_min: float | None = None
    cc_max: float | None = None
    source: str = ""

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric name this recipe may read."""
        names: list[str] = []
        for t in (*self.terms, self.multiply_by, *self.divide_by):
            if t is not None:
                names.extend(t.metrics)
        return tuple(names)


@dataclass(frozen=True)
class Precision:
    """Non-tensor floating-point work of one precision: rate, count and peak recipes."""

    name: str
    title: str
    rate: tuple[Recipe, ...]
    count: tuple[Recipe, ...]
    peak: tuple[Recipe, ...]


@dataclass(frozen=True)
class LevelDefinition:
    """One definition of a memory level's traffic (ncu, ncu-legacy, nersc)."""

    id: str
    description: str
    source: str
    cc_min: float | None
    cc_max: float | None
    bytes: tuple[Recipe, ...]
    rate: tuple[Recipe, ...]
    peak: tuple[Recipe, ...]


@dataclass(frozen=True)
class Level:
    """A memory level with its traffic definitions in order of preference."""

    name: str
    title: str
    definitions: tuple[LevelDefinition, ...]


@dataclass(frozen=True)
class MmaShape:
    """Ops of one warp-level MMA instruction whose opcode matches ``pattern``: ``ops``, or where the
    pattern captures the shape (groups ``m``, ``n``, ``k``: Hopper's warpgroup MMAs name it in the
    opcode) 2·M·N·K / ``warps``, the warps that each execute the instruction."""

    pattern: re.Pattern[str]
    ops: float
    path: str
    warps: int = 1

    def ops_of(self, opcode: str) -> float:
        """Ops of one executed instruction of ``opcode`` (which matches ``pattern``)."""
        m = self.pattern.search(opcode)
        if m is None or "m" not in self.pattern.groupindex:
            return self.ops
        return 2.0 * int(m["m"]) * int(m["n"]) * int(m["k"]) / self.warps


@dataclass(frozen=True)
class TensorCatalog:
    """Tensor-core metric names and the SASS MMA shape table (``metrics/tensor.toml``)."""

    ops_prefix: str
    ops_count: str
    ops_rate: str
    ops_peak: str
    ops_clock: str
    family_prefix: str
    opcode_metric: str
    looks_like_mma: re.Pattern[str]
    shapes: tuple[MmaShape, ...]
    legacy_cc: tuple[float, ...]
    legacy_factor: float
    legacy_count: Term
    legacy_rate: Term
    legacy_rate_clock: str
    legacy_peak: Term
    legacy_peak_clock: str


@dataclass(frozen=True)
class Pipe:
    """One SM pipeline of ``metrics/pipes.toml``: display name, metric bases (first present wins),
    CC range, what runs on it and what to try when it is the busiest."""

    name: str
    metrics: tuple[str, ...]
    cc_min: float | None
    cc_max: float | None
    does: str
    advice: str


@dataclass(frozen=True)
class PipeCatalog:
    """The hot-pipe metrics and the precision-to-pipe table per compute capability
    (``metrics/pipes.toml``)."""

    suffixes: tuple[str, ...]
    pipes: tuple[Pipe, ...]
    #: (cc_min, cc_max, {precision or 'tensor': pipe}, source), in file order.
    precision_pipes: tuple[tuple[float | None, float | None, dict[str, str], str], ...]
    #: ``[hot_memory_unit]``: the units of ncu's memory throughput breakdown, read like the pipes
    #: (the largest is the unit behind the memory SpeedOfLight), and the names of those that
    #: count instructions issued rather than bytes (``issue = true``).
    memory_units: tuple[Pipe, ...] = ()
    issue_units: frozenset[str] = frozenset()
    #: Those that count requests or crossbar cycles, not bytes (``requests = true``): busy with
    #: small requests (:mod:`ncuroof.model.limiters` request_bound).
    request_units: frozenset[str] = frozenset()

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every full metric name the hot pipe and hot memory unit may read (each base with each
        suffix)."""
        units = (*self.pipes, *self.memory_units)
        return tuple(b + s for p in units for b in p.metrics for s in self.suffixes)

    def pipe_of(self, cc: float) -> dict[str, str]:
        """The pipe of each precision (``fp64``, ``fp32``, ``fp16``, ``tensor``) at compute
        capability ``cc``; {} when unknown."""
        for lo, hi, pipes, _ in self.precision_pipes:
            if (lo is None or cc >= lo - 1e-9) and (hi is None or cc <= hi + 1e-9):
                return pipes
        return {}


def _pipe(p: dict[str, Any]) -> Pipe:
    """One ``[[hot_pipe.pipe]]`` or ``[[hot_memory_unit.unit]]`` entry of pipes.toml."""
    return Pipe(
        p["name"],
        tuple(m.strip() for m in p["metrics"].split("|")),
        p.get("cc_min"),
        p.get("cc_max"),
        p["does"],
        p["advice"],
    )


def _pipes(data: dict[str, Any]) -> PipeCatalog:
    hp = data["hot_pipe"]
    pipes = tuple(_pipe(p) for p in hp["pipe"])
    table = []
    for e in data["precision_pipes"]:
        if not e.get("source") or set(e["pipes"]) != {"fp64", "fp32", "fp16", "tensor"}:
            raise ValueError(
                f"pipes.toml: precision_pipes entry {e} needs a source and a pipe for fp64, fp32,"
                " fp16 and tensor"
            )
        table.append((e.get("cc_min"), e.get("cc_max"), dict(e["pipes"]), e["source"]))
    mu = data.get("hot_memory_unit", {}).get("unit", [])
    units = tuple(_pipe(u) for u in mu)
    issue = frozenset(u["name"] for u in mu if u.get("issue"))
    requests = frozenset(u["name"] for u in mu if u.get("requests"))
    return PipeCatalog(tuple(hp["suffixes"]), pipes, tuple(table), units, issue, requests)


@dataclass(frozen=True)
class InstructionCatalog:
    """The instruction roofline's metrics (``metrics/instruction_roofline.toml``, [DING])."""

    warp_inst: tuple[Recipe, ...]
    transactions: dict[str, tuple[Recipe, ...]]
    schedulers_per_sm: float
    sector_bytes: float
    sm_count: str
    clock: str
    source: str

    @property
    def metrics(self) -> tuple[str, ...]:
        """Every metric name its recipes may read."""
        recipes = [*self.warp_inst, *(r for rs in self.transactions.values() for r in rs)]
        return (self.sm_count, self.clock, *(m for r in recipes for m in r.metrics))


def _instruction(data: dict[str, Any]) -> InstructionCatalog:
    return InstructionCatalog(
        _recipes(data["warp_inst"], "warp_inst"),
        {lv: _recipes(rs, f"transactions.{lv}") for lv, rs in data["transactions"].items()},
        float(data["schedulers_per_sm"]),
        float(data["sector_bytes"]),
        data["sm_count"],
        data["clock"],
        data["source"],
    )


@dataclass(frozen=True)
class OpcodeTable:
    """One SASS opcode table of ``metrics/opcodes.toml``: its metric (instanced by opcode), the
    factor to thread instructions with a true predicate, and the assumption that factor makes."""

    id: str
    metric: str
    factor: float
    assumption: str
    source: str


@dataclass(frozen=True)
class OpcodeCatalog:
    """FLOPs per thread instruction of each FP opcode, per precision, and the opcode tables in
    order of preference (``metrics/opcodes.toml``); ``order`` is the declared preference of every
    quantity's sources (the evidence ledger)."""

    tables: tuple[OpcodeTable, ...]
    weights: dict[str, dict[str, float]]
    order: dict[str, tuple[str, ...]]
    #: ``[signals]``: name -> regex on the opcode with modifiers (the tensor estimate's
    #: per-opcode-with-modifier table) of instructions that tell something about a launch
    #: (HFMA2.MMA register moves, a grid-wide spin barrier).
    signals: dict[str, re.Pattern[str]] = field(default_factory=dict)
    #: ``[signals].<name>.share`` where given (the share of its kind a signal must reach).
    signal_share: dict[str, float] = field(default_factory=dict)

    @functools.cached_property
    def fp_opcode(self) -> re.Pattern[str]:
        """The opcodes that carry FP work (a key of :attr:`weights`), matched on a table's key."""
        names = sorted({op for w in self.weights.values() for op in w}, key=len, reverse=True)
        return re.compile("^(" + "|".join(map(re.escape, names)) + ")$")


def _opcodes(data: dict[str, Any]) -> OpcodeCatalog:
    tables = tuple(
        OpcodeTable(t["id"], t["metric"], float(t["factor"]), t.get("assumption", ""), t["source"])
        for t in data["table"]
    )
    weights = {p: {op: float(w) for op, w in ws.items()} for p, ws in data["weights"].items()}
    if not tables or any(t.factor <= 0 for t in tables) or not all(weights.values()):
        raise ValueError(
            "opcodes.toml: needs [[table]] entries with a positive factor and weights per precision"
        )
    sig = data.get("signals", {})
    return OpcodeCatalog(
        tables,
        weights,
        {k: tuple(v) for k, v in data.get("order", {}).items()},
        {k: re.compile(v["pattern"]) for k, v in sig.items()},
        {k: float(v["share"]) for k, v in sig.items() if "share" in v},
    )


@dataclass(frozen=True)
class Catalog:
    """The whole metric catalog."""

    directory: Path
    time: tuple[Recipe, ...]
    clocks: dict[str, str]
    precisions: dict[str, Precision]
    levels: dict[str, Level]
    throughput: dict[str, str]
    launch_metrics: tuple[str, ...]
    tensor: TensorCatalog
    thresholds: dict[str, Any] = field(default_factory=dict)
    pipes: PipeCatalog | None = None
    instruction: InstructionCatalog | None = None
    opcodes: OpcodeCatalog | None = None
    #: ``[l2_evidence]`` of roofline.toml: L2 write bytes (``writes``) and an L2 roof from the
    #: tag stage (``peak``).
    l2_evidence: dict[str, tuple[Recipe, ...]] = field(default_factory=dict)
    #: ``[l2_evidence].reads_only``: the L2 definitions that count reads only (their writes are
    #: added where they put L2 below DRAM, :func:`ncuroof.model.formulas` ``_count_l2_writes``).
    l2_reads_only: tuple[str, ...] = ()
    #: ``metrics/limiters.toml``: the limiter rules' order, thresholds, metrics and stall reasons
    #: (:mod:`ncuroof.model.limiters`); empty without the file.
    limiters: dict[str, Any] = field(default_factory=dict)
    #: ``metrics/sampling.toml``: the PM sampling series per column of the samples table and the
    #: phase rules (:mod:`ncuroof.model.samples`); empty without the file.
    sampling: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def limiter_metrics(self) -> dict[str, str]:
        """The metrics the limiter rules read (``[metrics]`` of limiters.toml), by role; the stall
        template expanded as ``stall:<reason>``."""
        spec = dict(self.limiters.get("metrics", {}))
        spec.pop("source", None)
        template = spec.pop("stall", "")
        stalls = {f"stall:{r}": template.format(reason=r) for r in self.limiters.get("stall", {})}
        return {**spec, **(stalls if template else {})}

    @functools.cached_property
    def instanced_metrics(self) -> dict[str, re.Pattern[str]]:
        """The instanced (per-opcode) metrics the parser reads, each with the regex of the instance
        keys it keeps: the MMA opcodes of the tensor estimate and the FP opcodes of
        ``opcodes.toml``. Kept instances become ``<metric>[<key>]`` columns."""
        kept = [self.tensor.looks_like_mma.pattern]
        if self.opcodes is not None:
            kept += [p.pattern for p in self.opcodes.signals.values()]
        out = {self.tensor.opcode_metric: re.compile("|".join(f"(?:{p})" for p in kept))}
        if self.opcodes is not None:
            out |= {t.metric: self.opcodes.fp_opcode for t in self.opcodes.tables}
        return out

    @functools.cached_property
    def scalar_metrics(self) -> frozenset[str]:
        """Every non-instanced metric name any recipe may read (the parser reads these)."""
        names: set[str] = (
            set(self.clocks.values()) | set(self.throughput.values()) | set(self.launch_metrics)
        )
        recipes: list[Recipe] = list(self.time)
        for p in self.precisions.values():
            recipes += [*p.rate, *p.count, *p.peak]
        for lv in self.levels.values():
            for d in lv.definitions:
                recipes += [*d.bytes, *d.rate, *d.peak]
        recipes += [r for rs in self.l2_evidence.values() for r in rs]
        for r in recipes:
            names.update(r.metrics)
        t = self.tensor
        for term in (t.legacy_count, t.legacy_rate, t.legacy_peak):
            names.update(term.metrics)
        names.update({t.legacy_rate_clock, t.legacy_peak_clock, t.ops_clock})
        if self.pipes is not None:
            names.update(self.pipes.metrics)
        if self.instruction is not None:
            names.update(self.instruction.metrics)
        names.update(self.limiter_metrics.values())
        return frozenset(names)

    def formula(self, key: str, definition: str = "") -> str:
        """The formula behind a precision's FLOPs or a level's bytes, for hover text and notes.

        Parameters
        ----------
        key : str
            A precision (``fp32``), ``tensor:<path>`` or a level (``dram``).
        definition : str, optional
            The level's traffic definition (``ncu``, ``ncu-legacy``, ``nersc``; the
            ``<level>_definition`` column); several joined with `` / `` are all described.

        Returns
        -------
        str
            The count recipe's label(s) from ``metrics/roofline.toml`` (``fadd + fmul + 2*ffma …``,
            ``dram__bytes.sum``); for tensor paths the ``sm__ops_path_tensor_<path>`` metric or
            the estimate used; empty when unknown.
        """
        if key in self.precisions:
            return self.precisions[key].count[0].label
        path = tensor_path(key)
        if path is not None:
            if path.startswith("sass_"):
                return (
                    f"{path[5:].upper()} SASS opcode counts x ops per instruction shape (estimated)"
                )
            if path == "legacy_x512":
                return (
                    f"{self.tensor.legacy_count.alts[0].metric} x {self.tensor.legacy_factor:g}"
                    " (approximate)"
                )
            return (
                f"{self.tensor.ops_prefix}{path}{self.tensor.ops_count} (tensor ops, as ncu counts"
                " them)"
            )
        if key in self.levels:
            wanted = [d for d in definition.split(" / ") if d] if definition else []
            writes = self.l2_evidence.get("writes", ())
            labels = [
                d.bytes[0].label
                + (f" + {writes[0].label}" if f"{d.id}+writes" in wanted and writes else "")
                for d in self.levels[key].definitions
                if not wanted or d.id in wanted or f"{d.id}+writes" in wanted
            ]
            return " or ".join(dict.fromkeys(labels))
        return ""

    def is_tensor_path_metric(self, name: str) -> bool:
        """Whether ``name`` is a ``sm__ops_path_tensor_<path>`` count, rate or peak."""
        t = self.tensor
        return name.startswith(t.ops_prefix) and name.endswith(
            (t.ops_count, t.ops_rate, t.ops_peak)
        )


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_METRIC = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:\[\]]*$")


def parse_term(text: str) -> Term:
    """Parse ``"alt | alt | ..."`` where an alt is ``metric``, ``W*metric`` or a number.

    Parameters
    ----------
    text : str
        The term as written in the catalog.

    Returns
    -------
    Term

    Raises
    ------
    ValueError
        If an alternative is neither a number nor a (weighted) metric name.
    """
    alts = []
    for part in text.split("|"):
        part = part.strip()
        if _NUMBER.match(part):
            alts.append(Alt(None, float(part)))
            continue
        weight, _, metric = part.rpartition("*")
        metric = metric.strip()
        if (weight and not _NUMBER.match(weight.strip())) or not _METRIC.match(metric):
            raise ValueError(f"bad term alternative {part!r} in {text!r}")
        alts.append(Alt(metric, float(weight) if weight else 1.0))
    if not alts:
        raise ValueError(f"empty term {text!r}")
    return Term(tuple(alts))


def _recipe(d: dict[str, Any], where: str) -> Recipe:
    unknown = set(d) - {"label", "terms", "multiply_by", "divide_by", "cc_min", "cc_max", "source"}
    if unknown or "label" not in d or not d.get("terms"):
        raise ValueError(f"{where}: a recipe needs label and terms and knows no {sorted(unknown)}")
    return Recipe(
        label=d["label"],
        terms=tuple(parse_term(t) for t in d["terms"]),
        multiply_by=parse_term(d["multiply_by"]) if "multiply_by" in d else None,
        divide_by=tuple(
            parse_term(t)
            for t in (
                [d["divide_by"]] if isinstance(d.get("divide_by"), str) else d.get("divide_by", [])
            )
        ),
        cc_min=d.get("cc_min"),
        cc_max=d.get("cc_max"),
        source=d.get("source", ""),
    )


def _recipes(items: list[dict[str, Any]], where: str) -> tuple[Recipe, ...]:
    return tuple(_recipe(d, f"{where}[{i}]") for i, d in enumerate(items))


def metrics_dir() -> Path:
    """Return the directory holding the catalog's TOML files.

    Returns
    -------
    Path
        ``$NCUROOF_METRICS_DIR`` if set, else ``metrics/`` beside the package in a source
        checkout, else the copy installed with the package.

    Raises
    ------
    FileNotFoundError
        If none of these holds ``roofline.toml``.
    """
    here = Path(__file__).resolve().parent
    candidates = (
        [Path(os.environ["NCUROOF_METRICS_DIR"])] if os.environ.get("NCUROOF_METRICS_DIR") else []
    )
    candidates += [here.parent.parent / "metrics", here / "_metrics"]  # src/ncuroof -> metrics/
    for c in candidates:
        if (c / "roofline.toml").is_file():
            return c
    raise FileNotFoundError(
        f"metric catalog (roofline.toml) not found in {[str(c) for c in candidates]}"
    )


def _read(path: Path) -> dict[str, Any]:
    with path.open("rb") as f:
        data = tomllib.load(f)
    if data.get("schema_version") != 1:
        raise ValueError(f"{path}: schema_version must be 1")
    return data


def load_toml(directory: Path | None, name: str) -> dict[str, Any]:
    """Read one catalog file (``collect.toml``, ...) as a dict, checking its schema version.

    Parameters
    ----------
    directory : Path or None
        Where the TOML files are; None for :func:`metrics_dir`.
    name : str
        File name.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If ``schema_version`` is not 1.
    """
    return _read((directory or metrics_dir()) / name)


def _precisions(roof: dict[str, Any]) -> dict[str, Precision]:
    """``[precision.*]`` of roofline.toml."""
    return {
        name: Precision(
            name=name,
            title=p["title"],
            rate=_recipes(p.get("rate", []), f"precision.{name}.rate"),
            count=_recipes(p.get("count", []), f"precision.{name}.count"),
            peak=_recipes(p.get("peak", []), f"precision.{name}.peak"),
        )
        for name, p in roof["precision"].items()
    }


def _levels(roof: dict[str, Any]) -> dict[str, Level]:
    """``[level.*]`` of roofline.toml, each with its traffic definitions."""
    levels = {}
    for name, lv in roof["level"].items():
        defs = tuple(
            LevelDefinition(
                id=d["id"],
                description=d["description"],
                source=d.get("source", ""),
                cc_min=d.get("cc_min"),
                cc_max=d.get("cc_max"),
                bytes=_recipes(d.get("bytes", []), f"level.{name}.{d['id']}.bytes"),
                rate=_recipes(d.get("rate", []), f"level.{name}.{d['id']}.rate"),
                peak=_recipes(d.get("peak", []), f"level.{name}.{d['id']}.peak"),
            )
            for d in lv["definition"]
        )
        levels[name] = Level(name=name, title=lv["title"], definitions=defs)
    return levels


def _tensor(ten: dict[str, Any]) -> TensorCatalog:
    """tensor.toml: ops-path metrics, SASS MMA shapes and the legacy x512 rule."""
    shapes = []
    for s in ten["sass_opcodes"]["shapes"]:
        pattern = re.compile(s["pattern"])
        captured = {"m", "n", "k"} <= set(pattern.groupindex)
        ops = s.get("ops", 2.0 * s.get("m", 0) * s.get("n", 0) * s.get("k", 0))
        if (ops <= 0 and not captured) or int(s.get("warps", 1)) < 1:
            raise ValueError(
                f"tensor.toml: shape {s} has no ops, m/n/k or captured (?P<m>)(?P<n>)(?P<k>)"
                " groups, or warps < 1"
            )
        shapes.append(MmaShape(pattern, float(ops), s["path"], int(s.get("warps", 1))))
    op, so, lg = ten["ops_path"], ten["sass_opcodes"], ten["legacy_x512"]
    return TensorCatalog(
        ops_prefix=op["prefix"],
        ops_count=op["count"],
        ops_rate=op["rate"],
        ops_peak=op["peak"],
        ops_clock=op["clock"],
        family_prefix=op["family_prefix"],
        opcode_metric=so["metric"],
        looks_like_mma=re.compile(so["looks_like_mma"]),
        shapes=tuple(shapes),
        legacy_cc=tuple(float(c) for c in lg["cc"]),
        legacy_factor=float(lg["factor"]),
        legacy_count=parse_term(lg["count"]),
        legacy_rate=parse_term(lg["rate"]),
        legacy_rate_clock=lg["rate_clock"],
        legacy_peak=parse_term(lg["peak"]),
        legacy_peak_clock=lg["peak_clock"],
    )


def load(directory: Path | None = None) -> Catalog:
    """Load and validate the metric catalog (roofline.toml, tensor.toml, thresholds.toml,
    pipes.toml, ...) from ``directory`` (default :func:`metrics_dir`), cached per directory
    (the default and its path are one: the files are read once).

    Returns
    -------
    Catalog

    Raises
    ------
    ValueError
        If a file breaks the grammar of ``metrics/README.md``.
    """
    return _load(Path(directory or metrics_dir()))


@functools.lru_cache(maxsize=4)
def _load(directory: Path) -> Catalog:
    """:func:`load` of one directory."""
    roof = _read(directory / "roofline.toml")
    ten = _read(directory / "tensor.toml")
    thresholds = _read(directory / "thresholds.toml")

    precisions, levels, tensor = _precisions(roof), _levels(roof), _tensor(ten)
    return Catalog(
        directory=directory,
        time=_recipes(roof["time"]["recipes"], "time"),
        clocks=dict(roof["clock"]),
        precisions=precisions,
        levels=levels,
        throughput=dict(roof["throughput"]),
        launch_metrics=tuple(roof["launch"]["metrics"]),
        tensor=tensor,
        thresholds=thresholds,
        pipes=_pipes(_read(directory / "pipes.toml")),
        instruction=_instruction(_read(directory / "instruction_roofline.toml")),
        l2_evidence={
            k: _recipes(v, f"l2_evidence.{k}")
            for k, v in roof.get("l2_evidence", {}).items()
            if k != "reads_only"
        },
        l2_reads_only=tuple(roof.get("l2_evidence", {}).get("reads_only", ())),
        opcodes=(
            _opcodes(_read(directory / "opcodes.toml"))
            if (directory / "opcodes.toml").is_file()
            else None
        ),
        limiters=(
            _read(directory / "limiters.toml") if (directory / "limiters.toml").is_file() else {}
        ),
        sampling=(
            _read(directory / "sampling.toml") if (directory / "sampling.toml").is_file() else {}
        ),
    )


@functools.lru_cache(maxsize=4)
def _labels(directory: Path) -> dict[str, dict[str, str]]:
    """``[labels]`` of ``labels.toml`` in ``directory``, else of the copy beside the package (a
    user's catalog folder may predate the file)."""
    path = directory / "labels.toml"
    if not path.is_file():
        path = Path(__file__).resolve().parent / "_metrics" / "labels.toml"
    return _read(path)["labels"]


def _tensor_title(path: str, labels: dict[str, dict[str, str]]) -> str:
    """A tensor datapath as people name it, read token by token (``labels.toml``)."""
    if path in labels["fixed"]:
        return labels["fixed"][path]
    tokens = path.split("_")
    sure = labels["sources"].get(tokens[0], "")
    fams, srcs, dst, notes = [], [], "", []
    for i, t in enumerate(tokens):
        if t in labels["families"]:
            fams.append(labels["families"][t])
        elif t in labels["types"] and i and tokens[i - 1] == "dst":
            dst = labels["types"][t]
        elif t in labels["types"]:
            srcs.append(labels["types"][t])
        elif t == "fp32acc":
            dst = labels["types"]["fp32"]
        elif t == "on" and i and tokens[i - 1] == "sparsity":
            notes.append("sparse")
    inside = [*fams, *([f"{dst} accumulate"] if dst else []), *notes]
    implied = [labels["family_types"].get(t, "") for t in tokens if t in labels["family_types"]]
    srcs = srcs or [t for t in implied if t]
    title = "/".join(dict.fromkeys(srcs)) + " tensor" if srcs else "Tensor"
    title += f" ({', '.join(inside)})" if inside else ""
    return title + (f", {sure}" if sure else "")


@functools.lru_cache(maxsize=4096)
def precision_title(precision: str, directory: Path | None = None) -> str:
    """The name of a precision as ncu and its users say it, for every display (terminal, page,
    Markdown, advice); column names keep the datapath.

    ``fp32`` -> ``FP32``; ``tensor:src_bf16_dst_fp32`` -> ``BF16 tensor (FP32 accumulate)``;
    ``tensor:op_hmma_src_bf16_dst_fp32`` -> ``BF16 tensor (HMMA, FP32 accumulate)``;
    ``tensor:sass_imma`` -> ``Tensor (IMMA), estimated``; ``tensor:sass_igmma_int8`` ->
    ``INT8 tensor (IGMMA), estimated``. The words are data: ``metrics/labels.toml``. Cached: the
    diagnosis names a precision per launch.

    Parameters
    ----------
    precision : str
        A precision key (``fp64``, ``fp32``, ``fp16``, ``tensor:<path>``).
    directory : Path, optional
        The catalog folder (default :func:`metrics_dir`).
    """
    path = tensor_path(precision)
    if path is None:
        return precision.upper()
    return _tensor_title(path, _labels(directory or metrics_dir()))


def limits() -> dict[str, float]:
    """The ``[limits]`` of ``metrics/thresholds.toml``: how much work an input may
    ask for (issue 34)."""
    return {k: v for k, v in load().thresholds["limits"].items() if k != "source"}


def over_limit(name: str, what: str) -> str:
    """The message of an input past the limit ``name`` of :func:`limits`: ``what`` it holds, the
    limit, and how to raise it (``metrics/thresholds.toml`` ``[limits]``)."""
    value = limits()[name]
    shown = f"{int(value):,}" if float(value).is_integer() else f"{value:g}"
    return (
        f"{what}, beyond limits.{name} = {shown}; if the file is genuine, raise {name} under "
        f"[limits] in {metrics_dir() / 'thresholds.toml'}"
    )


@dataclass(frozen=True)
class Measurement:
    """One published measurement of what a GPU sustains (``[[gpu.measured]]`` of
    ``metrics/gpus.toml``).

    ``quantity`` is a roof name: a memory level (``dram``, ``l2``, ``l1``), a precision (``fp64``,
    ``fp32``, ``fp16``) or ``tensor_<datasheet key>`` (``tensor_fp16``); ``value`` is in SI units
    (B/s or FLOP/s).
    """

    quantity: str
    value: float
    what: str
    method: str
    date: str
    source: str
    confidence: str


@dataclass(frozen=True)
class GpuSpec:
    """Datasheet ceilings of one GPU (``metrics/gpus.toml``), in SI units.

    Peaks are dense, at the boost clock: FLOP/s (OP/s for int8) and B/s. ``tensor`` maps a
    datasheet key (``fp16``, ``fp16_fp32acc``, ``bf16``, ``tf32``, ``fp8``, ``int8``, ``fp64``,
    ``fp4``) to FLOP/s.
    """

    id: str
    name: str
    match: tuple[re.Pattern[str], ...]
    cc: str
    sms: int
    boost_hz: float
    flop_per_s: dict[str, float]
    tensor: dict[str, float]
    dram_bytes_per_s: float
    l2_bytes: float
    source: str
    confidence: str
    measured: tuple[Measurement, ...] = ()

    def matches(self, device_name: str) -> bool:
        """Whether ``device_name`` (``device__attribute_display_name``) is this GPU."""
        return any(p.search(device_name) for p in self.match)

    def datasheet_value(self, quantity: str) -> float | None:
        """The datasheet roof of a roof name (``dram``, ``fp32``, ``tensor_fp16``...) in
        SI units, or None."""
        if quantity == "dram":
            return self.dram_bytes_per_s
        if quantity.startswith("tensor_"):
            return self.tensor.get(quantity[len("tensor_") :])
        return self.flop_per_s.get(quantity)

    def achievable(self) -> dict[str, Measurement]:
        """The achievable roof of each measured quantity: its highest measurement (a roof bounds
        what any kernel sustained), by roof name."""
        best: dict[str, Measurement] = {}
        for m in self.measured:
            if m.quantity not in best or m.value > best[m.quantity].value:
                best[m.quantity] = m
        return best


@dataclass(frozen=True)
class TensorRoofRule:
    """Which datasheet key is the roof of the tensor datapaths matching ``pattern``
    (``[[tensor_paths]]`` of ``metrics/gpus.toml``); ``assumption`` and ``confidence`` say what is
    assumed where the path does not name its datatype (the SASS-opcode estimate), empty
    where nothing is."""

    pattern: re.Pattern[str]
    key: str
    assumption: str = ""
    confidence: str = ""


@dataclass(frozen=True)
class GpuCatalog:
    """Every :class:`GpuSpec`, in file order, and the tensor-path to datasheet-key rules."""

    gpus: tuple[GpuSpec, ...]
    tensor_paths: tuple[TensorRoofRule, ...]

    def by_device(self, device_name: str) -> GpuSpec | None:
        """The first GPU whose ``match`` finds ``device_name``, or None."""
        return next((g for g in self.gpus if g.matches(device_name)), None)

    def by_name(self, name: str) -> GpuSpec | None:
        """The GPU a user named (``--gpu``): its id, its name, or a device name it matches."""
        key = name.strip().lower()
        for g in self.gpus:
            if key in (g.id.lower(), g.name.lower()):
                return g
        return self.by_device(name)

    def entry(self, name: object = "", device: object = "") -> GpuSpec | None:
        """The GPU a launch is judged on: the entry ``name`` (``--gpu``, or the ``datasheet_gpu``
        its roofs came from, :meth:`by_name`), else the one matching its ``device`` name
        (:meth:`by_device`); None when neither is given (missing values are not text) or known.
        The one rule for it: roofs, the issue roof, confidences, the tensor-core lever and traces
        all call it."""
        name, device = (x if isinstance(x, str) else "" for x in (name, device))
        return self.by_name(name) if name else (self.by_device(device) if device else None)

    def unknown(self, option: str, name: str) -> str:
        """The one line for a GPU ``option`` (``--gpu``, ``--what-if``) naming no entry: the ids
        it is close to (those it is part of, else :func:`difflib.get_close_matches`), and where
        the whole list is."""
        import difflib

        key = name.strip().lower()
        ids = [g.id for g in self.gpus]
        close = [i for i in ids if key and key in i] or difflib.get_close_matches(key, ids, 4, 0.6)
        hint = f"did you mean {', '.join(close[:6])}? " if close else ""
        return (
            f"{option} {name!r} is not in the datasheet catalog (metrics/gpus.toml); {hint}"
            "ncuroof list-gpus names every id"
        )

    def tensor_key(self, path: str) -> str:
        """The datasheet key of a tensor datapath, ``""`` when it has none (sparse, unknown)."""
        return self.tensor_rule(path).key

    def tensor_rule(self, path: str) -> TensorRoofRule:
        """The first :class:`TensorRoofRule` matching a tensor datapath (key
        ``""`` when none does)."""
        return next(
            (r for r in self.tensor_paths if r.pattern.search(path)),
            TensorRoofRule(re.compile(""), ""),
        )


def load_gpus(directory: Path | None = None) -> GpuCatalog:
    """Load the datasheet catalog ``metrics/gpus.toml``.

    Parameters
    ----------
    directory : Path, optional
        Where the TOML files are; default :func:`metrics_dir`.

    Returns
    -------
    GpuCatalog
        Values converted to SI: TFLOP/s x 1e12, GB/s x 1e9, MB x 1e6, MHz x 1e6.

    Raises
    ------
    ValueError
        If an entry lacks a field, repeats an id, or has a non-positive peak.
    """
    return _load_gpus(Path(directory or metrics_dir()))


@functools.lru_cache(maxsize=4)
def _load_gpus(directory: Path) -> GpuCatalog:
    """:func:`load_gpus` of one directory (the default and its path: one entry)."""
    data = _read(directory / "gpus.toml")
    gpus = []
    seen: set[str] = set()
    for g in data["gpu"]:
        missing = _GPU_FIELDS - set(g)
        if missing or g["id"] in seen:
            raise ValueError(
                f"gpus.toml: entry {g.get('id')!r} lacks {sorted(missing)} or repeats its id"
            )
        seen.add(g["id"])
        gpus.append(_gpu_spec(g))
    paths = tuple(
        TensorRoofRule(
            re.compile(t["pattern"]), t["key"], t.get("assumption", ""), t.get("confidence", "")
        )
        for t in data["tensor_paths"]
    )
    return GpuCatalog(tuple(gpus), paths)


#: Fields every ``[[gpu]]`` entry of ``metrics/gpus.toml`` has.
_GPU_FIELDS = frozenset(
    {
        "id",
        "name",
        "match",
        "cc",
        "sms",
        "boost_mhz",
        "fp64_tflops",
        "fp32_tflops",
        "tensor_tflops",
        "dram_gbps",
        "l2_mb",
        "source",
        "confidence",
    }
)


def _gpu_spec(g: dict[str, Any]) -> GpuSpec:
    """One ``[[gpu]]`` entry in SI units, with its measurements; ValueError on a non-positive
    number or an unknown confidence."""
    flops = {
        p: float(g[f"{p}_tflops"]) * 1e12 for p in ("fp64", "fp32", "fp16") if f"{p}_tflops" in g
    }
    tensor = {k: float(v) * 1e12 for k, v in g["tensor_tflops"].items()}
    values = [*flops.values(), *tensor.values(), g["dram_gbps"], g["l2_mb"], g["boost_mhz"]]
    if any(v <= 0 for v in values) or g["confidence"] not in ("H", "M", "L", "H/M", "M/L"):
        raise ValueError(
            f"gpus.toml: entry {g['id']!r} has a non-positive number or an unknown confidence"
        )
    spec = GpuSpec(
        id=g["id"],
        name=g["name"],
        match=tuple(re.compile(m, re.IGNORECASE) for m in g["match"]),
        cc=g["cc"],
        sms=int(g["sms"]),
        boost_hz=float(g["boost_mhz"]) * 1e6,
        flop_per_s=flops,
        tensor=tensor,
        dram_bytes_per_s=float(g["dram_gbps"]) * 1e9,
        l2_bytes=float(g["l2_mb"]) * 1e6,
        source=g["source"],
        confidence=g["confidence"],
    )
    return replace(spec, measured=tuple(_measurement(spec, m) for m in g.get("measured", [])))


#: Fields every ``[[gpu.measured]]`` entry has; ``value`` or ``fraction`` gives the number.
_MEASURED_FIELDS = ("quantity", "what", "method", "date", "source", "confidence")


def _measurement(spec: GpuSpec, m: dict[str, Any]) -> Measurement:
    """One ``[[gpu.measured]]`` entry of ``spec``, in SI units: ``value`` in GB/s (levels) or
    TFLOP/s (precisions, ``tensor_<key>``), or ``fraction`` of the datasheet's value
    of the same quantity.
    """
    missing = [f for f in _MEASURED_FIELDS if not str(m.get(f, "")).strip()]
    quantity = str(m.get("quantity", ""))
    level = quantity in ("dram", "l2", "l1")
    known = level or quantity in ("fp64", "fp32", "fp16") or quantity.startswith("tensor_")
    if missing or not known or ("value" in m) == ("fraction" in m):
        raise ValueError(
            f"gpus.toml: a measured entry of {spec.id!r} lacks {missing}, names an unknown quantity"
            f" {quantity!r}, or gives not exactly one of value and fraction"
        )
    if "fraction" in m:
        base = spec.datasheet_value(quantity)
        if base is None or not 0 < float(m["fraction"]) <= 1.5:
            raise ValueError(
                f"gpus.toml: measured {quantity} of {spec.id!r} is a fraction of a datasheet value"
                " it lacks, or not in (0, 1.5]"
            )
        value = float(m["fraction"]) * base
    else:
        value = float(m["value"]) * (1e9 if level else 1e12)
    if not value > 0 or m["confidence"] not in ("H", "M", "L"):
        raise ValueError(
            f"gpus.toml: measured {quantity} of {spec.id!r} is not positive or has an unknown"
            " confidence"
        )
    return Measurement(
        quantity,
        value,
        str(m["what"]),
        str(m["method"]),
        str(m["date"]),
        str(m["source"]),
        str(m["confidence"]),
    )


@dataclass(frozen=True)
class CsvRules:
    """How CSV exports are read (``metrics/csv.toml``): unit words and section labels."""

    prefixes: dict[str, float]
    bases: dict[str, float]
    per: dict[str, float]
    labels: dict[tuple[str, str], str]
    #: (section, label) printed once per chart of a section (the same metric each time):
    #: the first row is read.
    repeating: frozenset[tuple[str, str]] = frozenset()
    #: metric -> the other metrics a label's value also gives (``also`` in csv.toml).
    also: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def factor(self, unit: str) -> float | None:
        """Factor from ``unit`` to the ncu base unit of its kind, or None for an unknown unit.

        ``"Kbyte"`` gives 1e3, ``"usecond"`` 1e3 (to ns), ``"Ghz"`` 1e9, ``"Gbyte/s"`` 1e9,
        ``"cycle/nsecond"`` 1e9, ``"%"`` 1, ``""`` 1.
        """
        num, sep, den = unit.strip().partition("/")
        f = self._word(num, self.bases)
        if f is None:
            return None
        if sep:
            d = self._word(den, self.per, per=True)
            if d is None:
                return None
            f *= d
        return f

    def _word(self, word: str, table: dict[str, float], per: bool = False) -> float | None:
        if word in table:
            return table[word]
        if (
            len(word) > 1
            and word[0] in self.prefixes
            and word[1:] in table
            and word[1:] not in ("", "%")
        ):
            prefix = self.prefixes[word[0]]
            return table[word[1:]] / prefix if per else prefix * table[word[1:]]
        return None


@functools.lru_cache(maxsize=4)
def load_csv_rules(directory: Path | None = None) -> CsvRules:
    """Load the CSV reading rules ``csv.toml`` (units, section labels) from ``directory``
    (default :func:`metrics_dir`).

    Returns
    -------
    CsvRules

    Raises
    ------
    ValueError
        If a label repeats (section, label) or names an empty metric.
    """
    data = _read((directory or metrics_dir()) / "csv.toml")
    units = data["units"]
    labels: dict[tuple[str, str], str] = {}
    repeating, also = set(), {}
    for item in data["labels"]:
        key = (item["section"], item["label"])
        if key in labels or not item.get("metric"):
            raise ValueError(f"csv.toml: label {key} repeats or has no metric")
        labels[key] = item["metric"]
        if item.get("repeats"):
            repeating.add(key)
        if item.get("also"):
            also[item["metric"]] = tuple(item["also"])
    return CsvRules(
        {k: float(v) for k, v in units["prefixes"].items()},
        {k: float(v) for k, v in units["bases"].items()},
        {k: float(v) for k, v in units["per"].items()},
        labels,
        frozenset(repeating),
        also,
    )


# --- issue 41, analytic work of PyTorch operators (metrics/operators.toml) ---------------------

#: The families of ``metrics/operators.toml`` whose arithmetic :mod:`ncuroof.model.analytic` knows.
OPERATOR_FAMILIES = (
    "matmul",
    "linear",
    "convolution",
    "convolution_backward",
    "attention",
    "attention_backward",
    "normalization",
    "softmax",
    "embedding",
    "elementwise",
    "reduction",
    "scaled_matmul",
    "grouped_matmul",
    "fused_moe",
)


@dataclass(frozen=True)
class OperatorRule:
    """One operator of ``metrics/operators.toml``: its family, whether it is matmul-class (tensor
    roofs), its formula and source, and its parameters (argument positions, per-element costs)."""

    op: str
    family: str
    matmul: bool
    formula: str
    source: str
    params: dict[str, Any]


@dataclass(frozen=True)
class OperatorCatalog:
    """``metrics/operators.toml``: the rules by operator name, the dtypes (Kineto ``Input type``
    -> bytes per element and precision), the roof of each precision for matmul-class and other
    operators (roof names as :meth:`GpuSpec.datasheet_value` takes them, alternatives split by
    ``|``) and the causal share of attention's score work."""

    rules: dict[str, OperatorRule]
    dtypes: dict[str, tuple[int, str]]
    matmul_roofs: dict[str, str]
    other_roofs: dict[str, str]
    causal_fraction: float
    #: Operator -> the operators nested in it whose kernels are its own (its formula counts their
    #: work: a convolution's bias add), from a family's ``absorbs``.
    absorbs: dict[str, frozenset[str]] = field(default_factory=dict)
    #: Kineto dtype -> values per stored element (packed FP4: 2), from ``[dtypes]``'s ``packed``.
    packed: dict[str, int] = field(default_factory=dict)
    #: c10::ScalarType code -> bytes per element (``[scalar_types]``: a matmul's ``out_dtype``).
    scalar_type_bytes: dict[int, int] = field(default_factory=dict)
    #: ``[communication]``: (name key, busbw factor) in order, and dtype name -> bytes.
    comm_factors: tuple[tuple[str, str], ...] = ()
    comm_dtype_bytes: dict[str, int] = field(default_factory=dict)


@functools.lru_cache(maxsize=4)
def load_operators(directory: Path | None = None) -> OperatorCatalog:
    """Load ``metrics/operators.toml`` (issue 41).

    Parameters
    ----------
    directory : Path, optional
        Where the TOML files are; default :func:`metrics_dir`.

    Returns
    -------
    OperatorCatalog

    Raises
    ------
    ValueError
        An unknown family, an operator listed twice, a family without formula, units or source, a
        dtype without a positive size, a causal fraction outside (0, 1].
    """
    data = _read((directory or metrics_dir()) / "operators.toml")
    rules: dict[str, OperatorRule] = {}
    absorbs: dict[str, frozenset[str]] = {}
    for fam in data["family"]:
        name = fam.get("name")
        if name not in OPERATOR_FAMILIES or not all(fam.get(k) for k in _FAMILY_FIELDS):
            raise ValueError(
                f"operators.toml: family {name!r} is unknown or lacks one of {_FAMILY_FIELDS}"
            )
        for entry in fam["ops"]:
            op = entry["op"]
            if op in rules:
                raise ValueError(f"operators.toml: {op} is listed twice")
            params = {k: v for k, v in entry.items() if k != "op"}
            matmul = bool(fam.get("matmul", False))
            rules[op] = OperatorRule(op, name, matmul, fam["formula"], fam["source"], params)
            if fam.get("absorbs"):
                absorbs[op] = frozenset(fam["absorbs"])
    dtypes = {k: (int(v["bytes"]), str(v["precision"])) for k, v in data["dtypes"].items()}
    if any(b <= 0 for b, _ in dtypes.values()):
        raise ValueError("operators.toml: a dtype without a positive size")
    causal = float(data["attention"]["causal_fraction"])
    if not 0 < causal <= 1:
        raise ValueError("operators.toml: [attention].causal_fraction must be in (0, 1]")
    roofs = data["roofs"]
    packed = {k: int(v["packed"]) for k, v in data["dtypes"].items() if "packed" in v}
    scalar = {int(k): int(v) for k, v in data.get("scalar_types", {}).get("bytes", {}).items()}
    comm = data.get("communication", {})
    factors = tuple((str(k), str(f)) for k, f in comm.get("factors", []))
    if any(f not in ("2(n-1)/n", "(n-1)/n", "1") for _, f in factors):
        raise ValueError("operators.toml: a [communication] factor is not 2(n-1)/n, (n-1)/n or 1")
    return OperatorCatalog(
        rules,
        dtypes,
        dict(roofs["matmul"]),
        dict(roofs["other"]),
        causal,
        absorbs,
        packed,
        scalar,
        factors,
        {str(k): int(v) for k, v in comm.get("dtype_bytes", {}).items()},
    )


_FAMILY_FIELDS = ("formula", "units", "bytes", "source", "ops")
