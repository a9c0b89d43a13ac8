"""Hostile input (issue 34): nothing lost, no small file that eats the machine, nothing injected
into a terminal or a spreadsheet, no internal error.

Every input is made here, at test time, from a shared fixture or from a few lines of synthetic
text. Each command runs in a subprocess with a time limit and an address-space cap; the checks:
the exit code, one line on stderr with no traceback, no ESC byte on stdout or stderr, the inputs
unchanged, and the peak RSS of the children (``RUSAGE_CHILDREN``) under 1.5 GB.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import ncuroof
from ncuroof import fmt, schema
from ncuroof.errors import InputError, OutputError
from ncuroof.model.expect import evaluate
from ncuroof.output.folder import write_outputs
from ncuroof.output.tables import arrow_table, csv_safe, dataset_writer, parquet_bytes
from ncuroof.parser import timeline
from ncuroof.parser.saved import MANIFEST, _csv_raw, read_manifest, read_table, saved_launches
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, fixture_path, shared

ESMM = "ESMM-Research__metrics.csv"
ESMM_KERNEL = "basic(int, int, int, const float *, const float *, float *)"
PEAK_RSS = 1.5 * 2**30
# The address-space cap of each child: a runaway input fails there instead of taking the machine.
CAP = 6 * 2**30


@dataclass
class Run:
    code: int
    out: bytes
    err: bytes
    seconds: float

    @property
    def text(self) -> str:
        return self.err.decode("utf-8", "replace")


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def ncuroof_cli(*args: str | Path, cwd: Path, timeout: float = 60) -> Run:
    """``python -m ncuroof ARGS`` in ``cwd``: exit code, stdout, stderr, wall seconds."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "ncuroof", *map(str, args)],
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        preexec_fn=_cap,
        stdin=subprocess.DEVNULL,
    )
    run = Run(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
    assert b"\x1b" not in run.out and b"\x1b" not in run.err, "an escape byte reached the terminal"
    assert b"Traceback" not in run.err, run.text
    assert "internal error" not in run.text, run.text
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 < PEAK_RSS
    return run


def refused(run: Run, *words: str) -> str:
    """Exit 2 with one line on stderr holding ``words``."""
    lines = run.text.strip().splitlines()
    assert run.code == 2 and len(lines) == 1 and lines[0].startswith("ncuroof: error: "), run.text
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def esmm(tmp: Path, name: str = "in.csv", kernel: str | None = None) -> Path:
    """The ESMM details export (one launch renamed to ``kernel``) written to ``tmp/name``."""
    text = shared(ESMM).read_text(encoding="utf-8")
    if kernel is not None:
        text = text.replace(ESMM_KERNEL, kernel.replace('"', '""'))
    path = tmp / name
    path.write_text(text, encoding="utf-8", newline="")
    return path


# --- outputs as one unit ------------------------------------------------------------------------


def test_an_input_inside_the_output_set_is_refused(tmp_path: Path) -> None:
    src = esmm(tmp_path, "launches.csv")
    before = src.read_bytes()
    refused(
        ncuroof_cli("analyze", src, "-o", tmp_path, "-q", cwd=tmp_path),
        "is an input",
        "choose another -o",
    )
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launches.csv"]


def test_a_file_ncuroof_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    src = esmm(tmp_path)
    (tmp_path / "points.csv").write_text("mine\n")
    refused(
        ncuroof_cli("analyze", src, "-o", ".", "-q", cwd=tmp_path),
        "points.csv exists and was not written by ncuroof",
    )
    assert (tmp_path / "points.csv").read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "points.csv"]


def test_a_rerun_removes_stale_outputs_and_keeps_other_files(tmp_path: Path) -> None:
    src = esmm(tmp_path)
    out = tmp_path / "out"
    assert (
        ncuroof_cli("analyze", src, "-o", out, "-q", "--format", "csv,parquet", cwd=tmp_path).code
        == 0
    )
    assert (out / "launches.parquet").exists()
    (out / "notes.txt").write_text("mine")
    assert ncuroof_cli("analyze", src, "-o", out, "-q", cwd=tmp_path).code == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "kernels.csv",
        "launches.csv",
        MANIFEST,
        "notes.txt",
        "points.csv",
        "roofline.html",
    ]
    assert read_manifest(out) == [
        "kernels.csv",
        "launches.csv",
        "points.csv",
        "roofline.html",
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_saved_folder_is_read_through_its_manifest(tmp_path: Path) -> None:
    """A launches.parquet the manifest does not list (left by hand, an older run) is never read."""
    table = arrow_table(
        pd.DataFrame({"source": ["a"], "error": ["x"]}), schema.FAILURES, "failures"
    )
    write_outputs(tmp_path / "out", {"launches.csv": "x\n"})
    (tmp_path / "out" / "launches.parquet").write_bytes(parquet_bytes(table))
    assert saved_launches(tmp_path / "out") == tmp_path / "out" / "launches.csv"
    (tmp_path / "old").mkdir()  # a folder written before manifests: read as before
    (tmp_path / "old" / "launches.parquet").write_bytes(b"")
    assert saved_launches(tmp_path / "old") == tmp_path / "old" / "launches.parquet"


def test_a_failed_write_keeps_the_previous_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_outputs(out, {"launches.csv": "one\n", "phases.csv": "p\n"})

    def broken(path: Path) -> None:
        path.write_bytes(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError) as err:
        write_outputs(out, {"launches.csv": "two\n", "points.parquet": broken})
    assert_one_line_error(err, out, "No space left", "previous files")
    assert (out / "launches.csv").read_text() == "one\n" and (
        out / "phases.csv"
    ).read_text() == "p\n"
    assert sorted(p.name for p in out.iterdir()) == ["launches.csv", MANIFEST, "phases.csv"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_writing_cleans_up_like_ctrl_c(tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "out"
    write_outputs(out, {"launches.csv": "one\n"})
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom ncuroof.output.folder import"
        " write_outputs\ndef slow(p):\n    Path(p).write_text('half')\n    time.sleep(2)\ntry:\n   "
        " write_outputs(Path(sys.argv[1]), {'launches.csv': 'two', 'points.csv': slow})\nexcept"
        " KeyboardInterrupt:\n    sys.exit(130)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    deadline = time.monotonic() + 30
    while (
        not any((d / "points.csv").exists() for d in out.glob(".*")) and time.monotonic() < deadline
    ):
        time.sleep(0.05)  # until the writer is in the staging directory
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert sorted(p.name for p in out.iterdir()) == ["launches.csv", MANIFEST]
    assert (out / "launches.csv").read_text() == "one\n"


# --- saved tables: names are text, edits are refused ----------------------------------------------


@pytest.mark.parametrize("name", ["NA", "null", "nan", "None"])
def test_a_kernel_named_like_a_missing_value_survives_a_saved_folder(
    tmp_path: Path, name: str
) -> None:
    src = esmm(tmp_path, kernel=name)
    assert ncuroof_cli("analyze", src, "-o", "out", "-q", cwd=tmp_path).code == 0
    saved = ncuroof.load(tmp_path / "out")
    assert name in saved["kernel_name"].tolist()
    assert saved["kernel_name"].notna().all()


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [("status", "bogus", "status 'bogus'"), ("time_s", "abc", "not a table")],
)
def test_a_hand_edited_saved_folder_is_one_line(
    tmp_path: Path, column: str, value: str, words: str
) -> None:
    src = esmm(tmp_path)
    assert ncuroof_cli("analyze", src, "-o", "out", "-q", cwd=tmp_path).code == 0
    k = pd.read_csv(tmp_path / "out" / "launches.csv", keep_default_na=False, dtype=str)
    k.loc[0, column] = value
    k.to_csv(tmp_path / "out" / "launches.csv", index=False)
    refused(ncuroof_cli("compare", "out", "out", "-o", "cmp", "-q", cwd=tmp_path), words)


# --- terminal, spreadsheet and page injection -----------------------------------------------------

HOSTILE = '=HYPERLINK("http://x")\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x9b31m<b>[/bold]</b>\x1bc'


def test_names_reach_no_terminal_spreadsheet_or_page_raw(tmp_path: Path) -> None:
    src = esmm(tmp_path, kernel=HOSTILE)
    run = ncuroof_cli("analyze", src, "-o", "out", "--format", "csv,parquet", cwd=tmp_path)
    assert run.code == 0, run.text
    assert b"\\x1b" in run.out, "the escape is shown, not dropped"
    csv_names = pd.read_csv(tmp_path / "out" / "launches.csv", keep_default_na=False, dtype=str)[
        "kernel_name"
    ]
    assert csv_names[0].startswith("'=") and not any(
        n.startswith(("=", "+", "@")) for n in csv_names
    )
    raw = pd.read_parquet(tmp_path / "out" / "launches.parquet")["kernel_name"]
    assert raw[0].startswith("=") and "\x1b" in raw[0]
    assert ncuroof.load(tmp_path / "out")["kernel_name"][0] == raw[0], (
        "the CSV reads back as the raw value"
    )
    html = (tmp_path / "out" / "roofline.html").read_text(encoding="utf-8")
    assert "<b>[/bold]" not in html and "\\u003cb\\u003e[/bold]" not in html


def test_printable_and_csv_cell() -> None:
    assert fmt.printable("a\x1b]0;t\x07b\x9b\r\u202e") == "a\\x1b]0;t\\x07b\\x9b\\x0d\\u202e"
    assert (
        fmt.printable("a\n\tb") == "a\n\tb"
        and fmt.printable("a\n\tb", layout=False) == "a\\x0a\\x09b"
    )
    cells = ["=1+1", "+A1", "-A1", "@SUM(A1)", "\tx", "\rx", "'q", "-1.5e3", "+3", "-", "ok", ""]
    assert [fmt.csv_cell(c) for c in cells] == [
        "'=1+1",
        "'+A1",
        "'-A1",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "''q",
        "-1.5e3",
        "+3",
        "-",
        "ok",
        "",
    ]
    t = pa.table({"name": cells + [None]})
    # a written CSV shows control characters as the terminal does (issue 45): \r of "\rx" is
    # written \x0d, so reading back gives the printable form; everything else comes back whole
    shown = pa.table({"name": [fmt.printable(c) for c in cells] + [None]})
    assert _csv_raw(csv_safe(t)).equals(shown)
    assert csv_safe(t).column("name").to_pylist()[:7] == [
        fmt.csv_cell(fmt.printable(c)) for c in cells[:7]
    ]
    assert csv_safe(t).column("name").to_pylist()[5] == "\\x0dx"


# --- small inputs that would eat the machine ------------------------------------------------------


def _event(
    name: object, ts: int = 10, cat: str = "kernel", args: str | None = None, dur: int = 10
) -> str:
    args = args or '{"device":0,"stream":7,"correlation":1,"grid":[1,1,1],"block":[1,1,1]}'
    return f'{{"ph":"X","cat":"{cat}","name":{json.dumps(name)},"pid":0,"tid":7,"ts":{ts},"dur":{dur},"args":{args}}}'  # noqa: E501


_LAUNCH = '{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":1}}'  # noqa: E501


def _trace(*events: str) -> str:
    return '{"traceEvents":[' + ",".join([_LAUNCH, *events]) + "]}"


def _gz_bomb(path: Path, mib: int = 64) -> None:
    one = ("," + _event("k")).encode() * 1000
    co = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [co.compress(b'{"traceEvents":[' + _LAUNCH.encode())]
    parts += [co.compress(one) for _ in range(mib * 2**20 // len(one))]
    path.write_bytes(b"".join([*parts, co.compress(b"]}"), co.flush()]))


TRACES = {
    "deep.json": (
        lambda p: p.write_text(
            _trace(_event("k", args='{"x":' + "[" * 100_000 + "]" * 100_000 + "}"))
        ),
        "json_depth",
    ),
    "long.json.gz": (
        lambda p: p.write_bytes(gzip.compress(_trace(_event("k" * (64 << 20))).encode(), 6)),
        "name_chars",
    ),
    "nested.json": (
        lambda p: p.write_text(
            _trace(
                *(
                    _event(f"r{i}", i, "user_annotation", "{}", 10**7 - 2 * i)
                    for i in range(20_000)
                ),
                _event("k", 30_000),
            )
        ),
        "range_depth",
    ),
    "bomb.json.gz": (_gz_bomb, "decompressed_ratio"),
    "grid.json": (
        lambda p: p.write_text(_trace(_event("k", args='{"device":0,"grid":[1.5,1,1]}'))),
        "grid_x",
    ),
    "huge_grid.json": (
        lambda p: p.write_text(_trace(_event("k", args='{"device":0,"grid":[1e300,1,1]}'))),
        "grid_x",
    ),
    "device.json": (lambda p: p.write_text(_trace(_event("k", args='{"device":1e20}'))), "device"),
}


@pytest.mark.parametrize("case", sorted(TRACES))
def test_an_expanding_or_malformed_trace_is_one_line_in_time(tmp_path: Path, case: str) -> None:
    make, limit = TRACES[case]
    make(tmp_path / case)
    before = (tmp_path / case).read_bytes()
    run = ncuroof_cli(
        "analyze", shared(ESMM), "--timeline", case, "-o", "out", "-q", cwd=tmp_path, timeout=60
    )
    refused(run, case, limit)
    assert run.seconds < 30
    assert (tmp_path / case).read_bytes() == before
    assert not (tmp_path / "out").exists()


def test_a_trace_kernel_without_a_name_is_read(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(_trace(_event(None)))
    assert (
        ncuroof_cli(
            "analyze", shared(ESMM), "--timeline", "t.json", "-o", "out", "-q", cwd=tmp_path
        ).code
        == 0
    )


def _nsys(tmp: Path, sql: str) -> Path:
    path = tmp / "t.sqlite"
    path.write_bytes(shared("accelsim-test__algo23_nsys.sqlite").read_bytes())
    with sqlite3.connect(path) as con:
        con.executescript(sql)
    return path


@pytest.mark.parametrize(
    ("sql", "words"),
    [
        (
            (
                "DROP TABLE StringIds; CREATE VIEW StringIds AS WITH RECURSIVE r(id, value) AS"
                " (SELECT 0, 'x' UNION ALL SELECT id + 1, value FROM r) SELECT id, value FROM r;"
            ),
            "no StringIds table",
        ),
        (
            (
                "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'abc' WHERE rowid = (SELECT"
                " MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
            ),
            "not a number",
        ),
    ],
)
def test_a_hostile_nsys_export_is_one_line(tmp_path: Path, sql: str, words: str) -> None:
    _nsys(tmp_path, sql)
    run = ncuroof_cli(
        "analyze",
        shared("accelsim-test__algo23_raw.csv"),
        "--timeline",
        "t.sqlite",
        "-o",
        "out",
        "-q",
        cwd=tmp_path,
    )
    refused(run, words)


def test_sql_queries_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _nsys(tmp_path, "")
    limits = {**timeline.catalog.limits(), "sql_steps_millions": 1e-4}
    monkeypatch.setattr(timeline.catalog, "limits", lambda: limits)
    monkeypatch.setattr(timeline._Budget, "_EVERY", 10)
    with pytest.raises(InputError) as err:
        timeline.read_timeline(path)
    assert_one_line_error(err, path, "sql_steps_millions")


def test_a_long_csv_line_and_program_output_are_bounded(tmp_path: Path) -> None:
    esmm(tmp_path, "big.csv", kernel="k" * (17 << 20))
    refused(ncuroof_cli("analyze", "big.csv", "-o", "out", "-q", cwd=tmp_path), "csv_line_bytes")
    # A name of [limits] name_chars is read (in a line of several MB, after program output) ...
    text = esmm(tmp_path, kernel="k" * (1 << 20)).read_text()
    header, rest = text.split("\n", 1)
    (tmp_path / "noisy.csv").write_text(f"{header}\nprogram output\n{rest}")
    run = ncuroof_cli("analyze", "noisy.csv", "-o", "out", "-q", cwd=tmp_path)
    assert run.code == 0 and run.seconds < 30, run.text
    # ... one past it is refused in one line, as in a report or a trace (issue 53: a 16M-character
    # name in a CSV export ran 8 s at 1.28 GB and wrote a 197 MB page).
    esmm(tmp_path, "long-name.csv", kernel="k" * ((1 << 20) + 1))
    refused(ncuroof_cli("analyze", "long-name.csv", "-o", "out2", "-q", cwd=tmp_path), "name_chars")


@pytest.mark.parametrize("kind", ["fifo", "proc", "device"])
def test_an_input_that_is_not_a_regular_file_is_refused_without_hanging(
    tmp_path: Path, kind: str
) -> None:
    path = {
        "fifo": tmp_path / "in.csv",
        "proc": Path("/proc/self/mem"),
        "device": Path("/dev/zero"),
    }[kind]
    if kind == "fifo":
        os.mkfifo(path)
    refused(
        ncuroof_cli("analyze", path, "-o", tmp_path / "out", "-q", cwd=tmp_path, timeout=30),
        str(path),
    )
    if kind == "fifo":
        refused(
            ncuroof_cli(
                "analyze",
                shared(ESMM),
                "--timeline",
                path,
                "-o",
                "out",
                "-q",
                cwd=tmp_path,
                timeout=30,
            ),
            "FIFO",
        )


# --- no internal error --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "record", ["[]", '"x"', "[" * 100_000 + "]" * 100_000, '{"clock_control": 5}']
)
def test_a_sidecar_that_is_not_a_record_is_one_line(tmp_path: Path, record: str) -> None:
    src = esmm(tmp_path)
    (tmp_path / "in.csv.ncuroof.json").write_text(record)
    refused(ncuroof_cli("analyze", src, "-o", "out", "-q", cwd=tmp_path), "not a collection record")


@pytest.mark.parametrize(
    "formula", ["10.0**400", "1/0", "1%0", "-" * 100_000 + "1", "(-8)**0.5", "1e999"]
)
def test_an_expectation_without_a_finite_value_is_one_line(tmp_path: Path, formula: str) -> None:
    with pytest.raises(ValueError):
        evaluate(formula, {})
    (tmp_path / "e.toml").write_text(
        f'[sizes]\nM = 1\n[[kernel]]\nmatch = "basic"\nflop = "{formula}"\n'
    )
    refused(
        ncuroof_cli("analyze", shared(ESMM), "--expect", "e.toml", "-o", "out", "-q", cwd=tmp_path),
        "e.toml",
    )


def test_appended_runs_that_disagree_are_said_on_the_terminal(tmp_path: Path) -> None:
    text = shared(ESMM).read_text()
    other = text.replace('"17333"', '"17334"').replace(
        '"dram__bytes.sum","byte","32,746,880"', '"dram__bytes.sum","byte","98,240,640"', 1
    )
    (tmp_path / "runs.csv").write_text(text + other)
    run = ncuroof_cli("analyze", "runs.csv", "-o", "out", "-q", cwd=tmp_path)
    assert run.code == 0
    assert "dram__bytes.sum" in run.text and "different values" in run.text
    notes = pd.read_csv(tmp_path / "out" / "launches.csv", keep_default_na=False)["notes"][0]
    assert (
        "98,240,640" in notes.replace("9.82406e+07", "98,240,640") and "SASS-patched" not in notes
    )


def test_a_long_input_path_costs_no_partition(tmp_path: Path) -> None:
    source = "/".join(["d" * 200] * 3) + "/report.ncu-rep"
    t = arrow_table(
        pd.DataFrame({"source": [source, "b"], "error": ["x", "y"]}),
        schema.FAILURES,
        "failures",
        [source, "b"],
    )
    write_outputs(tmp_path / "out", {"failures.parquet": dataset_writer(t)})
    back = read_table(tmp_path / "out" / "failures.parquet")
    assert back["source"].tolist() == [source, "b"] and list(back.columns) == ["source", "error"]


@pytest.mark.parametrize("tail", [32 << 20, 1 << 30])
def test_zeros_appended_to_a_report_are_damage(tmp_path: Path, tail: int) -> None:
    data = shared("ESMM-Research__profile_output.ncu-rep").read_bytes()
    path = tmp_path / "z.ncu-rep"
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(len(data) + tail)  # a sparse tail of zeros
    run = ncuroof_cli("analyze", path, "-o", "out", "-q", cwd=tmp_path)
    refused(run, "empty header", "zeros appended")
    assert run.seconds < 30 and path.stat().st_size == len(data) + tail


@pytest.mark.parametrize("field", ["flop", "match"])
def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path, field: str) -> None:
    """Issue 53 item 1: 9 levels of 9 aliases (a 0.5 KB file expanding to 9**9 scalars) ran 58 s
    at 3.2 GB before its "formula of 2808798543 characters"; now refused in one line naming the
    limit, before anything is built."""
    pytest.importorskip("yaml")
    lines = ['a0: &a0 "xxxxxxxxxx"']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    lines += ["sizes: {M: 1}", "kernel:", f"  - {field}: *a9"]
    (tmp_path / "e.yaml").write_text("\n".join(lines) + "\n")
    out = ncuroof_cli(
        "analyze", shared(ESMM), "--expect", "e.yaml", "-o", "out", "-q", cwd=tmp_path
    )
    refused(out, "e.yaml", "yaml_expanded_chars")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("limit_kb", [800_000])  # 500000: std::bad_alloc in some runs
@pytest.mark.parametrize(
    "job", ["csv", "report", "compare"], ids=["analyze-csv", "analyze-report", "compare"]
)
def test_under_a_memory_limit_a_run_ends_cleanly(tmp_path: Path, job: str, limit_kb: int) -> None:
    """Issue 53 item 3: under ``ulimit -v 800000`` a CSV analysis died of SIGSEGV (Arrow's writer
    thread) or "can't start new thread", a report of std::bad_alloc, compare of SIGSEGV, leaving
    ``.NAME.new.*``. Now: done (exit 0) or one line naming the limit (exit 2), never a signal,
    and no staging folder left."""
    report = fixture_path("ESMM-Research__profile_output.ncu-rep")
    args = {
        "csv": ["analyze", shared(ESMM), "-o", "out"],
        "report": ["analyze", report, "-o", "out"],
        "compare": ["compare", report, report, "-o", "out"],
    }[job]

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_kb * 1024, limit_kb * 1024))

    proc = subprocess.run(
        [sys.executable, "-m", "ncuroof", *map(str, args), "-q"],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        preexec_fn=limit,
        stdin=subprocess.DEVNULL,
    )
    text = (proc.stdout + proc.stderr).decode(errors="replace")
    assert proc.returncode in (0, 2), text
    if proc.returncode == 2:
        lines = text.strip().splitlines()
        assert len(lines) == 1 and "ulimit -v" in lines[0], text
    assert [p.name for p in tmp_path.iterdir() if ".new." in p.name] == []
