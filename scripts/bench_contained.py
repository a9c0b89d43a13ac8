#!/usr/bin/env python3
"""Benchmark: the cost of running ``ncu_report`` in a worker process (crash containment, issue 14).

For each report, in a fresh interpreter each time (so ncu_report's one-time start-up is counted
on both sides, as in one ``ncuroof analyze``):

* baseline: :func:`ncuroof.parser.ncu_rep.reference.read_ncu_rep` with the worker's read
  (:func:`ncuroof.parser.ncu_rep._ncu_worker.read`) called in-process and a walk of the framing
  without the launch records, the way ncuroof read reports before issue 14;
* contained: :func:`ncuroof.parser.ncu_rep.reference.read_ncu_rep` as it is: one walk of the
  framing and the launch records (:func:`~ncuroof.parser.ncu_rep.reference.check_records`) and
  the read in a worker process.

Prints milliseconds (best of ``--repeat`` fresh runs) and the ratio contained / baseline.

    PYTHONPATH=. .venv/bin/python scripts/bench_contained.py [--repeat 3] [REPORT ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures"
DEFAULT = (
    "nsight-training__manual_nvtx.ncu-rep",
    "CUDA_Learning__report.ncu-rep",
    "alife_cuda__profile_output.ncu-rep",
    "Cuda_Gemm_Practice__gemm_v9.ncu-rep",
)

_BASELINE = """
import io, mmap, pickle, sys, time
from ncuroof import catalog
from ncuroof.parser.ncu_rep import _ncu_worker, framing, reference

def in_process(path, spec, progress=None, records=None):
    buf = io.BytesIO()
    _ncu_worker.read(str(path), dict(spec), buf)
    buf.seek(0)
    frames = []
    while buf.tell() < len(buf.getbuffer()):
        frames.append(pickle.load(buf))
    return [v for k, v in frames if k == "row"]

def framing_only(path):
    framing.check_file(path)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return framing.plan(mm, path, framing.walk(mm, path))

reference.read_launches = in_process
reference.check_records = framing_only
cat = catalog.load()
t = time.perf_counter()
reference.read_ncu_rep(sys.argv[1], cat)
print(time.perf_counter() - t)
"""
_CONTAINED = """
import sys, time
from ncuroof import catalog
from ncuroof.parser.ncu_rep import read_ncu_rep
cat = catalog.load()
t = time.perf_counter()
read_ncu_rep(sys.argv[1], cat)
print(time.perf_counter() - t)
"""


def _best(code: str, path: Path, repeat: int) -> float:
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(repeat)
    ]
    return min(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    reports = args.reports or [SHARED / n for n in DEFAULT if (SHARED / n).exists()]
    print(f"{'report':<45}{'size MB':>8}{'baseline ms':>13}{'contained ms':>14}{'ratio':>7}")
    for p in reports:
        base, cont = _best(_BASELINE, p, args.repeat), _best(_CONTAINED, p, args.repeat)
        print(
            f"{p.name[:44]:<45}{p.stat().st_size / 1e6:>8.1f}{1e3 * base:>13.0f}{1e3 * cont:>14.0f}{cont / base:>7.2f}"  # noqa: E501
        )


if __name__ == "__main__":
    main()
