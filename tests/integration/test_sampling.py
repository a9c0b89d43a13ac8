"""PM sampling (issue 51): the series decoded from the report equal ``ncu_report``'s, their
integral equals the launch's counted DRAM bytes, phases add up to the launch, one wave has no
tail, and a report without sampling reads as before."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncuroof.model.analysis import build
from ncuroof.parser.ncu_rep.sampling import INTERVAL_METRICS, read_series
from tests.helpers.reports import REPORTS, needs_ncu_report, shared

#: The shared reports with PM sampling series (ncu 2024.1 to 2026.2, Turing to Blackwell).
SAMPLED = (
    "BBAStar__profile_output.ncu-rep",
    "CUDA_Learning__report.ncu-rep",
    "CudaCode__naive.ncu-rep",
    "ai-infra-notes__leetgpu_matmul_full.ncu-rep",
    "cs599k__2025-04-21-77_06-MT.ncu-rep",
    "cs599k__2025-04-21-vector-based.ncu-rep",
    "cs599k__rms_norm_triton_looping.ncu-rep",
    "cs599k__silu-2025-04-18-v1.ncu-rep",
    "cutlass-panjd123__4f3955ed3c_report.ncu-rep",
    "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep",
)


def _timed(name: str) -> bool:
    """A series ncu keys by sample timestamp (or its interval metric), as ncu_report lists it."""
    if name.startswith(("breakdown:", "group:")):
        return False
    return (
        ":" in name
        or "Triage" in name
        or name.startswith(("profiler__timestamp_workload", "profiler__pmsampler_ctxsw"))
        or name in INTERVAL_METRICS
    )


def _reference(path: Path) -> dict[tuple[int, str], list[tuple[int, float]]]:
    """(launch, metric) -> [(timestamp, value)] of every timed series, through ncu_report."""
    import ncu_report

    ctx, out, launch = ncu_report.load_report(str(path)), {}, 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            for name in act.metric_names():
                m = act.metric_by_name(name)
                if _timed(name) and m.num_instances():
                    ids = m.correlation_ids()
                    out[(launch, name)] = [
                        (ids.as_uint64(i), m.as_double(i)) for i in range(m.num_instances())
                    ]
            launch += 1
    return out


@needs_ncu_report
@pytest.mark.parametrize("name", SAMPLED)
def test_series_equal_ncu_report(name: str) -> None:
    """Every sample's timestamp and value, of every series of every launch, equals ncu_report's."""
    path = shared(name)
    got = read_series(path)
    ours = {
        (int(lid), str(m)): list(zip(g["key"].tolist(), g["value"].tolist()))
        for (lid, m), g in got.groupby(["launch_id", "metric"], sort=False)
    }
    ref = _reference(path)
    assert ref, "ncu_report lists no sampled series"
    missing = sorted(set(ref) - set(ours))[:3]
    assert not missing, f"series ncu_report has and the decoder lacks: {missing}"
    for key, samples in ref.items():
        assert ours[key] == samples, key


@functools.cache
def _analysis(name: str):
    return build([shared(name)])


def _integral(s: pd.DataFrame) -> float:
    return float((s["dram_bytes_per_s"] * s["interval_s"]).sum())


@pytest.mark.parametrize(
    "name, tolerance",
    [
        ("ai-infra-notes__leetgpu_matmul_full.ncu-rep", 0.02),  # sampled as bytes/s (2026.2)
        ("cs599k__2025-04-21-vector-based.ncu-rep", 0.05),  # % of peak, H100 PCIe
        ("BBAStar__profile_output.ncu-rep", 0.05),  # % of peak, RTX 4070 Laptop
        ("CUDA_Learning__report.ncu-rep", 0.05),  # % of peak, RTX 3060 Laptop
    ],
)
def test_sampled_dram_integrates_to_the_launch_bytes(name: str, tolerance: float) -> None:
    """The sampled DRAM rate x each sample's time in the launch adds up to the launch's counted
    dram__bytes (the report's own total, not the series), unscaled (dram_scale 1)."""
    a = _analysis(name)
    for row in a.launches.itertuples():
        s = a.samples[a.samples["launch_id"] == row.launch_id]
        if not len(s) or row.time_s < 100e-6 and "leetgpu" not in name:
            continue
        assert (s["dram_scale"] == 1.0).all()
        assert _integral(s) == pytest.approx(row.dram_bytes, rel=tolerance), row.launch_id


def test_percent_of_peak_off_the_reports_peak_is_scaled_and_says_so() -> None:
    """On GH200 the sampled dramc percentage is of twice the report's DRAM peak: the integral with
    that peak is half the launch's bytes (0.4986), so the series is scaled (dram_scale ~2)."""
    a = _analysis("cs599k__silu-2025-04-18-v1.ncu-rep")
    s, row = a.samples, a.launches.iloc[0]
    scale = float(s["dram_scale"].iloc[0])
    assert 1.95 < scale < 2.05
    assert _integral(s) / scale == pytest.approx(0.4986 * row.dram_bytes, rel=0.01)
    assert _integral(s) == pytest.approx(row.dram_bytes, rel=1e-9)


@pytest.mark.parametrize("name", SAMPLED)
def test_phase_shares_add_up_to_the_launch(name: str) -> None:
    """The sampled time in the launch (the samples' intervals) is its duration within one sample
    interval or 1 % (ncu samples in a replay of its own: 282.3 against 284.6 us on an H100 PCIe);
    ramp + plateau + tail add up to the duration, shares to 1, in time order."""
    a = _analysis(name)
    assert len(a.samples) and len(a.sample_phases)
    for row in a.launches.itertuples():
        p = a.sample_phases[a.sample_phases["launch_id"] == row.launch_id]
        if not len(p):
            continue
        sampled = a.samples.loc[a.samples["launch_id"] == row.launch_id, "interval_s"].sum()
        assert abs(sampled - row.time_s) <= max(row.pm_sample_interval_s * 1.05, row.time_s / 100)
        assert p["duration_s"].sum() == pytest.approx(row.time_s)
        assert p["time_share"].sum() == pytest.approx(1.0)
        order = {"ramp": 0, "plateau": 1, "tail": 2}
        assert list(p["phase"].map(order)) == sorted(p["phase"].map(order))
        assert (np.diff(p["start_s"].to_numpy()) > 0).all()


def test_one_wave_has_no_tail() -> None:
    """Grids of under one full wave (cutlass GEMMs of 0.08-0.89 waves) have no tail phase."""
    for name in SAMPLED:
        a = _analysis(name)
        few = a.launches.loc[a.launches["waves_per_sm"] < 1, "launch_id"]
        p = a.sample_phases
        assert not ((p["phase"] == "tail") & p["launch_id"].isin(few)).any(), name


def test_tail_is_evidence_and_samples_count_the_grid() -> None:
    """The 1.004-wave naive matmul (1024 CTAs) spends 42 % of its time in its last partial wave:
    the phase table says so, the launch's evidence names it, and the sampled CTA launches add up
    to the grid."""
    a = _analysis("ai-infra-notes__leetgpu_matmul_full.ncu-rep")
    tail = a.sample_phases.loc[a.sample_phases["phase"] == "tail", "time_share"]
    assert tail.iloc[0] == pytest.approx(0.415, abs=0.01)
    assert "42 % of the time in the last partial wave" in str(a.launches["evidence"].iloc[0])
    assert a.samples["ctas_launched"].sum() == 32 * 32


def test_phase_work_adds_up_to_the_launch() -> None:
    """The phases' DRAM bytes and FLOPs add up to the launch's counted totals."""
    a = _analysis("cs599k__2025-04-21-vector-based.ncu-rep")
    for row in a.launches.itertuples():
        p = a.sample_phases[a.sample_phases["launch_id"] == row.launch_id]
        assert p["dram_bytes"].sum() == pytest.approx(row.dram_bytes, rel=1e-9)
        flop = np.nansum([row.fp64_flop, row.fp32_flop, row.fp16_flop, row.tensor_flop])
        assert p["flop"].sum() == pytest.approx(flop, rel=1e-9)


def test_unsampled_reports_have_no_samples() -> None:
    """A report without sampling has no interval and no samples table (nothing written)."""
    unsampled = [p for p in REPORTS if p.name not in SAMPLED][:4]
    if not unsampled:
        pytest.skip("no shared reports")
    for path in unsampled:
        assert not len(read_series(path)), path.name
        a = build([path])
        assert a.launches["pm_sample_interval_s"].isna().all()
        assert a.samples is not None and not len(a.samples)


def test_samples_reach_the_folder_and_the_page(tmp_path: Path) -> None:
    """analyze writes samples.csv and sample_phases.csv beside the page, which carries the
    timeline and the phase trail."""
    import ncuroof

    result = ncuroof.analyze(shared("cs599k__silu-2025-04-18-v1.ncu-rep"), tmp_path / "out")
    saved = pd.read_csv(tmp_path / "out" / "samples.csv")
    assert len(saved) == len(result.tables["samples"]) == 97
    phases = pd.read_csv(tmp_path / "out" / "sample_phases.csv")
    assert set(phases["phase"]) == {"ramp", "plateau", "tail"}
    page = (tmp_path / "out" / "roofline.html").read_text()
    assert "PM sampling timeline" in page and "sample_trail" in page
