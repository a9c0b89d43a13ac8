"""Values known independently of ncu's formulas: GEMM shapes from the reports' own command lines
and source (../shared/fixtures/PROVENANCE.md)."""

from __future__ import annotations

import numpy as np
import pytest

from ncuroof.schema import cell_text
from tests.helpers.reports import kernels_of, needs_ncu_report

pytestmark = [needs_ncu_report]


def test_hand_written_sgemm_fp32_flops_equal_2mnk() -> None:
    # Cuda_Gemm_Practice: M=1312 N=110 K=3122 from the report's command line.
    k = kernels_of("Cuda_Gemm_Practice__gemm_v9.ncu-rep")
    row = k[k["kernel_name"] == "gemm"].iloc[0]
    assert row["fp32_flop"] == pytest.approx(2 * 1312 * 110 * 3122, rel=1e-3)
    # the full set stores per-cycle rates only; the opcode table gives the same FP32 FLOPs (fp16
    # comes from it alone)
    assert row["flop_source"].split("+")[0] == "rate x time"
    assert "fp32: rate x time = sass_thread_opcodes" in row["evidence_sources"]


@pytest.mark.parametrize(
    "launch, ops",
    [(0, 2 * 3072 * 384 * 384), (1, 2 * 3072 * 384 * 384), (2, 2 * 2 * 3072 * 384 * 384)],
)
def test_cutlass_imma_tensor_ops_equal_2mnk(launch: int, ops: int) -> None:
    # 110,592 IMMA.16832 per 3072x384x384 GEMM x 8192 ops each; launch 2 fuses two GEMMs.
    k = kernels_of("cutlass-panjd123__4f3955ed3c_report.ncu-rep")
    row = k[k["launch_id"] == launch].iloc[0]
    assert row["tensor_flop"] == ops
    assert row["tensor_source"] == "sass_opcodes"
    assert row["tensor_sass_imma_flop"] == ops


def test_cutlass_s8_gemm_and_cuda_core_reference() -> None:
    k = kernels_of("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep").set_index("launch_id")
    assert k.loc[0, "tensor_flop"] == 2 * 384**3  # 13,824 x IMMA.16832
    # ReferenceGemm runs HFMA2.MMA, an FMA-pipe instruction, not tensor-core work.
    assert k.loc[1, "tensor_flop"] == 0
    assert k.loc[1, "fp32_flop"] == pytest.approx(2 * 384**3, rel=1e-3)


def test_sass_estimate_points_are_flagged_and_take_the_datasheet_roof() -> None:
    import ncuroof

    pts = ncuroof.points(kernels_of("cutlass-panjd123__4f3955ed3c_report.ncu-rep"))
    tensor = pts[pts["precision"] == "tensor:sass_imma"]
    assert len(tensor) == 3 * 3  # three launches x (L1, L2, DRAM)
    assert tensor["estimated"].all()
    # The report holds no tensor roof; the A100 80GB PCIe datasheet gives 624 dense INT8 TOP/s at
    # its 1410 MHz boost, labelled as such and scaled to the SM clock ncu measured (about 1030 MHz
    # under --clock-control base), while the bandwidth roofs stay the report's.
    clock = tensor["launch_id"].map(
        kernels_of("cutlass-panjd123__4f3955ed3c_report.ncu-rep").set_index("launch_id")[
            "sm_clock_hz"
        ]
    )
    assert (clock < 1410e6).all()
    assert np.allclose(tensor["peak_flop_per_s"], 624e12 * clock / 1410e6, rtol=1e-12)
    assert (tensor["peak_flop_source"] == "datasheet").all()
    assert (tensor["peak_bytes_source"] == "report").all()


def test_silu_is_memory_bound_near_dram_roof() -> None:
    # cs599k "vector-based" SiLU on H100 PCIe: 65,536 blocks x 256 threads, one float4 each,
    # so n = 2^26 floats read and written once.
    k = kernels_of("cs599k__2025-04-21-vector-based.ncu-rep")
    assert (k["bound"] == "memory").all()
    n = 65536 * 256 * 4
    # DRAM traffic = 4 B read + 4 B written per element, within 5 % (write-back leaves part of
    # the output in L2 at kernel end).
    assert k["dram_bytes"].to_numpy() == pytest.approx([8 * n] * 3, rel=0.05)
    assert all("FP32 at DRAM" in cell_text("notes", note) for note in k["notes"])
