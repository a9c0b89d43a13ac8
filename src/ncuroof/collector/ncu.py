"""Run Nsight Compute so that the report has what the roofline needs (first stage of the pipeline).

:func:`find_ncu` locates ``ncu``; :func:`metric_list` picks the smallest explicit ``--metrics``
list for the charts asked for (``metrics/collect.toml``); :func:`build_command` turns
:class:`ProfileOptions` into an ncu command line; :func:`run_profile` runs it, streams ncu's
progress, keeps the report only when the run succeeded and records how it was collected;
:func:`doctor` checks a machine before profiling. Nothing here runs at import.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import catalog as _catalog
from ..errors import InputError, NcuNotFoundError, ProfileError
from . import facts as _facts

__all__ = [
    "find_ncu",
    "ncu_version",
    "NcuDefaults",
    "ncu_defaults",
    "report_path",
    "REPORT_SUFFIXES",
    "ProfileOptions",
    "ProfileResult",
    "metric_list",
    "collectable",
    "build_command",
    "program_argument",
    "run_profile",
    "diagnose",
    "known_failures",
    "binary_defaults",
    "doctor",
    "Check",
    "ProfileError",
    "NcuNotFoundError",
    "MIN_NCU_VERSION",
    "sidecar_path",
    "read_sidecar",
]

#: ncu's PM sampling sections (ncu 2024.1+, ``--list-sections``; ``profile --samples``, and what
#: ``doctor`` looks for beside the roofline charts).
SAMPLING_SECTIONS = ("PmSampling", "PmSampling_WarpStates")

#: Oldest ncu whose reports carry the roofline sections ("roofline integrated into ncu 2020.1",
#: ROOFLINE_SPEC §1).
MIN_NCU_VERSION = (2020, 1)

#: Where ncu is looked for after PATH and $CUDA_HOME/bin (globs; the newest version first).
SEARCH_PATTERNS: tuple[str, ...] = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")

_VERSION = re.compile(r"Version\s+(\d+(?:\.\d+)+)")
#: The report files ncu writes: uncompressed, and zstd-compressed (ncu 2026.3's default).
REPORT_SUFFIXES = (".ncu-rep", ".ncu-repz")
_PASSES = re.compile(
    r'^==PROF== Profiling "(?P<name>.*)"(?: - (?P<id>\d+))?: .*?(?P<passes>\d+) pass(?:es)?\s*$'
)
_APP_ERROR = re.compile(r"^==ERROR== The application returned an error code \((?P<code>-?\d+)\)")

#: Longest piece of ncu's own text put in a message (its ambiguous-option line is 1,500 characters).
MAX_NCU_TEXT = 300


def find_ncu(env: dict[str, str] | None = None) -> Path | None:
    """Locate the ncu executable.

    Parameters
    ----------
    env : dict, optional
        Environment (default ``os.environ``): ``PATH`` and ``CUDA_HOME`` are used.

    Returns
    -------
    Path or None
        The first of: ``ncu`` on ``PATH``, ``$CUDA_HOME/bin/ncu``, ``/usr/local/cuda/bin/ncu``,
        the newest ``/opt/nvidia/nsight-compute/*/ncu``; None when there is none.
    """
    env = dict(os.environ) if env is None else env
    found = shutil.which("ncu", path=env.get("PATH", ""))
    if found:
        return Path(found)
    candidates = []
    if env.get("CUDA_HOME"):
        candidates.append(Path(env["CUDA_HOME"]) / "bin" / "ncu")
    for pattern in SEARCH_PATTERNS:
        candidates += [Path(p) for p in sorted(glob.glob(pattern), key=_version_key, reverse=True)]
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def ncu_version(ncu: Path) -> str:
    """The version ``ncu --version`` prints (``2025.2.1.0``).

    Raises
    ------
    NcuNotFoundError
        When ncu cannot be run or prints no version.
    """
    try:
        out = subprocess.run([str(ncu), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NcuNotFoundError(
            f"cannot run ncu --version ({exc}); check the installation", ncu
        ) from exc
    m = _VERSION.search(out.stdout + out.stderr)
    if m is None:
        raise NcuNotFoundError(
            "ncu --version printed no version; is this Nsight Compute's ncu?", ncu
        )
    return m.group(1)


@dataclass(frozen=True)
class NcuDefaults:
    """What one ncu version does by default (``metrics/ncu_versions.toml``): the suffix
    ``ncu -o NAME`` writes, the ``--clock-control`` values it accepts and the one it uses without
    the option, whether ``--pipeline-boost-state`` exists, and the source."""

    version: str
    report_suffix: str
    clock_control: tuple[str, ...]
    clock_default: str
    boost_state: bool
    source: str


def ncu_defaults(version: str, directory: Path | None = None) -> NcuDefaults:
    """The defaults of ncu ``version`` (``2026.3.1.0``): the last ``[[ncu]]`` entry of
    ``metrics/ncu_versions.toml`` at or below it, completed by the earlier ones.

    Raises
    ------
    ValueError
        For a version older than every entry.
    """
    have = _version_key(version)[:2]
    merged: dict[str, Any] = {}
    for entry in _catalog.load_toml(directory, "ncu_versions.toml")["ncu"]:
        if _version_key(entry["from"])[:2] <= have:
            merged.update(entry)
    if not merged:
        raise ValueError(f"ncu {version} is older than every entry of metrics/ncu_versions.toml")
    return NcuDefaults(
        version,
        merged["report_suffix"],
        tuple(merged["clock_control"]),
        merged["clock_default"],
        bool(merged["boost_state"]),
        merged["source"],
    )


def report_path(output: Path, suffix: str) -> Path:
    """The report ncu writes for ``-o output``: ``output`` itself when it ends in ``.ncu-rep`` or
    ``.ncu-repz``, else ``output`` + ``suffix`` (the version's default, :func:`ncu_defaults`)."""
    output = Path(output)
    return (
        output if output.name.endswith(REPORT_SUFFIXES) else output.with_name(output.name + suffix)
    )


def _stem(report: Path) -> Path:
    """``report`` without its ``.ncu-rep``/``.ncu-repz`` suffix (what ncuroof shows as ``-o``)."""
    for suffix in REPORT_SUFFIXES[::-1]:
        if report.name.endswith(suffix):
            return report.with_name(report.name[: -len(suffix)])
    return report


@dataclass
class ProfileOptions:
    """How to run ncu. Every field that is None or empty is left to ncu's default.

    Attributes
    ----------
    output : Path
        The report to write: a name ending in ``.ncu-rep`` or ``.ncu-repz`` is kept, else the
        suffix the ncu version writes by default is appended (``.ncu-repz`` from ncu 2026.3).
    force : bool
        Overwrite an existing report.
    levels, precisions : tuple of str, optional
        Collect only these memory levels (``dram``, ``l2``, ``l1``) and precisions (``fp64``,
        ``fp32``, ``fp16``, ``tensor``) with an explicit ``--metrics`` list instead of
        ``--set roofline``. Giving one of them selects the other's default (all levels, ``fp32``
        and ``fp64``).
    cc : str, optional
        Compute capability of the GPU (``9.0``) for the explicit list; default: asked of
        ``nvidia-smi``.
    kernel_name, kernel_name_base, kernel_id, launch_skip, launch_count, nvtx_include,
    nvtx_exclude, target_processes, replay_mode, clock_control, cache_control
        Passed to ncu's options of the same name.
    samples : bool
        Also collect PM sampling (``--section PmSampling`` and ``PmSampling_WarpStates`` where
        this ncu has them, from 2024.1): counters over time inside each kernel (issue 51).
    sample_interval : int, optional
        ``--pm-sampling-interval``: ns or cycles, as the architecture samples (ncu's default:
        chosen per kernel).
    extra : tuple of str
        More ncu arguments, passed verbatim before the program.
    """

    output: Path
    force: bool = False
    levels: tuple[str, ...] | None = None
    precisions: tuple[str, ...] | None = None
    cc: str | None = None
    kernel_name: str | None = None
    kernel_name_base: str | None = None
    kernel_id: str | None = None
    launch_skip: int | None = None
    launch_count: int | None = None
    nvtx_include: tuple[str, ...] = ()
    nvtx_exclude: tuple[str, ...] = ()
    target_processes: str | None = None
    replay_mode: str | None = None
    clock_control: str | None = None
    cache_control: str | None = None
    samples: bool = False
    sample_interval: int | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)

    @property
    def report(self) -> Path:
        """The report path for an ncu that writes ``.ncu-rep`` by default
        (:func:`report_path` for another)."""
        return report_path(self.output, REPORT_SUFFIXES[0])


def collectable(directory: Path | None = None) -> dict[str, tuple[str, ...]]:
    """What an explicit metric list can collect (:func:`metric_list`,
    ``--precisions`` and ``--levels``).

    Parameters
    ----------
    directory : Path, optional
        Catalog directory (default the packaged ``metrics/``).

    Returns
    -------
    dict
        ``precision`` and ``level``: the names ``metrics/collect.toml`` has
        metrics for, in its order.
    """
    data = _catalog.load_toml(directory, "collect.toml")
    return {kind: tuple(data[kind]) for kind in ("precision", "level")}


def metric_list(
    levels: Sequence[str],
    precisions: Sequence[str],
    cc: str,
    directory: Path | None = None,
    ncu_version: str | None = None,
    chip: str | None = None,
) -> list[str]:
    """The explicit ncu metric list for the roofline of ``precisions`` at ``levels``.

    Parameters
    ----------
    levels : sequence of {'dram', 'l2', 'l1'}
    precisions : sequence of {'fp64', 'fp32', 'fp16', 'tensor'}
    cc : str
        Compute capability, ``major.minor``: metric names differ by architecture.
    directory : Path, optional
        Catalog directory (default the packaged ``metrics/``).
    ncu_version : str, optional
        The ncu that will collect (``2022.3.0.0``): names differ by version too (ncu 2022.3 has no
        ``sm__ops_path_tensor_*``); default the newest spellings.
    chip : str, optional
        ncu's chip name (``tu116``), for the chips whose ncu lacks what their CC has.

    Returns
    -------
    list of str
        ``metrics/collect.toml``'s ``base`` metrics, then those of each precision and level
        with the variants for ``cc``, ``ncu_version`` and ``chip``; no duplicates.

    Raises
    ------
    ValueError
        For an unknown level or precision, a level the architecture has no counters for, or
        tensor work on an architecture, ncu or chip with no tensor metrics.
    """
    data = _catalog.load_toml(directory, "collect.toml")
    c = float(cc)
    out: list[str] = list(data["base"]["metrics"])
    for kind, names in (("precision", precisions), ("level", levels)):
        for name in names:
            if name not in data[kind]:
                raise ValueError(f"unknown {kind} {name!r}; use {', '.join(data[kind])}")
            out += _entry_metrics(name, data[kind][name], c, cc, ncu_version, chip)
    return list(dict.fromkeys(out))


def _entry_metrics(
    name: str, entry: dict, c: float, cc: str, ncu_version: str | None, chip: str | None
) -> list[str]:
    """One ``collect.toml`` precision or level: its metrics and those of the variants that apply
    to CC ``c``, ``ncu_version`` and ``chip`` (ValueError where none can)."""
    if c in entry.get("cc_without", []):
        raise ValueError(f"CC {cc} has no {name} counters in ncu; leave {name} out of --levels")
    variants = [v for v in entry.get("variant", []) if _variant_applies(v, c, ncu_version)]
    if chip is not None and any(chip in v.get("chips_without", []) for v in variants):
        raise ValueError(f"the {chip} has no {name} metrics in ncu; leave {name} out")
    out = list(entry.get("metrics", []))
    for v in variants:
        out += v.get("metrics", [])
        out += [entry["prefix"] + p + s for p in v.get("paths", []) for s in entry["suffixes"]]
    if name == "tensor" and not variants:
        raise ValueError(
            f"no tensor metrics known for CC {cc}"
            + (f" with ncu {ncu_version}" if ncu_version else "")
            + "; profile with the default --set roofline"
        )
    return out


def _variant_applies(variant: dict, c: float, ncu_version: str | None) -> bool:
    """Whether a ``collect.toml`` variant holds for CC ``c`` and ``ncu_version`` (ncu_min <=
    version < ncu_below; no version: the newest)."""
    if not _catalog.cc_in_range(c, variant.get("cc_min"), variant.get("cc_max")):
        return False
    have = _version_key(ncu_version)[:2] if ncu_version else (9999,)
    low, below = variant.get("ncu_min"), variant.get("ncu_below")
    return (low is None or have >= _version_key(low)[:2]) and (
        below is None or have < _version_key(below)[:2]
    )


def gpu_compute_capability() -> str | None:
    """The compute capability of GPU 0 as ``nvidia-smi`` reports it, or None."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (
        out.stdout.strip().splitlines()[0].strip()
        if out.returncode == 0 and out.stdout.strip()
        else ""
    )
    return line if re.fullmatch(r"\d+\.\d+", line) else None


def build_command(
    ncu: Path,
    opts: ProfileOptions,
    cmd: Sequence[str],
    report_stem: Path | None = None,
    metrics: Sequence[str] | None = None,
    sections: Sequence[str] = SAMPLING_SECTIONS,
) -> list[str]:
    """The ncu command line for ``cmd``.

    Parameters
    ----------
    ncu : Path
        The ncu executable.
    opts : ProfileOptions
        What to collect and which launches.
    cmd : sequence of str
        The program and its arguments.
    report_stem : Path, optional
        ``-o`` value; default ``opts.output`` as given (ncu honours an explicit ``.ncu-rep`` or
        ``.ncu-repz`` and appends its default suffix to another name).
    metrics : sequence of str, optional
        An explicit metric list (:func:`metric_list`); default ``--set roofline``.
    sections : sequence of str
        With ``opts.samples``, the PM sampling sections to add (those this ncu lists,
        :func:`sampling_sections`).

    Returns
    -------
    list of str
        ``ncu [--set roofline | --metrics m1,m2,...] [--section PmSampling ...
        --pm-sampling-interval N] --nvtx [scoping options] -o REPORT [extra] program args``
        (the sections are collected beside the set or the metric list: not checked on a GPU here).
        ncu takes the program as its first argument that is not an option (``ncu [options] [program]
        [program-arguments]``, its ``--help``); a ``--`` there is refused by every real ncu tested
        (2022.3, 2024.1: "option is ambiguous"), so none is written. A program whose name starts
        with ``-`` is given as ``./-name`` (:func:`program_argument`).
    """
    if not cmd:
        raise ValueError("no program to profile: give it after --")
    stem = report_stem if report_stem is not None else Path(opts.output)
    args = [str(ncu)]
    args += ["--metrics", ",".join(metrics)] if metrics else ["--set", "roofline"]
    if opts.samples:
        for section in sections:
            args += ["--section", section]
        if opts.sample_interval is not None:
            args += ["--pm-sampling-interval", str(opts.sample_interval)]
    # NVTX ranges are recorded always (cheap; the page shows them) and needed by the NVTX filters.
    args += ["--nvtx"]
    for flag, value in (
        ("--kernel-name-base", opts.kernel_name_base),
        ("--kernel-name", opts.kernel_name),
        ("--kernel-id", opts.kernel_id),
        ("--launch-skip", opts.launch_skip),
        ("--launch-count", opts.launch_count),
        ("--target-processes", opts.target_processes),
        ("--replay-mode", opts.replay_mode),
        ("--clock-control", opts.clock_control),
        ("--cache-control", opts.cache_control),
    ):
        if value is not None and value != "":
            args += [flag, str(value)]
    for flag, values in (
        ("--nvtx-include", opts.nvtx_include),
        ("--nvtx-exclude", opts.nvtx_exclude),
    ):
        for v in values:
            args += [flag, v]
    args += ["-o", str(stem)]
    args += list(opts.extra)
    return args + [program_argument(cmd[0]), *cmd[1:]]


def program_argument(program: str) -> str:
    """``program`` as ncu must be given it: ncu reads an argument starting with ``-`` as one of its
    options ("unrecognised option '-name'", ncu 2022.3 and 2024.1), so such a name is made the
    path ``./-name``, which names the same file."""
    if not program.startswith("-"):
        return program
    if not Path(program).exists() and (found := shutil.which(program)):
        return found
    return "./" + program


@dataclass
class ProfileResult:
    """What :func:`run_profile` did."""

    report: Path
    command: list[str]
    ncu_version: str
    passes: dict[str, int]
    metrics: list[str]
    app_exit_code: int | None
    sidecar: Path


def known_failures(directory: Path | None = None) -> list[dict[str, str]]:
    """``metrics/ncu_messages.toml``'s ``[[failure]]`` entries: ``match`` (a regular expression in
    ncu's words), ``say`` (what it means and what to do) and ``source``."""
    return list(_catalog.load_toml(directory, "ncu_messages.toml")["failure"])


def diagnose(lines: Sequence[str], version: str = "") -> str | None:
    """What the first known failure in ncu's output means and what to do (one line), or None.

    Parameters
    ----------
    lines : sequence of str
        ncu's output lines (its ``==ERROR==`` lines and usage errors).
    version : str
        The ncu version, named in the advice.
    """
    text = "\n".join(lines)
    for entry in known_failures():
        m = re.search(entry["match"], text, re.IGNORECASE)
        if m is not None:
            fields = {k: _clip(v or "") for k, v in m.groupdict().items()}
            return entry["say"].format(version=version or "", **fields).replace("ncu  ", "ncu ")
    return None


def _clip(text: str, limit: int = MAX_NCU_TEXT) -> str:
    """``text`` cut to ``limit`` characters (with an ellipsis) for a one-line message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def sidecar_path(report: Path) -> Path:
    """Where :func:`run_profile` records how a report was collected: ``<report>.ncuroof.json``."""
    return Path(str(report) + ".ncuroof.json")


#: Fields of a sidecar record that are text, and those that are lists of text (``metrics``: either).
_SIDECAR_TEXT = ("ncu_version", "clock_control", "cache_control", "replay_mode")
_SIDECAR_LISTS = ("ncu_command", "metrics")


def read_sidecar(report: Path) -> dict[str, Any] | None:
    """The collection record of a report made by ``ncuroof profile``, or None (no
    record, or not JSON).

    Raises
    ------
    InputError
        When the record is JSON but not a record ncuroof writes (a list, a string, nested past
        Python's limit, a field of the wrong type), naming the file.
    """
    path = sidecar_path(Path(report))
    try:
        if not path.is_file():
            return None
        with open(path, encoding="utf-8") as f:
            rec = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    except RecursionError:
        rec = None
    ok = (
        isinstance(rec, dict)
        and isinstance(rec.get("passes", {}), dict)
        and all(isinstance(rec.get(k, ""), str) for k in _SIDECAR_TEXT)
        and all(
            isinstance(rec.get(k, []), list)
            and all(isinstance(x, str) for x in rec.get(k, []))
            or (k == "metrics" and isinstance(rec.get(k), str))
            for k in _SIDECAR_LISTS
        )
    )
    if not ok:
        raise InputError(
            "is not a collection record ncuroof profile writes (a JSON object of text fields); "
            "remove it or profile again",
            path,
        )
    return rec


def run_profile(
    cmd: Sequence[str],
    opts: ProfileOptions,
    ncu: Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> ProfileResult:
    """Run the program under ncu and keep the report only if the run succeeded.

    Parameters
    ----------
    cmd : sequence of str
        The program and its arguments.
    opts : ProfileOptions
        What to collect.
    ncu : Path, optional
        The ncu executable (default :func:`find_ncu`).
    echo : callable, optional
        Called with each line ncu and the program print (default: write to stderr).

    Returns
    -------
    ProfileResult
        The report (:func:`report_path` of ``opts.output`` for this ncu's default suffix), the
        ncu command line, version, the replay passes ncu
        reported per profiled kernel, and the sidecar JSON that records the collection.

    Raises
    ------
    NcuNotFoundError
        No ncu, or one older than :data:`MIN_NCU_VERSION`.
    ProfileError
        The report exists and ``force`` is off, ncu failed (with the fix for known failures),
        the program exited non-zero, or no kernel was profiled. No report is left behind.
    """
    ncu, version = _usable_ncu(ncu)
    defaults, offered = binary_defaults(ncu, version)
    _check_choices(opts, offered, ncu)
    sections = sampling_sections(opts, offered, ncu)
    report = report_path(opts.output, defaults.report_suffix)
    if report.exists() and not opts.force:
        raise ProfileError("exists; pass --force to overwrite it or -o to write elsewhere", report)
    metrics = _explicit_metrics(opts, version)
    if metrics:
        _check_metrics_known(ncu, version, metrics)
    _make_parent(report)
    partials = _partial_names(report, defaults)
    command = build_command(
        ncu, opts, cmd, report_stem=partials[0], metrics=metrics or None, sections=sections
    )
    rc, lines, passes, app_code = _stream(
        command, ncu, partials, echo or (lambda line: print(line, file=sys.stderr, flush=True))
    )
    written = next((p for p in partials if p.is_file()), None)
    problem = _problem(rc, lines, app_code, written, version)
    _keep_report(partials, written, report, problem)
    side = _write_sidecar(report, command, ncu, defaults, opts, metrics, passes)
    return ProfileResult(report, command, version, passes, metrics, app_code, side)


def binary_defaults(ncu: Path, version: str) -> tuple[NcuDefaults, _facts.NcuFacts]:
    """What this ncu does by default and offers, asked of the binary (:func:`facts.ncu_facts`):
    :func:`ncu_defaults` of its version with the report suffix and ``--clock-control`` values the
    binary itself gives where it gives them."""
    offered = _facts.ncu_facts(ncu, version)
    defaults = ncu_defaults(version)
    clock = offered.options.get("clock-control")
    changes: dict[str, Any] = {}
    if offered.report_suffix:
        changes["report_suffix"] = offered.report_suffix
    if clock is not None and clock.choices:
        changes["clock_control"] = clock.choices
        changes["clock_default"] = clock.default or defaults.clock_default
    if changes:
        defaults = replace(defaults, source=f"{ncu} (--help, -o probe)", **changes)
    return defaults, offered


#: ProfileOptions fields that are ncu options with a fixed set of values.
_CHOICE_OPTIONS = {
    "kernel_name_base": "kernel-name-base",
    "target_processes": "target-processes",
    "replay_mode": "replay-mode",
    "clock_control": "clock-control",
    "cache_control": "cache-control",
}


def _check_choices(opts: ProfileOptions, offered: _facts.NcuFacts, ncu: Path) -> None:
    """Refuse, before running anything, an option or value this ncu's ``--help`` does not list
    (``--replay-mode app-range`` on ncu 2022.3, ``--clock-control boost`` before 2026.1)."""
    if not offered.options:
        return
    for field_name, option in _CHOICE_OPTIONS.items():
        value = getattr(opts, field_name)
        if not value:
            continue
        fact = offered.options.get(option)
        if fact is None:
            raise ProfileError(f"ncu {offered.version} has no --{option}; leave it out", ncu)
        if fact.choices and value not in fact.choices:
            raise ProfileError(
                f"ncu {offered.version} takes --{option} {'|'.join(fact.choices)}, not {value!r}",
                ncu,
            )


def sampling_sections(opts: ProfileOptions, offered: _facts.NcuFacts, ncu: Path) -> tuple[str, ...]:
    """The PM sampling sections ``--samples`` adds: those of :data:`SAMPLING_SECTIONS` this ncu
    lists (``--list-sections``; all of them when it listed nothing); empty without ``--samples``.

    Raises
    ------
    ProfileError
        ``--samples`` on an ncu without the PmSampling section (before 2024.1), or
        ``sample_interval`` on one without ``--pm-sampling-interval`` or below 1.
    """
    if not opts.samples:
        return ()
    have = tuple(s for s in SAMPLING_SECTIONS if s in offered.sections)
    if offered.sections and "PmSampling" not in have:
        raise ProfileError(
            f"ncu {offered.version} has no PmSampling section (PM sampling came with ncu 2024.1);"
            " install a newer Nsight Compute or leave out --samples",
            ncu,
        )
    if opts.sample_interval is not None:
        if opts.sample_interval < 1:
            raise ProfileError("--sample-interval must be at least 1 (ns or cycles)", ncu)
        if offered.options and "pm-sampling-interval" not in offered.options:
            raise ProfileError(
                f"ncu {offered.version} has no --pm-sampling-interval; leave out --sample-interval",
                ncu,
            )
    return have or SAMPLING_SECTIONS


def _check_metrics_known(ncu: Path, version: str, metrics: Sequence[str]) -> None:
    """Ask ncu about the GPUs of this machine (``--query-metrics --query-metrics-mode suffix``)
    whether it knows every metric of an explicit list; ProfileError naming those it does not
    (launch__ and sass__ metrics aside: ncu collects them but does not list them), or for a
    machine whose driver ncu cannot load."""
    out = _facts.run_ncu(
        ncu, ["--query-metrics", "--query-metrics-mode", "suffix", "--metrics", ",".join(metrics)]
    )
    advice = diagnose([ln for ln in out.splitlines() if ln.startswith("==ERROR==")], version)
    if advice is not None:
        raise ProfileError(advice)
    unknown = [m for m in _facts.unknown_metrics(out) if not m.startswith(_UNLISTED)]
    if unknown:
        shown = ", ".join(unknown[:3]) + (
            f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        )
        raise ProfileError(
            f"ncu {version} does not know {shown} on this GPU: leave out the --precisions or"
            " --levels they belong to, or drop both to use ncu's own --set roofline",
            ncu,
        )


#: Metric prefixes ncu collects but --query-metrics does not list (launch attributes, SASS tables).
_UNLISTED = ("launch__", "sass__")


def _make_parent(report: Path) -> None:
    """Create the report's directory (ProfileError when it cannot be)."""
    try:
        report.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ProfileError(
            f"cannot create the report's directory ({exc.strerror})", report.parent
        ) from exc


def _partial_names(report: Path, defaults: NcuDefaults) -> tuple[Path, Path]:
    """Where ncu writes the report before it is kept: the name ncu is given, then that name with
    this ncu's suffix appended."""
    # The partial report keeps the final suffix (ncu honours an explicit .ncu-rep or .ncu-repz); an
    # ncu that appends its own suffix anyway would write the second name: both are
    # looked for and removed.
    partial = report.with_name(
        f".{_stem(report).name}.{os.getpid()}.partial{report.name[len(_stem(report).name) :]}"
    )
    return (partial, partial.with_name(partial.name + defaults.report_suffix))


def _keep_report(
    partials: Sequence[Path], written: Path | None, report: Path, problem: str | None
) -> None:
    """Move the partial report ncu ``written`` to ``report`` when there was no ``problem``; else
    remove the partial reports and raise ProfileError with the problem."""
    if problem is not None or written is None:
        for p in partials:
            p.unlink(missing_ok=True)
        raise ProfileError(f"{problem}; no report kept")
    os.replace(written, report)
    for p in partials:
        p.unlink(missing_ok=True)


def _usable_ncu(ncu: Path | None) -> tuple[Path, str]:
    """The ncu to run and its version; NcuNotFoundError when there is none or it is too old."""
    ncu = _executable(ncu) if ncu is not None else find_ncu()
    if ncu is None:
        raise NcuNotFoundError(
            "ncu not found on PATH, in $CUDA_HOME/bin, /usr/local/cuda/bin or"
            " /opt/nvidia/nsight-compute/*/; install Nsight Compute or put ncu on PATH (ncuroof"
            " doctor checks the setup)"
        )
    version = ncu_version(ncu)
    if _version_key(version)[:2] < MIN_NCU_VERSION:
        raise NcuNotFoundError(
            f"ncu {version} is older than {'.'.join(map(str, MIN_NCU_VERSION))}, which first has"
            " the roofline sections; install a newer Nsight Compute",
            ncu,
        )
    return ncu, version


def _executable(path: Path) -> Path:
    """``--ncu PATH`` as a path to run: a bare name is the file of that name here when there is one
    (as a shell user means it), else the program of that name on PATH."""
    path = Path(path)
    if len(path.parts) == 1 and not path.is_file():
        found = shutil.which(str(path))
        return Path(found) if found else path
    return path.absolute() if len(path.parts) == 1 else path


def _explicit_metrics(opts: ProfileOptions, version: str | None = None) -> list[str]:
    """The explicit metric list of ``--levels``/``--precisions`` (empty for ``--set roofline``)."""
    if opts.levels is None and opts.precisions is None:
        return []
    cc = opts.cc or gpu_compute_capability()
    if cc is None:
        raise ProfileError(
            "cannot tell the GPU's compute capability for --levels/--precisions (nvidia-smi gave"
            " none); pass --cc MAJOR.MINOR"
        )
    levels = opts.levels or _default_levels(cc)
    try:
        return metric_list(levels, opts.precisions or ("fp32", "fp64"), cc, ncu_version=version)
    except ValueError as exc:
        raise ProfileError(str(exc)) from exc


def _default_levels(cc: str) -> tuple[str, ...]:
    """The levels ``--precisions`` alone collects: every level the architecture has counters for
    (no DRAM on integrated-memory parts, ``collect.toml`` ``cc_without``)."""
    data = _catalog.load_toml(None, "collect.toml")["level"]
    return tuple(n for n in ("dram", "l2", "l1") if float(cc) not in data[n].get("cc_without", []))


def _stream(
    command: list[str], ncu: Path, partials: Sequence[Path], write: Callable[[str], None]
) -> tuple[int, list[str], dict[str, int], int | None]:
    """Run ncu, echoing its output; return its exit code, its lines, replay passes per kernel and
    the program's exit code when ncu reported one. The partial reports are removed on interruption.
    """
    lines: list[str] = []
    passes: dict[str, int] = {}
    app_code: int | None = None
    try:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            errors="replace",
        )
    except OSError as exc:
        raise ProfileError(f"cannot start ncu ({exc.strerror})", ncu) from exc
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            write(line)
            lines.append(line)
            if (m := _PASSES.match(line)) is not None:
                key = f"{m.group('name')} - {m.group('id')}" if m.group("id") else m.group("name")
                passes[key] = int(m.group("passes"))
            elif (m := _APP_ERROR.match(line)) is not None:
                app_code = int(m.group("code"))
        return proc.wait(), lines, passes, app_code
    except BaseException:
        proc.kill()
        for partial in partials:
            partial.unlink(missing_ok=True)
        raise


def _problem(
    rc: int, lines: list[str], app_code: int | None, written: Path | None, version: str = ""
) -> str | None:
    """What went wrong in an ncu run, in words with the fix for known failures; None
    when it succeeded. Until ncu connects to the program (no ``==PROF==`` line) everything it
    prints is its own: ncu 2022.3 prints its usage errors without ``==ERROR==``."""
    connected = any(ln.startswith("==PROF==") for ln in lines)
    errors = [ln for ln in lines if ln.startswith("==ERROR==") or not connected]
    advice = diagnose(errors, version)
    if advice is not None:
        return advice
    none_profiled = any("No kernels were profiled" in ln for ln in lines)
    if app_code not in (None, 0) or none_profiled:
        parts = (
            [f"the profiled program exited with code {app_code}"]
            if app_code not in (None, 0)
            else []
        )
        if none_profiled:
            child = any("--target-processes all" in ln for ln in lines)
            parts.append(
                "ncu profiled no kernel"
                + (
                    " (if the kernels run in child processes pass --target-processes all)"
                    if child
                    else "; check the --kernel-name/--nvtx-include filters"
                )
            )
        return "; ".join(parts)
    if errors:
        return "ncu: " + _clip(errors[0].removeprefix("==ERROR==").strip())
    if rc != 0:
        return f"ncu exited with code {rc}"
    return None if written is not None else "ncu wrote no report"


def _write_sidecar(
    report: Path,
    command: list[str],
    ncu: Path,
    defaults: NcuDefaults,
    opts: ProfileOptions,
    metrics: list[str],
    passes: dict[str, int],
) -> Path:
    """Write ``<report>.ncuroof.json``, the record of how the report was collected (atomically):
    ``report`` is the report's real name, ``ncu_command`` the command that writes it there."""
    o = command.index("-o")
    record = {
        "report": report.name,
        "ncu_command": command[:o] + ["-o", str(report)] + command[o + 2 :],
        "ncu_path": str(ncu),
        "ncu_version": defaults.version,
        "clock_control": opts.clock_control or f"{defaults.clock_default} (ncu default)",
        "cache_control": opts.cache_control or "all (ncu default)",
        "replay_mode": opts.replay_mode or "kernel (ncu default)",
        "metrics": metrics or "--set roofline",
        "passes": passes,
        "options": {
            k: list(v) if isinstance(v, tuple) else str(v) if isinstance(v, Path) else v
            for k, v in asdict(opts).items()
        },
    }
    if defaults.boost_state:  # ncu 2026.1+: --pipeline-boost-state, passed with --ncu-arg
        record["pipeline_boost_state"] = (
            _arg_value(opts.extra, "--pipeline-boost-state") or "ncu default"
        )
    side = sidecar_path(report)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2), encoding="utf-8")
    os.replace(tmp, side)
    return side


def _arg_value(args: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` in ``args`` (``--flag V`` or ``--flag=V``), the last one given;
    None when absent."""
    value = None
    for i, a in enumerate(args):
        if a == flag and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(flag + "="):
            value = a.split("=", 1)[1]
    return value


@dataclass
class Check:
    """One line of :func:`doctor`: what was checked, whether it passed, and the fix."""

    name: str
    ok: bool | None  # None: could not tell
    detail: str
    fix: str = ""


def _run(args: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None


def doctor(
    env: dict[str, str] | None = None, params: Path = Path("/proc/driver/nvidia/params")
) -> list[Check]:
    """Check that this machine can collect roofline reports.

    Parameters
    ----------
    env : dict, optional
        Environment for :func:`find_ncu`.
    params : Path
        The NVIDIA driver's parameter file (``RmProfilingAdminOnly``).

    Returns
    -------
    list of Check
        ``ncu`` (found, version), ``ncu defaults`` (the report suffix and clock control it uses
        by default, :func:`ncu_defaults`), ``gpu`` (``nvidia-smi`` lists a GPU; its MIG mode),
        ``counters`` (performance counters permitted to this user).
    """
    return [*_ncu_checks(env), *_gpu_checks(env), _counters_check(params)]


def _ncu_checks(env: dict[str, str] | None) -> list[Check]:
    """``ncu``: found and new enough; ``ncu defaults``: its report suffix and clock control."""
    ncu = find_ncu(env)
    if ncu is None:
        return [
            Check(
                "ncu",
                False,
                "not found on PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or"
                " /opt/nvidia/nsight-compute/*/",
                "install Nsight Compute (CUDA toolkit or the standalone package) or put ncu on"
                " PATH",
            )
        ]
    checks: list[Check] = []
    try:
        v = ncu_version(ncu)
        old = _version_key(v)[:2] < MIN_NCU_VERSION
        checks.append(
            Check(
                "ncu",
                not old,
                f"{ncu} version {v}",
                "install Nsight Compute 2020.1 or newer" if old else "",
            )
        )
        if not old:
            d, offered = binary_defaults(ncu, v)
            checks.append(
                Check(
                    "ncu defaults",
                    True,
                    f"ncu {v} writes {d.report_suffix} reports by default (-o NAME);"
                    f" --clock-control {d.clock_default} by default (takes"
                    f" {', '.join(d.clock_control)})",
                )
            )
            checks.append(_offers_check(offered))
    except NcuNotFoundError as exc:
        checks.append(Check("ncu", False, str(exc), "reinstall Nsight Compute"))
    return checks


#: The sections ``doctor`` looks for: the roofline charts, and PM sampling (``--samples``).
_ROOFLINE_SECTIONS = ("SpeedOfLight", "SpeedOfLight_RooflineChart")


def _offers_check(offered: _facts.NcuFacts) -> Check:
    """``ncu offers``: its sets, the roofline and PM sampling sections it has, from the binary."""
    roofline = [s for s in offered.sections if s in _ROOFLINE_SECTIONS or "RooflineChart" in s]
    sampling = [s for s in offered.sections if s in SAMPLING_SECTIONS]
    has_set = "roofline" in offered.sets
    detail = (
        f"sets {', '.join(offered.sets) or '(none listed)'}; roofline sections"
        f" {', '.join(roofline) or 'none'}; PM sampling sections {', '.join(sampling) or 'none'}"
    )
    return Check(
        "ncu offers",
        has_set and bool(roofline),
        detail,
        "" if has_set else "this ncu has no 'roofline' set: use --levels/--precisions",
    )


def _gpu_checks(env: dict[str, str] | None) -> list[Check]:
    """``gpu``: what ``nvidia-smi`` lists; ``mig`` when MIG is enabled (ncu cannot lock clocks)."""
    smi = shutil.which("nvidia-smi", path=(env or os.environ).get("PATH", ""))
    out = (
        _run(
            [
                smi,
                "--query-gpu=name,compute_cap,driver_version,mig.mode.current",
                "--format=csv,noheader",
            ]
        )
        if smi
        else None
    )
    if out is None or out.returncode != 0 or not out.stdout.strip():
        return [
            Check(
                "gpu",
                False,
                "no NVIDIA GPU visible (nvidia-smi missing or failed)",
                "run on a machine with an NVIDIA GPU and driver; in a container pass --gpus all",
            )
        ]
    gpus = [ln.strip() for ln in out.stdout.strip().splitlines()]
    checks = [Check("gpu", True, "; ".join(gpus))]
    if any(ln.rsplit(",", 1)[-1].strip().lower() == "enabled" for ln in gpus):
        checks.append(
            Check(
                "mig",
                None,
                "MIG is enabled",
                "ncu profiles only isolated MIG compute instances and cannot lock clocks there:"
                " pass --clock-control none",
            )
        )
    return checks


def _counters_check(params: Path) -> Check:
    """``counters``: whether the driver lets this user read performance counters."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    try:
        text = params.read_text()
    except OSError:
        text = ""
    m = re.search(r"RmProfilingAdminOnly:\s*(\d)", text)
    if m is None:
        return Check(
            "counters", None, f"cannot read {params}: permission unknown until a profile runs"
        )
    if m.group(1) == "1" and not root:
        return Check(
            "counters",
            False,
            "performance counters are restricted to admin users (RmProfilingAdminOnly: 1)",
            _counters_fix(),
        )
    return Check(
        "counters",
        True,
        "permitted" + (" (running as root)" if root and m.group(1) == "1" else ""),
    )


def _counters_fix() -> str:
    """How to permit the counters to a user who is not root (in a container too)."""
    container = (
        Path("/.dockerenv").exists()
        or "docker" in _read("/proc/1/cgroup")
        or "containerd" in _read("/proc/1/cgroup")
    )
    fix = (
        "run as root, or have an admin set 'options nvidia"
        " NVreg_RestrictProfilingToAdminUsers=0' in /etc/modprobe.d and reload the driver"
    )
    if container:
        fix += "; inside a container also start it with --cap-add SYS_ADMIN"
    return fix


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""
