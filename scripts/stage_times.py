#!/usr/bin/env python3
"""Run ``ncuroof`` with a wall-clock and a CPU timer and the peak RSS on each pipeline stage:
where the time goes.

    .venv/bin/python scripts/stage_times.py analyze REPORT -o OUT -q

Each stage function below is wrapped (module attribute replaced, so calls through the module are
timed; nested stages count in both). Printed on stderr after the run: wall seconds per stage, CPU
seconds (this process and the child processes it waited for: decoding workers, ncu_report's; on a
shared machine CPU time is the number to compare), the process's peak RSS when the stage ended, and
the rest (start-up, imports, glue). Unlike cProfile
it adds no per-call overhead, so the numbers are those of a plain run. Decoding worker processes
(:mod:`ncuroof.parser.ncu_rep.parallel`) run inside ``parser.read_many``.
"""

from __future__ import annotations

import functools
import importlib
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STAGES = (
    ("parser", "read_many"),
    ("model.formulas", "compute_launches"),
    ("model.roofs", "fill_ceilings"),
    ("model.formulas", "time_at_roof"),
    ("model.formulas", "compute_points"),
    ("model.classify", "classify"),
    ("model.diagnose", "diagnose_launches"),
    ("model.summary", "kernel_dots"),
    ("model.summary", "kernel_summary"),
    ("model.diagnose", "diagnose_kernels"),
    ("render.figure", "plot_roofline"),
    ("render.page", "render_html"),
    ("output.folder", "write_outputs"),
)
T0 = time.perf_counter()
TIMES: dict[str, list[float]] = {}


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _wrap(module: str, name: str) -> None:
    mod = importlib.import_module(f"ncuroof.{module}")
    fn = getattr(mod, name)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t, c = time.perf_counter(), _cpu()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = TIMES.setdefault(f"{module}.{name}", [0.0, 0.0, 0.0])
            entry[0] += time.perf_counter() - t
            entry[1] += _cpu() - c
            entry[2] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    setattr(mod, name, timed)


def main() -> None:
    import ncuroof.cli

    imported, imported_cpu = time.perf_counter() - T0, _cpu()
    for module, name in STAGES:
        _wrap(module, name)
    try:
        ncuroof.cli.main(sys.argv[1:])
    except SystemExit:
        pass
    total, total_cpu = time.perf_counter() - T0, _cpu()
    print(
        f"\n{'stage':<36} {'s':>7} {'CPU s':>7} {'peak RSS MB':>12}\n{'import ncuroof':<36}"
        f" {imported:>7.2f} {imported_cpu:>7.2f}",
        file=sys.stderr,
    )
    for stage, (seconds, cpu, rss) in TIMES.items():
        print(f"{stage:<36} {seconds:>7.2f} {cpu:>7.2f} {rss:>12.0f}", file=sys.stderr)
    rest, rest_cpu = (
        total - imported - sum(t[0] for t in TIMES.values()),
        total_cpu - imported_cpu - sum(t[1] for t in TIMES.values()),
    )
    print(
        f"{'rest (glue, tables to text)':<36} {rest:>7.2f} {rest_cpu:>7.2f}\n{'total':<36}"
        f" {total:>7.2f} {total_cpu:>7.2f}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
