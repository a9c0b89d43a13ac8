"""The protobuf messages of an ``.ncu-rep`` report that ncuroof reads, declared at run time.

Only the fields ncuroof uses are declared; the ``protobuf`` package skips the others. The layout
was verified against NVIDIA's ``ncu_report`` on every report in ``../shared/fixtures`` (see
:mod:`.decode`).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = [
    "classes",
    "SEEN_FIELDS",
    "PROTO_FIELDS",
    "ZERO_ONLY",
    "unseen_fields",
    "fields",
    "field_spans",
    "varint",
]

_T = descriptor_pb2.FieldDescriptorProto
_U64, _U32, _DBL, _FLT, _BYTES, _MSG = (
    _T.TYPE_UINT64,
    _T.TYPE_UINT32,
    _T.TYPE_DOUBLE,
    _T.TYPE_FLOAT,
    _T.TYPE_BYTES,
    _T.TYPE_MESSAGE,
)
# message name -> (field number, field name, type, repeated, message type); the
# value kinds form a oneof
_MESSAGES: dict[str, tuple[tuple[int, str, int, bool, str], ...]] = {
    "FileHeader": ((1, "version", _U64, False, ""),),
    "StringTable": ((1, "strings", _BYTES, True, ""),),
    "BlockHeader": (
        (1, "num_sources", _U64, False, ""),
        (2, "num_results", _U64, False, ""),
        (4, "strings", _MSG, False, "StringTable"),
        (5, "payload_size", _U64, False, ""),
    ),
    "Value": (
        (1, "s", _BYTES, False, ""),
        (2, "f", _FLT, False, ""),
        (3, "d", _DBL, False, ""),
        (4, "u32", _U32, False, ""),
        (5, "u64", _U64, False, ""),
    ),
    "Instance": ((1, "key", _MSG, False, "Value"), (2, "value", _MSG, False, "Value")),
    "Metric": (
        (1, "name_id", _U64, False, ""),
        (2, "value", _MSG, False, "Value"),
        (3, "instances", _MSG, True, "Instance"),
    ),
    "NvtxDomain": ((1, "id", _U64, False, ""), (2, "name", _BYTES, False, "")),
    "NvtxRange": ((1, "name", _BYTES, False, ""),),
    "NvtxStack": ((1, "domain", _U64, False, ""), (3, "ranges", _MSG, True, "NvtxRange")),
    "NvtxThread": ((1, "tid", _U64, False, ""), (2, "stacks", _MSG, True, "NvtxStack")),
    "Nvtx": (
        (1, "domains", _MSG, True, "NvtxDomain"),
        (2, "threads", _MSG, True, "NvtxThread"),
        (3, "start_end", _BYTES, True, ""),
    ),
    "Stamp": (
        (1, "thread_id", _U64, False, ""),
        (2, "seq", _U64, False, ""),
        (14, "timestamp", _U64, False, ""),
    ),
    "Result": (
        (1, "thread_id", _U64, False, ""),
        (2, "seq", _U64, False, ""),
        (5, "mangled", _BYTES, False, ""),
        (6, "function", _BYTES, False, ""),
        (7, "demangled", _BYTES, False, ""),
        (8, "kind", _U64, False, ""),
        (13, "metrics", _BYTES, True, ""),
        (14, "timestamp", _U64, False, ""),
        (21, "nvtx", _MSG, False, "Nvtx"),
    ),
}


#: (field number, wire type) of every field seen in the block headers and result messages of the
#: reports in ``../shared/fixtures`` (ncu 2020.1 to 2026.2), declared or not: a field outside these
#: is something the decoder was never verified on (:func:`unseen_fields`). Names from NVIDIA's
#: ``extras/FileFormat/ProfilerReport.proto`` (as compiled into ``ncu_report`` 2026.3): newer fields
#: that hold nothing the raw table reads are skipped: result 36 ``PmPcSamplingDataEntries`` (ncu
#: 2025.4: PM and PC sampling time series, ``--set full``'s PmSampling section) and 38 ``NvtxdInfo``
#: (ncu 2026.2: device-side NVTX events; the launch's NVTX ranges stay field 21).
SEEN_FIELDS: dict[str, frozenset[tuple[int, int]]] = {
    "BlockHeader": frozenset({(1, 0), (2, 0), (3, 2), (4, 2), (5, 0), (6, 2), (7, 0), (10, 0)}),
    "Result": frozenset(
        {
            (1, 0),
            (2, 0),
            (3, 0),
            (4, 0),
            (5, 2),
            (6, 2),
            (7, 2),
            (8, 0),
            (9, 2),
            (10, 2),
            (11, 2),
            (13, 2),
            (14, 0),
            (15, 2),
            (16, 0),
            (17, 2),
            (18, 2),
            (19, 2),
            (21, 2),
            (22, 0),
            (23, 0),
            (25, 2),
            (28, 2),
            (31, 2),
            (35, 5),
            (36, 2),
            (38, 2),
        }
    ),
}

#: Fields no shared report has that NVIDIA's ProfilerReport.proto (2026.3) declares as metadata the
#: raw table does not read, accepted as seen: result 26 ``ContextName``, 27 ``StreamName``, 32
#: ``PythonStack``, 33/34 ``PartitionDeviceInfoProfiler``/``Sampler`` (MIG partition), 37
#: ``GraphViewerDataInfo`` (graph address, timestamp, launch index), 39 ``SectionSetIdentifier``
#: (the section set's name). Block header 8 ``NumCmdlistResults`` and 9 ``NumGraphResults`` count
#: records of kinds the decoder does not read: accepted at 0 only (:data:`ZERO_ONLY`).
PROTO_FIELDS: dict[str, frozenset[tuple[int, int]]] = {
    "BlockHeader": frozenset({(8, 0), (9, 0)}),
    "Result": frozenset({(26, 2), (27, 2), (32, 2), (33, 2), (34, 2), (37, 2), (39, 2)}),
}

#: Count fields (varints) verified only at 0: block header 8, 9 and 10 (``NumCmdlistResults``,
#: ``NumGraphResults``, ``NumGraphs``; 10 written by ncu 2026.2) count records of kinds the decoder
#: does not read in the block's payload; a block with some is declined.
ZERO_ONLY: dict[str, frozenset[int]] = {"BlockHeader": frozenset({8, 9, 10})}


def unseen_fields(buf: bytes, message: str) -> list[tuple[int, int]]:
    """The fields of a message that no verified report has.

    Parameters
    ----------
    buf : bytes
        One serialized ``message``.
    message : str
        A key of :data:`SEEN_FIELDS` (``BlockHeader`` or ``Result``).

    Returns
    -------
    list of (int, int)
        (field number, wire type) of each field of ``buf`` neither in ``SEEN_FIELDS[message]`` nor
        in :data:`PROTO_FIELDS`, or in
        :data:`ZERO_ONLY` with a value other than 0, in order.

    Raises
    ------
    ValueError
        For a broken wire format (see :func:`fields`); the caller's decoder reports it.
    """
    seen, zero = (
        SEEN_FIELDS[message] | PROTO_FIELDS.get(message, frozenset()),
        ZERO_ONLY.get(message, frozenset()),
    )
    return [
        (number, wire)
        for number, wire, value in fields(buf)
        if (number, wire) not in seen or (number in zero and value)
    ]


def fields(buf: bytes) -> Iterator[tuple[int, int, int | None]]:
    """The top-level fields of a protobuf message, in order, without a schema.

    Parameters
    ----------
    buf : bytes
        One serialized message.

    Yields
    ------
    (int, int, int or None)
        Field number, wire type, and the value of a varint field (None for the other wire types).

    Raises
    ------
    ValueError
        For a broken wire format (field number 0, an unknown wire type, a field past the end).
    """
    for number, wire, value, _, _ in field_spans(buf):
        yield number, wire, value


def field_spans(buf: bytes) -> Iterator[tuple[int, int, int | None, int, int]]:
    """:func:`fields` with where each field is: (field number, wire type, varint value or None,
    byte offset of its key, byte offset just past its end); raises as :func:`fields` does."""
    i, end = 0, len(buf)
    while i < end:
        start = i
        key, i = varint(buf, i)
        number, wire, value = key >> 3, key & 7, None
        if number == 0:
            raise ValueError("field number 0")
        if wire == 0:
            value, i = varint(buf, i)
        elif wire == 2:
            length, i = varint(buf, i)
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > end:
            raise ValueError("a field runs past the end of the message")
        yield number, wire, value, start, i


def varint(buf: bytes, i: int) -> tuple[int, int]:
    """Read one protobuf varint.

    Parameters
    ----------
    buf : bytes
        A buffer.
    i : int
        Where the varint starts.

    Returns
    -------
    (int, int)
        Its value and the index after it.

    Raises
    ------
    ValueError
        If it runs past the end of ``buf``.
    """
    value = shift = 0
    while True:
        if i >= len(buf):
            raise ValueError("a varint runs past the end")
        b = buf[i]
        value |= (b & 0x7F) << shift
        i += 1
        if b < 0x80:
            return value, i
        shift += 7


@cache
def classes() -> dict[str, Any]:
    """The message classes of :data:`_MESSAGES`, declared at run time (proto2: presence is kept)."""
    fdp = descriptor_pb2.FileDescriptorProto(
        name="ncuroof_nvr.proto", package="ncuroof_nvr", syntax="proto2"
    )
    for name, fields in _MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        if name == "Value":
            msg.oneof_decl.add(name="kind")
        for number, fname, ftype, repeated, mtype in fields:
            f = msg.field.add(
                name=fname,
                number=number,
                type=ftype,
                label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL,
            )
            if mtype:
                f.type_name = f".ncuroof_nvr.{mtype}"
            if name == "Value":
                f.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ncuroof_nvr.{name}"))
        for name in _MESSAGES
    }
