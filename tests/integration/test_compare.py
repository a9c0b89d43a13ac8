"""ncuroof compare: matching, speedups and movement checked against independent arithmetic on
real inputs, fallbacks, warnings, CI gating."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.cli import assert_clean_failure, run
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import needs_ncu_report, shared


@pytest.mark.parametrize(
    "ai,frac,expect",
    [
        ((1, 1), (0.5, 0.5), "none"),
        ((1, 2), (0.5, 0.5), "more reuse"),
        ((1, 1), (0.5, 0.6), "better utilization"),
        ((1, 2), (0.5, 0.6), "both"),
        ((2, 1), (0.6, 0.5), "worse"),
        ((1, 1.04), (0.5, 0.51), "none"),
        ((1, 2), (0.6, 0.5), "more reuse, lower utilization"),
        ((1, np.nan), (np.nan, 0.5), "unknown"),
    ],
)
def test_movement_by_hand(ai, frac, expect) -> None:
    from ncuroof.runs.compare import movement

    assert movement(ai[0], ai[1], frac[0], frac[1]) == expect


@needs_ncu_report
def test_report_against_itself_is_all_ones() -> None:
    import ncuroof

    r = ncuroof.compare_runs(
        shared("ESMM-Research__profile_output.ncu-rep"),
        shared("ESMM-Research__profile_output.ncu-rep"),
        write=False,
    )
    t = r.table
    assert (t["status"] == "matched").all() and len(t) == 4
    assert (t["speedup"] == 1.0).all() and (t["movement"] == "none").all()
    assert r.warnings == [] and r.totals["speedup"] == 1.0


@needs_ncu_report
def test_report_against_its_csv_exports() -> None:
    import ncuroof

    r = ncuroof.compare_runs(
        shared("accelsim-test__algo23_profile.ncu-rep"),
        [shared("accelsim-test__algo23_raw.csv"), shared("accelsim-test__algo23_session.csv")],
        write=False,
    )
    assert list(r.table["status"]) == ["matched"]
    assert r.table.loc[0, "speedup"] == pytest.approx(1.0, rel=1e-6)
    F = "gene-pop2020__time-{}_dzv_ak_ncuroof-time-0.{}"
    r = ncuroof.compare_runs(
        [shared(F.format("dram", "ncu-rep")), shared(F.format("flops", "ncu-rep"))],
        [shared(F.format("dram", "csv")), shared(F.format("flops", "csv"))],
        gpu="v100-sxm2",
        write=False,
    )
    row = r.table.iloc[0]
    assert row["status"] == "matched" and row["launches_before"] == row["launches_after"] == 4
    assert row["speedup"] == pytest.approx(1.0, rel=1e-6)
    assert row["dram_ai_flop_per_byte_after"] == pytest.approx(
        row["dram_ai_flop_per_byte_before"], rel=1e-6
    )
    assert row["movement"] == "none"
    # The work columns are each side's own sums (ncuroof.load of that side alone): FP64
    # work of the GENE kernel.
    for side, paths in (
        ("before", [shared(F.format(x, "ncu-rep")) for x in ("dram", "flops")]),
        ("after", [shared(F.format(x, "csv")) for x in ("dram", "flops")]),
    ):
        k = ncuroof.load(paths, gpu="v100-sxm2")
        assert (
            row[f"fp64_flop_{side}"] == pytest.approx(k["fp64_flop"].sum(), rel=1e-12)
            and k["fp64_flop"].sum() > 0
        )
        assert row[f"dram_bytes_{side}"] == pytest.approx(k["dram_bytes"].sum(), rel=1e-12)
    assert row["change"] == "same work and traffic, throughput ±0 %"


@needs_ncu_report
def test_esmm_variants_speedup_matches_independent_sums(tmp_path: Path) -> None:
    import ncuroof

    before, after = (
        shared("ESMM-Research__metrics.csv"),
        shared("ESMM-Research__profile_output.ncu-rep"),
    )
    r = ncuroof.compare_runs(before, after, gpu="a10g", write=False)
    t = r.table.set_index("kernel_name")
    kb, ka = ncuroof.load(before, gpu="a10g"), ncuroof.load(after)
    tb, ta = kb.groupby("kernel_name")["time_s"].sum(), ka.groupby("kernel_name")["time_s"].sum()
    common = sorted(set(tb.index) & set(ta.index))
    assert common == ["one_blocktiling", "two_blocktiling", "vectorized_blocktiling", "warptiling"]
    for name in common:
        assert t.loc[name, "status"] == "matched"
        assert t.loc[name, "speedup"] == pytest.approx(tb[name] / ta[name], rel=1e-12)
    assert set(t[t["status"] == "only_before"].index) == {
        "basic",
        "gmem_coalesce",
        "smem_blocking",
        "ampere_sgemm_128x64_nn",
    }
    assert t.loc["ampere_sgemm_128x64_nn", "launches_before"] == 2
    assert r.totals["time_s_before"] == pytest.approx(kb["time_s"].sum()) and r.totals[
        "time_s_after"
    ] == pytest.approx(ka["time_s"].sum())
    assert any("roof source" in w for w in r.warnings)


def _k(names: list[str], times: list[float], **over) -> pd.DataFrame:
    n = len(names)
    base = {
        "source": "x",
        "launch_id": range(n),
        "kernel_name": names,
        "kernel_demangled": names,
        "status": "ok",
        "time_s": times,
        "bound": "memory",
        "device_name": "GPU",
        "cc": "8.0",
        "ncu_version": "2025.1",
        "sm_clock_hz": 1e9,
        "peak_source": "report",
        "dram_definition": "ncu",
        "l2_definition": "ncu",
        **{f"{p}_flop": 0.0 for p in ("fp64", "fp16", "tensor")},
        "fp32_flop": 1e9,
        **{f"{lv}_bytes": 1e8 for lv in ("l1", "l2", "dram")},
        **{f"peak_{p}_flop_per_s": 1e13 for p in ("fp64", "fp32", "fp16")},
        **{f"peak_{lv}_bytes_per_s": 1e12 for lv in ("l1", "l2", "dram")},
    }
    base.update(over)
    k = pd.DataFrame(base)
    # The rates and text columns of a full launch table, from the numbers above.
    for p in ("fp64", "fp32", "fp16", "tensor"):
        k[f"{p}_flop_per_s"] = k[f"{p}_flop"] / k["time_s"]
    for lv in ("l1", "l2", "dram"):
        k[f"{lv}_bytes_per_s"] = k[f"{lv}_bytes"] / k["time_s"]
        k[f"{lv}_definition"] = "ncu"
    k["tensor_source"] = ""
    k["ceiling_sources"] = ""
    return k


def test_fallback_matching_says_so() -> None:
    from ncuroof.runs.compare import compare

    before = _k(["sigma_gpp_gpu_34", "foo<1>", "stay", "gone"], [1.0, 1.0, 1.0, 1.0])
    after = _k(["sigma_gpp_gpu_35", "foo<2>", "stay", "new"], [0.5, 1.0, 2.0, 1.0])
    t = compare(before, after).set_index("kernel_name")
    assert (
        t.loc["sigma_gpp_gpu_34", "match"] == "numbers differ"
        and t.loc["sigma_gpp_gpu_34", "kernel_name_after"] == "sigma_gpp_gpu_35"
    )
    assert t.loc["sigma_gpp_gpu_34", "speedup"] == 2.0
    assert t.loc["foo<1>", "match"] == "base name"
    assert (
        t.loc["stay", "speedup"] == 0.5
        and t.loc["gone", "status"] == "only_before"
        and t.loc["new", "status"] == "only_after"
    )
    # Ambiguous number-only pairings are not made.
    t = compare(_k(["k_1", "k_2"], [1, 1]), _k(["k_3", "k_4"], [1, 1]))
    assert set(t["status"]) == {"only_before", "only_after"}


def test_match_by_launch_pairs_in_order() -> None:
    from ncuroof.runs.compare import compare

    t = compare(_k(["a", "a"], [1.0, 3.0]), _k(["a", "a"], [2.0, 1.0]), by_launch=True).set_index(
        "kernel_name"
    )
    assert len(t) == 2 and sorted(t["speedup"]) == [0.5, 3.0]


def test_dot_movement_with_more_reuse() -> None:
    from ncuroof.runs.compare import compare

    # Same FLOPs, half the DRAM bytes and half the time: AI x2, FLOP/s x2
    # (roof = min(1e13, AI*1e12)).
    t = compare(_k(["g"], [1.0]), _k(["g"], [0.5], dram_bytes=5e7)).iloc[0]
    assert t["dram_ai_flop_per_byte_before"] == 10 and t["dram_ai_flop_per_byte_after"] == 20
    assert t["dram_roof_fraction_before"] == pytest.approx(1e9 / 1e13) and t[
        "dram_roof_fraction_after"
    ] == pytest.approx(2e9 / 1e13)
    # The movement speaks of the after run's binding level (L1 and L2 kept AI 10 there: only
    # utilization rose), named.
    assert t["level_after"] in ("l1", "l2") and t["movement_level"] == t["level_after"]
    assert t["movement"] == "better utilization" and t["speedup"] == 2.0
    assert t["movement_ai_flop_per_byte_before"] == t["movement_ai_flop_per_byte_after"] == 10
    assert t["change"] == "DRAM traffic −50 %, throughput +100 %"


def test_movement_and_ai_columns_speak_of_one_level() -> None:
    from ncuroof.runs.compare import compare

    # L1 and L2 traffic a tenth of DRAM's and bandwidth roofs of 1e11 B/s: DRAM binds (AI 10 -> 20
    # there, 100 at L1/L2).
    lo = {
        "l1_bytes": 1e7,
        "l2_bytes": 1e7,
        **{f"peak_{lv}_bytes_per_s": 1e11 for lv in ("l1", "l2", "dram")},
    }
    t = compare(_k(["g"], [1.0], **lo), _k(["g"], [0.5], dram_bytes=5e7, **lo)).iloc[0]
    assert t["level_before"] == t["level_after"] == t["movement_level"] == "dram"
    assert (t["movement_ai_flop_per_byte_before"], t["movement_ai_flop_per_byte_after"]) == (10, 20)
    # Roof at DRAM: AI x 1e11; FLOP/s 1e9 -> 2e9: the fraction is
    # 1e9 / 1e12 = 2e9 / 2e12 on both sides.
    assert t["movement_roof_fraction_before"] == pytest.approx(1e-3) and t[
        "movement_roof_fraction_after"
    ] == pytest.approx(1e-3)
    assert t["movement"] == "more reuse"


@needs_ncu_report
def test_cli_saved_directory_fail_if_slower_and_strict(tmp_path: Path) -> None:
    report = shared("ESMM-Research__profile_output.ncu-rep")
    assert run("analyze", str(report), "-q", "-o", str(tmp_path / "a")).returncode == 0
    k = pd.read_csv(tmp_path / "a" / "launches.csv")
    k.loc[k["kernel_name"] == "warptiling", "time_s"] *= 1.5
    (tmp_path / "b").mkdir()
    k.to_csv(tmp_path / "b" / "launches.csv", index=False)
    ok = run(
        "compare",
        str(tmp_path / "a"),
        str(tmp_path / "a"),
        "--fail-if-slower",
        "0",
        "-o",
        str(tmp_path / "c0"),
    )
    assert ok.returncode == 0, ok.stderr
    proc = run(
        "compare",
        str(tmp_path / "a"),
        str(tmp_path / "b"),
        "--fail-if-slower",
        "10",
        "-o",
        str(tmp_path / "c1"),
    )
    assert proc.returncode == 1
    assert (
        "slower: warptiling" in proc.stderr
        and "+50.0%" in proc.stderr
        and "two_blocktiling" not in proc.stderr
    )
    t = pd.read_csv(tmp_path / "c1" / "compare.csv").set_index("kernel_name")
    assert t.loc["warptiling", "speedup"] == pytest.approx(1 / 1.5)
    assert (tmp_path / "c1" / "compare.html").stat().st_size > 1_000_000  # plotly.js embedded
    strict = run(
        "compare",
        str(shared("ESMM-Research__metrics.csv")),
        str(report),
        "--strict",
        "-o",
        str(tmp_path / "c2"),
    )
    assert_clean_failure(strict, None, tmp_path / "c2", "comparable", "--strict")
    missing = run("compare", str(tmp_path), str(report), "-o", str(tmp_path / "c3"))
    assert_clean_failure(missing, tmp_path, tmp_path / "c3")


@needs_ncu_report
def test_compare_carries_the_peak_and_the_achievable_fraction(tmp_path: Path) -> None:
    # V100 GENE kernels (time+DRAM run joined with the FLOP run): memory bound at DRAM, where the
    # catalog's published STREAM-like copy (820 GB/s) is the achievable roof. A launches.csv written
    # before issue 21 (without the new columns) still compares: its fractions are recomputed, its
    # achievable roof absent.
    import ncuroof

    runs = [
        shared(f"gene-pop2020__time-{x}_dzv_ak_ncuroof-time-0.ncu-rep") for x in ("dram", "flops")
    ]
    assert run("analyze", *map(str, runs), "-q", "-o", str(tmp_path / "a")).returncode == 0
    k = pd.read_csv(tmp_path / "a" / "launches.csv")
    (tmp_path / "old").mkdir()
    k.drop(
        columns=[c for c in k.columns if c.startswith("achievable_") or c == "roof_fraction"]
    ).to_csv(tmp_path / "old" / "launches.csv", index=False)
    t = ncuroof.compare_runs(tmp_path / "old", tmp_path / "a", write=False).table.iloc[0]
    s = ncuroof.analyze(runs, write=False).summary.iloc[0]
    assert s["level"] == "dram" and s["achievable_source"] == "dram:measured"
    bps = float(
        (k["dram_bytes"].sum()) / k["time_s"].sum()
    )  # the kernel's DRAM bandwidth, time-weighted
    assert s["achievable_roof_fraction"] == pytest.approx(bps / 820e9, rel=1e-9)
    assert t["roof_fraction_before"] == pytest.approx(t["roof_fraction_after"], rel=1e-12)
    assert t["roof_fraction_after"] == pytest.approx(s["roof_fraction"], rel=1e-12)
    assert np.isnan(t["achievable_roof_fraction_before"]) and t[
        "achievable_roof_fraction_after"
    ] == pytest.approx(bps / 820e9, rel=1e-9)


# --- issue 28: a compare you can put in CI --------------------------------------------------------

ESMM = "ESMM-Research__profile_output.ncu-rep"


def _saved(tmp_path: Path, name: str, report: str) -> Path:
    out = tmp_path / name
    assert run("analyze", str(shared(report)), "-q", "-o", str(out)).returncode == 0
    return out


def _folder(tmp_path: Path, name: str, k: pd.DataFrame) -> Path:
    (tmp_path / name).mkdir()
    k.to_csv(tmp_path / name / "launches.csv", index=False)
    return tmp_path / name


def _gate(before: Path, after: Path, out: Path, *flags: str):
    """``ncuroof compare`` of two saved runs with a 5 % slowdown gate and ``flags``."""
    return run("compare", str(before), str(after), "--fail-if-slower", "5", *flags, "-o", str(out))


def _check_each_runs_sums(t: pd.DataFrame, before: pd.DataFrame, after: pd.DataFrame) -> None:
    """The work columns of compare.csv (``t``, by kernel name) are each run's own sums of its launch
    table (``ncuroof.load`` of that run alone), for every kernel that run holds."""
    for side, k in (("before", before), ("after", after)):
        for col in ("fp32_flop", "dram_bytes", "l2_bytes", "l1_bytes", "time_s"):
            sums = k.groupby("kernel_name")[col].sum()
            for name in t.index[t[f"launches_{side}"] > 0]:
                assert t.loc[name, f"{col}_{side}"] == pytest.approx(sums[name], rel=1e-12), (
                    side,
                    col,
                    name,
                )


@needs_ncu_report
def test_one_more_kernel_after_passes_the_gate_and_sums_equal_each_run(tmp_path: Path) -> None:
    import ncuroof

    a = _saved(tmp_path, "a", ESMM)
    extra = pd.read_csv(_saved(tmp_path, "x", "CudaCode__naive.ncu-rep") / "launches.csv").head(1)
    b = _folder(
        tmp_path, "b", pd.concat([pd.read_csv(a / "launches.csv"), extra], ignore_index=True)
    )
    ok = _gate(a, b, tmp_path / "c")
    assert ok.returncode == 0, ok.stderr
    assert "new: naive_gemm (after run only)" in ok.stderr and "gate passed" in ok.stderr
    assert (
        "speedup 1.00x over 4 matched kernels" in ok.stdout
        and "(4 kernels)" in ok.stdout
        and "(5 kernels)" in ok.stdout
    )
    new = _gate(a, b, tmp_path / "c2", "--fail-on-new")
    assert new.returncode == 1 and "new: naive_gemm" in new.stderr and "gate failed" in new.stderr
    back = _gate(b, a, tmp_path / "c3")
    assert back.returncode == 0 and "gone: naive_gemm (before run only)" in back.stderr
    assert _gate(b, a, tmp_path / "c4", "--fail-on-gone").returncode == 1
    # The work columns are each run's own sums (ncuroof.load of that run alone).
    t = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("kernel_name")
    _check_each_runs_sums(t, ncuroof.load(shared(ESMM)), ncuroof.load(b))
    assert t.loc["naive_gemm", "status"] == "only_after" and np.isnan(
        t.loc["naive_gemm", "time_s_before"]
    )
    assert (
        t.loc[t["status"] == "matched", "change"]
        == t.loc[t["status"] == "matched", "change"].iloc[0]
    ).all()
    assert t.loc["warptiling", "change"] == "same work and traffic, throughput ±0 %"


@needs_ncu_report
def test_unknown_times_never_pass_the_gate(tmp_path: Path) -> None:
    # silu 04-19 stores no duration (247 metrics, no gpu__time_duration): its matched
    # kernel's time is unknown.
    before, after = (
        shared("cs599k__silu-2025-04-18-v1.ncu-rep"),
        shared("cs599k__silu-2025-04-19-v1.ncu-rep"),
    )
    proc = run(
        "compare", str(before), str(after), "--fail-if-slower", "5", "-o", str(tmp_path / "c")
    )
    assert (
        proc.returncode == 2
        and "time unknown after" in proc.stderr
        and "0 ns" not in proc.stdout + proc.stderr
    )
    assert "143 us -> n/a" not in proc.stdout and "n/a after" in proc.stdout
    t = pd.read_csv(tmp_path / "c" / "compare.csv")
    assert np.isnan(t.loc[0, "time_s_after"]) and np.isnan(t.loc[0, "speedup"])
    assert t.loc[0, "change"].startswith("work and traffic unknown")
    a = _saved(tmp_path, "a", ESMM)
    empty = _folder(tmp_path, "empty", pd.read_csv(a / "launches.csv").head(0))
    proc = run("compare", str(a), str(empty), "--fail-if-slower", "5", "-o", str(tmp_path / "c2"))
    assert proc.returncode == 2 and "after run" in proc.stderr and "no kernels" in proc.stderr
    # Durations in neither run: nothing to judge. A kernel ncu failed to measure in both runs is not
    # judged, the rest is.
    proc = run(
        "compare", str(after), str(after), "--fail-if-slower", "5", "-q", "-o", str(tmp_path / "c3")
    )
    assert proc.returncode == 2 and "time unknown" in proc.stderr and "duration" in proc.stderr
    bba = shared("BBAStar__profile_output.ncu-rep")
    proc = run(
        "compare", str(bba), str(bba), "--fail-if-slower", "0", "-q", "-o", str(tmp_path / "c4")
    )
    assert (
        proc.returncode == 0
        and "not judged: biAStarMultipleBucketsSingleKernel: no duration in either run"
        in proc.stderr
    )
    assert "over 2 matched kernels, 1 with both times known" in proc.stderr


def _renamed(k: pd.DataFrame, old: str, new: str, factor: float) -> pd.DataFrame:
    k = k.copy()
    at = k["kernel_name"] == old
    for col in ("kernel_name", "kernel_demangled", "kernel_key"):
        k.loc[at, col] = k.loc[at, col].str.replace(old, new, regex=False)
    k.loc[at, "time_s"] *= factor
    return k


@needs_ncu_report
def test_a_renamed_slower_kernel_fails_unless_paired_or_allowed(tmp_path: Path) -> None:
    a = _saved(tmp_path, "a", ESMM)
    b = _folder(
        tmp_path, "b", _renamed(pd.read_csv(a / "launches.csv"), "warptiling", "warptiling_v2", 4.0)
    )

    def compare(out: str, *args: str):
        return run("compare", str(a), str(b), *args, "-o", str(tmp_path / out))

    # The matched total grows 222 us x 3 / 1.21 ms < 100 %: only the partner rule catches it.
    proc = compare("c", "--fail-if-slower", "100")
    assert (
        proc.returncode == 1
        and "slower, likely renamed: warptiling -> warptiling_v2" in proc.stderr
    )
    t = pd.read_csv(tmp_path / "c" / "compare.csv").set_index("kernel_name")
    assert (
        t.loc["warptiling", "status"] == "only_before"
        and t.loc["warptiling", "partner"] == t.loc["warptiling_v2", "kernel_key"]
    )
    allowed = compare("c2", "--fail-if-slower", "100", "--allow-unmatched")
    assert allowed.returncode == 0 and "allowed by --allow-unmatched" in allowed.stderr
    paired = compare("c3", "--fail-if-slower", "100", "--pair", "warptiling=regex:_v2$")
    assert (
        paired.returncode == 1
        and "slower: warptiling: " in paired.stderr
        and "+300.0%" in paired.stderr
    )
    t = pd.read_csv(tmp_path / "c3" / "compare.csv").set_index("kernel_name")
    assert t.loc["warptiling", "match"] == "by hand" and t.loc[
        "warptiling", "speedup"
    ] == pytest.approx(0.25)
    (tmp_path / "pairs.toml").write_text(
        '[[pair]]\nbefore = "warptiling"\nafter = "warptiling_v2"\n'
    )
    filed = compare("c4", "--pair-file", str(tmp_path / "pairs.toml"), "-q")
    assert (
        filed.returncode == 0
        and pd.read_csv(tmp_path / "c4" / "compare.csv")["status"].eq("matched").all()
    )
    bad = compare("c5", "--pair", "regex:tiling=warptiling_v2")
    assert_clean_failure(bad, None, tmp_path / "c5", "'regex:tiling'", "4 kernels", "before run")


@needs_ncu_report
def test_a_rewritten_kernel_paired_by_hand_names_the_work_that_changed(tmp_path: Path) -> None:
    import ncuroof
    from ncuroof.parser.saved import read_table

    before, after = shared("CudaCode__naive.ncu-rep"), shared("Cuda_Gemm_Practice__gemm_v9.ncu-rep")
    r = ncuroof.compare_runs(
        before,
        after,
        pairs=[("naive_gemm", "gemm")],
        outdir=tmp_path / "c",
        formats=("csv", "parquet"),
    )
    t = r.table.set_index("kernel_name")
    kb, ka = ncuroof.load(before), ncuroof.load(after)
    fb, fa = kb["fp32_flop"].sum(), ka.loc[ka["kernel_name"] == "gemm", "fp32_flop"].sum()
    assert fa == pytest.approx(
        2 * 1312 * 110 * 3122, rel=1e-6
    )  # the report's own M, N, K (PROVENANCE)
    row = t.loc["naive_gemm"]
    assert (
        row["match"] == "by hand" and row["fp32_flop_before"] == fb and row["fp32_flop_after"] == fa
    )
    assert row["speedup"] == pytest.approx(
        kb["time_s"].sum() / ka.loc[ka["kernel_name"] == "gemm", "time_s"].sum(), rel=1e-12
    )
    assert row["change"].startswith(f"FP32 work −{100 * (1 - fa / fb):.0f} %")
    assert r.totals["matched_kernels"] == 1 and r.totals["time_s_after"] == pytest.approx(
        ka["time_s"].sum()
    )
    back = read_table(tmp_path / "c" / "compare.parquet")
    assert (
        list(back.columns[: len(r.table.columns)]) == list(r.table.columns)
        and back.attrs["units"]["fp32_flop_before"] == "FLOP"
    )
    assert back.set_index("kernel_name").loc["naive_gemm", "fp32_flop_after"] == fa


def test_gate_by_hand() -> None:
    from ncuroof.runs.compare import compare, gate, totals

    before = _k(["a", "b", "gone"], [1.0, 1.0, 1.0])
    after = _k(
        ["a", "b", "new", "new2"], [1.04, 1.5, 1.0, 2.0], grid="(1, 1, 1)", block="(32, 1, 1)"
    )
    t = compare(before, after)
    tot = totals(t, before, after)
    assert tot["speedup"] == pytest.approx(2 / 2.54) and tot["time_s_after"] == pytest.approx(5.54)
    g = gate(t, tot, 5)
    assert g.verdict == "fail" and g.exit_code == 1
    assert g.failures == [
        "slower: b: 1 s -> 1.5 s (+50.0%)",
        "slower: total of 2 matched kernels 2 s -> 2.54 s",
    ]
    # Same FLOPs (1e9 each): 'gone' has two candidates; 'new' also has its time (1 s), so it is the
    # partner, 'new2' is not.
    p = t.set_index("kernel_name")["partner"]
    assert p["gone"] == "new" and p["new"] == "gone" and p["new2"] == "" and p["a"] == ""
    g = gate(t, tot, 60)
    assert g.verdict == "pass" and g.exit_code == 0 and not g.failures
    assert "new: new2 (after run only): 2 s, 1 launch" in g.notes and any(
        n.startswith("likely partner: gone (before) -> new") for n in g.notes
    )
    assert sorted(gate(t, tot, 60, fail_on_new=True).failures) == [
        "new: new (after run only): 1 s, 1 launch",
        "new: new2 (after run only): 2 s, 1 launch",
    ]
    # The partner slower than the threshold fails unless allowed.
    slow = compare(before, _k(["a", "b", "new"], [1.0, 1.0, 3.0]))
    assert (
        gate(slow, totals(slow, before, after), 60)
        .failures[0]
        .startswith("slower, likely renamed: gone -> new: 1 s -> 3 s (+200 %)")
    )
    assert gate(slow, totals(slow, before, after), 60, allow_unmatched=True).verdict == "pass"
    assert set(g.to_dict()) == {
        "verdict",
        "exit_code",
        "threshold_pct",
        "headline",
        "failures",
        "unknown",
        "notes",
    }


@needs_ncu_report
def test_three_runs_give_each_kernels_trail(tmp_path: Path) -> None:
    import ncuroof

    runs = [shared("ESMM-Research__metrics.csv"), shared(ESMM)]
    a = _saved(tmp_path, "a", ESMM)
    renamed = _renamed(pd.read_csv(a / "launches.csv"), "warptiling", "warptiling_v2", 0.5)
    runs.append(_folder(tmp_path, "v2", renamed))
    proc = run(
        "compare",
        *map(str, runs),
        "--gpu",
        "a10g",
        "--pair",
        "warptiling=warptiling_v2",
        "-o",
        str(tmp_path / "t"),
        "--format",
        "csv,parquet",
    )
    assert proc.returncode == 0, proc.stderr
    assert (
        "warptiling_v2: " in proc.stdout
        and "(2.01x its first)" in proc.stdout
        and "basic: 10.8 ms -> - -> -\n" in proc.stdout
    )
    t = pd.read_csv(tmp_path / "t" / "trail.csv")
    w = t[t["trail"] == t.loc[t["kernel_name"] == "warptiling_v2", "trail"].iat[0]].set_index("run")
    assert list(w.index) == [0, 1, 2] and list(w["match"]) == ["first", "name", "by hand"]
    loads = [ncuroof.load(r, gpu="a10g") for r in runs]
    names = ["warptiling", "warptiling", "warptiling_v2"]
    for i, (k, name) in enumerate(zip(loads, names, strict=True)):
        sel = k[k["kernel_name"] == name]
        assert w.at[i, "time_s"] == pytest.approx(sel["time_s"].sum(), rel=1e-12)
        assert w.at[i, "fp32_flop"] == pytest.approx(sel["fp32_flop"].sum(), rel=1e-12)
    assert w.at[2, "speedup_vs_first"] == pytest.approx(
        w.at[0, "time_s"] / w.at[2, "time_s"], rel=1e-12
    )
    assert w.at[2, "speedup_vs_previous"] == pytest.approx(2.0, rel=1e-12)
    assert (
        len(t[t["kernel_name"] == "basic"]) == 1
        and (w["trail_level"] == w["trail_level"].iat[-1]).all()
    )
    # A directory of runs is the runs in name order.
    (tmp_path / "dir").mkdir()
    for i, r in enumerate(runs[1:]):
        (tmp_path / "dir" / f"{i}-{r.name}").symlink_to(r)
    assert run("compare", str(tmp_path / "dir"), "-q", "-o", str(tmp_path / "t2")).returncode == 0
    assert (
        run(
            "compare", *map(str, runs), "--fail-if-slower", "5", "-o", str(tmp_path / "t3")
        ).returncode
        == 2
    )


def test_change_by_hand() -> None:
    from types import SimpleNamespace

    from ncuroof import fmt
    from ncuroof.runs.compare import WORK_PRECISIONS, change

    assert (fmt.change(-0.47), fmt.change(0.04), fmt.change(0.0), fmt.change(float("nan"))) == (
        "−47 %",
        "+4 %",
        "±0 %",
        "n/a",
    )
    # The case: FP64 work 4.23e12 -> 2.22e12 FLOP in 1/1.99 of the time: throughput x
    # (2.22/4.23)*1.99 = 1.044.
    side = {f"{p}_flop_{s}": 0.0 for p in WORK_PRECISIONS for s in ("before", "after")}
    side.update(
        {f"{lv}_bytes_{s}": 1e9 for lv in ("l1", "l2", "dram") for s in ("before", "after")}
    )
    r = SimpleNamespace(
        **side,
        launches_before=3,
        launches_after=3,
        precision_before="fp64",
        precision_after="fp64",
        flop_per_s_before=4.23e12 / 1.0,
        flop_per_s_after=2.22e12 / (1 / 1.99),
    )
    r.fp64_flop_before, r.fp64_flop_after = 4.23e12, 2.22e12
    assert change(r) == "FP64 work −48 %, throughput +4 %"
    r.dram_bytes_after, r.launches_after, r.fp64_flop_after = 0.5e9, 6, 4.23e12
    assert change(r) == "DRAM traffic −50 %, launches 3 → 6, throughput +4 %"
    r.fp64_flop_after = float("nan")
    r.dram_bytes_after = 1e9
    assert change(r) == "launches 3 → 6, throughput +4 %"


@needs_ncu_report
def test_a_stale_parquet_beside_a_new_csv_is_refused(tmp_path: Path) -> None:
    # issue 34: analyzed with csv,parquet, then again with csv only: the old launches.parquet must
    # not be what the gate reads.
    report = shared(ESMM)
    out = tmp_path / "run"
    assert (
        run("analyze", str(report), "-q", "-o", str(out), "--format", "csv,parquet").returncode == 0
    )
    slow = pd.read_csv(out / "launches.csv")
    slow["time_s"] *= 3
    slow.to_csv(out / "launches.csv", index=False)
    base = _saved(tmp_path, "base", ESMM)
    proc = run("compare", str(base), str(out), "--fail-if-slower", "5", "-o", str(tmp_path / "c"))
    assert_clean_failure(proc, out, tmp_path / "c", "launches.csv", "launches.parquet", "analyze")
    (out / "launches.parquet").unlink()
    proc = run(
        "compare", str(base), str(out), "--fail-if-slower", "5", "-q", "-o", str(tmp_path / "c2")
    )
    assert proc.returncode == 1 and "+200.0%" in proc.stderr


def test_a_zero_time_is_unknown_not_infinitely_slow() -> None:
    # A hand-edited saved table can hold time_s = 0: the gate says it cannot judge (exit 2),
    # never divides by it.
    from ncuroof.runs.compare import compare, gate, totals

    before, after = _k(["a", "gone"], [0.0, 0.0]), _k(["a", "new"], [1.0, 3.0])
    t = compare(before, after)
    g = gate(t, totals(t, before, after), 5)
    assert g.exit_code == 2 and any("time unknown before" in u for u in g.unknown)


def test_runs_of_a_directory_take_repz_and_skip_each_report_s_own_analysis(tmp_path: Path) -> None:
    from ncuroof.api import runs_in

    for name in ("a.ncu-repz", "b.ncu-rep", "c.csv"):
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "a.ncuroof").mkdir()
    (tmp_path / "a.ncuroof" / "launches.csv").write_text("launch_id\n")
    (tmp_path / "saved").mkdir()
    (tmp_path / "saved" / "launches.csv").write_text("launch_id\n")
    assert [p.name for p in runs_in(tmp_path)] == ["a.ncu-repz", "b.ncu-rep", "c.csv", "saved"]


def test_gate_options_without_a_gate_are_refused() -> None:
    proc = run("compare", "x.ncu-rep", "y.ncu-rep", "--fail-on-new")
    # click's usage error: the reason on its last line
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert_one_line_error(proc.stderr.splitlines()[-1], None, "--fail-on-new", "--fail-if-slower")


def test_a_change_within_the_launches_own_spread_is_noise(tmp_path: Path) -> None:
    """The gate's noise model (issue 54): a kernel of 10 launches that vary by ±5 % (cv 0.0527)
    gets 0.6 % slower: 2 x sqrt(2 x cv^2 / 10) = 4.7 % is its noise, so --fail-if-slower 0.5
    passes and says "within noise"; the same 0.6 % on a kernel of one launch has no spread to
    excuse it and fails."""
    from ncuroof.api import compare_runs

    a = _saved(tmp_path, "a", ESMM)
    k = pd.read_csv(a / "launches.csv")
    one = k["kernel_name"].iloc[0]
    first = k[k["kernel_name"] == one].head(1)
    jitter = np.tile([0.95, 1.05], 5)
    many = pd.concat([first] * 10, ignore_index=True)
    many["time_s"] = many["time_s"].to_numpy() * jitter
    many["launch_id"] = np.arange(10) + 1000
    before = _folder(tmp_path, "before", many)
    slower = many.assign(time_s=many["time_s"] * 1.006)
    after = _folder(tmp_path, "after", slower)
    r = compare_runs(before, after, fail_if_slower=0.5)
    cv = np.std(jitter, ddof=1) / np.mean(jitter)
    assert r.table.loc[0, "time_noise_frac"] == pytest.approx(2 * np.sqrt(2 * cv**2 / 10))
    assert r.gate.verdict == "pass" and any("within noise" in n for n in r.gate.notes)
    single_b = _folder(tmp_path, "b1", first)
    single_a = _folder(tmp_path, "a1", first.assign(time_s=first["time_s"] * 1.006))
    r1 = compare_runs(single_b, single_a, fail_if_slower=0.5)
    assert np.isnan(r1.table.loc[0, "time_noise_frac"]) and r1.gate.verdict == "fail"
