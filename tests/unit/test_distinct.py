"""Codes of distinct values and rows (ncuroof.model.distinct) against pandas.factorize."""

import numpy as np
import pandas as pd

from ncuroof.model.distinct import distinct_codes, first_rows, text_codes


def _factorized_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The second path: the rows as tuples, numbered by pandas.factorize."""
    rows = pd.Series(list(zip(*cols, strict=True)), dtype=object)
    code = pd.factorize(rows)[0] if len(rows) else np.zeros(0, dtype=np.int64)
    return first_rows(code, int(code.max(initial=-1)) + 1), code


def test_distinct_codes_number_rows_in_order_of_first_appearance():
    rng = np.random.default_rng(29)
    for i in range(500):
        n = int(rng.integers(0, 40))
        cols = [rng.integers(0, rng.integers(1, 6), n) for _ in range(int(rng.integers(1, 4)))]
        if i % 3 == 0:
            cols.append(rng.random(n) < 0.5)
        if i % 7 == 0:  # large codes: hashed, not numbered densely
            cols.append(rng.integers(0, 2**40, n))
        first, code = distinct_codes(cols)
        want_first, want_code = _factorized_rows(cols)
        assert code.tolist() == want_code.tolist()
        assert first.tolist() == want_first.tolist()


def test_distinct_codes_by_hand():
    first, code = distinct_codes([np.array([3, 1, 3, 1, 0]), np.array([0, 0, 0, 1, 0])])
    assert code.tolist() == [0, 1, 0, 2, 3]
    assert first.tolist() == [0, 1, 3, 4]


def test_text_codes_is_factorize():
    rng = np.random.default_rng(7)
    words = np.array(["dram", "l2", "", "l1", "report"], dtype=object)
    for i in range(300):
        n = int(rng.integers(1, 30))
        values = words[rng.integers(0, rng.integers(1, 6), n)]
        for dtype in ("str", "string", "category", object):
            col = pd.Series(values, dtype=dtype)
            if i % 4 == 0:
                col.iloc[int(rng.integers(0, n))] = None
            codes, uniques = text_codes(col)
            want_codes, want_uniques = pd.factorize(col, use_na_sentinel=True)
            assert codes.tolist() == want_codes.tolist()
            assert list(uniques) == list(want_uniques)


def test_text_codes_of_one_value():
    codes, uniques = text_codes(pd.Series(["report"] * 4, dtype="str"))
    assert codes.tolist() == [0, 0, 0, 0]
    assert list(uniques) == ["report"]
