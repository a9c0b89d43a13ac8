"""What one ncu binary offers, asked of the binary itself (no GPU needed).

Nsight Compute's command line is a boost ``program_options`` parser: ``ncu --help`` prints every
option with whether it takes a value, its default and, for most enumerations, the allowed values;
``--list-sets`` and ``--list-sections`` print fixed-width tables; ``-o`` into a folder that cannot
exist makes ncu name the report file it would have written (``x.ncu-rep``), which tells the suffix
it appends, before any program is launched. :func:`ncu_facts` gathers these; ``doctor`` prints
them, the collector checks option values against them, and the tests record them per version
(``tests/integration/fake_ncu/recorded/``) so that the stand-in ncu rejects what the real one
rejects.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "OptionFact",
    "NcuFacts",
    "parse_help",
    "parse_table",
    "probe_report_suffix",
    "ncu_facts",
    "run_ncu",
    "PROBE_DIR",
    "unknown_metrics",
]

#: A folder no process can create (procfs): ``-o PROBE_DIR/x`` makes ncu fail before it launches
#: anything, naming the file it would have written.
PROBE_DIR = "/proc/ncuroof-probe"

_OPTION = re.compile(
    r"^  (?:-(?P<short>\w) \[ )?--(?P<name>[a-z0-9][a-z0-9-]*)(?: \])?"
    r"(?P<arg> arg)?(?: \(=(?P<default>[^)]*)\))?(?:\s|$)"
)
#: An allowed value in an option's description: a bare word on its own line, indented 42 columns
#: (ncu --help 2022.3 and 2024.1), optionally marked "(default)".
_CHOICE = re.compile(r"^ {42}(?P<value>[a-z][a-z0-9-]*)(?: \(default\))?\s*$")
_WRITE = re.compile(r"Unable to write to file (?P<file>\S+?)\.? Please")


@dataclass(frozen=True)
class OptionFact:
    """One option of ``ncu --help``: its long name, one-letter alias, whether it takes a value,
    the default ncu prints, and the allowed values where the help lists them (else empty)."""

    name: str
    short: str = ""
    takes_value: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()


@dataclass
class NcuFacts:
    """What :func:`ncu_facts` learned from one ncu binary.

    Attributes
    ----------
    version : str
        ``ncu --version`` (``2024.1.1.0``).
    options : dict of str to OptionFact
        ``ncu --help``, by long name.
    sets : dict of str to list of str
        ``ncu --list-sets``: each set's identifier and its sections.
    sections : list of str
        ``ncu --list-sections``: the section identifiers.
    report_suffix : str or None
        What ncu appends to ``-o NAME`` (``.ncu-rep``); None when the probe said nothing.
    honours_repz : bool or None
        Whether ``-o NAME.ncu-repz`` is kept as given (False: ncu appends its suffix to it).
    """

    version: str
    options: dict[str, OptionFact] = field(default_factory=dict)
    sets: dict[str, list[str]] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)
    report_suffix: str | None = None
    honours_repz: bool | None = None

    def to_json(self) -> dict:
        """A JSON-ready record (what the tests keep per version)."""
        rec = asdict(self)
        rec["options"] = {
            k: {**v, "choices": list(v["choices"])} for k, v in rec["options"].items()
        }
        return rec

    @classmethod
    def from_json(cls, rec: dict) -> NcuFacts:
        """The inverse of :meth:`to_json`."""
        options = {
            k: OptionFact(**{**v, "choices": tuple(v["choices"])})
            for k, v in rec.get("options", {}).items()
        }
        return cls(
            rec["version"],
            options,
            {k: list(v) for k, v in rec.get("sets", {}).items()},
            list(rec.get("sections", [])),
            rec.get("report_suffix"),
            rec.get("honours_repz"),
        )


def parse_help(text: str) -> dict[str, OptionFact]:
    """The options of ``ncu --help`` output, by long name.

    An option line is ``  [-c [ ]--name[ ]][ arg][ (=default)]  description``; its allowed values
    are the bare words on lines indented 42 columns below it, up to the next option line.
    """
    found: dict[str, dict] = {}
    current: dict | None = None
    for line in text.splitlines():
        m = _OPTION.match(line)
        if m is not None:
            current = {
                "name": m["name"],
                "short": m["short"] or "",
                "takes_value": m["arg"] is not None,
                "default": m["default"],
                "choices": [],
            }
            found[m["name"]] = current
            continue
        c = _CHOICE.match(line)
        if current is not None and current["takes_value"] and c is not None:
            current["choices"].append(c["value"])
    return {k: OptionFact(**{**v, "choices": tuple(v["choices"])}) for k, v in found.items()}


def parse_table(text: str) -> list[list[str]]:
    """The rows of one of ncu's fixed-width tables (``--list-sets``, ``--list-sections``).

    The column widths are those of the dashed rule above the header; a row whose first cell is
    blank continues the row above (ncu wraps long cells mid-word), so its cells are appended
    without a separator.
    """
    # ncu's own notes (==WARNING== the section folder used, ...) are not rows.
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    rule = next((ln for ln in lines if ln.startswith("---")), None)
    if rule is None:
        return []
    spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    rows: list[list[str]] = []
    body = [ln for ln in lines if ln.strip() and not ln.startswith("---")][1:]
    for line in body:
        cells = [
            line[a : b + 1] if i + 1 < len(spans) else line[a:] for i, (a, b) in enumerate(spans)
        ]
        if cells[0].strip() or not rows:
            rows.append([c.rstrip() for c in cells])
        else:
            rows[-1] = [prev + c.rstrip() for prev, c in zip(rows[-1], cells)]
    return [[c.strip() for c in row] for row in rows]


def run_ncu(ncu: Path, args: list[str], timeout: float = 120) -> str:
    """ncu's output (stdout and stderr together) for ``args``; empty when it could not run.

    ncu copies its section files into ``$HOME/Documents/NVIDIA Nsight Compute`` on first use: a
    caller that must not write there passes ``HOME`` in the environment (the tests do).
    """
    try:
        out = subprocess.run(
            [str(ncu), *args],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env=os.environ.copy(),
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout + out.stderr


def probe_report_suffix(ncu: Path) -> tuple[str | None, bool | None]:
    """The suffix ncu appends to ``-o NAME`` and whether it keeps ``-o NAME.ncu-repz`` as given.

    ``ncu -o /proc/ncuroof-probe/x /bin/true`` fails before launching ``/bin/true`` ("Unable to
    write to file x.ncu-rep", ncu 2022.3 and 2024.1), naming the file it would write.
    """

    def written(name: str) -> str | None:
        m = _WRITE.search(run_ncu(ncu, ["-o", f"{PROBE_DIR}/{name}", "/bin/true"]))
        return Path(m["file"]).name if m else None

    plain = written("x")
    if plain is None or not plain.startswith("x."):
        return None, None
    repz = written("x.ncu-repz")
    return plain[1:], (repz == "x.ncu-repz") if repz else None


def ncu_facts(ncu: Path, version: str) -> NcuFacts:
    """Ask ``ncu`` what it offers: its options, sets, sections and report suffix.

    Parameters
    ----------
    ncu : Path
        The executable.
    version : str
        Its version (``collector.ncu.ncu_version``).

    Returns
    -------
    NcuFacts
        Empty fields where the binary printed nothing usable.
    """
    sets = {row[0]: _split_sections(row[1]) for row in parse_table(run_ncu(ncu, ["--list-sets"]))}
    sections = [row[0] for row in parse_table(run_ncu(ncu, ["--list-sections"]))]
    suffix, repz = probe_report_suffix(ncu)
    return NcuFacts(version, parse_help(run_ncu(ncu, ["--help"])), sets, sections, suffix, repz)


def _split_sections(cell: str) -> list[str]:
    return [s.strip() for s in cell.split(",") if s.strip()]


_UNKNOWN_HEAD = "The below metrics are either invalid or don't have suffixes."


def unknown_metrics(output: str) -> list[str]:
    """The metrics ``ncu --query-metrics --query-metrics-mode suffix --metrics LIST`` says it does
    not know: the comma-separated names on the lines after its warning "The below metrics are
    either invalid or don't have suffixes." (ncu 2022.3 and 2024.1), up to a blank line or the
    next table."""
    lines = output.splitlines()
    at = next((i for i, ln in enumerate(lines) if _UNKNOWN_HEAD in ln), None)
    if at is None:
        return []
    names: list[str] = []
    for line in lines[at + 1 :]:
        if not line.strip() or line.startswith(("---", "==")):
            break
        names += [n.strip() for n in line.split(",") if n.strip()]
    return names
