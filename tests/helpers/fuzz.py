"""Mutation generators and a case runner for ncuroof's corrupt-input promise (issue 14).

Every case is a damaged copy of a shared fixture, made at test time with a fixed seed (the
fixtures are never copied into the repository). :func:`run_case` runs ``ncuroof analyze`` on one
case in-process through ``ncuroof.cli.main`` (in a forked child for report cases, so an
abort inside ``ncu_report`` is seen as a signal instead of killing the harness) and
:func:`verdict` checks the promise:

* exit 0 with whole outputs (``launches.csv``, ``points.csv``, ``roofline.html``), or exit 2 with
  exactly one line on stderr that names the input file;
* no traceback, no signal, no internal error (exit 3, ``cli.INTERNAL_ERROR``), no file left
  beside the output directory;
* no value that was finite and non-zero in the undamaged input's kernels table turned zero or
  non-finite in a launch whose status is ``ok`` and that carries no flag or note;
* no launch added without a note, and no damaged launch reported as ncu's failed measurement or
  missing metrics (a status that changed to ``failed_measurement``/``no_roofline_metrics``).

The families follow the mutation campaign of issue 14; the ``repz_`` ones (issue 32) damage the
same reports compressed as ncu 2026.3 writes them.
"""

from __future__ import annotations

import io
import math
import os
import pickle
import random
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "fixtures"
EMBEDDED = REPO / "fixtures" / "third_party"


def _real(name: str) -> Path | None:
    """The repository's copy of a real input, else the shared one (tests.helpers.reports'
    rule; not imported from there: this module is imported by scripts without pytest)."""
    return next((f / name for f in (EMBEDDED, SHARED) if (f / name).is_file()), None)


#: Small reports (fast to decode) that cover ncu 2020-2025 and NVTX.
REPORTS = (
    "nsight-training__manual_nvtx.ncu-rep",
    "RooflineAnalysis_On_NVIDIA_GPU__output0.ncu-rep",
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
    "ESMM-Research__profile_output.ncu-rep",
)
#: Reports also damaged as ``.ncu-repz`` (ncu 2025 and 2026.2).
REPZ = ("ESMM-Research__profile_output.ncu-rep", "ai-infra-notes__leetgpu_matmul_full.ncu-rep")
#: CSV exports: details page (old and new ncu), raw page with and without units, two runs
#: written into one file.
CSVS = (
    "ESMM-Research__metrics.csv",
    "GPU-Roofline-Profiler__saxpy.csv",
    "RooflineAnalysis_On_NVIDIA_GPU__output0.csv",
    "accelsim-test__algo23_details.csv",
    "accelsim-test__algo23_raw.csv",
    "llm-perf-opt__kernel_0001_ncu.metrics.csv",
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.csv",
    "gene-pop2020__out_nvroof_ncuroof_region-dgdxy-1.csv",
)
#: Columns of launches.csv whose values the "no silent zero / non-finite" check compares.
VALUE_COLUMNS = (
    "time_s",
    "sm_clock_hz",
    "fp64_flop",
    "fp32_flop",
    "fp16_flop",
    "dram_bytes",
    "l2_bytes",
    "l1_bytes",
    "fp64_flop_per_s",
    "fp32_flop_per_s",
    "dram_bytes_per_s",
    "l2_bytes_per_s",
)


@dataclass(frozen=True)
class Case:
    """One damaged input: its family, a short description, the bytes and the
    fixture it came from."""

    family: str
    name: str
    data: bytes
    suffix: str
    origin: str


@dataclass(frozen=True)
class Block:
    """One block of a ``.ncu-rep``: offset of its u32 header size, header bytes, payload span."""

    start: int
    header: bytes
    payload_start: int
    payload_size: int

    @property
    def end(self) -> int:
        return self.payload_start + self.payload_size


def blocks(data: bytes) -> list[Block]:
    """Walk the framing of an undamaged report (:func:`ncuroof.parser.ncu_rep.framing.walk`)."""
    from ncuroof.parser.ncu_rep.framing import walk

    return [
        Block(pos, data[pos + 4 : start], start, header.payload_size)
        for _, pos, header, start in walk(data, Path("undamaged"))
    ]


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _with_payload_size(header: bytes, size: int) -> bytes:
    """The block header with field 5 (payload size) set to ``size``, other fields kept."""
    from ncuroof.parser.ncu_rep.protobuf import varint as read_varint

    out, i = bytearray(), 0
    while i < len(header):
        start = i
        key, i = read_varint(header, i)
        wire = key & 7
        if wire == 0:
            value, i = read_varint(header, i)
            out += _varint(key) + _varint(size) if key >> 3 == 5 else header[start:i]
            continue
        if wire == 2:
            length, i = read_varint(header, i)
            i += length
        else:
            i += 8 if wire == 1 else 4
        out += header[start:i]
    return bytes(out)


def _splice(data: bytes, b: Block, payload: bytes, header: bytes | None = None) -> bytes:
    header = b.header if header is None else header
    return data[: b.start] + struct.pack("<I", len(header)) + header + payload + data[b.end :]


def report_cases(name: str, data: bytes, rng: random.Random, per_family: int) -> Iterator[Case]:
    """Damaged copies of one report, ``per_family`` of each report family."""
    bl = blocks(data)
    results = [b for b in bl[1:] if b.payload_size > 1]  # block 0 is the session block
    full = [b for b in bl if b.payload_size > 1]
    hsize = 8 + struct.unpack("<I", data[4:8])[0]

    def case(family: str, what: str, out: bytes) -> Case:
        return Case(family, f"{name}: {what}", out, ".ncu-rep", name)

    for _ in range(per_family):
        cut = rng.randrange(1, len(data))
        yield case("truncate", f"cut at byte {cut}", data[:cut])
        b = rng.choice(bl)
        yield (
            case("truncate_at_block", f"cut at block end {b.end}", data[: b.end])
            if b.end < len(data)
            else case("truncate_at_block", f"cut at block start {b.start}", data[: b.start])
        )
        yield from _flips(data, bl, full, hsize, rng, case)
        if results:
            yield from _block_edits(data, results, rng, case)
        b = rng.choice(full)
        at = rng.randrange(b.payload_start, b.end)
        n = min(rng.choice((8, 64, 512)), b.end - at)
        yield case("zero_fill", f"{n} zero bytes at {at}", data[:at] + bytes(n) + data[at + n :])
    yield case("concatenate", "the report twice", data + data)


def _flip(case: Callable[..., Case], family: str, data: bytes, at: int, rng: random.Random) -> Case:
    """``data`` with the byte at ``at`` XORed with a random non-zero mask."""
    x = rng.randrange(1, 256)
    return case(
        family, f"XOR 0x{x:02x} at {at}", data[:at] + bytes([data[at] ^ x]) + data[at + 1 :]
    )


def _flips(data, bl, full, hsize: int, rng: random.Random, case) -> Iterator[Case]:
    """One flipped byte in the file header, in a block's payload and in a block's header."""
    yield _flip(case, "flip_file_header", data, rng.randrange(4, hsize), rng)
    b = rng.choice(full)
    yield _flip(case, "flip_payload", data, rng.randrange(b.payload_start, b.end), rng)
    b = rng.choice(bl)
    yield _flip(case, "flip_block_header", data, rng.randrange(b.start + 4, b.payload_start), rng)


def _block_edits(data: bytes, results: list[Block], rng: random.Random, case) -> Iterator[Case]:
    """A result block twice, removed, and one byte shorter (its size field kept consistent)."""
    i = rng.randrange(len(results))
    b = results[i]
    yield case(
        "duplicate_block",
        f"result block {i + 1} twice",
        data[: b.end] + data[b.start : b.end] + data[b.end :],
    )
    yield case("remove_block", f"result block {i + 1} removed", data[: b.start] + data[b.end :])
    b = rng.choice(results[:-1] or results)  # the recipe: not the last block
    at = rng.randrange(b.payload_start, b.end)
    payload = data[b.payload_start : at] + data[at + 1 : b.end]
    yield case(
        "shorten_block",
        f"result block {i + 1} one byte shorter at {at}",
        _splice(data, b, payload, _with_payload_size(b.header, b.payload_size - 1)),
    )


def compress(
    data: bytes, frames: int = 1, skippable: bool = False, content_size: bool = True
) -> bytes:
    """``data`` as ncu 2026.3 writes a ``.ncu-repz``: zstd (level 3) of the same bytes, in
    ``frames`` frames, with a skippable frame before and between them when ``skippable``."""
    import zstandard

    cctx = zstandard.ZstdCompressor(level=3, write_content_size=content_size)
    skip = struct.pack("<II", 0x184D2A53, 7) + b"ncuroof"
    step = -(-len(data) // frames)
    parts = [cctx.compress(data[i : i + step]) for i in range(0, len(data), step)]
    return (skip if skippable else b"") + (skip if skippable else b"").join(parts)


def bomb(declared: int = 1 << 40) -> bytes:
    """A zstd frame that declares ``declared`` decompressed bytes and holds one raw
    block of 4 (RFC 8878)."""
    header = bytes([0xE0]) + declared.to_bytes(8, "little")  # single segment, 8-byte content size
    return b"\x28\xb5\x2f\xfd" + header + (1 | 4 << 3).to_bytes(3, "little") + b"NVR\x00"


def repz_cases(name: str, data: bytes, rng: random.Random, per_family: int) -> Iterator[Case]:
    """Damaged ``.ncu-repz`` copies of one report (issue 32): the compressed stream cut or flipped,
    the report flipped before compressing, and a bomb that declares a terabyte."""
    packed = compress(data)

    def case(family: str, what: str, out: bytes) -> Case:
        return Case(family, f"{name}: {what}", out, ".ncu-repz", name)

    for _ in range(per_family):
        cut = rng.randrange(1, len(packed))
        yield case("repz_truncate", f"compressed stream cut at byte {cut}", packed[:cut])
        at = rng.randrange(4, len(packed))
        yield case(
            "repz_flip_compressed",
            f"XOR 0x{(x := rng.randrange(1, 256)):02x} at compressed byte {at}",
            packed[:at] + bytes([packed[at] ^ x]) + packed[at + 1 :],
        )
        at = rng.randrange(4, len(data))
        yield case(
            "repz_flip_report",
            f"XOR 0x{(x := rng.randrange(1, 256)):02x} at report byte {at}, then compressed",
            compress(data[:at] + bytes([data[at] ^ x]) + data[at + 1 :], frames=2, skippable=True),
        )
    yield case("repz_bomb", "a frame declaring 2^40 bytes", bomb())


def _csv_lines(data: bytes) -> tuple[list[bytes], int]:
    """Lines of a CSV export (with their ends) and the index of its header row."""
    lines = data.splitlines(keepends=True)
    head = next(
        i
        for i, ln in enumerate(lines)
        if ln.lstrip(b"\xef\xbb\xbf").startswith(b'"ID","Process ID"')
    )
    return lines, head


def _cells(line: bytes) -> list[bytes]:
    import csv

    return [c.encode() for c in next(csv.reader([line.decode("utf-8", "replace")]))]


def _join(cells: list[bytes], end: bytes = b"\n") -> bytes:
    return b",".join(b'"' + c.replace(b'"', b'""') + b'"' for c in cells) + end


def _value_cell(lines: list[bytes], head: int, rng: random.Random) -> tuple[int, int] | None:
    """A (line, column) of a numeric value cell of a metric the reader keeps."""
    header = [c.decode() for c in _cells(lines[head])]
    details = "Metric Value" in header
    wanted = (
        "gpu__time_duration",
        "dram__bytes",
        "sm__cycles_elapsed",
        "smsp__sass_thread_inst_executed_op",
        "lts__t_bytes",
        "Duration",
        "DRAM",
        "SM Frequency",
        "Elapsed Cycles",
    )
    cand = []
    for i in range(head + 1, len(lines)):
        if not lines[i].startswith(b'"'):
            continue
        cells = _cells(lines[i])
        if len(cells) != len(header) or not cells[0].strip().isdigit():
            continue
        if details:
            name = cells[header.index("Metric Name")].decode("utf-8", "replace")
            if any(w in name for w in wanted):
                cand.append((i, header.index("Metric Value")))
        else:
            cand += [(i, j) for j, h in enumerate(header) if any(h.startswith(w) for w in wanted)]
    return rng.choice(cand) if cand else None


_BAD_VALUES = (
    "-262,784",
    "inf",
    "-inf",
    "1.7e308",
    "1e300",
    "nan",
    "-1",
    "abc",
    "12..5",
    "1e-320",
    "99999999999999999999999",
)


def _set_cell(lines: list[bytes], i: int, j: int, value: bytes) -> bytes:
    cells = _cells(lines[i])
    cells[j] = value
    end = lines[i][len(lines[i].rstrip(b"\r\n")) :]
    return b"".join(lines[:i] + [_join(cells, end or b"\n")] + lines[i + 1 :])


def csv_cases(name: str, data: bytes, rng: random.Random, per_family: int) -> Iterator[Case]:
    """Damaged copies of one CSV export, ``per_family`` of each CSV family."""
    lines, head = _csv_lines(data)
    header = _cells(lines[head])

    def case(family: str, what: str, out: bytes) -> Case:
        return Case(family, f"{name}: {what}", out, ".csv", name)

    rows = [
        i
        for i in range(head + 1, len(lines))
        if lines[i].startswith(b'"') and _cells(lines[i])[0].strip().isdigit()
    ]
    for _ in range(per_family):
        yield from _cell_edits(lines, head, header, rng, case)
        yield from _column_edits(lines, head, header, rng, case)
        yield from _repeated_launch_id(lines, rows, rng, case)
        cut = rng.randrange(len(lines[head]) + sum(map(len, lines[:head])), len(data))
        yield case("truncate_line", f"cut at byte {cut}", data[:cut])
    yield case("encoding", "UTF-16", data.decode("utf-8", "replace").encode("utf-16"))
    yield case(
        "encoding",
        "latin-1 with a BOM",
        b"\xef\xbb\xbf" + data.decode("utf-8", "replace").encode("latin-1", "replace"),
    )
    yield case("line_ends", "CRLF", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    yield case("line_ends", "CR only", data.replace(b"\r\n", b"\n").replace(b"\n", b"\r"))


def _cell_edits(lines, head: int, header, rng: random.Random, case) -> Iterator[Case]:
    """A value cell that is no number, and a unit ncu never writes."""
    cell = _value_cell(lines, head, rng)
    if cell is not None:
        v = rng.choice(_BAD_VALUES)
        yield case("bad_number", f"{v} at line {cell[0]}", _set_cell(lines, *cell, v.encode()))
    cell = _value_cell(lines, head, rng)
    if cell is not None and b"Metric Unit" in header:
        j = header.index(b"Metric Unit")
        yield case(
            "unknown_unit",
            f"unit 'furlong' at line {cell[0]}",
            _set_cell(lines, cell[0], j, b"furlong"),
        )


def _column_edits(lines, head: int, header, rng: random.Random, case) -> Iterator[Case]:
    """A column deleted, a column twice, two columns swapped."""
    j = rng.randrange(len(header))
    cols = [k for k in range(len(header)) if k != j]
    yield case("delete_column", f"column {header[j]!r} deleted", _project(lines, head, cols))
    j = rng.randrange(len(header))
    yield case(
        "duplicate_column",
        f"column {header[j]!r} twice",
        _project(lines, head, [*range(len(header)), j]),
    )
    perm = list(range(len(header)))
    a, b = rng.sample(perm, 2) if rng.random() < 0.7 else (0, 1)
    perm[a], perm[b] = perm[b], perm[a]
    yield case("reorder_columns", f"columns {a} and {b} swapped", _project(lines, head, perm))


def _repeated_launch_id(lines, rows: list[int], rng: random.Random, case) -> Iterator[Case]:
    """One launch's rows given another launch's ID (none where the file has one launch)."""
    distinct = {_cells(lines[n])[0]: n for n in rows}
    if len(distinct) < 2:
        return
    i, k = rng.sample(sorted(distinct.values()), 2)
    ids = {_cells(lines[i])[0]}
    new = _cells(lines[k])[0]
    out = [
        (
            _join([new, *_cells(ln)[1:]], ln[len(ln.rstrip(b"\r\n")) :] or b"\n")
            if n in rows and _cells(ln)[0] in ids
            else ln
        )
        for n, ln in enumerate(lines)
    ]
    yield case(
        "repeat_launch_id", f"launch {ids.pop().decode()} renamed {new.decode()}", b"".join(out)
    )


def _project(lines: list[bytes], head: int, cols: list[int]) -> bytes:
    out = []
    for n, ln in enumerate(lines):
        if n < head or not ln.startswith(b'"'):
            out.append(ln)
            continue
        cells = _cells(ln)
        out.append(
            _join(
                [cells[k] for k in cols if k < len(cells)], ln[len(ln.rstrip(b"\r\n")) :] or b"\n"
            )
        )
    return b"".join(out)


def all_cases(seed: int = 14, per_report: int = 3, per_csv: int = 3) -> list[Case]:
    """Every case of every family from the shared fixtures, deterministic for one ``seed``."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for name in REPORTS:
        if path := _real(name):
            cases += report_cases(name, path.read_bytes(), rng, per_report)
    zrng = random.Random(
        seed + 32
    )  # its own stream: the cases of the other families stay those of before issue 32
    for name in REPZ:
        if path := _real(name):
            cases += repz_cases(name, path.read_bytes(), zrng, per_report)
    for name in CSVS:
        if path := _real(name):
            cases += csv_cases(name, path.read_bytes(), rng, per_csv)
    return cases


@dataclass
class Outcome:
    """What one analyze run did."""

    exit_code: int | None
    signal: int | None
    stderr: str
    output: str
    files: list[str]
    leftovers: list[str]
    launches: object = None  # DataFrame of launches.csv when written


def _analyze_in_process(
    inputs: list[Path], outdir: Path, command: str = "analyze"
) -> tuple[int, str, str]:
    """Run ``ncuroof.cli.main`` as the console script would: (exit code, stderr, stdout).

    Python warnings are recorded (every occurrence) and written to the captured stderr.
    """
    import traceback
    import warnings
    from contextlib import redirect_stderr, redirect_stdout

    from ncuroof.cli import main

    argv = [command, *map(str, inputs), "-o", str(outdir), "-q"]
    err, out = io.StringIO(), io.StringIO()
    code = 0
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(out), redirect_stderr(err):
        warnings.simplefilter("always")
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:  # noqa: BLE001 - a traceback is what the harness reports
            traceback.print_exception(exc, file=err)
            code = 99
    for w in caught:
        err.write(f"{w.category.__name__}: {w.message}\n")
    return code, err.getvalue(), out.getvalue()


def _forked(fn: Callable[[], tuple[int, str, str]]) -> tuple[int | None, int | None, str, str]:
    """Run ``fn`` in a forked child: (exit code, signal, stderr, stdout)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            code, err, out = fn()
            payload = pickle.dumps((code, err, out))
        except BaseException as exc:  # noqa: BLE001
            payload = pickle.dumps((98, f"harness: {exc!r}", ""))
        with os.fdopen(w, "wb") as f:
            f.write(payload)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status), "", ""
    code, err, out = pickle.loads(data) if data else (97, "harness: no result from the child", "")
    return code, None, err, out


def run_case(case: Case, workdir: Path, fork: bool | None = None) -> Outcome:
    """Write ``case`` into ``workdir`` and run ``ncuroof analyze -q`` on it.

    ``fork`` (default: for ``.ncu-rep`` cases) runs it in a forked child, so that an abort of
    ``ncu_report`` is recorded as a signal.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"case{case.suffix}"
    src.write_bytes(case.data)
    outdir = workdir / "out" / "result"
    outdir.parent.mkdir(exist_ok=True)
    before = set(os.listdir(outdir.parent))
    fork = case.suffix in (".ncu-rep", ".ncu-repz") if fork is None else fork
    if fork:
        code, sig, err, out = _forked(lambda: _analyze_in_process([src], outdir))
    else:
        code, err, out = _analyze_in_process([src], outdir)
        sig = None
    after = set(os.listdir(outdir.parent))
    leftovers = sorted(after - before - {"result"})
    files = sorted(os.listdir(outdir)) if outdir.is_dir() else []
    kernels = None
    if code == 0 and "launches.csv" in files:
        import pandas as pd

        kernels = pd.read_csv(outdir / "launches.csv", keep_default_na=False, na_values=[""])
    return Outcome(code, sig, err, out, files, leftovers, kernels)


def silent_bad_values(kernels: object, reference: object) -> list[str]:
    """Launches whose value was finite and non-zero in ``reference`` and is now 0 or non-finite,
    or any non-finite value, in a launch with status ok and no flag or input note."""
    import numpy as np

    found = []
    k = kernels
    ref = reference.set_index("launch_id") if reference is not None else None  # type: ignore[union-attr]
    for r in k.itertuples(index=False):  # type: ignore[union-attr]
        if r.status != "ok" or (isinstance(r.flags, str) and r.flags):
            continue
        for col in VALUE_COLUMNS:
            v = getattr(r, col, math.nan)
            if isinstance(v, float) and math.isinf(v):
                found.append(f"launch {r.launch_id} {col}={v}")
                continue
            if ref is None or r.launch_id not in ref.index or col not in ref.columns:
                continue
            was = ref.loc[r.launch_id, col]
            was = float(was.iloc[0]) if hasattr(was, "iloc") else float(was)
            if np.isfinite(was) and was != 0 and (not np.isfinite(v) or v == 0):
                found.append(f"launch {r.launch_id} {col}: {was:g} -> {v}")
    return found


def verdict(case: Case, outcome: Outcome, reference: object = None) -> tuple[str, str]:
    """Classify one outcome: ('refused'|'ok'|'ok_flagged'|'FAIL:<kind>', detail)."""
    err = outcome.stderr
    if outcome.signal is not None:
        return "FAIL:signal", f"signal {outcome.signal}"
    if "Traceback" in err:
        return "FAIL:traceback", err.strip().splitlines()[-1]
    if outcome.leftovers:
        return "FAIL:leftover", ", ".join(outcome.leftovers)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    warnings = [ln for ln in lines if "RuntimeWarning" in ln or "Warning:" in ln]
    if outcome.exit_code == 2:
        if len(lines) != 1:
            return "FAIL:not_one_line", " | ".join(lines[:3])
        if "case" + case.suffix not in lines[0]:
            return "FAIL:file_not_named", lines[0]
        return "refused", lines[0]
    if outcome.exit_code != 0:
        return "FAIL:internal_error", " | ".join(lines[:2])
    if warnings:
        return "FAIL:warning", warnings[0]
    if outcome.files[:3] != sorted(["launches.csv", "points.csv", "roofline.html"])[:3] and not {
        "launches.csv",
        "points.csv",
        "roofline.html",
    } <= set(outcome.files):
        return "FAIL:partial_output", ", ".join(outcome.files)
    bad = silent_bad_values(outcome.launches, reference)
    if bad:
        return "FAIL:silent_value", "; ".join(bad[:3])
    import numpy as np

    k, ref = outcome.launches, reference
    damage = _text(k["notes"]).str.contains(DAMAGE_WORDS) | _text(k["flags"]).str.contains(
        DAMAGE_WORDS
    )
    if ref is not None and len(k) != len(ref) and not damage.any():
        if len(k) < len(ref) and case.suffix == ".ncu-rep":
            # A removed block or a cut at a block boundary leaves no trace in a report (issue 14).
            return "lost_undetectable", f"{len(ref)} launches -> {len(k)}"
        return "FAIL:launches_changed", f"{len(ref)} launches -> {len(k)}, no note"
    if ref is not None and len(k) == len(ref):
        blamed = (k["status"].to_numpy() != ref["status"].to_numpy()) & k["status"].isin(
            ["failed_measurement", "no_roofline_metrics"]
        ).to_numpy()
        if (blamed & ~damage.to_numpy()).any():
            i = int(np.flatnonzero(blamed & ~damage.to_numpy())[0])
            return (
                "FAIL:blamed_on_ncu",
                (
                    f"launch {k['launch_id'].iloc[i]}: {ref['status'].iloc[i]} ->"
                    f" {k['status'].iloc[i]}, no damage note"
                ),
            )
    changed = ref is not None and (
        len(k) != len(ref) or (k["status"].to_numpy() != ref["status"].to_numpy()).any()
    )
    return ("ok_flagged" if damage.any() or changed else "ok"), ""


def _text(col: object) -> object:
    """A launches.csv text column as str, '' where empty (read back as NaN)."""
    return col.astype(object).where(col.notna(), "").astype(str)  # type: ignore[union-attr]


#: Words of the notes and flags that say the input was damaged or repaired.
DAMAGE_WORDS = "damaged|corrupt|repeat|duplicate|sequence|refus|impossible|not physical|replaced"
