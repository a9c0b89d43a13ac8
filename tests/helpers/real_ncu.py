"""The real-ncu tier: NVIDIA's ncu binaries unpacked by scripts/real-ncu, and what they are asked.

The binaries (Debian's non-free nsight-compute 2022.3 and 2024.1) run without a GPU: option
parsing, --help, --list-*, --query-metrics --chips, --import --csv. Tests marked ``real_ncu`` use
them and skip with the reason when scripts/real-ncu has not run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

#: Where scripts/real-ncu unpacks (the same default and variable as the script).
CACHE = Path(os.environ.get("NCUROOF_REAL_NCU", Path.home() / ".cache" / "ncuroof" / "real-ncu"))
RECORDED = Path(__file__).resolve().parents[1] / "integration" / "fake_ncu" / "recorded"

#: Ways a command line fails without a GPU, each as ncu's arguments. The stand-in replays ncu's
#: answer to each, with the option, value and program put in place of the ones below.
PROBES: dict[str, list[str]] = {
    "unknown_option": ["--ncuroof-no-such-option", "/bin/true"],
    "invalid_choice": ["--cache-control", "ncuroof-bad", "/bin/true"],
    "invalid_value": ["--launch-count", "ncuroof-bad", "/bin/true"],
    "double_dash": ["--", "/bin/true"],
    "missing_program": ["/nonexistent/ncuroof-app"],
    "no_driver": ["/bin/true"],
    "unwritable_report": ["-o", "/proc/ncuroof-probe/x", "/bin/true"],
}


def real_ncus() -> list[tuple[str, Path]]:
    """(major.minor, path) of every ncu scripts/real-ncu unpacked, oldest first."""
    if not CACHE.is_dir():
        return []
    found = [(d.name, d / "usr" / "bin" / "ncu") for d in CACHE.iterdir()]
    return sorted(((v, p) for v, p in found if os.access(p, os.X_OK)), key=lambda vp: vp[0])


def record_probe(ncu: Path, args: list[str]) -> dict:
    """ncu's stdout, stderr and exit code for ``args`` (HOME as the caller set it)."""
    out = subprocess.run(
        [str(ncu), *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd="/",
    )
    return {"stdout": _steady(out.stdout), "stderr": _steady(out.stderr), "rc": out.returncode}


#: A line ncu prints or not depending on timing (ncu 2022.3 without a driver: whether the target
#: process ended before its first CUDA call was instrumented), with a process ID in it.
_TIMING_LINE = re.compile(
    r"^==PROF== Target process \d+ terminated before first instrumented API call\.\n", re.M
)


def _steady(text: str) -> str:
    """``text`` without the lines that vary from run to run (:data:`_TIMING_LINE`)."""
    return _TIMING_LINE.sub("", text)


def recorded(version: str) -> dict:
    """The recording of ncu ``version`` (``2024.1``) kept in tests/."""
    return json.loads((RECORDED / f"ncu-{version}.json").read_text(encoding="utf-8"))
