"""``ncuroof --help``, ``--version`` and ``list-gpus`` start at once (issue 54): they import no
pandas, numpy or pyarrow (their times are in ``scripts/bench_startup.py``, not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.helpers.reports import REPO

_PROBE = """
import json, sys
from ncuroof.cli import main
sys.argv = ["ncuroof", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
heavy = [m for m in ("pandas", "numpy", "pyarrow", "plotly", "rich") if m in sys.modules]
print(json.dumps(heavy), file=sys.stderr)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["list-gpus"]])
def test_the_quick_commands_import_no_numerics(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.stdout.strip(), proc.stderr
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []


def test_help_lists_every_command_with_its_line() -> None:
    """The top-level help names each command from its table (no command module imported) and
    each name resolves to its command."""
    import click

    from ncuroof.cli import _COMMANDS, cli

    text = subprocess.run(
        [sys.executable, "-m", "ncuroof", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
    ).stdout
    for name in _COMMANDS:
        assert f"  {name} " in text
        assert isinstance(cli.get_command(click.Context(cli), name), click.Command)
