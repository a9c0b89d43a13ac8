#!/usr/bin/env python3
"""Benchmark (issue 54): how fast the quick commands answer, against ``python -c pass`` and
``python -c "import pandas"`` measured in the same run (the best of ``--repeat`` cold starts each).

Targets on a quiet 2-core machine: ``--help``, ``--version`` and ``list-gpus`` at most 0.25 s
(they import no pandas, numpy or pyarrow: ``tests/unit/test_startup.py``), ``analyze`` of the demo
report at most 1.0 s. The floor of ``analyze``: the libraries it cannot start without (pandas,
pyarrow's CSV writer, jinja2, a plotly figure), imported and made once, printed
beside it.

    .venv/bin/python scripts/bench_startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "fixtures" / "third_party" / "ESMM-Research__profile_output.ncu-rep"


#: The libraries ``analyze`` needs, imported and used once (a plotly figure, default template).
_FLOOR = "import pandas, pyarrow.csv, jinja2, plotly.graph_objects as go; go.Figure()"


def _best(cmd: list[str], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    py = sys.executable
    base = _best([py, "-c", "pass"], args.repeat)
    pandas = _best([py, "-c", "import pandas"], args.repeat)
    floor = _best([py, "-c", _FLOOR], args.repeat)
    out = tempfile.mkdtemp(prefix="ncuroof-bench-")
    rows = [
        ("--help", [py, "-m", "ncuroof", "--help"], 0.25),
        ("--version", [py, "-m", "ncuroof", "--version"], 0.25),
        ("list-gpus", [py, "-m", "ncuroof", "list-gpus"], 0.25),
        ("analyze demo", [py, "-m", "ncuroof", "analyze", str(DEMO), "-q", "-o", out], 1.0),
    ]
    print(f"python -c pass {base:.3f} s; python -c 'import pandas' {pandas:.3f} s")
    print(f"the libraries analyze needs, imported, a figure made: {floor:.3f} s")
    print(f"{'command':14} {'time':>8} {'/ pass':>8} {'/ import pandas':>16} {'target':>8}")
    for name, cmd, target in rows:
        t = _best(cmd, args.repeat)
        print(f"{name:14} {t:7.3f}s {t / base:8.1f} {t / pandas:16.2f} {target:7.2f}s")


if __name__ == "__main__":
    main()
