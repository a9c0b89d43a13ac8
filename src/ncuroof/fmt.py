"""The one formatting module: numbers, times, shares and counts as text for the CLI, the page and
the diagnosis. Every function returns ``'n/a'`` for a missing or non-finite
value (never ``'nan%'``).
"""

from __future__ import annotations

import math
import os
import re
import textwrap
from collections.abc import Callable
from typing import Any

__all__ = [
    "printable",
    "path_text",
    "csv_cell",
    "num",
    "g",
    "plain",
    "pct",
    "time",
    "si",
    "span",
    "plural",
    "count",
    "agree",
    "achievable",
    "change",
    "apart",
    "shorten_names",
    "wrap",
    "markdown_cell",
    "kernel_time",
]

# C0 controls but tab and newline, DEL, C1 controls, and the bidirectional overrides and isolates
# (which reorder what a terminal shows); \r is a control here too (it overwrites a line).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_CONTROL_ALL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
#: :data:`_CONTROL` in RE2's syntax (pyarrow's regular expressions), for the written CSV files.
CONTROL_RE2 = r"[\x00-\x08\x0b-\x1f\x7f-\x{9f}\x{2028}\x{2029}\x{202a}-\x{202e}\x{2066}-\x{2069}]"
#: Text cells a spreadsheet would read as a formula (OWASP CSV injection): beginning with ``=``,
#: ``@``, tab or CR, or with ``+``/``-`` before something that is not a number; and those beginning
#: with ``'`` (so that the ``'`` ncuroof puts in front reads back unambiguously). Regular
#: expressions in the syntax both Python and pyarrow (RE2) read.
CSV_FORMULA = r"^['=@\t\r]"
CSV_SIGNED = r"(?s)^[+-]."
CSV_SIGNED_NUMBER = r"^[+-](\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    if 0xDC80 <= c <= 0xDCFF:  # a byte of a file name that is not UTF-8 (surrogateescape)
        return f"\\x{c - 0xDC00:02x}"
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


#: Lone surrogates: how Python holds the bytes of a file name that are not UTF-8 (PEP 383).
_SURROGATE = re.compile("[\ud800-\udfff]")


def path_text(path: Any) -> str:
    """A path as text that can be encoded, printed and stored: ``str(path)``, with each byte of a
    name that is not UTF-8 (held by Python as a lone surrogate, PEP 383) written ``\\xff``.
    ``path_text(b'bad\\xff.ncu-rep')`` -> ``'bad\\\\xff.ncu-rep'``. The one form in which paths
    enter tables, documents and messages; the file is still opened by its real name."""
    text = os.fsdecode(path) if isinstance(path, bytes) else str(path)
    return _SURROGATE.sub(_escape, text)


def printable(text: Any, layout: bool = True) -> str:
    """``text`` safe to print on a terminal: every control character as a visible escape.

    C0 controls (``ESC``, ``BEL``, ``\\r``, ...), DEL, C1 controls and the Unicode line separators
    and bidirectional overrides become ``\\x1b``, ``\\x9b``, ``\\u202e``: a kernel name can set no
    window title, write no clipboard (``ESC]52``), draw no hyperlink and reset no terminal.
    ``printable('a\\x1b[2Jb')`` -> ``'a\\\\x1b[2Jb'``.

    Parameters
    ----------
    text : object
        What to print (``str(text)``).
    layout : bool, default True
        Keep tab and newline (the layout of a table or several lines); False escapes them too
        (a one-line message).
    """
    return (_CONTROL if layout else _CONTROL_ALL).sub(_escape, str(text))


def csv_cell(value: Any) -> Any:
    """A text cell safe to open in a spreadsheet, as the OWASP CSV-injection guidance says.

    A string beginning with ``=``, ``@``, tab or carriage return, or with ``+`` or ``-`` not
    followed by a number (:data:`CSV_FORMULA`, :data:`CSV_SIGNED`), gets a leading ``'``
    (``'=HYPERLINK(...)`` shows as text, not a formula), and so does one already beginning with
    ``'`` (reading strips exactly one); numbers, ``-1.5e3``, ``-`` and missing values are returned
    unchanged.
    """
    if not isinstance(value, str):
        return value
    if re.match(CSV_FORMULA, value) or (
        re.match(CSV_SIGNED, value, re.S) and not re.fullmatch(CSV_SIGNED_NUMBER[1:-1], value)
    ):
        return "'" + value
    return value


_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def num(x: Any) -> float:
    """``x`` as a float, NaN when it is missing or not a number."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v


def g(x: Any, digits: int = 3) -> str:
    """``digits`` significant digits: ``0.000123`` -> ``'0.000123'``,
    ``1234.5`` -> ``'1.23e+03'``."""
    v = num(x)
    return f"{v:.{digits}g}" if math.isfinite(v) else "n/a"


def plain(x: Any, digits: int = 3) -> str:
    """A count or ratio people read without an exponent: ``plain(16318464)`` -> ``'16,318,464'``,
    ``plain(29876.4)`` -> ``'29,876'``, below 1000 ``digits`` significant digits
    (``plain(0.2881)`` -> ``'0.288'``).
    """
    v = num(x)
    if not math.isfinite(v):
        return "n/a"
    text = f"{v:.{digits}g}"
    return f"{v:,.0f}" if "e+" in text or abs(v) >= 1000 else text


def pct(x: Any, digits: int = 0) -> str:
    """A fraction as a percentage: ``pct(0.456)`` -> ``'46%'``, ``pct(0.456, 1)`` -> ``'45.6%'``."""
    v = num(x)
    return f"{100 * v:.{digits}f}%" if math.isfinite(v) else "n/a"


def apart(x: Any) -> str:
    """How far apart two forms of one quantity are (a relative difference): ``apart(0.003)`` ->
    ``'0.3%'``; below 0.01 % (floating-point noise between a counter and its opcode
    table) ``'< 0.01%'``.
    """
    v = num(x)
    if not math.isfinite(v):
        return "n/a"
    return "0%" if v == 0 else ("< 0.01%" if v < 1e-4 else f"{100 * v:.2g}%")


def time(t: Any) -> str:
    """A duration in seconds with the largest unit that keeps it >= 1: ``0.0012`` -> ``'1.2 ms'``
    (three significant digits; s, ms, us or ns)."""
    v = num(t)
    if not math.isfinite(v):
        return "n/a"
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if v >= factor:
            return f"{v / factor:.3g} {unit}"
    return f"{v * 1e9:.3g} ns"


def si(value: Any, unit: str = "") -> str:
    """A quantity with an SI prefix (k, M, G, T, P) and three significant digits:
    ``si(1.5e12, 'FLOP/s')`` -> ``'1.5 TFLOP/s'``; below 1000 no prefix (``si(12)`` -> ``'12'``)."""
    v = num(value)
    if not math.isfinite(v):
        return "n/a"
    for factor, prefix in _SI:
        if abs(v) >= factor:
            return f"{v / factor:.3g} {prefix}{unit}"
    return f"{v:.3g} {unit}".rstrip()


def span(lo: Any, hi: Any, show: Callable[[Any], str] = g) -> str:
    """A range as text, each end through ``show`` (one of this module's functions):
    ``span(0.12, 0.3, pct)`` -> ``'12%–30%'``; one value when both ends read alike
    (``span(2, 2.0001)`` -> ``'2'``); ``'n/a'`` when both are missing."""
    a, b = show(lo), show(hi)
    return a if a == b else f"{a}–{b}"


def plural(n: int, noun: str, plural: str | None = None) -> str:
    """The form of ``noun`` for ``n`` things: ``plural(2, 'launch')`` -> ``'launches'``; the plural
    is ``plural`` when given, else ``noun`` + ``es`` after s, x, z, ch, sh and + ``s`` otherwise."""
    if n == 1:
        return noun
    if plural is not None:
        return plural
    return noun + ("es" if noun.endswith(("s", "x", "z", "ch", "sh")) else "s")


def count(n: int, noun: str, plural_form: str | None = None) -> str:
    """``count(1, 'kernel')`` -> ``'1 kernel'``, ``count(2, 'kernel')`` -> ``'2 kernels'``,
    ``count(3, 'launch')`` -> ``'3 launches'`` (:func:`plural`)."""
    return f"{n} {plural(n, noun, plural_form)}"


def agree(n: int, one: str = "is", many: str = "are") -> str:
    """The verb that agrees with ``n`` things: ``agree(1)`` -> ``'is'``,
    ``agree(2, 'has', 'have')`` -> ``'have'``."""
    return one if n == 1 else many


def achievable(fraction: Any, peak_fraction: Any, roof: str, peak_source: str = "") -> str:
    """A fraction of an achievable roof beside the fraction of the peak one:
    ``achievable(0.93, 0.82, 'DRAM bandwidth', 'datasheet')`` ->
    ``'at 93% of achievable DRAM bandwidth (82% of the datasheet's)'``; ``'(82% of peak)'`` without
    a source; ``''`` when ``fraction`` is missing."""
    if not math.isfinite(num(fraction)):
        return ""
    of = f"the {peak_source}'s" if peak_source in ("datasheet", "report", "user") else "peak"
    return f"at {pct(fraction)} of achievable {roof} ({pct(peak_fraction)} of {of})"


def change(r: Any, digits: int = 0) -> str:
    """A relative change as a signed percentage: ``change(-0.47)`` -> ``'−47 %'`` (a minus sign,
    U+2212), ``change(0.04)`` -> ``'+4 %'``, ``change(0)`` -> ``'±0 %'``."""
    v = num(r)
    if not math.isfinite(v):
        return "n/a"
    text = f"{abs(100 * v):.{digits}f}"
    sign = "±" if float(text) == 0 else ("+" if v > 0 else "−")
    return f"{sign}{text} %"


#: Characters kept before the ellipsis when a name is cut around the place where it differs.
_HEAD = 10
#: At most this many characters kept before the place where two cut names differ (back to the
#: start of the word that differs).
_CONTEXT = 8


def _cut(name: str, width: int, at: int) -> str:
    """``name`` in at most ``width`` characters: whole when it fits, else its head and, when it
    differs from another name only at ``at`` or later, an ellipsis and the part from just
    before ``at`` (``Kernel<128x…x64, 3>``)."""
    if len(name) <= width:
        return name
    if at < width - 1:
        return name[: width - 1] + "…"
    head = min(_HEAD, max(1, width // 3))
    start = at
    while start > head and name[start - 1] not in "<>,_:( " and at - start < _CONTEXT:
        start -= 1  # back to the start of the word that differs (a tile shape, an argument)
    start = min(start, len(name) - (width - head - 2))
    tail = name[start : start + width - head - 2]
    return name[:head] + "…" + tail + ("…" if start + len(tail) < len(name) else "")


def shorten_names(names: list[str], width: int) -> list[str]:
    """Each name in at most ``width`` characters, no two alike where the names differ.

    A name that fits is kept; a longer one is cut at the end (``InitializeMatrix…``), or, where
    that would print it as another name does, around the first character in which it differs
    from the most alike other name (``Kernel<1…>, 128x96x64, 3>``: the tile shape or template
    argument that tells two instantiations apart). Names still alike after that (a difference
    that does not fit) get ``#1``, ``#2`` at the end, in order.

    Parameters
    ----------
    names : list of str
        Printable names (:func:`printable`).
    width : int
        At most this many characters each (at least 8).

    Returns
    -------
    list of str
        The names to print, in the same order.
    """
    width = max(8, int(width))
    at = [0] * len(names)
    order = sorted(range(len(names)), key=lambda i: names[i])
    for a, b in zip(order, order[1:]):  # the most alike name is a neighbour in sorted order
        x, y = names[a], names[b]
        n = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
        at[a], at[b] = max(at[a], n), max(at[b], n)
    out = [_cut(n, width, i) for n, i in zip(names, at)]
    seen: dict[str, int] = {}
    for text in out:
        seen[text] = seen.get(text, 0) + 1
    nth: dict[str, int] = {}
    for i, text in enumerate(out):
        if seen[text] > 1 and names.count(names[i]) < seen[text]:
            nth[text] = nth.get(text, 0) + 1
            mark = f" #{nth[text]}"
            out[i] = _cut(names[i], width - len(mark), at[i]) + mark
    return out


def wrap(text: str, width: int, indent: str = "  ") -> str:
    """``text`` wrapped to ``width`` columns, lines after the first indented by ``indent``; only a
    word longer than a whole line (a long kernel name in an ``ncu -k`` pattern) is split."""
    return textwrap.fill(
        text,
        width=max(20, int(width)),
        subsequent_indent=indent,
        break_long_words=True,
        break_on_hyphens=False,
    )


#: ASCII punctuation that Markdown (CommonMark, GitHub) reads as markup in a table cell (``(``,
#: ``)`` and ``!`` only mean something after a ``]``, which is escaped).
_MARKDOWN = re.compile(r"([\\`*_{}\[\]<>|~])")


def markdown_cell(text: Any) -> str:
    """``text`` as one literal cell of a Markdown table: control characters visible
    (:func:`printable`, newlines too), and every punctuation character that Markdown would read
    as markup, ``|`` included, backslash-escaped (CommonMark's backslash escapes):
    ``markdown_cell('gemm<float>|x')`` -> ``'gemm\\<float\\>\\|x'``."""
    return _MARKDOWN.sub(r"\\\1", printable(text, layout=False))


def kernel_time(t: Any) -> str:
    """A kernel's time in a summary (:func:`time`), ``'-'`` for 0: no kernel runs in no time, so a
    0 is a kernel that a production timeline does not hold (``--timeline`` of another run or
    GPU), not a measurement, and never prints as ``'0 ns'``."""
    v = num(t)
    return "-" if v == 0 else time(v)
