"""Reading every real report: launches, names, metadata, status, and the CLI end to end."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ncuroof.schema import cell_text
from tests.helpers.reports import (
    REPORTS,
    kernels_of,
    ncu_metrics,
    needs_ncu_report,
    shared,
)

pytestmark = [needs_ncu_report]

# launches and ncu version per report, from ../shared/fixtures/PROVENANCE.md
PROVENANCE = {
    "BBAStar__profile_output.ncu-rep": (2, "2024.3.2.0"),
    "CUDA_Learning__report.ncu-rep": (5, "2024.1.0.0"),
    "CudaCode__naive.ncu-rep": (2, "2024.1.1.0"),
    "Cuda_Gemm_Practice__gemm_v9.ncu-rep": (2, "2023.2.0.0"),
    "ESMM-Research__profile_output.ncu-rep": (4, "2023.1.1.0"),
    "RooflineAnalysis_On_NVIDIA_GPU__output0.ncu-rep": (2, "2024.2.1.0"),
    "accelsim-test__algo23_profile.ncu-rep": (1, "2025.2.1.0"),
    "alife_cuda__profile_output.ncu-rep": (143, "2023.3.1.0"),
    "cs599k__2025-04-21-vector-based.ncu-rep": (3, "2025.1.0.0"),
    "cs599k__2025-04-21-77_06-MT.ncu-rep": (3, "2025.1.0.0"),
    "cs599k__rms_norm_triton_looping.ncu-rep": (1, "2025.1.0.0"),
    "cs599k__silu-2025-04-18-v1.ncu-rep": (1, "2025.1.0.0"),
    "cs599k__silu-2025-04-19-v1.ncu-rep": (3, "2025.1.0.0"),
    "cutlass-panjd123__4f3955ed3c_report.ncu-rep": (3, "2024.1.1.0"),
    "cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep": (2, "2024.1.1.0"),
    "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep": (
        4,
        None,
    ),  # ncu 2020.1 stores no version text
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep": (4, None),
    "nsight-training__manual_nvtx.ncu-rep": (3, "2022.3.0.0"),
    "ai-infra-notes__leetgpu_matmul_full.ncu-rep": (1, "2026.2.1.0"),
    "KernelBench__matmul_kernel.ncu-rep": (1, "2023.2.2.0"),
    "self-join-MiSTIC__ilpProf.ncu-rep": (1, "2021.2.2.0"),
}


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_report_reads_with_its_launches(path: Path) -> None:
    launches, version = PROVENANCE[path.name]
    k = kernels_of(path.name)
    assert list(k["launch_id"]) == list(range(launches))
    assert k["kernel_name"].notna().all() and (k["kernel_name"].str.len() > 0).all()
    assert k["ncu_version"].isna().all() if version is None else (k["ncu_version"] == version).all()
    # time is never silently zero
    assert not (k["time_s"] == 0).any()


def test_sha_of_the_report_read() -> None:
    data = shared("cutlass-panjd123__4f3955ed3c_report.ncu-rep").read_bytes()
    assert hashlib.sha256(data).hexdigest()[:16] == "4a4d2797e01fc13c"


def test_metadata_of_a_launch() -> None:
    k = kernels_of("cutlass-panjd123__4f3955ed3c_report.ncu-rep").iloc[0]
    assert k["device_name"] == "NVIDIA A100 80GB PCIe" and k["cc"] == "8.0"
    assert k["grid"] == "(24, 4, 1)" and k["block"] == "(128, 1, 1)"
    assert k["kernel_demangled"].startswith("void cutlass::Kernel<cutlass::gemm::kernel::Gemm<")


def test_grid_matches_ncu_launch_metrics() -> None:
    for row, m in zip(
        kernels_of("ESMM-Research__profile_output.ncu-rep").itertuples(),
        ncu_metrics("ESMM-Research__profile_output.ncu-rep"),
    ):
        dims = tuple(int(x) for x in re.findall(r"\d+", row.grid))
        assert dims[0] * dims[1] * dims[2] == m["launch__grid_size"]


def test_nvtx_ranges() -> None:
    k = kernels_of("nsight-training__manual_nvtx.ncu-rep")
    assert list(k["nvtx_range"]) == [
        "run_test > init_data",
        "run_test > daxpy",
        "run_test > check_results",
    ]


def test_failed_measurement_is_kept_flagged_and_not_plotted() -> None:
    import ncuroof

    k = kernels_of("BBAStar__profile_output.ncu-rep")
    failed = k[k["kernel_name"] == "biAStarMultipleBucketsSingleKernel"].iloc[0]
    assert failed["status"] == "failed_measurement" and failed["bound"] == "unknown"
    assert "measurement failed" in cell_text("notes", failed["notes"])
    assert failed["launch_id"] not in set(ncuroof.points(k)["launch_id"])


def test_default_set_report_lists_kernels_and_what_is_missing() -> None:
    k = kernels_of("alife_cuda__profile_output.ncu-rep")
    assert (k["status"] == "no_roofline_metrics").all()
    assert k["time_s"].notna().all()
    assert all("ncu --set roofline" in cell_text("notes", n) for n in k["notes"])
    assert k["sm_throughput_frac"].between(0, 1).all()


def test_cli_end_to_end(tmp_path: Path) -> None:
    report = shared("ESMM-Research__profile_output.ncu-rep")
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "ncuroof", "analyze", str(report), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "one_blocktiling" in proc.stdout and "Top kernels by GPU time" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "kernels.csv",
        "launches.csv",
        "ncuroof-manifest.json",
        "points.csv",
        "roofline.html",
    ]
    html = (out / "roofline.html").read_text()
    # plotly.js embedded, no external script: the page opens offline
    assert "Plotly.newPlot" in html and re.search(r"<script[^>]*\ssrc=[\"']https?://", html) is None
    import pandas as pd

    pts = pd.read_csv(out / "points.csv")
    assert len(pts) == 4 * 3  # 4 SGEMM launches x FP32 x (L1, L2, DRAM)
    assert set(pd.read_csv(out / "launches.csv")["launch_id"]) == {0, 1, 2, 3}


def test_cli_default_set_report_exits_0_and_says_how_to_collect(tmp_path: Path) -> None:
    report = shared("alife_cuda__profile_output.ncu-rep")
    proc = subprocess.run(
        [sys.executable, "-m", "ncuroof", "analyze", str(report), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0
    assert "ncu --set roofline" in proc.stdout
