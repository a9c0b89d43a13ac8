"""Before/after of two PyTorch traces without counters (issue 52): operators matched by name and
shapes, their GPU time and analytic work side by side, and the CI gate of
:func:`ncuroof.runs.compare.gate` on the matched operators (the idle row is in the table, not in
the gate: a host that waits longer is no slower GPU work)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import IDLE_SOURCE, TRACE_COMPARE
from . import compare as _compare

__all__ = ["join_operators", "totals", "gate"]

#: Columns of an operator table (:data:`ncuroof.schema.ANALYTIC_OPS`) carried before and after.
_SIDES = ("calls", "launches", "time_s", "flop", "compulsory_bytes", "roof_fraction", "bound")


def _keyed(t: pd.DataFrame) -> pd.DataFrame:
    """An operator table indexed by its operators' identity (name and shapes)."""
    key = (
        t["op"].astype(str)
        + " "
        + t["input_dims"].astype(str)
        + " "
        + t["input_types"].astype(str)
        + " "
        + t["concrete_inputs"].astype(str)
    ).str.strip()
    return t.assign(kernel_key=key.to_numpy()).drop_duplicates("kernel_key").set_index("kernel_key")


def join_operators(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The operators of two traces side by side.

    Parameters
    ----------
    before, after : DataFrame
        :func:`ncuroof.model.analytic.operator_table` of each trace.

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.TRACE_COMPARE`, the operators of most time (either side) first:
        ``matched`` where both traces have the operator with these shapes, else ``only_before``
        or ``only_after``; ``speedup`` time before over after.
    """
    b, a = _keyed(before), _keyed(after)
    keys = list(dict.fromkeys([*b.index, *a.index]))
    out = pd.DataFrame(index=pd.Index(keys, name="kernel_key"))
    first = b.reindex(keys).combine_first(a.reindex(keys))
    out["kernel_name"] = first["op"].astype(str)
    out["input_dims"] = first["input_dims"].fillna("").astype(str)
    out["kernel_label"] = (out["kernel_name"] + " " + out["input_dims"]).str.strip()
    out["work_source"] = first["work_source"].astype(str)
    inb, ina = out.index.isin(b.index), out.index.isin(a.index)
    out["status"] = np.select([inb & ina, inb], ["matched", "only_before"], "only_after")
    out["partner"] = ""
    for col in _SIDES:
        for side, t in (("before", b), ("after", a)):
            v = t[col].reindex(keys)
            out[f"{col}_{side}"] = (
                v.fillna(0).astype(np.int64).to_numpy() if col in ("calls", "launches") else v
            )
    tb, ta = out["time_s_before"].to_numpy(float), out["time_s_after"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["speedup"] = np.where((tb > 0) & (ta > 0), tb / ta, np.nan)
    out["time_delta_s"] = ta - tb
    most = np.fmax(np.nan_to_num(tb), np.nan_to_num(ta))
    out = out.iloc[np.argsort(-most, kind="stable")].reset_index()
    for c, col in TRACE_COMPARE.items():
        if col.dtype == "string":
            out[c] = out[c].fillna("")
    return out[list(TRACE_COMPARE)].astype({c: col.dtype for c, col in TRACE_COMPARE.items()})


def _work(table: pd.DataFrame) -> pd.DataFrame:
    """The rows the gate judges: every operator, copy and memset, not the idle row."""
    return table[table["work_source"] != IDLE_SOURCE]


def totals(table: pd.DataFrame) -> dict[str, float]:
    """The headline of :func:`ncuroof.runs.compare.headline` over the operators (idle left out):
    each trace's GPU time and operators, the matched operators' time and speedup."""
    t = _work(table)
    out: dict[str, float] = {}
    for side in ("before", "after"):
        v = t[f"time_s_{side}"].to_numpy(float)
        out[f"time_s_{side}"] = float(np.nansum(v)) if np.isfinite(v).any() else float("nan")
        out[f"unknown_launches_{side}"] = 0
        out[f"kernels_{side}"] = int((t[f"launches_{side}"] > 0).sum())
    m = t[t["status"] == "matched"]
    tb, ta = m["time_s_before"].to_numpy(float), m["time_s_after"].to_numpy(float)
    known = np.isfinite(tb) & np.isfinite(ta) & (tb > 0) & (ta > 0)
    mb = float(tb[known].sum()) if known.any() else float("nan")
    ma = float(ta[known].sum()) if known.any() else float("nan")
    out.update(
        matched_kernels=len(m),
        matched_known=int(known.sum()),
        matched_time_s_before=mb,
        matched_time_s_after=ma,
        speedup=mb / ma if ma > 0 else float("nan"),
    )
    return out


def gate(table: pd.DataFrame, pct: float, **options: bool) -> _compare.Gate:
    """The CI gate (:func:`ncuroof.runs.compare.gate`: ``fail_on_new``, ``fail_on_gone``) on the
    operators, copies and memsets of two traces (:func:`join_operators`)."""
    return _compare.gate(_work(table), totals(table), pct, **options)
