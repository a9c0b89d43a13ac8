"""Production timelines (issue 24): ncuroof.parser.timeline.read_timeline on the shared PyTorch
profiler traces and Nsight Systems export, checked against independent reads of the same files
(plain json/gzip, plain SQL), and bad timelines refused with one line naming the file."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import sqlite3
from collections import defaultdict

import numpy as np
import pandas as pd
import pytest

from ncuroof.errors import InputError
from ncuroof.parser.timeline import busy_time, read_timeline
from ncuroof.schema import TIMELINE_LAUNCH
from tests.helpers.errors import assert_one_line_error
from tests.helpers.nsys import made_export
from tests.helpers.reports import shared

ALEXNET = "hta__alexnet_trace.json.gz"
TRITON = "hta__triton_example.json.gz"
NSYS = "gpu4__report.sqlite"


@pytest.fixture(params=["shared", "made"])
def nsys_export(request, tmp_path_factory):
    """The nsys export an nsys test reads: the shared real one (skipped without ``../shared``),
    and the project's made one of the same launches (:mod:`tests.helpers.nsys`), always."""
    if request.param == "shared":
        return shared(NSYS)
    return made_export(tmp_path_factory.mktemp("nsys") / "made.sqlite")


def _events(name: str) -> dict:
    with gzip.open(shared(name), "rt") as fh:
        return json.load(fh)


def _hand_kernels(trace: dict, device: int = 0) -> list[dict]:
    return [
        e
        for e in trace["traceEvents"]
        if e.get("cat") == "kernel" and e["args"].get("device") == device
    ]


# --- production time: the independent sums ---------------------------------------------------


@pytest.mark.parametrize("name", [ALEXNET, TRITON])
def test_kineto_time_per_kernel_is_the_sum_of_its_events(name):
    kernels = _hand_kernels(_events(name))
    want_us, want_n = defaultdict(float), defaultdict(int)
    for e in kernels:
        want_us[e["name"]] += e["dur"]
        want_n[e["name"]] += 1
    df = read_timeline(shared(name))
    assert list(df.columns) == list(TIMELINE_LAUNCH)
    got = df.groupby("kernel_name")["duration_s"].agg(["sum", "size"])
    assert set(got.index) == set(want_us)
    for k, us in want_us.items():
        assert got.loc[k, "sum"] == pytest.approx(us * 1e-6, rel=1e-12)
        assert got.loc[k, "size"] == want_n[k]
    first = min(e["ts"] for e in kernels)
    assert df.attrs["span_s"] == pytest.approx(
        max(e["ts"] - first + e["dur"] for e in kernels) * 1e-6, rel=1e-12
    )
    assert df["start_s"].min() == 0.0
    assert df.attrs["format"] == "kineto" and df.attrs["devices"] == [0] and df.attrs["device"] == 0


def test_alexnet_fields_and_gpu_as_the_trace_has_them():
    trace = _events(ALEXNET)
    kernels = sorted(_hand_kernels(trace), key=lambda e: e["ts"])
    df = read_timeline(shared(ALEXNET))
    assert len(df) == 79
    assert df.attrs["gpu_name"] == "NVIDIA A100-PG509-200"
    for row, e in zip(df.itertuples(), kernels):
        assert (row.correlation, row.stream) == (e["args"]["correlation"], e["args"]["stream"])
        assert (row.grid_x, row.grid_y, row.grid_z) == tuple(e["args"]["grid"])
        assert (row.block_x, row.block_y, row.block_z) == tuple(e["args"]["block"])
    assert df["nvtx"].isna().all()


def test_nsys_time_per_kernel_is_a_plain_sql_sum(nsys_export):
    path = nsys_export
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    want = dict(
        (n, (c, s))
        for n, c, s in con.execute(
            "SELECT s.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
            "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value"
        )
    )
    first, last = con.execute(
        "SELECT MIN(start), MAX(end) FROM CUPTI_ACTIVITY_KIND_KERNEL"
    ).fetchone()
    con.close()
    df = read_timeline(path)
    got = df.groupby("kernel_name")["duration_s"].agg(["sum", "size"])
    assert {k: (int(r["size"]), r["sum"]) for k, r in got.iterrows()} == {
        k: (c, pytest.approx(s * 1e-9, rel=1e-12)) for k, (c, s) in want.items()
    }
    assert (
        sorted(df["stream"]) == [13, 14, 15, 16]
        and set(df["grid_x"]) == {1024}
        and set(df["block_x"]) == {256}
    )
    assert df.attrs["format"] == "nsys-sqlite" and df.attrs["gpu_name"] == "Tesla T4"
    assert df.attrs["span_s"] == pytest.approx((last - first) * 1e-9, rel=1e-12)
    # The four launches overlap on their streams: busy time is the union, here the whole span.
    assert df.attrs["busy_s"] == pytest.approx(df.attrs["span_s"], rel=1e-12)
    assert df["op"].isna().all() and df["scope"].isna().all()


def test_busy_time_is_the_union_of_intervals():
    # [0, 2) and [1, 3) overlap into [0, 3); [5, 6) apart; [5.5, 5.7) inside it: 3 + 1 = 4.
    assert busy_time(
        np.array([5.5, 0.0, 5.0, 1.0]), np.array([5.7, 2.0, 6.0, 3.0])
    ) == pytest.approx(4.0)
    assert busy_time(np.array([]), np.array([])) == 0.0


# --- the launching operator and scope, by hand ----------------------------------------------------


def _hand_op_and_scope(trace: dict, kernel: dict) -> tuple[str, str]:
    """The innermost cpu_op and the user_annotation path open on the launching thread when the
    runtime call with the kernel's correlation was made, by plain loops."""
    events = trace["traceEvents"]
    launch = next(
        e
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver")
        and e["args"].get("correlation") == kernel["args"]["correlation"]
    )

    def open_at(cat: str) -> list[dict]:
        return sorted(
            (
                e
                for e in events
                if e.get("cat") == cat
                and (e["pid"], e["tid"]) == (launch["pid"], launch["tid"])
                and e["ts"] <= launch["ts"] <= e["ts"] + e["dur"]
            ),
            key=lambda e: (e["ts"], -e["dur"]),
        )

    return open_at("cpu_op")[-1]["name"], " > ".join(e["name"] for e in open_at("user_annotation"))


def test_alexnet_op_and_scope_of_every_kernel_by_hand():
    trace = _events(ALEXNET)
    df = read_timeline(shared(ALEXNET))
    by_corr = {e["args"]["correlation"]: e for e in _hand_kernels(trace)}
    for row in df.itertuples():
        op, scope = _hand_op_and_scope(trace, by_corr[row.correlation])
        assert (row.op, row.scope) == (op, scope), row.kernel_name
    ops = dict(zip(df["correlation"], df["op"]))
    # The first kernel's External id (218) is also a cpu_op's (aten::clamp_min_): the runtime call
    # it came from runs inside aten::uniform_ (torch.rand), which launched it.
    assert ops[218] == "aten::uniform_"
    sgemm = df[df["kernel_name"] == "ampere_sgemm_32x32_sliced1x4_tn"]
    assert len(sgemm) > 0 and set(sgemm["op"]) == {"aten::addmm"}
    assert (
        df.loc[df["correlation"] == 5110, "scope"].item()
        == "[param|cuda] > [param|pytorch.model.alex_net|0|0|0] >"
        " [param|pytorch.model.alex_net|0|0|0|warmup|forward] >"
        " [param|pytorch.model.alex_net|0|0|0|warmup|forward]"
    )


def test_triton_kernel_and_its_op():
    df = read_timeline(shared(TRITON))
    row = df.iloc[0]
    assert row["kernel_name"] == "triton_poi_fused_add_cos_sin_0" and row[
        "duration_s"
    ] == pytest.approx(1.76e-6)
    # Launched through cuLaunchKernel (cuda_driver) inside the op Inductor names after the kernel.
    assert row["op"] == "triton_poi_fused_add_cos_sin_0"
    assert (row["grid_x"], row["block_x"]) == (1, 128)


def test_nvtx_path_of_the_launching_thread(tmp_path, nsys_export):
    db = tmp_path / "nvtx.sqlite"
    shutil.copy(nsys_export, db)
    con = sqlite3.connect(db)
    tid, start = con.execute(
        "SELECT globalTid, MIN(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 123"
    ).fetchone()
    con.executescript(
        "CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, rangeId INT, category INT,"
        " color INT, text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT);"
    )
    rows = [
        (start - 10, 10**12, 59, "outer", tid, None),  # open over every launch
        (start - 5, start + 1, 59, None, tid, 1),  # text through StringIds: first launch only
        (start - 5, 10**12, 59, "other thread", tid + 1, None),
        (start - 5, 10**12, 34, "a mark", tid, None),
    ]  # a mark is not a range
    con.executemany(
        "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId) VALUES (?, ?, ?,"
        " ?, ?, ?)",
        rows,
    )
    label = con.execute("SELECT value FROM StringIds WHERE id = 1").fetchone()[0]
    con.commit()
    con.close()
    df = read_timeline(db)
    assert df.loc[df["correlation"] == 123, "nvtx"].item() == f"outer > {label}"
    assert set(df.loc[df["correlation"] != 123, "nvtx"]) == {"outer"}


# --- devices --------------------------------------------------------------------------------------


def _two_devices(tmp_path, second_name: str = "NVIDIA A100-PG509-200"):
    """The AlexNet trace with every kernel also run on device 1, whose name is ``second_name``."""
    trace = _events(ALEXNET)
    extra = []
    for e in _hand_kernels(trace):
        copy = json.loads(json.dumps(e))
        copy["args"]["device"] = 1
        copy["dur"] = e["dur"] * 2
        extra.append(copy)
    trace["traceEvents"] += extra
    trace["deviceProperties"][1]["name"] = second_name
    path = tmp_path / "two.json.gz"
    with gzip.open(path, "wt") as fh:
        json.dump(trace, fh)
    return path, extra


def test_device_choice(tmp_path):
    path, extra = _two_devices(tmp_path, "NVIDIA H100 80GB HBM3")
    with pytest.raises(InputError) as err:
        read_timeline(path)
    assert err.value.path == path
    assert_one_line_error(err, path, "NVIDIA A100-PG509-200", "NVIDIA H100 80GB HBM3", "--device")
    one = read_timeline(path, device=1)
    assert len(one) == 79 and one.attrs["device"] == 1 and one.attrs["devices"] == [0, 1]
    assert one["duration_s"].sum() == pytest.approx(sum(e["dur"] for e in extra) * 1e-6, rel=1e-12)
    assert one.attrs["gpu_name"] == "NVIDIA H100 80GB HBM3"
    assert read_timeline(path, report_gpu="NVIDIA H100 80GB HBM3").attrs["device"] == 1
    assert read_timeline(path, report_gpu="nvidia a100-pg509-200").attrs["device"] == 0
    with pytest.raises(InputError) as err:
        read_timeline(path, device=5)
    assert_one_line_error(err, path, "device 5")


def test_same_gpus_need_a_device(tmp_path):
    path, _ = _two_devices(tmp_path)
    with pytest.raises(InputError) as err:
        read_timeline(path, report_gpu="NVIDIA A100-PG509-200")
    assert_one_line_error(err, path, "--device")


def _nsys_copy(source, tmp_path, sql: str):
    """A copy of the nsys export ``source`` changed by one SQL statement."""
    db = tmp_path / "changed.sqlite"
    shutil.copy(source, db)
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        con.execute(sql)
    return db


def test_nsys_runtime_call_twice_counts_the_kernel_once(tmp_path, nsys_export):
    db = _nsys_copy(
        nsys_export,
        tmp_path,
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE"
        " correlationId = 124",
    )
    df = read_timeline(db)
    assert len(df) == 4 and df["correlation"].tolist() == [123, 124, 125, 126]


def test_nsys_two_devices(tmp_path, nsys_export):
    db = _nsys_copy(
        nsys_export,
        tmp_path,
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE correlationId = 126",
    )
    with pytest.raises(InputError) as err:
        read_timeline(db)
    assert_one_line_error(err, db, "Tesla T4", "--device")
    assert len(read_timeline(db, device=0)) == 3 and len(read_timeline(db, device=1)) == 1


def test_progress_counts_the_file_bytes():
    path = shared(ALEXNET)
    seen = {}

    def factory(total):
        seen["total"], seen["done"] = total, 0

        def advance(n=1):
            seen["done"] += n

        return advance

    read_timeline(path, progress=factory)
    assert seen["total"] == seen["done"] == path.stat().st_size


# --- bad timelines ------------------------------------------------------------------------------


def _refused(path, *words: str, **kw) -> None:
    """read_timeline refuses ``path``: an InputError about it, one line starting with the path and
    holding ``words``."""
    with pytest.raises(InputError) as err:
        read_timeline(path, **kw)
    assert err.value.path == path and str(err.value).startswith(str(path))
    assert_one_line_error(err, path, *words)


def test_truncated_gzip(tmp_path):
    data = shared(ALEXNET).read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) // 2])
    _refused(path, "gzip")


def test_truncated_json(tmp_path):
    text = gzip.decompress(shared(ALEXNET).read_bytes())
    path = tmp_path / "cut.json"
    path.write_bytes(text[: len(text) // 2])
    _refused(path, "JSON")


def test_trace_without_kernels(tmp_path):
    trace = _events(ALEXNET)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "kernel"]
    path = tmp_path / "nokernels.json"
    path.write_text(json.dumps(trace))
    _refused(path, "kernel")


@pytest.mark.parametrize(
    "text", ['{"traceEvents": []}', '{"schemaVersion": 1, "other": [1, 2]}', "[1, 2, 3]"]
)
def test_json_that_is_not_a_trace(tmp_path, text):
    path = tmp_path / "other.json"
    path.write_text(text)
    _refused(path, "PyTorch")


def test_events_that_are_not_events(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text('{"traceEvents": [1, "two"]}')
    _refused(path, "trace")


@pytest.mark.parametrize(
    ("sql", "word"),
    [
        ("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_KERNEL"),
        ("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL", "kernel"),
    ],
)
def test_sqlite_without_kernels(tmp_path, sql, word, nsys_export):
    _refused(_nsys_copy(nsys_export, tmp_path, sql), word)


def test_truncated_sqlite(tmp_path, nsys_export):
    db = tmp_path / "cut.sqlite"
    data = nsys_export.read_bytes()
    db.write_bytes(data[:8192])
    _refused(db)  # which check refuses it depends on where the cut falls


def test_missing_unknown_and_directory(tmp_path):
    _refused(tmp_path / "absent.json.gz", "no such file")
    other = tmp_path / "notes.txt"
    other.write_text("hello")
    _refused(other, "timeline")
    _refused(tmp_path, "directory")


def test_nsys_rep_without_nsys(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\0" * 16)
    monkeypatch.setenv("PATH", str(tmp_path))
    _refused(rep, "nsys export")


def test_negative_duration_is_refused(tmp_path):
    trace = _events(TRITON)
    for e in trace["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = -1.0
    path = tmp_path / "neg.json"
    path.write_text(json.dumps(trace))
    _refused(path, "negative")


def test_result_types(nsys_export):
    df = read_timeline(nsys_export)
    for name, col in TIMELINE_LAUNCH.items():
        assert str(df[name].dtype) == col.dtype, name
    assert isinstance(df.attrs["span_s"], float) and isinstance(df.attrs["device"], int)
    assert pd.api.types.is_float_dtype(df["start_s"])


# --- links when part of the trace is missing ------------------------------------------------


def _write(tmp_path, trace: dict, name: str = "t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(trace))
    return path


def test_flow_events_stand_in_for_missing_runtime_calls(tmp_path):
    trace = _events(ALEXNET)
    full = read_timeline(shared(ALEXNET))
    trace["traceEvents"] = [
        e for e in trace["traceEvents"] if e.get("cat") not in ("cuda_runtime", "cuda_driver")
    ]
    # Every AlexNet kernel has its ac2g flow start ('s') at the launch call on the CPU thread.
    got = read_timeline(_write(tmp_path, trace))
    assert (
        got["op"].tolist() == full["op"].tolist()
        and got["scope"].tolist() == full["scope"].tolist()
    )
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "ac2g"]
    # Without either, AlexNet's External ids are its correlations (kernel 218 would meet the
    # unrelated aten::clamp_min_ of External id 218): no operator rather than a wrong one.
    assert read_timeline(_write(tmp_path, trace))["op"].isna().all()


def _event(cat: str, name: str, ts: float, dur: float, args=None, pid=10, tid=11) -> dict:
    """One complete ("X") Chrome trace event."""
    return {
        "ph": "X",
        "pid": pid,
        "tid": tid,
        "cat": cat,
        "name": name,
        "ts": ts,
        "dur": dur,
        "args": {} if args is None else args,
    }


def _modern_trace() -> dict:
    """A hand-made trace in the newer Kineto style: a kernel's External id is its operator's."""
    host = [
        _event("user_annotation", "ProfilerStep#0", 0, 100),
        _event("python_function", "nn.Module: Linear_0", 5, 50),
        _event("python_function", "torch/nn/functional.py(123): linear", 6, 40),
        _event("cpu_op", "aten::linear", 10, 30, {"External id": 4}),
        _event("cpu_op", "aten::addmm", 12, 20, {"External id": 5}),
        _event("cpu_op", "aten::relu", 60, 5, {"External id": 6}),
    ]
    stream = {"device": 0, "stream": 7}
    gemm = {"External id": 5, "correlation": 77, **stream, "grid": [2, 3, 4], "block": [128, 1, 1]}
    relu = {"External id": 6, "correlation": 78, **stream}
    device = [
        _event("gpu_user_annotation", "on the stream", 100, 50, dict(stream), pid=0, tid=7),
        _event("kernel", "sm90_gemm", 120, 4, gemm, pid=0, tid=7),
        _event("kernel", "relu_kernel", 130, 2, relu, pid=0, tid=7),
    ]
    launch = _event(
        "cuda_runtime", "cudaLaunchKernel", 62, 2, {"External id": 6, "correlation": 78}
    )
    return {
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
        "traceEvents": [*host, *device, launch],
    }


def test_modern_trace_links(tmp_path):
    df = read_timeline(_write(tmp_path, _modern_trace()))
    gemm, relu = df.iloc[0], df.iloc[1]
    assert gemm["kernel_name"] == "sm90_gemm" and relu["kernel_name"] == "relu_kernel"
    # The gemm has no runtime call in the trace: its operator is the cpu_op of its External id,
    # its scope what was open on that op's thread when the op began (the module, not the plain
    # python_function, which is no module scope).
    assert gemm["op"] == "aten::addmm" and gemm["scope"] == "ProfilerStep#0 > nn.Module: Linear_0"
    assert relu["op"] == "aten::relu" and relu["scope"] == "ProfilerStep#0"
    assert (gemm["grid_x"], gemm["grid_y"], gemm["grid_z"], gemm["block_x"]) == (2, 3, 4, 128)
    assert pd.isna(relu["grid_x"]) and pd.isna(relu["block_z"])
    assert df.attrs["gpu_name"] == "NVIDIA H100"
    assert df.attrs["span_s"] == pytest.approx(12e-6) and df.attrs["busy_s"] == pytest.approx(6e-6)
    assert df["start_s"].tolist() == pytest.approx([0.0, 10e-6])


def test_gpu_annotation_scope_when_nothing_on_the_cpu_side(tmp_path):
    trace = _modern_trace()
    trace["traceEvents"] = [
        e
        for e in trace["traceEvents"]
        if e["cat"] not in ("cpu_op", "user_annotation", "python_function")
    ]
    df = read_timeline(_write(tmp_path, trace))
    assert df["scope"].tolist() == ["on the stream", "on the stream"] and df["op"].isna().all()


def _fake_nsys(tmp_path, body: str):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text("#!/bin/sh\n" + body + "\n")
    nsys.chmod(0o755)
    return bin_dir


def test_nsys_rep_exported_with_nsys_from_path(tmp_path, monkeypatch, nsys_export):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\0" * 16)
    # A stand-in for `nsys export --type sqlite --output OUT REP` that writes the real export.
    monkeypatch.setenv(
        "PATH", str(_fake_nsys(tmp_path, f'{shutil.which("cp")} "{nsys_export}" "$5"'))
    )
    df = read_timeline(rep)
    assert len(df) == 4 and df.attrs["path"] == str(rep) and df.attrs["format"] == "nsys-sqlite"


def test_nsys_rep_export_failure(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\0" * 16)
    monkeypatch.setenv("PATH", str(_fake_nsys(tmp_path, 'echo "ERROR: not a report" >&2; exit 1')))
    _refused(rep, "nsys export", "ERROR: not a report")  # nsys's own words passed on


def test_sqlite_path_with_uri_characters(tmp_path, nsys_export):
    """'#', '?' and '%' in a path are escaped in the read-only SQLite URI, not cut there."""
    odd = tmp_path / "run #3?50%.sqlite"
    shutil.copy(nsys_export, odd)
    assert len(read_timeline(odd)) == len(read_timeline(nsys_export)) == 4


@pytest.mark.parametrize("zipped", [False, True])
def test_device_properties_after_trace_events_beyond_the_head(tmp_path, zipped):
    """Most real traces put ``deviceProperties`` after ``traceEvents``: the GPU is named from it
    also when it lies past the 4 MiB head (padded here with 5 MB of CPU events)."""
    trace = _modern_trace()
    pad = [_event("cpu_op", f"aten::pad{i}", 1e6 + 2 * i, 1, {}) for i in range(60_000)]
    body = {
        "traceEvents": [*pad, *trace["traceEvents"]],
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
    }
    data = json.dumps(body).encode()
    assert len(data) > 5 << 20 and data.index(b"deviceProperties") > 4 << 20
    path = tmp_path / ("t.json.gz" if zipped else "t.json")
    path.write_bytes(gzip.compress(data) if zipped else data)
    assert read_timeline(path).attrs["gpu_name"] == "NVIDIA H100 80GB HBM3"


@pytest.mark.parametrize(
    "sql,words",
    [
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999999"
            " WHERE correlationId = 124",
            ("StringIds does not hold", "999999"),
        ),
        (
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = -9223372036854775808,"
            " end = 9223372036854775807 WHERE correlationId = 124",
            ("no GPU timer gives", "timeline_max_duration_s"),
        ),
    ],
)
def test_a_damaged_nsys_export_is_refused_in_one_line(tmp_path, sql, words, nsys_export):
    """Issue 53 item 5: a kernel naming a missing StringIds row (was AttributeError, exit 3) and a
    kernel from -2**63 to 2**63-1 ns (was a 584-year kernel)."""
    db = _nsys_copy(nsys_export, tmp_path, sql)
    with pytest.raises(InputError) as err:
        read_timeline(db)
    assert_one_line_error(err, db, *words)


@pytest.mark.parametrize("dur_us", [1e-300, 1e-7, 1e12])
def test_kineto_durations_no_gpu_timer_gives_are_refused(tmp_path, dur_us):
    """Issue 53 item 4: a 1e-300 us kernel (an inf rate), one under half a nanosecond and one of
    eleven days; 0 us (under Kineto's resolution) is kept."""
    trace = _modern_trace()
    trace["traceEvents"][-2]["dur"] = dur_us
    path = _write(tmp_path, trace)
    with pytest.raises(InputError) as err:
        read_timeline(path)
    assert_one_line_error(err, path, "no GPU timer gives")
    trace["traceEvents"][-2]["dur"] = 0
    assert len(read_timeline(_write(tmp_path, trace))) == 2
