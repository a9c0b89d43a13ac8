#!/usr/bin/env python3
"""Benchmark: ``ncuroof analyze`` at 1,000, 10,000 and 100,000 launches, against the ncu_report floor.

Inputs are made at run time by ``scripts/make_big_report.py`` from a shared ``--set roofline``
report (default ESMM-Research__profile_output.ncu-rep) in a temporary directory, deleted at the
end. For each size it prints the wall time of ``ncuroof analyze`` end to end (a subprocess), the
peak resident memory of its process tree (sampled from /proc every 20 ms, and the kernel's
ru_maxrss of the process), and, at 1,000 and 10,000 launches, the ncu_report floor: the time of
reading, through ncu_report alone, exactly the metrics ncuroof reads (``bench_analyze.floor``),
in a subprocess of its own. Targets (issue 12, 2 cores): 100,000 launches end to end in at most
0.1 x floor per launch x launches, with peak RSS at most 1 GB; time per launch flat. The fixed
cost of one run (starting Python, importing, writing a page: ``analyze`` of the source report
itself) is measured too, and the time per launch is also given without it (``marginal``). The
``verify`` column is the part of the wall time that ``--reader auto`` spends checking the decoder
against ncu_report on a sample of launches (``ncuroof.parser.verify``), measured alone.

    .venv/bin/python scripts/bench_scale.py [--report R] [--sizes 1000 10000 100000] [--profile]

``--profile`` adds the wall time of each stage of analyze at the largest size (``scripts/stage_times.py``).

Compressed reports (issue 32): each generated report is also compressed as ncu 2026.3 writes a
``.ncu-repz`` (zstd level 3 of the same bytes, one frame) and analyzed the same way; its wall time and
peak RSS are printed as ratios to the uncompressed report's in the same run (targets: time <= 1.3x,
peak RSS <= 1 GB). ``--no-repz`` skips it.
"""

from __future__ import annotations

import argparse
import os
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
# The sample check of --reader auto alone (issue 20): cut the sampled launches out, read them through ncu_report.
VERIFY = ("import sys, time; from pathlib import Path; from ncuroof import catalog; from ncuroof.parser import nvr, verify; "
          "c = catalog.load(); p = Path(sys.argv[1]); df = nvr.read_nvr(p, c); t = time.perf_counter(); "
          "v = verify.against_ncu_report(p, df, c, df.attrs[nvr.LEARNED]); print(v.launches, time.perf_counter() - t, repr(v.difference))")
FLOOR = ("import sys, time; sys.path.insert(0, sys.argv[2]); from bench_analyze import floor; "
         "t = time.perf_counter(); n = floor(__import__('pathlib').Path(sys.argv[1])); print(n, time.perf_counter() - t)")
#: CPU seconds (user + system) of the last :func:`run_measured` command: a steadier measure than wall time on a shared machine.
CPU = [0.0]


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


def run_measured(cmd: list[str]) -> tuple[float, int, str]:
    """Run ``cmd``: wall seconds, peak RSS of its process tree in bytes, stdout."""
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
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    sampler.join()
    out, err = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    CPU[0] = usage.ru_utime + usage.ru_stime  # the process and the children it waited for (the decoding workers)
    return wall, max(peak[0], usage.ru_maxrss * 1024), out


def floor_per_launch(report: Path, launches: int) -> float:
    """Seconds per launch of reading the metrics ncuroof reads through ncu_report alone."""
    _, _, out = run_measured([sys.executable, "-c", FLOOR, str(report), str(Path(__file__).parent)])
    n, seconds = out.split()
    if int(n) != launches:
        raise SystemExit(f"ncu_report read {n} launches of {report}, expected {launches}")
    return float(seconds) / launches


def verify_cost(report: Path) -> tuple[int, float]:
    """(launches compared, seconds) of the sample check against ncu_report, which must agree."""
    _, _, out = run_measured([sys.executable, "-c", VERIFY, str(report)])
    n, seconds, difference = out.split(maxsplit=2)
    if difference.strip() != "''":
        raise SystemExit(f"the decoder differs from ncu_report on {report}: {difference}")
    return int(n), float(seconds)


def compress(src: Path, dst: Path) -> None:
    """``src`` as ncu writes a ``.ncu-repz``: zstd (level 3) of the same bytes, streamed (one frame with its size)."""
    import zstandard

    with src.open("rb") as f, dst.open("wb") as g:
        zstandard.ZstdCompressor(level=3).copy_stream(f, g, size=src.stat().st_size)


def repz_row(big: Path, tmp: Path, wall: float, rss: int) -> str:
    """Analyze the ``.ncu-repz`` of ``big``: its time and peak RSS, and their ratios to the uncompressed run's."""
    cpu = CPU[0]
    packed = big.with_suffix(".ncu-repz")
    compress(big, packed)
    zwall, zrss, _ = run_measured([sys.executable, "-m", "ncuroof", "analyze", str(packed), "-o", str(tmp / "outz"), "-q"])
    size = packed.stat().st_size
    packed.unlink()
    return (f"  .ncu-repz {size / 1e6:.1f} MB ({big.stat().st_size / size:.0f}x smaller): {zwall:.2f} s = {zwall / wall:.2f}x the "
            f"uncompressed wall time, CPU {CPU[0]:.2f} s = {CPU[0] / max(cpu, 1e-9):.2f}x (target <= 1.3); peak RSS "
            f"{zrss / 2**20:.0f} MB = {zrss / max(rss, 1):.2f}x (target <= 1 GB)")


def profile(report: Path, tmp: Path) -> None:
    """Where the time of ``analyze`` goes, stage by stage (``scripts/stage_times.py``: wall clock)."""
    proc = subprocess.run([sys.executable, str(Path(__file__).with_name("stage_times.py")), "analyze", str(report), "-o",
                           str(tmp / "prof.out"), "-q"], env=ENV, capture_output=True, text=True, check=True)
    print(f"\nstages of analyze at {report.name} (wall clock):{proc.stderr}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", type=Path, default=SHARED / "ESMM-Research__profile_output.ncu-rep")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--floor-sizes", type=int, nargs="*", default=[1000, 10000])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--no-repz", action="store_true", help="do not time the .ncu-repz of each report")
    args = ap.parse_args()
    floors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ncuroof-bench-") as d:
        tmp = Path(d)
        print(f"source {args.report.name}; {os.cpu_count()} cores")
        fixed, _, _ = run_measured([sys.executable, "-m", "ncuroof", "analyze", str(args.report), "-o", str(tmp / "out0"), "-q"])
        checked, cost = verify_cost(args.report)
        print(f"fixed cost (analyze of the source report itself): {fixed:.2f} s, of which verify {cost:.2f} s ({checked} launches)")
        print(f"{'launches':>9} {'file MB':>8} {'wall s':>7} {'ms/launch':>9} {'marginal':>9} {'peak RSS MB':>11} {'floor ms/launch':>15} "
              f"{'verify s':>9}")
        rows = []
        for n in args.sizes:
            big = tmp / f"big{n}.ncu-rep"
            make_big_report(args.report, big, n)
            wall, rss, _ = run_measured([sys.executable, "-m", "ncuroof", "analyze", str(big), "-o", str(tmp / "out"), "-q"])
            repz = "" if args.no_repz else repz_row(big, tmp, wall, rss)
            checked, cost = verify_cost(big)
            fl = floor_per_launch(big, n) if n in args.floor_sizes else None
            if fl is not None:
                floors.append(fl)
            rows.append((n, wall, rss))
            print(f"{n:>9} {big.stat().st_size / 1e6:>8.0f} {wall:>7.2f} {wall / n * 1e3:>9.3f} {(wall - fixed) / n * 1e3:>9.3f} {rss / 2**20:>11.0f} "
                  f"{'' if fl is None else f'{fl * 1e3:.3f}':>15} {cost:>6.2f} ({checked})")
            if repz:
                print(repz)
            if n != max(args.sizes) or not args.profile:
                big.unlink()
        if floors:
            fl = sum(floors) / len(floors)
            print(f"\nfloor per launch (mean of {len(floors)}): {fl * 1e3:.3f} ms")
            for n, wall, rss in rows:
                target = 0.1 * fl * n
                print(f"{n:>9} launches: wall / (0.1 x floor x launches) = {wall / target:.2f} (target <= 1); "
                      f"peak RSS / 1 GB = {rss / 2**30:.2f} (target <= 1)")
        if args.profile:
            profile(tmp / f"big{max(args.sizes)}.ncu-rep", tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
