"""The tables ncuroof produces and consumes, declared in one place.

Three tables flow through the pipeline:

``raw``
    Parser output: one row per kernel launch. The metadata columns of :data:`RAW_META` plus one
    column per ncu metric, named exactly as ncu names it, with values in ncu base units (what
    ``--print-units base`` prints: ns for durations, bytes, cycles, Hz). Instanced metrics are
    flattened to ``metric[instance]`` columns (e.g.
    ``sass__inst_executed_per_opcode_with_modifier_all[IMMA.16832.S8.S8.SAT]``).
``kernels``
    Calculator output: one row per kernel launch, SI units named in each column (:data:`LAUNCHES`).
``points``
    One row per (launch, precision, memory level) with non-zero work (:data:`POINTS`).

Every column is described by a :class:`Column`: its dtype, its unit and its meaning. The
``validate_*`` functions are called where data enters the pipeline and where it leaves the
formulas.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from .errors import InputError

__all__ = [
    "Column",
    "RAW_META",
    "LAUNCHES",
    "POINTS",
    "ACHIEVABLE_POINT",
    "DOTS",
    "KERNEL_SUMMARY",
    "PHASES",
    "INSTRUCTION_POINTS",
    "PRECISIONS",
    "LEVELS",
    "TensorColumns",
    "tensor_columns",
    "tensor_paths",
    "tensor_path",
    "flop_name",
    "work_unit",
    "BOUNDS",
    "STATUSES",
    "DAMAGED",
    "LIST_COLUMNS",
    "cell_text",
    "parse_cell",
    "to_text",
    "from_text",
    "flag_codes",
    "validate_raw",
    "compact_text",
    "COMPACT_TEXT",
    "RAW_COMPACT",
    "validate_launches",
    "validate_points",
    "empty",
    "parse_sources",
    "format_sources",
    "SOURCE_COLUMNS",
    "distinct_sources",
    "ROOF_SOURCES",
    "ROOFS",
    "Note",
    "NOTE_CODES",
    "INCONSISTENT",
    "NA_NOTE",
    "SOURCES_DISAGREE",
    "L2_READS_ONLY",
    "LEVELS_OUT_OF_ORDER",
    "FP16_MOVES",
    "input_notes",
    "SCHEMA_VERSION",
    "RANKS",
    "FAILURES",
    "TIMELINE_LAUNCH",
    "validate_timeline",
]


@dataclass(frozen=True)
class Column:
    """One column of a table: pandas dtype, SI unit (``""`` for none) and meaning."""

    dtype: str
    unit: str
    description: str


#: Non-tensor precisions, in display order. Tensor precisions are ``tensor:<path>``.
PRECISIONS = ("fp64", "fp32", "fp16")
#: Memory levels, from the SM outwards.
LEVELS = ("l1", "l2", "dram")
_TENSOR_PRECISION = "tensor:"


class TensorColumns(NamedTuple):
    """The names of one tensor datapath ``<path>`` (:func:`tensor_columns`). The launch table has
    its four columns after the declared ones for each datapath with work in any launch
    (:func:`ncuroof.model.formulas.compute_launches`; the achievable roof where one applies,
    :func:`ncuroof.model.roofs.fill_achievable`)."""

    name: (
        str  #: ``tensor_<path>``: its roofs' name in ``ceiling_sources`` and ``achievable_sources``
    )
    precision: str  #: ``tensor:<path>``: its precision in the points table
    flop: str  #: ``tensor_<path>_flop`` [FLOP]: tensor-core operations of the datapath (2 per MAC)
    flop_per_s: str  #: ``tensor_<path>_flop_per_s`` [FLOP/s]: its achieved throughput
    peak: str  #: ``peak_tensor_<path>_flop_per_s`` [FLOP/s]: its roof at the measured clock
    achievable: str  #: ``achievable_tensor_<path>_flop_per_s`` [FLOP/s]: its achievable roof


#: Values of the ``bound`` column of the launch table.
BOUNDS = ("memory", "compute", "latency", "unknown")
#: Values of the ``diagnosis`` column of the launch table (:mod:`ncuroof.model.diagnose`).
DIAGNOSES = (
    "memory_near_roof",
    "memory_below_roof",
    "compute_near_roof",
    "compute_below_roof",
    "latency_bound",
    "balanced",
    "instruction_bound",
    "not_classified",
)
#: Values of the ``time_at_roof_bound`` column of the launch table
#: (:mod:`ncuroof.model.speed_of_light`).
TIME_BOUNDS = ("roofline", "sm_units", "memory_units", "launch_floor", "")
#: Values of the ``status`` column of the launch table.
STATUSES = ("ok", "no_roofline_metrics", "failed_measurement", "corrupt_record")
#: Start of the ``input_notes`` of a launch whose record is damaged
#: (:mod:`ncuroof.parser.validate`): values no GPU can produce, no kernel name, no values. Such a
#: launch gets status ``corrupt_record``.
DAMAGED = "damaged record"
#: Start of the ``input_notes`` of a launch whose counts and rates disagree on its duration
#: (:func:`ncuroof.parser.ncu_rep.verify.check_rates`): flagged ``inconsistent_read``.
INCONSISTENT = "inconsistent values"
#: Start of the ``input_notes`` naming the metrics a CSV export printed as n/a
#: (:mod:`ncuroof.parser.csv`): flagged ``na_metrics``.
NA_NOTE = "n/a in the CSV (missing, not 0)"
#: Start of the note of a launch whose sources of one quantity disagree
#: (:mod:`ncuroof.model.evidence`).
SOURCES_DISAGREE = "sources disagree"
#: Start of the note of a launch whose L2 bytes are 0 under a reads-only definition while its write
#: counters hold bytes (:func:`ncuroof.model.evidence.l2_write_evidence`).
L2_READS_ONLY = "L2 reads only"
#: Start of the note of a launch one of whose memory levels counts fewer bytes than the level under
#: it (L1 < L2, L2 < DRAM; :func:`ncuroof.model.evidence.level_order_evidence`).
LEVELS_OUT_OF_ORDER = "levels out of order"
#: Start of the note of a launch whose FP16 FLOPs come from HFMA2.MMA register moves
#: (:func:`ncuroof.model.evidence.opcode_signals`).
FP16_MOVES = "FP16 work probably moves, not math"

#: Code of each note that carries a status or a flag -> the words its text starts with. The code is
#: set where the note is decided (:class:`Note`) and read by code (:func:`ncuroof.model.formulas`,
#: :func:`ncuroof.model.diagnose.launch_flags`); the words are only for people and for notes read
#: back from text (:func:`input_notes`, :func:`from_text`).
NOTE_CODES: dict[str, str] = {
    "damaged_record": DAMAGED,
    "inconsistent_read": INCONSISTENT,
    "na_metrics": NA_NOTE,
    "sources_disagree": SOURCES_DISAGREE,
    "l2_reads_only": L2_READS_ONLY,
    "levels_out_of_order": LEVELS_OUT_OF_ORDER,
    "fp16_moves": FP16_MOVES,
}


class Note(str):
    """One note of a launch: its text (a ``str``: renderers and files see only the words) and its
    ``code`` (a key of :data:`NOTE_CODES`), set where the status or flag it reports is decided.

    ``Note("sources_disagree", "sources disagree: ...")``; a plain ``str`` note has no code.
    """

    code: str

    def __new__(cls, code: str, text: str) -> Note:
        note = super().__new__(cls, text)
        note.code = code
        return note

    def __reduce__(self) -> tuple:
        return (Note, (self.code, str(self)))


def _coded(text: str) -> str:
    """``text`` as a :class:`Note` when it starts with the words of a :data:`NOTE_CODES`
    code, else itself."""
    for code, words in NOTE_CODES.items():
        if text.startswith(words):
            return Note(code, text)
    return text


def input_notes(column: Iterable[object]) -> list[list[str]]:
    """The reader's ``input_notes`` of each launch (``'; '``-joined text of the raw table, or
    missing) as notes, those that report a status or flag (:data:`NOTE_CODES`) as :class:`Note`
    with their code: the one place where the parser's words become codes."""
    return [
        [_coded(t) for t in text.split(LIST_SEPARATOR)] if isinstance(text, str) and text else []
        for text in column
    ]


RAW_META: dict[str, Column] = {
    "source": Column("string", "", "input file the launch was read from"),
    "range_id": Column("int64", "", "ncu range index within the report (0 for CSV input)"),
    "launch_id": Column(
        "int64", "", "ncu result ID: 0-based, report order, as ncu's CSV 'ID' column"
    ),
    "kernel_name": Column("string", "", "function name (ncu --kernel-name-base function)"),
    "kernel_demangled": Column(
        "string", "", "demangled name with template arguments and parameters"
    ),
    "nvtx_range": Column(
        "string", "", "NVTX push/pop ranges active at launch, outermost first, joined by ' > '"
    ),
    "device_name": Column("string", "", "device__attribute_display_name"),
    "cc": Column("string", "", "compute capability, 'major.minor'"),
    "grid": Column("string", "", "grid dimensions '(x, y, z)'"),
    "block": Column("string", "", "block dimensions '(x, y, z)'"),
    "ncu_version": Column("string", "", "Nsight Compute version that wrote the report, when known"),
    "reader": Column(
        "string",
        "",
        "what read the values: ncuroof's decoder (verified against ncu_report on a sample, or not, "
        "and why), NVIDIA's ncu_report (and why), or the CSV reader (ncuroof.parser.read)",
    ),
    "input_notes": Column(
        "string",
        "",
        "what the reader noticed in the input: n/a values, ignored labels, ncu warnings, merges",
    ),
}

LAUNCHES: dict[str, Column] = {
    "source": RAW_META["source"],
    "launch_id": RAW_META["launch_id"],
    "kernel_name": RAW_META["kernel_name"],
    "kernel_demangled": RAW_META["kernel_demangled"],
    "kernel_key": Column(
        "string",
        "",
        "kernel identity chosen by --match (ncuroof.model.summary.kernel_keys): the demangled name"
        " by default",
    ),
    "nvtx_range": RAW_META["nvtx_range"],
    "device_name": RAW_META["device_name"],
    "cc": RAW_META["cc"],
    "grid": RAW_META["grid"],
    "block": RAW_META["block"],
    "time_s": Column("float64", "s", "launch duration"),
    "sm_clock_hz": Column("float64", "Hz", "measured SM clock (sm__cycles_elapsed.avg.per_second)"),
    **{
        f"{p}_flop": Column("float64", "FLOP", f"{p.upper()} floating-point operations")
        for p in PRECISIONS
    },
    "tensor_flop": Column(
        "float64", "FLOP", "tensor-core operations (2 per MAC), summed over one family of datapaths"
    ),
    **{f"{lv}_bytes": Column("float64", "B", f"{lv.upper()} traffic") for lv in LEVELS},
    **{
        f"{p}_flop_per_s": Column("float64", "FLOP/s", f"achieved {p.upper()} throughput")
        for p in PRECISIONS
    },
    "tensor_flop_per_s": Column("float64", "FLOP/s", "achieved tensor throughput"),
    **{
        f"{lv}_bytes_per_s": Column("float64", "B/s", f"achieved {lv.upper()} bandwidth")
        for lv in LEVELS
    },
    **{
        f"peak_{p}_flop_per_s": Column(
            "float64", "FLOP/s", f"{p.upper()} roof at the measured clock"
        )
        for p in PRECISIONS
    },
    **{
        f"peak_{lv}_bytes_per_s": Column(
            "float64", "B/s", f"{lv.upper()} roof at the measured clock"
        )
        for lv in LEVELS
    },
    **{
        f"achievable_{p}_flop_per_s": Column(
            "float64",
            "FLOP/s",
            f"achievable {p.upper()} roof: what a benchmark sustained "
            "(metrics/gpus.toml [[gpu.measured]]) or --achievable-flops; NaN where none",
        )
        for p in PRECISIONS
    },
    **{
        f"achievable_{lv}_bytes_per_s": Column(
            "float64",
            "B/s",
            f"achievable {lv.upper()} roof: what a benchmark sustained "
            "(metrics/gpus.toml [[gpu.measured]]) or --achievable-bandwidth; NaN where none",
        )
        for lv in LEVELS
    },
    "achievable_sources": Column(
        "object",
        "",
        "source of each achievable roof, 'name:source' comma-separated"
        " (dram:measured,fp32:user,tensor_<path>:user); measured: a published measurement in"
        " metrics/gpus.toml, cited in notes",
    ),
    "roof_fraction": Column(
        "float64",
        "1",
        "at the binding point (ncuroof.model.classify.binding_points): flop_per_s / attainable roof"
        " min(peak FLOP/s, AI x peak B/s); NaN without a binding point",
    ),
    "achievable_roof_fraction": Column(
        "float64",
        "1",
        "at the same binding point: flop_per_s / achievable_roof_flop_per_s of the "
        "points table; NaN where no achievable roof applies",
    ),
    "sm_throughput_frac": Column("float64", "1", "ncu Compute (SM) Throughput, fraction of peak"),
    "memory_throughput_frac": Column("float64", "1", "ncu Memory Throughput, fraction of peak"),
    "pm_sample_interval_s": Column(
        "float64",
        "s",
        "PM sampling interval (profiler__pmsampler_interval_time, or _cycles over sm_clock_hz);"
        " NaN where ncu did not sample (samples.csv holds the series)",
    ),
    "waves_per_sm": Column("float64", "1", "launch__waves_per_multiprocessor"),
    "occupancy_frac": Column(
        "float64",
        "1",
        "achieved occupancy: sm__warps_active.avg.pct_of_peak_sustained_active / 100",
    ),
    "theoretical_occupancy_frac": Column(
        "float64", "1", "theoretical occupancy: sm__maximum_warps_per_active_cycle_pct / 100"
    ),
    "hot_pipe": Column(
        "string",
        "",
        "busiest SM pipe (metrics/pipes.toml): the largest pipe of ncu's sm__throughput breakdown, "
        "'' when none",
    ),
    "hot_pipe_frac": Column(
        "float64",
        "1",
        "utilisation of hot_pipe: its .avg.pct_of_peak_sustained_elapsed (else _active) / 100",
    ),
    "hot_memory_unit": Column(
        "string",
        "",
        "the unit behind the memory SpeedOfLight (metrics/pipes.toml [hot_memory_unit]): the"
        " largest unit of ncu's gpu__compute_memory_throughput breakdown, '' when none",
    ),
    "hot_memory_unit_frac": Column(
        "float64",
        "1",
        "utilisation of hot_memory_unit: its .avg.pct_of_peak_sustained_elapsed / 100",
    ),
    # The limiter rules' evidence (ncuroof/model/limiters.py, metrics/limiters.toml [metrics]).
    "sm_count": Column("float64", "1", "device__attribute_multiprocessor_count: SMs of the GPU"),
    "sm_active_frac": Column(
        "float64", "1", "sm__cycles_active.avg / sm__cycles_elapsed.avg: share of cycles SMs ran"
    ),
    "global_load_sectors_per_request": Column(
        "float64",
        "1",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum /"
        " l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum (4 for coalesced 4-byte loads)",
    ),
    "global_store_sectors_per_request": Column(
        "float64",
        "1",
        "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum /"
        " l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    ),
    "warp_cycles_per_issue": Column(
        "float64", "cycle", "smsp__average_warp_latency_per_inst_issued.ratio"
    ),
    "issue_active_frac": Column("float64", "1", "smsp__issue_active.avg.per_cycle_active"),
    "top_stall": Column(
        "string",
        "",
        "the stall reason with the most cycles per issued instruction"
        " (smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio); '' when none",
    ),
    "top_stall_cycles_per_issue": Column("float64", "cycle", "cycles of top_stall per issue"),
    "second_stall": Column("string", "", "the next stall reason; '' when none"),
    "second_stall_cycles_per_issue": Column("float64", "cycle", "cycles of second_stall per issue"),
    "limiter": Column(
        "string",
        "",
        "what limits the launch beyond its roofline point (ncuroof/model/limiters.py):"
        " launch_bound, fence, uncoalesced, request_bound, tail, pipe; '' when no rule fired",
    ),
    "warp_inst": Column(
        "float64",
        "inst",
        "warp instructions executed (smsp__inst_executed.sum; instruction roofline [DING])",
    ),
    **{
        f"{lv}_transactions": Column(
            "float64",
            "sector",
            f"{lv.upper()} transactions, 32 B sectors (metrics/instruction_roofline.toml)",
        )
        for lv in LEVELS
    },
    "peak_warp_inst_per_s": Column(
        "float64", "inst/s", "instruction issue roof: SMs x 4 schedulers x SM clock [DING]"
    ),
    "time_at_roof_s": Column(
        "float64",
        "s",
        "lower bound on the duration: max(roofline bound (precisions sharing a pipe add; "
        "max over pipes and levels), time_s x max(sm_throughput_frac, memory_throughput_frac))",
    ),
    "time_at_roof_bound": Column(
        "string",
        "",
        "which bound set time_at_roof_s: roofline, sm_units, memory_units or launch_floor ('' when"
        " none)",
    ),
    "saving_s": Column(
        "float64",
        "s",
        "time_s - time_at_roof_s, at least 0: the time saved if the launch ran at its speed of"
        " light",
    ),
    "speed_of_light_note": Column(
        "string",
        "",
        "one sentence when the roofline and unit bounds differ by more than 2x, else ''",
    ),
    "expected_flop": Column(
        "float64", "FLOP", "algorithmic FLOPs of the launch from --expect (NaN without)"
    ),
    "expected_dram_bytes": Column(
        "float64", "B", "DRAM bytes the launch must move, from --expect (NaN without)"
    ),
    "flop_source": Column(
        "string",
        "",
        "how FLOPs were obtained, '+'-joined over precisions: 'count', 'rate x time', "
        "'sass_thread_opcodes' or 'sass_warp_opcodes_x32' (metrics/opcodes.toml), or empty",
    ),
    "tensor_source": Column(
        "string",
        "",
        "ops_path (exact), sass_opcodes (estimated), legacy_x512 (approximate), "
        "pipe_tensor=0 (no tensor instruction ran) or empty",
    ),
    **{
        f"{lv}_definition": Column(
            "string", "", f"traffic definition used for {lv.upper()} (metrics/roofline.toml)"
        )
        for lv in LEVELS
    },
    "evidence_sources": Column(
        "string",
        "",
        "the evidence ledger: per precision, level, time and clock every source the input holds,"
        " the used one first ('fp32: rate x time = sass_thread_opcodes (0 % apart) | dram:"
        " dram__bytes.sum = dram__bytes_read.sum + dram__bytes_write.sum | ...'; order of"
        " preference in metrics/opcodes.toml [order])",
    ),
    "peak_source": Column(
        "string",
        "",
        "sources of this launch's roofs, '+'-joined: report (ncu peak_sustained x measured clock), "
        "datasheet (boost clock), user",
    ),
    "ceiling_sources": Column(
        "object",
        "",
        "source of each roof, 'name:source' comma-separated"
        " (fp32:report,dram:datasheet,tensor_<path>:datasheet)",
    ),
    "datasheet_gpu": Column(
        "string", "", "metrics/gpus.toml entry whose datasheet roofs were used, empty if none"
    ),
    "ncu_version": RAW_META["ncu_version"],
    "reader": RAW_META["reader"],
    "clock_control": Column(
        "string",
        "",
        "clocks while ncu profiled: the report's clock status (locked, not locked, lock requested"
        " but not applied; result field 25) and, after a colon, the --clock-control of ncuroof"
        " profile's .ncuroof.json record (ncuroof.parser.clocks.clock_control); empty when neither"
        " says",
    ),
    "bound": Column("string", "", "memory, compute, latency or unknown"),
    "diagnosis": Column(
        "string",
        "",
        "memory_near_roof, memory_below_roof, compute_near_roof, compute_below_roof, latency_bound,"
        " balanced, instruction_bound or not_classified (ncuroof/model/diagnose.py)",
    ),
    "evidence": Column("string", "", "the numbers behind the diagnosis"),
    "advice": Column("string", "", "what to try, from the diagnosis and its numbers"),
    "flags": Column(
        "object",
        "",
        "plausibility flags: a list of (code, text) pairs, code from FLAG_CODES"
        " (ncuroof/model/diagnose.py); written as 'code: text; ...'",
    ),
    "status": Column(
        "string",
        "",
        "ok, no_roofline_metrics, failed_measurement (ncu stored NaN) or corrupt_record (the input"
        " is damaged)",
    ),
    "notes": Column(
        "object", "", "reasons and caveats: a list of sentences; written '; '-separated"
    ),
}

#: The achievable roofs of a point or dot (beside its peak roofs, never instead of them).
ACHIEVABLE_POINT: dict[str, Column] = {
    "achievable_flop_per_s": Column(
        "float64", "FLOP/s", "achievable compute roof of this precision (NaN where none)"
    ),
    "achievable_bytes_per_s": Column(
        "float64", "B/s", "achievable bandwidth roof of this level (NaN where none)"
    ),
    "achievable_flop_source": Column(
        "string", "", "measured (metrics/gpus.toml [[gpu.measured]]), user or empty"
    ),
    "achievable_bytes_source": Column(
        "string", "", "measured (metrics/gpus.toml [[gpu.measured]]), user or empty"
    ),
    "achievable_roof_flop_per_s": Column(
        "float64",
        "FLOP/s",
        "attainable under the achievable roofs: min(achievable FLOP/s, "
        "ai x achievable B/s), a missing achievable roof taken at its peak; NaN where the "
        "point has no achievable roof at all",
    ),
    "achievable_roof_fraction": Column("float64", "1", "flop_per_s / achievable_roof_flop_per_s"),
}

POINTS: dict[str, Column] = {
    "source": RAW_META["source"],
    "launch_id": RAW_META["launch_id"],
    "kernel_name": RAW_META["kernel_name"],
    "precision": Column("string", "", "fp64, fp32, fp16 or tensor:<datapath>"),
    "level": Column("string", "", "l1, l2 or dram"),
    "time_s": LAUNCHES["time_s"],
    "flop": Column("float64", "FLOP", "operations of this precision"),
    "bytes": Column("float64", "B", "traffic at this level"),
    "ai_flop_per_byte": Column(
        "float64", "FLOP/B", "arithmetic intensity: flop_per_s / bytes_per_s"
    ),
    "flop_per_s": Column("float64", "FLOP/s", "achieved throughput (the y of the point)"),
    "bytes_per_s": Column("float64", "B/s", "achieved bandwidth at this level"),
    "peak_flop_per_s": Column("float64", "FLOP/s", "compute roof of this precision"),
    "peak_bytes_per_s": Column("float64", "B/s", "bandwidth roof of this level"),
    "peak_flop_source": Column(
        "string", "", "report, datasheet or user (see kernels ceiling_sources)"
    ),
    "peak_bytes_source": Column("string", "", "report, datasheet or user"),
    "ridge_flop_per_byte": Column(
        "float64", "FLOP/B", "ridge point: peak_flop_per_s / peak_bytes_per_s"
    ),
    "roof_flop_per_s": Column(
        "float64", "FLOP/s", "attainable: min(peak_flop_per_s, ai x peak_bytes_per_s)"
    ),
    "roof_fraction": Column("float64", "1", "flop_per_s / roof_flop_per_s"),
    "bound": Column("string", "", "memory (ai below the ridge) or compute"),
    "estimated": Column(
        "bool", "", "True when the work is estimated (tensor work from SASS opcodes, legacy x512)"
    ),
    "definition": Column("string", "", "traffic definition of the level"),
    **ACHIEVABLE_POINT,
}


#: Aggregated dots: one row per (kernel, precision, level)
#: (:func:`ncuroof.model.summary.aggregate_points`).
DOTS: dict[str, Column] = {
    "kernel_key": LAUNCHES["kernel_key"],
    "kernel_name": RAW_META["kernel_name"],
    "precision": POINTS["precision"],
    "level": POINTS["level"],
    "launches": Column("int64", "", "launches with this point"),
    "time_s": Column("float64", "s", "summed duration of those launches"),
    "flop": Column("float64", "FLOP", "summed operations of this precision"),
    "bytes": Column("float64", "B", "summed traffic at this level"),
    "ai_flop_per_byte": Column("float64", "FLOP/B", "flop / bytes"),
    "flop_per_s": Column(
        "float64", "FLOP/s", "flop / time_s: the time-weighted mean of the launches' rates"
    ),
    "bytes_per_s": Column("float64", "B/s", "bytes / time_s"),
    "peak_flop_per_s": Column(
        "float64", "FLOP/s", "compute roof, time-weighted over launches (NaN if one lacks it)"
    ),
    "peak_bytes_per_s": Column(
        "float64", "B/s", "bandwidth roof, time-weighted over launches (NaN if one lacks it)"
    ),
    "ridge_flop_per_byte": POINTS["ridge_flop_per_byte"],
    "roof_flop_per_s": POINTS["roof_flop_per_s"],
    "roof_fraction": POINTS["roof_fraction"],
    "bound": POINTS["bound"],
    "estimated": Column("bool", "", "any launch's work is estimated"),
    "definition": POINTS["definition"],
    "peak_flop_source": POINTS["peak_flop_source"],
    "peak_bytes_source": POINTS["peak_bytes_source"],
    **{
        name: Column(
            col.dtype,
            col.unit,
            col.description
            + (
                " (time-weighted over launches, NaN if one lacks it)"
                if name in ("achievable_flop_per_s", "achievable_bytes_per_s")
                else ""
            ),
        )
        for name, col in ACHIEVABLE_POINT.items()
    },
}

#: One row per kernel (:func:`ncuroof.model.summary.kernel_summary` then
#: :func:`ncuroof.model.diagnose.diagnose_kernels`): what the page's and the CLI's kernel tables
#: show and what ``compare`` joins.
KERNEL_SUMMARY: dict[str, Column] = {
    "kernel_key": DOTS["kernel_key"],
    "kernel_name": RAW_META["kernel_name"],
    "kernel_label": Column(
        "string", "", "function name, numbered 'name (2)' where kernels share it"
    ),
    "kernel_demangled": RAW_META["kernel_demangled"],
    "launches": Column("int64", "", "launches of the kernel"),
    "time_s": Column(
        "float64", "s", "summed duration: production time with a timeline (--timeline), else ncu's"
    ),
    "profiled_time_s": Column(
        "float64", "s", "summed duration ncu measured (equal to time_s without a timeline)"
    ),
    "time_share": Column(
        "float64",
        "1",
        "time_s over all launches' time (the timeline's kernel time on its device with --timeline)",
    ),
    "in_focus": Column("bool", "", "among the fewest kernels that make up the focus share of time"),
    "precision": Column(
        "string",
        "",
        "the kernel's precision: its main precision, or where that has no roof the roofed "
        "precision with the most work that its binding dot is at (empty without work)",
    ),
    "main_precision": Column(
        "string", "", "main precision: most FLOPs over all launches (empty without work)"
    ),
    "bound": Column("string", "", "the launches' bound of most of the time"),
    "level": Column(
        "string", "", "binding level (ncuroof.model.summary.binding_points), empty without a roof"
    ),
    "ai_flop_per_byte": Column("float64", "FLOP/B", "AI of the binding dot"),
    "flop_per_s": Column(
        "float64",
        "FLOP/s",
        "achieved FLOP/s of the binding dot (else of the outermost main-precision dot)",
    ),
    "roof_fraction": Column("float64", "1", "binding dot: flop_per_s / attainable roof"),
    "achievable_roof_fraction": Column(
        "float64",
        "1",
        "binding dot: flop_per_s / attainable achievable roof "
        "(NaN where no achievable roof applies)",
    ),
    "time_at_roof_s": Column("float64", "s", "summed launches' time_at_roof_s"),
    "saving_s": Column("float64", "s", "summed launches' saving_s"),
    "saving_share": Column("float64", "1", "saving_s over all launches' time"),
    "nvtx_range": Column("string", "", "most common NVTX range path"),
    "ridge_flop_per_byte": Column("float64", "FLOP/B", "ridge of the binding dot"),
    "peak_flop_per_s": Column("float64", "FLOP/s", "compute roof of the binding dot"),
    "peak_bytes_per_s": Column("float64", "B/s", "bandwidth roof of the binding dot"),
    "achievable_flop_per_s": Column(
        "float64", "FLOP/s", "achievable compute roof of the binding dot (NaN where none)"
    ),
    "achievable_bytes_per_s": Column(
        "float64", "B/s", "achievable bandwidth roof of the binding dot (NaN where none)"
    ),
    "achievable_source": Column(
        "string",
        "",
        "sources of the binding dot's achievable roofs, 'name:source' comma-separated "
        "(dram:measured), empty where none",
    ),
    "sm_throughput_frac": Column("float64", "1", "ncu SM throughput, time-weighted"),
    "memory_throughput_frac": Column("float64", "1", "ncu memory throughput, time-weighted"),
    "occupancy_frac": Column("float64", "1", "achieved occupancy, time-weighted"),
    "theoretical_occupancy_frac": Column("float64", "1", "theoretical occupancy, time-weighted"),
    "waves_per_sm": Column(
        "float64", "1", "launch__waves_per_multiprocessor of the kernel's longest launch"
    ),
    "blocks": Column("float64", "1", "blocks of the kernel's longest launch"),
    "threads_per_block": Column("float64", "1", "threads per block of the kernel's longest launch"),
    "clock_spread": Column("float64", "1", "(max - min) / median SM clock over launches"),
    "tensor_flop": Column("float64", "FLOP", "summed tensor work"),
    "device_name": RAW_META["device_name"],
    "expected_flop": Column("float64", "FLOP", "summed --expect FLOPs"),
    "expected_dram_bytes": Column("float64", "B", "summed --expect DRAM bytes"),
    "counted_dram_ai_flop_per_byte": Column(
        "float64", "FLOP/B", "all counted FLOPs (every precision) / DRAM bytes"
    ),
    "hot_pipe": Column("string", "", "the launches' hot pipe of most of the time"),
    "hot_pipe_frac": Column("float64", "1", "hot_pipe_frac, time-weighted over launches"),
    "hot_memory_unit": Column("string", "", "the launches' hot memory unit of most of the time"),
    "hot_memory_unit_frac": Column(
        "float64", "1", "hot_memory_unit_frac, time-weighted over launches"
    ),
    "time_at_roof_bound": Column(
        "string", "", "the launches' time_at_roof_bound of most of the time"
    ),
    "speed_of_light_note": Column(
        "string", "", "the speed_of_light_note of the kernel's longest launch that has one, else ''"
    ),
    **{
        f"{lv}_ai_flop_per_byte": Column(
            "float64", "FLOP/B", f"AI of the main-precision dot at {lv.upper()}"
        )
        for lv in LEVELS
    },
    **{
        f"{lv}_roof_fraction": Column(
            "float64", "1", f"roof fraction of the main-precision dot at {lv.upper()}"
        )
        for lv in LEVELS
    },
    "diagnosis": LAUNCHES["diagnosis"],
    "limiter": LAUNCHES["limiter"],
    "evidence": LAUNCHES["evidence"],
    "advice": LAUNCHES["advice"],
    "flags": LAUNCHES["flags"],
    "status": Column("string", "", "failed_measurement when every launch failed, else ok"),
}


#: Columns whose cells are lists in memory and text in CSV files, with the separator used there.
LIST_SEPARATOR = "; "
LIST_COLUMNS = ("notes", "flags")
#: Columns of the launch table whose cells are, in memory, a launch's roof sources: a tuple of
#: ``(roof, source)`` pairs in the order the roofs were set (roof: a precision, a level or
#: ``tensor_<path>``; source: one of :data:`ROOF_SOURCES`); in files the text ``roof:source,...``
#: (``"fp32:report,dram:datasheet"``), written by :func:`to_text` and read by :func:`from_text`
#: only. Launches share a handful of such tuples (a roof set): code factorizes them,
#: it never parses text.
SOURCE_COLUMNS = ("ceiling_sources", "achievable_sources")
#: Where a roof comes from: ncu's ``peak_sustained`` x the measured clock, a datasheet of
#: ``metrics/gpus.toml``, the user, or a published measurement (achievable roofs).
ROOF_SOURCES = ("report", "datasheet", "user", "measured")


def cell_text(name: str, cell: object) -> str:
    """The text of one list cell: notes joined by :data:`LIST_SEPARATOR`, flags as ``code: text``,
    roof sources (:data:`SOURCE_COLUMNS`) as ``roof:source`` comma-separated.

    Parameters
    ----------
    name : {'notes', 'flags', 'ceiling_sources', 'achievable_sources'}
        The column.
    cell : list or tuple
        Notes (``list[str]``), flags (``list[tuple[str, str]]``) or roof sources
        (``tuple[tuple[str, str], ...]``): the model holds these cells as lists only, their text
        exists in the files and on the pages (the writers call this, the readers
        :func:`parse_cell`).

    Returns
    -------
    str
        Empty for an empty or missing cell.

    Raises
    ------
    TypeError
        For a cell that is text already (a table converted twice: a defect).
    """
    if isinstance(cell, str):
        raise TypeError(f"a {name} cell is text already: {cell[:60]!r}")
    if not isinstance(cell, (list, tuple)):
        return ""
    if name in SOURCE_COLUMNS:
        return format_sources(dict(cell))
    items = [f"{c}: {t}" for c, t in cell] if name == "flags" else [str(x) for x in cell]
    # An item never holds the separator (producers avoid it; this keeps a file
    # parseable regardless).
    return LIST_SEPARATOR.join(x.replace(LIST_SEPARATOR, ", ") for x in items)


def parse_cell(name: str, text: object) -> list | tuple:
    """Inverse of :func:`cell_text`: ``'a; b'`` -> ``['a', 'b']`` (a note with the words of a
    :data:`NOTE_CODES` code as its :class:`Note`); flags -> ``[(code, text), ...]``; roof sources
    -> ``(('fp32', 'report'), ...)``. The readers call it (:func:`from_text`); TypeError for a cell
    that is a list already."""
    if isinstance(text, (list, tuple)):
        raise TypeError(f"a {name} cell is a {type(text).__name__} already, not text")
    if name in SOURCE_COLUMNS:
        return tuple(parse_sources(text).items())
    if not isinstance(text, str) or not text:
        return []
    parts = text.split(LIST_SEPARATOR)
    if name != "flags":
        return [_coded(p) for p in parts] if name == "notes" else parts
    return [tuple(p.split(": ", 1)) if ": " in p else ("other", p) for p in parts]


def _each_distinct(name: str, cells: pd.Series, convert) -> list:
    """``convert(name, cell)`` of every cell, each distinct cell converted once (a report's launches
    share a handful of roof sets)."""
    codes, uniques = pd.factorize(cells.to_numpy(dtype=object), use_na_sentinel=False)
    done = [convert(name, u) for u in uniques]
    return [done[c] for c in codes]


def _list_texts(name: str, cells: pd.Series) -> list[str]:
    """:func:`cell_text` of every list cell, each distinct list written once (launches of a kernel
    share their notes and flags; a list is keyed by its items as a tuple)."""
    memo: dict[object, str] = {}
    out = []
    for cell in cells:
        key = tuple(cell) if isinstance(cell, list) else cell
        try:
            text = memo.get(key)
        except TypeError:  # an item that cannot be hashed: written as it is
            out.append(cell_text(name, cell))
            continue
        if text is None:
            text = memo[key] = cell_text(name, cell)
        out.append(text)
    return out


def to_text(df: pd.DataFrame, categories: bool = False) -> pd.DataFrame:
    """A copy of ``df`` with its list columns (:data:`LIST_COLUMNS`) and roof sources
    (:data:`SOURCE_COLUMNS`) as text, for CSV files and pages (the other columns are shared with
    ``df``, not copied); ``categories``: those texts held as ``category`` (each distinct text
    once, categories of the dtype the text column would have), for the files."""
    out = df.copy(deep=False)
    categories = categories and len(out) > 0
    for name in LIST_COLUMNS:
        if name in out.columns:
            text = _list_texts(name, out[name])
            out[name] = pd.Categorical(text) if categories else text
    for name in SOURCE_COLUMNS:  # dtype 'string', as the text columns they were before issue 31
        if name in out.columns:
            text = _each_distinct(name, out[name], cell_text)
            col = pd.Series(text, index=out.index, dtype="string")
            out[name] = col.astype("category") if categories else col
    return out


def _read_cell(name: str, cell: object) -> list | tuple:
    """A cell as the model holds it: text parsed (:func:`parse_cell`); a list of notes or flags
    copied, roof sources as a tuple of pairs (a table made by hand)."""
    if isinstance(cell, (list, tuple)):
        return tuple(map(tuple, cell)) if name in SOURCE_COLUMNS else list(cell)
    return parse_cell(name, cell)


def from_text(df: pd.DataFrame) -> pd.DataFrame:
    """Inverse of :func:`to_text`, for a table read back from a file or made by hand (other
    columns shared with ``df``): the one place list cells are read from text; what the model
    takes holds lists only."""
    out = df.copy(deep=False)
    for name in LIST_COLUMNS:
        if name in out.columns:
            out[name] = pd.Series(
                [_read_cell(name, c) for c in out[name]], index=out.index, dtype=object
            )
    for name in SOURCE_COLUMNS:
        if name in out.columns:
            cells = _each_distinct(name, out[name], _read_cell)
            out[name] = pd.Series(cells, index=out.index, dtype=object)
    return out


def flag_codes(cell: object) -> list[str]:
    """The codes of a flags cell (a list of (code, text) pairs; none when missing)."""
    return [c for c, _ in cell] if isinstance(cell, (list, tuple)) else []


def tensor_columns(path: str) -> TensorColumns:
    """The names of a tensor datapath ``<path>`` (ncu's ``sm__ops_path_tensor_<path>``;
    ``sass_hmma``, ``sass_imma``, ``sass_dmma`` for the SASS-opcode estimate; ``legacy_x512``): its
    roof name, precision and columns (:class:`TensorColumns`), named as a precision called
    ``tensor_<path>`` is."""
    name = f"tensor_{path}"
    return TensorColumns(
        name,
        _TENSOR_PRECISION + path,
        f"{name}_flop",
        f"{name}_flop_per_s",
        f"peak_{name}_flop_per_s",
        f"achievable_{name}_flop_per_s",
    )


def tensor_paths(columns: Iterable[str], which: str = "flop") -> list[str]:
    """The tensor datapaths that have a column among ``columns``, in column order.

    Parameters
    ----------
    columns : iterable of str
        Column names (a launch table's).
    which : {'flop', 'flop_per_s', 'peak', 'achievable'}, default 'flop'
        The :class:`TensorColumns` field looked for: ``flop`` (``tensor_<path>_flop``) for the
        datapaths with work, ``peak`` (``peak_tensor_<path>_flop_per_s``) for
        those with a roof column.

    Returns
    -------
    list of str
        The ``<path>`` of each such column.
    """
    pattern = re.compile(
        "^" + re.escape(getattr(tensor_columns("\0"), which)).replace("\0", "(.+)") + "$"
    )  # \0: the path
    return [m.group(1) for c in columns if (m := pattern.match(c))]


def tensor_path(precision: str) -> str | None:
    """The datapath of a tensor precision (``tensor:src_fp16`` -> ``src_fp16``); None for
    another precision."""
    return precision[len(_TENSOR_PRECISION) :] if precision.startswith(_TENSOR_PRECISION) else None


def flop_name(precision: str) -> str:
    """The name of a precision's columns and roofs: ``fp32`` (``fp32_flop``...),
    ``tensor:<path>`` -> ``tensor_<path>``."""
    path = tensor_path(precision)
    return precision if path is None else tensor_columns(path).name


_INTEGER_PATH = re.compile(r"imma|igmma|bmma|int\d|(?:^|_)[su](?:8|4)(?:_|$)|(?:^|_)b1(?:_|$)")


def work_unit(precision: str) -> str:
    """What a person reads a precision's work in: ``OP`` for integer tensor work (IMMA, IGMMA,
    int8/int4 datapaths: operations, not floating-point operations), else ``FLOP``. Column
    names keep ``flop``.
    """
    path = tensor_path(str(precision or ""))
    return "OP" if path is not None and _INTEGER_PATH.search(path) else "FLOP"


def parse_sources(text: object) -> dict[str, str]:
    """Roof name -> source of a ``ceiling_sources`` cell: its text ``"fp32:report,dram:datasheet"``
    (a file) or its tuple of pairs (in memory,
    :data:`SOURCE_COLUMNS`) -> ``{"fp32": "report", ...}``."""
    if isinstance(text, tuple):
        return dict(text)
    if not isinstance(text, str) or not text:
        return {}
    # an item without a source (a hand-edited file) names no roof's source: left out, not an error
    return dict(item.split(":", 1) for item in text.split(",") if ":" in item)


def format_sources(sources: dict[str, str]) -> str:
    """Write a ``ceiling_sources`` cell's text (inverse of :func:`parse_sources`)."""
    return ",".join(f"{k}:{v}" for k, v in sources.items())


def distinct_sources(cells: pd.Series) -> list[dict[str, str]]:
    """Roof name -> source of each distinct cell of a roof-sources column (:data:`SOURCE_COLUMNS`;
    roof sets in memory, their text in a table read without :func:`from_text`), for renderers."""
    return [parse_sources(c) for c in pd.unique(cells.dropna().to_numpy(dtype=object))]


def empty(columns: dict[str, Column]) -> pd.DataFrame:
    """Return an empty DataFrame with the given columns and dtypes.

    Parameters
    ----------
    columns : dict of str to Column
        One of :data:`LAUNCHES`, :data:`POINTS`, :data:`RAW_META`.

    Returns
    -------
    DataFrame
        No rows, the declared columns in order.
    """
    return pd.DataFrame({name: pd.Series(dtype=col.dtype) for name, col in columns.items()})


__all__ += ["check_columns"]


def check_columns(df: pd.DataFrame, columns: Mapping[str, Column], what: str) -> None:
    """ValueError naming the declared ``columns`` that ``df`` lacks (a defect in ncuroof: the
    tables it makes and writes hold every declared column)."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} table lacks columns {missing}")


#: Raw-table text columns held as ``category`` from the readers on (:func:`validate_raw`, as
#: :func:`compact_text` holds them): the demangled name repeats on each launch of a kernel
#: (5.5 kB for a GENE template kernel: 550 MB of text at 100,000 launches, held once each so).
RAW_COMPACT = ("kernel_demangled",)


def _string_categories(df: pd.DataFrame, names: set[str]) -> pd.DataFrame:
    """``df`` with the categories of its ``category`` columns ``names`` as ``string`` (as
    :func:`compact_text` makes them), and ``""`` among them where a value is missing."""
    if not names:
        return df
    out = {}
    for name in names:
        col = df[name]
        cats = col.cat.categories.astype("string")
        if col.isna().any() and "" not in cats:
            cats = cats.append(pd.Index([""], dtype="string"))
        out[name] = pd.Categorical.from_codes(col.cat.codes, categories=cats)
    return df.assign(**out)


def validate_raw(df: pd.DataFrame, path: str) -> pd.DataFrame:
    """Check a parser's raw table and coerce its metadata dtypes.

    Parameters
    ----------
    df : DataFrame
        Parser output: the :data:`RAW_META` columns and one float column per ncu metric.
    path : str
        The input file, for error messages.

    Returns
    -------
    DataFrame
        ``df`` with metadata columns cast to their declared dtypes, those of :data:`RAW_COMPACT`
        held as ``category`` of them (:func:`compact_text`).

    Raises
    ------
    InputError
        If a metadata column is missing, a launch ID repeats within one range, or a metric
        column is not numeric.
    """
    missing = [c for c in RAW_META if c not in df.columns]
    if missing:
        raise InputError(
            f"parser produced no {missing} columns; this input is not a supported ncu export", path
        )
    held = {n for n in RAW_COMPACT if isinstance(df[n].dtype, pd.CategoricalDtype)}
    df = df.astype({name: col.dtype for name, col in RAW_META.items() if name not in held})
    df = compact_text(_string_categories(df, held), {n: RAW_META[n] for n in RAW_COMPACT})
    dup = df.duplicated(["source", "range_id", "launch_id"])
    if dup.any():
        ids = df.loc[dup, "launch_id"].tolist()[:5]
        raise InputError(f"launch IDs {ids} appear twice; split the file per ncu run", path)
    meta = set(RAW_META) | {"device__attribute_display_name"}
    bad = [c for c in df.columns if c not in meta and not pd.api.types.is_numeric_dtype(df[c])]
    if bad:
        raise InputError(f"non-numeric values in metric columns {bad[:3]}", path)
    return df


#: Text columns (dtype ``string``) of the launch and points tables held in memory as pandas
#: ``category`` (:func:`compact_text`): texts repeated on every launch of a kernel (evidence,
#: advice, provenance, launch configuration), read by the pages and written to the files but never
#: changed cell by cell; and ``kernel_key``, set once per analysis (``--match``), which repeats the
#: demangled name on every launch (kilobytes for a C++ template kernel). The other keys and classes
#: the model groups, merges and fills (``source``, ``kernel_name``, ``status``, ``bound``,
#: ``diagnosis``, ``precision``, ``level``) stay ``string``.
COMPACT_TEXT = frozenset(
    {
        "evidence_sources",
        "evidence",
        "top_stall",
        "second_stall",
        "advice",
        "kernel_demangled",
        "kernel_key",
        "reader",
        "speed_of_light_note",
        "clock_control",
        "flop_source",
        "tensor_source",
        "device_name",
        "cc",
        "grid",
        "block",
        "nvtx_range",
        "ncu_version",
        "time_at_roof_bound",
        "hot_pipe",
        "hot_memory_unit",
        "l1_definition",
        "l2_definition",
        "dram_definition",
        "peak_source",
        "datasheet_gpu",
        "definition",
        "peak_flop_source",
        "peak_bytes_source",
        "achievable_flop_source",
        "achievable_bytes_source",
    }
)


def compact_text(df: pd.DataFrame, columns: dict[str, Column]) -> pd.DataFrame:
    """``df`` with its :data:`COMPACT_TEXT` columns held as pandas ``category``: one copy of each
    distinct text and a small code per row.

    A launch table repeats its texts (a kernel's evidence and advice on each of its launches):
    held so, the 100,000-launch table takes ~110 MB less. The values are the same text (missing
    stays missing); files and pages write them as text (:mod:`ncuroof.output.tables`). A
    column already ``category`` is kept as it is. A column with a missing value has ``""`` among
    its categories, so that ``fillna("")`` works on it as on text.

    Parameters
    ----------
    df : DataFrame
        A launch or points table (:data:`LAUNCHES`, :data:`POINTS`); other columns untouched.
    columns : dict of str to Column
        The declaration.

    Returns
    -------
    DataFrame
        ``df`` (not copied when nothing changes).
    """
    text = {
        name: "category"
        for name, col in columns.items()
        if name in COMPACT_TEXT
        and col.dtype == "string"
        and name in df.columns
        and not isinstance(df[name].dtype, pd.CategoricalDtype)
    }
    if not text:
        return df
    # text first, as a 'string' column (a number read from a CSV becomes its text): the categories
    # are 'string' whatever the column held
    out = df.astype(dict.fromkeys(text, "string")).astype(text)
    for name in text:
        col = out[name]
        if "" not in col.cat.categories and col.isna().any():
            out[name] = col.cat.add_categories(pd.Index([""], dtype="string"))
    return out


def _validate(
    df: pd.DataFrame, columns: dict[str, Column], what: str, compact: bool = False
) -> pd.DataFrame:
    """``df`` cast to the declared dtypes (``compact``: text as in :func:`compact_text`)."""
    check_columns(df, columns, what)
    out = df.astype(
        {
            name: col.dtype
            for name, col in columns.items()
            if not (compact and name in COMPACT_TEXT and col.dtype == "string")
        }
    )
    out = compact_text(out, columns) if compact else out
    for name, col in columns.items():
        if col.dtype == "float64" and col.unit not in ("", "1"):
            values = out[name].to_numpy(dtype=float)
            if np.any(values[np.isfinite(values)] < 0):
                raise ValueError(f"{what} column {name} [{col.unit}] has negative values")
    return out


def validate_launches(df: pd.DataFrame) -> pd.DataFrame:
    """Check the launch table: declared columns present, dtypes, no negative quantities.

    Parameters
    ----------
    df : DataFrame
        The launch table (:data:`LAUNCHES`); extra columns are kept.

    Returns
    -------
    DataFrame
        ``df`` cast to the declared dtypes, its text columns held as ``category``
        (:func:`compact_text`).

    Raises
    ------
    ValueError
        If a declared column is missing or a quantity is negative (a defect in ncuroof).
    """
    out = _validate(df, LAUNCHES, "launches", compact=True)
    time_bound = out["time_at_roof_bound"]
    if (
        not out["status"].isin(STATUSES).all()
        or not out["bound"].isin(BOUNDS).all()
        or not out["diagnosis"].isin(DIAGNOSES).all()
        or not (time_bound.isna() | time_bound.isin(TIME_BOUNDS)).all()
    ):
        raise ValueError("launches table has an unknown status or bound value")
    return out


def validate_points(df: pd.DataFrame) -> pd.DataFrame:
    """Check the points table (:data:`POINTS`) like :func:`validate_launches` and return it cast
    to the declared dtypes, text held as ``category`` (:func:`compact_text`); ValueError when a
    column is missing, a quantity negative or a level unknown.
    """
    out = _validate(df, POINTS, "points", compact=True)
    if not out["level"].isin(LEVELS).all():
        raise ValueError("points table has an unknown level")
    return out


#: One row per NVTX phase (:func:`ncuroof.model.phases.phase_table`,
#: ``ncuroof analyze --group-by nvtx[:DEPTH]``, ``phases.csv``): launches aggregated by their NVTX
#: range path. After these columns, one ``tensor_<path>_flop`` [FLOP] per tensor datapath of the
#: kernels table (summed, as ``tensor_flop``), so each precision view has its FLOPs.
PHASES: dict[str, Column] = {
    "phase": Column(
        "string",
        "",
        "NVTX range path (' > '-joined, outermost first) cut to the depth asked for; "
        "'no range' for launches outside every range",
    ),
    "launches": Column("int64", "", "launches in the phase"),
    "kernels": Column("int64", "", "distinct kernels (demangled names) in the phase"),
    "time_s": Column("float64", "s", "summed launch duration"),
    "time_share": Column("float64", "1", "time_s over all launches' time"),
    **{f"{p}_flop": Column("float64", "FLOP", f"summed {p.upper()} FLOPs") for p in PRECISIONS},
    "tensor_flop": Column("float64", "FLOP", "summed tensor FLOPs"),
    "flop": Column("float64", "FLOP", "all counted FLOPs: FP64 + FP32 + FP16 + tensor"),
    **{f"{lv}_bytes": Column("float64", "B", f"summed {lv.upper()} traffic") for lv in LEVELS},
    "flop_per_s": Column(
        "float64", "FLOP/s", "flop / time_s (the time-weighted mean of the launches' rates)"
    ),
    "dram_ai_flop_per_byte": Column("float64", "FLOP/B", "flop / dram_bytes"),
    "bound": Column("string", "", "the launches' bound of most of the phase's time"),
    "time_at_roof_s": Column(
        "float64", "s", "summed launches' time_at_roof_s (speed of light: roofline or unit bound)"
    ),
    "saving_s": Column("float64", "s", "summed launches' saving_s"),
    "saving_share": Column("float64", "1", "saving_s over all launches' time"),
    "sm_throughput_frac": Column(
        "float64", "1", "ncu SM throughput, time-weighted over the phase's launches"
    ),
    "memory_throughput_frac": Column(
        "float64", "1", "ncu memory throughput, time-weighted over the phase's launches"
    ),
}


#: One row per (launch, memory level) with warp instructions and transactions: the instruction
#: roofline [DING] (:func:`ncuroof.model.instruction_roofline.instruction_points`,
#: ``instruction_points.csv``).
INSTRUCTION_POINTS: dict[str, Column] = {
    "source": RAW_META["source"],
    "launch_id": RAW_META["launch_id"],
    "kernel_name": RAW_META["kernel_name"],
    "level": Column("string", "", "l1, l2 or dram"),
    "time_s": LAUNCHES["time_s"],
    "warp_inst": LAUNCHES["warp_inst"],
    "transactions": Column("float64", "sector", "32 B transactions at this level"),
    "inst_per_transaction": Column(
        "float64",
        "inst/sector",
        "instruction intensity: warp_inst / transactions (the x of the point)",
    ),
    "warp_inst_per_s": Column("float64", "inst/s", "warp_inst / time_s (the y of the point)"),
    "peak_warp_inst_per_s": LAUNCHES["peak_warp_inst_per_s"],
    "peak_warp_inst_source": Column(
        "string",
        "",
        "report (SMs and clock ncu measured) or datasheet (metrics/gpus.toml SMs x 4 x clock);"
        " empty if none",
    ),
    "peak_transactions_per_s": Column(
        "float64", "sector/s", "memory wall: the level's bandwidth roof / 32 B"
    ),
    "roof_warp_inst_per_s": Column(
        "float64",
        "inst/s",
        "attainable: min(peak_warp_inst_per_s, inst_per_transaction x peak_transactions_per_s)",
    ),
    "roof_fraction": Column("float64", "1", "warp_inst_per_s / roof_warp_inst_per_s"),
    "bound": Column("string", "", "memory (left of the level's elbow) or instruction"),
}


#: One row per kernel with a main precision, FLOPs and DRAM bytes, projected onto another GPU's
#: datasheet roofs (:func:`ncuroof.model.diagnose.what_if`, ``ncuroof analyze --what-if GPU``,
#: ``whatif.csv``). Ridges and AI are in FLOP/B, or OP/B for an integer tensor
#: precision (``work_unit``).
WHATIF: dict[str, Column] = {
    "kernel_label": KERNEL_SUMMARY["kernel_label"],
    "precision": KERNEL_SUMMARY["precision"],
    "dram_ai_flop_per_byte": Column(
        "float64",
        "FLOP/B",
        "FLOPs of the main precision / DRAM bytes, summed over the launches "
        "(the same on either GPU)",
    ),
    "ridge_here": Column(
        "float64",
        "FLOP/B",
        "ridge point of the measured GPU: its roof of the precision / its DRAM bandwidth, "
        "time-weighted over the launches",
    ),
    "bound_here": Column(
        "string", "", "memory or compute on the measured GPU; '' when its ridge is unknown"
    ),
    "ridge_there": Column(
        "float64", "FLOP/B", "ridge point of the target GPU (metrics/gpus.toml datasheet roofs)"
    ),
    "bound_there": Column(
        "string", "", "memory or compute on the target GPU; '' when its ridge is unknown"
    ),
    "time_at_roof_here_s": Column(
        "float64", "s", "the kernel's time_at_roof_s on the measured GPU (kernel summary)"
    ),
    "time_at_roof_there_s": Column(
        "float64", "s", "max(FLOPs / target roof, DRAM bytes / target bandwidth)"
    ),
    "change": Column(
        "string", "", "the projection in words: bound here, bound there, both ridges and the AI"
    ),
}

#: The roofs as a long table (:func:`ncuroof.model.roofs.roof_table`): one row per (launch, kind,
#: roof) with a value or a source. In the analysis each launch's sources are a roof set
#: (:data:`SOURCE_COLUMNS`) and the values its ``peak_*``/``achievable_*`` columns; this table lays
#: them out for a reader or a file. Size: a row per roof a launch has (about 7 to 14), ~40 B a row
#: (categorical names and sources): ~5 MB at 10,000 launches, ~50 MB at 100,000, built on request.
ROOFS: dict[str, Column] = {
    "source": Column("category", "", RAW_META["source"].description),
    "launch_id": RAW_META["launch_id"],
    "kind": Column("category", "", "peak (the roof) or achievable (what a benchmark sustained)"),
    "roof": Column(
        "category", "", "precision (fp64, fp32, fp16, tensor_<path>) or level (l1, l2, dram)"
    ),
    "flop_per_s": Column("float64", "FLOP/s", "a compute roof's value; NaN for a bandwidth roof"),
    "bytes_per_s": Column("float64", "B/s", "a bandwidth roof's value; NaN for a compute roof"),
    "roof_source": Column("category", "", "report, datasheet, user or measured (ROOF_SOURCES)"),
    "clock_hz": Column(
        "float64",
        "Hz",
        "SM clock the roof is at: the launch's measured clock for compute roofs from the report or"
        " a datasheet scaled to it; NaN for bandwidth roofs, user roofs and measurements",
    ),
    "confidence": Column(
        "category", "", "metrics/gpus.toml confidence of a datasheet roof or measurement, else ''"
    ),
    "datasheet_gpu": Column("category", "", "metrics/gpus.toml entry of a datasheet roof, else ''"),
}

#: The files ncuroof writes besides the tables of ``ncuroof.parser.saved.TABLES`` (each table as
#: ``<name>.csv`` and/or ``<name>.parquet``): file name -> what it holds.
FILES: dict[str, str] = {
    "roofline.html": (
        "the roofline page (plotly chart, kernel table, views), self-contained or with plotly.js"
        " beside it"
    ),
    "roofline.png": "the chart's default view as an image (analyze --image png)",
    "roofline.svg": "the chart's default view as an image (analyze --image svg)",
    "compare.html": "the before/after page (ncuroof compare)",
    "trail.html": "the page of several runs in order (ncuroof compare A B C ...)",
    "<report>.ncuroof.json": (
        "written by ncuroof profile beside the report it collected (not in an output folder): how"
        " it was collected (ncu version, options, clocks)"
    ),
    "ncuroof-manifest.json": (
        'the files ncuroof wrote in the folder (JSON {"files": [...]}), the only ones a later run'
        " replaces"
    ),
}

__all__ += ["WHATIF", "FILES"]


#: Version of the table layout written to Parquet key-value metadata (``ncuroof.schema_version``);
#: raised when a column changes meaning or dtype, not when one is added. 2: the per-launch table
#: is ``launches`` and ``kernels`` is one row per kernel (issue 40); a version-1 folder's
#: ``kernels`` table is read as launches.
SCHEMA_VERSION = 2

#: Multi-rank runs (:mod:`ncuroof.runs.ranks`): one row per kernel, its spread over the MPI ranks. A
#: kernel's per-rank values are those of its row in that rank's kernel summary
#: (:func:`ncuroof.model.summary.kernel_summary`): summed time, AI and roof
#: fraction of the binding dot.
RANKS: dict[str, Column] = {
    "kernel_key": Column(
        "string", "", "kernel identity (ncuroof.model.summary.kernel_keys): the demangled name"
    ),
    "kernel_name": RAW_META["kernel_name"],
    "ranks": Column("int64", "", "ranks that launched the kernel"),
    **{
        f"time_s_{s}": Column(
            "float64", "s", f"{s} over ranks of the kernel's summed launch time on the rank"
        )
        for s in ("min", "median", "max")
    },
    **{
        f"ai_flop_per_byte_{s}": Column(
            "float64", "FLOP/B", f"{s} over ranks of the binding dot's arithmetic intensity"
        )
        for s in ("min", "median", "max")
    },
    **{
        f"roof_fraction_{s}": Column(
            "float64", "1", f"{s} over ranks of the binding dot's roof fraction"
        )
        for s in ("min", "median", "max")
    },
    "fastest_rank": Column("string", "", "rank with the least time in the kernel"),
    "slowest_rank": Column("string", "", "rank with the most time in the kernel"),
    "imbalance": Column(
        "float64",
        "1",
        "time_s_max / time_s_median - 1: how far the slowest rank is over the median",
    ),
    "load_imbalance": Column(
        "bool", "", "imbalance above [ranks].imbalance of metrics/thresholds.toml (0.10)"
    ),
}

#: Fleets (:mod:`ncuroof.runs.fleet`): one row per input that could not be analyzed.
FAILURES: dict[str, Column] = {
    "source": RAW_META["source"],
    "error": Column("string", "", "the one-line error (what went wrong and what to do)"),
}

#: Production timelines (:func:`ncuroof.parser.timeline.read_timeline`, ``--timeline``): one row per
#: kernel launch of a PyTorch profiler (Kineto) trace or an Nsight Systems SQLite
#: export, on one device.
TIMELINE_LAUNCH: dict[str, Column] = {
    "kernel_name": Column(
        "string", "", "kernel name as the trace gives it (Kineto 'name'; nsys demangledName)"
    ),
    "start_s": Column("float64", "s", "launch start, from the earliest kernel start on the device"),
    "duration_s": Column("float64", "s", "launch duration in the production run"),
    "device": Column("Int64", "", "CUDA device index (Kineto args 'device'; nsys deviceId)"),
    "stream": Column("Int64", "", "CUDA stream (Kineto args 'stream'; nsys streamId)"),
    **{
        f"{k}_{a}": Column("Int64", "", f"{k} dimension {a}, missing when the trace lacks it")
        for k in ("grid", "block")
        for a in "xyz"
    },
    "correlation": Column(
        "Int64", "", "CUPTI correlation ID linking the launch to its runtime API call"
    ),
    "op": Column(
        "string",
        "",
        "PyTorch operator (cpu_op) that launched the kernel, missing when unknown (Kineto only)",
    ),
    "scope": Column(
        "string",
        "",
        "user_annotation ranges and module scopes enclosing the launching op (else the "
        "kernel), outermost first, joined by ' > ' like nvtx_range (Kineto only)",
    ),
    "nvtx": Column(
        "string",
        "",
        "NVTX ranges open on the launching thread at the launch, outermost first, "
        "joined by ' > ' (nsys only)",
    ),
}


def validate_timeline(df: pd.DataFrame, path: str) -> pd.DataFrame:
    """Check a timeline table (:data:`TIMELINE_LAUNCH`, one row per production launch; extra columns
    kept) and return it cast to the declared dtypes; InputError naming ``path`` when a start or a
    duration is missing or a duration negative (a damaged trace)."""
    check_columns(df, TIMELINE_LAUNCH, "timeline")
    start, dur = (df[c].to_numpy(dtype=float, na_value=np.nan) for c in ("start_s", "duration_s"))
    bad = ~np.isfinite(start) | ~np.isfinite(dur) | (dur < 0)
    if bad.any():
        raise InputError(
            f"{int(bad.sum())} kernel events without a start or with a negative duration; re-export"
            " the trace",
            path,
        )
    return _validate(df, TIMELINE_LAUNCH, "timeline")


# --- issue 24, the join of a production timeline to the analysis (ncuroof.model.production) -------

#: One row per kernel identity of a timeline joined to the analysis
#: (:func:`ncuroof.model.production.join`, ``timeline.csv``): production launches and time beside
#: ncu's. Kernels of the timeline ncu did not profile are rows too, so ``production_time_s`` adds up
#: to the timeline's kernel time on its device.
TIMELINE_KERNEL: dict[str, Column] = {
    "kernel_key": Column(
        "string",
        "",
        "kernel identity (--match, ncuroof.model.summary.kernel_keys): ncu's key when profiled, "
        "else the timeline's",
    ),
    "kernel_name": Column("string", "", "function name (ncu's, else the timeline name's)"),
    "timeline_name": Column(
        "string", "", "the name the timeline gives, '' when not in the timeline"
    ),
    "match": Column(
        "string",
        "",
        "how the timeline's kernel was paired with ncu's (ncuroof.model.summary.pair_keys): name,"
        " spelling, base name, base name and configuration; unprofiled (not in the ncu report) or"
        " not_in_timeline",
    ),
    "production_launches": Column("int64", "", "launches in the timeline"),
    "production_time_s": Column("float64", "s", "summed launch duration in the timeline"),
    "production_share": Column(
        "float64", "1", "production_time_s over the timeline's kernel time on the device"
    ),
    "profiled_launches": Column("int64", "", "launches ncu profiled"),
    "profiled_time_s": Column("float64", "s", "summed duration ncu measured"),
    "production_time_per_launch_s": Column(
        "float64", "s", "production_time_s / production_launches"
    ),
    "profiled_time_per_launch_s": Column("float64", "s", "profiled_time_s / profiled_launches"),
    "duration_ratio": Column(
        "float64",
        "1",
        "production over profiled time per launch (ncu's replay: caches flushed, clocks locked)",
    ),
    "duration_differs": Column(
        "bool",
        "",
        "duration_ratio off 1 by more than [timeline].duration_differs of metrics/thresholds.toml",
    ),
    "has_roofline_point": Column("bool", "", "the kernel has a dot on the roofline"),
    "op": Column(
        "string", "", "PyTorch operator that launched most of its production time ('' when unknown)"
    ),
    "scope": Column(
        "string",
        "",
        "module scope / annotation path of most of its production time ('' when unknown)",
    ),
    "ncu_filter": Column(
        "string",
        "",
        "for a kernel ncu did not profile: the ncu option collecting it (-k 'regex:^name$')",
    ),
}

#: One row per PyTorch operator (``--group-by op``, ``ops.csv``): the :data:`PHASES` columns with
#: ``op`` for ``phase``; work (FLOPs, bytes, ncu time) is each kernel's ncu totals times the share
#: of its production time spent under the operator; ``time_s``, ``time_share``,
#: ``launches`` are production's.
OPS: dict[str, Column] = {
    "op": Column(
        "string",
        "",
        "PyTorch operator (Kineto cpu_op) that launched the kernels; 'no operator' for the others",
    ),
    **{name: col for name, col in PHASES.items() if name != "phase"},
    "profiled_time_s": Column(
        "float64", "s", "the kernels' ncu time under the operator (the FLOP/s denominator)"
    ),
}

__all__ += ["TIMELINE_KERNEL", "OPS"]


# --- issue 28, compare before and after (ncuroof.runs.compare) ------------------------------------

_SIDES = ("before", "after")


def _per_side(name: str, col: Column) -> dict[str, Column]:
    return {
        f"{name}_{s}": Column(col.dtype, col.unit, f"{s} run: {col.description}") for s in _SIDES
    }


#: One row per kernel of either run (:func:`ncuroof.runs.compare.join`, ``compare.csv``): matched
#: kernels with both runs' numbers, kernels in one run only with theirs. Rates, AI and roof
#: fractions are the kernel summary's (:data:`KERNEL_SUMMARY`); time, work and traffic are sums over
#: the kernel's launches. A value a run does not have (a kernel it lacks, a counter, a duration)
#: is missing, never 0.
COMPARE: dict[str, Column] = {
    "kernel_key": Column(
        "string", "", "kernel identity (--match): the before run's key, else the after run's"
    ),
    "kernel_name": Column("string", "", "function name in the before run, else in the after run"),
    "kernel_label": Column(
        "string",
        "",
        "function name, numbered 'name (2)' where kernels share it, in the run it is from",
    ),
    "kernel_name_after": Column(
        "string", "", "function name in the after run ('' when only in the before run)"
    ),
    "status": Column("string", "", "matched, only_before (gone) or only_after (new)"),
    "match": Column(
        "string",
        "",
        "how the kernels were paired (ncuroof.model.summary.pair_keys): by hand (--pair), name, "
        "base name, numbers differ; only_before or only_after",
    ),
    "speedup": Column(
        "float64", "1", "time_s_before / time_s_after (matched kernels with both times known)"
    ),
    "time_delta_s": Column(
        "float64",
        "s",
        "time_s_after - time_s_before; a kernel in one run only: its time, negative when gone",
    ),
    "time_noise_frac": Column(
        "float64",
        "1",
        "the launches' own spread: 2 x sqrt(cv_before^2/n_before + cv_after^2/n_after) of the"
        " kernel's launch durations (cv = std / mean); a slowdown within it is noise to the gate;"
        " NaN with fewer than two launches in a run",
    ),
    "movement_level": Column(
        "string",
        "",
        "the one level the movement and movement_* columns speak of: the after run's binding level,"
        " else the before run's, else the outermost known (a kernel in one run only: its binding"
        " level)",
    ),
    "movement": Column(
        "string",
        "",
        "how the dot moved at movement_level: more reuse (AI up), better utilization (roof fraction"
        " up), both, worse, none, mixed or unknown (changes under [compare].move count as none)",
    ),
    "change": Column(
        "string",
        "",
        "what moved, with the numbers: work per precision, traffic per level, launches (when they"
        " changed by [compare].move or more) and the throughput ('FP64 work −47 %, throughput"
        " +4 %')",
    ),
    "partner": Column(
        "string",
        "",
        "a kernel in one run only: the kernel_key of its likely partner in the other run"
        " (ncuroof.runs.compare.partners: same grid and block, or similar work), a suggestion only;"
        " '' when none",
    ),
    **_per_side("launches", Column("int64", "", "launches of the kernel (0 when absent)")),
    **_per_side(
        "time_s",
        Column("float64", "s", "summed launch duration; missing unless every launch has one"),
    ),
    **_per_side("flop_per_s", KERNEL_SUMMARY["flop_per_s"]),
    **_per_side("precision", KERNEL_SUMMARY["precision"]),
    **_per_side("bound", KERNEL_SUMMARY["bound"]),
    **_per_side("level", KERNEL_SUMMARY["level"]),
    **_per_side("ai_flop_per_byte", KERNEL_SUMMARY["ai_flop_per_byte"]),
    **_per_side("roof_fraction", KERNEL_SUMMARY["roof_fraction"]),
    **_per_side("achievable_roof_fraction", KERNEL_SUMMARY["achievable_roof_fraction"]),
    **_per_side(
        "movement_ai_flop_per_byte",
        Column("float64", "FLOP/B", "AI of the kernel's dot at movement_level"),
    ),
    **_per_side(
        "movement_roof_fraction",
        Column("float64", "1", "roof fraction of the kernel's dot at movement_level"),
    ),
    **{
        k: v
        for p in (*PRECISIONS, "tensor")
        for k, v in _per_side(
            f"{p}_flop", Column("float64", "FLOP", f"summed {p.upper()} operations of the launches")
        ).items()
    },
    **{
        k: v
        for lv in LEVELS
        for k, v in _per_side(
            f"{lv}_bytes", Column("float64", "B", f"summed {lv.upper()} traffic of the launches")
        ).items()
    },
    **_per_side("grid", Column("string", "", "grid dimensions of most of the time")),
    **_per_side("block", Column("string", "", "block dimensions of most of the time")),
    **{
        k: v
        for lv in LEVELS
        for m in ("ai_flop_per_byte", "roof_fraction")
        for k, v in _per_side(f"{lv}_{m}", KERNEL_SUMMARY[f"{lv}_{m}"]).items()
    },
}

#: The CI gate's verdict (:class:`ncuroof.runs.compare.Gate`, ``compare --fail-if-slower``).
COMPARE_GATE: dict[str, Column] = {
    "verdict": Column(
        "string",
        "",
        "pass, fail or unknown (the gate could not judge: no kernels, none in both runs, unknown"
        " times)",
    ),
    "exit_code": Column("int64", "", "0 pass, 1 fail, 2 unknown"),
    "threshold_pct": Column(
        "float64", "%", "allowed growth of a matched kernel's (and the matched total's) time"
    ),
    "headline": Column("string", "", "speedup over matched kernels beside both runs' totals"),
    "failures": Column("object", "", "why the gate failed: a list of lines"),
    "unknown": Column("object", "", "what the gate could not judge: a list of lines"),
    "notes": Column(
        "object",
        "",
        "kernels in one run only and their likely partners, when not failures: a list of lines",
    ),
}

__all__ += ["COMPARE", "COMPARE_GATE"]

#: Several runs in order (:func:`ncuroof.runs.compare.series`, ``trail.csv``): one row per kernel
#: and run it is in; a kernel matched between consecutive runs keeps its ``trail``.
COMPARE_TRAIL: dict[str, Column] = {
    "trail": Column(
        "int64",
        "",
        "the kernel's trail: one id through the runs it was matched in, first appearance order",
    ),
    "run": Column("int64", "", "the run's position, 0 first"),
    "run_name": Column("string", "", "the run's input"),
    "kernel_key": Column("string", "", "kernel identity (--match) in this run"),
    "kernel_name": RAW_META["kernel_name"],
    "kernel_label": KERNEL_SUMMARY["kernel_label"],
    "match": Column(
        "string",
        "",
        "how it was matched to the previous run's kernel (ncuroof.model.summary.pair_keys: name, by"
        " hand, base name, numbers differ); first (the first run) or new (a trail starting here)",
    ),
    "launches": KERNEL_SUMMARY["launches"],
    "time_s": Column("float64", "s", "summed launch duration; missing unless every launch has one"),
    "speedup_vs_first": Column("float64", "1", "the trail's first time / this time"),
    "speedup_vs_previous": Column("float64", "1", "the trail's previous time / this time"),
    **{
        f"{p}_flop": Column("float64", "FLOP", f"summed {p.upper()} operations")
        for p in (*PRECISIONS, "tensor")
    },
    **{f"{lv}_bytes": Column("float64", "B", f"summed {lv.upper()} traffic") for lv in LEVELS},
    "flop_per_s": KERNEL_SUMMARY["flop_per_s"],
    "precision": KERNEL_SUMMARY["precision"],
    "level": KERNEL_SUMMARY["level"],
    "ai_flop_per_byte": KERNEL_SUMMARY["ai_flop_per_byte"],
    "roof_fraction": KERNEL_SUMMARY["roof_fraction"],
    "trail_level": Column(
        "string",
        "",
        "the one level the trail is drawn at: the kernel's binding level in its last run, else the"
        " outermost level every run of the trail has",
    ),
    "trail_ai_flop_per_byte": Column("float64", "FLOP/B", "AI of the kernel's dot at trail_level"),
    "trail_roof_fraction": Column(
        "float64", "1", "roof fraction of the kernel's dot at trail_level"
    ),
    "grid": Column("string", "", "grid dimensions of most of the time"),
    "block": Column("string", "", "block dimensions of most of the time"),
}

__all__ += ["COMPARE_TRAIL"]


# --- issue 30, the machine-readable verdict (ncuroof.render.json_doc, analyze/compare --json) -----

#: A kernel's work and traffic summed over its launches, and their rates, beside its
#: :data:`KERNEL_SUMMARY` row in the ``--json`` documents
#: (:func:`ncuroof.render.json_doc.kernel_work`). Followed there by ``tensor_<path>_flop`` [FLOP]
#: and ``tensor_<path>_flop_per_s`` [FLOP/s] per tensor datapath with work.
KERNEL_WORK: dict[str, Column] = {
    **{
        f"{p}_flop": Column(
            "float64",
            "FLOP",
            f"summed {p.upper()} FLOPs of the launches (missing when no launch has the count)",
        )
        for p in PRECISIONS
    },
    "tensor_flop": Column("float64", "FLOP", "summed tensor FLOPs"),
    **{
        f"{lv}_bytes": Column("float64", "B", f"summed {lv.upper()} traffic of the launches")
        for lv in LEVELS
    },
    **{
        f"{p}_flop_per_s": Column(
            "float64",
            "FLOP/s",
            f"achieved {p.upper()} FLOP/s: {p}_flop over the time of the launches that have it",
        )
        for p in PRECISIONS
    },
    "tensor_flop_per_s": Column(
        "float64",
        "FLOP/s",
        "achieved tensor FLOP/s: tensor_flop over the time of the launches that have it",
    ),
    **{
        f"{lv}_bytes_per_s": Column(
            "float64",
            "B/s",
            f"achieved {lv.upper()} bandwidth: {lv}_bytes over the time of the launches "
            "that have it",
        )
        for lv in LEVELS
    },
}

__all__ += ["KERNEL_WORK"]

#: ``kernels.csv``/``.parquet``: one row per kernel identity (``--match``), longest first: the
#: :data:`KERNEL_SUMMARY` columns (launches, time and share, bound, binding dot, diagnosis, advice,
#: saving), then the :data:`KERNEL_WORK` columns not among them (work and traffic summed over the
#: launches, their time-weighted rates), then ``tensor_<path>_flop`` and ``_flop_per_s`` per
#: tensor datapath with work (:func:`ncuroof.model.summary.kernel_table`). The per-launch table is
#: :data:`LAUNCHES` (``launches.csv``; ``kernels.csv`` before schema version 2).
KERNELS: dict[str, Column] = {
    **KERNEL_SUMMARY,
    **{c: col for c, col in KERNEL_WORK.items() if c not in KERNEL_SUMMARY},
}

__all__ += ["KERNELS"]

#: One row per PM sample inside a launch's active span (issue 51, ``samples.csv``,
#: :func:`ncuroof.model.samples.sample_table`): the counters ncu sampled every 1.5-512 us
#: (``--section PmSampling``), in SI units, on the time grid of the launch's DRAM series (series
#: of other pass groups mapped onto it by time since their own workload start). NaN where the
#: report did not sample the family; names per ncu version in ``metrics/sampling.toml``.
SAMPLES: dict[str, Column] = {
    "source": RAW_META["source"],
    "launch_id": RAW_META["launch_id"],
    "kernel_name": RAW_META["kernel_name"],
    "sample": Column("int64", "", "0-based index of the sample within the launch's active span"),
    "time_s": Column(
        "float64", "s", "start of the sample from the launch's first active sample's start"
    ),
    "interval_s": Column(
        "float64",
        "s",
        "time the sample covers inside the launch (to the next sample's start, cut at the"
        " workload's start and end where ncu stored them)",
    ),
    "dram_bytes_per_s": Column(
        "float64",
        "B/s",
        "DRAM read + write: dram__bytes.sum.per_second as sampled, or the dramc read + write"
        " percentages of peak x the launch's peak_dram_bytes_per_s",
    ),
    "dram_frac": Column(
        "float64", "1", "DRAM throughput (busiest DRAM sub-unit) as a fraction of its peak"
    ),
    "dram_scale": Column(
        "float64",
        "1",
        "factor on a percent-of-peak DRAM series so its integral over the launch equals the"
        " launch's dram_bytes, where the report's peak misses it by over 5 % (2.0 on GH200, 1.3 on"
        " A100-SXM4-40GB); 1 where within 5 % or sampled as bytes",
    ),
    "l2_bytes_per_s": Column(
        "float64", "B/s", "L2 tag-stage sectors x 32 B per second (lts__t_sectors, 2026.x)"
    ),
    "l2_frac": Column("float64", "1", "lts__throughput as a fraction of its peak"),
    "sm_active_frac": Column(
        "float64",
        "1",
        "sm__cycles_active.avg over the SM cycles of the sample (sm_clock_hz x its spacing)",
    ),
    "sm_frac": Column("float64", "1", "sm__throughput as a fraction of its peak"),
    "issue_frac": Column(
        "float64", "1", "sm__inst_executed_realtime as a fraction of the issue peak"
    ),
    "tensor_active_frac": Column(
        "float64", "1", "sm__pipe_tensor_cycles_active_realtime as a fraction of elapsed cycles"
    ),
    "ctas_launched": Column(
        "float64", "CTA", "CTAs launched during the sample (sm__ctas_launched, gr__ctas_launched)"
    ),
    "top_warp_state": Column(
        "string", "", "most sampled warp state in the sample (warpsampling:, ncu 2025.4+)"
    ),
    "top_warp_state_share": Column("float64", "1", "its share of the sample's warp samples"),
}

#: Ramp, plateau and tail of each sampled launch (issue 51, ``sample_phases.csv``,
#: :func:`ncuroof.model.samples.phase_table`): ramp while CTAs are launched and SMs fill,
#: tail after the last CTA launch while SMs drain (only for grids of more than one wave).
SAMPLE_PHASES: dict[str, Column] = {
    "source": RAW_META["source"],
    "launch_id": RAW_META["launch_id"],
    "kernel_name": RAW_META["kernel_name"],
    "phase": Column("string", "", "ramp, plateau or tail"),
    "start_s": Column("float64", "s", "start from the launch's first active sample"),
    "duration_s": Column(
        "float64",
        "s",
        "time_share x the launch's time_s (ncu samples in a replay pass of its own, which lasts a"
        " few us more or less than the pass that timed the launch)",
    ),
    "time_share": Column(
        "float64", "1", "the phase's sample intervals over all of the launch's (interval_s)"
    ),
    "samples": Column("int64", "", "samples in the phase"),
    "dram_bytes": Column(
        "float64",
        "B",
        "the launch's dram_bytes x the phase's share of the sampled DRAM series' integral",
    ),
    "flop": Column(
        "float64",
        "FLOP",
        "the launch's flop x the phase's share of the sampled issue (or tensor) activity",
    ),
    "dram_ai_flop_per_byte": Column("float64", "FLOP/B", "flop / dram_bytes (the dot's x)"),
    "flop_per_s": Column("float64", "FLOP/s", "flop / duration_s (the dot's y)"),
    "dram_bytes_per_s": Column("float64", "B/s", "dram_bytes / duration_s"),
    "sm_active_frac": Column("float64", "1", "mean sm_active_frac over the phase"),
}

__all__ += ["SAMPLES", "SAMPLE_PHASES", "MOVED_SOURCE", "IDLE_SOURCE", "COMM_SOURCE"]

#: One row per PyTorch operator and input shape of either of two traces (issue 52,
#: ``trace_compare.csv``, :func:`ncuroof.runs.trace_compare.join_operators`): matched by name and
#: shapes (Input Dims, Input type, Concrete Inputs), time and analytic work before and after. The
#: columns the CI gate reads are those of :data:`COMPARE` (``kernel_key``, ``kernel_label``,
#: ``status``, ``time_s_*``, ``launches_*``, ``partner``).
TRACE_COMPARE: dict[str, Column] = {
    "kernel_key": Column(
        "string", "", "the operator's identity: name, Input Dims, Input type, Concrete Inputs"
    ),
    "kernel_name": Column("string", "", "the operator (aten::addmm, memcpy HtoD, ...)"),
    "kernel_label": Column("string", "", "the operator and its Input Dims, for messages"),
    "input_dims": Column("string", "", "the operator's Input Dims"),
    "work_source": Column("string", "", "as the operator tables' (analytic, no formula, ...)"),
    "status": Column("string", "", "matched, only_before (gone) or only_after (new)"),
    "partner": Column("string", "", "always empty: operators are matched by name and shapes"),
    "calls_before": Column("int64", "", "operator calls in the before trace (0: none)"),
    "calls_after": Column("int64", "", "operator calls in the after trace"),
    "launches_before": Column("int64", "", "its kernels (copies, memsets) in the before trace"),
    "launches_after": Column("int64", "", "its kernels in the after trace"),
    "time_s_before": Column("float64", "s", "GPU time of its kernels before (NaN: none)"),
    "time_s_after": Column("float64", "s", "GPU time of its kernels after"),
    "speedup": Column("float64", "1", "time_s_before / time_s_after (matched rows)"),
    "time_delta_s": Column("float64", "s", "time_s_after - time_s_before (negative: faster)"),
    "flop_before": Column("float64", "FLOP", "analytic FLOPs before"),
    "flop_after": Column("float64", "FLOP", "analytic FLOPs after"),
    "compulsory_bytes_before": Column("float64", "B", "compulsory bytes before"),
    "compulsory_bytes_after": Column("float64", "B", "compulsory bytes after"),
    "roof_fraction_before": Column("float64", "1", "fraction of the attainable roof before"),
    "roof_fraction_after": Column("float64", "1", "fraction of the attainable roof after"),
    "bound_before": Column("string", "", "memory, compute or unknown before"),
    "bound_after": Column("string", "", "memory, compute or unknown after"),
}

__all__ += ["TRACE_COMPARE"]

#: Every table ncuroof writes, by file stem (``<name>.csv`` and/or ``<name>.parquet``, through
#: ``ncuroof.output.tables``): its declared columns. The tables of ``ncuroof analyze`` are its
#: views' (``ncuroof.views.REGISTRY``, one entry per name here); ``compare`` and ``trail``
#: are written by ``ncuroof compare``. Any other file ncuroof writes is a key of :data:`FILES`.
TABLES: dict[str, dict[str, Column]] = {
    "launches": LAUNCHES,
    "kernels": KERNELS,
    "points": POINTS,
    "ranks": RANKS,
    "failures": FAILURES,
    "timeline": TIMELINE_KERNEL,
    "ops": OPS,
    "compare": COMPARE,
    "trail": COMPARE_TRAIL,
    "trace_compare": TRACE_COMPARE,
    "phases": PHASES,
    "instruction_points": INSTRUCTION_POINTS,
    "samples": SAMPLES,
    "sample_phases": SAMPLE_PHASES,
    "whatif": WHATIF,
    "roofs": ROOFS,
}

__all__ += ["TABLES"]


# --- issue 41, analytic work from the shapes of a PyTorch trace (ncuroof.model.analytic) ---------

#: Where the work of an :data:`ANALYTIC_OPS` row comes from.
ANALYTIC_SOURCE = "analytic (from shapes)"
#: The work source of its copy and memset rows (their bytes as the trace records them) and of its
#: idle row (issue 52: every GPU second of the trace in a row).
MOVED_SOURCE = "bytes moved (trace)"
IDLE_SOURCE = "idle"
#: The work source of its collective rows (NCCL/RCCL kernels with PyTorch's metadata).
COMM_SOURCE = "communication (trace metadata)"
#: Precisions of analytic work (``metrics/operators.toml`` [dtypes]).
ANALYTIC_PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8")

#: One row per PyTorch operator and input shape of a Kineto trace recorded with shapes
#: (``operators.csv``, :func:`ncuroof.model.analytic.operator_table`): the GPU time of the kernels
#: it launched, and its analytic FLOPs and compulsory bytes from the formulas of
#: ``metrics/operators.toml`` against the device's datasheet roofs. With an ncu report
#: (``--timeline``) the counted work beside it.
ANALYTIC_OPS: dict[str, Column] = {
    "op": Column(
        "string",
        "",
        "PyTorch operator (Kineto cpu_op name); 'no operator' for kernels"
        " launched outside every cpu_op",
    ),
    "input_dims": Column("string", "", "the operator's Input Dims (one list per argument)"),
    "input_types": Column("string", "", "the operator's Input type (dtypes as c10 names them)"),
    "concrete_inputs": Column("string", "", "the operator's Concrete Inputs (scalars, lists)"),
    "family": Column("string", "", "formula family of metrics/operators.toml, '' without one"),
    "calls": Column("int64", "", "operator calls that launched kernels"),
    "launches": Column(
        "int64", "", "kernel launches tied to the operator (innermost with a formula)"
    ),
    "time_s": Column("float64", "s", "summed duration of those kernels"),
    "time_share": Column(
        "float64",
        "1",
        "time_s over all rows' (a trace: kernels, copies, memsets and idle; with --timeline the"
        " kernels')",
    ),
    "precision": Column(
        "string",
        "",
        "precision of the work (fp64, fp32, tf32, fp16, bf16, fp8,"
        " int8; int for integer types), '' without a formula",
    ),
    **{
        f"{p}_flop": Column("float64", "FLOP", f"analytic {p.upper()} FLOPs (all calls)")
        for p in ANALYTIC_PRECISIONS
    },
    "flop": Column("float64", "FLOP", "analytic FLOPs of all calls, NaN without a formula"),
    "compulsory_bytes": Column(
        "float64",
        "B",
        "each input read once and each output written"
        " once, at its dtype's size (all calls); NaN without a formula",
    ),
    "flop_per_call": Column(
        "float64", "FLOP", "analytic FLOPs of one call (flop / calls): the formula at the shapes"
    ),
    "compulsory_bytes_per_call": Column(
        "float64", "B", "compulsory bytes of one call (compulsory_bytes / calls)"
    ),
    "ai_flop_per_byte": Column("float64", "FLOP/B", "flop / compulsory_bytes (analytic AI)"),
    "flop_per_s": Column("float64", "FLOP/s", "flop / time_s (achieved)"),
    "bytes_per_s": Column("float64", "B/s", "compulsory_bytes / time_s (achieved)"),
    "roof": Column("string", "", "the compute roof (gpus.toml name: fp32, tensor_bf16, ...)"),
    "roof_flop_per_s": Column("float64", "FLOP/s", "that roof's datasheet peak"),
    "dram_bytes_per_s": Column("float64", "B/s", "the device's datasheet DRAM bandwidth"),
    "ridge_flop_per_byte": Column("float64", "FLOP/B", "roof_flop_per_s / dram_bytes_per_s"),
    "roof_fraction": Column(
        "float64",
        "1",
        "achieved FLOP/s over the attainable roof at the"
        " analytic AI (bytes/s over the bandwidth when there are no FLOPs)",
    ),
    "bound": Column(
        "string", "", "memory or compute (analytic AI against the ridge), unknown without a formula"
    ),
    "time_at_roof_s": Column("float64", "s", "max(flop / roof, compulsory_bytes / bandwidth)"),
    "saving_s": Column("float64", "s", "time_s - time_at_roof_s, at least 0"),
    "note": Column(
        "string",
        "",
        "a memory-bound matmul-class operator: its rows M and the M (a power of two) whose"
        " analytic AI would reach the ridge, else ''",
    ),
    "work_source": Column(
        "string",
        "",
        f"'{ANALYTIC_SOURCE}', 'no formula', '{MOVED_SOURCE}' (a copy or memset kind: its bytes"
        f" at DRAM), '{COMM_SOURCE}' (a collective: its data size and bandwidths) or"
        f" '{IDLE_SOURCE}' (the trace's span with nothing on the device)",
    ),
    "flag": Column(
        "string",
        "",
        "'no formula', 'shapes do not fit: ...', a missing roof, or a"
        " counted/analytic ratio below 1 ('' when none)",
    ),
    "counted_flop": Column(
        "float64",
        "FLOP",
        "with --timeline and a report: ncu's FLOPs of the operator's kernels (ops.csv's share)",
    ),
    "counted_over_analytic": Column(
        "float64", "1", "counted_flop / flop: above 1 is wasted work (masking, padding, recompute)"
    ),
    "dram_bytes": Column(
        "float64", "B", "with a report: ncu's measured DRAM bytes of the operator's kernels"
    ),
    "dram_over_compulsory": Column(
        "float64", "1", "dram_bytes / compulsory_bytes: above 1 is excess traffic"
    ),
    "measured_ai_flop_per_byte": Column(
        "float64",
        "FLOP/B",
        "counted_flop / dram_bytes: the measured intensity (the dot beside the analytic one)",
    ),
    "group_size": Column("float64", "1", "a collective's ranks (its kernels' metadata)"),
    "algbw_bytes_per_s": Column(
        "float64", "B/s", "a collective's algorithm bandwidth: its data size / time (nccl-tests)"
    ),
    "busbw_bytes_per_s": Column(
        "float64",
        "B/s",
        "a collective's bus bandwidth: algbw x 2(n-1)/n (all-reduce), (n-1)/n (all-gather,"
        " reduce-scatter, all-to-all), 1 (broadcast, reduce, send, recv) (nccl-tests)",
    ),
}

__all__ += ["ANALYTIC_OPS", "ANALYTIC_SOURCE", "ANALYTIC_PRECISIONS"]

TABLES["operators"] = ANALYTIC_OPS
