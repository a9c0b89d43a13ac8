"""The page's phase and instruction-roofline views (issue 15) and a multi-rank run's spread
over ranks (issue 12) in real headless Chromium.

Drawn dots are counted against phases.csv / instruction_points.csv read back with pandas, the
ranks section's rows against ranks.csv; screenshots go to ``test-artifacts/`` (or
``$NCUROOF_ARTIFACTS``).
"""

from __future__ import annotations

import pandas as pd
from conftest import needs_ncu_report, shared
from test_page import ARTIFACTS, _open, browser  # noqa: F401 - browser is a pytest fixture
from test_ranks import imbalanced_run

import ncuroof

DRAWN = "(id) => document.querySelectorAll('#' + id + ' .scatterlayer .points path').length"
SHOWN = "(id) => getComputedStyle(document.getElementById(id)).display !== 'none'"


@needs_ncu_report
def test_phase_and_instruction_views(browser, tmp_path):  # noqa: F811 - the fixture
    out = tmp_path / "cutlass"
    ncuroof.analyze(shared("cutlass-panjd123__4f3955ed3c_report.ncu-rep"), out, group_by="nvtx")
    phases = pd.read_csv(out / "phases.csv")
    ipts = pd.read_csv(out / "instruction_points.csv")
    page, errors = _open(browser, out / "roofline.html")
    buttons = page.locator("#ncuroof-views button")
    assert buttons.all_inner_texts() == ["Kernels (FLOP roofline)", "NVTX phases", "Instruction roofline"]
    assert page.evaluate(SHOWN, "roofline") and not page.evaluate(SHOWN, "phase-roofline")

    buttons.nth(1).click()
    page.wait_for_timeout(400)
    assert page.evaluate(SHOWN, "phase-roofline") and not page.evaluate(SHOWN, "roofline")
    drawn = phases[(phases["flop"] > 0) & (phases["dram_bytes"] > 0)]
    assert len(drawn) == 2 and page.evaluate(DRAWN, "phase-roofline") == len(drawn)
    labels = page.evaluate("() => [...document.querySelectorAll('#phase-roofline .textpoint')].map(e => e.textContent)")
    assert sorted(labels) == ["Fused-GEMM", "Non-fused-GEMM"]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "roofline-phases-cutlass.png"), full_page=True)

    buttons.nth(2).click()
    page.wait_for_timeout(400)
    assert page.evaluate(SHOWN, "instruction-roofline") and not page.evaluate(SHOWN, "phase-roofline")
    assert len(ipts) == 9 and page.evaluate(DRAWN, "instruction-roofline") == len(ipts)  # 3 launches x L1, L2, DRAM
    page.screenshot(path=str(ARTIFACTS / "roofline-instructions-cutlass.png"), full_page=True)

    buttons.nth(0).click()
    page.wait_for_timeout(200)
    assert page.evaluate(SHOWN, "roofline") and not page.evaluate(SHOWN, "instruction-roofline")
    assert errors == []


@needs_ncu_report
def test_rank_section_in_the_browser(browser, tmp_path, monkeypatch):  # noqa: F811 - the fixture
    out = imbalanced_run(tmp_path, monkeypatch)
    table = pd.read_csv(out / "ranks.csv")
    page, errors = _open(browser, out / "roofline.html")
    section = page.locator("#ranks")
    assert section.is_visible() and section.locator("h2").inner_text() == "Spread over 3 MPI ranks"
    rows = section.locator("tbody tr")
    assert rows.count() == len(table)
    marked = section.locator("tbody tr.imbalanced")
    assert marked.count() == int(table["load_imbalance"].sum()) == 1
    colour = "(el) => getComputedStyle(el.querySelector('td')).backgroundColor"
    assert marked.first.evaluate(colour) == "rgb(255, 241, 224)" and rows.nth(0).evaluate(colour) != "rgb(255, 241, 224)"
    section.locator("th", has_text="slowest over median").click()  # sorts, largest first
    first = table.sort_values("imbalance", ascending=False).iloc[0]
    assert rows.nth(0).locator("td").nth(0).inner_text() == first["kernel_name"] and bool(first["load_imbalance"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "roofline-ranks-esmm.png"))
    assert errors == []
