"""What a person reads (issue 42): names that never print alike, plain precision labels, the
Markdown summary, output at the terminal's width, and the notebook and package conveniences."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ncuroof
from ncuroof import catalog, fmt
from ncuroof.errors import OutputError
from ncuroof.render import markdown
from tests.helpers.reports import shared

#: Internal source words that must not reach a reader (issue 42).
INTERNAL = re.compile(r"sass_|legacy_|op_hmma|op_hgmma|src_[a-z0-9]+_dst")


def test_cutlass_and_initialize_names_print_apart() -> None:
    names = [
        "cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<128x96x64_3stage>>",
        "cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<128x128x32_5stage>>",
        "InitializeMatrix_kernel_float_a",
        "InitializeMatrix_kernel_float_b",
    ]
    for width in (16, 20, 30):
        out = fmt.shorten_names(names, width)
        assert len(set(out)) == len(out), out
        assert all(len(s) <= width for s in out)
    out = fmt.shorten_names(names, 30)
    assert "128x96x64" in out[0] and "128x128x32" in out[1]  # the part that tells them apart


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(alphabet="ab<>x_:", min_size=1, max_size=60), min_size=1, unique=True),
    st.integers(8, 40),
)
def test_shortened_names_are_distinct_and_fit(names: list[str], width: int) -> None:
    out = fmt.shorten_names(names, width)
    assert len(out) == len(names)
    assert all(len(s) <= width for s in out)
    assert len(set(out)) == len(out)
    assert [s for s, n in zip(out, names) if len(n) <= width] == [
        n for n in names if len(n) <= width
    ]


@pytest.mark.parametrize(
    ("precision", "label"),
    [
        ("fp32", "FP32"),
        ("tensor:src_bf16_dst_fp32", "BF16 tensor (FP32 accumulate)"),
        ("tensor:op_hmma_src_bf16_dst_fp32", "BF16 tensor (HMMA, FP32 accumulate)"),
        ("tensor:sass_imma", "INT8 tensor (IMMA), estimated"),
        ("tensor:sass_hgmma_bf16", "BF16 tensor (HGMMA), estimated"),
        ("tensor:sass_dmma", "FP64 tensor (DMMA), estimated"),
        ("tensor:src_fp16_bf16_tf32_dst_fp32", "FP16/BF16/TF32 tensor (FP32 accumulate)"),
        ("tensor:src_bf16_dst_fp32_sparsity_on", "BF16 tensor (FP32 accumulate, sparse)"),
        ("tensor:legacy_x512", "FP16 tensor (HMMA, 512 x tensor-pipe instructions), approximate"),
    ],
)
def test_precision_labels_are_plain(precision: str, label: str) -> None:
    assert catalog.precision_title(precision) == label


def test_every_tensor_path_of_the_catalog_has_a_plain_label() -> None:
    paths = {s.path for s in catalog.load().tensor.shapes} | {"legacy_x512"}
    for path in paths:
        title = catalog.precision_title(f"tensor:{path}")
        assert not INTERNAL.search(title) and "tensor" in title.lower(), (path, title)


def test_markdown_cell_escapes_markup_and_controls() -> None:
    cell = fmt.markdown_cell("gemm<float>|x_\x1b[2J")
    assert "|" not in cell.replace("\\|", "") and "\x1b" not in cell
    assert cell == "gemm\\<float\\>\\|x\\_\\\\x1b\\[2J"


def test_kernel_time_never_prints_zero_ns() -> None:
    assert fmt.kernel_time(0.0) == "-" and fmt.kernel_time(1.5e-6) == "1.5 us"


def test_package_dir_lists_the_lazy_api() -> None:
    names = dir(ncuroof)
    assert {"load", "points", "analyze", "compare_runs", "plot_roofline"} <= set(names)


def test_markdown_is_not_written_over_a_file_it_did_not_write(tmp_path: Path) -> None:
    theirs = tmp_path / "notes.md"
    theirs.write_text("mine\n")
    with pytest.raises(OutputError, match="not written by ncuroof"):
        markdown.write_markdown(markdown.MARKER + "\nx", theirs)
    assert theirs.read_text() == "mine\n"
    ours = tmp_path / "summary.md"
    markdown.write_markdown(markdown.MARKER + "\none", ours)
    markdown.write_markdown(markdown.MARKER + "\ntwo", ours)  # ours: replaced
    assert ours.read_text().endswith("two\n")


def test_markdown_appends_to_github_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = tmp_path / "step_summary"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    markdown.write_markdown(markdown.MARKER + "\nours", step)
    assert step.read_text() == "earlier step\n" + markdown.MARKER + "\nours\n"


def _run(args: list[str], columns: int, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {"COLUMNS": str(columns), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    return subprocess.run(
        [sys.executable, "-m", "ncuroof", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )


def _table_names(text: str) -> list[str]:
    """The kernel cells of the first column of rich's tables (rows beginning with a name)."""
    return [
        line.split("│")[1].strip()
        for line in text.splitlines()
        if line.startswith("│") and line.split("│")[1].strip()
    ]


@pytest.mark.parametrize("columns", [80, 100])
def test_analyze_fits_the_terminal_with_plain_words(columns: int, tmp_path: Path) -> None:
    report = shared("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep")  # an INT8 IMMA GEMM
    md = tmp_path / "summary.md"
    proc = _run(["analyze", str(report), "-o", "out", "--markdown", str(md)], columns, tmp_path)
    assert proc.returncode == 0, proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert max(map(len, stream.splitlines()), default=0) <= columns
    names = _table_names(proc.stdout)
    assert names and len(set(names)) == len(names)
    assert "INT8 tensor (IMMA), estimated" in md.read_text()
    assert not INTERNAL.search(proc.stdout) and not INTERNAL.search(md.read_text())
    rows = [line for line in md.read_text().splitlines() if line.startswith("|")]
    assert len(rows) >= 3 and len({row.count(" | ") for row in rows}) == 1  # one table, same width


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize(
    "pair",
    [
        ("cs599k__silu-2025-04-18-v1.ncu-rep", "cs599k__silu-2025-04-19-v1.ncu-rep"),
        ("ESMM-Research__metrics.csv", "ESMM-Research__profile_output.ncu-rep"),  # embedded
    ],
)
def test_compare_fits_the_terminal_and_says_the_gate(
    columns: int, pair: tuple[str, str], tmp_path: Path
) -> None:
    before, after = (shared(name) for name in pair)
    proc = _run(
        ["compare", str(before), str(after), "-o", "cmp", "--fail-if-slower", "5"],
        columns,
        tmp_path,
    )
    assert proc.returncode in (0, 1, 2), proc.stderr
    for stream in (proc.stdout, proc.stderr):
        assert max(map(len, stream.splitlines()), default=0) <= columns
    page = (tmp_path / "cmp" / "compare.html").read_text()
    assert not re.search(r"at --fail-if-slower 5: ?<", page)  # something after the colon


def test_a_report_without_roofline_metrics_gets_the_speed_of_light_chart(tmp_path: Path) -> None:
    """ncu's SpeedOfLight view stands in for an empty roofline: a dot per kernel at the
    throughputs ncu stored (the accelsim details export: SM 15.01 %, memory 44.98 %)."""
    export = shared("accelsim-test__algo23_details.csv")
    res = ncuroof.analyze(export, tmp_path / "out", progress=False)
    assert len(res.points) == 0
    fig = ncuroof.api._page(res.analysis, {"launches": res.launches}, "cdn")[0]
    dots = [t for t in fig.data if (t.meta or {}).get("role") == "sol_dot"]
    assert [(round(t.x[0], 2), round(t.y[0], 2)) for t in dots] == [(44.98, 15.01)]
    lines = [t for t in fig.data if (t.meta or {}).get("role") == "sol_threshold"]
    assert sorted(tuple(t.x) for t in lines) == [(0, 100), (60, 60)]
    assert fig.layout.meta["view"]["state"]["chart"] == "speed_of_light"
    assert (
        "SOLBottleneck"
        in fig.layout.meta["view"]["layouts"]["chart"]["speed_of_light"]["title.text"]
    )


def test_an_embedded_export_without_flops_gets_the_speed_of_light_chart(tmp_path: Path) -> None:
    """The same chart from the repository's own inputs (runs without ../shared): the llm-perf-opt
    details export has no FLOPs (its counters are n/a) and its SpeedOfLight section says Compute
    (SM) Throughput 9.15 %; a copy given the section's Memory Throughput label too (27.5 %, the
    label ncu writes beside it) puts its one dot at (27.5, 9.15)."""
    from tests.helpers.reports import details_copy

    export = details_copy(
        "llm-perf-opt__kernel_0001_ncu.metrics.csv",
        tmp_path / "sol.csv",
        [("GPU Speed Of Light Throughput", "Memory Throughput", "%", "27.5")],
    )
    res = ncuroof.analyze(export, tmp_path / "out", progress=False)
    assert len(res.points) == 0 and res.launches["memory_throughput_frac"].tolist() == [0.275]
    assert res.launches["sm_throughput_frac"].tolist() == [0.0915]  # the file's own label
    fig = ncuroof.api._page(res.analysis, {"launches": res.launches}, "cdn")[0]
    dots = [t for t in fig.data if (t.meta or {}).get("role") == "sol_dot"]
    assert [(t.x[0], t.y[0]) for t in dots] == [pytest.approx((27.5, 9.15))]
    assert fig.layout.meta["view"]["state"]["chart"] == "speed_of_light"


def test_a_folder_named_ncuroof_beside_a_script_is_not_imported(tmp_path: Path) -> None:
    """A script next to a clone folder called ncuroof imports the installed package (src/ layout),
    not the folder as a namespace package."""
    (tmp_path / "ncuroof").mkdir()
    (tmp_path / "s.py").write_text(
        "import ncuroof\nprint(ncuroof.__file__, callable(ncuroof.load))\n"
    )
    proc = subprocess.run(
        [sys.executable, "s.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    where, loads = proc.stdout.split()
    assert Path(where).name == "__init__.py" and str(tmp_path) not in where and loads == "True"


def test_list_gpus_names_every_datasheet_id_the_options_take() -> None:
    """``ncuroof list-gpus`` (the command the unknown-GPU messages name) lists every id of
    metrics/gpus.toml, read here with tomllib, once, in the file's order, each with its DRAM
    bandwidth from the file."""
    from click.testing import CliRunner

    from ncuroof.cli import cli

    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    repo = Path(__file__).resolve().parents[2]
    data = tomllib.loads((repo / "metrics" / "gpus.toml").read_text(encoding="utf-8"))
    ids = [g["id"] for g in data["gpu"]]
    run = CliRunner().invoke(cli, ["list-gpus"])
    assert run.exit_code == 0, run.output
    lines = run.output.splitlines()
    assert [line.split()[0] for line in lines] == ids
    for g, line in zip(data["gpu"], lines, strict=True):
        assert f"DRAM {fmt.si(g['dram_gbps'] * 1e9, 'B/s')}" in line


@pytest.mark.parametrize(
    "argv,hint",
    [
        (
            ["analyze", "x.csv", "--fial-if-slower", "3"],
            "--fail-if-slower is an option of ncuroof compare",
        ),
        (["analyze", "x.csv", "--zzzqqq"], None),
    ],
)
def test_an_option_of_another_command_is_named(capsys, argv, hint) -> None:
    """Issue 54 item 5: ``analyze --fial-if-slower`` says which command has ``--fail-if-slower``
    (click suggests only the command's own options); nothing close, nothing said; exit 2."""
    from ncuroof.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "No such option" in err
    assert (hint in err) if hint else ("another command" not in err)


@pytest.mark.parametrize(
    "name",
    [
        "cs599k__2025-04-21-vector-based.ncu-rep",
        # embedded (runs without ../shared): the CUTLASS INT8 report has both flags, on two kernels
        "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep",
    ],
)
def test_the_terminal_says_flags_in_sentences_not_codes(name: str) -> None:
    """Issue 50 class 10: "check: levels_out_of_order: see notes" and "fp16_moves" on the
    terminal. The SiLU report's kernel has both flags (L2 under DRAM with the ncu read-only
    definition; FP16 FLOPs that are HFMA2.MMA moves): its check line says them in words."""
    from ncuroof.render import text
    from ncuroof.schema import NOTE_CODES

    result = ncuroof.analyze(shared(name))
    lines = [line for line in text._findings(result) if ": check: " in line]
    assert lines, "the kernel's flags are on the terminal"
    said = " ".join(lines)
    assert "fewer bytes than the level under it" in said and "register moves" in said
    codes = {*NOTE_CODES, "levels_out_of_order", "fp16_moves", "l2_reads_only"}
    assert not any(code in said for code in codes), said


def test_explain_names_one_kernel_with_the_tables_numbers(tmp_path) -> None:
    """``ncuroof explain REPORT -k NAME`` (issue 54): the kernel's launches, time and share, bound,
    roof fraction and saving as kernels.csv has them, its evidence and advice; --json is the MCP
    explain document; an unknown kernel is one line, exit 2, naming the kernels there are."""
    import json

    import pandas as pd

    from tests.helpers.cli import run
    from tests.helpers.reports import shared

    report = shared("ESMM-Research__profile_output.ncu-rep")
    assert run("analyze", str(report), "-q", "-o", str(tmp_path / "o")).returncode == 0
    row = pd.read_csv(tmp_path / "o" / "kernels.csv").set_index("kernel_name").loc["warptiling"]
    out = run("explain", str(report), "-k", "warptiling")
    assert out.returncode == 0, out.stderr
    head = out.stdout.splitlines()[0]
    assert (
        head.startswith("warptiling: 1 launch,")
        and f"({row['time_share']:.0%} of the time)" in head
    )
    assert f"{row['roof_fraction']:.0%} of the roof" in out.stdout
    assert f"diagnosis: {row['diagnosis']}" in out.stdout and "advice: " in out.stdout
    doc = json.loads(run("explain", str(report), "-k", "warptiling", "--json").stdout)
    assert doc["schema"] == "ncuroof.explain" and doc["kernel"]["kernel_name"] == "warptiling"
    assert doc["kernel"]["time_s"] == pytest.approx(row["time_s"], rel=1e-12)
    bad = run("explain", str(report), "-k", "nope")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "no kernel 'nope'" in bad.stderr and "warptiling" in bad.stderr


def test_a_timeline_of_another_program_prints_no_zero_times(tmp_path) -> None:
    """``--timeline`` of another run (issue 54: the BERT trace beside the ESMM report): no kernel
    of the report ran in it, so its time, share, time at the roof and saving are '-' (none
    known), never '0 ns' or '0.0%'."""
    from tests.helpers.cli import run
    from tests.helpers.reports import shared

    out = run(
        "analyze",
        str(shared("ESMM-Research__profile_output.ncu-rep")),
        "--timeline",
        str(shared("tracelens__bert-small-uncased_h100.json.gz")),
        "-o",
        str(tmp_path / "o"),
    )
    assert out.returncode == 0, out.stderr
    rows = [
        line for line in out.stdout.splitlines() if "blocktiling" in line or "warptiling" in line
    ]
    table = [r for r in rows if r.startswith("│")]
    assert len(table) == 4
    for row in table:
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells[2:4] == ["-", "-"] and cells[-2:] == ["-", "-"], row
    assert "0 ns" not in out.stdout


@pytest.mark.parametrize("width", [80, 100])
def test_narrow_terminals_keep_the_columns_that_matter_and_say_what_they_hid(width) -> None:
    """At 80 and 100 columns (issue 54): analyze keeps name, share, diagnosis, % of roof and
    saving, compare keeps change and movement; each table names in a line under it what it left
    out and how to see it."""
    import ncuroof
    from ncuroof.render import page, text
    from tests.helpers.reports import shared

    report = shared("ESMM-Research__profile_output.ncu-rep")
    a = ncuroof.analyze(report)
    out = page.summary_text(a.summary, width=width)
    header = next(line for line in out.splitlines() if "kernel" in line and "share" in line)
    for col in ("kernel", "share", "diagnosis", "% of roof", "saving"):
        assert col in header, (width, col)
    flat = " ".join(out.split())
    assert "left out at" in flat and "kernels.csv has every column" in flat
    assert max(len(line) for line in out.splitlines()) <= width
    c = ncuroof.compare_runs(report, shared("ESMM-Research__metrics.csv"))
    ct = text._compare_table(c, 10, width)
    header = next(line for line in ct.splitlines() if "kernel" in line and "status" in line)
    assert "change" in header and "movement" in header
    flat = " ".join(ct.split())
    assert "left out at" in flat and "compare.csv has every column" in flat


def test_verbose_flags_say_what_the_analysis_did() -> None:
    """``-v`` logs what was read and made (INFO), ``-vv`` each stage's time too (DEBUG, issue 54);
    without them stderr has neither."""
    import tempfile

    from tests.helpers.cli import run
    from tests.helpers.reports import shared

    report = str(shared("ESMM-Research__profile_output.ncu-rep"))
    for flags, info, debug in (([], False, False), (["-v"], True, False), (["-vv"], True, True)):
        with tempfile.TemporaryDirectory() as d:
            out = run(*flags, "analyze", report, "-q", "-o", f"{d}/o")
        assert out.returncode == 0, out.stderr
        assert (
            "INFO ncuroof.model.analysis: read 4 launches from 1 input(s)" in out.stderr
        ) == info
        assert (
            "INFO ncuroof.model.analysis: 4 kernels, 4 launches, 12 points" in out.stderr
        ) == info
        assert ("DEBUG ncuroof.model.analysis: read the inputs: " in out.stderr) == debug
