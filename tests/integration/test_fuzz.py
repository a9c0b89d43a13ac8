"""Corrupt input never crashes, never leaves debris, never passes as truth (issue 14).

A mutation harness (tests/fuzz.py) makes damaged copies of the shared fixtures with a fixed seed
and checks the promise for each; the issue's own examples are reproduced one by one; the CSV
reader is driven by hypothesis.
"""

from __future__ import annotations

import functools
import math
import os
import re
import struct
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ncuroof import catalog
from ncuroof.errors import ReportFormatError
from ncuroof.output.folder import write_outputs
from ncuroof.parser import read_csv
from ncuroof.parser.ncu_rep.reference import DAMAGED_TEXT, _spec, check_records, read_launches
from ncuroof.parser.validate import check_values, roof_violations
from tests.helpers import fuzz
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import needs_ncu_report, shared

#: One case per family and fixture in CI (~120 cases, ~1 min on 2 cores); NCUROOF_FUZZ_PER=3 runs
#: what scripts/fuzz_report.py counts (~280 cases).
PER = int(os.environ.get("NCUROOF_FUZZ_PER", "1"))
CASES = fuzz.all_cases(seed=14, per_report=PER, per_csv=PER)


def reference(origin: str, tmp: str) -> pd.DataFrame | None:
    """launches.csv of the undamaged fixture, read once; each caller gets its own copy."""
    k = _reference(origin, tmp)
    return None if k is None else k.copy(deep=True)


@functools.cache
def _reference(origin: str, tmp: str) -> pd.DataFrame | None:
    suffix = ".csv" if origin.endswith(".csv") else ".ncu-rep"
    out = fuzz.run_case(
        fuzz.Case("original", origin, shared(origin).read_bytes(), suffix, origin),
        Path(tmp) / origin,
    )
    assert out.exit_code == 0, out.stderr
    return out.launches  # type: ignore[return-value]


@pytest.fixture(scope="module")
def ref_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("reference"))


@needs_ncu_report
@pytest.mark.parametrize("case", CASES, ids=[f"{c.family}:{c.name}" for c in CASES])
def test_mutation_keeps_the_promise(case: fuzz.Case, tmp_path: Path, ref_dir: str) -> None:
    outcome = fuzz.run_case(case, tmp_path)
    kind, detail = fuzz.verdict(case, outcome, reference(case.origin, ref_dir))
    assert not kind.startswith("FAIL"), f"{kind}: {detail}\n{outcome.stderr}"


def test_harness_covers_every_family() -> None:
    families = {c.family for c in CASES}
    if not families:
        pytest.skip("no shared fixtures")
    assert {
        "truncate",
        "flip_payload",
        "duplicate_block",
        "shorten_block",
        "zero_fill",
        "concatenate",
        "bad_number",
        "unknown_unit",
        "delete_column",
        "reorder_columns",
        "repeat_launch_id",
        "encoding",
        "line_ends",
        "truncate_line",
        "repz_truncate",
        "repz_flip_compressed",
        "repz_flip_report",
        "repz_bomb",
    } <= families
    assert len(CASES) >= 100


# --- the issue's examples, one by one -------------------------------------------------------------


def _shortened(name: str, block: int) -> bytes:
    """The issue's abort recipe: one byte out of a result block, its payload size lowered by one."""
    data = shared(name).read_bytes()
    b = fuzz.blocks(data)[block]
    at = b.payload_start + b.payload_size // 2
    return fuzz._splice(
        data,
        b,
        data[b.payload_start : at] + data[at + 1 : b.end],
        fuzz._with_payload_size(b.header, b.payload_size - 1),
    )


def _one_line_refusal(outcome: fuzz.Outcome) -> str:
    assert outcome.signal is None and outcome.exit_code == 2, outcome.stderr
    line = assert_one_line_error(outcome.stderr, "case.")
    assert not outcome.leftovers
    return line


@needs_ncu_report
def test_issue_abort_recipe_is_a_clean_refusal_naming_the_bytes(tmp_path: Path) -> None:
    data = _shortened("nsight-training__manual_nvtx.ncu-rep", 11)
    assert struct.unpack("<I", data[4:8])[0] > 0
    line = _one_line_refusal(
        fuzz.run_case(fuzz.Case("shorten_block", "issue", data, ".ncu-rep", "x"), tmp_path)
    )
    assert_one_line_error(line, None, "damaged", "launch 1 ", "block 11 ", "77627-")


@needs_ncu_report
def test_an_abort_of_ncu_report_is_contained_in_the_worker(tmp_path: Path) -> None:
    """Past the framing checks, ncu_report's SIGABRT ends only the worker: one ReportFormatError."""
    bad = tmp_path / "short.ncu-rep"
    bad.write_bytes(_shortened("nsight-training__manual_nvtx.ncu-rep", 11))
    with pytest.raises(ReportFormatError) as err:
        read_launches(bad, _spec(catalog.load()))
    assert_one_line_error(err, bad, "SIGABRT")


@needs_ncu_report
def test_worker_reads_what_ncu_stored(tmp_path: Path) -> None:
    """The worker's values are ncu_report's own, launch for launch (the conftest's direct read)."""
    from tests.helpers.reports import ncu_metrics

    name = "ESMM-Research__profile_output.ncu-rep"
    rows = read_launches(shared(name), _spec(catalog.load()))
    direct = ncu_metrics(name)
    assert len(rows) == len(direct) == 4
    for row, ncu in zip(rows, direct):
        assert row["gpu__time_duration.sum"] == ncu["gpu__time_duration.sum"]
        shared_keys = [m for m in row if m in ncu and isinstance(row[m], float)]
        assert len(shared_keys) > 20
        assert all(
            row[m] == ncu[m] or (math.isnan(row[m]) and math.isnan(ncu[m])) for m in shared_keys
        )


@needs_ncu_report
def test_flipped_byte_in_a_name_never_crashes(tmp_path: Path) -> None:
    """gene-pop2020 time-flops, XOR 0xF4 at byte 198828: a name with a byte that is not UTF-8.

    The built-in decoder refuses the report in one line; through ncu_report (the fallback) the
    name comes back with U+FFFD and the launch is a damaged record, the others untouched.
    """
    from ncuroof.parser import read

    data = bytearray(shared("gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep").read_bytes())
    data[198828] ^= 0xF4
    out = fuzz.run_case(fuzz.Case("flip_payload", "issue", bytes(data), ".ncu-rep", "x"), tmp_path)
    assert not out.leftovers and out.signal is None
    assert out.exit_code == 0 or "launch 0 in block 2" in _one_line_refusal(out)
    raw = read(tmp_path / "case.ncu-rep", catalog.load(), reader="ncu_report")
    assert "\ufffd" in raw.loc[0, "kernel_demangled"] and raw.loc[0, "input_notes"] == DAMAGED_TEXT
    assert raw.loc[1:, "input_notes"].isna().all()


def test_write_outputs_leaves_nothing_on_any_exception(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        write_outputs(tmp_path / "out", {"a.csv": "x", "b.csv": 42})  # type: ignore[dict-item]
    assert list(tmp_path.iterdir()) == []
    write_outputs(
        tmp_path / "out", {"a.csv": "bad \udcf4 name"}
    )  # a lone surrogate is written as '?'
    assert (tmp_path / "out" / "a.csv").read_text(encoding="utf-8") == "bad ? name"


def _csv_case(name: str, old: bytes, new: bytes, count: int = 1) -> fuzz.Case:
    data = shared(name).read_bytes()
    assert data.count(old) >= count
    return fuzz.Case("bad_number", "issue", data.replace(old, new, count), ".csv", name)


def test_negative_duration_is_a_damaged_record_named(tmp_path: Path, ref_dir: str) -> None:
    case = _csv_case("ESMM-Research__metrics.csv", b'"262,784"', b'"-262,784"')
    out = fuzz.run_case(case, tmp_path)
    assert out.exit_code == 0 and out.stderr == "", out.stderr
    k, ref = out.launches, reference(case.origin, ref_dir)
    bad = k[k["status"] == "corrupt_record"]
    assert len(bad) == 1
    assert re.search(r"damaged record: \S+ = -262784 is negative", bad["notes"].iloc[0])
    assert (k["status"] == "ok").sum() == len(ref) - 1  # the other launches are untouched
    lid = bad["launch_id"].iloc[0]
    assert not (k.loc[k["launch_id"] == lid, ["time_s", "dram_bytes_per_s"]] == 0).any(axis=None)


def _set_first(name: str, metric: str, value: bytes) -> fuzz.Case:
    """A details-page export with the first value of ``metric`` replaced by ``value``."""
    data, n = re.subn(
        rb'("' + re.escape(metric.encode()) + rb'","[^"]*",")[^"]+"',
        rb"\g<1>" + value + rb'"',
        shared(name).read_bytes(),
        count=1,
    )
    assert n == 1
    return fuzz.Case("bad_number", "issue", data, ".csv", name)


@pytest.mark.parametrize(
    "name, metric",
    [
        (
            "cuda-roofline__output.csv",
            "sm__cycles_elapsed.avg.per_second",
        ),  # the issue: time_s = 0.0, status ok
        (
            "GPU-Roofline-Profiler__saxpy.csv",
            "gpu__time_duration.sum",
        ),  # the issue: dram_bytes_per_s = 0.0
    ],
)
def test_infinite_clock_or_duration_is_never_a_silent_zero(
    tmp_path: Path, name: str, metric: str
) -> None:
    out = fuzz.run_case(_set_first(name, metric, b"inf"), tmp_path)
    assert out.exit_code == 0 and out.stderr == "", out.stderr
    k = out.launches
    damaged = k[k["status"] == "corrupt_record"]
    assert len(damaged) == 1 and f"{metric} = inf is infinite" in damaged["notes"].iloc[0]
    values = damaged[["time_s", "dram_bytes_per_s"]].to_numpy(
        float
    )  # non-zero in the undamaged export
    assert not (values == 0).any() and not np.isinf(values).any()


def test_absurd_clock_gives_no_runtime_warning(tmp_path: Path) -> None:
    out = fuzz.run_case(
        _set_first("cuda-roofline__output.csv", "sm__cycles_elapsed.avg.per_second", b"1.7e308"),
        tmp_path,
    )
    assert out.exit_code == 0 and out.stderr == "", (
        out.stderr
    )  # warnings are recorded into stderr by the harness
    k = out.launches
    assert "= 1.7e+308 is above 1e+24" in k.loc[k["status"] == "corrupt_record", "notes"].iloc[0]
    assert np.isfinite(k["dram_bytes_per_s"].dropna()).all()
    out = fuzz.run_case(
        _set_first(
            "cuda-roofline__output.csv", "sm__cycles_elapsed.avg.per_second", b"12,000,000,000"
        ),
        tmp_path / "b",
    )
    assert (
        "a clock above 10 GHz"
        in out.launches.loc[out.launches["status"] == "corrupt_record", "notes"].iloc[0]
    )


def test_negated_flop_counter_is_not_a_lower_count(tmp_path: Path) -> None:
    name = "ESMM-Research__metrics.csv"
    data = shared(name).read_bytes()
    m = re.search(
        rb'("sm__sass_thread_inst_executed_op_ffma_pred_on.sum","inst",")([0-9,]+)"', data
    )
    assert m is not None and m.group(2) != b"0"
    bad = data[: m.start(2)] + b"-" + data[m.start(2) :]
    out = fuzz.run_case(fuzz.Case("bad_number", "issue", bad, ".csv", name), tmp_path)
    k = out.launches
    assert out.exit_code == 0
    assert (k["status"] == "corrupt_record").sum() == 1
    assert (
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum = -1.07374e+09 is negative"
        in k.loc[k["status"] == "corrupt_record", "notes"].iloc[0]
    )


@needs_ncu_report
def test_duplicated_or_reordered_result_blocks_are_refused(tmp_path: Path) -> None:
    data = shared("ESMM-Research__profile_output.ncu-rep").read_bytes()
    b = fuzz.blocks(data)
    r1, r2 = b[12], b[13]  # two result blocks (sequence numbers 525 and 531)
    dup = data[: r1.end] + data[r1.start : r1.end] + data[r1.end :]
    line = _one_line_refusal(
        fuzz.run_case(fuzz.Case("duplicate_block", "dup", dup, ".ncu-rep", "x"), tmp_path / "dup")
    )
    assert_one_line_error(line, None, "repeated", "record 2", "record 1")
    swapped = data[: r1.start] + data[r2.start : r2.end] + data[r1.start : r1.end] + data[r2.end :]
    line = _one_line_refusal(
        fuzz.run_case(fuzz.Case("reorder", "swap", swapped, ".ncu-rep", "x"), tmp_path / "swap")
    )
    assert_one_line_error(line, None, "sequence", "525", "531")


def test_launch_sequence_reads_ncu_sequence_numbers() -> None:
    records = check_records(shared("ESMM-Research__profile_output.ncu-rep")).records
    assert [r.sequence for r in records] == [519, 525, 531, 537]
    assert {r.process_id for r in records} == {9166}


def test_repeated_launch_id_in_details_csv_is_refused(tmp_path: Path) -> None:
    name = "ESMM-Research__metrics.csv"
    data = shared(name).read_bytes()
    lines = data.splitlines(keepends=True)
    renamed = b"".join(b'"5"' + ln[3:] if ln.startswith(b'"7",') else ln for ln in lines)
    line = _one_line_refusal(
        fuzz.run_case(fuzz.Case("repeat_launch_id", "7->5", renamed, ".csv", name), tmp_path)
    )
    assert_one_line_error(line, None, "launch ID 5", "repeated")


@needs_ncu_report
def test_file_header_flip_is_not_blamed_on_kernel_filters(tmp_path: Path) -> None:
    data = bytearray(shared("nsight-training__manual_nvtx.ncu-rep").read_bytes())
    data[9] ^= 0x01  # the file header's only field: version 7 -> 6
    out = fuzz.run_case(fuzz.Case("flip_file_header", "v6", bytes(data), ".ncu-rep", "x"), tmp_path)
    line = _one_line_refusal(out)
    assert "--kernel-name" not in line
    assert_one_line_error(line, None, "3 launch records", "ncu_report", "header")
    data[9] ^= 0x01 ^ 0xC2  # a broken wire format
    line = _one_line_refusal(
        fuzz.run_case(
            fuzz.Case("flip_file_header", "wire", bytes(data), ".ncu-rep", "x"), tmp_path / "a"
        )
    )
    assert_one_line_error(line, None, "file header", "bytes 0-10")
    data[9] ^= 0xC2
    data[7] ^= 0x10  # the header size: 2 -> 268435458 bytes
    line = _one_line_refusal(
        fuzz.run_case(
            fuzz.Case("flip_file_header", "size", bytes(data), ".ncu-rep", "x"), tmp_path / "b"
        )
    )
    assert_one_line_error(line, None, "file header", "268435458", "162104")


def test_swapped_id_columns_are_named(tmp_path: Path) -> None:
    name = "RooflineAnalysis_On_NVIDIA_GPU__output0.csv"
    lines, head = fuzz._csv_lines(shared(name).read_bytes())
    n = len(fuzz._cells(lines[head]))
    data = fuzz._project(lines, head, [1, 0, *range(2, n)])
    line = _one_line_refusal(
        fuzz.run_case(fuzz.Case("reorder_columns", "ID<->PID", data, ".csv", name), tmp_path)
    )
    assert_one_line_error(line, None, "columns", "'Process ID', 'ID'")


def test_damaged_record_has_its_own_status() -> None:
    """No name and no values: corrupt_record; ncu's NaN duration: failed_measurement."""
    from ncuroof.model.formulas import compute_launches

    cat = catalog.load()
    raw = read_csv(shared("ESMM-Research__metrics.csv"), cat)
    metrics = [c for c in raw.columns if "__" in c]
    raw.loc[1, metrics] = np.nan
    raw.loc[1, "kernel_name"] = None
    raw.loc[2, "gpu__time_duration.sum"] = np.nan
    raw.loc[2, "sm__cycles_elapsed.avg"] = np.nan
    k = compute_launches(check_values(raw, cat), cat)
    assert k.loc[1, "status"] == "corrupt_record"
    assert k.loc[1, "notes"][0].startswith(
        "damaged record: no kernel name, no metric values, kept missing"
    )
    assert k.loc[2, "status"] == "failed_measurement" and not any(
        "damaged" in n for n in k.loc[2, "notes"]
    )
    assert (k.loc[[0, *range(3, len(k))], "status"] == "ok").all()


def test_roof_violations_by_hand() -> None:
    cat = catalog.load()
    rates = {
        "dram_bytes": np.array([5e11, 1e14, np.nan, 1e14]),
        "fp32_flop": np.array([1e12, 1e12, 1e12, 3e15]),
    }
    peaks = {
        "dram_bytes": np.array([6e11, 6e11, 6e11, np.nan]),
        "fp32_flop": np.array([3e13, 3e13, 3e13, 3e13]),
    }
    out = roof_violations(rates, peaks, cat)
    assert out[0] == "" and out[2] == ""
    assert out[1] == "dram_bytes at 167x its roof"  # 1e14 / 6e11
    assert out[3] == "fp32_flop at 100x its roof" or out[3] == ""  # exactly 100x is not beyond 100x
    assert roof_violations(
        {"fp32_flop": np.array([3.0001e15])}, {"fp32_flop": np.array([3e13])}, cat
    )[0].startswith("fp32_flop at 100x")


# --- compare --------------------------------------------------------------------------------------


def _compare(before: Path, after: Path, outdir: Path) -> tuple[int, str, str]:
    return fuzz._analyze_in_process([before, after], outdir, command="compare")


@needs_ncu_report
def test_compare_refuses_a_duplicated_block_and_warns_about_damaged_records(tmp_path: Path) -> None:
    name = "ESMM-Research__profile_output.ncu-rep"
    data = shared(name).read_bytes()
    r = fuzz.blocks(data)[12]
    (tmp_path / "case.ncu-rep").write_bytes(data[: r.end] + data[r.start : r.end] + data[r.end :])
    code, err, _ = _compare(shared(name), tmp_path / "case.ncu-rep", tmp_path / "out")
    assert code == 2
    assert_one_line_error(err, "case.ncu-rep", "repeated", "launch record")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["case.ncu-rep"]

    csv = "ESMM-Research__metrics.csv"
    (tmp_path / "case.csv").write_bytes(
        shared(csv).read_bytes().replace(b'"262,784"', b'"-262,784"', 1)
    )
    code, err, _ = _compare(shared(csv), tmp_path / "case.csv", tmp_path / "out2")
    assert code == 0, err
    assert "1 launch after is a damaged record" in err
    assert not any(p.name.startswith(".") for p in tmp_path.iterdir())


# --- hypothesis: the CSV reader on arbitrary numbers ----------------------------------------------

_RAW_HEADER = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "dram__bytes.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
]
_UNITS = ["", "", "", "", "", "", "", "", "", "", "", "nsecond", "hz", "byte", "inst"]
_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(min_value=0, max_value=1e12).map(lambda x: f"{x:,.3f}"),
    st.sampled_from(
        ["n/a", "", "inf", "-inf", "1.7e308", "-1", "0", "abc", "1e-320", "9" * 30, "1,2,3", "--5"]
    ),
)


def _raw_csv(values: list[list[str]]) -> bytes:
    def row(cells: list[str]) -> str:
        return ",".join('"' + c.replace('"', '""') + '"' for c in cells) + "\n"

    text = row(_RAW_HEADER) + row(_UNITS)
    for i, vals in enumerate(values):
        text += row(
            [
                str(i),
                "1",
                "a.out",
                "h",
                "k(int)",
                "1",
                "7",
                "(1, 1, 1)",
                "(1, 1, 1)",
                "0",
                "8.6",
                *vals,
            ]
        )
    return text.encode()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(_number, min_size=4, max_size=4), min_size=1, max_size=4))
def test_csv_reader_never_passes_an_impossible_value(
    tmp_path: Path, values: list[list[str]]
) -> None:
    from ncuroof.errors import InputError

    path = tmp_path / "h.csv"
    path.write_bytes(_raw_csv(values))
    cat = catalog.load()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            raw = check_values(read_csv(path, cat), cat)
        except InputError as exc:
            assert_one_line_error(exc, path)
            return
    cols = [
        "gpu__time_duration.sum",
        "sm__cycles_elapsed.avg.per_second",
        "dram__bytes.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    ]
    got = raw[cols].to_numpy(float)
    assert not np.isinf(got).any() and not (got < 0).any()
    for i, vals in enumerate(values):
        note = raw.loc[i, "input_notes"] or ""
        for j, text in enumerate(vals):
            v = got[i, j]
            if math.isnan(v):  # missing: n/a in the input, or refused with a note
                assert text.strip() in ("n/a", "", "nan") or "damaged record" in note
            else:  # kept: the number as written (all four units are ncu base units, factor 1)
                assert v == float(text.replace(",", ""))


def test_a_rate_far_beyond_a_datasheet_roof_is_a_damaged_record() -> None:
    """The 100x-roof check also holds where the roof comes from metrics/gpus.toml (an export without
    ncu's peak metrics, roofs from --gpu), not only from the report; user roofs are taken as given.
    """
    from ncuroof.model.formulas import compute_launches
    from ncuroof.model.roofs import fill_ceilings

    cat, gpus = catalog.load(), catalog.load_gpus()
    raw = read_csv(shared("ESMM-Research__metrics.csv"), cat)
    raw = raw.drop(columns=[c for c in raw.columns if "peak_sustained" in c])  # no report roofs

    def analyzed(**roofs: object) -> pd.DataFrame:
        return fill_ceilings(
            compute_launches(check_values(raw, cat), cat), gpus, gpu="A40", catalog=cat, **roofs
        )

    k = analyzed()
    assert (k["status"] == "ok").all() and all(
        ("dram", "datasheet") in c for c in k["ceiling_sources"]
    )
    rate, roof = k.loc[0, "dram_bytes_per_s"], k.loc[0, "peak_dram_bytes_per_s"]
    assert 0 < rate < roof
    dram = [c for c in raw.columns if c.startswith("dram__bytes")]
    raw.loc[0, dram] = raw.loc[0, dram] * (
        200 * roof / rate
    )  # launch 0's DRAM traffic at 200x the A40 datasheet roof
    bad = analyzed()
    assert list(bad["status"]) == ["corrupt_record"] + ["ok"] * (len(bad) - 1)
    assert bad.loc[0, "notes"][0].startswith(
        "damaged record: dram_bytes at 200x its roof (a datasheet roof)"
    )
    assert (analyzed(peak_bandwidth={"dram": roof})["status"] == "ok").all()
