"""The machine-readable verdict: ``analyze --json`` and ``compare --json`` documents
and their JSON Schemas.

One document per command, built from the analysis object's tables
(:func:`ncuroof.model.analysis.build`: ``kernels``, ``dots``, ``summary``) and, for ``compare``,
from whatever columns the comparison table has: a kernel record holds every column declared in
:mod:`ncuroof.schema` (:data:`~ncuroof.schema.KERNEL_SUMMARY` and
:data:`~ncuroof.schema.KERNEL_WORK`), so a column declared there flows into the document and its
schema without a change here. Key names carry their units as the tables' column names do
(``time_s``, ``dram_bytes``, ``ai_flop_per_byte``). A missing value is ``null``, never 0, NaN or
inf; an empty text is ``null`` too.

:func:`json_schema` makes the JSON Schema of each document from the same declarations; the files
shipped in ``ncuroof/schemas/`` are its output (``scripts/make_schemas.py``), and a
test keeps them equal.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._version import __version__
from ..fmt import path_text
from ..model.summary import kernel_work
from ..schema import (
    ANALYTIC_SOURCE,
    DOTS,
    KERNEL_SUMMARY,
    KERNEL_WORK,
    LEVELS,
    PRECISIONS,
    TABLES,
    Column,
    distinct_sources,
    flop_name,
    tensor_paths,
)
from . import provenance

__all__ = [
    "DOCUMENT_VERSION",
    "analysis_document",
    "compare_document",
    "dumps",
    "json_schema",
    "explain_document",
    "file_sha256",
    "gpus_document",
    "schema_text",
    "shipped_schema",
    "roofs",
    "value",
    "column_schema",
    "gate",
    "trace_document",
]

#: Version of the documents' layout (``schema_version`` in each document and its schema). Raised
#: only when a key changes meaning, unit or type, or is removed, with the reason in README.md ("In a
#: loop or an agent"); adding a key (a new declared column) does not raise it. 2 (issue 40): the
#: per-launch table is written as ``launches.csv`` and ``kernels.csv`` holds one row per kernel, so
#: ``outputs.files`` names change meaning; ``products`` lists only the tables it carries.
DOCUMENT_VERSION = 2

_DOTS_KEPT = [c for c in DOTS if c not in ("kernel_key", "kernel_name")]


def value(v: Any) -> Any:
    """One cell as JSON: None for missing, NaN, inf and empty text; numpy scalars as Python ones."""
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        return v or None
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, Mapping):
        return {str(k): value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [value(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: value(getattr(v, f.name)) for f in dataclasses.fields(v)}
    return str(v)


def _cell(name: str, v: Any) -> Any:
    """A table cell by column: flags as ``[{"code", "text"}]``, notes as a list of sentences,
    else :func:`value`."""
    if name in ("flags", "notes"):
        cells = v if isinstance(v, (list, tuple)) else []  # missing: none
        if name == "flags":
            return [{"code": c, "text": t} for c, t in cells]
        return [str(x) for x in cells]
    return value(v)


def _records(df: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of ``df`` as dicts of the ``columns`` it has, cells through :func:`_cell`."""
    cols = [c for c in columns if c in df.columns]
    arrays = [df[c].to_numpy(dtype=object) for c in cols]
    return [{c: _cell(c, a[i]) for c, a in zip(cols, arrays)} for i in range(len(df))]


def file_sha256(path: Path) -> str | None:
    """The SHA-256 of a file's bytes (hex), None for a directory or an unreadable path."""
    if not path.is_file():
        return None
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def _input(path: Path, kernels: pd.DataFrame, alone: bool = True) -> dict[str, Any]:
    """One input: its path, SHA-256 and what its launches say about the GPU, ncu and the reader."""
    src = kernels["source"].astype(str) if "source" in kernels.columns else pd.Series(dtype=str)
    mine = (
        kernels[src.map(lambda s: path_text(path) in s.split(" + "))] if len(kernels) else kernels
    )
    rows = (
        mine if len(mine) or not alone else kernels
    )  # a saved directory's launches name the report it was made of

    def distinct(col: str) -> str | None:
        vals = (
            list(dict.fromkeys(v for v in rows[col].dropna().astype(str) if v))
            if col in rows.columns
            else []
        )
        return ", ".join(vals) or None

    return {
        "path": path_text(path),
        "sha256": file_sha256(path),
        "kind": "directory" if path.is_dir() else "file",
        "launches": int(len(rows)),
        "gpu": distinct("device_name"),
        "cc": distinct("cc"),
        "ncu_version": distinct("ncu_version"),
        "reader": distinct("reader"),
    }


def _median(kernels: pd.DataFrame, col: str) -> float | None:
    if col not in kernels.columns:
        return None
    v = kernels[col].to_numpy(float)
    v = v[np.isfinite(v)]
    return value(float(np.median(v))) if len(v) else None


def _roof_sources(kernels: pd.DataFrame, col: str) -> dict[str, str]:
    """Roof name -> its sources over the launches, '+'-joined (``ceiling_sources`` or
    ``achievable_sources``)."""
    out: dict[str, list[str]] = {}
    if col not in kernels.columns:
        return {}
    for cell in distinct_sources(kernels[col]):
        for name, src in cell.items():
            out.setdefault(name, [])
            if src not in out[name]:
                out[name].append(src)
    return {k: "+".join(v) for k, v in out.items()}


def roofs(kernels: pd.DataFrame) -> dict[str, Any]:
    """The roofs of a launch table: the SM clock ncu measured, each compute and bandwidth roof
    (median over launches, at each launch's clock) with its source, and the
    achievable roofs beside them.
    """
    peak_src, ach_src = (
        _roof_sources(kernels, "ceiling_sources"),
        _roof_sources(kernels, "achievable_sources"),
    )
    precisions = [*PRECISIONS, *(f"tensor:{p}" for p in tensor_paths(kernels.columns, "peak"))]
    compute = []
    for prec in precisions:
        name = flop_name(prec)
        peak = _median(kernels, f"peak_{name}_flop_per_s")
        if peak is None and name not in peak_src:
            continue
        compute.append(
            {
                "precision": prec,
                "peak_flop_per_s": peak,
                "source": peak_src.get(name),
                "achievable_flop_per_s": _median(kernels, f"achievable_{name}_flop_per_s"),
                "achievable_source": ach_src.get(name),
            }
        )
    memory = []
    for lv in LEVELS:
        peak = _median(kernels, f"peak_{lv}_bytes_per_s")
        if peak is None and lv not in peak_src:
            continue
        memory.append(
            {
                "level": lv,
                "peak_bytes_per_s": peak,
                "source": peak_src.get(lv),
                "achievable_bytes_per_s": _median(kernels, f"achievable_{lv}_bytes_per_s"),
                "achievable_source": ach_src.get(lv),
            }
        )
    clk = (
        kernels["sm_clock_hz"].to_numpy(float) if "sm_clock_hz" in kernels.columns else np.array([])
    )
    clk = clk[np.isfinite(clk)]
    datasheet = sorted(
        {str(x) for x in kernels.get("datasheet_gpu", pd.Series(dtype=object)).dropna() if str(x)}
    )
    return {
        "sm_clock_hz": value(float(np.median(clk))) if len(clk) else None,
        "sm_clock_hz_min": value(float(clk.min())) if len(clk) else None,
        "sm_clock_hz_max": value(float(clk.max())) if len(clk) else None,
        "datasheet_gpu": datasheet or None,
        "sources": provenance.roof_sources(kernels) if len(kernels) else None,
        "compute": compute,
        "memory": memory,
    }


def _kernel_records(
    summary: pd.DataFrame, kernels: pd.DataFrame, dots: pd.DataFrame | None
) -> list[dict[str, Any]]:
    """One record per kernel of the summary: its declared columns, its work and
    traffic, its dots."""
    work = kernel_work(kernels) if len(kernels) else pd.DataFrame()
    recs = _records(summary, list(KERNEL_SUMMARY))
    by_dots = (
        {k: _records(g, _DOTS_KEPT) for k, g in dots.groupby("kernel_key", sort=False)}
        if dots is not None and len(dots)
        else {}
    )
    work_cols = [c for c in work.columns if c not in KERNEL_SUMMARY]
    for rec in recs:
        key = rec["kernel_key"]
        row = work.loc[key] if key is not None and key in work.index else None
        for c in work_cols:
            rec[c] = value(row[c]) if row is not None else None
        rec["dots"] = by_dots.get(key, [])
    return recs


def _options(options: Any) -> dict[str, Any]:
    return value(options) if options is not None else {}


def _totals(kernels: pd.DataFrame, summary: pd.DataFrame) -> dict[str, Any]:
    status = kernels["status"].astype(str) if len(kernels) else pd.Series(dtype=str)
    return {
        "launches": int(len(kernels)),
        "kernels": int(len(summary)),
        "time_s": value(summary["time_s"].sum(min_count=1)) if len(summary) else None,
        "time_at_roof_s": (
            value(summary["time_at_roof_s"].sum(min_count=1)) if len(summary) else None
        ),
        "saving_s": value(summary["saving_s"].sum(min_count=1)) if len(summary) else None,
        "status": {s: int(n) for s, n in status.value_counts().items()},
    }


def _notes(analysis: Any) -> list[str]:
    k = analysis.launches
    out = [n for n in (provenance.evidence_note(k), provenance.csv_limits(k, analysis.inputs)) if n]
    if analysis.production is not None:
        out += list(analysis.production.warnings)
    return out


def _columns(table: pd.DataFrame, declared: Mapping[str, Column]) -> list[str]:
    """The declared columns, then the table's others (a phase's ``tensor_<path>_flop``...)."""
    return [*declared, *(c for c in table.columns if c not in declared)]


def analysis_document(
    analysis: Any,
    outdir: Path | None = None,
    files: Sequence[str] = (),
    failures: pd.DataFrame | None = None,
    products: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, Any]:
    """The ``analyze --json`` document of one analysis.

    Parameters
    ----------
    analysis : ncuroof.model.analysis.Analysis
        Its ``inputs``, ``options``, ``kernels`` (launches), ``dots`` and ``summary`` are read.
    outdir : Path, optional
        Where the other outputs were written (None when nothing was).
    files : sequence of str
        The files written there.
    failures : DataFrame, optional
        A fleet's inputs that could not be analyzed (``source``, ``error``).
    products : mapping of str to DataFrame, optional
        Tables of :data:`ncuroof.schema.TABLES` by name (the products :func:`ncuroof.api.analyze`
        built that go in the document, :func:`ncuroof.views.in_document`).

    Returns
    -------
    dict
        ``schema`` (``ncuroof.analyze``), ``schema_version`` (:data:`DOCUMENT_VERSION`),
        ``ncuroof_version``, ``options``, ``inputs`` (path, sha256, gpu, cc, ncu_version,
        reader), ``roofs`` (:func:`roofs`), ``totals``, ``kernels`` (longest first: every
        :data:`~ncuroof.schema.KERNEL_SUMMARY` column, the :data:`~ncuroof.schema.KERNEL_WORK`
        columns and ``dots``, the kernel's :data:`~ncuroof.schema.DOTS` rows), ``notes``,
        ``failures``, ``products`` (name -> one record per row, every column) and
        ``outputs``. JSON-ready: no NaN or inf anywhere (missing is None).
    """
    k, summ = analysis.launches, analysis.summary
    return {
        "schema": "ncuroof.analyze",
        "schema_version": DOCUMENT_VERSION,
        "ncuroof_version": __version__,
        "options": _options(analysis.options),
        "inputs": [_input(Path(p), k, len(analysis.inputs) == 1) for p in analysis.inputs],
        "roofs": roofs(k),
        "totals": _totals(k, summ),
        "kernels": _kernel_records(summ, k, analysis.dots),
        "notes": _notes(analysis),
        "failures": _records(failures, ["source", "error"]) if failures is not None else [],
        "products": {
            n: _records(t, _columns(t, TABLES.get(n, {}))) for n, t in (products or {}).items()
        },
        "outputs": {"outdir": str(outdir) if outdir is not None else None, "files": list(files)},
    }


def explain_document(analysis: Any, kernel: str) -> dict[str, Any]:
    """One kernel's record (:func:`analysis_document`) with its launches' evidence and advice.

    Parameters
    ----------
    analysis : ncuroof.model.analysis.Analysis
        The analysis.
    kernel : str
        A ``kernel_key``, ``kernel_label`` or ``kernel_name`` of the summary (first longest match).

    Returns
    -------
    dict
        ``schema`` (``ncuroof.explain``), ``schema_version``, ``kernel`` (the record) and
        ``launches``: each launch's ``launch_id``, ``time_s``, ``bound``, ``diagnosis``,
        ``evidence``, ``advice``, ``flags``, ``notes``, ``roof_fraction``,
        ``time_at_roof_s``, ``saving_s``.

    Raises
    ------
    KeyError
        No kernel of that name; the message lists the kernels' labels.
    """
    summ = analysis.summary
    hit = summ[
        (summ["kernel_key"] == kernel)
        | (summ["kernel_label"] == kernel)
        | (summ["kernel_name"] == kernel)
    ]
    if not len(hit):
        labels = ", ".join(summ["kernel_label"].astype(str).head(10))
        raise KeyError(
            f"no kernel {kernel!r} in the analysis; its kernels: {labels}"
            + (", ..." if len(summ) > 10 else "")
        )
    key = hit["kernel_key"].iloc[0]
    k = analysis.launches[analysis.launches["kernel_key"] == key]
    record = _kernel_records(hit.head(1), k, analysis.dots)[0]
    launch_cols = [
        "source",
        "launch_id",
        "time_s",
        "bound",
        "diagnosis",
        "evidence",
        "advice",
        "flags",
        "notes",
        "roof_fraction",
        "time_at_roof_s",
        "saving_s",
        "status",
    ]
    return {
        "schema": "ncuroof.explain",
        "schema_version": DOCUMENT_VERSION,
        "ncuroof_version": __version__,
        "kernel": record,
        "launches": _records(k, launch_cols),
    }


def gpus_document(gpus: Any) -> dict[str, Any]:
    """The datasheet GPUs of ``metrics/gpus.toml``
    (:class:`ncuroof.catalog.GpuCatalog`), for ``list_gpus``.

    Returns
    -------
    dict
        ``schema`` (``ncuroof.gpus``), ``schema_version`` and ``gpus``: each GPU's ``id`` (what
        ``--gpu`` and ``--what-if`` take), ``name``, ``cc``, ``sms``, ``boost_hz``, ``flop_per_s``
        (dense peak by precision at the boost clock), ``tensor_flop_per_s`` (by datasheet key),
        ``dram_bytes_per_s``, ``l2_bytes``, ``source``, ``confidence`` and ``measured``
        (published achievable roofs).
    """
    out = [
        {
            "id": g.id,
            "name": g.name,
            "cc": g.cc,
            "sms": g.sms,
            "boost_hz": value(g.boost_hz),
            "flop_per_s": value(g.flop_per_s),
            "tensor_flop_per_s": value(g.tensor),
            "dram_bytes_per_s": value(g.dram_bytes_per_s),
            "l2_bytes": value(g.l2_bytes),
            "source": g.source,
            "confidence": g.confidence,
            "measured": [value(m) for m in g.measured],
        }
        for g in gpus.gpus
    ]
    return {
        "schema": "ncuroof.gpus",
        "schema_version": DOCUMENT_VERSION,
        "ncuroof_version": __version__,
        "gpus": out,
    }


def _compare_declared() -> dict[str, Column] | None:
    """The comparison table's declaration in :mod:`ncuroof.schema`, when it has one."""
    from .. import schema

    for name in ("COMPARE", "COMPARE_KERNELS", "COMPARISON"):
        decl = getattr(schema, name, None)
        if isinstance(decl, dict):
            return decl
    return None


def _side_work(
    table: pd.DataFrame, before: Any, after: Any, pairs: pd.DataFrame | None
) -> dict[str, list[Any]]:
    """Work and traffic before and after per compare row (``<col>_before``/``_after``), for the
    columns the table lacks."""
    if before is None or after is None or pairs is None:
        return {}
    out: dict[str, list[Any]] = {}
    key_after = {(kb if kb else ka): ka for kb, ka in zip(pairs["key_before"], pairs["key_after"])}
    key_before = {(kb if kb else ka): kb for kb, ka in zip(pairs["key_before"], pairs["key_after"])}
    for side, a, keys in (("before", before, key_before), ("after", after, key_after)):
        work = kernel_work(a.launches) if len(a.launches) else pd.DataFrame()
        for c in work.columns:
            name = f"{c}_{side}"
            if name in table.columns:
                continue
            col = work[c]
            out[name] = [
                value(col.get(keys.get(k, ""), np.nan)) if keys.get(k) else None
                for k in table["kernel_key"]
            ]
    return out


def gate(result: Any, pct: float | None) -> dict[str, Any] | None:
    """The CI gate's result (``--fail-if-slower``): None without a threshold; else the threshold,
    ``passed`` and the findings (what :meth:`ncuroof.api.CompareResult.slower` returns: lines, or an
    object whose fields are serialized)."""
    if pct is None:
        return None
    verdict = getattr(result, "gate", None)
    if verdict is not None and dataclasses.is_dataclass(
        verdict
    ):  # the gate's own verdict (ncuroof.runs.compare.Gate)
        body = value(verdict)
        return {
            "fail_if_slower_pct": float(pct),
            **body,
            "passed": body.get("verdict") == "pass",
            "findings": [*body.get("failures", []), *body.get("unknown", [])],
        }
    found = result.slower(pct)
    if isinstance(found, (list, tuple)):
        return {
            "fail_if_slower_pct": float(pct),
            "passed": not found,
            "findings": [str(x) for x in found],
        }
    body = value(found)
    body = body if isinstance(body, dict) else {"findings": body}
    return {
        "fail_if_slower_pct": float(pct),
        **body,
        "passed": bool(body.get("passed", not body.get("findings"))),
    }


def _side_inputs(a: Any, paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The inputs of one side of a comparison (:func:`_input`), from its analysis when given."""
    kernels = a.launches if a is not None else pd.DataFrame(columns=["source"])
    return [_input(Path(p), kernels, len(paths) == 1) for p in paths]


def compare_document(
    result: Any,
    before: Sequence[Path],
    after: Sequence[Path],
    fail_if_slower_pct: float | None = None,
) -> dict[str, Any]:
    """The ``compare --json`` document.

    Parameters
    ----------
    result : ncuroof.api.CompareResult
        Its ``table`` (every column serialized, whatever they are), ``totals``, ``warnings``,
        ``before``/``after`` analyses and ``pairs`` (when present: each side's inputs and
        per-kernel work and traffic), ``outdir`` and ``files``.
    before, after : sequence of Path
        The inputs of each side.
    fail_if_slower_pct : float, optional
        The gate's threshold; the document's ``gate`` is None without one (:func:`gate`).

    Returns
    -------
    dict
        ``schema`` (``ncuroof.compare``), ``schema_version``, ``ncuroof_version``, ``options``,
        ``inputs`` (``before`` and ``after``: lists as in :func:`analysis_document`), ``totals``,
        ``warnings``, ``kernels`` (one record per row of the comparison table, plus
        ``<work>_before``/``_after`` for the :data:`~ncuroof.schema.KERNEL_WORK` columns the table
        lacks), ``gate`` and ``outputs``.
    """
    ab, aa = getattr(result, "before", None), getattr(result, "after", None)
    table = result.table
    declared = _compare_declared()
    cols = list(declared) if declared is not None else list(table.columns)
    cols += [c for c in table.columns if c not in cols]
    recs = _records(table, cols)
    for name, vals in _side_work(table, ab, aa, getattr(result, "pairs", None)).items():
        for rec, v in zip(recs, vals):
            rec[name] = v
    return {
        "schema": "ncuroof.compare",
        "schema_version": DOCUMENT_VERSION,
        "ncuroof_version": __version__,
        "options": _options(getattr(ab, "options", None)),
        "inputs": {
            "before": _side_inputs(ab, before),
            "after": _side_inputs(aa, after),
        },
        "totals": {k: value(v) for k, v in result.totals.items()},
        "warnings": [str(w) for w in result.warnings],
        "kernels": recs,
        "gate": gate(result, fail_if_slower_pct),
        "outputs": {
            "outdir": str(result.outdir) if result.outdir is not None else None,
            "files": list(result.files),
        },
    }


#: Characters JSON may carry raw that a terminal would act on (DEL, C1 controls such as CSI, line
#: and paragraph separators, bidirectional overrides): written as ``\\uXXXX`` escapes (C0 controls
#: json escapes itself).
_TERMINAL_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def dumps(doc: dict[str, Any]) -> str:
    """The document as JSON text: UTF-8, indented, NaN refused (:func:`value` leaves none), and no
    character from an input that a terminal would act on (escaped as ``\\uXXXX``, which JSON
    readers decode back).
    """
    text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False)
    return _TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


# --- the JSON Schemas of the documents, from the same declarations --------------------------------

_NULL_NUMBER = {"type": ["number", "null"]}
_NULL_STRING = {"type": ["string", "null"]}
_SCALAR = {"type": ["number", "string", "boolean", "null"]}
_FLAGS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["code", "text"],
        "additionalProperties": False,
        "properties": {"code": {"type": "string"}, "text": _NULL_STRING},
    },
}


def column_schema(name: str, col: Column) -> dict[str, Any]:
    """The JSON Schema of one declared column's values (:func:`value`: missing is null)."""
    if name == "flags":
        out = dict(_FLAGS)
    elif name == "notes":
        out = {"type": "array", "items": {"type": "string"}}
    elif col.dtype == "float64":
        out = dict(_NULL_NUMBER)
    elif col.dtype in ("int64", "Int64"):
        out = {"type": ["integer", "null"]} if col.dtype == "Int64" else {"type": "integer"}
    elif col.dtype == "bool":
        out = {"type": ["boolean", "null"]}
    else:
        out = dict(_NULL_STRING)
    unit = f" [{col.unit}]" if col.unit else ""
    return {**out, "description": col.description + unit}


def _object(
    props: dict[str, Any],
    required: Sequence[str] | None = None,
    extra: Any = False,
    patterns: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else list(required),
        "additionalProperties": extra,
    }
    if patterns:
        out["patternProperties"] = patterns
    return out


def _declared(columns: Mapping[str, Column]) -> dict[str, Any]:
    return {name: column_schema(name, col) for name, col in columns.items()}


#: Tensor datapath columns (``tensor_<path>_flop``, ``..._flop_per_s``, with
#: ``_before``/``_after`` in compare).
_TENSOR_PATTERN = {r"^tensor_.+_flop(_per_s)?(_before|_after)?$": _NULL_NUMBER}


def _input_schema() -> dict[str, Any]:
    return _object(
        {
            "path": {"type": "string"},
            "sha256": {"type": ["string", "null"], "pattern": "^[0-9a-f]{64}$"},
            "kind": {"enum": ["file", "directory"]},
            "launches": {"type": "integer", "minimum": 0},
            "gpu": _NULL_STRING,
            "cc": _NULL_STRING,
            "ncu_version": _NULL_STRING,
            "reader": _NULL_STRING,
        }
    )


def _roofs_schema() -> dict[str, Any]:
    roof = {"source": _NULL_STRING, "achievable_source": _NULL_STRING}
    compute = _object(
        {
            "precision": {"type": "string"},
            "peak_flop_per_s": _NULL_NUMBER,
            "achievable_flop_per_s": _NULL_NUMBER,
            **roof,
        }
    )
    memory = _object(
        {
            "level": {"enum": list(LEVELS)},
            "peak_bytes_per_s": _NULL_NUMBER,
            "achievable_bytes_per_s": _NULL_NUMBER,
            **roof,
        }
    )
    return _object(
        {
            "sm_clock_hz": _NULL_NUMBER,
            "sm_clock_hz_min": _NULL_NUMBER,
            "sm_clock_hz_max": _NULL_NUMBER,
            "datasheet_gpu": {"type": ["array", "null"], "items": {"type": "string"}},
            "sources": _NULL_STRING,
            "compute": {"type": "array", "items": compute},
            "memory": {"type": "array", "items": memory},
        }
    )


def _kernel_schema() -> dict[str, Any]:
    props = {
        **_declared(KERNEL_SUMMARY),
        **{k: v for k, v in _declared(KERNEL_WORK).items() if k not in KERNEL_SUMMARY},
    }
    dot = _object(_declared({c: DOTS[c] for c in _DOTS_KEPT}))
    return _object({**props, "dots": {"type": "array", "items": dot}}, patterns=_TENSOR_PATTERN)


def _head(kind: str) -> dict[str, Any]:
    return {
        "schema": {"const": f"ncuroof.{kind}"},
        "schema_version": {"const": DOCUMENT_VERSION},
        "ncuroof_version": {"type": "string"},
        "options": {"type": "object"},
    }


def _outputs_schema() -> dict[str, Any]:
    return _object(
        {"outdir": _NULL_STRING, "files": {"type": "array", "items": {"type": "string"}}}
    )


def _products_schema(products: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each table that may be a product of the document: an array of its rows."""
    return _object(
        {
            name: {"type": "array", "items": _object(_declared(cols), patterns=_TENSOR_PATTERN)}
            for name, cols in products.items()
        },
        required=[],
    )


def _analyze_schema(products: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    totals = _object(
        {
            "launches": {"type": "integer"},
            "kernels": {"type": "integer"},
            "time_s": _NULL_NUMBER,
            "time_at_roof_s": _NULL_NUMBER,
            "saving_s": _NULL_NUMBER,
            "status": {"type": "object", "additionalProperties": {"type": "integer"}},
        }
    )
    failure = _object({"source": _NULL_STRING, "error": _NULL_STRING})
    return _object(
        {
            **_head("analyze"),
            "inputs": {"type": "array", "items": _input_schema()},
            "roofs": _roofs_schema(),
            "totals": totals,
            "kernels": {"type": "array", "items": _kernel_schema()},
            "notes": {"type": "array", "items": {"type": "string"}},
            "failures": {"type": "array", "items": failure},
            "products": _products_schema(products),
            "outputs": _outputs_schema(),
        }
    )


def _compare_schema() -> dict[str, Any]:
    declared = _compare_declared()
    side = {
        f"{name}_{s}": {
            **column_schema(name, col),
            "description": f"{col.description} [{col.unit}], {s}",
        }
        for name, col in KERNEL_WORK.items()
        for s in ("before", "after")
    }
    props = {
        **(_declared(declared) if declared else {}),
        **side,
        "kernel_key": {
            "type": "string",
            "description": "kernel identity (--match), before's when matched",
        },
        "status": {"type": "string", "description": "matched, only_before or only_after"},
    }
    row = _object(
        props,
        required=list(dict.fromkeys(["kernel_key", "status", *(declared or {})])),
        extra=_SCALAR,
        patterns=_TENSOR_PATTERN,
    )
    gate_schema = {
        "type": ["object", "null"],
        "required": ["fail_if_slower_pct", "passed"],
        "properties": {
            "fail_if_slower_pct": {"type": "number"},
            "passed": {"type": "boolean"},
            "findings": {"type": "array"},
        },
    }
    return _object(
        {
            **_head("compare"),
            "inputs": _object(
                {s: {"type": "array", "items": _input_schema()} for s in ("before", "after")}
            ),
            "totals": {"type": "object", "additionalProperties": _NULL_NUMBER},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "kernels": {"type": "array", "items": row},
            "gate": gate_schema,
            "outputs": _outputs_schema(),
        }
    )


def json_schema(
    kind: str, products: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the ``analyze`` or ``compare`` document, from
    :mod:`ncuroof.schema`.

    Parameters
    ----------
    kind : {'analyze', 'compare'}
        Which document.
    products : mapping, optional
        The tables ``analyze``'s ``products`` may hold, name -> declared columns
        (:func:`ncuroof.views.document_tables`, the one list of them); needed for ``analyze``.

    Returns
    -------
    dict
        What ``ncuroof/schemas/<kind>.schema.json`` holds (``scripts/make_schemas.py`` writes it).

    Raises
    ------
    ValueError
        For another ``kind``, or ``analyze`` without ``products``.
    """
    if kind not in ("analyze", "compare"):
        raise ValueError(f"kind must be analyze or compare, not {kind!r}")
    if kind == "analyze" and products is None:
        raise ValueError("the analyze schema needs its products (ncuroof.views.document_tables)")
    body = (lambda: _analyze_schema(products)) if kind == "analyze" else _compare_schema
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"ncuroof {kind} --json document",
        "description": (
            f"What `ncuroof {kind} --json` prints (schema_version {DOCUMENT_VERSION}); units in the"
            " key names, missing values null."
        ),
        **body(),
    }


def schema_text(kind: str, products: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """:func:`json_schema` as the text of its shipped file
    (``ncuroof/schemas/<kind>.schema.json``)."""
    return json.dumps(json_schema(kind, products), indent=1, ensure_ascii=False) + "\n"


def shipped_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema shipped in the package (``ncuroof/schemas/<kind>.schema.json``), for
    validating documents."""
    from importlib import resources

    return json.loads(
        resources.files("ncuroof")
        .joinpath("schemas", f"{kind}.schema.json")
        .read_text(encoding="utf-8")
    )


def _datasheet_roofs(t: pd.DataFrame, gpu: Any) -> dict[str, Any]:
    """The ``roofs`` of a trace's document: the datasheet's compute roofs its operators use and
    its DRAM bandwidth, at the boost clock."""
    used = t.loc[t["roof_flop_per_s"] > 0, ["roof", "roof_flop_per_s"]].drop_duplicates("roof")
    roof = {"source": "datasheet", "achievable_source": None}
    compute = [
        {"precision": r, "peak_flop_per_s": value(v), "achievable_flop_per_s": None, **roof}
        for r, v in zip(used["roof"], used["roof_flop_per_s"])
    ]
    dram = {"level": "dram", "peak_bytes_per_s": value(gpu.dram_bytes_per_s)}
    return {
        "sm_clock_hz": value(gpu.boost_hz),
        "sm_clock_hz_min": None,
        "sm_clock_hz_max": None,
        "datasheet_gpu": [gpu.name],
        "sources": gpu.source,
        "compute": compute,
        "memory": [{**dram, "achievable_bytes_per_s": None, **roof}],
    }


def trace_document(result: Any) -> dict[str, Any]:
    """The ``analyze --json`` document of a PyTorch trace analyzed alone (issue 41): the analyze
    schema with no kernels (nothing from ncu), the device's datasheet roofs and the operator table
    as the product ``operators`` (:data:`ncuroof.schema.ANALYTIC_OPS`, work_source ``analytic
    (from shapes)``).

    Parameters
    ----------
    result : ncuroof.api.TraceResult
        Its ``operators``, ``gpu``, ``trace``, ``attrs``, ``fp32_matmul``, ``outdir``, ``files``.

    Returns
    -------
    dict
        JSON-ready (no NaN or inf).
    """
    t, gpu = result.operators, result.gpu
    total = float(t["time_s"].sum())
    return {
        "schema": "ncuroof.analyze",
        "schema_version": DOCUMENT_VERSION,
        "ncuroof_version": __version__,
        "options": {
            "work_source": ANALYTIC_SOURCE,
            "fp32_matmul": result.fp32_matmul,
            "device": value(result.attrs.get("device")),
        },
        "inputs": [_trace_input(result)],
        "roofs": _datasheet_roofs(t, gpu),
        "totals": {
            "launches": int(t["launches"].sum()),
            "kernels": 0,
            "time_s": value(total),
            "time_at_roof_s": value(float(t["time_at_roof_s"].sum(skipna=True))),
            "saving_s": value(float(t["saving_s"].sum(skipna=True))),
            "status": {},
        },
        "kernels": [],
        "notes": [
            f"work {ANALYTIC_SOURCE}: FLOPs and compulsory bytes from each operator's Input Dims"
            " (metrics/operators.toml), no ncu counters; roofs from the datasheet at the boost"
            " clock"
        ],
        "failures": [],
        "products": {"operators": _records(t, _columns(t, TABLES["operators"]))},
        "outputs": {
            "outdir": str(result.outdir) if result.outdir is not None else None,
            "files": list(result.files),
        },
    }


def _trace_input(result: Any) -> dict[str, Any]:
    """The one ``inputs`` entry of :func:`trace_document`: the trace file, its launches and GPU."""
    return {
        "path": str(result.trace),
        "sha256": file_sha256(result.trace),
        "kind": "file",
        "launches": int(result.operators["launches"].sum()),
        "gpu": result.attrs.get("gpu_name") or None,
        "cc": result.gpu.cc,
        "ncu_version": None,
        "reader": "kineto (analytic from shapes)",
    }
