"""Text made once per distinct row of a table and taken back: launches of one kernel repeat the same
numbers, so a sentence built from them (a verdict, a note) is the same for all of them.

Exact: two rows are the same only when every deciding cell is (floats by their bits, NaN and -0.0
included; object cells by type and value; None apart from NaN), so the text is what a call per
row would give.
"""

from __future__ import annotations

import functools
import gc
import itertools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "categorical",
    "distinct_codes",
    "distinct_rows",
    "first_rows",
    "per_distinct",
    "text_array",
    "coded_text",
    "factorize_objects",
    "text_codes",
    "bit_codes",
    "gc_paused",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def gc_paused(fn: _F) -> _F:
    """``fn`` run with Python's cyclic garbage collector paused (restored after, as it was).

    A model stage makes containers per launch (notes and flags lists, roof-set tuples) that form no
    reference cycles; each 100,000 of them would start a collection that walks every live object
    (the raw and launch tables' cells included), a large part of a stage's time. Reference counting
    still frees everything as usual; only cyclic garbage waits for the next collection.
    """

    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return paused  # type: ignore[return-value]


def distinct_rows(frame: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``frame[cols]``, exactly: floats told apart by their bits (NaN and -0.0
    included), object cells by type and value, None apart from NaN.

    Text built from a row (a verdict, a note) is the same for every row equal to it, so it is made
    once per distinct row and taken back with ``inverse``.

    Parameters
    ----------
    frame : DataFrame
        Any table.
    cols : list of str
        The columns that decide.

    Returns
    -------
    (ndarray, ndarray)
        ``first``: the position of the first row of each distinct combination, in order of first
        appearance; ``inverse``: for each row, the index into ``first`` of its combination (int64).
    """
    subs, bits = [], []  # each part's codes, combined at once (distinct_codes); 64-bit columns
    for c in cols:
        col = frame[c]
        if col.dtype in (np.float64, np.int64, np.bool_):
            cells = col.to_numpy()  # bits taken as they are (floats: NaN and -0.0 apart)
            bits.append(cells.astype(np.uint64) if cells.dtype == bool else cells.view(np.uint64))
            continue
        if col.dtype == object:
            cells = col.to_numpy()
            kinds = np.fromiter(map(type, cells), dtype=object, count=len(cells))
            floats = np.fromiter(
                map(isinstance, cells, itertools.repeat(float)), dtype=bool, count=len(cells)
            )
            keys = cells.copy()
            keys[floats] = cells[floats].astype(np.float64).view(np.uint64).astype(object)
            parts = [kinds, keys]
        elif isinstance(col.dtype, (pd.StringDtype, pd.CategoricalDtype)):
            subs.append(text_codes(col)[0])  # hashed by Arrow or by category code: no object
            continue
        else:
            parts = [col.to_numpy()]
        subs += [pd.factorize(part, use_na_sentinel=False)[0] for part in parts]
    subs += bit_codes(bits)
    if not subs:
        return np.zeros(min(len(frame), 1), dtype=np.int64), np.zeros(len(frame), dtype=np.int64)
    return distinct_codes(subs)  # numbered in order of first appearance


def bit_codes(columns: list[np.ndarray]) -> list[np.ndarray]:
    """Codes of the distinct rows of 64-bit columns (``uint64`` views of floats' bits, integers,
    booleans), for :func:`distinct_codes`: each row's bits hashed into one number, that column
    factorized and checked against the rows (exact); on a collision, each column factorized."""
    if len(columns) < 2:
        return [pd.factorize(c, use_na_sentinel=False)[0] for c in columns]
    mixed = np.zeros(len(columns[0]), dtype=np.uint64)
    for col in columns:  # multiply and shift (wrapping): every bit of a row moves the hash
        mixed = (mixed ^ col) * np.uint64(0x9E3779B97F4A7C15)
        mixed ^= mixed >> np.uint64(29)
    code, hashes = pd.factorize(mixed)
    at = first_rows(code, len(hashes))[code]  # each row's first row with its hash
    if all(np.array_equal(col, col[at]) for col in columns):
        return [code]
    return [pd.factorize(c, use_na_sentinel=False)[0] for c in columns]


def per_distinct(frame: pd.DataFrame, cols: list[str], fn: Callable[[Any], Any]) -> np.ndarray:
    """``[fn(r) for r in frame[cols].itertuples(index=False)]``, with ``fn`` called
    once per distinct row.

    Parameters
    ----------
    frame : DataFrame
        Any table.
    cols : list of str
        The columns ``fn`` reads (and the only ones that decide what is distinct).
    fn : callable
        Takes one row as a named tuple of ``cols``.

    Returns
    -------
    ndarray of object
        One result per row of ``frame``.
    """
    first, inverse = distinct_rows(frame, cols)
    made = np.empty(len(first), dtype=object)
    made[:] = [fn(r) for r in frame[cols].iloc[first].itertuples(index=False)]
    return made[inverse]


def distinct_codes(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of equal-length integer or boolean columns, in linear time (hashing).

    Parameters
    ----------
    columns : list of ndarray
        Integer codes or booleans, one value per row each (at least one column).

    Returns
    -------
    (ndarray, ndarray)
        ``first``: the position of the first row of each distinct combination, in order of first
        appearance; ``inverse``: for each row, the index into ``first`` of its combination (int64).
    """
    code, bound = np.zeros(len(columns[0]), dtype=np.int64), 1
    for col in map(np.asarray, columns):
        small = col.dtype.kind in "iu" and len(col) and 0 <= col.min() and col.max() < 2**31
        if col.dtype == bool or small:
            sub, size = (
                col.astype(np.int64, copy=False),
                int(col.max(initial=0)) + 1,
            )  # already small codes
        else:
            sub, uniques = pd.factorize(col, use_na_sentinel=False)
            size = len(uniques) + 1
        if bound * size >= 2**62:  # renumber before the combined code could overflow
            code = pd.factorize(code)[0]
            bound = int(code.max(initial=-1)) + 1
        code, bound = code * size + sub, bound * size
    if bound <= 2 * len(code):  # few combinations: numbered by their first rows, not hashed
        return _dense_codes(code, bound)
    code = pd.factorize(code)[0]
    return first_rows(code, int(code.max(initial=-1)) + 1), code


def _dense_codes(code: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`distinct_codes` of one column of codes ``0 .. bound - 1``: each present code's first
    row, in order of first appearance, and the rows renumbered in that order."""
    at = np.full(bound, len(code), dtype=np.int64)
    at[code[::-1]] = np.arange(len(code) - 1, -1, -1)  # the last write wins: the first row
    present = np.flatnonzero(at < len(code))
    order = present[np.argsort(at[present], kind="stable")]
    rank = np.empty(bound, dtype=np.int64)
    rank[order] = np.arange(len(order))
    return at[order], rank[code]


def first_rows(codes: np.ndarray, count: int) -> np.ndarray:
    """The position of the first row of each code ``0 .. count - 1`` (codes numbered in order of
    first appearance, as :func:`pandas.factorize` numbers them), in linear time."""
    first = np.empty(count, dtype=np.int64)
    first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
    return first


def categorical(inverse: np.ndarray, made: np.ndarray) -> pd.Categorical:
    """Per-row values ``made[inverse]`` as a :class:`pandas.Categorical` (text made once per
    distinct row, stored once: equal texts of different rows share one category)."""
    codes, texts = pd.factorize(np.asarray(made, dtype=object), use_na_sentinel=False)
    return pd.Categorical.from_codes(codes[inverse], pd.Index(texts, dtype=object))


def factorize_objects(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(values, use_na_sentinel=False)`` of an object array, faster where its cells
    repeat a few objects (text made once per distinct row and taken back): the cells are numbered
    by identity first, then the distinct objects by value (same codes, same order: the first
    object of each value is its first row).

    Parameters
    ----------
    values : ndarray of object
        Any cells.

    Returns
    -------
    (ndarray, ndarray)
        As :func:`pandas.factorize`: codes per cell and the distinct values in order of first
        appearance.
    """
    ids = np.fromiter(map(id, values), dtype=np.uint64, count=len(values))
    by_id, objs = pd.factorize(ids)
    if len(objs) > len(values) // 4:  # mostly distinct objects: hashing values once is cheaper
        return pd.factorize(values, use_na_sentinel=False)
    codes, uniques = pd.factorize(values[first_rows(by_id, len(objs))], use_na_sentinel=False)
    return codes[by_id], uniques


def text_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``pd.factorize(col, use_na_sentinel=True)``, faster for an Arrow text column holding one
    value (a table's repeated source or precision): told by one comparison of every row, not
    hashed.

    Parameters
    ----------
    col : Series
        Any column.

    Returns
    -------
    (ndarray, ndarray)
        Codes per row (-1 where missing) numbering the distinct values in order of first
        appearance, as :func:`pandas.factorize` does, and those values (an object array).
    """
    arr = getattr(col.array, "_pa_array", None)
    if isinstance(col.dtype, pd.StringDtype) and arr is not None and len(col):
        if not arr.null_count and pc.all(pc.equal(arr, arr[0])).as_py():
            return np.zeros(len(col), dtype=np.int64), np.array([arr[0].as_py()], dtype=object)
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    return codes, np.asarray(uniques, dtype=object)


def text_array(values: np.ndarray | pd.Categorical) -> pd.api.extensions.ExtensionArray:
    """Per-row text as a ``str`` (pyarrow) array, each distinct text converted to Arrow once:
    what assigning an object array to a column does, without a conversion per row."""
    if isinstance(values, pd.Categorical) and not (values.codes < 0).any():
        codes, texts = values.codes, values.categories  # already coded: no second hashing
    elif isinstance(values, np.ndarray) and values.dtype == object:
        codes, texts = factorize_objects(values)
    else:
        codes, texts = pd.factorize(values, use_na_sentinel=False)
    texts = np.asarray(texts, dtype=object)
    if len(texts) and any(not isinstance(t, str) for t in texts):  # None, NaN: the slow way
        return pd.array(np.asarray(values, dtype=object), dtype="str")
    return coded_text(codes, list(texts))


def coded_text(codes: np.ndarray, words: list[str]) -> pd.api.extensions.ExtensionArray:
    """``words[codes]`` as a ``str`` (pyarrow) array: each word converted to Arrow once, then
    taken (no conversion per row; what :func:`text_array` does once values are coded).

    Parameters
    ----------
    codes : ndarray of int
        Per row, an index into ``words`` (0 .. len(words) - 1).
    words : list of str
        The distinct texts.

    Returns
    -------
    ExtensionArray
        Dtype ``str``, one value per code.
    """
    table = pa.array(list(words), type=pa.large_string())
    # numpy indices: a pyarrow index array makes the take several times slower
    return pd.array(table.take(np.asarray(codes, dtype=np.int64)), dtype="str")
