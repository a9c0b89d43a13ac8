"""The command line in a subprocess, and the error contract every failure keeps: exit code 2, one
line that names the file, no traceback, no output left behind
(:func:`tests.helpers.errors.assert_one_line_error`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO

NCUROOF = [sys.executable, "-m", "ncuroof"]


def run(
    *args: str, cwd: Path | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m ncuroof ARGS`` of this checkout (also from another ``cwd``), its output captured
    as text (``timeout`` seconds at most)."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [*NCUROOF, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout, env=env
    )


def assert_clean_failure(
    proc: subprocess.CompletedProcess[str],
    path: Path | str | None,
    outdir: Path | None = None,
    *keywords: str,
) -> str:
    """Assert the CLI failed cleanly: exit code 2, one line on stderr naming ``path`` and holding
    ``keywords`` (:func:`assert_one_line_error`), and ``outdir`` not created; the line."""
    assert proc.returncode == 2, proc.stderr
    line = assert_one_line_error(proc.stderr, path, *keywords)
    if outdir is not None:
        assert not outdir.exists()
    return line
