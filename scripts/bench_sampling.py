#!/usr/bin/env python3
"""Benchmark (issue 51): decoding a report's PM sampling series against decoding it without them,
and against reading the same series through ncu_report, measured in the same run on each shared
report that has series.

Rows per report: ``decode`` (the launch table: :func:`ncuroof.parser.ncu_rep.read_nvr`),
``series`` (the series pass alone, :func:`ncuroof.parser.ncu_rep.sampling.read_series`),
``ncu_report`` (the same series through NVIDIA's module: every instance's timestamp and value).
Target: decode + series at most 2x decode alone (``with/without`` column); ``series/ncu_report``
says how the pass compares with the reference reading the same values. A report without sampling
does not run the series pass at all (the launch table's ``pm_sample_interval_s`` is NaN), so its
decode is unchanged: ``scripts/bench_scale.py`` keeps that bar.

    .venv/bin/python scripts/bench_sampling.py [REPORT ...] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"


def _best(fn, repeat: int) -> float:
    """The fastest of ``repeat`` runs of ``fn()`` (s)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _reference(path: Path) -> int:
    """Every sampled series' instances through ncu_report (names as the decoder keeps them)."""
    import ncu_report

    ctx, n = ncu_report.load_report(str(path)), 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            for name in act.metric_names():
                if (
                    ":" in name
                    and not name.startswith(("breakdown:", "group:"))
                    or ("Triage" in name)
                ):
                    m = act.metric_by_name(name)
                    ids = m.correlation_ids()
                    for i in range(m.num_instances()):
                        ids.as_uint64(i)
                        m.as_double(i)
                        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    from ncuroof import catalog
    from ncuroof.parser.ncu_rep import read_nvr
    from ncuroof.parser.ncu_rep.sampling import read_series

    cat = catalog.load()
    paths = args.reports or sorted(SHARED.glob("*.ncu-rep"))
    print(
        f"{'report':44} {'decode':>9} {'series':>9} {'with/without':>12} {'ncu_report':>10}"
        f" {'series/ncu_report':>17} {'values':>7}"
    )
    worst = 0.0
    for path in paths:
        n = len(read_series(path))
        if not n:
            continue
        decode = _best(lambda p=path: read_nvr(p, cat), args.repeat)
        series = _best(lambda p=path: read_series(p), args.repeat)
        ref = _best(lambda p=path: _reference(p), max(1, args.repeat // 2))
        ratio = (decode + series) / decode
        worst = max(worst, ratio)
        print(
            f"{path.name[:44]:44} {decode * 1e3:8.1f}ms {series * 1e3:8.1f}ms {ratio:12.2f}"
            f" {ref * 1e3:9.1f}ms {series / ref:17.2f} {n:7d}"
        )
    print(f"worst decode with series / without: {worst:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
