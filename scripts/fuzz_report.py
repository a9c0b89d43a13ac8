#!/usr/bin/env python3
"""Run the corrupt-input harness (tests/fuzz.py) and count outcomes per mutation family.

Each case is a damaged copy of a shared fixture (fixed seed); ``ncuroof analyze -q`` runs on it
(``.ncu-rep`` cases in a forked child so that an abort is counted, not fatal). Columns:
``refused`` (exit 2, one line naming the file), ``ok`` (whole outputs, no damage visible),
``flagged`` (whole outputs, a status other than ok, a flag or a damage note), ``lost_undetectable``
(a report with fewer launches and no trace of the loss: a removed block), then one column per
failure kind (signal, traceback, internal_error, leftover, silent_value, warning, ...).

    PYTHONPATH=. .venv/bin/python scripts/fuzz_report.py [--seed 14] [--per-report
    3] [--per-csv 3] [-v]
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "helpers"))

import fuzz  # noqa: E402


def _references(cases: list[fuzz.Case], work: Path) -> dict[str, object]:
    """launches.csv of each undamaged fixture the cases come from."""
    refs: dict[str, object] = {}
    for origin in sorted({c.origin for c in cases}):
        data = (fuzz.SHARED / origin).read_bytes()
        case = fuzz.Case(
            "original",
            origin,
            data,
            Path(origin).suffix if origin.endswith(".csv") else ".ncu-rep",
            origin,
        )
        out = fuzz.run_case(case, work / f"ref-{len(refs)}")
        refs[origin] = out.launches
        if out.exit_code != 0:
            print(
                f"note: the undamaged {origin} gives exit {out.exit_code}:"
                f" {out.stderr.strip()[:200]}",
                file=sys.stderr,
            )
    return refs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--per-report", type=int, default=3)
    ap.add_argument("--per-csv", type=int, default=3)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failure")
    args = ap.parse_args()
    cases = fuzz.all_cases(args.seed, args.per_report, args.per_csv)
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failures = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        refs = _references(cases, work)
        for n, case in enumerate(cases):
            outcome = fuzz.run_case(case, work / f"c{n}")
            kind, detail = fuzz.verdict(case, outcome, refs.get(case.origin))
            counts[case.family][kind] += 1
            if kind.startswith("FAIL"):
                failures.append((case, kind, detail))
    kinds = ["refused", "ok", "ok_flagged", "lost_undetectable"]
    kinds += sorted({k for c in counts.values() for k in c if k not in kinds})
    width = max(map(len, counts)) + 2
    cols = [(k, len(k.removeprefix("FAIL:")) + 2) for k in kinds]
    print(
        f"{'family':<{width}}{'cases':>6}"
        + "".join(f"{k.removeprefix('FAIL:'):>{w}}" for k, w in cols)
    )
    total: collections.Counter[str] = collections.Counter()
    for fam, c in [*counts.items(), ("total", total)]:
        if fam != "total":
            total.update(c)
        print(
            f"{fam:<{width}}{sum(c.values()):>6}" + "".join(f"{c.get(k, 0):>{w}}" for k, w in cols)
        )
    print(f"{len(cases)} cases in {time.perf_counter() - t0:.1f} s; {len(failures)} failures")
    for case, kind, detail in failures if args.verbose else failures[:0]:
        print(f"{kind}: {case.name}: {detail}")


if __name__ == "__main__":
    main()
