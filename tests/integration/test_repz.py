"""Compressed reports (.ncu-repz, ncu 2026.3's default) and the fields of ncu 2025.4
and 2026.2 (issue 32).

The .ncu-repz inputs are made at test time from the shared reports the way ncu writes them (zstd of
the same bytes): one frame; several frames with skippable frames and no content sizes. NVIDIA's
ncu_report (2026.2+ reads .ncu-repz) must read each as the original, and ncuroof's decoder must give
the identical raw table from it.
"""

from __future__ import annotations

import dataclasses
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ncuroof import catalog, parser
from ncuroof.errors import InputError, ReportFormatError
from ncuroof.parser.ncu_rep import compressed, decode, protobuf
from ncuroof.parser.ncu_rep.reference import _spec, read_launches
from tests.helpers import fuzz
from tests.helpers.cli import assert_clean_failure
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import needs_ncu_report, shared
from tests.integration.test_decoder import assert_same_tables

#: ncu 2020.1 (V100, ppc64le), 2022.3 (NVTX), 2023.3 (143 launches), 2025.1 (GH200),
#: 2025.2 (B200), 2026.2.1.
NAMES = (
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
    "nsight-training__manual_nvtx.ncu-rep",
    "alife_cuda__profile_output.ncu-rep",
    "cs599k__rms_norm_triton_looping.ncu-rep",
    "accelsim-test__algo23_profile.ncu-rep",
    "ai-infra-notes__leetgpu_matmul_full.ncu-rep",
)
LAYOUTS = {
    "one frame": {},
    "frames, skippable, no sizes": {"frames": 3, "skippable": True, "content_size": False},
}
NCUROOF = [sys.executable, "-m", "ncuroof"]


def _ncu_report_reads_repz() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return tuple(int(x) for x in version("ncu-report").split(".")[:2]) >= (2026, 2)
    except (PackageNotFoundError, ValueError):
        return False


def _bits(rows: list[dict]) -> list[dict]:
    """ncu_report's launch dicts with floats as their bytes (NaN equals NaN)."""
    return [
        {k: struct.pack("<d", v) if isinstance(v, float) else v for k, v in row.items()}
        for row in rows
    ]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", NAMES)
def test_repz_reads_as_the_original(tmp_path: Path, name: str, layout: str) -> None:
    """The decoder gives the identical raw table (ncu_version included) from the .ncu-repz, and
    ncu_report 2026.2+ reads the .ncu-repz itself exactly as the original."""
    src = shared(name)
    repz = tmp_path / "run.ncu-repz"
    repz.write_bytes(fuzz.compress(src.read_bytes(), **LAYOUTS[layout]))
    found = compressed.frames(repz)
    assert (found.count, found.skippable) == ((1, 0) if layout == "one frame" else (3, 3))
    assert (found.declared is None) == (layout != "one frame")
    cat = catalog.load()
    ours = parser.read(repz, cat, reader="fast")
    original = parser.read(src, cat, reader="fast")
    assert (ours["source"] == str(repz)).all()
    assert_same_tables(original.drop(columns="source"), ours.drop(columns="source"))
    assert original["ncu_version"].notna().all() or name.startswith("gene")
    if _ncu_report_reads_repz():
        assert _bits(read_launches(repz, _spec(cat))) == _bits(read_launches(src, _spec(cat)))


@needs_ncu_report
def test_auto_verifies_a_repz_on_the_decompressed_bytes(tmp_path: Path) -> None:
    """--reader auto decodes a .ncu-repz natively and checks it against ncu_report; --reader
    ncu_report reads its decompressed bytes (any ncu_report version can)."""
    name = "alife_cuda__profile_output.ncu-rep"
    repz = tmp_path / "a.ncu-repz"
    repz.write_bytes(fuzz.compress(shared(name).read_bytes(), frames=2, skippable=True))
    cat = catalog.load()
    auto = parser.read(repz, cat)
    assert (
        auto["reader"]
        .str.fullmatch(r"ncuroof decoder, verified against ncu_report on \d+ of 143 launches")
        .all()
    )
    theirs = parser.read(repz, cat, reader="ncu_report")
    assert_same_tables(theirs.drop(columns="reader"), auto.drop(columns="reader"))
    assert list(tmp_path.iterdir()) == [repz]


def test_content_decides_not_the_name(tmp_path: Path) -> None:
    src = shared("ESMM-Research__profile_output.ncu-rep")
    cat = catalog.load()
    ref = parser.read(src, cat, reader="fast").drop(columns="source")
    packed_as_rep = tmp_path / "packed.ncu-rep"
    packed_as_rep.write_bytes(fuzz.compress(src.read_bytes()))
    plain_as_repz = tmp_path / "plain.ncu-repz"
    plain_as_repz.write_bytes(src.read_bytes())
    no_suffix = tmp_path / "report"
    no_suffix.write_bytes(fuzz.compress(src.read_bytes()))
    for p in (packed_as_rep, plain_as_repz, no_suffix):
        assert_same_tables(ref, parser.read(p, cat, reader="fast").drop(columns="source"))


@pytest.mark.parametrize("cut", [5, 12, 100, -1])
def test_truncated_repz_is_one_line_exit_2_nothing_written(tmp_path: Path, cut: int) -> None:
    data = fuzz.compress(shared("ESMM-Research__profile_output.ncu-rep").read_bytes())
    bad = tmp_path / "cut.ncu-repz"
    bad.write_bytes(data[:cut])
    out = tmp_path / "out"
    proc = subprocess.run(
        [*NCUROOF, "analyze", str(bad), "-o", str(out), "-q"], capture_output=True, text=True
    )
    line = assert_clean_failure(proc, bad, out, "truncated", f"byte {len(data[:cut])}", "copy")
    assert line.startswith(f"ncuroof: error: {bad}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.ncu-repz"]


def test_corrupt_stream_is_a_one_line_error(tmp_path: Path) -> None:
    data = bytearray(fuzz.compress(b"NVR\x00" + bytes(range(256)) * 4000))
    data[len(data) // 2] ^= 0xFF  # inside a compressed block: zstd's own error
    bad = tmp_path / "bad.ncu-repz"
    bad.write_bytes(bytes(data))
    with pytest.raises(ReportFormatError) as err:
        parser.read(bad, catalog.load())
    assert_one_line_error(err, bad)
    assert any(w in str(err.value) for w in ("corrupt", "damaged", "truncated"))
    garbage = tmp_path / "tail.ncu-repz"
    garbage.write_bytes(
        fuzz.compress(shared("ESMM-Research__profile_output.ncu-rep").read_bytes()) + b"not zstd"
    )
    with pytest.raises(ReportFormatError) as err:
        parser.read(garbage, catalog.load())
    assert_one_line_error(err, garbage, "zstd", "byte ", "copy")


def test_declared_bomb_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb = tmp_path / "bomb.ncu-repz"
    bomb.write_bytes(fuzz.bomb(1 << 40))
    monkeypatch.setattr(
        compressed, "_decompress", lambda *a: pytest.fail("decompressed a declared bomb")
    )
    with pytest.raises(ReportFormatError) as exc:
        parser.read(bomb, catalog.load())
    assert_one_line_error(
        exc, bomb, "1,099,511,627,776", "max_bytes", "max_ratio", "metrics/thresholds.toml"
    )


def test_undeclared_bomb_is_stopped_at_the_limit(tmp_path: Path) -> None:
    """A stream without content sizes that makes more than the limit is stopped while streaming, the
    temporary file removed: the limit is max(ratio_from_bytes, max_ratio x
    compressed), at most max_bytes.
    """
    bomb = tmp_path / "zeros.ncu-repz"
    bomb.write_bytes(fuzz.compress(b"NVR\x00" + bytes(32 << 20), content_size=False))
    cat = catalog.load()
    small = dataclasses.replace(
        cat,
        thresholds={
            **cat.thresholds,
            "compressed": {"max_bytes": 1 << 30, "max_ratio": 100.0, "ratio_from_bytes": 1 << 20},
        },
    )
    assert compressed.limit_bytes(small, bomb.stat().st_size) == 1 << 20
    assert (
        compressed.limit_bytes(cat, 10) == 1 << 30
        and compressed.limit_bytes(cat, 1 << 40) == 64 << 30
    )
    with pytest.raises(ReportFormatError) as err:
        parser.read(bomb, small)
    assert_one_line_error(err, bomb, "1,048,576 bytes")


def test_the_2026_2_report_is_read_by_the_decoder() -> None:
    """ncu 2026.2.1 writes result fields 36 (PmPcSamplingDataEntries) and 38 (NvtxdInfo) and
    block-header field 10 (NumGraphs, 0): the decoder reads it, values equal to ncu_report's
    (test_decoder checks every shared report bit for bit; here the reader column)."""
    report = shared("ai-infra-notes__leetgpu_matmul_full.ncu-rep")
    df = parser.read(report, catalog.load())
    assert df["ncu_version"].eq("2026.2.1.0").all()
    assert df["reader"].str.startswith("ncuroof decoder").all()


def test_a_block_with_graphs_is_declined(tmp_path: Path) -> None:
    """NumGraphs is verified only at 0: a block that counts graph records is
    unknown to the decoder."""
    assert protobuf.unseen_fields(bytes([0x50, 0x00]), "BlockHeader") == []
    assert protobuf.unseen_fields(bytes([0x50, 0x02]), "BlockHeader") == [(10, 0)]
    assert (
        protobuf.unseen_fields(bytes([0x40, 0x00, 0x48, 0x00]), "BlockHeader") == []
    )  # NumCmdlistResults, NumGraphResults at 0
    assert protobuf.unseen_fields(bytes([0x40, 0x01, 0x48, 0x03]), "BlockHeader") == [
        (8, 0),
        (9, 0),
    ]
    src = shared("ai-infra-notes__leetgpu_matmul_full.ncu-rep").read_bytes()
    first = 8 + struct.unpack_from("<I", src, 4)[0]
    size = struct.unpack_from("<I", src, first)[0]
    header = src[first + 4 : first + 4 + size]
    at = header.rindex(b"\x50\x00")  # field 10 = 0, the block header's last field
    edited = header[:at] + b"\x50\x01" + header[at + 2 :]
    bad = tmp_path / "graphs.ncu-rep"
    bad.write_bytes(src[:first] + struct.pack("<I", len(edited)) + edited + src[first + 4 + size :])
    with pytest.raises(decode.UnsupportedReport) as err:
        decode.read_nvr(bad, catalog.load())
    assert_one_line_error(err, None, "BlockHeader", "[(10, 0)]")  # internal: auto falls back


@needs_ncu_report
def test_ncu_report_and_the_decoder_agree_on_the_repz_of_2026() -> None:
    """The table of the 2026.2.1 report, decoder and ncu_report, column for column (no source)."""
    report = shared("ai-infra-notes__leetgpu_matmul_full.ncu-rep")
    cat = catalog.load()
    pd.testing.assert_frame_equal(
        parser.read(report, cat, reader="ncu_report").drop(columns="reader"),
        parser.read(report, cat, reader="fast").drop(columns="reader"),
        check_exact=True,
    )


def test_clock_control_comes_from_the_report_and_compare_warns(tmp_path: Path) -> None:
    """Result field 25 (ClockStatus: RequestedLock, ExecutedLocked) says whether ncu locked the
    clocks: every shared report was collected with ncu's default (locked); the same report with
    RequestedLock 0 (as --clock-control none writes it) reads as not locked, and compare warns
    about the difference.
    """
    import ncuroof
    from ncuroof.parser import clocks

    src = shared("ESMM-Research__profile_output.ncu-rep")
    locked_tag = (  # field 25, 4 bytes: RequestedLock 1, ExecutedLocked 1
        b"\xca\x01\x04\x08\x01\x10\x01"
    )
    data = src.read_bytes()
    assert data.count(locked_tag) == 4  # one per launch
    unlocked = tmp_path / "none.ncu-repz"
    unlocked.write_bytes(fuzz.compress(data.replace(locked_tag, b"\xca\x01\x04\x08\x00\x10\x00")))
    assert (
        clocks.report_clock(src) == clocks.LOCKED
        and clocks.report_clock(unlocked) == clocks.NOT_LOCKED
    )
    assert clocks.report_clock(shared("ESMM-Research__metrics.csv")) is None
    assert (ncuroof.load(src)["clock_control"] == "locked").all()
    assert (ncuroof.load(unlocked)["clock_control"] == "not locked").all()
    warns = ncuroof.compare_runs(src, unlocked, write=False).warnings
    assert "different clock control: locked before, not locked after" in warns


@needs_ncu_report
def test_metadata_fields_of_the_proto_are_skipped_and_values_stay_ncu_report_s(
    tmp_path: Path,
) -> None:
    """Result fields 37 (GraphViewerDataInfo) and 39 (SectionSetIdentifier), declared in NVIDIA's
    ProfilerReport.proto but in no shared report, added to every launch: the decoder reads the
    report (auto keeps its table) and equals ncu_report; an unknown field number
    is still declined."""
    from tests.integration.test_decoder import _edit_results

    src = shared("nsight-training__manual_nvtx.ncu-rep")
    edited = tmp_path / "meta.ncu-rep"
    _edit_results(src, edited, lambda r: None, extra=b"\xaa\x02\x02\x08\x01" + b"\xba\x02\x04full")
    cat = catalog.load()
    auto = parser.read(edited, cat)
    assert auto["reader"].str.startswith("ncuroof decoder, verified").all()
    assert_same_tables(
        parser.read(edited, cat, reader="ncu_report").drop(columns="reader"),
        auto.drop(columns="reader"),
    )
    unknown = tmp_path / "unknown.ncu-rep"
    _edit_results(src, unknown, lambda r: None, extra=b"\xc8\x03\x01")  # field 57, a varint
    with pytest.raises(decode.UnsupportedReport) as err:
        decode.read_nvr(unknown, cat)
    assert_one_line_error(err, None, "Result", "[(57, 0)]")  # internal: auto falls back


def test_a_compressed_file_that_is_no_report_is_named_so(tmp_path: Path) -> None:
    other = tmp_path / "notes.ncu-repz"
    other.write_bytes(fuzz.compress(b"some text, not a report\n" * 100))
    with pytest.raises(InputError) as err:
        parser.read(other, catalog.load())
    assert_one_line_error(err, other, "zstd", "Nsight Compute report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.ncu-repz"]


def _report_bytes(size: int) -> bytes:
    """``size`` bytes starting as a report (``NVR\\0``), compressible 4x or so."""
    import random

    rng = random.Random(29)
    return b"NVR\x00" + bytes(rng.randrange(16) for _ in range(size - 4))


@pytest.mark.parametrize(
    "layout", [{}, {"frames": 3, "skippable": True}, {"frames": 2, "content_size": False}]
)
def test_decompressed_copy_is_the_bytes_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict
) -> None:
    """The temporary file holds exactly the report's bytes (several buffers' worth, frames with and
    without their sizes, skippable frames between), and neither it nor its directory is left once
    the block ends."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    data = _report_bytes(2 * compressed.CHUNK + 12345)
    repz = tmp_path / "r.ncu-repz"
    repz.write_bytes(fuzz.compress(data, **layout))
    with compressed.uncompressed(repz, catalog.load()) as out:
        assert out.parent.parent == scratch and out.stat().st_size == len(data)
        assert out.read_bytes() == data
    assert list(scratch.iterdir()) == []


def test_every_refusal_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrupt stream, a frame that declares more than it holds, one that is no report, and an
    error of the reader inside the block: one-line errors naming the .ncu-repz, nothing left in
    $TMPDIR."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    cat = catalog.load()
    corrupt = bytearray(fuzz.compress(_report_bytes(1 << 20)))
    corrupt[len(corrupt) // 2] ^= 0xFF
    cases = {
        "corrupt.ncu-repz": bytes(corrupt),
        "short.ncu-repz": fuzz.bomb(1 << 20),  # declares 1 MiB, holds 4 bytes
        "other.ncu-repz": fuzz.compress(b"not a report" * 1000),
    }
    for name, data in cases.items():
        bad = tmp_path / name
        bad.write_bytes(data)
        with pytest.raises((ReportFormatError, InputError)) as err:
            with compressed.uncompressed(bad, cat) as out:
                raise ReportFormatError(f"{out} is damaged at byte 4", out)
        assert_one_line_error(err, bad)
        assert list(scratch.iterdir()) == [], name


@pytest.mark.parametrize("when", ["declared", "writing"])
def test_a_full_disk_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """No room in $TMPDIR, for the size the frames declare or while writing: a one-line error
    saying where and what to do, nothing left."""
    import errno
    import os
    import shutil
    from types import SimpleNamespace

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    repz = tmp_path / "r.ncu-repz"
    repz.write_bytes(fuzz.compress(_report_bytes(1 << 20), content_size=when == "declared"))

    def full(*args: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    if when == "declared":
        monkeypatch.setattr(shutil, "disk_usage", lambda p: SimpleNamespace(free=0))
    else:
        monkeypatch.setattr(os, "write", full)
    with pytest.raises(InputError) as err:
        with compressed.uncompressed(repz, catalog.load()):
            pytest.fail("a full disk was not noticed")
    assert_one_line_error(err, repz, "no room", str(scratch), "TMPDIR")
    assert list(scratch.iterdir()) == []


def _copies(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The compressed reports read from a decompressed copy from here on (compressed._scratch)."""
    made: list[Path] = []
    scratch = compressed._scratch

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        made.append(Path())
        return scratch(*args, **kwargs)

    monkeypatch.setattr(compressed, "_scratch", counted)
    return made


@pytest.mark.parametrize("processes", ["1", "2"])
@pytest.mark.parametrize(
    "layout", [{}, {"frames": 3, "skippable": True}, {"frames": 2, "content_size": False}]
)
def test_a_repz_is_read_forward_with_no_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict, processes: str
) -> None:
    """Frames with their sizes or without (then counted by one pass): the decoder reads the stream
    forward (a worker skips to its slice), the sample check cuts its sample from it, no
    decompressed copy is made, and the table is the original's (issue 32's scale: a copy of 3.5 GB
    cost 4-8 s of writes)."""
    name = "alife_cuda__profile_output.ncu-rep"
    repz = tmp_path / "a.ncu-repz"
    repz.write_bytes(fuzz.compress(shared(name).read_bytes(), **layout))
    monkeypatch.setenv(decode.PROCESSES_ENV, processes)
    made = _copies(monkeypatch)
    cat = catalog.load()
    ours = parser.read(repz, cat)
    assert made == []
    original = parser.read(shared(name), cat)
    assert (ours["source"] == str(repz)).all()
    assert_same_tables(original.drop(columns="source"), ours.drop(columns="source"))
    if parser.have_ncu_report():
        assert ours["reader"].str.fullmatch(r"ncuroof decoder, verified .* of 143 launches").all()


def test_a_repz_read_forward_falls_back_to_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read behind the window kept (no window at all), and a stream that makes more than the
    limits allow (counted, not declared), are read from a decompressed copy, as before: the same
    table, and the copy's error."""
    from ncuroof.parser.ncu_rep import source

    name = "nsight-training__manual_nvtx.ncu-rep"
    cat = catalog.load()
    original = parser.read(shared(name), cat, reader="fast").drop(columns="source")
    sized = tmp_path / "sized.ncu-repz"
    sized.write_bytes(fuzz.compress(shared(name).read_bytes()))
    made = _copies(monkeypatch)
    monkeypatch.setattr(source, "WINDOW", 0)
    assert_same_tables(original, parser.read(sized, cat, reader="fast").drop(columns="source"))
    assert len(made) == 1
    unsized = tmp_path / "unsized.ncu-repz"
    unsized.write_bytes(fuzz.compress(shared(name).read_bytes(), content_size=False))
    small = dataclasses.replace(
        cat,
        thresholds={**cat.thresholds, "compressed": {"max_ratio": 1.0, "ratio_from_bytes": 1000}},
    )
    assert compressed.limit_bytes(small, unsized.stat().st_size) < shared(name).stat().st_size
    assert source.streamable(unsized, small) is None
    with pytest.raises(ReportFormatError) as err:
        parser.read(unsized, small)
    assert_one_line_error(err, unsized, "zstd bomb")
    assert len(made) == 2
    assert source.streamable(unsized, cat) == shared(name).stat().st_size


def test_forward_slices_are_the_bytes_and_refuse_what_they_no_longer_hold(tmp_path: Path) -> None:
    """Slices at growing offsets (the window kept behind them, skips past it) equal the bytes'; one
    before the window raises Backward; a stream that makes fewer or more bytes than declared is a
    ReportFormatError."""
    import random

    from ncuroof.parser.ncu_rep.source import WINDOW, Backward, Forward

    data = _report_bytes(3 * compressed.CHUNK + WINDOW + 777)
    repz = tmp_path / "r.ncu-repz"
    repz.write_bytes(fuzz.compress(data, frames=2))
    rng = random.Random(32)
    with repz.open("rb") as f:
        fwd = Forward(repz, len(data), f)
        at, held = 0, 0  # the next read's start, and how far before it bytes are kept
        while at < len(data):
            n = rng.choice([4, 256, 35_000, compressed.CHUNK + 5])
            back = rng.randrange(min(held, WINDOW) + 1)
            assert fwd[at - back : at + n] == data[at - back : at + n]
            gap = rng.choice([0, 0, 1, 2 * compressed.CHUNK])
            at, held = at + n + gap, (n + back if not gap else 0)
        assert len(fwd) == len(data) and fwd[len(data) - 4 :] == data[-4:]
        with pytest.raises(Backward):
            fwd[0:4]
    for size in (len(data) + 10, len(data) - 10):
        with repz.open("rb") as f, pytest.raises(ReportFormatError) as err:
            Forward(repz, size, f)[size - 4 : size]
        assert_one_line_error(err, repz, "declare")
