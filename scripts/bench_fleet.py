#!/usr/bin/env python3
"""Benchmark: a stack of reports (``analyze --stack``) in this process against a local dask cluster.

Inputs are copies of a shared report (default ESMM-Research__profile_output.ncu-rep, 4 launches)
and of a bigger one made from it by ``scripts/make_big_report.py`` (``--launches``, default 5,000),
in a temporary directory. For each stack it prints the wall time of ``ncuroof.runs.fleet.run`` in
this process and on a :class:`distributed.LocalCluster` of this machine's cores (start-up
included), and their ratio: the threshold of :func:`ncuroof.runs.fleet.wanted` comes from here.
Each stack's dask time is also given as a ratio to the ncu_report floor (``bench_analyze.floor``:
reading exactly the metrics ncuroof reads through ncu_report alone, per launch, measured in this
run on the big report) times the stack's launches: issue 29's 0.1x target, for a fleet.

    .venv/bin/python scripts/bench_fleet.py [--counts 4 8 16 32] [--big 4] [--launches 5000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from bench_scale import floor_per_launch  # noqa: E402
from make_big_report import make_big_report  # noqa: E402

from ncuroof.runs import fleet  # noqa: E402

SHARED = ROOT.parent / "shared" / "fixtures"


def timed(paths: list[Path], on_dask: bool) -> float:
    """Seconds of fleet.run over ``paths``, in this process or on a local cluster."""
    fleet.FLEET_MIN_INPUTS = 1 if on_dask else 10**9
    t = time.perf_counter()
    fleet.run(paths)
    return time.perf_counter() - t


def fleet_launches(report: Path) -> int:
    """Launches in ``report`` (ncu_report's count)."""
    import ncu_report

    ctx = ncu_report.load_report(str(report))
    return sum(ctx.range_by_idx(r).num_actions() for r in range(ctx.num_ranges()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", type=Path, default=SHARED / "ESMM-Research__profile_output.ncu-rep")
    ap.add_argument("--counts", type=int, nargs="+", default=[4, 8, 16, 32])
    ap.add_argument("--big", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--launches", type=int, default=5000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ncuroof-fleet-") as d:
        tmp = Path(d)
        big = tmp / "big.ncu-rep"
        make_big_report(args.report, big, args.launches)
        fl = floor_per_launch(big, args.launches)
        print(f"ncu_report floor per launch (this run): {fl * 1e3:.3f} ms")
        small = fleet_launches(args.report)
        stacks = [(f"{n} x {args.report.name}", args.report, n, small) for n in args.counts]
        stacks += [(f"{n} x {args.launches:,} launches", big, n, args.launches) for n in args.big]
        print(
            f"{'stack':<40} {'MB':>6} {'in-process s':>12} {'dask s':>7} {'dask/in-process':>15}"
            f" {'dask/(floor x launches)':>23}"
        )
        for label, src, n, launches in stacks:
            paths = []
            for i in range(n):
                p = tmp / f"{src.stem}.{i}{src.suffix}"
                shutil.copyfile(src, p)
                paths.append(p)
            mb = sum(p.stat().st_size for p in paths) / 1e6
            here, there = timed(paths, False), timed(paths, True)
            ratio = there / (fl * launches * n)
            print(
                f"{label:<40} {mb:>6.0f} {here:>12.2f} {there:>7.2f} {there / here:>15.2f}"
                f" {ratio:>23.3f}"
            )
            for p in paths:
                p.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
