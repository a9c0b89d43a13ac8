"""Every example the user docs print is what the command prints (issue 54 item 9).

A ``console`` block of README.md or docs/*.md is a session: ``$ ncuroof ...`` lines are commands,
the lines under one are what it prints (``...`` leaves lines out). Each command runs on the
repository's own inputs (``fixtures/``, embedded: no ``../shared``) in a scratch folder at 120
columns; each printed line of the docs must be in its output, read with the terminal's wrapping and
table rules undone (runs of spaces, line breaks and box-drawing characters are one space).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^[ \t]*```console\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


def _sessions() -> list[tuple[str, str, list[str]]]:
    """(page, command, the lines the docs say it prints) of every console block."""
    out: list[tuple[str, str, list[str]]] = []
    for page in PAGES:
        for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in (raw.strip() for raw in block.splitlines()):
                if line.startswith("$ "):
                    out.append((page.name, line[2:].strip(), []))
                elif line and line != "..." and out:
                    out[-1][2].append(line)
    return out


def _flat(text: str) -> str:
    """``text`` with the terminal's line wrapping and table rules undone."""
    return " ".join(re.sub(r"[│┃┆┊|]", " ", text).split())


SESSIONS = _sessions()


def test_the_docs_have_examples_to_check():
    pages = {page for page, _, _ in SESSIONS}
    assert {"analyze.md", "compare.md", "timelines.md", "diagnosis.md", "inputs.md"} <= pages
    assert all(cmd.startswith("ncuroof ") and printed for _, cmd, printed in SESSIONS)


@pytest.mark.parametrize(("page", "command", "printed"), SESSIONS, ids=[s[1] for s in SESSIONS])
def test_a_docs_example_prints_what_the_docs_say(tmp_path, page, command, printed):
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}
    run = subprocess.run(
        [sys.executable, "-m", "ncuroof", *shlex.split(command)[1:]],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    said = _flat(run.stdout + "\n" + run.stderr)
    missing = [line for line in printed if _flat(line) not in said]
    assert run.returncode == 0 and not missing, (
        f"{page}: `{command}` (exit {run.returncode}) does not print {missing}:\n"
        f"{run.stdout}{run.stderr}"
    )
