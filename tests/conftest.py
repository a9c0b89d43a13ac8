"""Shared fixtures: real ncu reports in ../shared/fixtures, read by path, never copied."""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "fixtures"
REPORTS = sorted(SHARED.glob("*.ncu-rep")) if SHARED.is_dir() else []

needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason=f"{SHARED} is absent: the shared real-report fixtures are not beside this checkout",
)

HAVE_NCU_REPORT = importlib.util.find_spec("ncu_report") is not None  # no wheel on aarch64 hosts

needs_ncu_report = pytest.mark.skipif(
    not HAVE_NCU_REPORT, reason="ncu_report is not installed (no wheel for this platform)"
)


def shared(name: str) -> Path:
    """Path of a shared fixture; skips the test when the shared folder is absent."""
    path = SHARED / name
    if not path.exists():
        pytest.skip(
            f"{path} is absent: the shared real-report fixtures are not beside this checkout"
        )
    return path


@functools.cache
def kernels_of(name: str):
    """The kernels table of a shared fixture (cached for the session)."""
    import ncuroof

    return ncuroof.load(shared(name))


@functools.cache
def ncu_metrics(name: str) -> tuple[dict[str, float], ...]:
    """Every scalar metric ncu stored for each launch, read directly through ncu_report.

    This is the independent path the tests compare ncuroof against: it does not go through
    ncuroof's parser, catalog or calculator.
    """
    out = []
    for action in ncu_actions(name):
        values = {}
        for m in action.metric_names():
            metric = action.metric_by_name(m)
            if metric.num_instances() == 0 or m.startswith("sass__"):
                v = metric.value()
                if isinstance(v, (int, float)):
                    values[m] = float(v)
        out.append(values)
    return tuple(out)


def ncu_actions(name: str):
    """Every launch (ncu_report action) of a shared report, in report order, read by ncu_report alone."""
    import ncu_report

    ctx = ncu_report.load_report(str(shared(name)))
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            yield rng.action_by_idx(a)


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    """Relative closeness that treats two NaNs as different and 0 == 0."""
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= rel * max(abs(a), abs(b)) or a == b


#: Test modules left out of the quick subset (``scripts/test --quick``, ``-m "not slow"``): they start
#: subprocesses or the CLI on real reports, drive Chromium, fuzz, start dask clusters or the MCP server,
#: or read every shared report. Plain ``scripts/test`` runs them all.
SLOW_MODULES = frozenset(
    {
        "test_bad_input",
        "test_collector",
        "test_compare",
        "test_compare_page",
        "test_complete_charts",
        "test_decoder",
        "test_fleet",
        "test_fuzz",
        "test_hostile",
        "test_json_doc",
        "test_mcp",
        "test_ncu_agreement",
        "test_page",
        "test_production",
        "test_ranks",
        "test_reports",
        "test_repz",
        "test_tables_io",
        "test_views_page",
    }
)

#: Single tests of quick modules left out too (``module::function``): each takes seconds (every shared
#: report, the CLI end to end, many generated inputs).
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SLOW_MODULES` and :data:`SLOW_TESTS` ``slow`` (registered in pyproject.toml)."""
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module is not None else ""
        if (
            module in SLOW_MODULES
            or f"{module}::{getattr(item, 'originalname', item.name)}" in SLOW_TESTS
        ):
            item.add_marker(pytest.mark.slow)
