"""How numbers and counts read on the page, in the tables and in the terminal: one place for
percentages, times, SI prefixes and the grammar of counts.

Every function takes a value that may be missing (None, NaN, inf) and then returns ``"n/a"``
instead of ``"nan%"``.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["pct", "seconds", "si", "sig", "plural", "count", "agree"]

_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"))


def _finite(x: Any) -> float | None:
    """``x`` as a float, or None when it is missing or not finite."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def pct(x: Any, decimals: int = 1) -> str:
    """A fraction as a percentage: ``pct(0.1234)`` -> ``'12.3%'``, ``pct(0.5, 0)`` -> ``'50%'``.

    Parameters
    ----------
    x : float
        Fraction (1 = 100%).
    decimals : int, default 1
        Digits after the decimal point.

    Returns
    -------
    str
        ``'n/a'`` for a missing or non-finite value.
    """
    f = _finite(x)
    return "n/a" if f is None else f"{100 * f:.{decimals}f}%"


def seconds(t: Any) -> str:
    """A duration in seconds with the largest unit that keeps it at least 1: ``'1.23 ms'``.

    Parameters
    ----------
    t : float
        Duration [s].

    Returns
    -------
    str
        Three significant digits and one of ``s``, ``ms``, ``us``, ``ns``; ``'n/a'`` when missing.
    """
    f = _finite(t)
    if f is None:
        return "n/a"
    for factor, unit in _TIME:
        if f >= factor:
            return f"{f / factor:.3g} {unit}"
    return f"{f * 1e9:.3g} ns"


def si(value: Any, unit: str = "") -> str:
    """A value with an SI prefix (k, M, G, T, P) and three significant digits: ``si(6.7e13, 'FLOP/s')``
    -> ``'67 TFLOP/s'``.

    Parameters
    ----------
    value : float
        The value in ``unit``.
    unit : str, default ''
        Unit after the prefix.

    Returns
    -------
    str
        Values below 1000 carry no prefix; ``'n/a'`` when missing.
    """
    f = _finite(value)
    if f is None:
        return "n/a"
    for factor, prefix in _SI:
        if abs(f) >= factor:
            return f"{f / factor:.3g} {prefix}{unit}"
    return f"{f:.3g} {unit}".rstrip()


def sig(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits (``'%g'``); ``'n/a'`` when missing."""
    f = _finite(x)
    return "n/a" if f is None else f"{f:.{digits}g}"


def plural(n: int, singular: str, plural: str | None = None) -> str:
    """The form of a noun for ``n`` things: ``plural(2, 'launch')`` -> ``'launches'``.

    Parameters
    ----------
    n : int
        How many.
    singular : str
        The noun for one.
    plural : str, optional
        The noun for several; default ``singular`` + ``es`` after s, x, z, ch, sh, else + ``s``.

    Returns
    -------
    str
    """
    if n == 1:
        return singular
    if plural is not None:
        return plural
    return singular + ("es" if singular.endswith(("s", "x", "z", "ch", "sh")) else "s")


def count(n: int, singular: str, plural_form: str | None = None) -> str:
    """``n`` and the noun in the right form: ``count(1, 'kernel')`` -> ``'1 kernel'``, ``count(3, 'launch')``
    -> ``'3 launches'`` (see :func:`plural`)."""
    return f"{n} {plural(n, singular, plural_form)}"


def agree(n: int, one: str = "is", many: str = "are") -> str:
    """The verb form that agrees with ``n`` things: ``agree(1)`` -> ``'is'``, ``agree(2, 'has', 'have')`` -> ``'have'``."""
    return one if n == 1 else many
