#!/usr/bin/env python3
"""Benchmark: ncuroof analysis time per launch against the floor of merely reading the same
metrics through ncu_report, measured in the same run on the largest shared fixture.

Target (issue 2): analysis (parse, compute, classify and diagnose each launch, points) at most
1.5x the floor. The per-kernel summary and diagnosis (issue 7) and the figure and page are timed
on their own rows: they grow with kernels and points, not with the metrics read.

    .venv/bin/python scripts/bench_analyze.py [REPORT] [--repeat N]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"


def floor(path: Path) -> int:
    """Read, through ncu_report alone, exactly the metrics ncuroof reads."""
    import ncu_report

    from ncuroof import catalog

    cat = catalog.load()
    ctx = ncu_report.load_report(str(path))
    n = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            for name in action.metric_names():
                if name in cat.scalar_metrics or cat.is_tensor_path_metric(name):
                    action.metric_by_name(name).value()
            if cat.tensor.opcode_metric in action.metric_names():
                m = action.metric_by_name(cat.tensor.opcode_metric)
                ids = m.correlation_ids()
                for i in range(m.num_instances()):
                    ids.as_string(i)
                    m.as_double(i)
            action.name()
            n += 1
    return n


def analysis(path: Path) -> int:
    """Parse, compute, classify and diagnose each launch, place points: what grows with launches."""
    import ncuroof

    kernels = ncuroof.load(path)
    ncuroof.points(kernels)
    return len(kernels)


def summarizing(path: Path) -> int:
    """Per-kernel aggregation and diagnosis (issue 7): a cost that grows with kernels, timed alone."""
    import ncuroof
    from ncuroof.render import page as report

    kernels = ncuroof.load(path)
    pts = ncuroof.points(kernels)
    t0 = time.perf_counter()
    report.summarize(kernels, pts, top=len(kernels))
    summarizing.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
    return len(kernels)


def drawing(path: Path) -> int:
    """Figure and HTML page: a per-report cost that grows with points, not with metrics read."""
    import ncuroof
    from ncuroof.render import page as report

    result = ncuroof.analyze(path, write=False)
    t0 = time.perf_counter()
    fig = ncuroof.plot_roofline(result.points, result.kernels)
    report.render_html(fig, result.kernels, {}, plotlyjs="cdn", points=result.points)
    drawing.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
    return len(result.kernels)


def best_of(fn, path: Path, repeat: int) -> tuple[float, int]:
    times = []
    n = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = fn(path)
        times.append(time.perf_counter() - t0)
    return min(times), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = args.report or max(SHARED.glob("*.ncu-rep"), key=lambda p: p.stat().st_size)
    analysis(path)  # warm-up: imports, catalog, plotly templates
    t_floor, n = best_of(floor, path, args.repeat)
    t_an, n2 = best_of(analysis, path, args.repeat)
    t_sum = min(summarizing(path) and summarizing.elapsed for _ in range(args.repeat))  # type: ignore[attr-defined]
    t_draw = min(drawing(path) and drawing.elapsed for _ in range(args.repeat))  # type: ignore[attr-defined]
    assert n == n2
    print(f"report: {path.name} ({path.stat().st_size / 1e6:.1f} MB, {n} launches), best of {args.repeat}")
    print(f"{'step':<44}{'total [ms]':>12}{'per launch [ms]':>17}{'ratio':>8}")
    print(f"{'floor: read the same metrics via ncu_report':<44}{1e3 * t_floor:>12.1f}{1e3 * t_floor / n:>17.3f}{1.0:>8.2f}")
    print(f"{'ncuroof: parse, compute, classify, points':<44}{1e3 * t_an:>12.1f}{1e3 * t_an / n:>17.3f}{t_an / t_floor:>8.2f}")
    print(f"{'ncuroof: + per-kernel summary and diagnosis':<44}{1e3 * t_sum:>12.1f}{1e3 * t_sum / n:>17.3f}{t_sum / t_floor:>8.2f}")
    print(f"{'ncuroof: + figure and HTML (fixed cost)':<44}{1e3 * t_draw:>12.1f}{1e3 * t_draw / n:>17.3f}{t_draw / t_floor:>8.2f}")
    print(f"target: ratio <= 1.5 -> {'met' if t_an / t_floor <= 1.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
