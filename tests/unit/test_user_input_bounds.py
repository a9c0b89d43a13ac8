"""User input that must never become a number ncuroof trusts (issue 45): infinite roofs, text with
control bytes in the files ncuroof writes, file names that are not UTF-8."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from ncuroof.model.roofs import FLOP_ROOFS, parse_peak
from ncuroof.schema import LEVELS
from tests.helpers.reports import shared


@pytest.mark.parametrize("text", ["1e400", "1e999T", "dram=1e999", "inf", "nan", "-1", "0"])
def test_roofs_that_are_not_finite_positive_numbers_are_refused(text: str) -> None:
    allowed, default = (LEVELS, "dram") if "dram" in text else (FLOP_ROOFS, "*")
    with pytest.raises(ValueError, match="not a finite positive number"):
        parse_peak(text, allowed, default)


def test_the_largest_finite_roof_is_kept() -> None:
    name, value = parse_peak("fp32=1.5e300", FLOP_ROOFS, "*")
    assert name == "fp32" and value == 1.5e300 and math.isfinite(value)
    assert parse_peak("900G", LEVELS, "dram") == ("dram", 900e9)


#: Control bytes a forged kernel name may carry (ESC sets a window title, BEL rings, C1 CSI, RLO).
CONTROL_BYTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_written_csv_files_hold_no_control_bytes(tmp_path: Path) -> None:
    """A CSV export whose kernel name carries ESC ... BEL: launches.csv, points.csv and compare.csv
    show them as the terminal does (``\\x1b``), never raw (``cat compare.csv`` runs nothing)."""
    import ncuroof

    original = shared("ESMM-Research__metrics.csv")
    forged = tmp_path / "forged.csv"
    text = original.read_text(encoding="utf-8")
    assert "basic(" in text
    forged.write_text(text.replace("basic(", "ba\x1b]0;pwned\x07\u202esic("), encoding="utf-8")
    ncuroof.analyze(forged, tmp_path / "a")
    ncuroof.compare_runs(original, forged, outdir=tmp_path / "c")
    written = [tmp_path / "a" / "launches.csv", tmp_path / "a" / "points.csv"]
    written.append(tmp_path / "c" / "compare.csv")
    for path in written:
        body = path.read_text(encoding="utf-8")
        assert not CONTROL_BYTES.search(body), path.name
    assert "ba\\x1b]0;pwned\\x07\\u202esic(" in (tmp_path / "a" / "launches.csv").read_text()


@pytest.mark.parametrize("lang", ["C.UTF-8", "C"])
def test_a_file_name_that_is_not_utf8_is_printed_escaped(tmp_path: Path, lang: str) -> None:
    """``bad\\xff\\xfe.ncu-rep`` (bytes that are no UTF-8) is analyzed and compared, its name
    printed and stored as ``bad\\xff\\xfe.ncu-rep``: no UnicodeEncodeError, exit 0."""
    import os
    import shutil
    import subprocess
    import sys

    name = os.fsdecode(b"bad\xff\xfe.ncu-rep")
    shutil.copy(shared("ESMM-Research__profile_output.ncu-rep"), tmp_path / name)
    env = {**os.environ, "LANG": lang, "LC_ALL": lang, "NO_COLOR": "1"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src")
    for args in (["analyze", name, "-o", "out"], ["compare", name, name, "-o", "cmp"]):
        proc = subprocess.run(
            [sys.executable, "-m", "ncuroof", *args],
            cwd=tmp_path,
            capture_output=True,
            env=env,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
        assert b"internal error" not in proc.stderr
    kernels = (tmp_path / "out" / "launches.csv").read_text(encoding="utf-8")
    assert "bad\\xff\\xfe.ncu-rep" in kernels  # the source column, escaped as the terminal shows it
