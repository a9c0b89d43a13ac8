"""Where the numbers come from, in words: inputs, how ncu collected them, clocks, roof sources
and what a CSV export could not carry. Used by the page header, the CLI and ``compare``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import fmt
from ..catalog import load_gpus
from ..collector import ncu as collector
from ..schema import distinct_sources

__all__ = [
    "collection_text",
    "collection_warnings",
    "clock_text",
    "roof_sources",
    "readers",
    "csv_limits",
    "page_meta",
    "evidence_note",
]

PathLike = str | Path


def _distinct(col: pd.Series) -> pd.Series:
    """The distinct non-missing values of ``col`` as text, in order of appearance: one pass over
    the column, the rest over its few distinct values (a launch table has 100,000s of rows)."""
    return pd.Series(col.unique()).dropna().astype(str)


def collection_text(inputs: Sequence[PathLike]) -> str:
    """How ``ncuroof profile`` collected the inputs (from each report's sidecar record), or ''."""
    parts = []
    for p in inputs:
        rec = collector.read_sidecar(Path(p))
        if rec is None:
            continue
        passes = sorted(set(rec.get("passes", {}).values()))
        parts.append(
            f"{Path(p).name}: ncu {rec.get('ncu_version', '?')}, clock control"
            f" {rec.get('clock_control', '?')}, cache control {rec.get('cache_control', '?')},"
            f" replay {rec.get('replay_mode', '?')}"
            + (f", {'/'.join(map(str, passes))} passes" if passes else "")
            + f" ({' '.join(rec.get('ncu_command', []))})"
        )
    return "; ".join(parts)


def collection_warnings(before: Sequence[PathLike], after: Sequence[PathLike]) -> list[str]:
    """Differences in how ``ncuroof profile`` collected the two sides (clock control, pipeline boost
    state where both ncu versions have it, cache control, replay mode, metric list), read from the
    reports' ``.ncuroof.json`` records; empty when either side has none. Each side is its input
    files (:func:`ncuroof.api.as_paths` of a path or paths)."""

    def record(side: Sequence[PathLike]) -> dict[str, Any] | None:
        recs = [collector.read_sidecar(Path(p)) for p in side]
        return recs[0] if len(recs) == 1 else None

    rb, ra = record(before), record(after)
    if rb is None or ra is None:
        return []
    out = []
    for key, what in (
        ("clock_control", "clock control"),
        ("pipeline_boost_state", "pipeline boost state"),
        ("cache_control", "cache control"),
        ("replay_mode", "replay mode"),
        ("metrics", "collected metrics"),
    ):
        if key in rb and key in ra and rb.get(key) != ra.get(key):
            b, a = (
                x if isinstance(x, str) else f"{len(x)} explicit metrics"
                for x in (rb.get(key), ra.get(key))
            )
            out.append(f"collected differently: {what} {b} before, {a} after")
    return out


def clock_text(kernels: pd.DataFrame) -> str:
    """The SM clock ncu measured, for headers: median, and the range when launches differ
    by more than 1 %."""
    clk = kernels["sm_clock_hz"].to_numpy(float)
    clk = clk[np.isfinite(clk)]
    if not len(clk):
        return ""
    med, lo, hi = float(np.median(clk)), float(clk.min()), float(clk.max())
    text = f"SM {med / 1e9:.3g} GHz (median over launches"
    text += f", {lo / 1e9:.3g}-{hi / 1e9:.3g} GHz)" if hi > lo * 1.01 else ")"
    return text + "; roofs from the report are at this clock"


def roof_sources(kernels: pd.DataFrame) -> str:
    """One line saying where the roofs of a launch table come from, for headers and summaries.

    Parameters
    ----------
    kernels : DataFrame
        A launch table (``peak_source``, ``datasheet_gpu``, ``achievable_sources``).

    Returns
    -------
    str
        The peak roofs' sources (report: ``peak_sustained`` × the measured clock; datasheet: boost
        clock, ``metrics/gpus.toml``; user), then the achievable roofs beside them with theirs.
    """
    parts = []
    used = set("+".join(_distinct(kernels["peak_source"])).split("+")) - {""}
    if "report" in used:
        parts.append("report: ncu peak_sustained × the clock ncu measured for each launch")
    if "datasheet" in used:
        gpus = pd.Series(kernels["datasheet_gpu"].unique())
        names = sorted(gpus[gpus != ""].astype(str).unique())
        parts.append(f"datasheet ({', '.join(names)}): boost clock, metrics/gpus.toml")
    if "user" in used:
        parts.append("user: --peak-flops/--peak-bandwidth")
    text = (
        "; ".join(parts)
        or "none: the input has no peak_sustained metrics and no datasheet entry matched (use --gpu)"  # noqa: E501
    )
    achievable = _achievable_text(kernels)
    return f"{text}; {achievable}" if achievable else text


def _achievable_text(kernels: pd.DataFrame) -> str:
    """``achievable beside them: dram (published measurement, cited in notes), fp32
    (--achievable-*)``, or ''."""
    if "achievable_sources" not in kernels.columns:
        return ""
    by_source: dict[str, set[str]] = {}
    for cell in distinct_sources(kernels["achievable_sources"]):
        for name, source in cell.items():
            by_source.setdefault(source, set()).add(name)
    what = {
        "measured": "published measurement, metrics/gpus.toml, cited in notes",
        "user": "--achievable-flops/--achievable-bandwidth",
    }
    parts = [
        f"{', '.join(sorted(names))} ({what.get(src, src)})"
        for src, names in sorted(by_source.items())
    ]
    return "achievable roofs beside them: " + "; ".join(parts) if parts else ""


def evidence_note(kernels: pd.DataFrame, instruction_chart: bool = False) -> str | None:
    """What the verdicts rest on when no launch has roofline metrics, in the report's own terms.

    Parameters
    ----------
    kernels : DataFrame
        The classified launch table (``status``, ``sm_throughput_frac``,
        ``memory_throughput_frac``).
    instruction_chart : bool, default False
        Whether the page or output has an instruction roofline (warp-instruction counters).

    Returns
    -------
    str or None
        None when some launch has roofline metrics (FLOP counters and memory traffic). Otherwise
        one sentence: the verdicts come from ncu's SpeedOfLight throughputs (with how many
        launches have them) or, when no launch has them, no kernel can be classified; plus where
        the instruction roofline stands in, and how to collect the missing metrics.
    """
    if not len(kernels) or not (kernels["status"] == "no_roofline_metrics").all():
        return None
    if (
        "bound" in kernels.columns
    ):  # classified from SpeedOfLight: the only verdict a launch without roofline metrics gets
        sol = (kernels["bound"].astype(str).isin(["memory", "compute", "latency"])).to_numpy()
    else:
        sol = np.ones(len(kernels), dtype=bool)
        for col in ("sm_throughput_frac", "memory_throughput_frac"):
            sol &= np.isfinite(kernels[col].to_numpy(float)) if col in kernels.columns else False
    n = int(sol.sum())
    head = "No launch has both FLOP counters and memory traffic (the roofline metrics)"
    if n == len(kernels):
        text = f"{head}: the verdicts come from ncu's SpeedOfLight throughputs alone."
    elif n:
        text = (
            f"{head}: the verdicts of the {fmt.count(n, 'launch')} with ncu's SpeedOfLight"
            f" throughputs come from them alone; the other {fmt.count(len(kernels) - n, 'launch')}"
            " cannot be classified."
        )
    else:
        text = (
            f"{head} and none has both of ncu's SpeedOfLight throughputs: no kernel can be"
            " classified, only timed."
        )
    if instruction_chart:
        text += (
            " The instruction roofline (warp instructions per transaction) places every launch with"
            " instruction counters."
        )
    return text + " Collect the metrics with ncuroof profile -- ./app (ncu --set roofline)."


def readers(kernels: pd.DataFrame) -> str:
    """One line saying what read the values and whether they were verified.

    Parameters
    ----------
    kernels : DataFrame
        A launch table; its ``reader`` column (:data:`ncuroof.schema.LAUNCHES`): ncuroof's decoder
        checked against ``ncu_report`` on a sample, ``ncu_report`` and why, or the CSV reader.

    Returns
    -------
    str
        The distinct readers, ``'; '``-joined in order of appearance; a note for a table saved
        before the column existed.
    """
    col = kernels["reader"] if "reader" in kernels.columns else pd.Series(dtype=object)
    return (
        "; ".join(dict.fromkeys(_distinct(col)))
        or "not recorded (a table saved before ncuroof named its reader)"
    )


def csv_limits(kernels: pd.DataFrame, inputs: Sequence[PathLike]) -> str | None:
    """What the CSV inputs could not carry, in one line, or None when no input is a CSV."""
    if not any(Path(p).suffix.lower() in (".csv", ".txt", ".log") for p in inputs):
        return None
    missing = ["NVTX ranges", "per-opcode SASS instance values (tensor estimate)"]
    if not _distinct(kernels["peak_source"]).str.contains("report").any():
        missing.append("peak_sustained roofs")
    if kernels["device_name"].isna().any():
        missing.append("the device name")
    if kernels["ncu_version"].isna().any():
        missing.append("the ncu version (pass the session-page export too)")
    if kernels["cc"].isna().any():
        missing.append("compute capability and launch geometry (ncu 2020 layout)")
    return "the CSV export does not carry " + ", ".join(missing)


def device_text(kernels: pd.DataFrame) -> str:
    """``NVIDIA A100 80GB PCIe (CC 8.0)`` per distinct device; an input that names none says so
    (never ``nan``), with the ``--gpu`` datasheet its roofs came from when one was given.

    Parameters
    ----------
    kernels : DataFrame
        ``device_name``, ``cc`` and, where present, ``datasheet_gpu`` (the entry the roofs used).

    Returns
    -------
    str
    """
    out = []
    for d, c in (
        kernels.reindex(columns=["device_name", "cc"]).drop_duplicates().itertuples(index=False)
    ):
        cc = f" (CC {c})" if isinstance(c, str) and c else ""
        out.append(f"{d}{cc}" if isinstance(d, str) and d else f"not named in the input{cc}")
    if any(x.startswith("not named") for x in out) and "datasheet_gpu" in kernels.columns:
        gpus = load_gpus()
        sheets = {
            spec.name
            for gpu in kernels["datasheet_gpu"].dropna().unique()
            if gpu and (spec := gpus.by_name(str(gpu))) is not None
        }
        if sheets:
            out.append("roofs from the " + ", ".join(sorted(sheets)) + " datasheet (--gpu)")
    return ", ".join(dict.fromkeys(out))


def page_meta(kernels: pd.DataFrame, inputs: Sequence[Path]) -> dict[str, str]:
    """The page header: inputs, GPU, ncu version, launch counts, clocks,
    collection and roof sources.

    Parameters
    ----------
    kernels : DataFrame
        The launch table of the analysis.
    inputs : sequence of Path
        The files analyzed.

    Returns
    -------
    dict of str to str
        Label to text, in display order; the CSV limits only for CSV input.
    """
    devices = device_text(kernels)
    status = kernels["status"]
    meta = {
        "inputs": ", ".join(fmt.path_text(p) for p in inputs),
        "GPU": devices,
        "ncu version": ", ".join(sorted(_distinct(kernels["ncu_version"]).unique())),
        "launches": (
            f"{len(kernels)} ({int((status == 'ok').sum())} with roofline metrics, "
            f"{fmt.count(int((status == 'failed_measurement').sum()), 'failed measurement')}"
            + (
                f", {fmt.count(int(damaged), 'damaged record')} in the file"
                if (damaged := (status == "corrupt_record").sum())
                else ""
            )
            + ")"
        ),
        "clocks": clock_text(kernels),
        "clock control": (
            ", ".join(sorted(_distinct(kernels["clock_control"]).unique()))
            if "clock_control" in kernels
            else ""
        ),
        "collected with": collection_text(inputs),
        "roofs": roof_sources(kernels),
        "read by": readers(kernels),
    }
    limits = csv_limits(kernels, inputs)
    return meta | ({"CSV input": limits} if limits else {})
