"""ncuroof.fmt: numbers and counts as the page, the tables and the terminal show them
(hand-written expectations)."""

from __future__ import annotations

import math

import pytest

from ncuroof import fmt


@pytest.mark.parametrize(
    ("value", "decimals", "text"),
    [
        (0.1234, 1, "12.3%"),
        (0.5, 0, "50%"),
        (1, 1, "100.0%"),
        (math.nan, 1, "n/a"),
        (None, 0, "n/a"),
        (math.inf, 1, "n/a"),
    ],
)
def test_pct(value, decimals, text):
    assert fmt.pct(value, decimals) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(2.5, "2.5 s"), (1.5e-3, "1.5 ms"), (731e-6, "731 us"), (4.2e-8, "42 ns"), (math.nan, "n/a")],
)
def test_time(value, text):
    assert fmt.time(value) == text


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (6.7e13, "FLOP/s", "67 TFLOP/s"),
        (3.35e12, "B/s", "3.35 TB/s"),
        (598e9, "B/s", "598 GB/s"),
        (12.0, "", "12"),
        (12.0, "B", "12 B"),
        (-2e6, "", "-2 M"),
        (math.nan, "B", "n/a"),
    ],
)
def test_si(value, unit, text):
    assert fmt.si(value, unit) == text


def test_counts_in_words():
    assert (
        fmt.count(1, "kernel") == "1 kernel"
        and fmt.count(2, "kernel") == "2 kernels"
        and fmt.count(0, "kernel") == "0 kernels"
    )
    assert fmt.count(1, "launch") == "1 launch" and fmt.count(3, "launch") == "3 launches"
    assert fmt.count(2, "matrix", "matrices") == "2 matrices"
    assert (
        fmt.agree(1),
        fmt.agree(2),
        fmt.agree(1, "has", "have"),
        fmt.agree(5, "has", "have"),
    ) == ("is", "are", "has", "have")
    assert fmt.g(1234.5) == "1.23e+03" and fmt.g(0.012345, 2) == "0.012" and fmt.g(None) == "n/a"


def test_span():
    assert (
        fmt.span(0.12, 0.3, fmt.pct) == "12%–30%"
        and fmt.span(2, 2.0001) == "2"
        and fmt.span(None, float("nan")) == "n/a"
    )
    assert fmt.span(1.5e-3, 2e-3, fmt.time) == "1.5 ms–2 ms"


def test_achievable_beside_peak():
    assert (
        fmt.achievable(0.93, 0.82, "DRAM bandwidth", "datasheet")
        == "at 93% of achievable DRAM bandwidth (82% of the datasheet's)"
    )
    assert fmt.achievable(0.5, 0.4, "FP32 roof") == "at 50% of achievable FP32 roof (40% of peak)"
    assert fmt.achievable(float("nan"), 0.4, "roof") == ""


def test_plain_counts_have_no_exponent() -> None:
    # the "3e+04 waves per SM (16318464 blocks ...)": separators above 1000, 3
    # significant digits below
    assert (
        fmt.plain(16318464) == "16,318,464"
        and fmt.plain(29876.4) == "29,876"
        and fmt.plain(999.6) == "1,000"
    )
    assert (
        fmt.plain(0.2881) == "0.288" and fmt.plain(2.0) == "2" and fmt.plain(float("nan")) == "n/a"
    )
