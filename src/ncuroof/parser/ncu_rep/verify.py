"""Check the built-in decoder against NVIDIA's ``ncu_report`` on a sample of launches, and check a
decoded table against itself where no second reader exists.

:func:`against_ncu_report` is what ``--reader auto`` runs after :func:`.decode.read_nvr`
wherever ``ncu_report`` is installed: the first launch of every metric layout the decoder learned
(see :data:`.decode.LEARNED`) and :data:`SAMPLE_EXTRA` more picked with a fixed seed are
cut out of the report into a small report of their own (file header, every block without results,
the result blocks of the sampled launches, and the string tables of the others), which
``ncu_report`` reads in its contained worker (:mod:`.reference`); every value ncuroof reads must be
equal bit for bit. The check costs one worker start and a few launches, whatever
the size of the report.

:func:`check_rates` needs no second reader: ncu stores a count and its rate (``X.sum`` and
``X.sum.per_second``) computed from one duration, so ``X.sum / X.sum.per_second`` equals
``gpu__time_duration.sum`` (to about 1e-16 on every shared report read by ``ncu_report``; 0.9 to
1.7 % off on the GH200 reports the decoder once misread). A launch where they differ by more than
``[input].rate_consistency`` (``metrics/thresholds.toml``) is noted
:data:`ncuroof.schema.INCONSISTENT` and flagged, never silently kept.
"""

from __future__ import annotations

import math
import struct
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...catalog import Catalog
from ...schema import INCONSISTENT, RAW_META
from ..validate import add_note, limits
from .decode import Block
from .framing import first_block, walk
from .protobuf import classes as _classes
from .reference import _spec, read_launches
from .source import open_report

__all__ = [
    "against_ncu_report",
    "cut_report",
    "sample_launches",
    "check_rates",
    "Verdict",
    "EarlySample",
    "SAMPLE_EXTRA",
    "SEED",
]

#: Launches checked beyond the first of every learned layout.
SAMPLE_EXTRA = 8
#: Seed of the extra sample: the same report is always checked on the same launches.
SEED = 20
#: Columns of the raw table that ``ncu_report``'s worker gives under the same name.
_NAMES = ("kernel_name", "kernel_demangled", "nvtx_range")


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`against_ncu_report`: the launches compared and the first
    difference ('' if none)."""

    launches: int
    difference: str = ""


def sample_launches(
    learned: list[int], total: int, extra: int = SAMPLE_EXTRA, seed: int = SEED
) -> list[int]:
    """The launches to check: launch 0, each of ``learned`` and ``extra`` more drawn with ``seed``.

    Parameters
    ----------
    learned : list of int
        Launch indices (0-based, report order) where the decoder learned a metric layout.
    total : int
        Launches in the report.

    Returns
    -------
    list of int
        Sorted, distinct, all below ``total``.
    """
    rng = np.random.default_rng(seed)
    drawn = rng.choice(total, size=min(extra, total), replace=False) if total else []
    return sorted({0, *learned, *(int(i) for i in drawn)} & set(range(total)))


def cut_report(
    path: Path, launches: list[int], dst: Path, blocks: list[Block] | None = None
) -> list[int]:
    """Write a report holding only the result blocks of ``launches`` (and
    everything else but results).

    A dropped result block leaves its string table behind in a block of its own (as ncu writes
    header-only blocks), so every later string keeps its index.

    Parameters
    ----------
    path : Path
        A framing-checked report (a ``.ncu-repz`` read forward, :func:`~.source.open_report`).
    launches : list of int
        Launch indices to keep (0-based, report order).
    dst : Path
        Where to write the cut report.
    blocks : list of Block, optional
        The report's blocks as :func:`.decode.read_nvr` recorded them;
        default: walk them here.

    Returns
    -------
    list of int
        The launch indices the cut report holds, in its order (whole blocks are kept, so a block
        of several results brings all of them).
    """
    wanted, kept, parts, launch = set(launches), [], [], 0
    header_cls = _classes()["BlockHeader"]
    with open_report(path) as (mm, _):
        parts.append(mm[: first_block(mm, path)[0]])
        for pos, end, n, sources, strings in blocks if blocks is not None else _walked(mm, path):
            if (
                not n
                or sources
                or (launch in wanted if n == 1 else wanted & set(range(launch, launch + n)))
            ):
                parts.append(mm[pos:end])
                kept.extend(range(launch, launch + n))
            elif strings is not None:
                raw = header_cls(payload_size=0, strings=strings).SerializeToString()
                parts.append(struct.pack("<I", len(raw)) + raw)
            launch += n
    dst.write_bytes(b"".join(parts))
    return kept


def _walked(mm: Any, path: Path) -> Iterator[Block]:
    """The report's blocks as :data:`.decode.Block`, from a walk over them."""
    for _, pos, header, start in walk(mm, path):
        strings = (
            header.strings
            if header.num_results and header.HasField("strings") and header.strings.strings
            else None
        )
        yield pos, start + header.payload_size, header.num_results, header.num_sources, strings


def _same(a: Any, b: Any) -> bool:
    """Equal as the raw table holds them: numbers bit for bit after float conversion, NaN as NaN."""
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return (None if a is None or a is pd.NA else a) == (None if b is None or b is pd.NA else b)
    x, y = float(a), float(b)
    return (math.isnan(x) and math.isnan(y)) or struct.pack("<d", x) == struct.pack("<d", y)


def _show(value: Any) -> str:
    """A value of a difference, as read: text quoted, numbers in full precision, None as missing."""
    if value is None:
        return "missing"
    return repr(value) if isinstance(value, str) else f"{float(value):.17g}"


def _difference(ours: pd.DataFrame, rows: list[dict[str, Any]], kept: list[int]) -> str:
    """The first value where the decoder's table and ``ncu_report``'s launch dicts
    differ ('' if none)."""
    if len(rows) != len(kept):
        return f"ncu_report reads {len(rows)} launches in the sample, the decoder {len(kept)}"
    metrics = [c for c in ours.columns if c not in RAW_META]
    for launch, row in zip(kept, rows):
        mine = ours.iloc[launch]
        for name in (
            *_NAMES,
            *metrics,
            *(k for k in row if k not in ours.columns and not k.startswith("_")),
        ):
            theirs = row.get(name, math.nan if name not in _NAMES else None)
            if name == "device__attribute_display_name":
                continue  # moved to device_name by launch_row in both readers
            value = mine.get(name, math.nan)
            value = None if value is pd.NA else value
            if not _same(value, theirs):
                return (
                    f"launch {launch}: {name} is {_show(value)} decoded, {_show(theirs)} in"
                    " ncu_report"
                )
    return ""


def against_ncu_report(
    path: Path,
    ours: pd.DataFrame,
    catalog: Catalog,
    learned: list[int],
    blocks: list[Block] | None = None,
    early: EarlySample | None = None,
) -> Verdict:
    """Compare the decoder's raw table with ``ncu_report`` on a sample of launches.

    Parameters
    ----------
    path : Path
        The report the decoder read.
    ours : DataFrame
        The decoder's raw table of it (:func:`.decode.read_nvr`), one row per launch
        in report order.
    catalog : Catalog
        Which metrics were read.
    learned : list of int
        The launches where the decoder learned a layout.
    blocks : list of Block, optional
        The report's blocks as the decoder recorded them (:func:`cut_report`).
    early : EarlySample, optional
        The part of the sample already being read (started while the report was decoded).

    Returns
    -------
    Verdict
        The number of launches compared and the first difference ('' when all agree).

    Raises
    ------
    ReportFormatError
        If ``ncu_report`` cannot read the cut report.
    MissingModuleError
        If ``ncu_report`` is not installed.
    """
    sample = sample_launches(learned, len(ours))
    first = early.result() if early is not None else None
    if first is not None and early is not None and set(early.launches) <= set(sample):
        done = set(first[0])
        rest = _read_sample(path, catalog, [i for i in sample if i not in done], blocks)
        if rest is not None and len(rest[1]) == len(rest[0]):
            pairs = sorted([*zip(*first), *zip(*rest)], key=lambda pair: pair[0])
            kept, rows = [k for k, _ in pairs], [r for _, r in pairs]
            return Verdict(len(kept), _difference(ours, rows, kept))
    kept, rows = _read_sample(path, catalog, sample, blocks)
    return Verdict(len(kept), _difference(ours, rows, kept))


def _read_sample(
    path: Path, catalog: Catalog, launches: list[int], blocks: list[Block] | None
) -> tuple[list[int], list[dict[str, Any]]]:
    """(the launches kept, ``ncu_report``'s rows of them) of a report cut to ``launches``
    (:func:`cut_report`; none: nothing read)."""
    if not launches:
        return [], []
    with tempfile.TemporaryDirectory(prefix="ncuroof-verify-") as tmp:
        cut = Path(tmp) / "sample.ncu-rep"
        kept = cut_report(path, launches, cut, blocks)
        return kept, read_launches(cut, _spec(catalog))


class EarlySample:
    """The part of :func:`against_ncu_report`'s sample known before a report is decoded (launch 0,
    the :data:`SAMPLE_EXTRA` drawn ones and the first launch of each slice of the decoder, where a
    layout is always learned), read by ``ncu_report`` in a thread while the decoder works: its
    worker's start and read no longer wait for the decoder. :func:`against_ncu_report` then reads
    only the learned launches not in it, and compares all of them as one sample. A read that fails
    or gives another number of launches is dropped (``result`` None), as is one of launches that
    are not all in the sample: the whole sample is then read again, as without it, so the outcome
    never depends on it.

    Parameters
    ----------
    path : Path
        The report.
    catalog : Catalog
        Which metrics are read.
    blocks : list of Block
        The report's blocks (complete: the walk over them is done).
    total : int
        Launches in the report.
    firsts : list of int
        The first launch of each slice the decoder reads.
    """

    def __init__(
        self, path: Path, catalog: Catalog, blocks: list[Block], total: int, firsts: list[int]
    ) -> None:
        self.launches = sample_launches(firsts, total)
        self.out: tuple[list[int], list[dict[str, Any]]] | None = None
        self.thread = threading.Thread(target=self._read, args=(path, catalog, blocks), daemon=True)
        self.thread.start()

    def _read(self, path: Path, catalog: Catalog, blocks: list[Block]) -> None:
        try:
            kept, rows = _read_sample(path, catalog, self.launches, blocks)
        except Exception:  # noqa: BLE001 - any failure is met again by the whole sample's read
            return
        if len(rows) == len(kept):
            self.out = (kept, rows)

    def result(self) -> tuple[list[int], list[dict[str, Any]]] | None:
        """(launches kept, ``ncu_report``'s rows of them) once read, or None if that failed."""
        self.thread.join()
        return self.out


def check_rates(raw: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Note the launches whose counts and rates do not share ncu's duration.

    Parameters
    ----------
    raw : DataFrame
        A decoded raw table (metric columns in ncu base units: ns, counts, count/s).
    catalog : Catalog
        ``[input].rate_consistency`` (relative tolerance) and ``durations_ns`` in
        ``metrics/thresholds.toml``.

    Returns
    -------
    DataFrame
        ``raw`` with ``input_notes`` starting with :data:`ncuroof.schema.INCONSISTENT` on each
        launch where ``X.sum / X.sum.per_second × 1e9`` differs from ``gpu__time_duration.sum``
        (ns) by more than the tolerance, naming the worst pair.
    """
    lim = limits(catalog)
    duration = lim["durations_ns"][0]
    pairs = [c for c in raw.columns if c.endswith(".sum") and f"{c}.per_second" in raw.columns]
    if duration not in raw.columns or not pairs:
        return raw
    d = raw[duration].to_numpy(float)
    worst, which = np.zeros(len(raw)), np.full(len(raw), "", dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in pairs:
            count, rate = raw[c].to_numpy(float), raw[f"{c}.per_second"].to_numpy(float)
            rel = np.abs(count / rate * 1e9 - d) / d
            rel[~((count > 0) & (rate > 0) & (d > 0) & np.isfinite(rel))] = 0.0
            hit = rel > worst
            worst[hit], which[hit] = rel[hit], c
    for i in np.flatnonzero(worst > float(lim["rate_consistency"])):
        c = which[i]
        text = (
            f"{INCONSISTENT}: {c} / {c}.per_second is"
            f" {raw.at[i, c] / raw.at[i, c + '.per_second'] * 1e9:.6g} ns but {duration} is"
            f" {d[i]:.6g} ns ({worst[i]:.2%} apart): the reader may have misread this launch; check"
            " it with --reader ncu_report"
        )
        add_note(raw, i, text)
    return raw
