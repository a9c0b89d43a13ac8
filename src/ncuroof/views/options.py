"""The options of every command that analyzes, declared once (issue 40): the fields of
:class:`ncuroof.model.analysis.AnalysisOptions`, and the bounded options of the commands.

The command line (:func:`ncuroof.cli.options.click_options`), :func:`ncuroof.api.analyze`'s keywords
and the MCP tools' parameters (:mod:`ncuroof.mcp_server`) are generated from :data:`ANALYSIS` and
the views' own options (:func:`ncuroof.views.view_options`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from ..model.analysis import TRAFFIC_CHOICES, AnalysisOptions
from ..model.roofs import FLOP_ROOFS, parse_peak
from ..model.summary import FOCUS_SHARE, KEY_CHOICES
from ..parser import READERS
from ..schema import LEVELS
from .base import Option

__all__ = ["ANALYSIS", "TOP", "FAIL_IF_SLOWER", "LAUNCH_COUNT", "LAUNCH_SKIP", "analysis_options"]


def _roofs(kind: str) -> Any:
    """``parse``: repeated ``[NAME=]VALUE`` as ``{name: SI value}``
    (:func:`ncuroof.model.roofs.parse_peak`)."""
    allowed, default = (FLOP_ROOFS, "*") if kind == "flops" else (LEVELS, "dram")
    return lambda values: dict(parse_peak(v, allowed, default) for v in values)


_MATCH_HELP = (
    "What one kernel is: kernel (the demangled name: template instantiations stay apart), config"
    " (also grid and block), nvtx (also the NVTX range path), launch (each launch apart; compare"
    " pairs the k-th launches). 'name' is the old spelling of 'kernel'."
)
_ROOFS = list[str] | None

#: The fields of :class:`~ncuroof.model.analysis.AnalysisOptions`, in ``--help``'s order: how the
#: inputs are read, roofs given by hand, which kernels, where the numbers come from.
ANALYSIS: tuple[Option, ...] = (
    Option(
        "traffic",
        "Traffic definition preferred for L1/L2: ncu's charts, or NERSC's"
        " lts__t_bytes/l1tex__t_bytes.",
        Literal[TRAFFIC_CHOICES],
        "ncu",
        choices=TRAFFIC_CHOICES,
        show_default=True,
    ),
    Option(
        "stack",
        "Inputs are unrelated runs: stack them. Default: several inputs are files of one run,"
        " merged launch by launch.",
        bool,
        False,
        is_flag=True,
    ),
    Option(
        "gpu",
        "Datasheet entry for roofs the input lacks (e.g. a10g, v100-sxm2; see metrics/gpus.toml)."
        " Default: matched on the device name.",
        str | None,
        metavar="NAME",
    ),
    Option(
        "peak_flops",
        f"Compute roof in FLOP/s, e.g. 19.5T or fp64=9.7e12 (PREC: {', '.join(FLOP_ROOFS)};"
        " bare = all). Repeatable.",
        _ROOFS,
        metavar="[PREC=]VALUE",
        multiple=True,
        parse=_roofs("flops"),
    ),
    Option(
        "peak_bandwidth",
        f"Bandwidth roof in B/s, e.g. 900G or l2=3T (LEVEL: {', '.join(LEVELS)}; bare = dram)."
        " Repeatable.",
        _ROOFS,
        metavar="[LEVEL=]VALUE",
        multiple=True,
        parse=_roofs("bandwidth"),
    ),
    Option(
        "achievable_flops",
        "Achievable compute roof in FLOP/s (what a benchmark sustained), same syntax as"
        " --peak-flops: drawn and reported beside the peak roof, replacing metrics/gpus.toml's"
        " published measurements. Repeatable.",
        _ROOFS,
        metavar="[PREC=]VALUE",
        multiple=True,
        parse=_roofs("flops"),
    ),
    Option(
        "achievable_bandwidth",
        "Achievable bandwidth roof in B/s (e.g. a STREAM copy), same syntax as --peak-bandwidth,"
        " beside the peak roof. Repeatable.",
        _ROOFS,
        metavar="[LEVEL=]VALUE",
        multiple=True,
        parse=_roofs("bandwidth"),
    ),
    Option(
        "expect",
        "TOML (or YAML) of expected FLOPs and DRAM bytes per kernel-name pattern, formulas of"
        " named sizes: useful vs measured intensity, and flags where the counted work differs.",
        str | None,
        metavar="FILE",
        path=True,
        parse=Path,
    ),
    Option(
        "kernels",
        "Only the launches of the kernels whose function or demangled name is NAME, or matches"
        " regex:PATTERN (as ncu's -k).",
        str | None,
        flag="-k --kernels",
        metavar="NAME|regex:PATTERN",
    ),
    Option(
        "match",
        _MATCH_HELP,
        Literal[(*KEY_CHOICES, "name")],
        "kernel",
        choices=(*KEY_CHOICES, "name"),
        parse=lambda v: "kernel" if v == "name" else v,
        show_default=True,
    ),
    Option(
        "focus",
        "The chart shows the fewest kernels making up this share of GPU time (the page can show"
        " the rest).",
        float,
        FOCUS_SHARE,
        bounds=(0.0, 1.0, True),
        show_default=True,
    ),
    Option(
        "reader",
        ".ncu-rep reader: ncuroof's own decoder (fast), NVIDIA's ncu_report module, or the decoder"
        " checked against ncu_report on a sample, with ncu_report for whatever it does not know or"
        " reads differently (auto).",
        Literal[READERS],
        "auto",
        choices=READERS,
        show_default=True,
    ),
    Option(
        "timeline",
        "Production timeline of the run: a PyTorch profiler trace (.json, .json.gz) or an Nsight"
        " Systems export (.sqlite, .nsys-rep). Shares, focus, savings and the top kernels follow"
        " its kernel time; writes timeline.csv (production vs profiled time per kernel, kernels"
        " ncu did not profile).",
        str | None,
        metavar="TRACE",
        path=True,
        parse=Path,
    ),
    Option(
        "device",
        "The timeline's CUDA device (default: the only one with kernels, else the report's GPU).",
        int | None,
        metavar="N",
        bounds=(0, None, False),
    ),
)

#: ``--top``: kernels in a summary.
TOP = Option(
    "top", "Kernels in the summary table.", int, 10, bounds=(1, None, False), show_default=True
)
#: ``compare --fail-if-slower``: the gate's threshold [%].
FAIL_IF_SLOWER = Option(
    "fail_if_slower_pct",
    "The CI gate: fails (compare exits 1) when a matched kernel's time (or the matched kernels'"
    " total) grew by more than PCT percent, listing each; kernels in one run only are listed with"
    " their time.",
    float | None,
    flag="--fail-if-slower",
    metavar="PCT",
    bounds=(0.0, None, False),
)
#: ``profile --launch-count`` and ``--launch-skip``.
LAUNCH_COUNT = Option(
    "launch_count",
    "ncu --launch-count.",
    int | None,
    flag="-c --launch-count",
    bounds=(1, None, False),
)
LAUNCH_SKIP = Option(
    "launch_skip",
    "ncu --launch-skip.",
    int | None,
    flag="-s --launch-skip",
    bounds=(0, None, False),
)


def analysis_options(values: dict[str, Any]) -> AnalysisOptions:
    """The :class:`~ncuroof.model.analysis.AnalysisOptions` of the :data:`ANALYSIS` values in
    ``values`` (popped from it), each as its declaration parses it.

    Raises
    ------
    ValueError
        A value that does not parse, or a combination the options refuse (the message says which).
    """
    return AnalysisOptions.of(**{o.name: o.value(values.pop(o.name, None)) for o in ANALYSIS})
