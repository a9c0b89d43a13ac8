"""Inside the kernel over time: the PM sampling series of a report as a tidy table, and each
launch's ramp, plateau and tail (issue 51).

ncu's ``PmSampling`` sections store counters sampled every 1.5-512 us across each launch
(:mod:`ncuroof.parser.ncu_rep.sampling` reads them). :func:`sample_table` turns them into
:data:`ncuroof.schema.SAMPLES`: one row per sample inside the launch's active span, per counter
family a value in SI units, the family's ncu metric chosen per version and chip from
``metrics/sampling.toml``. ncu samples its pass groups in separate replays, each on its own time
base: the table's grid is the launch's DRAM series (or its first family sampled), and a family of
another group is averaged (or, for counts, summed) over each of its samples by time since its own
workload start. :func:`phase_table` cuts each launch into ramp, plateau and tail
(:data:`ncuroof.schema.SAMPLE_PHASES`) and gives each phase its share of the launch's DRAM bytes and
FLOPs, a dot on the roofline per phase.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..catalog import Catalog
from ..errors import NcuroofError
from ..schema import SAMPLE_PHASES, SAMPLES
from .distinct import text_array
from .expect import counted_flop

_log = logging.getLogger(__name__)

__all__ = ["read_samples", "sample_table", "phase_table", "tail_share", "with_tail_evidence"]

_START, _END = "profiler__timestamp_workload_start_", "profiler__timestamp_workload_end_"


@dataclass
class _Series:
    """One sampled series: sample start keys (ns), spacing to the next (ns), values."""

    keys: np.ndarray
    dt: np.ndarray
    values: np.ndarray


@dataclass
class _Grid:
    """The samples of one pass group: keys, spacing (ns), and its workload span (ns) if stored."""

    keys: np.ndarray
    dt: np.ndarray
    span: tuple[int, int] | None


@cache
def _strip(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _spacing(keys: np.ndarray) -> np.ndarray:
    """Each sample's spacing to the next; the last one the median spacing."""
    if len(keys) < 2:
        return np.ones(len(keys))
    d = np.diff(keys).astype(float)
    return np.append(d, np.median(d))


def _launch_series(rows: pd.DataFrame, strip: str) -> tuple[dict[str, _Series], dict[int, tuple]]:
    """One launch's series by ncu metric name (its sampling prefix stripped; the first of a
    name kept) and the pass groups' workload spans by group index."""
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    series: dict[str, _Series] = {}
    pat = _strip(strip)
    for name, g in rows.groupby("metric", sort=False):
        name = str(name)
        keys = g["key"].to_numpy(np.int64)
        group = name.rsplit("_", 1)[-1]
        if name.startswith((_START, _END)) and not group.isdigit():
            continue  # a workload span of no pass group this reader knows
        if name.startswith(_START) and len(keys):
            starts[int(group)] = int(keys[0])
        elif name.startswith(_END) and len(keys):
            ends[int(group)] = int(keys[0])
        elif not name.startswith("profiler__") and len(keys):
            order = np.argsort(keys, kind="stable")
            base = pat.sub("", name)
            if base not in series:
                k = keys[order]
                series[base] = _Series(k, _spacing(k), g["value"].to_numpy(float)[order])
    spans = {g: (starts[g], ends[g]) for g in starts if g in ends and ends[g] > starts[g]}
    return series, spans


def _grid_of(s: _Series, spans: dict[int, tuple]) -> _Grid:
    """The grid of ``s`` with the workload span that starts inside its sampled range."""
    lo, hi = int(s.keys[0]), int(s.keys[-1] + s.dt[-1])
    span = next((sp for sp in spans.values() if lo <= sp[0] <= hi), None)
    return _Grid(s.keys, s.dt, span)


def _term(term: str) -> tuple[float, str]:
    weight, _, metric = term.rpartition("*")
    return (float(weight) if weight else 1.0), metric


def _family(
    series: dict[str, _Series], family: dict[str, Any], row: Any
) -> tuple[_Series, str] | None:
    """The first alternative of ``family`` whose terms are all sampled on one grid, as a series in
    the column's unit, and its kind; None when none is."""
    for alt in family["alternatives"]:
        terms = [_term(t) for t in alt["terms"]]
        if not all(m in series for _, m in terms):
            continue
        first = series[terms[0][1]]
        if any(not np.array_equal(series[m].keys, first.keys) for _, m in terms):
            continue
        total = sum(w * np.nan_to_num(series[m].values) for w, m in terms)
        return _Series(first.keys, first.dt, _converted(total, first.dt, alt, row)), alt["kind"]
    return None


def _converted(total: np.ndarray, dt_ns: np.ndarray, alt: dict[str, Any], row: Any) -> np.ndarray:
    """Sampled values in the column's unit (``kind`` of ``metrics/sampling.toml``)."""
    kind, dt = alt["kind"], dt_ns * 1e-9
    clock = float(getattr(row, "sm_clock_hz", np.nan))
    if kind == "rate" or kind == "count":
        return total
    if kind == "pct":
        return total / 100.0
    if kind == "pct_of_peak":
        return total / 100.0 * float(getattr(row, alt["peak"], np.nan))
    if kind == "count_rate":
        return total / dt
    if kind == "cycles":
        return np.clip(total / (dt * clock), 0.0, 1.0)
    if kind == "per_cycle":
        return total * dt * clock
    raise ValueError(f"metrics/sampling.toml: unknown kind {kind!r}")


def _on(
    s: _Series, origin: int, grid_rel: np.ndarray, grid_dt: np.ndarray, count: bool
) -> np.ndarray:
    """``s`` (a piecewise-constant function of time since ``origin``) averaged over each interval
    [grid_rel, grid_rel + grid_dt) of another grid, or summed there for a count; NaN outside."""
    rel = (s.keys - origin).astype(float)  # in int64 first: a Unix time in ns has 19 digits
    edges = np.append(rel, rel[-1] + s.dt[-1])
    weight = s.values if count else s.values * s.dt
    cum = np.concatenate([[0.0], np.cumsum(np.nan_to_num(weight))])
    lo, hi = grid_rel, grid_rel + grid_dt
    inside = (hi > edges[0]) & (lo < edges[-1])
    total = np.interp(hi, edges, cum) - np.interp(lo, edges, cum)
    out = total if count else total / grid_dt
    return np.where(inside, out, np.nan)


def _active(
    grid: _Grid, signal: np.ndarray, time_ns: float, idle: float
) -> tuple[np.ndarray, np.ndarray]:
    """Which samples of ``grid`` lie in the launch (mask) and the time each covers there (ns).

    Cut at the workload span where ncu stored it (2024.3+). Without it, the samples from the first
    to the last whose ``signal`` exceeds ``idle`` x its maximum, at most the launch's duration
    ``time_ns`` plus one sample (the run of that many with the most signal), the edge samples'
    cover shortened so the covers add up to the duration.
    """
    k, dt = (grid.keys - grid.keys[0]).astype(float), grid.dt  # ns since the first sample
    if grid.span is not None:
        start, end = (float(t - grid.keys[0]) for t in grid.span)
        cover = np.minimum(k + dt, end) - np.maximum(k, start)
        return cover > 0, np.clip(cover, 0.0, None)
    mask = np.zeros(len(k), bool)
    sig = np.nan_to_num(signal)
    if sig.max(initial=0.0) <= 0:
        return mask, np.zeros(len(k))
    busy = np.flatnonzero(sig > idle * sig.max())
    lo, hi = int(busy[0]), int(busy[-1]) + 1
    if np.isfinite(time_ns) and time_ns > 0:
        m = min(hi - lo, int(np.ceil(time_ns / float(np.median(dt)))) + 1)
        sums = np.convolve(sig[lo:hi], np.ones(m), "valid")
        lo += int(np.argmax(sums))
        hi = lo + m
    mask[lo:hi] = True
    cover = np.where(mask, dt, 0.0)
    excess = cover.sum() - time_ns if np.isfinite(time_ns) else 0.0
    if excess > 0:  # cut from the edge samples, half each
        edges = sorted({lo, hi - 1})
        for i in edges:
            cover[i] -= min(cover[i], excess / len(edges))
    return mask, cover


def _origin(grid: _Grid, mask: np.ndarray) -> int:
    """Time zero of a grid (ns): its workload start, else its first active sample."""
    if grid.span is not None:
        return int(grid.span[0])
    return int(grid.keys[np.argmax(mask)]) if mask.any() else int(grid.keys[0])


def _warp_states(at: Any, states: dict[str, _Series]) -> tuple[list[Any], np.ndarray]:
    """The most sampled warp state of each active sample (its series name) and its share of the
    sample's warp samples (None / NaN where no warp state was sampled)."""
    n = int(at.mask.sum())
    if not states:
        return [None] * n, np.full(n, np.nan)
    names = list(states)
    counts = np.nan_to_num(np.vstack([at.on_grid(s, True) for s in states.values()]))
    total = counts.sum(axis=0)
    top = counts.argmax(axis=0)
    share = np.where(total > 0, counts.max(axis=0) / np.where(total > 0, total, 1.0), np.nan)
    return [names[t] if total[i] > 0 else None for i, t in enumerate(top)], share


@dataclass
class _Launch:
    """One launch's series, pass-group spans, and the grid the samples table is on."""

    series: dict[str, _Series]
    spans: dict[int, tuple]
    grid: _Grid
    mask: np.ndarray
    cover: np.ndarray
    origin: int
    time_ns: float
    idle: float

    def origin_of(self, s: _Series) -> int:
        """Time zero of the pass group ``s`` was sampled in."""
        if np.array_equal(s.keys, self.grid.keys):
            return self.origin
        g = _grid_of(s, self.spans)
        return _origin(g, _active(g, s.values, self.time_ns, self.idle)[0])

    def on_grid(self, s: _Series, count: bool) -> np.ndarray:
        """``s`` on the active samples of the grid (as sampled, or mapped from its own group)."""
        if np.array_equal(s.keys, self.grid.keys):
            return s.values[self.mask]
        rel = (self.grid.keys[self.mask] - self.origin).astype(float)
        return _on(s, self.origin_of(s), rel, self.grid.dt[self.mask], count)


def _located(rows: pd.DataFrame, row: Any, cfg: dict[str, Any]) -> tuple[_Launch, dict] | None:
    """One launch's series located in time (``rows``: its part of :func:`read_series`' table)
    and its families (column -> (series in the column's unit, kind)); None without any."""
    series, spans = _launch_series(rows, cfg["strip"])
    got = {f["column"]: v for f in cfg["family"] if (v := _family(series, f, row)) is not None}
    if not got:
        return None
    first = next(iter(got.values()))[0]
    grid, phases = _grid_of(first, spans), cfg["phases"]
    signal = next(
        (
            got[c][0].values
            for c in phases["signal"]
            if c in got and np.array_equal(got[c][0].keys, first.keys)  # on the same grid
        ),
        first.values,
    )
    time_ns = float(row.time_s) * 1e9
    mask, cover = _active(grid, signal, time_ns, float(phases["idle"]))
    if not mask.any():
        return None
    at = _Launch(series, spans, grid, mask, cover, _origin(grid, mask), time_ns, phases["idle"])
    return at, got


def _dram_scale(dram: np.ndarray, cover_s: np.ndarray, kind: str, row: Any, tol: float) -> float:
    """The factor that makes a percent-of-peak DRAM series integrate to the launch's dram_bytes
    where the report's peak misses by more than ``tol``; 1 otherwise."""
    integral = float(np.nansum(dram * cover_s))
    total = float(row.dram_bytes)
    if kind != "pct_of_peak" or not (integral > 0 and total > 0):
        return 1.0
    ratio = total / integral
    return ratio if abs(ratio - 1.0) > tol else 1.0


def _launch_table(rows: pd.DataFrame, row: Any, cfg: dict[str, Any]) -> pd.DataFrame | None:
    """The samples of one launch (``row``: its launch-table row) as :data:`SAMPLES` rows, or None
    without series."""
    found = _located(rows, row, cfg)
    if found is None:
        return None
    at, got = found
    out = {c: at.on_grid(s, kind == "count") for c, (s, kind) in got.items()}
    cover_s = at.cover[at.mask] * 1e-9
    scale = 1.0
    if "dram_bytes_per_s" in out:
        kind = got["dram_bytes_per_s"][1]
        scale = _dram_scale(out["dram_bytes_per_s"], cover_s, kind, row, cfg["dram"]["tolerance"])
        out["dram_bytes_per_s"] = out["dram_bytes_per_s"] * scale
    prefix = cfg["warp_states"]["prefix"]
    top, share = _warp_states(at, {m: s for m, s in at.series.items() if m.startswith(prefix)})
    keys = at.grid.keys[at.mask]
    fams = {f["column"] for f in cfg["family"]}
    return pd.DataFrame(
        {
            "source": row.source,
            "launch_id": int(row.launch_id),
            "kernel_name": row.kernel_name,
            "sample": np.arange(len(keys), dtype=np.int64),
            "time_s": (keys - keys[0]).astype(float) * 1e-9,
            "interval_s": cover_s,
            **{c: out.get(c, np.nan) for c in SAMPLES if c in fams},
            "dram_scale": scale,
            "top_warp_state": [None if t is None else t[len(prefix) :] for t in top],
            "top_warp_state_share": share,
        }
    )


def read_samples(launches: pd.DataFrame, cat: Catalog) -> pd.DataFrame:
    """The samples table of the launches ncu sampled, read from their reports.

    Parameters
    ----------
    launches : DataFrame
        :data:`ncuroof.schema.LAUNCHES`; the launches with a finite ``pm_sample_interval_s`` are
        read (their ``source`` reports again, series only, :func:`read_series`).
    cat : Catalog
        ``cat.sampling`` (``metrics/sampling.toml``).

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.SAMPLES`, launches in table order; empty when none was sampled.

    Raises
    ------
    NcuroofError
        A damaged report (one line naming the file).
    """
    from ..parser.ncu_rep.sampling import holds_series, read_series  # for sampled reports only

    sampled = launches[np.isfinite(launches["pm_sample_interval_s"].to_numpy(float))]
    frames: list[pd.DataFrame] = []
    if len(sampled) and cat.sampling:
        for source, group in sampled.groupby("source", sort=False, observed=True):
            if not holds_series(Path(str(source))):
                continue  # a CSV export: the interval, no series
            try:
                series = read_series(Path(str(source)))
            except NcuroofError as exc:  # the samples are extra: the analysis goes on without
                _log.warning("%s: no PM samples: %s", source, exc)
                continue
            by_launch = dict(iter(series.groupby("launch_id", sort=False)))
            for row in group.itertuples(index=False):
                rows = by_launch.get(int(row.launch_id))
                try:
                    t = None if rows is None else _launch_table(rows, row, cat.sampling)
                except (ValueError, IndexError, KeyError, OverflowError) as exc:
                    _log.warning(
                        "%s launch %s: PM samples left out: %s", source, row.launch_id, exc
                    )
                    continue
                if t is not None:
                    frames.append(t)
    return sample_table(frames)


def sample_table(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """``frames`` (launches' samples) joined and cast to :data:`ncuroof.schema.SAMPLES`."""
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=col.dtype) for c, col in SAMPLES.items()})
    t = pd.concat(frames, ignore_index=True)
    return t[list(SAMPLES)].astype({c: col.dtype for c, col in SAMPLES.items()})


def _signal(t: pd.DataFrame, columns: Sequence[str]) -> np.ndarray | None:
    """The first of ``columns`` with activity in ``t`` (a launch's samples), NaN as 0; None if
    none has."""
    for c in columns:
        v = np.nan_to_num(t[c].to_numpy(float))
        if (v > 0).any():
            return v
    return None


def _edges(t: pd.DataFrame, row: Any, phases: dict[str, Any]) -> tuple[int, int]:
    """(end of the ramp, start of the tail) as sample indices of one launch's samples ``t``: the
    ramp the leading samples whose signal is under ``edge`` x its level, the tail the trailing ones
    after the last CTA launch (only for grids of more than one wave)."""
    n = len(t)
    sig = _signal(t, phases["signal"])
    if sig is None or n < 3:
        return 0, n
    level = float(np.quantile(sig, float(phases["level_quantile"])))
    low = sig < float(phases["edge"]) * level
    if level <= 0 or low.all():
        return 0, n
    ramp = int(np.argmin(low))  # the first sample at the level
    waves = float(getattr(row, "waves_per_sm", np.nan))
    launched = np.flatnonzero(np.nan_to_num(t["ctas_launched"].to_numpy(float)) > 0)
    if not (waves > 1 if np.isfinite(waves) else len(launched) > 1):
        return ramp, n  # one wave or less: no last partial wave
    tail = n - int(np.argmin(low[::-1]))  # the trailing samples under the edge
    if len(launched):
        tail = max(tail, int(launched[-1]) + 1)  # after the last CTA launch
    return ramp, max(tail, ramp)


def _phase_rows(t: pd.DataFrame, row: Any, phases: dict[str, Any]) -> list[dict[str, Any]]:
    """One launch's ramp, plateau and tail (those with samples) as :data:`SAMPLE_PHASES` rows."""
    ramp, tail = _edges(t, row, phases)
    cover = t["interval_s"].to_numpy(float)
    total = float(cover.sum())
    dram = np.nan_to_num(t["dram_bytes_per_s"].to_numpy(float)) * cover
    work_sig = _signal(t, phases["work_signal"])
    work = work_sig * cover if work_sig is not None else None
    sm = t["sm_active_frac"].to_numpy(float)
    flop = float(counted_flop(pd.DataFrame([row._asdict()]))[0])
    out = []
    # the sampled pass and the pass that timed the launch differ by a few us: a phase's duration
    # is its share of the sampled time, of the launch's time_s
    launch_s = float(row.time_s) if np.isfinite(float(row.time_s)) else total
    for name, lo, hi in (("ramp", 0, ramp), ("plateau", ramp, tail), ("tail", tail, len(t))):
        if hi <= lo:
            continue
        d = float(cover[lo:hi].sum()) / total * launch_s if total > 0 else np.nan
        b = _share(dram, lo, hi) * float(row.dram_bytes)
        f = _share(work, lo, hi) * flop if work is not None else np.nan
        out.append(
            {
                "source": row.source,
                "launch_id": int(row.launch_id),
                "kernel_name": row.kernel_name,
                "phase": name,
                "start_s": float(t["time_s"].iloc[lo]),
                "duration_s": d,
                "time_share": float(cover[lo:hi].sum()) / total if total > 0 else np.nan,
                "samples": hi - lo,
                "dram_bytes": b,
                "flop": f,
                "dram_ai_flop_per_byte": f / b if b > 0 else np.nan,
                "flop_per_s": f / d if d > 0 else np.nan,
                "dram_bytes_per_s": b / d if d > 0 else np.nan,
                "sm_active_frac": _mean(sm[lo:hi], cover[lo:hi]),
            }
        )
    return out


def _share(weights: np.ndarray | None, lo: int, hi: int) -> float:
    """The part of ``weights``' sum in [lo, hi) (NaN when they sum to nothing)."""
    if weights is None:
        return np.nan
    total = float(weights.sum())
    return float(weights[lo:hi].sum()) / total if total > 0 else np.nan


def _mean(values: np.ndarray, weights: np.ndarray) -> float:
    ok = np.isfinite(values) & (weights > 0)
    return float(np.average(values[ok], weights=weights[ok])) if ok.any() else np.nan


def phase_table(samples: pd.DataFrame, launches: pd.DataFrame, cat: Catalog) -> pd.DataFrame:
    """Ramp, plateau and tail of every sampled launch.

    Parameters
    ----------
    samples : DataFrame
        :data:`ncuroof.schema.SAMPLES` (:func:`read_samples`).
    launches : DataFrame
        :data:`ncuroof.schema.LAUNCHES` (``dram_bytes``, the FLOP columns, ``waves_per_sm``).
    cat : Catalog
        ``cat.sampling["phases"]``: the signal, level quantile, edge (``metrics/sampling.toml``).

    Returns
    -------
    DataFrame
        :data:`ncuroof.schema.SAMPLE_PHASES`, phases in time order per launch. A phase's DRAM bytes
        and FLOPs are the launch's counted totals in proportion to its share of the sampled DRAM
        rate and issue (or tensor) activity integrated over time; its dot is
        (flop / dram_bytes, flop / duration_s) on the DRAM roofline.
    """
    rows: list[dict[str, Any]] = []
    if len(samples) and cat.sampling:
        by = launches.set_index(["source", "launch_id"], drop=False)
        for (source, lid), t in samples.groupby(["source", "launch_id"], sort=False, observed=True):
            if (source, lid) in by.index:
                row = next(by.loc[[(source, lid)]].itertuples(index=False))
                rows += _phase_rows(t.reset_index(drop=True), row, cat.sampling["phases"])
    frame = pd.DataFrame(rows, columns=list(SAMPLE_PHASES))
    return frame.astype({c: col.dtype for c, col in SAMPLE_PHASES.items()})


def tail_share(phases: pd.DataFrame) -> pd.Series:
    """Each sampled launch's tail share of its time (0 without a tail), indexed by
    (source, launch_id)."""
    if not len(phases):
        return pd.Series(dtype=float)
    share = phases["time_share"].where(phases["phase"] == "tail", 0.0)
    return share.groupby([phases["source"], phases["launch_id"]], observed=True).sum()


def with_tail_evidence(
    launches: pd.DataFrame, phases: pd.DataFrame | None, cat: Catalog
) -> pd.DataFrame:
    """``launches`` with the tail share appended to the ``evidence`` of each sampled launch whose
    tail takes at least ``[phases] tail_evidence_share`` of its time ("28 % of the time in the
    last partial wave (PM sampling)"); the others as they were."""
    if phases is None or not len(phases) or not cat.sampling:
        return launches
    share = tail_share(phases)
    least = float(cat.sampling["phases"].get("tail_evidence_share", 1.0))
    keys = pd.MultiIndex.from_frame(launches[["source", "launch_id"]].astype(object))
    s = share.reindex(keys).to_numpy(float)
    hit = np.nan_to_num(s) >= least
    if not hit.any():
        return launches
    ev = launches["evidence"].astype(object).to_numpy(copy=True)
    for i in np.flatnonzero(hit):
        words = f"{s[i] * 100:.0f} % of the time in the last partial wave (PM sampling)"
        ev[i] = f"{ev[i]}; {words}" if ev[i] else words
    out = launches.copy(deep=False)
    out["evidence"] = text_array(pd.Categorical(ev))
    return out
