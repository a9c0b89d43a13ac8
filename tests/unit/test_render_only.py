"""Rendering lives in ncuroof/render and the views that draw their own charts and sections
(ncuroof/views, issue 40, the layer above render): no module outside them imports a rendering
library (plotly, jinja2, markupsafe, html) but for type hints, or spells HTML markup in its
strings; and the figures
draw the model's tables without recomputing them (no kernel_summary or binding_points in
render.figure or render.compare)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "ncuroof"
RENDERING = {"plotly", "jinja2", "markupsafe", "html"}
_MARKUP = re.compile(r"<(?:b|i|br|div|span|table|tr|td|p|a|ol|ul|li|h\d)\b[^>]*>", re.IGNORECASE)


def _outside_render() -> list[Path]:
    drawing = {"render", "views"}
    return [p for p in PACKAGE.rglob("*.py") if not drawing & set(p.relative_to(PACKAGE).parts)]


def _type_only(tree: ast.Module) -> set[int]:
    """Line numbers of the statements under ``if TYPE_CHECKING:``."""
    return {
        n.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        for stmt in node.body
        for n in ast.walk(stmt)
        if hasattr(n, "lineno")
    }


def _imports(tree: ast.Module) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "LazyModule":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.append((node.lineno, arg.value))
    return out


def test_no_rendering_library_outside_render():
    files = _outside_render()
    assert len(files) > 20 and PACKAGE / "runs" / "compare.py" in files
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing = _type_only(tree)
        found += [
            f"{path.relative_to(PACKAGE)}:{line} {name}"
            for line, name in _imports(tree)
            if name.split(".")[0] in RENDERING and line not in typing
        ]
    assert found == []


def test_no_html_markup_outside_render():
    found = []
    for path in _outside_render():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if _MARKUP.search(node.value) and not _is_docstring_like(node.value):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.value[:60]!r}")
    assert found == []


def _is_docstring_like(text: str) -> bool:
    """Prose that names a placeholder such as ``<table metric>``, not markup: inside
    double backticks."""
    return all("``" in text[: m.start()] for m in _MARKUP.finditer(text))


def test_the_checks_see_markup_and_imports():
    """The checks above can fail: they find a plotly import and a tag in a module's text."""
    tree = ast.parse("import plotly.graph_objects as go\nx = '<b>name</b>'\n")
    assert _imports(tree) == [(1, "plotly.graph_objects")] and not _type_only(tree)
    assert _MARKUP.search("<b>name</b>") and not _is_docstring_like("<b>name</b>")


def test_figures_do_not_recompute_the_model():
    """render.figure and render.compare import no kernel_summary, binding_points or classify."""
    for name in ("figure.py", "compare.py"):
        tree = ast.parse((PACKAGE / "render" / name).read_text(encoding="utf-8"))
        imported = {
            a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names
        }
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"kernel_summary", "binding_points", "classify"}, name
        assert "model.classify" not in modules, name
