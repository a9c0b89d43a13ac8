"""Where each roof came from, as data: the roof sources of every launch and the long roof table.

A launch's roof sources (``ceiling_sources``, ``achievable_sources`` of the kernels table,
:data:`ncuroof.schema.SOURCE_COLUMNS`) are, in memory, a tuple of ``(roof, source)`` pairs in the
order the roofs were set: the calculator sets the report's roofs, :mod:`ncuroof.model.ceilings`
adds datasheet, user and measured ones. Launches share a handful of these tuples (roof sets), so
every function here works once per distinct set and maps the result back by factorizing the column
(linear in launches, no text). Text is written only at the edge (:func:`ncuroof.schema.to_text`).
:func:`roof_table` lays the roofs out as the declared long table :data:`ncuroof.schema.ROOFS`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..catalog import GpuCatalog
from ..schema import LEVELS, PRECISIONS, ROOF_SOURCES, ROOFS
from .distinct import factorize_objects, first_rows

__all__ = [
    "RoofSet",
    "objects",
    "report_sets",
    "set_source",
    "sources_of",
    "Factorized",
    "source_kinds",
    "has_any",
    "roof_table",
]

#: One launch's roof sources: ``(roof, source)`` pairs, in the order the roofs were set.
RoofSet = tuple[tuple[str, str], ...]


def objects(items: Iterable[object], n: int | None = None) -> np.ndarray:
    """A 1-d object array of ``items`` (a tuple stays one cell; numpy would unpack it)."""
    items = list(items)
    if n is None or n == len(items):  # each item one cell, without a Python step each
        return np.fromiter(items, dtype=object, count=len(items))
    out = np.empty(len(items) if n is None else n, dtype=object)
    for i, x in enumerate(items):
        out[i] = x
    return out


def _as_set(cell: object) -> RoofSet:
    """A cell as a roof set: a tuple of pairs, or () for a missing or empty cell."""
    return cell if isinstance(cell, tuple) else ()


def _per_set(cells: np.ndarray, change: Callable[[RoofSet], object]) -> np.ndarray:
    """``change`` of each cell's roof set, computed once per distinct set."""
    codes, uniques = factorize_objects(cells)
    done = objects(change(_as_set(u)) for u in uniques)
    return done[codes] if len(done) else objects([], len(cells))


def report_sets(names: list[str], have: np.ndarray) -> np.ndarray:
    """The roof sets of the roofs a report carries: ``have[i, j]`` (bool, launches x ``names``)
    says launch ``i`` has roof ``names[j]`` from ncu's ``peak_sustained``; one cell per launch."""
    bits = np.asarray(have, dtype=bool).reshape(len(have), len(names))
    if len(names) <= 62:  # each row's roofs as the bits of one integer
        key = bits.astype(np.int64) @ (np.int64(1) << np.arange(len(names), dtype=np.int64))
    else:
        key = np.unique(bits, axis=0, return_inverse=True)[1].reshape(-1)
    which, rows = pd.factorize(key)
    first = first_rows(which, len(rows))
    sets = objects(tuple((nm, "report") for nm, h in zip(names, have[i]) if h) for i in first)
    return sets[which] if len(sets) else objects([], len(have))


def set_source(cells: np.ndarray, idx: np.ndarray, name: str, source: str) -> np.ndarray:
    """``cells`` with roof ``name``'s source set to ``source`` for the launches ``idx`` (a roof
    already set keeps its place, a new one goes last)."""

    def change(roofs: RoofSet) -> RoofSet:
        if any(r == name for r, _ in roofs):
            return tuple((r, source if r == name else s) for r, s in roofs)
        return (*roofs, (name, source))

    out = cells.copy()
    if len(idx):
        out[idx] = _per_set(cells[idx], change)
    return out


@dataclass
class Factorized:
    """A roof-sources column factorized once: each launch's code into its distinct roof sets."""

    codes: np.ndarray
    sets: list[RoofSet]

    @classmethod
    def of(cls, cells: np.ndarray) -> Factorized:
        """The distinct roof sets of ``cells`` (a missing cell is the empty set)."""
        codes, uniques = factorize_objects(cells)
        return cls(codes, [_as_set(u) for u in uniques])

    def source(self, name: str) -> np.ndarray:
        """The source of roof ``name`` of every launch ('' without one), an object array."""
        per = objects(dict(s).get(name, "") for s in self.sets)
        return per[self.codes] if len(per) else objects([], len(self.codes))


def sources_of(cells: np.ndarray, name: str) -> np.ndarray:
    """The source of roof ``name`` of every launch ('' without one), an object array (to ask for
    several roofs, factorize once: :class:`Factorized`)."""
    return Factorized.of(cells).source(name)


def source_kinds(cells: np.ndarray) -> np.ndarray:
    """Each launch's ``peak_source``: the sources its roofs use, in
    :data:`ncuroof.schema.ROOF_SOURCES` order, ``+``-joined (``report+datasheet``)."""
    return _per_set(
        cells, lambda roofs: "+".join(x for x in ROOF_SOURCES if x in dict(roofs).values())
    )


def has_any(cells: np.ndarray) -> np.ndarray:
    """Whether each launch has a roof of any source."""
    return _per_set(cells, bool).astype(bool)


def _roof_rows(kernels: pd.DataFrame, kind: str, column: str) -> list[pd.DataFrame]:
    """One frame per roof name of the ``kind`` roofs (peak or achievable) with a
    value or a source."""
    cells = (
        Factorized.of(kernels[column].to_numpy(dtype=object)) if column in kernels.columns else None
    )
    names = [*PRECISIONS, *LEVELS] + [
        c[len("peak_") : -len("_flop_per_s")]
        for c in kernels.columns
        if c.startswith("peak_tensor_") and c.endswith("_flop_per_s")
    ]
    frames = []
    for name in names:
        unit = "bytes" if name in LEVELS else "flop"
        values = kernels.get(f"{kind}_{name}_{unit}_per_s")
        values = values.to_numpy(float) if values is not None else np.full(len(kernels), np.nan)
        src = cells.source(name) if cells is not None else np.full(len(kernels), "", object)
        keep = np.isfinite(values) | (src != "")
        if keep.any():
            frames.append(
                pd.DataFrame(
                    {
                        "row": np.flatnonzero(keep),
                        "kind": kind,
                        "roof": name,
                        "flop_per_s": values[keep] if unit == "flop" else np.nan,
                        "bytes_per_s": values[keep] if unit == "bytes" else np.nan,
                        "roof_source": src[keep],
                    }
                )
            )
    return frames


def _confidence(long: pd.DataFrame, gpus: GpuCatalog | None) -> np.ndarray:
    """Each roof's confidence in ``metrics/gpus.toml``: its datasheet entry's, or its measurement's
    (the entry of the launch's datasheet, else of its device); '' for report and user roofs."""
    out = np.full(len(long), "", dtype=object)
    if gpus is None:
        return out
    keyed = long.groupby(["datasheet_gpu", "device_name"], sort=False, dropna=False).indices
    src, roof = (long[c].to_numpy(dtype=object) for c in ("roof_source", "roof"))
    for (gpu, device), at in keyed.items():
        spec = gpus.by_name(gpu) if gpu else gpus.by_device(device) if device else None
        if spec is None:
            continue
        out[at[src[at] == "datasheet"]] = spec.confidence
        for quantity, m in spec.achievable().items():
            out[at[(src[at] == "measured") & (roof[at] == quantity)]] = m.confidence
    return out


def roof_table(kernels: pd.DataFrame, gpus: GpuCatalog | None = None) -> pd.DataFrame:
    """The roofs of every launch as a long table (:data:`ncuroof.schema.ROOFS`).

    Parameters
    ----------
    kernels : DataFrame
        The kernels table after :func:`ncuroof.model.ceilings.fill_ceilings`: ``peak_*`` and
        ``achievable_*`` roofs [FLOP/s, B/s], ``ceiling_sources``, ``achievable_sources``,
        ``sm_clock_hz``, ``datasheet_gpu``, ``device_name``.
    gpus : GpuCatalog, optional
        For the confidence of datasheet roofs and measurements (empty without).

    Returns
    -------
    DataFrame
        One row per (launch, kind, roof) with a value or a source, launches in table order, then
        peak before achievable, then precisions, levels and tensor datapaths in column order.
        ``clock_hz`` is the SM clock the roof is at: the launch's measured clock for the compute
        roofs of the report and of a datasheet scaled to it; NaN for bandwidth roofs and for user
        roofs and measurements (taken as given). Categorical ``kind``, ``roof``, ``roof_source``.
    """
    frames = _roof_rows(kernels, "peak", "ceiling_sources")
    frames += _roof_rows(kernels, "achievable", "achievable_sources")
    if not frames:
        return pd.DataFrame({n: pd.Series(dtype=c.dtype) for n, c in ROOFS.items()})
    long = pd.concat(frames, ignore_index=True).sort_values("row", kind="stable")
    rows = long.pop("row").to_numpy()
    for col in ("source", "launch_id", "device_name"):
        long[col] = kernels[col].astype(object).where(kernels[col].notna(), "").to_numpy()[rows]
    sheet = kernels.get("datasheet_gpu", pd.Series("", index=kernels.index))
    long["datasheet_gpu"] = sheet.astype(object).where(sheet.notna(), "").to_numpy()[rows]
    clocked = long["roof_source"].isin(["report", "datasheet"]) & long["bytes_per_s"].isna()
    clock = kernels["sm_clock_hz"].to_numpy(float)[rows]
    long["clock_hz"] = np.where(
        clocked.to_numpy() & (long["kind"] == "peak").to_numpy(), clock, np.nan
    )
    long = long.reset_index(drop=True)
    long["confidence"] = _confidence(long, gpus)
    long.loc[long["roof_source"] != "datasheet", "datasheet_gpu"] = ""
    return long[list(ROOFS)].astype({n: c.dtype for n, c in ROOFS.items()})
