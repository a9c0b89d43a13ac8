#!/usr/bin/env python3
"""Benchmark: reading a large raw-page ncu CSV export, against pandas.read_csv of the same file.

Builds an N-launch raw-page CSV (default 100,000) by repeating the launch rows of a real export
(the 64-launch B200 FlashInfer export in ../shared/fixtures) with fresh IDs, then measures, each
in a fresh subprocess so peak memory is its own:

* ``pandas.read_csv(path)``: the baseline, in the same run;
* ``ncuroof.parser.read_csv``: the raw table ncuroof analyzes;
* ``ncuroof.load``: the whole kernels table (reader + formulas + roofs + classifier).

Targets (issue 3): the reader at most 2x read_csv's time, peak memory at most 3x the file size.
Peak memory is the subprocess's maximum RSS minus that of the same interpreter after imports.

    .venv/bin/python scripts/bench_csv.py [--launches N] [--source CSV] [--noise K] [--keep]

(pandas.read_csv cannot read a file with program output between the rows; with --noise its row
is the time to read the clean file, measured first.)
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = (
    ROOT.parent
    / "shared"
    / "fixtures"
    / "Roofline-Analysis__flashinfer_paged_decode__gqa_bf16_b128_ctx2k_p64.ncu.csv"
)

STEPS = {
    "imports only": "pass",
    "pandas.read_csv": "import pandas as pd; n = len(pd.read_csv(PATH))",
    "ncuroof read_csv": (
        "from ncuroof import catalog; from ncuroof.parser.csv import read_csv; n ="
        " len(read_csv(PATH, catalog.load()))"
    ),
    "ncuroof.load": "import ncuroof; n = len(ncuroof.load(PATH))",
}

CHILD = """
import resource, sys, time
import pandas, numpy, ncuroof, ncuroof.parser.csv
PATH = sys.argv[1]
t0 = time.perf_counter()
{code}
dt = time.perf_counter() - t0
print(__import__("json").dumps({{"s": dt, "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}}))
"""  # noqa: E501


def build(source: Path, launches: int, out: Path, noise: int = 0) -> int:
    """Write an N-launch raw-page CSV from the rows of ``source``; return its size in bytes.

    With ``noise`` > 0, a line of program output follows every ``noise`` rows (the slower path
    of the reader, which filters lines that are not CSV rows)."""
    text = source.read_bytes().decode("utf-8").lstrip("\ufeff")
    lines = [line for line in text.splitlines() if line.startswith('"')]
    header, units, rows = lines[0], lines[1], lines[2:]
    parsed = [next(csv.reader([r])) for r in rows]
    with out.open("w", newline="") as f:
        f.write(header + "\n" + units + "\n")
        w = csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n")
        buf = io.StringIO()
        for i in range(launches):
            row = parsed[i % len(parsed)]
            row[0] = str(i)
            w.writerow(row)
            if noise and i % noise == 0:
                f.write(f"step {i}: program output between rows\n")
        del buf
    return out.stat().st_size


def measure(step: str, path: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD.format(code=STEPS[step]), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{step} failed: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=100_000)
    ap.add_argument("--source", type=Path, default=DEFAULT)
    ap.add_argument(
        "--noise", type=int, default=0, metavar="K", help="a line of program output every K rows"
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated CSV and print its path")
    args = ap.parse_args()
    if not args.source.exists():
        raise SystemExit(
            f"{args.source}: not found (the shared fixtures are not beside this checkout); pass"
            " --source"
        )
    tmp = Path(tempfile.mkdtemp(prefix="ncuroof-bench-"))
    path = tmp / "raw.csv"
    t0 = time.perf_counter()
    size = build(args.source, args.launches, path, args.noise)
    print(
        f"built {args.launches:,} launches, {size / 1e6:.0f} MB, in {time.perf_counter() - t0:.1f}"
        f" s: {path}"
    )
    results = {
        step: measure(step, path)
        for step in STEPS
        if not (args.noise and step == "pandas.read_csv")
    }
    if args.noise:  # the baseline on the same rows without the noise lines
        clean = tmp / "clean.csv"
        build(args.source, args.launches, clean)
        results = {
            "imports only": results["imports only"],
            "pandas.read_csv": measure("pandas.read_csv", clean),
            **{k: v for k, v in results.items() if k != "imports only"},
        }
        clean.unlink()
    base_rss = results["imports only"]["rss_kb"] * 1024
    base_t = results["pandas.read_csv"]["s"]
    print(f"{'step':<18} {'time s':>8} {'x read_csv':>11} {'peak MB':>9} {'x file':>7}")
    for step, r in results.items():
        if step == "imports only":
            continue
        mem = max(r["rss_kb"] * 1024 - base_rss, 0)
        print(
            f"{step:<18} {r['s']:>8.2f} {r['s'] / base_t:>11.2f} {mem / 1e6:>9.0f}"
            f" {mem / size:>7.2f}"
        )
    print("targets: ncuroof read_csv <= 2.00 x read_csv, peak memory <= 3.00 x file")
    if args.keep:
        print(f"kept {path}")
    else:
        path.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
