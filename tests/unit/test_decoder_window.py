"""The decoder's window of launches (ncuroof.parser.ncu_rep.decode): tables of several layouts made
one, in launch order, against one table of the same rows made in order."""

from __future__ import annotations

import pandas as pd

from ncuroof.parser.ncu_rep import decode


def test_a_window_of_tables_is_one_table_in_launch_order() -> None:
    """Runs of two layouts taken in turn, one with opcode columns a later launch adds to: rows in
    launch order, columns where a launch first has them, as one table of the rows made in order."""
    from ncuroof.parser.ncu_rep.rows import META_COLUMNS, launch_frame

    def row(i: int, **values: float) -> dict:
        return {**dict.fromkeys(META_COLUMNS), "launch_id": i, **values}

    rows = [
        row(0, x=1.0, **{"op[a]": 2.0}),
        row(1, y=3.0),
        row(2, x=4.0, **{"op[a]": 5.0}),
        row(3, y=6.0),
        row(4, x=7.0, **{"op[a]": 8.0, "op[b]": 9.0}),
    ]
    frames = [launch_frame([rows[i] for i in (0, 2, 4)]), launch_frame([rows[1], rows[3]])]
    first = [(0, [*META_COLUMNS, "x", "op[a]"]), (4, ["op[a]", "op[b]"]), (1, [*META_COLUMNS, "y"])]
    got = decode._window_frame(frames, first)
    want = launch_frame(rows)
    assert list(got.columns) == [*META_COLUMNS, "x", "op[a]", "y", "op[b]"]
    pd.testing.assert_frame_equal(got, want)


def test_coded_names_join_to_the_tables_before_coding() -> None:
    """Windows whose name columns are held as category (each with categories of its own, one
    missing demangled name) join to what the tables before coding join to: kernel_name as text,
    kernel_demangled (schema.RAW_COMPACT) still category, of the same values."""
    from ncuroof.parser.ncu_rep.rows import META_COLUMNS, held_text, launch_frame

    long = "void k<" + "int, " * 1000 + "float>(int)"

    def row(i: int, name: str, demangled: str | None) -> dict:
        return {
            **dict.fromkeys(META_COLUMNS),
            "launch_id": i,
            "kernel_name": name,
            "kernel_demangled": demangled,
            "x": float(i),
        }

    windows = [
        launch_frame([row(0, "a", long), row(1, "b", "b()")]),
        launch_frame([row(2, "b", "b()"), row(3, "c", None)]),
        launch_frame([row(4, "a", long)]),
    ]
    coded = [held_text(w, decode.NAMES) for w in windows]
    assert all(isinstance(c["kernel_demangled"].dtype, pd.CategoricalDtype) for c in coded)
    assert coded[1]["kernel_name"].cat.categories.tolist() == ["b", "c"]
    got = decode._joined(coded)
    want = pd.concat(windows, ignore_index=True)
    assert isinstance(got["kernel_demangled"].dtype, pd.CategoricalDtype)
    assert sorted(got["kernel_demangled"].cat.categories) == sorted([long, "b()"])
    assert got["kernel_demangled"].tolist()[:3] == [long, "b()", "b()"]
    assert got["kernel_demangled"].isna().tolist() == [False, False, False, True, False]
    as_text = {"kernel_demangled": want["kernel_demangled"].dtype}
    pd.testing.assert_frame_equal(got.astype(as_text), want, check_exact=True)
    one = decode._joined(coded[:1])
    pd.testing.assert_frame_equal(one.astype(as_text), windows[0], check_exact=True)
