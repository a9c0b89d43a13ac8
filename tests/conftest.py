"""Test layout: tests/unit (fast, in-process) and tests/integration (the CLI in a subprocess,
Chromium, fuzzing, fleets, MCP, every-report sweeps), helpers in tests/helpers.

Every test under tests/integration is marked ``slow``: ``scripts/test --quick`` (``-m "not slow"``)
runs tests/unit only, plain ``scripts/test`` runs both. Real reports are read from
``../shared/fixtures`` by path (tests/helpers/reports.py) and tests skip when it is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

INTEGRATION = Path(__file__).resolve().parent / "integration"

#: Single tests of tests/unit marked slow too (``module::function``): each takes seconds (every
#: shared report, the CLI end to end, many generated inputs).
SLOW_TESTS = frozenset(
    {
        "test_verdict_invariants::test_words_never_contradict_numbers",
        "test_verdict_invariants::test_launch_floor_is_the_shortest_launch_held",
        "test_ceilings::test_every_launch_with_work_has_a_roof_and_a_roof_fraction",
        "test_ceilings::test_cli_peaks_end_to_end",
        "test_evidence::test_every_report_with_both_sources_agrees",
        "test_csv::test_bad_csv_gives_one_line_and_exit_2",
        "test_csv::test_separate_gene_exports_concatenated_equal_the_two_files",
        "test_csv::test_merge_refuses_runs_that_do_not_line_up",
        "test_csv::test_kernel_names_of_any_length",
        "test_csv::test_runs_in_one_file_that_do_not_line_up_are_refused",
        "test_ceilings::test_datasheet_agrees_with_ncu_peak_sustained",
        "test_one_model::test_report_compared_with_itself_has_the_pages_kernels",
        "test_evidence::test_opcode_flops_by_hand_equal_the_counters",
    }
)


def _slow(item: pytest.Item) -> bool:
    if INTEGRATION in item.path.parents:
        return True
    module = item.path.stem
    return f"{module}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests/integration and :data:`SLOW_TESTS` ``slow`` (registered in pyproject.toml)."""
    for item in items:
        if _slow(item):
            item.add_marker(pytest.mark.slow)
