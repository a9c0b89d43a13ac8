"""The one formatting module: numbers, times, shares and counts as text for the CLI, the page and
the diagnosis. Every function returns ``'n/a'`` for a missing or non-finite value."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["num", "g", "pct", "time", "si", "count"]


def num(x: Any) -> float:
    """``x`` as a float, NaN when it is missing or not a number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def g(x: Any) -> str:
    """Three significant digits: ``0.000123`` -> ``'0.000123'``, ``1234.5`` -> ``'1.23e+03'``."""
    v = num(x)
    return f"{v:.3g}" if math.isfinite(v) else "n/a"


def pct(x: Any, digits: int = 0) -> str:
    """A fraction as a percentage: ``pct(0.456)`` -> ``'46%'``, ``pct(0.456, 1)`` -> ``'45.6%'``."""
    v = num(x)
    return f"{100 * v:.{digits}f}%" if math.isfinite(v) else "n/a"


def time(t: Any) -> str:
    """A duration in seconds with the largest unit that keeps it >= 1: ``0.0012`` -> ``'1.2 ms'``."""
    v = num(t)
    if not math.isfinite(v):
        return "n/a"
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if v >= factor:
            return f"{v / factor:.3g} {unit}"
    return f"{v * 1e9:.3g} ns"


def si(value: Any, unit: str) -> str:
    """A quantity with an SI prefix: ``si(1.5e12, 'FLOP/s')`` -> ``'1.5 TFLOP/s'``."""
    v = num(value)
    if not math.isfinite(v):
        return "n/a"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``count(1, 'kernel')`` -> ``'1 kernel'``, ``count(2, 'kernel')`` -> ``'2 kernels'``."""
    return f"{n} {noun if n == 1 else (plural or noun + 's')}"
