"""The ``ncu_report`` read of one report, run in a worker process by :mod:`.reference`.

``ncu_report``'s C++ decoder aborts the whole process (SIGABRT, ``Check failed: count >= 0``) on
some damaged payloads; run here, an abort ends only this worker, and the parent turns it into a
one-line :class:`ncuroof.errors.ReportFormatError`. This file is run by path (``python -c BOOT
_ncu_worker.py REPORT``), imports only the standard library and ``ncu_report`` (no pandas, so it
starts in tens of milliseconds), reads a JSON spec of the metrics to keep on stdin and writes
pickled frames on stdout:

``("total", n)``
    number of launches, first;
``("row", dict)``
    one per launch: metadata (``range_id``, ``launch_id``, names, NVTX) and metric values;
``("error", text)``
    ``load_report`` raised (the report is unreadable); then exit 3;
``("missing", text)``
    ``ncu_report`` cannot be imported; then exit 4.

Strings holding bytes that are not UTF-8 (a flipped byte in a name) come back with U+FFFD in
their place and ``_damaged_text`` set, never as lone surrogates that cannot be written.
"""

from __future__ import annotations

import json
import math
import pickle
import re
import sys
from typing import Any


def clean_text(value: Any) -> tuple[Any, bool]:
    """``value`` with undecodable bytes (lone surrogates) replaced by U+FFFD; whether any were."""
    if not isinstance(value, str):
        return value, False
    try:
        value.encode("utf-8")
        return value, False
    except UnicodeEncodeError:
        pass
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = value.encode("utf-8", "replace")
    return raw.decode("utf-8", "replace"), True


def _nvtx(action: Any) -> str | None:
    try:
        state = action.nvtx_state()
    except Exception:  # noqa: BLE001 - reports without NVTX data raise inside the SWIG layer
        return None
    if state is None:
        return None
    parts: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        names = [str(n) for n in dom.push_pop_ranges()] + [str(n) for n in dom.start_end_ranges()]
        if not names:
            continue
        domain = dom.name()
        prefix = "" if domain in ("", "<default domain>") else f"{domain}:"
        parts.extend(prefix + n for n in names)
    return " > ".join(parts) if parts else None


def _value(metric: Any) -> Any:
    v = metric.value()
    return math.nan if v is None else v


def _metrics(
    action: Any, spec: dict[str, Any], instanced: dict[str, re.Pattern[str]]
) -> dict[str, Any]:
    """The wanted scalar metrics, tensor-path metrics and the kept opcode instances (MMA,
    FP) of one launch."""
    wanted = spec["wanted"]
    prefix, suffixes = spec["ops_prefix"], tuple(spec["ops_suffixes"])
    names = action.metric_names()
    values: dict[str, Any] = {}
    for name in names:
        if name in wanted or (name.startswith(prefix) and name.endswith(suffixes)):
            values[name] = _value(action.metric_by_name(name))
    for opcode_metric, keep in sorted(
        instanced.items()
    ):  # in name order, as the decoder reads them
        if opcode_metric not in names:
            continue
        m = action.metric_by_name(opcode_metric)
        values[opcode_metric] = _value(m)
        keys = m.correlation_ids() if m.has_correlation_ids() else None
        for i in range(m.num_instances() if keys is not None else 0):
            opcode = keys.as_string(i)
            if keep.search(opcode):
                values[f"{opcode_metric}[{opcode}]"] = m.as_double(i)
    return values


def read(path: str, spec: dict[str, Any], out: Any) -> int:
    """Read every launch of ``path`` and write the frames to the binary stream ``out``."""
    try:
        import ncu_report  # type: ignore[import-not-found]
    except ImportError as exc:
        pickle.dump(("missing", str(exc)), out)
        return 4
    try:
        ctx = ncu_report.load_report(path)
    except Exception as exc:  # noqa: BLE001 - the SWIG layer raises plain RuntimeError/Exception
        pickle.dump(("error", str(exc)), out)
        return 3
    spec["wanted"] = frozenset(spec["wanted"])
    instanced = {name: re.compile(pattern) for name, pattern in spec["instanced"].items()}
    base = ncu_report.IAction
    ranges = [ctx.range_by_idx(r) for r in range(ctx.num_ranges())]
    pickle.dump(("total", sum(r.num_actions() for r in ranges)), out)
    out.flush()
    launch = 0
    for range_id, rng in enumerate(ranges):
        for a in range(rng.num_actions()):
            action = rng.action_by_idx(a)
            row = {
                "range_id": range_id,
                "launch_id": launch,
                "kernel_name": action.name(base.NameBase_FUNCTION),
                "kernel_demangled": action.name(base.NameBase_DEMANGLED),
                "nvtx_range": _nvtx(action),
            }
            row.update(_metrics(action, spec, instanced))
            damaged = False
            for key, value in row.items():
                row[key], bad = clean_text(value)
                damaged |= bad
            row["_damaged_text"] = damaged
            pickle.dump(("row", row), out)
            out.flush()
            launch += 1
    return 0


if __name__ == "__main__":
    sys.exit(read(sys.argv[1], json.loads(sys.stdin.read()), sys.stdout.buffer))
