"""The error contract, checked on key words: an error is one line, with no traceback, that names
the file and holds the key words (the file, the option, the value refused, the noun the user acts
on), never a whole sentence, so a message can be reworded without breaking a test."""

from __future__ import annotations

from pathlib import Path

import pytest


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
