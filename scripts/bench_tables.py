#!/usr/bin/env python3
"""Benchmark: writing the kernels and points tables, pyarrow's CSV writer and Parquet against
``DataFrame.to_csv`` (the baseline, measured in the same run).

Builds an N-launch kernels table (default 100,000) by repeating the launches of a real report
(the shared ESMM ``--set roofline`` report) with fresh launch IDs and every float column
multiplied by lognormal noise (seed 0, so no two values repeat), computes its points table,
and times, best of ``--repeat`` runs each:

* ``DataFrame.to_csv``: the baseline (what analyze wrote before pyarrow's writer,
  :mod:`ncuroof.output.tables`);
* ``pyarrow CSV``:
  :func:`ncuroof.output.tables.arrow_table` + :func:`~ncuroof.output.tables.csv_bytes`;
* ``Parquet``:
  :func:`~ncuroof.output.tables.arrow_table` + :func:`~ncuroof.output.tables.parquet_bytes`;
* ``read_table Parquet``: reading that Parquet back with dtypes
  (:func:`ncuroof.parser.saved.read_table`).

    .venv/bin/python scripts/bench_tables.py [--launches N] [--repeat R]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

import ncuroof
from ncuroof import schema
from ncuroof.output.tables import arrow_table, csv_bytes, parquet_bytes
from ncuroof.parser.saved import TABLES, read_table

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT.parent / "shared" / "fixtures" / "ESMM-Research__profile_output.ncu-rep"


def tables(launches: int) -> dict[str, pd.DataFrame]:
    """An N-launch launch table from the shared report, and its points table."""
    k = ncuroof.load(SOURCE)
    big = pd.concat([k] * -(-launches // len(k)), ignore_index=True).head(launches)
    big["launch_id"] = np.arange(len(big))
    rng = np.random.default_rng(0)
    for c, col in schema.LAUNCHES.items():
        if col.dtype == "float64":
            big[c] = big[c] * rng.lognormal(size=len(big))
    big = schema.validate_launches(big)
    return {"launches": big, "points": ncuroof.points(big)}


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    data = tables(args.launches)
    print(
        f"{args.launches} launches; seconds, best of {args.repeat}; ratio = to_csv time / this time"
    )
    print(f"{'table':8} {'rows':>8} {'step':22} {'s':>8} {'ratio':>7} {'MB':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, df in data.items():
            base = best(lambda df=df: df.to_csv(index=False), args.repeat)
            size = len(df.to_csv(index=False).encode())
            path = Path(tmp) / f"{name}.parquet"
            path.write_bytes(parquet_bytes(arrow_table(df, TABLES[name], name)))
            steps = {
                "DataFrame.to_csv": (base, size),
                "pyarrow CSV": (
                    best(
                        lambda df=df, n=name: csv_bytes(arrow_table(df, TABLES[n], n)),
                        args.repeat,
                    ),
                    len(csv_bytes(arrow_table(df, TABLES[name], name))),
                ),
                "Parquet": (
                    best(
                        lambda df=df, n=name: parquet_bytes(arrow_table(df, TABLES[n], n)),
                        args.repeat,
                    ),
                    path.stat().st_size,
                ),
                "read_table Parquet": (
                    best(lambda p=path: read_table(p), args.repeat),
                    path.stat().st_size,
                ),
            }
            for step, (s, nbytes) in steps.items():
                print(
                    f"{name:8} {len(df):>8} {step:22} {s:8.3f} {base / s:7.2f} {nbytes / 1e6:7.1f}"
                )


if __name__ == "__main__":
    main()
