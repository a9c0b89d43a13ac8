#!/usr/bin/env python3
"""Benchmark: ncuroof analysis time per launch against the floor of merely reading the same
metrics through ncu_report, measured in the same run on the largest shared fixture.

--warm (issue 30): a small report analyzed in a warm process (imports, metric catalog and GPU table
loaded; the analysis itself redone) against a cold ``ncuroof analyze --json`` run of the same
report, CPU time of the child process and wall time, in one run; target warm <= 1/3 of cold.

Target (issue 2): analysis (parse, compute, classify and diagnose each launch, points) at most
1.5x the floor. The per-kernel summary and diagnosis (issue 7) and the figure and page are timed
on their own rows: they grow with kernels and points, not with the metrics read.

    .venv/bin/python scripts/bench_analyze.py [REPORT] [--repeat N]
    .venv/bin/python scripts/bench_analyze.py --warm [REPORT] [--repeat N]
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
    """Per-kernel aggregation and diagnosis (issue 7): a cost that grows with
    kernels, timed alone."""
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
    fig = ncuroof.plot_roofline(result.points, result.launches)
    report.render_html(fig, result.launches, {}, plotlyjs="cdn", points=result.points)
    drawing.elapsed = time.perf_counter() - t0  # type: ignore[attr-defined]
    return len(result.launches)


def best_of(fn, path: Path, repeat: int) -> tuple[float, int]:
    times = []
    n = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = fn(path)
        times.append(time.perf_counter() - t0)
    return min(times), n


def cold_cli(path: Path, outdir: Path) -> tuple[float, float]:
    """One cold ``ncuroof analyze REPORT --json`` process: (CPU seconds of the
    child, wall seconds)."""
    import os
    import resource
    import subprocess
    import sys

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ncuroof", "analyze", str(path), "-o", str(outdir), "--json", "-q"],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def warm_call(path: Path) -> tuple[float, float]:
    """The same document in this (warm) process, the analysis redone: (CPU
    seconds, wall seconds)."""
    from ncuroof import api
    from ncuroof.render import json_doc

    c0, t0 = time.process_time(), time.perf_counter()
    json_doc.dumps(json_doc.analysis_document(api.analysis_of(path)))
    return time.process_time() - c0, time.perf_counter() - t0


def warm_vs_cold(path: Path, repeat: int) -> None:
    """Print the warm/cold ratio (issue 30) for ``path``: best of ``repeat`` each, alternated."""
    import tempfile

    warm_call(path)  # the process gets warm: imports, catalog, GPU table
    cold, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            cold.append(cold_cli(path, Path(tmp) / f"o{i}"))
            warm.append(warm_call(path))
    (cc, cw), (wc, ww) = min(cold), min(warm)
    print(f"report: {path.name} ({path.stat().st_size / 1e3:.0f} kB), best of {repeat}")
    print(f"{'':<48}{'CPU [ms]':>10}{'wall [ms]':>11}{'ratio (CPU)':>13}")
    print(
        f"{'cold: ncuroof analyze --json (a new process)':<48}{1e3 * cc:>10.0f}{1e3 * cw:>11.0f}{1.0:>13.2f}"  # noqa: E501
    )
    print(
        f"{'warm: the same document in a warm process':<48}{1e3 * wc:>10.0f}{1e3 * ww:>11.0f}{wc / cc:>13.2f}"  # noqa: E501
    )
    print(
        f"target: warm <= 0.33 of cold -> {'met' if wc / cc <= 1 / 3 else 'NOT met'} (wall ratio"
        f" {ww / cw:.2f})"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--warm",
        action="store_true",
        help="warm process against a cold CLI run (issue 30), on a small report",
    )
    args = ap.parse_args()
    if args.warm:
        warm_vs_cold(args.report or SHARED / "KernelBench__matmul_kernel.ncu-rep", args.repeat)
        return
    path = args.report or max(SHARED.glob("*.ncu-rep"), key=lambda p: p.stat().st_size)
    analysis(path)  # warm-up: imports, catalog, plotly templates
    t_floor, n = best_of(floor, path, args.repeat)
    t_an, n2 = best_of(analysis, path, args.repeat)
    t_sum = min(summarizing(path) and summarizing.elapsed for _ in range(args.repeat))  # type: ignore[attr-defined]
    t_draw = min(drawing(path) and drawing.elapsed for _ in range(args.repeat))  # type: ignore[attr-defined]
    assert n == n2
    print(
        f"report: {path.name} ({path.stat().st_size / 1e6:.1f} MB, {n} launches), best of"
        f" {args.repeat}"
    )
    print(f"{'step':<44}{'total [ms]':>12}{'per launch [ms]':>17}{'ratio':>8}")
    print(
        f"{'floor: read the same metrics via ncu_report':<44}{1e3 * t_floor:>12.1f}{1e3 * t_floor / n:>17.3f}{1.0:>8.2f}"  # noqa: E501
    )
    print(
        f"{'ncuroof: parse, compute, classify, points':<44}{1e3 * t_an:>12.1f}{1e3 * t_an / n:>17.3f}{t_an / t_floor:>8.2f}"  # noqa: E501
    )
    print(
        f"{'ncuroof: + per-kernel summary and diagnosis':<44}{1e3 * t_sum:>12.1f}{1e3 * t_sum / n:>17.3f}{t_sum / t_floor:>8.2f}"  # noqa: E501
    )
    print(
        f"{'ncuroof: + figure and HTML (fixed cost)':<44}{1e3 * t_draw:>12.1f}{1e3 * t_draw / n:>17.3f}{t_draw / t_floor:>8.2f}"  # noqa: E501
    )
    print(f"target: ratio <= 1.5 -> {'met' if t_an / t_floor <= 1.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
