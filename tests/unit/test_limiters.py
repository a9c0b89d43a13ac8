"""The limiter rules (ncuroof.model.limiters, issue 50): each rule on a real report where one fires,
its numbers checked against ncu's own counters read by ncu_report, and on the issue's held-back
cases rebuilt from the numbers the issue quotes; a kernel's verdict is one of its launches'."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ncuroof import catalog
from ncuroof.model import diagnose, limiters
from ncuroof.model.invariants import kernel_violations
from tests.helpers.reports import kernels_of, ncu_metrics, needs_ncu_report

CAT = catalog.load()
SOL = CAT.thresholds["sol"]
STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"


def _launch(name: str, kernel: str) -> tuple[pd.Series, dict[str, float]]:
    """The first launch of ``kernel`` in a shared report and ncu's own metrics of it."""
    k = kernels_of(name)
    i = list(k["kernel_name"]).index(kernel)
    return k.iloc[i], ncu_metrics(name)[i]


def _store_sectors_per_request(ncu: dict[str, float]) -> float:
    """Global store sectors per request, from ncu's own counters."""
    return (
        ncu["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
        / ncu["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"]
    )


@needs_ncu_report
def test_uncoalesced_stores_are_named_not_the_roof():
    # BBAStar's initializeBiNodes: 89 % memory throughput from lts__xbar2lts_cycles_active (a
    # request unit, missing from pipes.toml before), stores 32 sectors per request; it was called
    # "at the memory roof: only moving fewer bytes helps"
    r, ncu = _launch("BBAStar__profile_output.ncu-rep", "initializeBiNodes")
    spr = _store_sectors_per_request(ncu)
    assert r["global_store_sectors_per_request"] == pytest.approx(spr, rel=1e-12) and spr > 16
    assert r["hot_memory_unit"] == "L2 crossbar input (lts__xbar2lts_cycles_active)"
    assert r["hot_memory_unit_frac"] == pytest.approx(
        ncu["lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed"] / 100, rel=1e-12
    )
    assert r["limiter"] == "uncoalesced" and r["diagnosis"] == "memory_below_roof"
    assert f"stores {spr:.3g} sectors per request" in r["evidence"]
    assert r["advice"].startswith("the access pattern") and "coalesce" in r["advice"]
    assert "only moving fewer bytes helps" not in r["advice"].split("; then:")[0]
    assert "at the memory roof" not in r["advice"]


@needs_ncu_report
def test_a_uncoalesced_hand_sgemm_keeps_its_reuse_gap_as_the_next_step():
    r, ncu = _launch("Cuda_Gemm_Practice__gemm_v9.ncu-rep", "gemm")
    spr = _store_sectors_per_request(ncu)
    assert r["limiter"] == "uncoalesced" and spr > 16
    assert "; then: " in r["advice"] and "tile for reuse" in r["advice"].split("; then: ")[1]


@needs_ncu_report
def test_a_few_block_microsecond_launch_is_launch_bound():
    # cutlass' Kernel: 36 blocks on 108 SMs for 8.5 us
    r, ncu = _launch("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep", "Kernel")
    assert ncu["launch__grid_size"] < ncu["device__attribute_multiprocessor_count"] == r["sm_count"]
    assert ncu["gpu__time_duration.sum"] * 1e-9 <= CAT.limiters["launch_bound"]["max_time_s"]
    assert r["limiter"] == "launch_bound" and r["diagnosis"] == "latency_bound"
    assert r["evidence"].startswith("36 blocks on 108 SMs")


@needs_ncu_report
def test_latency_verdicts_name_ncus_stall_reasons():
    # CUDA_Learning's reduceNeighboredLess: barrier 15.3 and wait 13.3 of 33.2 cycles per issue,
    # both above ncu's CPIStall share (0.3); the advice names them instead of sending to ncu
    r, ncu = _launch("CUDA_Learning__report.ncu-rep", "reduceNeighboredLess")
    cpi = ncu["smsp__average_warp_latency_per_inst_issued.ratio"]
    stalls = sorted(
        ((ncu[STALL.format(x)], x) for x in CAT.limiters["stall"] if STALL.format(x) in ncu),
        reverse=True,
    )
    (c1, top), (c2, second) = stalls[:2]
    assert (r["top_stall"], r["second_stall"]) == (top, second) == ("barrier", "wait")
    assert r["top_stall_cycles_per_issue"] == pytest.approx(c1, rel=1e-12)
    assert r["warp_cycles_per_issue"] == pytest.approx(cpi, rel=1e-12)
    assert c1 > 0.3 * cpi and c2 > 0.3 * cpi
    assert f"barrier ({c1:.3g} of the {cpi:.3g} cycles between issues" in r["advice"]
    assert f"wait ({c2:.3g} of the {cpi:.3g}" in r["advice"]
    assert "read ncu's warp-stall reasons" not in r["advice"]


def _facts(**kw: object) -> dict[str, object]:
    """A latency-bound launch's facts (SM 30 %, memory 20 %), changed by ``kw``."""
    base: dict[str, object] = {
        "status": "ok",
        "bound": "latency",
        "sm_throughput_frac": 0.3,
        "memory_throughput_frac": 0.2,
        "occupancy_frac": 0.3,
        "theoretical_occupancy_frac": 0.5,
        "waves_per_sm": 4.0,
        "blocks": 4096.0,
        "threads_per_block": 256.0,
        "has_time": True,
    }
    return {**base, **kw}


def _limited(f: dict[str, object]) -> tuple[str, str, str, str]:
    return diagnose._limited(f, SOL, None, 0.5, None, None, (0.9, 0.8), CAT)


def test_a_membar_dominated_launch_is_fence_bound():
    # issue 50 class 2: H800 FP8 cast kernel, membar 160.6 cycles per issue, the next 7.6, a
    # system-scope spin barrier in the opcode table; it was told to "launch more blocks"
    f = _facts(
        top_stall="membar",
        top_stall_cycles_per_issue=160.6,
        second_stall="long_scoreboard",
        second_stall_cycles_per_issue=7.6,
        warp_cycles_per_issue=175.0,
        issue_active_frac=0.01,
        spin_barrier=True,
        waves_per_sm=0.5,
    )
    cls, ev, advice, limiter = _limited(f)
    assert (cls, limiter) == ("latency_bound", "fence")
    assert "membar 161 of the 175 cycles" in ev and "(the next, long_scoreboard, 7.6)" in ev
    assert advice.startswith("fence-bound") and "grid-wide barriers" in advice
    assert "launch more blocks" not in advice
    # a membar that is not dominant (under 2x the next) leaves the verdict alone
    assert _limited({**f, "second_stall_cycles_per_issue": 100.0})[3] != "fence"
    # the second kernel of that report: the barrier in the opcode table, no stall reasons, and
    # the advice said "raise occupancy, fewer registers"
    bare = _facts(spin_barrier=True, occupancy_frac=0.2, theoretical_occupancy_frac=0.25)
    cls, ev, advice, limiter = _limited(bare)
    assert limiter == "fence" and "spin barrier in the opcode table" in ev
    assert "raise occupancy" not in advice and "grid-wide barriers" in advice
    assert _limited({**bare, "spin_barrier": False})[3] == ""


def test_a_partial_second_wave_with_idle_sms_is_a_tail():
    # issue 50 class 5: RTX 5090 flash attention, 512 CTAs on 340 slots = 1.51 waves, SMs active
    # 69 % of elapsed cycles, tensor pipe 43.1 % of elapsed; it was told to "raise occupancy"
    f = _facts(
        waves_per_sm=512 / 340,
        blocks=512.0,
        sm_active_frac=0.69,
        hot_pipe="Tensor",
        hot_pipe_frac=0.431,
    )
    cls, ev, advice, limiter = _limited(f)
    assert (cls, limiter) == ("latency_bound", "tail")
    assert "1.51 waves (512 blocks on 340 slots)" in ev
    assert "SMs are active 69% of elapsed cycles" in ev
    assert f"{100 * 0.431 / 0.69:.0f}% while active" in ev
    assert "a multiple of 340 blocks" in advice and "raise occupancy" not in advice
    # whole waves, or SMs busy, is no tail
    assert _limited({**f, "waves_per_sm": 2.0, "blocks": 680.0})[3] != "tail"
    assert _limited({**f, "sm_active_frac": 0.95})[3] != "tail"


def test_a_busy_conversion_pipe_is_named_with_its_stall():
    # issue 50 class 6: A40 INT8 GEMM, XU at 52 %, top stall mio_throttle
    f = _facts(
        precision="tensor:imma",
        hot_pipe="XU",
        hot_pipe_frac=0.52,
        top_stall="mio_throttle",
        top_stall_cycles_per_issue=9.0,
        warp_cycles_per_issue=20.0,
    )
    cls, ev, advice, limiter = _limited(f)
    assert limiter == "pipe" and "the busiest pipe is XU at 52%" in ev
    assert "int/float conversions" in ev and "mio_throttle (9 of the 20 cycles" in advice


def test_requests_not_bytes_fill_the_memory_side():
    # issue 50 class 1: H100 MoE kernel, lts__t_tag_requests at 87 %, L2 sectors at 42.8 %
    f = _facts(
        bound="memory",
        level="l2",
        precision="fp32",
        roof_fraction=0.428,
        ai_flop_per_byte=0.5,
        ridge_flop_per_byte=10.0,
        sm_throughput_frac=0.3,
        memory_throughput_frac=0.87,
        hot_memory_unit="L2 tag lookups (lts__t_tag_requests)",
        hot_memory_unit_frac=0.87,
    )
    cls, ev, advice, limiter = _limited(f)
    assert (cls, limiter) == ("memory_below_roof", "request_bound")
    assert "lts__t_tag_requests) at 87%: requests, not bytes (L2 bytes at 43% of roof)" in ev
    assert advice.startswith("request-bound")
    # the bytes unit itself at 87 % is not request-bound
    got = _limited({**f, "hot_memory_unit": "L2 (lts__t_sectors)"})
    assert got[3] != "request_bound"


def test_stall_words_leave_advice_alone_without_reasons():
    advice = "latency bound; raise ILP and read ncu's warp-stall reasons"
    assert limiters.stall_words({}, advice, CAT) == advice
    f = {"top_stall": "wait", "top_stall_cycles_per_issue": 1.0, "warp_cycles_per_issue": 10.0}
    assert limiters.stall_words(f, advice, CAT) == advice  # 10 % of the cycles: not reported


def test_stall_words_name_the_reasons_ncu_would_report():
    """The CUDA_Learning case from the numbers it quotes (runs without ../shared): barrier 15.3
    and wait 13.3 of 33.2 cycles per issue, each above ncu's CPIStall share (0.3 x 33.2 = 9.96):
    both are named in place of the generic pointer to ncu."""
    advice = "latency bound; raise ILP and read ncu's warp-stall reasons"
    f = {
        "top_stall": "barrier",
        "top_stall_cycles_per_issue": 15.3,
        "second_stall": "wait",
        "second_stall_cycles_per_issue": 13.3,
        "warp_cycles_per_issue": 33.2,
    }
    said = limiters.stall_words(f, advice, CAT)
    assert "read ncu's warp-stall reasons" not in said and said.startswith(
        "latency bound; raise ILP"
    )
    assert "barrier (15.3 of the 33.2 cycles between issues" in said
    assert "wait (13.3 of the 33.2" in said
    # 9.9 cycles is under 0.3 x 33.2: only the barrier is named
    one = limiters.stall_words({**f, "second_stall_cycles_per_issue": 9.9}, advice, CAT)
    assert "barrier (15.3" in one and "wait (" not in one


def _uncoalesced_store(**kw: object) -> dict[str, object]:
    """BBAStar's initializeBiNodes from the numbers the issue quotes: memory-bound below its L2
    roof, the L2 crossbar input 89 % busy, stores at 32 sectors per request."""
    return _facts(
        **{
            "bound": "memory",
            "level": "l2",
            "precision": "fp32",
            "roof_fraction": 0.4,
            "ai_flop_per_byte": 0.05,
            "ridge_flop_per_byte": 0.06,
            "sm_throughput_frac": 0.2,
            "memory_throughput_frac": 0.89,
            "hot_memory_unit": "L2 crossbar input (lts__xbar2lts_cycles_active)",
            "hot_memory_unit_frac": 0.89,
            "global_store_sectors_per_request": 32.0,
            "global_load_sectors_per_request": 4.0,
            **kw,
        }
    )


def test_uncoalesced_stores_are_named_not_the_roof_by_hand():
    """Stores at 32 sectors per request, above 16 x (1 + 0.25) (metrics/limiters.toml): the
    limiter is uncoalesced and the advice the access pattern, never "only moving fewer bytes"
    (runs without ../shared); loads at 4 sectors per request are not named. With bandwidth mostly
    used (70 % of the roof) and AI far below the ridge (0.5 against 33: a 66x gap), reuse is the
    next step."""
    cls, ev, advice, limiter = _limited(_uncoalesced_store())
    assert (cls, limiter) == ("memory_below_roof", "uncoalesced")
    assert "stores 32 sectors per request" in ev and "loads" not in ev.split("uncoalesced")[1]
    assert advice.startswith("the access pattern") and "coalesce" in advice
    assert "only moving fewer bytes helps" not in advice.split("; then:")[0]
    assert "at the memory roof" not in advice
    _, _, advice, _ = _limited(
        _uncoalesced_store(roof_fraction=0.7, ai_flop_per_byte=0.5, ridge_flop_per_byte=33.0)
    )
    assert "; then: " in advice and "tile for reuse" in advice.split("; then: ")[1]
    # 20 sectors per request is within the slack (16 x 1.25): no limiter
    assert _limited(_uncoalesced_store(global_store_sectors_per_request=20.0))[3] != "uncoalesced"


def test_a_kernel_verdict_no_launch_has_is_caught():
    launches = pd.DataFrame(
        {
            "kernel_key": ["k", "k"],
            "diagnosis": ["latency_bound", "latency_bound"],
            "advice": ["the grid is larger than the work"] * 2,
        }
    )
    summary = pd.DataFrame(
        {"kernel_key": ["k"], "diagnosis": ["latency_bound"], "advice": ["launch more blocks"]}
    )
    v = kernel_violations(summary, launches)
    assert list(v["code"]) == ["kernel_verdict_no_launch_has"]
    assert kernel_violations(summary.assign(advice=launches["advice"][:1]), launches).empty
    # issue 50 class 4: "171,500 blocks" over launches of 290,304 / 68,600 / ...: a median
    waves = launches.assign(waves_per_sm=[0.925, 8.0])
    fine = summary.assign(advice=launches["advice"][:1])
    assert kernel_violations(fine.assign(waves_per_sm=8.0), waves).empty
    v = kernel_violations(fine.assign(waves_per_sm=4.46), waves)
    assert list(v["code"]) == ["geometry_no_launch_had"]


@needs_ncu_report
def test_a_kernel_takes_its_longest_launch_verdict():
    # silu_kernel_vector: three launches, two near the DRAM roof (the longest among them)
    k = kernels_of("cs599k__2025-04-21-vector-based.ncu-rep")
    import ncuroof
    from ncuroof.model import summary

    s = diagnose.diagnose_kernels(summary.kernel_summary(k, ncuroof.points(k)), k, CAT)
    row = s.iloc[0]
    longest = k.sort_values("time_s").iloc[-1]
    assert (row["diagnosis"], row["advice"]) == (longest["diagnosis"], longest["advice"])
    n = int((k["diagnosis"] == longest["diagnosis"]).sum())
    share = k.loc[k["diagnosis"] == longest["diagnosis"], "time_s"].sum() / k["time_s"].sum()
    assert row["evidence"].startswith("longest launch of 3: ")
    if n < 3:  # launches that differ: how they split
        assert f"its launches: {n} of 3 ({100 * share:.0f}% of time)" in row["evidence"]
    else:
        assert "its launches:" not in row["evidence"]
    assert not math.isnan(share)


def _edited(k: pd.DataFrame, i: int, diagnosis: str) -> pd.DataFrame:
    """``k`` with launch ``i`` given another verdict: ``diagnosis`` and other words."""
    cols = ["diagnosis", "evidence", "advice", "limiter"]
    k = k.astype(dict.fromkeys(cols, object))
    k.loc[k.index[i], cols] = [diagnosis, "edited evidence", "edited advice", "edited limiter"]
    return k


@needs_ncu_report
@pytest.mark.parametrize("diagnosis", ["latency_bound", "memory_below_roof"])
@pytest.mark.parametrize("longer", [True, False])
def test_a_kernel_of_two_embedded_launches_takes_the_longest_verdict(diagnosis, longer):
    """The same rule on the repository's CUTLASS report (issue 54 item 10: runs without
    ../shared): Kernel<128x96x64> has two launches, the first the longer by ncu's durations
    (11,168 vs 10,880 ns), both latency-bound in the same words. So one of them, the longer or
    the shorter, is given other words (a synthetic edit of the real table), under the same
    diagnosis or another: the kernel row takes the longer launch's verdict either way, and
    where the diagnoses differ its evidence says how the time splits (51% / 49%)."""
    name = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"
    import ncuroof
    from ncuroof.model import summary

    k = kernels_of(name)
    mine = k["kernel_demangled"].str.contains("GemmShape<(int)128, (int)96, (int)64>", regex=False)
    (a, b), ncu = mine[mine].index, ncu_metrics(name)
    ta, tb = ncu[a]["gpu__time_duration.sum"], ncu[b]["gpu__time_duration.sum"]
    assert list(mine) == [True, True, False] and ta > tb
    assert k.at[a, "diagnosis"] == k.at[b, "diagnosis"] == "latency_bound"
    e = _edited(k, a if longer else b, diagnosis)
    s = summary.kernel_summary(k, ncuroof.points(k))
    row = diagnose.diagnose_kernels(s, e, CAT).set_index("kernel_label").loc["Kernel<128x96x64>"]
    assert (row["diagnosis"], row["advice"]) == (e.at[a, "diagnosis"], e.at[a, "advice"])
    assert row["limiter"] == e.at[a, "limiter"]
    assert row["evidence"].startswith(f"longest launch of 2: {e.at[a, 'evidence']}")
    first, second = (diagnose.CLASSES[e.at[x, "diagnosis"]] for x in (a, b))
    split = (
        f"; its launches: 1 of 2 ({100 * ta / (ta + tb):.0f}% of time) {first},"
        f" 1 of 2 ({100 * tb / (ta + tb):.0f}% of time) {second}"
    )
    assert row["evidence"].endswith(split) == (first != second)
    assert ("its launches:" in row["evidence"]) == (first != second)


@pytest.mark.parametrize(
    ("name", "cc", "said"),
    [
        # issue 50 class 9: an sm_80 CUTLASS kernel on an H100
        ("cutlass_80_tensorop_s16816gemm_f16_128x128_32x4_nn_align8", "9.0", "wgmma"),
        ("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32", "9.0", "wgmma"),
        ("ampere_sgemm_128x64_nn", "10.0", "tcgen05"),
        ("ampere_sgemm_128x64_nn", "8.6", ""),  # GA102 is sm_86: nothing newer to use
        ("sm90_xmma_gemm_bf16bf16_bf16f32", "9.0", ""),
        ("silu_kernel", "9.0", ""),
    ],
)
def test_a_kernel_built_for_an_older_gpu_is_named(name: str, cc: str, said: str):
    words = limiters.older_arch_words({"kernel_name": name, "cc": cc}, CAT)
    assert (said in words) if said else words == ""
    if said:
        built = "80" if "80" in name or name.startswith("ampere") else ""
        assert words.startswith(f"; built for sm_{built} on a CC {float(cc):.1f} GPU")


def test_every_rule_is_data_with_a_source():
    spec = CAT.limiters
    assert spec["order"] == list(limiters._RULES)
    for name in spec["order"]:
        assert spec[name]["source"], name
    # ncu's own values where ncu has a rule (CPIStall.py, LaunchStatistics.py)
    assert (spec["fence"]["share"], spec["fence"]["issue_active"]) == (0.3, 0.8)
    assert spec["tail"]["tail_share"] == 0.2
    for reason, words in spec["stall"].items():
        assert words["means"] and words["advice"], reason
    # every stall metric the rules read is one the parser keeps
    assert {m for r, m in CAT.limiter_metrics.items() if r.startswith("stall:")} <= (
        CAT.scalar_metrics
    )
