"""Model functions handed a table in its written form (text cells, as read back from CSV or made by
hand through the API) give what they give on the in-memory table (review of issue 31's roof sets
and note codes)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncuroof import schema
from ncuroof.catalog import load_gpus
from ncuroof.model import diagnose, roofs
from ncuroof.model.classify import BINDING_COLUMNS, binding_points
from tests.helpers.reports import needs_ncu_report, shared


def test_note_flags_read_the_codes_of_text_and_tuple_notes_read_back() -> None:
    """Notes read back from text or made by hand as tuples reach the model as lists through the
    one reader (schema.from_text) and raise the flags of their codes."""
    code, words = "sources_disagree", schema.NOTE_CODES["sources_disagree"]
    cells = pd.Series(
        [
            f"{words}: x; other",
            [schema.Note(code, f"{words}: y")],
            (schema.Note(code, f"{words}: z"),),
            "other",
        ]
    )
    flags = diagnose._note_flags(schema.from_text(pd.DataFrame({"notes": cells}))["notes"])
    assert sorted(flags) == [0, 1, 2]
    assert all(c == code for i in (0, 1, 2) for c, _ in flags[i])


# the second (report + datasheet roofs) runs without ../shared (issue 54 item 10)
@needs_ncu_report
@pytest.mark.parametrize(
    "name", ["CudaCode__naive.ncu-rep", "cutlass-panjd123__4f3955ed3c_report.ncu-rep"]
)
def test_fill_ceilings_on_a_written_kernels_table_equals_the_in_memory_one(name: str) -> None:
    import ncuroof

    k = ncuroof.analyze(shared(name), write=False).analysis.launches
    gpus = load_gpus()
    read_back = schema.from_text(schema.to_text(k))  # as written, then read by the one reader
    mem, text = roofs.fill_ceilings(k, gpus), roofs.fill_ceilings(read_back, gpus)
    assert (text["peak_source"] == mem["peak_source"]).all() and (mem["peak_source"] != "").all()
    assert schema.to_text(text)["ceiling_sources"].equals(schema.to_text(mem)["ceiling_sources"])
    assert [list(map(str, n)) for n in text["notes"]] == [list(map(str, n)) for n in mem["notes"]]


def test_a_point_of_no_precision_binds_no_group() -> None:
    p = pd.DataFrame(
        {
            "kernel_key": ["a", "a"],
            "precision": [None, "fp32"],
            "level": ["dram", "dram"],
            "flop": [9.0, 1.0],
            "flop_per_s": [9.0, 1.0],
            "roof_flop_per_s": [5.0, 5.0],
        }
    )
    for c in BINDING_COLUMNS:
        if c not in p.columns and c != "main_precision":
            p[c] = np.arange(2, dtype=float)
    out = binding_points(p, ("kernel_key",))
    assert out["precision"].tolist() == ["fp32"] and out["main_precision"].tolist() == ["fp32"]


def test_the_model_holds_lists_and_text_is_written_once() -> None:
    """Issue 40, one cell codec: an analysis holds its list cells as lists (launches and kernel
    summary), text exists only at the writers (cell_text) and the one reader (parse_cell through
    from_text); converting a cell twice is refused."""
    import ncuroof
    from tests.helpers.reports import fixture_path

    path = fixture_path("ESMM-Research__profile_output.ncu-rep")
    if path is None:
        pytest.skip("the ESMM report is in neither fixtures/third_party nor ../shared")
    a = ncuroof.analyze(path, write=False).analysis
    for table, columns in ((a.launches, ("notes", "flags")), (a.summary, ("flags",))):
        for c in columns:
            assert all(isinstance(cell, list) for cell in table[c]), c
    assert all(isinstance(cell, tuple) for cell in a.launches["ceiling_sources"])
    with pytest.raises(TypeError):
        schema.cell_text("flags", "code: already text")
    with pytest.raises(TypeError):
        schema.parse_cell("notes", ["already", "a list"])
