"""Parts of the roofline page that read every launch or build many cells (issue 29: the page of a
100,000-launch report is a small fixed cost): the roofs' medians and sources, the header's facts
from a column's distinct values, and the HTML tables, each checked against hand arithmetic or read
back with Python's own HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from markupsafe import escape

from ncuroof.render import figure as plot
from ncuroof.render import page as report
from ncuroof.render import provenance

NAN = float("nan")


def _points(dtype: object) -> pd.DataFrame:
    """Eight points: fp32 peaks 1, 2, 3, 10 (one more without a peak), fp64 peaks 4 and 5 (a
    NaN-precision point with a peak ignored); sources with a tie for fp64."""
    prec = ["fp32", "fp32", "fp64", "fp32", "fp32", "fp64", "fp32", None]
    peak = [10.0, 1.0, 5.0, 3.0, 2.0, 4.0, NAN, 99.0]
    src = ["report", "datasheet", "user", "report", "report", "datasheet", "user", "report"]
    level = ["dram", "l2", "dram", "dram", "l2", "l1", "l1", "dram"]
    bw = [7.0, 1.0, 9.0, np.inf, 3.0, 6.0, 2.0, 8.0]
    return pd.DataFrame(
        {
            "precision": pd.Series(prec, dtype=dtype),
            "level": pd.Series(level, dtype=dtype),
            "peak_flop_per_s": peak,
            "peak_flop_source": pd.Series(src, dtype=dtype),
            "peak_bytes_per_s": bw,
            "peak_bytes_source": pd.Series(["report"] * 7 + [None], dtype=dtype),
        }
    )


@pytest.mark.parametrize("dtype", [object, "string", "str"])
def test_roofs_are_medians_per_precision_and_level_with_the_most_common_source(dtype) -> None:
    compute, memory, source = plot.roofs(_points(dtype))
    # fp32: median of 1, 2, 3, 10 = (2 + 3) / 2; fp64: (4 + 5) / 2; the NaN precision dropped
    assert compute == {"fp32": 2.5, "fp64": 4.5} and list(compute) == ["fp32", "fp64"]
    # dram: 7, 9, 8 (inf left out) -> 8; l1: 6, 2 -> 4; l2: 1, 3 -> 2; in sorted order
    assert memory == {"dram": 8.0, "l1": 4.0, "l2": 2.0} and list(memory) == ["dram", "l1", "l2"]
    # fp32 sources of the points with a peak: report x3, datasheet x1; fp64 ties: the first sorted
    assert source == {"fp32": "report", "fp64": "datasheet", "dram": "report", "l1": "report"} | {
        "l2": "report"
    }


def test_roofs_of_a_categorical_column_follow_its_categories() -> None:
    pts = _points(object).dropna(subset=["precision"])
    pts["level"] = pts["level"].astype(pd.CategoricalDtype(["l1", "l2", "dram"]))
    _, memory, _ = plot.roofs(pts)
    assert list(memory) == ["l1", "l2", "dram"] and memory["dram"] == 8.0  # 7 and 9


def test_roofs_without_values_or_sources() -> None:
    pts = _points("string").assign(peak_flop_per_s=NAN).drop(columns="peak_bytes_source")
    compute, memory, source = plot.roofs(pts)
    assert compute == {} and memory["l1"] == 4.0 and source == {}


def _kernels(n: int) -> pd.DataFrame:
    """``n`` launches (n >= 10) whose text columns repeat a few values."""
    reader = np.where(np.arange(n) < 3, "ncu_report (an old report)", "ncuroof decoder")
    return pd.DataFrame(
        {
            "reader": pd.Series(np.roll(reader, 5), dtype="string"),
            "peak_source": pd.Series(
                np.where(np.arange(n) % 4 == 0, "report+datasheet", "report"), dtype="string"
            ),
            "datasheet_gpu": pd.Series(np.where(np.arange(n) % 3 == 0, "H100", ""), dtype="string"),
            "ncu_version": pd.Series(["2024.1"] * (n - 1) + ["2023.2"], dtype="string"),
            "clock_control": pd.Series(["base"] * n, dtype="string"),
        }
    )


def test_header_facts_are_the_distinct_values_in_order_of_appearance() -> None:
    k = _kernels(1000)
    k.loc[7, "reader"] = None
    assert provenance.readers(k) == "ncuroof decoder; ncu_report (an old report)"
    text = provenance.roof_sources(k)
    assert text.startswith("report: ncu peak_sustained") and "datasheet (H100): boost" in text
    k["datasheet_gpu"] = pd.Series(["B200", "A100", ""] * 333 + ["B200"], dtype="string")
    assert "datasheet (A100, B200):" in provenance.roof_sources(k)
    assert provenance.readers(k.iloc[:0]).startswith("not recorded")


class _Cells(HTMLParser):
    """The ``<th>`` texts and, per row, each ``<td>``'s attributes and text (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.head: list[str] = []
        self.rows: list[list[tuple[dict[str, str | None], str]]] = []
        self.row_classes: list[str | None] = []
        self._cell: tuple[str, dict[str, str | None]] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr" and self.head:
            self.rows.append([])
            self.row_classes.append(dict(attrs).get("class"))
        elif tag in ("th", "td"):
            self._cell, self._text = (tag, dict(attrs)), ""
        elif tag == "span" and self._cell is not None:
            self._cell[1]["swatch"] = dict(attrs)["style"]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("th", "td") and self._cell is not None:
            if tag == "th":
                self.head.append(self._text)
            else:
                self.rows[-1].append((self._cell[1], self._text))
            self._cell = None

    def handle_data(self, data: str) -> None:
        self._text += data


def test_html_table_cells_read_back_as_the_values_and_their_texts() -> None:
    names = ["<script>x</script>", "a&b", 'say "hi"', "it's", "plain"]
    df = pd.DataFrame(
        {
            "kernel_name": names,
            "kernel_demangled": ["d<1>", "d&2", "", "d'4", "d5"],
            "time_s": [1.5e-3, NAN, 2.0, np.inf, 1e-9],
            "share": [0.25, 0.5, NAN, 0.125, 1.0],
            "bound": pd.Series(["memory", None, "compute", "memory", "x>y"], dtype="string"),
        }
    )
    html = report.html_table(
        df,
        [("kernel_name", "kernel <k>"), ("time_s", "time"), ("share", "share"), ("bound", "b")],
        title_col="kernel_demangled",
        kinds={"time_s": "time", "share": "pct", "kernel_name": "name"},
        swatches=["#123456", None, "#abcdef"],
        row_classes=["", "imbalanced", "", "", ""],
    )
    p = _Cells()
    p.feed(html)
    assert p.head == ["kernel <k>", "time", "share", "b"] and len(p.rows) == 5
    assert "<script>x" not in html and p.row_classes == [None, "imbalanced", None, None, None]
    for i, row in enumerate(p.rows):
        (name_attrs, name), (t_attrs, t), (s_attrs, s), (b_attrs, b) = row
        assert name.strip() == names[i] and name_attrs["class"] == "l name"
        title = df["kernel_demangled"][i]
        assert name_attrs.get("title") == (title if title else None)  # '': no tooltip
        assert ("swatch" in name_attrs) == (i in (0, 2))
        for attrs, text, value, want in (
            (t_attrs, t, df["time_s"][i], {1e-9: "1 ns"}),
            (s_attrs, s, df["share"][i], {}),
        ):
            if np.isfinite(value):
                assert float(attrs["data-v"]) == value and text != ""
            else:
                assert attrs["data-v"] == "" and text == ""
            assert text == want.get(value, text)
        assert b == ("" if i == 1 else df["bound"][i]) and b_attrs["class"] == "l"
    assert p.rows[0][1][1] == "1.5 ms" and p.rows[0][2][1] == "25.0%" and p.rows[2][1][1] == "2 s"


@pytest.mark.parametrize("text", ["", "plain", "<a href='x'>&amp;</a>", 'q"q', "é ü", "&#39;"])
def test_table_escape_is_markupsafes(text: str) -> None:
    assert report._escape(text) == str(escape(text))
    assert report._escape_all([text, "x"]) == [str(escape(text)), "x"]


def test_page_tables_of_many_launches_are_capped_as_the_page_says(tmp_path: Path) -> None:
    n = report.MAX_LAUNCH_ROWS + 7
    k = pd.DataFrame(
        {
            "launch_id": np.arange(n),
            "kernel_name": ["k"] * n,
            "kernel_demangled": ["k()"] * n,
            "time_s": np.arange(n, dtype=float),
            "flags": [""] * n,
        }
    ).assign(
        **{
            c: NAN
            for c, _ in report._LAUNCH_COLUMNS
            if c not in ("launch_id", "kernel_name", "time_s", "flags")
        }
    )
    html, title = report._launch_table(k)
    p = _Cells()
    p.feed(html)
    assert (
        title
        == f"The {report.MAX_LAUNCH_ROWS} longest of {n} launches (all of them are in launches.csv)"
    )
    ids = [int(float(r[0][0]["data-v"])) for r in p.rows]
    assert ids == list(range(n - 1, n - 1 - report.MAX_LAUNCH_ROWS, -1))  # the longest first


def test_trails_join_each_kernels_dots_in_level_order() -> None:
    """Kernel A's dots listed dram, l1, l2 are joined l1 -> l2 -> dram; a kernel with one dot at
    the levels shown, a precision with one dot and a dot without a kernel key have no trail."""
    rows = [
        ("A", "fp32", "dram", 1.0, 10.0),
        ("B", "fp32", "l1", 5.0, 50.0),
        ("A", "fp32", "l1", 2.0, 20.0),
        ("A", "fp32", "l2", 3.0, 30.0),
        ("B", "fp32", "l2", 6.0, 60.0),
        ("C", "fp32", "l1", 7.0, 70.0),
        ("A", "fp64", "l1", 8.0, 80.0),
        (None, "fp32", "l2", 9.0, 90.0),
        (None, "fp32", "l1", 9.5, 95.0),
    ]
    dots = pd.DataFrame(
        rows, columns=["kernel_key", "precision", "level", "ai_flop_per_byte", "flop_per_s"]
    )
    x, y = plot._trail(dots, ("l1", "l2", "dram"), ["kernel_key"])
    np.testing.assert_array_equal(x, [2.0, 3.0, 1.0, NAN, 5.0, 6.0])
    np.testing.assert_array_equal(y, [20.0, 30.0, 10.0, NAN, 50.0, 60.0])
    x, _ = plot._trail(dots, ("l1", "l2"), ["kernel_key"])  # B's dot comes first at these levels
    np.testing.assert_array_equal(x, [5.0, 6.0, NAN, 2.0, 3.0])
    x, _ = plot._trail(dots, ("l2", "dram"), ["kernel_key"])
    np.testing.assert_array_equal(x, [3.0, 1.0])  # B has one dot at these levels
    x, y = plot._trail(dots.iloc[5:7], ("l1", "l2", "dram"), ["kernel_key"])
    assert len(x) == len(y) == 0


def test_hover_names_wrap_at_spaces_and_keep_their_markup_out() -> None:
    """Issue 54 item 2: the hover showed ``const<br> float *`` as literal text and broke names
    mid-word (``floa<br>t *``). Lines break at spaces, at most 90 characters, each escaped; the
    ``<br>`` between them is the only markup, and the words are the name's."""
    import html

    import pandas as pd

    from ncuroof.render import figure

    demangled = (
        "void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::half_t, float,"
        " cutlass::layout::RowMajor, 128, 256, 64>>(const float *, float *, <script>x</script>)"
    )
    dots = pd.DataFrame({"label": ["Kernel"], "demangled": [demangled], "launches": [2]})
    head = figure._kernel_names(dots)[0]
    name_lines = head.split("<br>")[1:-1]
    assert len(name_lines) > 1 and "&lt;br&gt;" not in head and "<script>" not in head
    assert all(len(html.unescape(line)) <= 90 for line in name_lines)
    assert " ".join(html.unescape(line) for line in name_lines) == demangled
    assert head.endswith("<br>2 launches")


@pytest.mark.parametrize(
    "name,unit",
    [
        ("cutlass-panjd123__4f3955ed3c_report.ncu-rep", "OP"),
        ("ESMM-Research__profile_output.ncu-rep", "FLOP"),
    ],
)
def test_the_axes_say_the_unit_of_the_work_shown(name, unit) -> None:
    """Issue 54 item 2: an INT8 tensor report's y axis said FLOP/s. IMMA work is operations."""
    import ncuroof
    from tests.helpers.reports import fixture_path

    launches = ncuroof.load(fixture_path(name))
    fig = ncuroof.plot_roofline(ncuroof.points(launches), launches)
    assert fig.layout.yaxis.title.text == f"Performance [{unit}/s]"
    assert fig.layout.xaxis.title.text == f"Arithmetic intensity [{unit}/byte]"


def test_the_first_kernels_are_not_drawn_in_the_roofs_colours() -> None:
    """Issue 54 item 2: blue/green/red were both L1/L2/DRAM and the first three kernels. The
    first ten kernel colours are each far (RGB distance > 100) from every level's colour."""
    from ncuroof.render.figure import KERNEL_COLORS, LEVEL_COLORS

    def rgb(c: str) -> tuple[int, ...]:
        return tuple(int(c[i : i + 2], 16) for i in (1, 3, 5))

    for k in KERNEL_COLORS[:10]:
        for level in LEVEL_COLORS.values():
            d = sum((a - b) ** 2 for a, b in zip(rgb(k), rgb(level))) ** 0.5
            assert d > 100, (k, level)


def test_l1_dots_sit_on_top_of_the_l2_squares_at_half_the_area() -> None:
    """A kernel's L1 circle and L2 square often share an AI (issue 54: 31.8 against 32.0 on
    ESMM): the L1 dots are drawn after the L2 and DRAM ones, at half their area, so both show."""
    import numpy as np

    import ncuroof
    from tests.helpers.reports import shared

    kernels = ncuroof.load(shared("ESMM-Research__profile_output.ncu-rep"))
    fig = ncuroof.plot_roofline(ncuroof.points(kernels), kernels)
    dots = [t for t in fig.data if (t.meta or {}).get("role") == "dots"]
    by = {}
    for i, t in enumerate(dots):
        w = {k: v for k, v in t.meta["when"].items() if k != "levels"}
        by.setdefault(repr(sorted(w.items())), {})[t.meta["level"]] = (i, t)
    checked = 0
    for levels in by.values():
        if "l1" in levels and "l2" in levels:
            (i1, t1), (i2, t2) = levels["l1"], levels["l2"]
            assert i1 > i2
            s1, s2 = np.asarray(t1.marker.size, float), np.asarray(t2.marker.size, float)
            if len(s1) == len(s2):
                assert s1 == pytest.approx(s2 / 2, rel=1e-6)
            checked += 1
    assert checked


def test_compare_dots_after_carry_their_kernel_names() -> None:
    """compare.html (issue 54): each after dot (matched or new) is named by a label joined to it
    by a line (an annotation at the dot, its text offset in pixels); the before dots are not
    (their arrows end at the labelled dots)."""
    import ncuroof
    from ncuroof.render import compare as compare_page
    from tests.helpers.reports import shared

    r = ncuroof.compare_runs(
        shared("ESMM-Research__profile_output.ncu-rep"), shared("ESMM-Research__metrics.csv")
    )
    fig = compare_page.plot_compare(r.table)
    traces, _, _ = compare_page._dot_traces(r.table)
    assert all(t.mode == "markers" and t.text is None for t in traces)
    after = [
        (x, y)
        for t in traces
        if t.meta["side"] == "after"
        for x, y in zip(np.log10(t.x), np.log10(t.y))
    ]
    labels = [a for a in fig.layout.annotations if a.showarrow and a.axref != "x"]
    assert len(labels) == len(after) > 0 and all(isinstance(a.text, str) and a.text for a in labels)
    got = np.array(sorted((a.x, a.y) for a in labels))
    assert got == pytest.approx(np.array(sorted(after)), rel=1e-12)
    assert {"warptiling", "two_blocktiling"} <= {a.text for a in labels}


def test_each_chart_sets_its_own_axis_kind(tmp_path) -> None:
    """The PM sampling timeline is drawn on linear axes (time, fractions with zeros); every other
    chart of the control sets the roofline's log axes back, whichever was shown before it."""
    import ncuroof
    from tests.helpers.figures import figure_of
    from tests.helpers.reports import shared

    out = tmp_path / "o"
    ncuroof.analyze(shared("cutlass-panjd123__4f3955ed3c_report.ncu-rep"), out, group_by="nvtx")
    _, layout = figure_of(out / "roofline.html")
    charts = layout["meta"]["view"]["layouts"]["chart"]
    assert charts["samples"]["xaxis.type"] == charts["samples"]["yaxis.type"] == "linear"
    for chart in ("roofline", "phases", "instructions", "sample_phases"):
        assert charts[chart]["xaxis.type"] == charts[chart]["yaxis.type"] == "log", chart
