#!/usr/bin/env python3
"""Benchmark: ``ncuroof analyze`` at 1,000, 10,000 and 100,000 launches, against the ncu_report floor.

Inputs are made at run time by ``scripts/make_big_report.py`` from a shared ``--set roofline``
report (default ESMM-Research__profile_output.ncu-rep) in a temporary directory, deleted at the
end. For each size it prints the wall and CPU time of ``ncuroof analyze`` end to end (a subprocess
run through ``scripts/stage_times.py``, which adds no per-call overhead; CPU time counts the
decoding workers and ncu_report's worker), the peak resident memory of its process tree (sampled
from /proc every 20 ms, and the kernel's ru_maxrss of the process), and, at 1,000 and 10,000
launches, the ncu_report floor: the time of reading, through ncu_report alone, exactly the metrics
ncuroof reads (``bench_analyze.floor``), in a subprocess of its own. Every wall time is also given
as a ratio to ``floor per launch x launches`` measured in this run. Targets (issue 29, 2 cores):
100,000 launches end to end in at most 0.1 x floor per launch x launches, with peak RSS at most
1 GB; time per launch flat. The fixed cost of one run (starting Python, importing, writing a page:
``analyze`` of the source report itself) is measured too, and the time per launch is also given
without it (``marginal``). The ``verify`` column is the part of the wall time that ``--reader auto``
spends checking the decoder against ncu_report on a sample of launches (``ncuroof.parser.ncu_rep.verify``),
measured alone. Then each stage's wall and CPU seconds at every size, and the log-log slope of its
wall time against launches between the two largest sizes (1: linear).

    .venv/bin/python scripts/bench_scale.py [--report R] [--sizes 1000 10000 100000]

On a machine shared with other work, compare the CPU columns and the ratios, not wall seconds.

``--vary V`` (make_big_report.py --vary): each copy's counts, bytes, durations and cycles are
multiplied by a factor of 1 +- V, so no two launches are alike, as in a real report; the text made
once per distinct row (verdicts, notes) is then made per launch. At 100,000 launches a line says
the issue's goal: at most 5 s and 500 MB peak RSS of the process tree.

Compressed reports (issue 32): each generated report is also compressed as ncu 2026.3 writes a
``.ncu-repz`` (zstd level 3 of the same bytes, one frame) and analyzed the same way; its wall time,
CPU time and peak RSS are printed as ratios to the uncompressed report's in the same run (targets:
time <= 1.3x, peak RSS <= 1 GB). ``--no-repz`` skips it.
"""  # noqa: E501

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "fixtures"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_big_report import make_big_report  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
# The sample check of --reader auto alone (issue 20): cut the sampled launches out, read
# them through ncu_report.
VERIFY = (
    "import sys, time; from pathlib import Path; from ncuroof import catalog; from ncuroof.parser"
    ".ncu_rep import decode, verify; c = catalog.load(); p = Path(sys.argv[1]);"
    " df = decode.read_nvr(p, c); t = time.perf_counter();"
    " v = verify.against_ncu_report(p, df, c, df.attrs[decode.LEARNED]);"
    " print(v.launches, time.perf_counter() - t, repr(v.difference))"
)
FLOOR = (
    "import sys, time; sys.path.insert(0, sys.argv[2]); from bench_analyze import floor; t ="
    " time.perf_counter(); n = floor(__import__('pathlib').Path(sys.argv[1])); print(n,"
    " time.perf_counter() - t)"
)


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants, from /proc (0 once gone)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run_measured(cmd: list[str]) -> tuple[float, int, str, str, float]:
    """Run ``cmd``: wall seconds, peak RSS of its process tree in bytes, stdout, stderr, and the CPU
    seconds of the process and the children it waited for."""
    peak = [0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)  # the outputs are a few lines: the pipes never fill
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    out, err = proc.stdout.read(), proc.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    return wall, max(peak[0], usage.ru_maxrss * 1024), out, err, usage.ru_utime + usage.ru_stime


def floor_per_launch(report: Path, launches: int) -> float:
    """Seconds per launch of reading the metrics ncuroof reads through ncu_report alone."""
    _, _, out, _, _ = run_measured(
        [sys.executable, "-c", FLOOR, str(report), str(Path(__file__).parent)]
    )
    n, seconds = out.split()
    if int(n) != launches:
        raise SystemExit(f"ncu_report read {n} launches of {report}, expected {launches}")
    return float(seconds) / launches


def verify_cost(report: Path) -> tuple[int, float]:
    """(launches compared, seconds) of the sample check against ncu_report, which must agree."""
    _, _, out, _, _ = run_measured([sys.executable, "-c", VERIFY, str(report)])
    n, seconds, difference = out.split(maxsplit=2)
    if difference.strip() != "''":
        raise SystemExit(f"the decoder differs from ncu_report on {report}: {difference}")
    return int(n), float(seconds)


def compress(src: Path, dst: Path) -> None:
    """``src`` as ncu writes a ``.ncu-repz``: zstd (level 3) of the same bytes, streamed (one
    frame with its size)."""
    import zstandard

    with src.open("rb") as f, dst.open("wb") as g:
        zstandard.ZstdCompressor(level=3).copy_stream(f, g, size=src.stat().st_size)


def repz_row(big: Path, tmp: Path, wall: float, rss: int, cpu: float) -> str:
    """Analyze the ``.ncu-repz`` of ``big``: its time and peak RSS, and their ratios to the
    uncompressed run's."""
    packed = big.with_suffix(".ncu-repz")
    compress(big, packed)
    zwall, zrss, _, _, zcpu = run_measured(
        [sys.executable, "-m", "ncuroof", "analyze", str(packed), "-o", str(tmp / "outz"), "-q"]
    )
    size = packed.stat().st_size
    packed.unlink()
    shutil.rmtree(tmp / "outz", ignore_errors=True)
    return (
        f"  .ncu-repz {size / 1e6:.1f} MB ({big.stat().st_size / size:.0f}x smaller): {zwall:.2f} s"
        f" = {zwall / wall:.2f}x the uncompressed wall time, CPU {zcpu:.2f} s ="
        f" {zcpu / max(cpu, 1e-9):.2f}x (target <= 1.3); peak RSS {zrss / 2**20:.0f} MB ="
        f" {zrss / max(rss, 1):.2f}x (target <= 1 GB)"
    )


def stages(err: str) -> dict[str, tuple[float, float]]:
    """(wall s, CPU s) of each stage from ``scripts/stage_times.py``'s table on stderr."""
    out: dict[str, tuple[float, float]] = {}
    lines = err.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("stage ")), len(lines))
    for line in lines[start + 1 :]:
        parts = (
            line.rsplit(None, 3)
            if line.startswith(("parser.", "model.", "render."))
            else line.rsplit(None, 2)
        )
        try:
            out[parts[0].strip()] = (float(parts[1]), float(parts[2]))
        except (IndexError, ValueError):
            continue
    return out


def analyze(report: Path, out: Path) -> tuple[float, int, float, dict[str, tuple[float, float]]]:
    """``ncuroof analyze`` of ``report`` through stage_times: wall s, peak RSS
    bytes, CPU s, stages."""
    wall, rss, _, err, cpu = run_measured(
        [
            sys.executable,
            str(Path(__file__).with_name("stage_times.py")),
            "analyze",
            str(report),
            "-o",
            str(out),
            "-q",
        ]
    )
    return wall, rss, cpu, stages(err)


def slope(n1: int, t1: float, n2: int, t2: float) -> float:
    """log-log slope of t against n (1: linear); NaN where undefined."""
    if min(n1, n2, t1, t2) <= 0 or n1 == n2:
        return math.nan
    return math.log(t2 / t1) / math.log(n2 / n1)


def print_stages(rows: list[tuple[int, dict[str, tuple[float, float]]]]) -> None:
    """Each stage's wall/CPU seconds at every size and its slope between the two largest sizes."""
    names = list(dict.fromkeys(name for _, st in rows for name in st))
    print(
        f"\n{'stage (wall s / CPU s)':<36}" + "".join(f"{n:>16}" for n, _ in rows) + f"{'slope':>7}"
    )
    for name in names:
        cells = "".join(
            f"{(f'{st[name][0]:.2f} / {st[name][1]:.2f}' if name in st else ''):>16}"
            for _, st in rows
        )
        sl = (
            slope(
                rows[-2][0],
                rows[-2][1].get(name, (0, 0))[0],
                rows[-1][0],
                rows[-1][1].get(name, (0, 0))[0],
            )
            if len(rows) > 1
            else math.nan
        )
        print(f"{name:<36}{cells}{'' if math.isnan(sl) else f'{sl:.2f}':>7}")


def main() -> int:
    args = arguments()
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ncuroof-bench-") as d:
        tmp = Path(d)
        varied = f"; each copy's counts and durations times 1 +- {args.vary}" if args.vary else ""
        print(f"source {args.report.name}; {os.cpu_count()} cores{varied}")
        fixed = fixed_cost(args.report, tmp)
        print(
            f"{'launches':>9} {'file MB':>8} {'wall s':>7} {'CPU s':>7} {'ms/launch':>9}"
            f" {'marginal':>9} {'peak RSS MB':>11} {'floor ms/launch':>15} {'verify s':>9}"
        )
        rows = []
        for n in sorted(args.sizes):
            row, fl = size_row(args, tmp, n, fixed)
            rows.append(row)
            if fl is not None:
                floors.append(fl)
        if floors:
            print_against_floor(rows, sum(floors) / len(floors), len(floors))
        if len(rows) > 1:
            print_slopes(rows, fixed)
        print_stages([(n, st) for n, _, _, _, st in rows])
    return 0


def arguments() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", type=Path, default=SHARED / "ESMM-Research__profile_output.ncu-rep")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--floor-sizes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument(
        "--profile",
        action="store_true",
        help="(kept for old command lines: the stages are always printed)",
    )
    ap.add_argument(
        "--no-repz", action="store_true", help="do not time the .ncu-repz of each report"
    )
    ap.add_argument(
        "--vary",
        type=float,
        default=0.0,
        help="vary each copy's measured values by 1 +- VARY (make_big_report.py --vary): no two"
        " launches alike, as in a real report",
    )
    return ap.parse_args()


def fixed_cost(report: Path, tmp: Path) -> float:
    """Wall seconds of ``analyze`` of the source report itself (printed with its verify part)."""
    fixed, _, _, _ = analyze(report, tmp / "out0")
    checked, cost = verify_cost(report)
    print(
        f"fixed cost (analyze of the source report itself): {fixed:.2f} s, of which verify"
        f" {cost:.2f} s ({checked} launches)"
    )
    return fixed


def size_row(
    args: argparse.Namespace, tmp: Path, n: int, fixed: float
) -> tuple[tuple, float | None]:
    """Make, analyze and print the report of ``n`` launches (and its .ncu-repz): the row
    (n, wall, rss, cpu, stages) and the ncu_report floor per launch (None when not measured)."""
    big = tmp / f"big{n}.ncu-rep"
    make_big_report(args.report, big, n, args.vary)
    wall, rss, cpu, st = analyze(big, tmp / "out")
    repz = "" if args.no_repz else repz_row(big, tmp, wall, rss, cpu)
    checked, cost = verify_cost(big)
    fl = floor_per_launch(big, n) if n in args.floor_sizes else None
    print(
        f"{n:>9} {big.stat().st_size / 1e6:>8.0f} {wall:>7.2f} {cpu:>7.2f}"
        f" {wall / n * 1e3:>9.3f} {(wall - fixed) / n * 1e3:>9.3f} {rss / 2**20:>11.0f}"
        f" {'' if fl is None else f'{fl * 1e3:.3f}':>15} {cost:>6.2f} ({checked})"
    )
    if repz:
        print(repz)
    big.unlink()
    shutil.rmtree(tmp / "out", ignore_errors=True)
    return (n, wall, rss, cpu, st), fl


def print_against_floor(rows: list[tuple], fl: float, count: int) -> None:
    """Each size's wall and CPU time as ratios to ``fl`` (floor per launch, the
    mean of ``count``)."""
    print(f"\nfloor per launch (mean of {count}, this run): {fl * 1e3:.3f} ms")
    for n, wall, rss, cpu, _ in rows:
        target = 0.1 * fl * n
        print(
            f"{n:>9} launches: wall / (floor x launches) = {wall / (fl * n):.3f}, / (0.1 x"
            f" floor x launches) = {wall / target:.2f} (target <= 1); CPU / (floor x"
            f" launches) = {cpu / (fl * n):.3f}; peak RSS / 1 GB = {rss / 2**30:.2f}"
            " (target <= 1)"
        )
        if n == 100_000:
            print(
                f"{n:>9} launches: wall {wall:.2f} s (goal <= 5), peak RSS of the process tree"
                f" {rss / 2**20:.0f} MB (goal <= 500)"
            )


def print_slopes(rows: list[tuple], fixed: float) -> None:
    """The log-log slope of the wall time and of the marginal time between consecutive sizes."""
    print(
        "\nlog-log slope of wall time against launches (1: linear): "
        + ", ".join(
            f"{a[0]}->{b[0]}: {slope(a[0], a[1], b[0], b[1]):.2f}" for a, b in zip(rows, rows[1:])
        )
        + "; of the marginal time: "
        + ", ".join(
            f"{a[0]}->{b[0]}: {slope(a[0], a[1] - fixed, b[0], b[1] - fixed):.2f}"
            for a, b in zip(rows, rows[1:])
        )
    )


if __name__ == "__main__":
    sys.exit(main())
