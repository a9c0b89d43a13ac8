"""Every file an analyze run writes is listed in its manifest and declared in
ncuroof/schema.py (issue 31).

A table is declared as ``TABLES[name]`` (a column dictionary of :mod:`ncuroof.schema`) and
written as ``<name>.csv`` and/or ``<name>.parquet``; any other file is a key of
:data:`ncuroof.schema.FILES`. The Parquet files are read back with pyarrow and compared with the CSV
read by pandas: the same values.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ncuroof import schema
from ncuroof.output.folder import write_outputs
from ncuroof.output.tables import FORMATS, table_files
from ncuroof.parser.saved import MANIFEST, TABLES, read_table
from tests.helpers.reports import needs_ncu_report, shared

CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"  # NVTX ranges and instruction counters
#: The tables this run must write: the always-written ones, the four views its options ask for,
#: and the PM samples and their phases (the report was sampled, issue 51).
VIEWS = {
    "launches",
    "kernels",
    "points",
    "phases",
    "instruction_points",
    "whatif",
    "roofs",
    "samples",
    "sample_phases",
}


def _text(value: object) -> str:
    import pandas as pd

    return "" if pd.isna(value) else str(value)


def _declared_tables() -> dict[str, dict]:
    """The table names whose columns are one of schema.py's declarations (the same object)."""
    decls = [
        v
        for v in vars(schema).values()
        if isinstance(v, dict) and v and all(isinstance(c, schema.Column) for c in v.values())
    ]
    return {name: cols for name, cols in TABLES.items() if any(cols is d for d in decls)}


def _check_declared(out: Path, formats: set[str]) -> dict[str, set[str]]:
    """Assert the folder holds exactly its manifest's files (and the manifest), each declared; the
    tables by suffix."""
    listed = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"]
    assert sorted(p.name for p in out.iterdir()) == sorted([*listed, MANIFEST])
    tables = _declared_tables()
    found: dict[str, set[str]] = {}
    for name in listed:
        stem, _, suffix = name.rpartition(".")
        if suffix in FORMATS and stem in tables:
            found.setdefault(suffix, set()).add(stem)
        else:
            assert name in schema.FILES, (
                f"{name} is written but declared neither as a table nor in schema.FILES"
            )
    assert MANIFEST in schema.FILES
    assert set(found) == formats
    return found


@needs_ncu_report
def test_every_file_of_an_analyze_run_is_in_the_manifest_and_declared(tmp_path) -> None:
    import pandas as pd
    import pyarrow.parquet as pq

    import ncuroof

    out = tmp_path / "out"
    ncuroof.analyze(
        shared(CUTLASS),
        out,
        group_by="nvtx",
        what_if="h100-sxm",
        roofs=True,
        formats=("csv", "parquet"),
    )
    found = _check_declared(out, {"csv", "parquet"})
    assert found["csv"] == found["parquet"] == VIEWS
    # roofs.csv holds each launch's roofs of launches.csv, one row per (launch, kind, roof).
    roofs, kernels = pd.read_csv(out / "roofs.csv"), pd.read_csv(out / "launches.csv")
    fp32 = roofs[(roofs["kind"] == "peak") & (roofs["roof"] == "fp32")].set_index("launch_id")
    dram = roofs[(roofs["kind"] == "peak") & (roofs["roof"] == "dram")].set_index("launch_id")
    k = kernels.set_index("launch_id")
    assert len(fp32) == len(dram) == len(k) > 0
    assert (fp32["flop_per_s"] == k.loc[fp32.index, "peak_fp32_flop_per_s"]).all()
    assert (dram["bytes_per_s"] == k.loc[dram.index, "peak_dram_bytes_per_s"]).all()
    for name in VIEWS:
        t = pq.read_table(out / f"{name}.parquet")
        meta = t.schema.metadata
        assert (
            meta[b"ncuroof.table"].decode() == name
            and int(meta[b"ncuroof.schema_version"]) == schema.SCHEMA_VERSION
        )
        declared = TABLES[name]
        assert list(t.column_names[: len(declared)]) == list(declared)
        assert all(
            t.schema.field(c).metadata[b"unit"].decode() == col.unit for c, col in declared.items()
        )
        from_csv, from_parquet = pd.read_csv(out / f"{name}.csv"), t.to_pandas()
        assert len(from_csv) == len(from_parquet) > 0
        for c in (
            from_csv.columns
        ):  # the same values through two readers (text read as text, numbers as numbers)
            a, b = from_csv[c], from_parquet[c]
            if pd.api.types.is_numeric_dtype(b) and not pd.api.types.is_bool_dtype(b):
                pd.testing.assert_series_equal(
                    a.astype(float), b.astype(float), check_exact=True, check_names=False
                )
            else:
                assert [_text(v) for v in a] == [_text(v) for v in b], (name, c)


@needs_ncu_report
def test_format_parquet_alone_writes_no_csv_table(tmp_path) -> None:
    import ncuroof

    out = tmp_path / "out"
    ncuroof.analyze(shared(CUTLASS), out, group_by="nvtx", what_if="h100-sxm", formats=("parquet",))
    assert _check_declared(out, {"parquet"})["parquet"] == VIEWS - {"roofs"}  # roofs: asked for
    assert not list(out.glob("*.csv"))


def test_every_table_is_declared_in_schema() -> None:
    assert set(_declared_tables()) == set(TABLES)
    assert {"phases", "instruction_points", "whatif", "compare"} <= set(TABLES)


@pytest.mark.parametrize("name", sorted(TABLES))
def test_declared_columns_carry_a_unit_where_the_name_says_one(name: str) -> None:
    """A column named ``..._s``, ``..._bytes``, ``..._flop``, ``..._flop_per_s`` is declared in
    s, B, FLOP, FLOP/s."""
    units = (
        ("_flop_per_s", "FLOP/s"),
        ("_bytes_per_s", "B/s"),
        ("_s", "s"),
        ("_bytes", "B"),
        ("_flop", "FLOP"),
    )
    for c, col in TABLES[name].items():
        unit = next((u for suffix, u in units if c.endswith(suffix)), None)
        if unit is not None and not (
            c.endswith("_per_s") and unit == "s"
        ):  # sector/s, inst/s: their own units
            assert col.unit == unit, (name, c, col.unit)


def _rows(columns: dict) -> object:
    """Two rows of a declared table: one with a value of each column's dtype, one with each missing
    (a list column's cell a list, as the model holds it)."""
    import numpy as np
    import pandas as pd

    full = {"float64": 1.25e-3, "int64": 7, "Int64": 7, "bool": True, "string": 'a,b "q"'}
    empty = {"float64": np.nan, "int64": 0, "Int64": pd.NA, "bool": False, "string": None}
    data = {}
    for name, col in columns.items():
        first = full.get(col.dtype, "x")
        if name == "flags":  # list cells as the model holds them; their text is the writer's
            first = [("code", "its text")]
        elif name == "notes":
            first = ["one", "two"]
        elif name in schema.SOURCE_COLUMNS:  # roof sets in memory
            first = (("fp32", "report"), ("dram", "datasheet"))
        data[name] = pd.Series([first, empty.get(col.dtype)], dtype=col.dtype)
    return pd.DataFrame(data)


@pytest.mark.parametrize("name", sorted(schema.TABLES))
def test_every_table_round_trips_as_csv_and_parquet_with_its_declared_schema(
    tmp_path, name: str
) -> None:
    """Each declared table (every product of analyze, compare and trail) written through
    table_files in both formats and read back: the declared columns in order, with their
    dtypes and units, and the same values from either file."""
    import pandas as pd

    columns = schema.TABLES[name]
    df = _rows(columns)
    files = table_files({name: df}, ("csv", "parquet"), [tmp_path / "in.ncu-rep"])
    assert set(files) == {f"{name}.csv", f"{name}.parquet"}
    write_outputs(tmp_path / "out", files, [])
    back = {fmt: read_table(tmp_path / "out" / f"{name}.{fmt}") for fmt in ("csv", "parquet")}
    dtypes = {c: str(pd.Series([], dtype=col.dtype).dtype) for c, col in columns.items()}
    if name in ("launches", "points"):  # their repeated texts read back as validate_* holds them
        dtypes.update((c, "category") for c in schema.COMPACT_TEXT if c in columns)
    want = [[_cell(v) for v in schema.from_text(df)[c]] for c in columns]
    for fmt, t in back.items():
        assert list(t.columns) == list(columns), fmt
        assert {c: str(t[c].dtype) for c in t.columns} == dtypes, fmt
        assert [[_cell(v) for v in t[c]] for c in columns] == want, fmt
    parquet = back["parquet"]
    assert parquet.attrs["inputs"] == [str(tmp_path / "in.ncu-rep")]
    assert parquet.attrs["units"] == {c: col.unit for c, col in columns.items()}


def _cell(v: object) -> object:
    """A cell compared across readers: every missing value one None."""
    import pandas as pd

    return v if isinstance(v, list) or not pd.isna(v) else None


def test_every_view_is_a_declared_table() -> None:
    """The registry's views are the tables of schema.TABLES but compare's three (two runs, a
    series of runs, two traces), once each, with the same declared columns."""
    from ncuroof import views

    names = [v.name for v in views.REGISTRY]
    assert len(names) == len(set(names))
    assert set(names) == set(schema.TABLES) - {"compare", "trail", "trace_compare"}
    assert all(v.columns is schema.TABLES[v.name] for v in views.REGISTRY)


def _longest_view(views):
    """A view added the way a new one is: its option, table, builder, section and header line."""
    columns = {
        "kernel_key": schema.Column("string", "", "kernel"),
        "time_s": schema.LAUNCHES["time_s"],
    }
    option = views.Option("longest", "The N longest kernels (longest.csv).", int | None)

    def build(a, req):
        n = req["longest"]
        return a.summary[["kernel_key", "time_s"]].head(n) if n else None

    def section(t, a):
        return f'<section id="longest">{len(t)} longest</section>'

    return views.View(
        "longest",
        columns,
        build,
        option=option,
        section=section,
        meta=lambda t: {"longest": t["kernel_key"].iloc[0]},
        lines=lambda t, a: [f"longest: {t['kernel_key'].iloc[0]}"],
    )


@pytest.mark.slow  # analyze runs of a real report
@needs_ncu_report
def test_a_new_view_is_one_module_and_one_registry_line(tmp_path, monkeypatch) -> None:
    """A view added to the registry (nothing else) is an option of analyze on the command line,
    a keyword of ncuroof.analyze and a parameter of the MCP analyze tool; its table is built,
    written in both formats, listed in the manifest, in the --json document and its schema; its
    section and header line are on the page and its line in the terminal summary."""
    import html

    import pandas as pd
    from click.testing import CliRunner

    import ncuroof
    from ncuroof import views
    from ncuroof.cli import analyze as analyze_cli

    monkeypatch.setattr(views, "REGISTRY", (*views.REGISTRY, _longest_view(views)))
    out = tmp_path / "out"
    res = ncuroof.analyze(shared(CUTLASS), out, formats=("csv", "parquet"), longest=1)
    top = res.analysis.summary.iloc[0]
    back = read_table(out / "longest.parquet")
    assert back["kernel_key"].tolist() == [top["kernel_key"]]
    assert back["time_s"].tolist() == [top["time_s"]] and back.attrs["units"]["time_s"] == "s"
    assert pd.read_csv(out / "longest.csv")["time_s"].tolist() == [top["time_s"]]
    assert res.longest is res.tables["longest"]
    page = (out / "roofline.html").read_text(encoding="utf-8")
    assert '<section id="longest">1 longest</section>' in page
    assert f"<li><b>longest</b>: {html.escape(top['kernel_key'])}</li>" in page
    assert "longest.csv" in json.loads((out / MANIFEST).read_text())["files"]
    schema_doc = json.loads(views.schema_text("analyze"))
    assert "longest" in schema_doc["properties"]["products"]["properties"]
    # the command line: --longest 2 writes two rows and prints the view's line
    cmd = analyze_cli.make_command()
    run = CliRunner().invoke(
        cmd,
        [str(shared(CUTLASS)), "-o", str(tmp_path / "cli"), "--longest", "2"],
        env={"COLUMNS": "2000"},
    )
    assert run.exit_code == 0, run.output
    assert len(pd.read_csv(tmp_path / "cli" / "longest.csv")) == 2
    assert f"longest: {top['kernel_key'][:60]}" in run.output  # the rest wraps
    doc = json.loads(
        CliRunner()
        .invoke(cmd, [str(shared(CUTLASS)), "-o", str(tmp_path / "j"), "--longest", "1", "--json"])
        .stdout
    )
    assert doc["products"]["longest"][0]["kernel_key"] == top["kernel_key"]
    # a name that is no option stays refused
    with pytest.raises(TypeError, match="longst"):
        ncuroof.analyze(shared(CUTLASS), write=False, longst=1)


def test_a_new_view_is_a_parameter_of_the_mcp_analyze_tool(monkeypatch) -> None:
    """The MCP analyze tool's parameters are generated from the registry: a view added there is
    one, with its description; the analysis options and every view option are there."""
    pytest.importorskip("mcp")
    from ncuroof import mcp_server, views
    from ncuroof.views.options import ANALYSIS

    monkeypatch.setattr(views, "REGISTRY", (*views.REGISTRY, _longest_view(views)))
    params = {p.name: p for p in mcp_server._own_parameters("analyze")}
    params |= {p.name: p for p in mcp_server._option_parameters()}
    assert "longest" in params
    names = {o.name for o in (*ANALYSIS, *views.view_options())}
    assert names <= set(params)
    assert {"what_if", "group_by", "roofs", "ranks", "fp32_matmul"} <= set(params)


def test_analysis_options_are_declared_once_for_every_field() -> None:
    """The declarations of views.options.ANALYSIS are the fields of AnalysisOptions, one each, with
    the same defaults (what the CLI, the API and MCP are generated from)."""
    import dataclasses

    from ncuroof.model.analysis import AnalysisOptions
    from ncuroof.views.options import ANALYSIS

    fields = {f.name: f.default for f in dataclasses.fields(AnalysisOptions)}
    assert sorted(o.name for o in ANALYSIS) == sorted(fields)
    for o in ANALYSIS:
        assert o.value(None) == fields[o.name], o.name


def test_the_mcp_session_serves_every_view_option() -> None:
    """Issue 40: the MCP analyze tool takes the view options the CLI takes; the document's products
    equal the API's tables of the same options (a second path)."""
    import ncuroof
    from ncuroof.mcp_server import Session
    from tests.helpers.reports import fixture_path

    path = fixture_path(CUTLASS)
    if path is None:
        pytest.skip(f"{CUTLASS} is in neither fixtures/third_party nor ../shared")
    doc = Session().analyze(str(path), what_if="h100-sxm", group_by="nvtx")
    res = ncuroof.analyze(path, write=False, what_if="h100-sxm", group_by="nvtx")
    for name in ("whatif", "phases"):
        rows = doc["products"][name]
        assert len(rows) == len(res.tables[name]) > 0, name
    labels = [r["kernel_label"] for r in doc["products"]["whatif"]]
    assert labels == res.whatif["kernel_label"].tolist()
    with pytest.raises(ValueError, match="nvtx"):
        Session().analyze(str(path), group_by="by-stream")


def test_group_by_nvtx_prints_its_phases() -> None:
    """Issue 54: ``--group-by nvtx`` wrote phases.csv and printed nothing; the terminal lines now
    name the largest phases with the table's own time, share and saving (the time summed by hand
    from the launches of each phase)."""
    import ncuroof
    from tests.helpers.reports import fixture_path

    path = fixture_path(CUTLASS)
    if path is None:
        pytest.skip(f"{CUTLASS} is in neither fixtures/third_party nor ../shared")
    res = ncuroof.analyze(path, write=False, group_by="nvtx")
    phases, launches = res.tables["phases"], res.launches
    lines = [line for line in res.view_lines[1] if line.startswith("phase ")]
    assert len(lines) == min(len(phases), 5) > 0
    total = launches["time_s"].sum()
    for line, r in zip(lines, phases.sort_values("time_s", ascending=False).itertuples()):
        by_hand = launches.loc[launches["nvtx_range"].astype(str).str.startswith(r.phase), "time_s"]
        assert r.time_s == pytest.approx(by_hand.sum(), rel=1e-12)
        assert line.startswith(f"phase {r.phase}: ")
        assert f"({100 * r.time_s / total:.1f}% of the time)" in line
        assert f"{r.bound} bound" in line
