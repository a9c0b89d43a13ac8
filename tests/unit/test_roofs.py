"""Provenance as data (issue 31): roof sources are roof sets in memory and text only in files; the
long roof table holds what ncu stored; notes that carry a status or flag do so by code."""

from __future__ import annotations

import io
import pickle

import numpy as np
import pandas as pd
import pytest

from ncuroof import catalog
from ncuroof.model import analysis, diagnose
from ncuroof.model.roofs import has_any, objects, roof_table, set_source, source_kinds, sources_of
from ncuroof.schema import (
    DAMAGED,
    INCONSISTENT,
    NA_NOTE,
    NOTE_CODES,
    ROOFS,
    Note,
    from_text,
    input_notes,
    to_text,
)
from tests.helpers.reports import datasheet, ncu_metrics, needs_ncu_report, shared

ESMM = "ESMM-Research__profile_output.ncu-rep"
GENE = "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep"
CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"


@needs_ncu_report
def test_report_roofs_in_the_long_table_are_what_ncu_stored() -> None:
    """Each report roof = ncu's peak_sustained x the clock ncu measured, read through ncu_report
    alone (FP32: 2 x ffma.peak_sustained x SM clock; DRAM:
    dram__bytes.sum.peak_sustained x DRAM clock)."""
    a = analysis.build([shared(ESMM)])
    t = roof_table(a.launches, catalog.load_gpus())
    assert list(t.columns) == list(ROOFS) and len(t) == 6 * len(a.launches)
    assert (t["roof_source"] == "report").all() and (t["kind"] == "peak").all()
    for lid, m in enumerate(ncu_metrics(ESMM)):
        mine = t[t["launch_id"] == lid].set_index("roof")
        sm = m["sm__cycles_elapsed.avg.per_second"]
        for p, op in (("fp32", "ffma"), ("fp64", "dfma")):
            stored = m[f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained"]
            assert mine.loc[p, "flop_per_s"] == pytest.approx(2 * stored * sm, rel=1e-9)
            assert mine.loc[p, "clock_hz"] == pytest.approx(sm, rel=1e-12)
        dram = m["dram__bytes.sum.peak_sustained"] * m["dram__cycles_elapsed.avg.per_second"]
        assert mine.loc["dram", "bytes_per_s"] == pytest.approx(dram, rel=1e-9)
        assert np.isnan(mine.loc["dram", "flop_per_s"]) and np.isnan(mine.loc["dram", "clock_hz"])


def test_datasheet_and_measured_roofs_carry_their_entry_clock_and_confidence() -> None:
    """A CSV export without peak_sustained or a device name (V100, --gpu): datasheet roofs at the
    measured clock, by hand; an H100 report: the published DRAM measurement as
    its achievable roof."""
    gpus = catalog.load_gpus()
    opts = analysis.AnalysisOptions(gpu="v100-sxm2")
    a = analysis.build([shared("cuda-roofline__output.csv")], opts)
    t = roof_table(a.launches, gpus)
    sheet = t[t["roof_source"] == "datasheet"]
    assert len(sheet) and set(sheet["datasheet_gpu"]) == {"v100-sxm2"}
    spec = gpus.by_name("v100-sxm2")
    assert (sheet["confidence"] == spec.confidence).all()
    clock = a.launches.set_index("launch_id")["sm_clock_hz"]
    for r in sheet[sheet["roof"] == "fp32"].itertuples():
        expected = spec.flop_per_s["fp32"] * clock[r.launch_id] / spec.boost_hz
        assert r.flop_per_s == pytest.approx(expected, rel=1e-12)
    dram = sheet[sheet["roof"] == "dram"]
    assert (dram["bytes_per_s"] == spec.dram_bytes_per_s).all() and dram["clock_hz"].isna().all()

    h100 = analysis.build([shared("cs599k__2025-04-21-vector-based.ncu-rep")])
    t = roof_table(h100.launches, gpus)
    ach = t[t["kind"] == "achievable"]
    measured = gpus.by_device(h100.launches["device_name"].iat[0]).achievable()["dram"]
    assert len(ach) == len(h100.launches) and (ach["roof"] == "dram").all()
    assert (ach["bytes_per_s"] == 1.86e12).all() and (ach["roof_source"] == "measured").all()
    assert (ach["confidence"] == measured.confidence).all()


def _best_measured(entry: dict, quantity: str) -> dict:
    """The entry's highest measurement of ``quantity`` (what the achievable roof is)."""
    return max(
        (m for m in entry["measured"] if m["quantity"] == quantity), key=lambda m: m["value"]
    )


#: Each embedded report's datasheet roofs: roof -> the gpus.toml key of its TFLOP/s (FP as
#: ``<key>_tflops``, tensor in ``tensor_tflops``), and whether DRAM is the datasheet's too.
EMBEDDED_SHEETS = [
    (GENE, "v100-sxm2", {"fp64": "fp64", "fp32": "fp32", "fp16": "fp16"}, True),
    (CUTLASS, "a100-80gb-pcie", {"fp16": "fp16", "tensor_sass_imma": "int8"}, False),
]


def _sheet_flops(entry: dict, roof: str, key: str) -> float:
    """The datasheet's FLOP/s at boost clock for ``roof``."""
    tflops = entry["tensor_tflops"][key] if roof.startswith("tensor") else entry[f"{key}_tflops"]
    return tflops * 1e12


@needs_ncu_report
@pytest.mark.parametrize("name, gpu, flop_roofs, dram_sheet", EMBEDDED_SHEETS)
def test_embedded_datasheet_and_measured_roofs_carry_their_entry_clock_and_confidence(
    name: str, gpu: str, flop_roofs: dict[str, str], dram_sheet: bool
) -> None:
    """The same on the repository's reports (issue 54 item 10: runs without ../shared), values
    from metrics/gpus.toml read with tomllib, clocks from ncu_report. gene-pop2020's V100 SXM2
    report stores no peak_sustained: every roof is the v100-sxm2 datasheet's, FP at ncu's SM
    clock over the boost clock, DRAM unscaled with no clock. The CUTLASS A100 report: FP16 and
    the INT8 tensor roof from the datasheet. Both: the highest measured DRAM bandwidth of the
    entry is the achievable DRAM roof of each launch, with its confidence."""
    entry, ncu = datasheet(gpu), ncu_metrics(name)
    t = roof_table(analysis.build([shared(name)]).launches, catalog.load_gpus())
    sheet = t[t["roof_source"] == "datasheet"]
    roofs = {*flop_roofs, *(["dram"] if dram_sheet else [])}
    assert set(sheet["roof"]) == roofs and len(sheet) == len(roofs) * len(ncu)
    assert set(sheet["datasheet_gpu"]) == {gpu}
    assert set(sheet["confidence"]) == {entry["confidence"]}
    for r in sheet[sheet["roof"] != "dram"].itertuples():
        clock = ncu[r.launch_id]["sm__cycles_elapsed.avg.per_second"]
        at_boost = _sheet_flops(entry, r.roof, flop_roofs[r.roof])
        assert r.clock_hz == pytest.approx(clock, rel=1e-12)
        assert r.flop_per_s == pytest.approx(at_boost * clock / (entry["boost_mhz"] * 1e6))
    dram = sheet[sheet["roof"] == "dram"]
    assert (dram["bytes_per_s"] == entry["dram_gbps"] * 1e9).all() and dram["clock_hz"].isna().all()
    ach, best = t[t["kind"] == "achievable"], _best_measured(entry, "dram")
    assert len(ach) == len(ncu) and set(ach["roof"]) == {"dram"}
    assert (ach["bytes_per_s"] == best["value"] * 1e9).all()
    assert set(ach["roof_source"]) == {"measured"}
    assert set(ach["confidence"]) == {best["confidence"]}


def _cells(*sets: tuple) -> np.ndarray:
    return objects(sets)


def test_roof_sets_are_changed_per_set_in_order_and_written_as_before() -> None:
    report = (("fp32", "report"), ("l2", "report"))
    cells = _cells(report, report, ())
    cells = set_source(cells, np.array([0, 2]), "dram", "datasheet")
    cells = set_source(cells, np.arange(3), "fp32", "user")
    # a roof already set keeps its place; a new one goes last; launches not named are untouched
    assert cells[0] == (("fp32", "user"), ("l2", "report"), ("dram", "datasheet"))
    assert cells[1] == (("fp32", "user"), ("l2", "report"))
    assert cells[2] == (("dram", "datasheet"), ("fp32", "user"))
    assert cells[0] is not cells[1] and list(sources_of(cells, "dram")) == [
        "datasheet",
        "",
        "datasheet",
    ]
    assert list(source_kinds(cells)) == ["report+datasheet+user", "report+user", "datasheet+user"]
    assert list(has_any(_cells((), report))) == [False, True]
    # the text of files is ncuroof's text of before: 'roof:source' comma-separated, '' for none
    k = pd.DataFrame({"ceiling_sources": cells, "achievable_sources": _cells((), (), ())})
    text = to_text(k)
    assert list(text["ceiling_sources"]) == [
        "fp32:user,l2:report,dram:datasheet",
        "fp32:user,l2:report",
        "dram:datasheet,fp32:user",
    ]
    assert list(text["achievable_sources"]) == ["", "", ""]
    back = from_text(pd.read_csv(io.StringIO(text.to_csv(index=False)), keep_default_na=False))
    assert list(back["ceiling_sources"]) == list(cells)
    assert list(back["achievable_sources"]) == [(), (), ()]


def test_reader_notes_become_codes_once_and_flags_follow_codes_not_words() -> None:
    notes = input_notes(
        [f"{DAMAGED}: x overflowed; merged from 2 files", f"{NA_NOTE}: dram__bytes.sum", None]
    )
    assert [getattr(n, "code", "") for n in notes[0]] == ["damaged_record", ""]
    assert notes[1][0].code == "na_metrics" and notes[2] == []
    assert str(notes[0][0]) == f"{DAMAGED}: x overflowed"  # the words stay, for people
    n = Note("inconsistent_read", f"{INCONSISTENT}: a / a.per_second")
    assert pickle.loads(pickle.dumps(n)).code == "inconsistent_read"  # survives a fleet worker
    assert set(NOTE_CODES) <= set(diagnose.FLAG_CODES) | {"damaged_record"}

    cat = catalog.load()
    k = analysis.build([shared(ESMM)]).launches.iloc[:2].copy()
    k["notes"] = pd.Series(
        [[Note("na_metrics", "any words")], [f"{NA_NOTE}: words without a code"]],
        index=k.index,
        dtype=object,
    )
    flags = diagnose.launch_flags(k, pd.DataFrame(columns=["source"]), cat.thresholds["diagnosis"])
    codes = [[c for c, _ in f] for f in flags]
    assert "na_metrics" in codes[0] and "na_metrics" not in codes[1]
    # a table read back from its file gets its codes from the words, at that edge only
    back = from_text(to_text(k))
    assert back["notes"].iat[1][0].code == "na_metrics"
