"""The protobuf messages of an ``.ncu-rep`` report that ncuroof reads, declared at run time.

Only the fields ncuroof uses are declared; the ``protobuf`` package skips the others. The layout
was verified against NVIDIA's ``ncu_report`` on every report in ``../shared/fixtures`` (see
:mod:`ncuroof.parser.nvr`).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["classes"]

_T = descriptor_pb2.FieldDescriptorProto
_U64, _U32, _DBL, _FLT, _BYTES, _MSG = _T.TYPE_UINT64, _T.TYPE_UINT32, _T.TYPE_DOUBLE, _T.TYPE_FLOAT, _T.TYPE_BYTES, _T.TYPE_MESSAGE
# message name -> (field number, field name, type, repeated, message type); the value kinds form a oneof
_MESSAGES: dict[str, tuple[tuple[int, str, int, bool, str], ...]] = {
    "FileHeader": ((1, "version", _U64, False, ""),),
    "StringTable": ((1, "strings", _BYTES, True, ""),),
    "BlockHeader": ((1, "num_sources", _U64, False, ""), (2, "num_results", _U64, False, ""),
                    (4, "strings", _MSG, False, "StringTable"), (5, "payload_size", _U64, False, "")),
    "Value": ((1, "s", _BYTES, False, ""), (2, "f", _FLT, False, ""), (3, "d", _DBL, False, ""),
              (4, "u32", _U32, False, ""), (5, "u64", _U64, False, "")),
    "Instance": ((1, "key", _MSG, False, "Value"), (2, "value", _MSG, False, "Value")),
    "Metric": ((1, "name_id", _U64, False, ""), (2, "value", _MSG, False, "Value"),
               (3, "instances", _MSG, True, "Instance")),
    "NvtxDomain": ((1, "id", _U64, False, ""), (2, "name", _BYTES, False, "")),
    "NvtxRange": ((1, "name", _BYTES, False, ""),),
    "NvtxStack": ((1, "domain", _U64, False, ""), (3, "ranges", _MSG, True, "NvtxRange")),
    "NvtxThread": ((1, "tid", _U64, False, ""), (2, "stacks", _MSG, True, "NvtxStack")),
    "Nvtx": ((1, "domains", _MSG, True, "NvtxDomain"), (2, "threads", _MSG, True, "NvtxThread"),
             (3, "start_end", _BYTES, True, "")),
    "Stamp": ((1, "thread_id", _U64, False, ""), (2, "seq", _U64, False, ""), (14, "timestamp", _U64, False, "")),
    "Result": ((1, "thread_id", _U64, False, ""), (2, "seq", _U64, False, ""), (5, "mangled", _BYTES, False, ""),
               (6, "function", _BYTES, False, ""), (7, "demangled", _BYTES, False, ""), (8, "kind", _U64, False, ""),
               (13, "metrics", _BYTES, True, ""), (14, "timestamp", _U64, False, ""),
               (21, "nvtx", _MSG, False, "Nvtx")),
}


@cache
def classes() -> dict[str, Any]:
    """The message classes of :data:`_MESSAGES`, declared at run time (proto2: presence is kept)."""
    fdp = descriptor_pb2.FileDescriptorProto(name="ncuroof_nvr.proto", package="ncuroof_nvr", syntax="proto2")
    for name, fields in _MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        if name == "Value":
            msg.oneof_decl.add(name="kind")
        for number, fname, ftype, repeated, mtype in fields:
            f = msg.field.add(name=fname, number=number, type=ftype,
                              label=_T.LABEL_REPEATED if repeated else _T.LABEL_OPTIONAL)
            if mtype:
                f.type_name = f".ncuroof_nvr.{mtype}"
            if name == "Value":
                f.oneof_index = 0
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"ncuroof_nvr.{name}"))
            for name in _MESSAGES}


