"""Multi-rank runs: the spread over ranks and the load-imbalance flag checked by hand arithmetic on
synthetic ranks made from a real report; rank recognition from file names and from the process
ID stored in the report (binary-edited copies); the page's spread-over-ranks section against the
ranks reduced again with pandas from the launches.csv written beside it."""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ncuroof
from ncuroof import catalog, fmt
from ncuroof.model.summary import kernel_summary
from ncuroof.runs import fleet, ranks
from ncuroof.views import ranks as views
from tests.helpers.cli import run
from tests.helpers.reports import kernels_of, needs_ncu_report, shared

pytestmark = needs_ncu_report

ESMM = "ESMM-Research__profile_output.ncu-rep"
#: Time factor of each rank, per kernel: warptiling's slowest rank is 1.25 / 1.05 - 1 = 19 % over
#: the median (flagged), the others' at most 1.08 / 1.05 - 1 = 2.9 % (not flagged).
FACTORS = {"warptiling": (1.0, 1.25, 1.05), "default": (1.08, 1.0, 1.05)}


def _rank(k: pd.DataFrame, r: int) -> pd.DataFrame:
    """Rank r: every launch's time scaled by its kernel's factor, achieved rates divided by it."""
    f = np.array([FACTORS.get(n, FACTORS["default"])[r] for n in k["kernel_name"]])
    out = k.copy()
    out["time_s"] = k["time_s"] * f
    for c in k.columns:
        if c.endswith("_per_s") and not c.startswith("peak_"):
            out[c] = k[c] / f
    return out.assign(source=f"rank{r}").astype({"source": "string"})


def test_spread_and_flag_by_hand() -> None:
    base = kernels_of(ESMM)
    k = pd.concat([_rank(base, r) for r in range(3)], ignore_index=True)
    threshold = catalog.load().thresholds["ranks"]["imbalance"]
    assert threshold == 0.10
    table = ranks.spread(
        k, ncuroof.points(k), {f"rank{r}": str(r) for r in range(3)}, threshold
    ).set_index("kernel_name")
    s0 = kernel_summary(base, ncuroof.points(base)).set_index("kernel_name")
    assert sorted(table.index) == sorted(s0.index) and (table["ranks"] == 3).all()
    for name, row in table.iterrows():
        f = sorted(FACTORS.get(name, FACTORS["default"]))
        t, ai, rf = s0.loc[name, ["time_s", "ai_flop_per_byte", "roof_fraction"]]
        np.testing.assert_allclose(
            row[["time_s_min", "time_s_median", "time_s_max"]].to_numpy(float),
            [t * x for x in f],
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            row[
                ["ai_flop_per_byte_min", "ai_flop_per_byte_median", "ai_flop_per_byte_max"]
            ].to_numpy(float),
            [ai] * 3,
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            row[["roof_fraction_min", "roof_fraction_median", "roof_fraction_max"]].to_numpy(float),
            [rf / f[2], rf / f[1], rf / f[0]],
            rtol=1e-12,
        )
        factors = FACTORS.get(name, FACTORS["default"])
        assert row["slowest_rank"] == str(int(np.argmax(factors))) and row["fastest_rank"] == str(
            int(np.argmin(factors))
        )
        np.testing.assert_allclose(row["imbalance"], f[2] / f[1] - 1, rtol=1e-12)
    assert table["load_imbalance"].to_dict() == {n: n == "warptiling" for n in table.index}


def _copy_with_pid(src: Path, dst: Path, pid: int) -> None:
    """A copy of a report whose process messages name another process ID (a varint of
    the same length)."""

    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)

    proc = ranks.process_of(src)
    assert proc is not None
    old = (
        b"\x08" + varint(proc["pid"]) + b"\x12" + bytes([len(proc["host"])]) + proc["host"].encode()
    )
    new = b"\x08" + varint(pid) + old[1 + len(varint(proc["pid"])) :]
    data = src.read_bytes()
    assert (
        len(new) == len(old) and data[:4096].count(old) >= 1
    )  # the block header and the session's process
    dst.write_bytes(data.replace(old, new))


def test_ranks_recognised_from_names_and_processes(tmp_path: Path) -> None:
    src = shared(ESMM)
    pid = ranks.process_of(src)["pid"]
    assert ranks.process_of(src) == {
        "pid": 9166,
        "host": "127.0.0.1",
        "executable": "/home/ec2-user/cuda_work/tests/a.out",
    }
    for r in range(3):
        _copy_with_pid(src, tmp_path / f"app.{r}.ncu-rep", pid + 1 + r)
        shutil.copyfile(src, tmp_path / f"same.{r}.ncu-rep")
    assert ranks.process_of(tmp_path / "app.2.ncu-rep")["pid"] == pid + 3
    distinct = [tmp_path / f"app.{r}.ncu-rep" for r in range(3)]
    assert ranks.looks_like_ranks(distinct)
    assert not ranks.looks_like_ranks(
        [tmp_path / f"same.{r}.ncu-rep" for r in range(3)]
    )  # one process: not ranks
    assert not ranks.looks_like_ranks(
        [
            shared("gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep"),
            shared("gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep"),
        ]
    )  # parts of one run
    assert ranks.rank_labels(distinct) == ["0", "1", "2"]
    shutil.copyfile(tmp_path / "app.0.ncu-rep", tmp_path / "alpha.ncu-rep")
    shutil.copyfile(tmp_path / "app.1.ncu-rep", tmp_path / "beta.ncu-rep")
    assert ranks.rank_labels([tmp_path / "alpha.ncu-rep", tmp_path / "beta.ncu-rep"]) == [
        f"127.0.0.1:{pid + 1}",
        f"127.0.0.1:{pid + 2}",
    ]


@pytest.mark.parametrize("flag", [["--ranks"], []])
def test_analyze_ranks_writes_the_spread(tmp_path: Path, flag: list[str]) -> None:
    src = shared(ESMM)
    for r in range(3):
        (
            _copy_with_pid(src, tmp_path / f"app.{r}.ncu-rep", 200 + r)
            if not flag
            else shutil.copyfile(src, tmp_path / f"app.{r}.ncu-rep")
        )
    apps = (f"app.{r}.ncu-rep" for r in range(3))
    proc = run("analyze", *apps, *flag, "-o", "out", "-q", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    table = pd.read_csv(tmp_path / "out" / "ranks.csv").set_index("kernel_name")
    s0 = kernel_summary(kernels_of(ESMM), ncuroof.points(kernels_of(ESMM))).set_index("kernel_name")
    assert (table["ranks"] == 3).all() and not table["load_imbalance"].any()
    for stat in ("min", "median", "max"):
        np.testing.assert_array_equal(
            table[f"time_s_{stat}"].to_numpy(float), s0.loc[table.index, "time_s"].to_numpy(float)
        )
    assert len(ncuroof.load(tmp_path / "out")) == 3 * len(kernels_of(ESMM))
    assert "MPI ranks" in (tmp_path / "out" / "roofline.html").read_text()


def imbalanced_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``analyze --ranks`` of three copies of a real report named ``app.R.ncu-rep``, each rank's
    table being :func:`_rank` R of the report's (fleet.run, which would read the three identical
    copies, replaced); the output directory."""
    base = kernels_of(ESMM)
    inputs = [tmp_path / f"app.{r}.ncu-rep" for r in range(3)]
    for p in inputs:
        shutil.copyfile(shared(ESMM), p)

    def run(paths, options=None, **_):
        assert [str(p) for p in paths] == [str(p) for p in inputs]
        k = pd.concat(
            [_rank(base, r).assign(source=str(p)) for r, p in enumerate(paths)], ignore_index=True
        )
        return fleet.FleetResult(
            k.astype({"source": "string"}),
            pd.DataFrame({"source": pd.Series(dtype="string"), "error": pd.Series(dtype="string")}),
        )

    monkeypatch.setattr(fleet, "run", run)
    ncuroof.analyze(inputs, tmp_path / "out", ranks=True)
    return tmp_path / "out"


class _Section(HTMLParser):
    """The body rows of the table in ``<section id="ranks">``: per row its class and each cell's
    (text, data-v, title)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.body, self.cell = False, False, None
        self.rows: list[dict] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.inside |= tag == "section" and a.get("id") == "ranks"
        self.body |= self.inside and tag == "tbody"
        if self.body and tag == "tr":
            self.rows.append({"cls": a.get("class") or "", "cells": []})
        elif self.body and tag == "td":
            self.cell = ["", a.get("data-v"), a.get("title")]
            self.rows[-1]["cells"].append(self.cell)

    def handle_endtag(self, tag):
        if tag == "section":
            self.inside = self.body = False
        if tag == "td":
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[0] += data
        elif self.inside:
            self.text += data


def section_of(page: str) -> _Section:
    """The page's spread-over-ranks section, parsed."""
    parser = _Section()
    parser.feed(page)
    return parser


def test_page_shows_the_spread_over_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = imbalanced_run(tmp_path, monkeypatch)
    section = section_of((out / "roofline.html").read_text(encoding="utf-8"))
    # Second path: per rank (source) each kernel's summed launch time, reduced
    # over ranks with pandas.
    k = pd.read_csv(out / "launches.csv")
    per_rank = k.groupby(["kernel_key", "source"])["time_s"].sum().reset_index()
    t = (
        per_rank.groupby("kernel_key")["time_s"]
        .agg(["min", "median", "max", "count"])
        .sort_values("median", ascending=False)
    )
    slowest = per_rank.loc[per_rank.groupby("kernel_key")["time_s"].idxmax()].set_index(
        "kernel_key"
    )["source"]
    # AI and roof fraction: each rank's kernel summary of its rows read back, min
    # and max with pandas.
    back = ncuroof.load(out)
    dots = pd.concat(
        [kernel_summary(g, ncuroof.points(g)).assign(source=s) for s, g in back.groupby("source")]
    )
    ai = dots.groupby("kernel_key")["ai_flop_per_byte"].agg(["min", "max"])
    rf = dots.groupby("kernel_key")["roof_fraction"].agg(["min", "max"])
    rows = {r["cells"][0][2]: r for r in section.rows}
    assert (
        list(rows) == list(t.index) and 1 < len(t) < views.RANKS_ON_PAGE
    )  # longest median first, every kernel
    for key, row in rows.items():
        _, n, tmin, tmed, tmax, slow, imb, ai_text, rf_text, flag = row["cells"]
        assert n[0] == "3" and t.loc[key, "count"] == 3
        for cell, stat in zip((tmin, tmed, tmax), ("min", "median", "max")):
            assert cell[0] == fmt.time(t.loc[key, stat]) and float(cell[1]) == pytest.approx(
                t.loc[key, stat], rel=1e-12
            )
        assert slow[0] == re.fullmatch(r".*app\.(\d)\.ncu-rep", slowest[key]).group(1)
        over = t.loc[key, "max"] / t.loc[key, "median"] - 1
        assert (
            float(imb[1]) == pytest.approx(over, rel=1e-9, abs=1e-12)
            and imb[0] == f"{100 * over:.1f}%"
        )
        assert ai.loc[key, "min"] == pytest.approx(
            ai.loc[key, "max"], rel=1e-12
        )  # the synthetic ranks keep the AI
        assert ai_text == [fmt.g(ai.loc[key, "min"]), None, None]
        assert rf_text[0] == f"{100 * rf.loc[key, 'min']:.0f}%–{100 * rf.loc[key, 'max']:.0f}%"
        assert (flag[0], row["cls"]) == (("imbalanced", "imbalanced") if over > 0.10 else ("", ""))
    marked = [r["cells"][0][0] for r in section.rows if r["cls"] == "imbalanced"]
    assert marked == ["warptiling"]
    warp = rows[next(key for key in rows if rows[key]["cells"][0][0] == "warptiling")]["cells"]
    assert warp[5][0] == "1" and warp[6][0] == f"{100 * (1.25 / 1.05 - 1):.1f}%"  # FACTORS by hand
    text = " ".join(section.text.split())
    assert "Spread over 3 MPI ranks" in text and f"1 of {len(t)} kernels is load-imbalanced" in text
    assert (
        "by more than 10%" in text
        and f"All {len(t)} kernels, longest median time per rank first." in text
    )


def test_rank_section_says_how_many_are_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = imbalanced_run(tmp_path, monkeypatch)
    table = pd.read_csv(out / "ranks.csv", dtype={"slowest_rank": str, "fastest_rank": str})
    summ = kernel_summary(kernels_of(ESMM), ncuroof.points(kernels_of(ESMM)))
    section = section_of(views.rank_section(table, summ, 0.10, top=2))
    per_rank = pd.read_csv(out / "launches.csv").groupby(["kernel_key", "source"])["time_s"].sum()
    t = per_rank.groupby("kernel_key").agg(["median", "max"]).sort_values("median", ascending=False)
    left_flagged = int((t["max"] / t["median"] - 1 > 0.10).iloc[2:].sum())
    assert (
        [r["cells"][0][2] for r in section.rows] == list(t.index[:2])
        and len(t) == 4
        and left_flagged == 1
    )
    assert (
        "The 2 longest of 4 kernels by median time per rank; 2 more (1 of them load-imbalanced) are"
        " left out here, all in ranks.csv." in " ".join(section.text.split())
    )


def test_single_input_page_has_no_rank_section(tmp_path: Path) -> None:
    ncuroof.analyze(shared(ESMM), tmp_path / "one")
    page = (tmp_path / "one" / "roofline.html").read_text(encoding="utf-8")
    assert 'id="ranks"' not in page and "MPI ranks" not in page and section_of(page).rows == []
