"""Codes of distinct values and rows (ncuroof.model.distinct) against pandas.factorize."""

import numpy as np
import pandas as pd

from ncuroof.model.classify import launch_positions
from ncuroof.model.distinct import (
    bit_codes,
    distinct_codes,
    distinct_rows,
    first_rows,
    text_codes,
)


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


def test_distinct_rows_tell_float_bits_apart():
    rng = np.random.default_rng(3)
    values = np.array([0.0, -0.0, np.nan, 1.5, 2.0])
    for _ in range(200):
        n = int(rng.integers(1, 30))
        frame = pd.DataFrame(
            {
                "a": values[rng.integers(0, 5, n)],
                "b": values[rng.integers(0, 3, n)],
                "c": rng.random(n) < 0.5,
                "d": rng.integers(-2, 2, n),
                "e": pd.array(np.array(["x", "y"])[rng.integers(0, 2, n)], dtype="str"),
            }
        )
        first, inverse = distinct_rows(frame, list(frame.columns))
        bits = [frame[c].to_numpy().view(np.uint64) for c in ("a", "b")]
        rest = [frame[c].to_numpy() for c in ("c", "d", "e")]
        want_first, want_inverse = _factorized_rows([*bits, *rest])
        assert inverse.tolist() == want_inverse.tolist()
        assert first.tolist() == want_first.tolist()


def test_bit_codes_tell_apart_rows_whose_hashes_collide():
    def step(h: np.ndarray) -> np.ndarray:  # bit_codes' mixing of one column into the hash
        h = h * np.uint64(0x9E3779B97F4A7C15)
        return h ^ (h >> np.uint64(29))

    a = np.array([1, 2, 1], dtype=np.uint64)
    m = step(a)
    b = np.array([5, 5 ^ int(m[0]) ^ int(m[1]), 5], dtype=np.uint64)  # rows 0 and 1 collide
    assert step(m[:2] ^ b[:2])[0] == step(m[:2] ^ b[:2])[1]
    codes = bit_codes([a, b])
    assert distinct_codes(codes)[1].tolist() == [0, 1, 0]


def test_launch_positions_agree_with_a_merge():
    rng = np.random.default_rng(11)
    names = np.array(["a.ncu-rep", "b.ncu-rep", None, "c.csv"], dtype=object)
    for _ in range(300):
        n, m = (int(x) for x in rng.integers(0, 12, 2))
        table, rows = (
            pd.DataFrame(
                {
                    "source": pd.array(names[rng.integers(0, 4, size)], dtype="str"),
                    "launch_id": rng.integers(0, 4, size),
                }
            )
            for size in (n, m)
        )
        at = launch_positions(table, rows)
        if table.duplicated().any():
            assert at is None
            continue
        merged = rows.merge(table.reset_index(), on=["source", "launch_id"], how="left")
        assert at.tolist() == merged["index"].fillna(-1).astype(int).tolist()
