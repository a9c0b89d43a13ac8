"""The command line in a subprocess, and the error contract every failure keeps: exit code 2, one
line that names the file, no traceback, no output left behind.

Message checks go through :func:`assert_one_line_error` with key words (the file, the option, the
noun the user acts on), never whole sentences: a message can be reworded without breaking tests.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

NCUROOF = [sys.executable, "-m", "ncuroof"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m ncuroof ARGS`` with its output captured as text (2 minutes at most)."""
    return subprocess.run([*NCUROOF, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def _text(error: object) -> str:
    """The message of an exception, a ``pytest.raises`` ExceptionInfo, or stderr text."""
    if isinstance(error, pytest.ExceptionInfo):
        error = error.value
    return str(error).strip()


def assert_one_line_error(error: object, path: Path | str | None = None, *keywords: str) -> str:
    """Assert ``error`` (an exception, ``pytest.raises``' ExceptionInfo or stderr) is one line with
    no traceback that names ``path`` (when given) and holds each of ``keywords`` (any case); the
    line."""
    text = _text(error)
    lines = text.splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    if path is not None:
        assert str(path) in lines[0], f"{path} not named in: {lines[0]}"
    low = lines[0].lower()
    missing = [k for k in keywords if k.lower() not in low]
    assert not missing, f"{missing} not in: {lines[0]}"
    return lines[0]


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
