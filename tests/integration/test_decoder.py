"""Our own .ncu-rep decoder (ncuroof.parser.ncu_rep.decode) against NVIDIA's ncu_report, the
reference."""

from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog, parser, schema
from ncuroof.errors import ReportFormatError
from ncuroof.parser.ncu_rep import decode, verify
from ncuroof.parser.ncu_rep.reference import read_ncu_rep
from tests.helpers.cli import assert_clean_failure
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, REPORTS, needs_ncu_report, needs_shared, shared

NCUROOF = [sys.executable, "-m", "ncuroof"]


def _make_big_report():  # noqa: ANN202 - the scripts/ module
    spec = importlib.util.spec_from_file_location(
        "make_big_report", REPO / "scripts" / "make_big_report.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_big_report


def assert_same_tables(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Same columns, order, dtypes and values; floats equal bit for bit (NaN where NaN)."""
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    for col in a.columns[a.dtypes == np.float64]:
        assert np.array_equal(
            a[col].to_numpy().view(np.uint64), b[col].to_numpy().view(np.uint64)
        ), col


@needs_ncu_report
@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_same_raw_table_as_ncu_report(report: Path) -> None:
    """Every shared report, every launch, every value ncuroof reads: the decoder equals ncu_report
    bit for bit, and ``auto`` verifies it on a sample and keeps the decoder's table."""
    cat = catalog.load()
    ref = read_ncu_rep(report, cat)
    ours = parser.read(report, cat, reader="fast")
    theirs = parser.read(report, cat, reader="ncu_report")
    assert_same_tables(theirs.drop(columns="reader"), ours.drop(columns="reader"))
    assert_same_tables(ref, decode.read_nvr(report, cat))
    assert ref["nvtx_range"].notna().any() == (
        report.name.startswith(("cutlass", "gene", "nsight"))
    )
    auto = parser.read(report, cat)
    assert (
        auto["reader"]
        .str.fullmatch(
            rf"ncuroof decoder, verified against ncu_report on \d+ of {len(ref)} launches"
        )
        .all()
    )
    assert_same_tables(theirs.drop(columns="reader"), auto.drop(columns="reader"))
    assert (theirs["reader"] == "ncu_report (--reader ncu_report)").all()


@needs_ncu_report
def test_generated_report_reads_as_n_launches_both_ways(tmp_path: Path) -> None:
    big = tmp_path / "big.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 2000)
    cat = catalog.load()
    ref = read_ncu_rep(big, cat)
    assert len(ref) == 2000
    ticks: list[int] = []
    ours = decode.read_nvr(
        big,
        cat,
        progress=lambda total: (ticks.append(total), lambda n=1: ticks.append(-n))[1],
        chunk=700,
    )
    assert ticks[0] == 2000 and -sum(ticks[1:]) == 2000
    assert_same_tables(ref, ours)
    ticks.clear()
    split = decode.read_nvr(
        big,
        cat,
        progress=lambda total: (ticks.append(total), lambda n=1: ticks.append(-n))[1],
        chunk=300,
        processes=3,
    )
    assert ticks[0] == 2000 and -sum(ticks[1:]) == 2000
    assert_same_tables(ref, split)
    launches = list(decode.iter_results(big.read_bytes(), big, cat))
    stamps = decode.read_stamps(big)
    assert list(stamps["seq"]) == [launch.seq for launch in launches]
    assert stamps["seq"].is_monotonic_increasing and stamps["seq"].is_unique, (
        "ncu's sequence numbers keep increasing"
    )
    assert stamps["thread_id"].nunique() == 1 and (stamps["timestamp"] > 1.6e9).all()


def test_unknown_format_version_falls_back_or_says_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = shared("nsight-training__manual_nvtx.ncu-rep")
    cat = catalog.load()
    monkeypatch.setattr(decode, "FORMAT_VERSION", 6)
    with pytest.raises(ReportFormatError) as err:
        parser.read(report, cat, reader="fast")
    assert_one_line_error(err, report, "--reader ncu_report")
    if importlib.util.find_spec("ncu_report") is not None:
        monkeypatch.setattr(decode, "FORMAT_VERSION", 7)
        expected = parser.read(report, cat, reader="fast")
        monkeypatch.setattr(decode, "FORMAT_VERSION", 6)
        got = parser.read(report, cat)
        assert_same_tables(expected.drop(columns="reader"), got.drop(columns="reader"))
        assert (
            got["reader"]
            == "ncu_report (the built-in decoder does not know this report: report format version 7"
            " (known: 6))"
        ).all()


def _shorten_block(data: bytes, block: int) -> bytes:
    """Delete one byte in the middle of ``block``'s payload and lower its payload size by one."""
    for index, pos, header, start in decode._blocks(data, Path("x")):
        if index == block:
            size = header.payload_size
            header.payload_size = size - 1
            raw = header.SerializeToString()
            cut = start + size // 2
            return (
                data[:pos] + struct.pack("<I", len(raw)) + raw + data[start:cut] + data[cut + 1 :]
            )
    raise AssertionError(f"no block {block}")


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xF4]) + data[at + 1 :]


DAMAGES = {  # (report, damage, what the message names); cases from issue 14
    "shortened block": (
        "nsight-training__manual_nvtx.ncu-rep",
        lambda d: _shorten_block(d, 11),
        "launch 1 in block 11",
    ),
    "flipped name byte": (
        "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
        lambda d: _flip(d, 198828),
        "launch 0 in block 2",
    ),
}


@pytest.mark.parametrize("reader", ["auto", "fast"])
@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_payload_is_one_line_exit_2(tmp_path: Path, reader: str, damage: str) -> None:
    name, edit, where = DAMAGES[damage]
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(edit(shared(name).read_bytes()))
    proc = subprocess.run(
        [*NCUROOF, "analyze", str(bad), "-o", str(tmp_path / "out"), "--reader", reader],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if (
        damage == "flipped name byte" and reader == "auto"
    ):  # framing holds: ncu_report decides, and reads it
        assert proc.returncode == 0, proc.stderr
        k = pd.read_csv(tmp_path / "out" / "launches.csv")
        assert (
            k["reader"]
            .str.startswith(f"ncu_report (the built-in decoder could not decode it: {where} (byte ")
            .all()
        )
        assert (
            k.loc[0, "status"] == "corrupt_record"
            and "damaged record: its names hold bytes" in k.loc[0, "notes"]
        )
        return
    assert_clean_failure(proc, bad, None, where, "damaged")
    assert [p.name for p in tmp_path.iterdir()] == ["bad.ncu-rep"], (
        "no output, no temporary directory"
    )


def test_fast_reader_without_ncu_report(tmp_path: Path) -> None:
    """Where ncu_report has no wheel (aarch64, macOS), .ncu-rep input is read by our decoder."""
    report = shared("gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep")
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['ncu_report'] = None\n")
    env = {"PYTHONPATH": f"{blocker}:{REPO / 'src'}", "PATH": "/usr/bin:/bin"}
    out = tmp_path / "out"
    proc = subprocess.run(
        [*NCUROOF, "analyze", str(report), "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    kernels = pd.read_csv(out / "launches.csv")
    assert list(kernels["kernel_name"]) == ["kernel_assign_6"] * 4
    assert kernels["nvtx_range"].str.endswith("CalFRhs0 > dzv_ak").all()
    proc = subprocess.run(
        [*NCUROOF, "analyze", str(report), "-o", str(tmp_path / "o2"), "--reader", "ncu_report"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert_clean_failure(proc, report, tmp_path / "o2", "pip install ncu-report")


# edit(result message) in place
def _edit_results(src: Path, dst: Path, edit, extra: bytes = b"") -> None:  # noqa: ANN001
    """Write ``src`` with every result message edited (through the decoder's own message types), and
    ``extra`` (raw fields) appended to each."""
    data = src.read_bytes()
    classes = decode._classes()
    out = [data[: 8 + struct.unpack_from("<I", data, 4)[0]]]
    for _, _, header, start in decode._blocks(data, src):
        payload = data[start : start + header.payload_size]
        if header.num_results:
            result = classes["Result"].FromString(payload[4:])
            edit(result)
            body = result.SerializeToString() + extra
            payload = struct.pack("<I", len(body)) + body
            header.payload_size = len(payload)
        raw = header.SerializeToString()
        out.append(struct.pack("<I", len(raw)) + raw + payload)
    dst.write_bytes(b"".join(out))


def _second_domain(result) -> None:  # noqa: ANN001
    result.nvtx.domains.add(id=5, name=b"MyDomain")
    result.nvtx.threads[0].stacks.add(domain=5).ranges.add(name=b"inner")


def _other_thread(result) -> None:  # noqa: ANN001
    result.nvtx.threads.add(tid=result.thread_id + 1).stacks.add(domain=0).ranges.add(
        name=b"other thread"
    )


@needs_ncu_report
@pytest.mark.parametrize(
    "edit",
    [
        lambda r: setattr(r, "demangled", b""),
        lambda r: setattr(r, "function", b""),
        _second_domain,
        _other_thread,
        lambda r: setattr(r, "thread_id", r.thread_id + 7),
    ],
    ids=[
        "no demangled name",
        "no function name",
        "second NVTX domain",
        "NVTX of another thread",
        "launch on another thread",
    ],
)
def test_edited_reports_agree_with_ncu_report(tmp_path: Path, edit) -> None:  # noqa: ANN001
    """Names and NVTX cases no shared report has, made by editing one: the decoder
    agrees with ncu_report."""
    edited = tmp_path / "edited.ncu-rep"
    _edit_results(shared("nsight-training__manual_nvtx.ncu-rep"), edited, edit)
    cat = catalog.load()
    ref = read_ncu_rep(edited, cat)
    assert_same_tables(ref, decode.read_nvr(edited, cat))


def test_unknown_reader_is_refused() -> None:
    with pytest.raises(ValueError) as err:
        parser.read(shared("nsight-training__manual_nvtx.ncu-rep"), catalog.load(), reader="upb")
    assert_one_line_error(err, None, "reader", "ncu_report")


def test_split_decode_is_the_same_table_and_its_errors_are_whole(tmp_path: Path) -> None:
    """Slices decoded by worker processes give the one-process table; a damage or a repeated block
    in a worker's slice is the same one-line error, naming the file and the launch."""
    big = tmp_path / "big.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 1200)
    cat = catalog.load()
    one = decode.read_nvr(big, cat, processes=1)
    assert len(one) == 1200 and list(one["launch_id"]) == list(range(1200))
    assert_same_tables(one, decode.read_nvr(big, cat, processes=2, chunk=100))
    data = big.read_bytes()
    blocks = list(decode._blocks(data, big))
    index, pos, header, start = blocks[-3]  # the third-last block: in the last slice
    launch = sum(h.num_results for _, _, h, _ in blocks[:-3])
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(_shorten_block(data, index))
    with pytest.raises(ReportFormatError) as info:
        decode.read_nvr(bad, cat, processes=2)
    assert info.value.path == bad
    assert_one_line_error(info, bad, "damaged", f"launch {launch} ", f"block {index} ")
    first = next(i for i, (_, _, h, _) in enumerate(blocks) if h.num_results)
    last = blocks[-1][1]  # the first launch's block again before the last one: two slices apart
    bad.write_bytes(data[:last] + data[blocks[first][1] : blocks[first + 1][1]] + data[last:])
    with pytest.raises(ReportFormatError) as info:
        decode.read_nvr(bad, cat, processes=2)
    assert_one_line_error(info, bad, "repeated", "record 1199", "record 0 ")


def test_records_checked_at_once_agree_with_the_ledger_one_by_one() -> None:
    """blocks.check_records (NumPy, for records whose sequence numbers increase per process) raises
    exactly where LaunchLedger.add, record by record, raises, with its message; on random records
    with repeated, lowered and missing sequence numbers and repeated bytes."""
    from ncuroof.parser.ncu_rep.framing import LaunchLedger, ResultRecord, check_records

    rng = np.random.default_rng(29)
    path, outcomes = Path("r.ncu-rep"), set()
    for _ in range(400):
        n = int(rng.integers(1, 12))
        data = bytes(rng.integers(0, 3, 4 * n, dtype=np.uint8))  # short records: repeats happen
        pids = rng.integers(1, 3, n).tolist()
        seqs = np.cumsum(rng.integers(-1, 3, n)).tolist()
        missing = rng.random() < 0.1
        records = [
            (i, i, 4 * i, 4 * i + 4, p, None if missing and rng.random() < 0.5 else s, False)
            for i, (p, s) in enumerate(zip(pids, seqs))
        ]
        try:
            ledger = LaunchLedger(path, data)
            for r in records:
                ledger.add(ResultRecord(*r[:6]))
            expected = None
        except ReportFormatError as exc:
            expected = exc.message
        try:
            check_records(path, data, records)
            got = None
        except ReportFormatError as exc:
            got = exc.message
        assert got == expected
        outcomes.add(None if expected is None else expected.split(":")[0])
    assert len(outcomes) == 3  # clean, repeated and out of sequence all drawn


def test_decoding_processes_follow_cores_size_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(decode.PROCESSES_ENV, raising=False)
    monkeypatch.setattr(decode, "cores", lambda: 4)
    assert [decode._processes(n) for n in (10, 49_999, 50_000, 100_000, 10**6)] == [1, 1, 2, 4, 4]
    monkeypatch.setenv(
        decode.PROCESSES_ENV, "1"
    )  # what a dask worker of a fleet sets (ncuroof.runs.fleet.analyze_on_worker)
    assert decode._processes(10**6) == 1
    monkeypatch.setenv(decode.PROCESSES_ENV, "many")
    assert decode._processes(10**6) == 4


@pytest.mark.parametrize(
    "name", ["alife_cuda__profile_output.ncu-rep", "cutlass-panjd123__4f3955ed3c_report.ncu-rep"]
)
def test_values_read_in_one_match_equal_values_read_one_by_one(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The learned reader (decode._Doubles) against the value-by-value decoder, on every launch."""
    cat = catalog.load()
    report = shared(name)
    learned: list[object] = []
    learn = decode._Doubles.learn
    monkeypatch.setattr(
        decode._Doubles,
        "learn",
        classmethod(lambda cls, layout, raws: learned.append(1) or learn(layout, raws)),
    )
    fast = decode.read_nvr(report, cat, processes=1)
    monkeypatch.setattr(decode._Doubles, "learn", classmethod(lambda cls, layout, raws: None))
    assert learned and len(fast) > len(learned), "the learned reader read most launches"
    assert_same_tables(decode.read_nvr(report, cat, processes=1), fast)


@needs_ncu_report
def test_launches_of_another_process_stay_in_range_0_both_ways(tmp_path: Path) -> None:
    """ncu_report makes no new range for blocks of another process (block header field 6: process
    ID, host, executable); the decoder's range_id 0 agrees. (A result of another kind than a kernel
    launch, as range replay writes, makes the decoder give the report to ncu_report.)"""
    data = bytearray(shared("ESMM-Research__profile_output.ncu-rep").read_bytes())
    blocks = [b for b in decode._blocks(bytes(data), Path("x")) if b[2].num_results]
    for _, pos, _, start in blocks[-2:]:
        at = bytes(data[pos:start]).find(b"\x08\xceG\x12\t127.0.0.1")  # process 9166 on 127.0.0.1
        assert at > 0
        data[pos + at + 1] = 0xCF  # process 9167
    report = tmp_path / "two-processes.ncu-rep"
    report.write_bytes(bytes(data))
    cat = catalog.load()
    ref = read_ncu_rep(report, cat)
    assert list(ref["range_id"]) == [0, 0, 0, 0] and list(ref["launch_id"]) == [0, 1, 2, 3]
    assert_same_tables(ref, decode.read_nvr(report, cat))


def test_a_dead_worker_s_slice_is_decoded_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker killed before it answers (out of memory, a signal) costs time, not the analysis."""
    from ncuroof.parser.ncu_rep import parallel

    big = tmp_path / "big.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 600)
    cat = catalog.load()
    monkeypatch.setattr(
        parallel, "_BOOT", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    )
    assert_same_tables(
        decode.read_nvr(big, cat, processes=1), decode.read_nvr(big, cat, processes=3)
    )


def test_an_unknown_reader_is_refused_whatever_the_input() -> None:
    cat = catalog.load()
    for name in ("ESMM-Research__metrics.csv", "ESMM-Research__profile_output.ncu-rep"):
        with pytest.raises(ValueError) as err:
            parser.read(shared(name), cat, reader="bogus")
        assert_one_line_error(err, None, "reader", "ncu_report")


def _strings_after_first_result(src: Path, dst: Path) -> None:
    """Write ``src`` with the first result block's string table moved into header-only blocks of one
    string each right after it, as an H800 report of ncu 2023.3 lays them out: that launch names
    strings defined later in the file. Every string keeps its index."""
    data = src.read_bytes()
    classes = decode._classes()
    out = [data[: 8 + struct.unpack_from("<I", data, 4)[0]]]
    moved: list[bytes] = []
    for _, _, header, start in decode._blocks(data, src):
        payload = data[start : start + header.payload_size]
        first = header.num_results and not moved and len(header.strings.strings) > 0
        if first:
            moved = list(header.strings.strings)
            del header.strings.strings[:]
        raw = header.SerializeToString()
        out.append(struct.pack("<I", len(raw)) + raw + payload)
        for string in moved if first else ():
            one = classes["BlockHeader"](payload_size=0)
            one.strings.strings.append(string)
            raw = one.SerializeToString()
            out.append(struct.pack("<I", len(raw)) + raw)
    dst.write_bytes(b"".join(out))


@needs_ncu_report
def test_strings_defined_after_the_launch_that_names_them(tmp_path: Path) -> None:
    """Names resolve against the whole report's string table, in every slice and process; ncu_report
    reads such a report as the original."""
    cat = catalog.load()
    moved = tmp_path / "moved.ncu-rep"
    _strings_after_first_result(shared("nsight-training__manual_nvtx.ncu-rep"), moved)
    ref = read_ncu_rep(shared("nsight-training__manual_nvtx.ncu-rep"), cat).drop(columns="source")
    assert_same_tables(ref, read_ncu_rep(moved, cat).drop(columns="source"))
    assert_same_tables(ref, decode.read_nvr(moved, cat).drop(columns="source"))
    assert parser.read(moved, cat)["reader"].str.startswith("ncuroof decoder, verified").all()
    big, big_moved = tmp_path / "big.ncu-rep", tmp_path / "big-moved.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 1200)
    _strings_after_first_result(big, big_moved)
    assert_same_tables(
        decode.read_nvr(big, cat, processes=1).drop(columns="source"),
        decode.read_nvr(big_moved, cat, processes=2, chunk=100).drop(columns="source"),
    )


def _first_copy_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bring back the decoder's old reading of a repeated metric: the first copy (issue 20)."""
    scan = decode._Wanted._scan

    def first(self, metrics):  # noqa: ANN001, ANN202
        found, earlier = scan(self, metrics)
        for mid, i in earlier[::-1]:
            found[mid] = i
        return found, []

    monkeypatch.setattr(decode._Wanted, "_scan", first)


@needs_ncu_report
def test_auto_reads_with_ncu_report_where_the_sample_differs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A decoder that misreads a repeated metric (GH200: gpu__time_duration.sum beside the
    NVLink-C2C counters) is caught by the sample check, and the whole report is
    read by ncu_report."""
    report = shared("cs599k__silu-2025-04-18-v1.ncu-rep")
    cat = catalog.load()
    ref = parser.read(report, cat, reader="ncu_report").drop(columns="reader")
    _first_copy_wins(monkeypatch)
    wrong = decode.read_nvr(report, cat)
    assert (wrong["gpu__time_duration.sum"] != ref["gpu__time_duration.sum"]).all()
    got = parser.read(report, cat)
    assert_same_tables(ref, got.drop(columns="reader"))
    assert (
        got["reader"]
        .str.fullmatch(
            r"ncu_report \(the built-in decoder differed from it: launch 0:"
            r" gpu__time_duration\.sum is "
            r"\d+ decoded, \d+ in ncu_report\)"
        )
        .all()
    )


def test_counts_that_disagree_with_rates_are_flagged_without_a_second_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where no ncu_report checks the decoder (--reader fast, aarch64), X.sum / X.sum.per_second
    must equal gpu__time_duration.sum; a misread duration flags the launch, naming the pair."""
    report = shared("cs599k__rms_norm_triton_looping.ncu-rep")
    cat = catalog.load()
    good = parser.read(report, cat, reader="fast")
    assert good["input_notes"].isna().all()
    _first_copy_wins(monkeypatch)
    raw = parser.read(report, cat, reader="fast")
    pair = raw["dram__bytes_read.sum"] / raw["dram__bytes_read.sum.per_second"] * 1e9
    apart = (pair - raw["gpu__time_duration.sum"]).abs() / raw["gpu__time_duration.sum"]
    assert (apart > 0.005).all()
    assert (
        raw["input_notes"]
        .str.match(
            r"inconsistent values: \S+\.sum / \S+\.sum\.per_second is [\d.]+ ns but "
            r"gpu__time_duration\.sum is \d+ ns \((0\.[5-9]\d|1\.\d\d)% apart\)"
        )
        .all()
    )
    k = ncuroof.load(report, reader="fast")
    assert all("inconsistent_read" in schema.flag_codes(f) for f in k["flags"])


@needs_ncu_report
def test_a_launch_the_decoder_cannot_decode_goes_to_ncu_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A launch that frames well but does not decode is damaged only if
    ncu_report fails on it too."""
    report = shared("nsight-training__manual_nvtx.ncu-rep")
    cat = catalog.load()
    ref = parser.read(report, cat, reader="ncu_report").drop(columns="reader")
    launch = decode._SliceReader.launch
    monkeypatch.setattr(
        decode._SliceReader,
        "launch",
        lambda self, buf, index, block, offset: (
            (_ for _ in ()).throw(decode.DecodeError("a layout never seen"))
            if block == 12
            else launch(self, buf, index, block, offset)
        ),
    )
    with pytest.raises(decode.PayloadError) as err:
        parser.read(report, cat, reader="fast")
    assert_one_line_error(
        err, report, "launch 2 ", "block 12 ", "byte 119733", "a layout never seen"
    )
    got = parser.read(report, cat)
    assert_same_tables(ref, got.drop(columns="reader"))
    assert (
        got["reader"]
        .str.startswith(
            "ncu_report (the built-in decoder could not decode it: launch 2 in block 12"
        )
        .all()
    )


@needs_ncu_report
def test_a_result_field_never_seen_goes_to_ncu_report(tmp_path: Path) -> None:
    """A field no verified report has (here field 40 of each result) is not guessed at: fast
    declines, auto reads with ncu_report and says why."""
    edited = tmp_path / "new-field.ncu-rep"
    _edit_results(
        shared("nsight-training__manual_nvtx.ncu-rep"),
        edited,
        lambda r: None,
        extra=b"\xc0\x02\x01",
    )
    cat = catalog.load()
    with pytest.raises(ReportFormatError) as err:
        parser.read(edited, cat, reader="fast")
    assert_one_line_error(err, edited, "launch 0", "Result", "[(40, 0)]")
    got = parser.read(edited, cat)
    assert (
        got["reader"]
        .str.startswith(
            "ncu_report (the built-in decoder does not know this report: launch 0: Result fields"
        )
        .all()
    )
    ref = parser.read(shared("nsight-training__manual_nvtx.ncu-rep"), cat, reader="ncu_report")
    assert_same_tables(
        ref.drop(columns=["reader", "source"]), got.drop(columns=["reader", "source"])
    )


@needs_ncu_report
def test_a_sample_check_that_cannot_run_never_refuses_the_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ncu_report failing on the sample cut from a report reads the report itself; failing on the
    report too leaves the decoder's table, said unverified, instead of refusing a
    report one reader reads.
    """
    report = shared("nsight-training__manual_nvtx.ncu-rep")
    cat = catalog.load()
    ref = parser.read(report, cat, reader="ncu_report").drop(columns="reader")

    def no_sample(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise ReportFormatError(
            "ncu_report could not read it (a test)", tmp_path / "sample.ncu-rep"
        )

    monkeypatch.setattr(parser, "against_ncu_report", no_sample)
    got = parser.read(report, cat)
    assert_same_tables(ref, got.drop(columns="reader"))
    assert (
        got["reader"]
        == "ncu_report (the sample check against it could not run: ncu_report could not read it (a"
        " test))"
    ).all()
    monkeypatch.setattr(parser, "read_ncu_rep", no_sample)
    got = parser.read(report, cat)
    assert_same_tables(ref, got.drop(columns="reader"))
    assert (
        got["reader"]
        .str.startswith("ncuroof decoder, not verified: ncu_report cannot read this report")
        .all()
    )


@pytest.mark.parametrize(
    "name", ["nsight-training__manual_nvtx.ncu-rep", "cs599k__silu-2025-04-18-v1.ncu-rep"]
)
def test_sample_cut_from_the_decoder_s_blocks_is_the_walked_cut(tmp_path: Path, name: str) -> None:
    """The sample check cuts its report from the blocks the decoder recorded (no second walk): the
    same bytes as a cut from walking the report, dropped blocks' string tables included; and on a
    report whose strings follow its first result (a dropped result block carries them)."""
    cat = catalog.load()
    moved = tmp_path / "moved.ncu-rep"
    _strings_after_first_result(shared(name), moved)
    for report in (shared(name), moved):
        blocks: list[decode.Block] = []
        df = decode.read_nvr(report, cat, blocks=blocks)
        for launches in ([0], [len(df) - 1], verify.sample_launches([], len(df), extra=2)):
            walked, recorded = tmp_path / "walked.ncu-rep", tmp_path / "recorded.ncu-rep"
            assert verify.cut_report(report, launches, walked) == verify.cut_report(
                report, launches, recorded, blocks
            )
            assert walked.read_bytes() == recorded.read_bytes()


@needs_ncu_report
def test_sample_read_in_two_parts_gives_the_verdict_of_one_read(tmp_path: Path) -> None:
    """The sample check's early part (read while the report decodes, verify.EarlySample) and the
    learned launches read after it give the verdict of the whole sample read at once: the same
    launches compared, agreement, and the same first difference on a table changed at a learned
    launch the early part does not hold (here: the second slice's first launch)."""
    report = tmp_path / "big.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), report, 1200)
    cat = catalog.load()
    blocks: list[object] = []
    df = decode.read_nvr(report, cat, processes=2, blocks=blocks)
    learned = df.attrs[decode.LEARNED]
    early = verify.EarlySample(report, cat, blocks, len(df), [0])
    late = [i for i in learned if i not in early.launches]
    assert late, "some learned launches are read after the early part"
    whole = verify.against_ncu_report(report, df, cat, learned, blocks)
    assert whole.launches == len(verify.sample_launches(learned, len(df))) and not whole.difference
    assert verify.against_ncu_report(report, df, cat, learned, blocks, early=early) == whole
    changed = df.copy()
    metric = "gpu__time_duration.sum"
    changed.loc[late[-1], metric] = changed.loc[late[-1], metric] * 2
    whole = verify.against_ncu_report(report, changed, cat, learned, blocks)
    assert whole.difference.startswith(f"launch {late[-1]}: {metric} is ")
    early = verify.EarlySample(report, cat, blocks, len(df), [0])
    assert verify.against_ncu_report(report, changed, cat, learned, blocks, early=early) == whole


@needs_shared
def test_block_headers_read_through_the_file_agree_with_parsed_ones(tmp_path: Path) -> None:
    """The walk that reads block headers with pread and gives result headers of a learned byte
    shape without parsing them (blocks._Headers) plans every report as the walk that parses every
    header: the same result blocks (payload sizes of every length of varint included), strings,
    version and recorded blocks."""
    import mmap

    grown = tmp_path / "grown.ncu-rep"  # payload sizes of 3 and 4 varint bytes in one report
    extra = iter([0, 0, 2_100_000])  # the last header, of a learned shape, gets 4 bytes
    _edit_results(
        shared("nsight-training__manual_nvtx.ncu-rep"),
        grown,
        lambda r: r.metrics.append(b"\x08\x01" + b"x" * next(extra)),
    )
    sizes = {
        (h.payload_size.bit_length() + 6) // 7
        for _, _, h, _ in decode._blocks(grown.read_bytes(), grown)
        if h.num_results
    }
    assert len(sizes) == 2, sizes
    for report in [*REPORTS, grown]:
        with report.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            parsed, read = [], []
            plan = decode._plan(mm, report, parsed)
            assert decode._plan(mm, report, read, f.fileno()) == plan, report.name
            assert read == parsed, report.name


@needs_ncu_report
@pytest.mark.parametrize(
    "name",
    [
        "alife_cuda__profile_output.ncu-rep",  # 143 launches, 10 layouts, in turn
        "nsight-training__manual_nvtx.ncu-rep",  # opcode tables
        "cs599k__silu-2025-04-19-v1.ncu-rep",  # one double of ncu's short form, the rest integers
    ],
)
def test_launches_of_many_layouts_and_opcode_tables_are_read_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A report whose kernels take turns, some with opcode tables or few doubles: after the first
    launch of each layout none is decoded in full (each window of launches made a table at once,
    rows and columns in launch order), and the table equals ncu_report's bit for bit, in one
    process and split over two, in windows of 40 launches."""
    source = shared(name)
    big = tmp_path / "big.ncu-rep"
    _make_big_report()(source, big, 900)
    cat = catalog.load()
    ref = read_ncu_rep(big, cat)
    full: list[int] = []
    parsed = decode._parsed_launch
    monkeypatch.setattr(decode, "_parsed_launch", lambda *a: full.append(1) or parsed(*a))
    ours = decode.read_nvr(big, cat, processes=1, chunk=10)
    assert 0 < len(full) <= len(read_ncu_rep(source, cat)), "launches decoded in full"
    assert_same_tables(ref, ours)
    assert_same_tables(ref, decode.read_nvr(big, cat, processes=2, chunk=10))


def test_workers_leave_no_result_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's result goes through a temporary file of its own (read once the worker has ended,
    so the two processes' memory does not add up); none is left after a read, a worker's error or a
    worker killed before it answers."""
    from ncuroof.parser.ncu_rep import parallel

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    big = tmp_path / "big.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 600)
    cat = catalog.load()
    one = decode.read_nvr(big, cat, processes=1)
    assert_same_tables(one, decode.read_nvr(big, cat, processes=3))
    assert not list(temp.iterdir())
    data = big.read_bytes()
    blocks = list(decode._blocks(data, big))
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(_shorten_block(data, blocks[-3][0]))  # damaged in the last worker's slice
    with pytest.raises(ReportFormatError):
        decode.read_nvr(bad, cat, processes=3)
    assert not list(temp.iterdir())
    monkeypatch.setattr(
        parallel, "_BOOT", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    )
    assert_same_tables(one, decode.read_nvr(big, cat, processes=3))
    assert not list(temp.iterdir())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # no temporary file: no worker
    assert_same_tables(one, decode.read_nvr(big, cat, processes=3))


@needs_ncu_report
def test_generated_report_with_varied_values_reads_as_ncu_report_does(tmp_path: Path) -> None:
    """make_big_report --vary: every copy's counts, durations and cycles differ by one factor of
    1 +- 5 %, rates kept; ncu_report and the decoder read the same values, no two durations alike,
    and every count still agrees with its rate and the duration (no note from the rate check)."""
    big = tmp_path / "varied.ncu-rep"
    _make_big_report()(shared("ESMM-Research__profile_output.ncu-rep"), big, 800, vary=0.05)
    cat = catalog.load()
    ref = read_ncu_rep(big, cat)
    assert_same_tables(ref, decode.read_nvr(big, cat, processes=2, chunk=50))
    duration = ref["gpu__time_duration.sum"]
    assert duration.nunique() == 800
    factor = duration.to_numpy()[4::4] / duration.to_numpy()[0]  # copies of launch 0
    assert (np.abs(factor - 1) <= 0.05).all() and np.ptp(factor) > 0.01
    assert parser.read(big, cat, reader="fast")["input_notes"].isna().all()
