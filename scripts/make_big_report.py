#!/usr/bin/env python3
"""Make a scale input: a valid ``.ncu-rep`` with N kernel launches from a real report.

The file header and every non-result block of ``SRC`` are kept in order; then the result blocks
(one launch each) are repeated cyclically until there are N. Repeated copies are rewritten so that
the report stays one that ncu could have written: the string table (carried by the first result
block's header) is not repeated, and ncu's sequence numbers (result field 2) keep increasing
(copy ``c`` of a result gets ``seq + c * (max seq + 1)``). Deterministic: same input, same bytes.
``ncu_report`` reads the output as N launches (tests/test_decoder.py checks it).

``--vary V``: each copy's measured values differ, as a real report's launches of one kernel do:
every double of a metric named ``*.sum``, ``*.avg``, ``*.min`` or ``*.max`` (counts, bytes,
durations, cycles) is multiplied by one factor per copy drawn from 1 ± V (seeded), rates,
percentages, peaks and device attributes kept, so counts still agree with their rates and the
duration. The first copy is the source's, byte for byte.

Usage: ``make_big_report.py SRC OUT --launches N [--vary V]``. Never commit generated reports.
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ncuroof.parser.ncu_rep.protobuf import varint

_U32 = struct.Struct("<I")


def _classes() -> tuple[type, type, type]:
    """Minimal block-header and result messages; other fields are kept as unknown fields."""
    T = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="make_big_report.proto", package="mbr", syntax="proto2"
    )
    block = fdp.message_type.add(name="BlockHeader")
    block.field.add(name="num_results", number=2, type=T.TYPE_UINT64, label=T.LABEL_OPTIONAL)
    block.field.add(name="strings", number=4, type=T.TYPE_BYTES, label=T.LABEL_OPTIONAL)
    block.field.add(name="payload_size", number=5, type=T.TYPE_UINT64, label=T.LABEL_OPTIONAL)
    result = fdp.message_type.add(name="Result")
    result.field.add(name="seq", number=2, type=T.TYPE_UINT64, label=T.LABEL_OPTIONAL)
    result.field.add(name="metrics", number=13, type=T.TYPE_BYTES, label=T.LABEL_REPEATED)
    table = fdp.message_type.add(name="StringTable")
    table.field.add(name="strings", number=1, type=T.TYPE_BYTES, label=T.LABEL_REPEATED)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return tuple(
        get(pool.FindMessageTypeByName(f"mbr.{n}"))
        for n in ("BlockHeader", "Result", "StringTable")
    )


def _blocks(data: bytes, header_cls: type) -> tuple[bytes, list[tuple[object, bytes, bytes]]]:
    """The file header bytes and (block header, its framed bytes, payload) of every block."""
    if data[:4] != b"NVR\x00":
        raise SystemExit("not an Nsight Compute report")
    pos = 8 + _U32.unpack_from(data, 4)[0]
    head, blocks = data[:pos], []
    while pos < len(data):
        start = pos + 4 + _U32.unpack_from(data, pos)[0]
        header = header_cls.FromString(data[pos + 4 : start])
        blocks.append((header, data[pos:start], data[start : start + header.payload_size]))
        pos = start + header.payload_size
    return head, blocks


def _renumber(
    payload: bytes, result_cls: type, shift: int, vary: tuple[list[str], float] | None = None
) -> bytes:
    """The payload with each result's sequence number raised by ``shift`` (and its measured values
    multiplied, ``vary``: the names of the report's strings and the factor, :func:`_varied`)."""
    out, at = [], 0
    while at < len(payload):
        n = _U32.unpack_from(payload, at)[0]
        msg = result_cls.FromString(payload[at + 4 : at + 4 + n])
        msg.seq += shift
        if vary is not None:
            _varied(msg.metrics, *vary)
        body = msg.SerializeToString()
        out += [_U32.pack(len(body)), body]
        at += 4 + n
    return b"".join(out)


#: The metrics ``--vary`` multiplies: totals and averages of what a launch did.
_MEASURED = (".sum", ".avg", ".min", ".max")
_DOUBLE = struct.Struct("<d")


def _varied(metrics: list[bytes], names: list[str], factor: float) -> None:
    """Multiply the double value of each :data:`_MEASURED` metric result by ``factor``, in place
    (a metric result: field 1 its name's index in the string table, field 2 its value, whose
    field 3 is a double; the bytes around the value stay as they are)."""
    for j, raw in enumerate(metrics):
        if raw[:1] != b"\x08":
            continue
        name, at = varint(raw, 1)
        if (
            name < len(names)
            and names[name].endswith(_MEASURED)
            and raw[at : at + 3] == b"\x12\x09\x19"
        ):
            value = _DOUBLE.unpack_from(raw, at + 3)[0]
            metrics[j] = raw[: at + 3] + _DOUBLE.pack(value * factor) + raw[at + 11 :]


def _frame(header: object, payload: bytes) -> bytes:
    header.payload_size = len(payload)
    raw = header.SerializeToString()
    return _U32.pack(len(raw)) + raw + payload


def make_big_report(src: Path, out: Path, launches: int, vary: float = 0.0, seed: int = 0) -> None:
    """Write ``out``: ``src``'s non-result blocks, then its result blocks repeated to ``launches``.

    Parameters
    ----------
    src : Path
        A real ``.ncu-rep`` report with at least one result block of one launch.
    out : Path
        The report to write.
    launches : int
        Number of launches (result blocks) in ``out``.
    vary : float, default 0
        Each copy's measured values multiplied by a factor drawn from 1 ± ``vary`` (module
        docstring); 0: copies equal to the source's launches but for their sequence numbers.
    seed : int, default 0
        The seed of those factors.
    """
    header_cls, result_cls, table_cls = _classes()
    head, blocks = _blocks(src.read_bytes(), header_cls)
    names = [
        s.decode("utf-8", "replace")
        for h, _, _ in blocks
        if h.HasField("strings")
        for s in table_cls.FromString(h.strings).strings
    ]
    rng = np.random.default_rng(seed)
    results = [(h, raw, p) for h, raw, p in blocks if h.num_results]
    if not results or any(h.num_results != 1 for h, _, _ in results):
        raise SystemExit(f"{src}: needs result blocks of one launch each")
    max_seq = max(result_cls.FromString(p[4:]).seq for _, _, p in results)
    with out.open("wb") as f:
        f.write(head)
        for h, raw, p in blocks:
            if not h.num_results:
                f.write(raw + p)
        for i in range(launches):
            cycle, (h, raw, p) = i // len(results), results[i % len(results)]
            if cycle == 0:
                f.write(raw + p)
                continue
            copy = type(h)()
            copy.CopyFrom(h)
            copy.ClearField("strings")
            factor = 1.0 + rng.uniform(-vary, vary) if vary else None
            shift = cycle * (max_seq + 1)
            f.write(_frame(copy, _renumber(p, result_cls, shift, factor and (names, factor))))


def main(argv: list[str] | None = None) -> int:
    """Command line: ``make_big_report.py SRC OUT --launches N [--vary V] [--seed S]``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--launches", type=int, required=True)
    ap.add_argument("--vary", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    make_big_report(args.src, args.out, args.launches, args.vary, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
