"""Every ``ncuroof.<dotted>`` name the README, the docstrings and comments, the templates, the
page's scripts and the scripts/ name resolves: a module, or an attribute of one (no stale path such
as ``ncuroof.figure`` after a module moved), and every ``from ncuroof... import`` in
scripts/ imports."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Names spelled ``ncuroof.<x>`` that are not Python paths: Parquet key-value metadata keys
#: (ncuroof.output.tables), JSON document schema ids (json_doc) and the decoder's cache key.
NOT_PATHS = {
    "ncuroof.table",
    "ncuroof.schema_version",
    "ncuroof.version",
    "ncuroof.inputs",
    "ncuroof.compare",
    "ncuroof.explain",
    "ncuroof.gpus",
    "ncuroof.learned_launches",
}
_NAME = re.compile(r"(?<![\w/.-])ncuroof(?:\.[A-Za-z_]\w*)+")
_SUFFIXES = {".py", ".md", ".j2", ".js", ".css", ".toml"}


def _files() -> list[Path]:
    tops = [ROOT / "README.md", ROOT / "pyproject.toml", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("src", "scripts"):
        tops += [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in _SUFFIXES]
    return [p for p in tops if p.exists()]


def _resolves(name: str) -> bool:
    """``name`` is a module, or a module's attribute path (a dataclass field counts)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            fields = (
                {f.name for f in dataclasses.fields(obj)}
                if dataclasses.is_dataclass(obj)
                else set()
            )
            if attr in fields:
                return True
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def test_every_dotted_ncuroof_name_resolves():
    files = _files()
    assert any(p.suffix == ".j2" for p in files) and any(p.suffix == ".js" for p in files)
    stale = {}
    for path in files:
        for m in _NAME.finditer(path.read_text(encoding="utf-8")):
            name = m.group(0)
            if name not in NOT_PATHS and not _resolves(name):
                stale.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert stale == {}


def test_the_check_finds_a_stale_path():
    """The check above can fail: an old module path and an attribute that is gone do not resolve."""
    assert not _resolves("ncuroof.figure.plot_roofline") and not _resolves(
        "ncuroof.plot.CUSTOMDATA"
    )
    assert _resolves("ncuroof.render.figure.CUSTOMDATA") and _resolves(
        "ncuroof.render.viewcontract.ViewContract.customdata"
    )


@pytest.mark.parametrize("script", sorted((ROOT / "scripts").glob("*.py")), ids=lambda p: p.name)
def test_scripts_import_what_exists(script):
    """Each ``from ncuroof[.x] import a`` of a script names a module and attributes that exist."""
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ncuroof":
            for alias in node.names:
                assert _resolves(f"{node.module}.{alias.name}"), (
                    script.name,
                    node.module,
                    alias.name,
                )
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ncuroof":
                    assert _resolves(alias.name), (script.name, alias.name)
