"""The stand-in ncu (tests/integration/fake_ncu/ncu) rejects what real ncu rejects, in its words.

Checked against the recordings of the real binaries (scripts/record-ncu-facts; the real-ncu tier
checks those against the binaries), without the binaries: every refusal recorded is replayed with
the same output, stream and exit code, and ``ncuroof``'s reading of the binary (options, sets,
sections, report suffix) gives the same facts from the stand-in as from the recording.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ncuroof.collector import facts
from tests.helpers.real_ncu import PROBES, RECORDED

FAKE = Path(__file__).resolve().parent / "fake_ncu" / "ncu"
RECORDINGS = sorted(p.stem[4:] for p in RECORDED.glob("ncu-*.json"))


def _fake(version: str, args: list[str], mode: str = "ok") -> dict:
    env = {**os.environ, "FAKE_NCU_VERSION": f"{version}.0.0", "FAKE_NCU_MODE": mode}
    env.pop("FAKE_NCU_LOG", None)
    out = subprocess.run(
        [sys.executable, str(FAKE), *args], capture_output=True, text=True, env=env, cwd="/"
    )
    return {"stdout": out.stdout, "stderr": out.stderr, "rc": out.returncode}


def test_both_tested_versions_are_recorded():
    assert RECORDINGS == ["2022.3", "2024.1"]


@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("version", RECORDINGS)
def test_the_stand_in_refuses_as_the_binary_did(version, probe):
    rec = json.loads((RECORDED / f"ncu-{version}.json").read_text())["probes"][probe]
    mode = "no_driver" if probe == "no_driver" else "ok"
    assert _fake(version, PROBES[probe], mode) == rec


@pytest.mark.parametrize("version", RECORDINGS)
def test_the_stand_in_offers_what_the_binary_offers(version):
    rec = json.loads((RECORDED / f"ncu-{version}.json").read_text())
    os.environ["FAKE_NCU_VERSION"] = f"{version}.0.0"
    try:
        got = facts.ncu_facts(FAKE, version).to_json()
    finally:
        del os.environ["FAKE_NCU_VERSION"]
    assert {
        k: got[k] for k in ("options", "sets", "sections", "report_suffix", "honours_repz")
    } == {k: rec[k] for k in ("options", "sets", "sections", "report_suffix", "honours_repz")}


@pytest.mark.parametrize(
    "args, words",
    [
        (["--launch-c", "3", "/bin/true"], None),  # a unique prefix is the option (boost)
        (["--laun", "3", "/bin/true"], "option is ambiguous and matches 'launch-count'"),
        (["--replay-mode", "app-range", "/bin/true"], "'--replay-mode' is invalid"),
        (["-weird"], "unrecognised option '-weird'"),
    ],
)
def test_the_stand_in_parses_like_boost(args, words):
    out = _fake("2022.3", args, "no_kernels")
    text = out["stdout"] + out["stderr"]
    if words is None:
        assert out["rc"] == 0 and "No kernels were profiled" in text
    else:
        assert words in text and out["rc"] == 255
