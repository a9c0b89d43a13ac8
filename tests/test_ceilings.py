"""Datasheet and user roofs: the catalog agrees with ncu's own peak_sustained, roofs the input
lacks are filled and labelled, user roofs replace all others."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import kernels_of, needs_ncu_report, shared

from ncuroof.schema import cell_text


@pytest.fixture(scope="module")
def gpus():
    from ncuroof import catalog

    return catalog.load_gpus()


# Reports whose GPU is in metrics/gpus.toml and which carry ncu's peak_sustained roofs.
MATCHED = {
    "Cuda_Gemm_Practice__gemm_v9.ncu-rep": "rtx-3080",
    "ESMM-Research__profile_output.ncu-rep": "a10g",
    "cs599k__2025-04-21-vector-based.ncu-rep": "h100-pcie",
    "cutlass-panjd123__4f3955ed3c_report.ncu-rep": "a100-80gb-pcie",
}


@needs_ncu_report
@pytest.mark.parametrize("name,gpu_id", sorted(MATCHED.items()))
def test_datasheet_agrees_with_ncu_peak_sustained(name: str, gpu_id: str, gpus) -> None:
    """Independent check of the datasheet numbers: per clock cycle, the datasheet FP64/FP32 peak
    at the boost clock equals ncu's 2 x dfma/ffma.peak_sustained within 2 %, and the DRAM
    datasheet bandwidth equals ncu's dram peak within 5 % (HBM/GDDR clocks do not follow --clock-control)."""
    k = kernels_of(name)
    spec = gpus.by_device(k.loc[0, "device_name"])
    assert spec is not None and spec.id == gpu_id
    row = k.loc[0]
    for p in ("fp64", "fp32"):
        per_cycle_report = row[f"peak_{p}_flop_per_s"] / row["sm_clock_hz"]
        per_cycle_datasheet = spec.flop_per_s[p] / spec.boost_hz
        assert per_cycle_datasheet == pytest.approx(per_cycle_report, rel=0.02), p
    assert spec.dram_bytes_per_s == pytest.approx(row["peak_dram_bytes_per_s"], rel=0.05)
    # Report roofs are kept, never replaced by the datasheet (which may fill roofs the report lacks).
    from ncuroof.schema import parse_sources

    sources = parse_sources(row["ceiling_sources"])
    assert sources["fp32"] == sources["fp64"] == sources["dram"] == "report"


def test_every_entry_matches_its_own_name_and_device_names_pick_the_right_variant(gpus) -> None:
    names = {
        "Tesla V100-SXM2-16GB": "v100-sxm2", "Tesla V100-PCIE-32GB": "v100-pcie", "NVIDIA A100-SXM4-40GB": "a100-40gb",
        "NVIDIA A100-SXM4-80GB": "a100-80gb-sxm", "NVIDIA A100 80GB PCIe": "a100-80gb-pcie", "NVIDIA A10G": "a10g",
        "NVIDIA A10": "a10", "NVIDIA A40": "a40", "NVIDIA L4": "l4", "NVIDIA L40S": "l40s", "Tesla T4": "t4",
        "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti", "NVIDIA GeForce RTX 3080": "rtx-3080", "NVIDIA GeForce RTX 3090": "rtx-3090",
        "NVIDIA GeForce RTX 4090": "rtx-4090", "NVIDIA GeForce RTX 5090": "rtx-5090", "NVIDIA H100 80GB HBM3": "h100-sxm",
        "NVIDIA H100 PCIe": "h100-pcie", "NVIDIA H200": "h200", "NVIDIA GH200 480GB": "gh200", "NVIDIA B200": "b200",
    }
    for device, gpu_id in names.items():
        assert gpus.by_device(device).id == gpu_id, device
    for device in ("NVIDIA GeForce RTX 3080 Ti", "NVIDIA GeForce RTX 3060 Laptop GPU", "NVIDIA GeForce GTX 1660 SUPER"):
        assert gpus.by_device(device) is None, device
    for g in gpus.gpus:
        assert gpus.by_name(g.id) is g and gpus.by_name(g.name.upper()) is g
        # Dense tensor >= non-tensor FP16 where both exist; FP64 <= FP32.
        assert g.flop_per_s["fp64"] <= g.flop_per_s["fp32"]
        if "fp16" in g.tensor and "fp16" in g.flop_per_s:
            assert g.tensor["fp16"] >= g.flop_per_s["fp16"]


def _kernels(**over) -> pd.DataFrame:
    base = {"device_name": "NVIDIA A10G", "cc": "8.6", "sm_clock_hz": 1.3e9, "status": "ok", "notes": "",
            **{f"peak_{p}_flop_per_s": np.nan for p in ("fp64", "fp32", "fp16")},
            **{f"peak_{lv}_bytes_per_s": np.nan for lv in ("l1", "l2", "dram")},
            "peak_tensor_src_fp16_dst_fp32_flop_per_s": np.nan, "ceiling_sources": ""}
    base.update(over)
    return pd.DataFrame([base])


def test_fill_from_datasheet_keeps_report_roofs_and_labels_each(gpus) -> None:
    from ncuroof.ceilings import fill_ceilings
    from ncuroof.schema import parse_sources

    k = fill_ceilings(_kernels(peak_fp32_flop_per_s=27e12, ceiling_sources="fp32:report"), gpus)
    row = k.loc[0]
    assert row["peak_fp32_flop_per_s"] == 27e12  # the report's, untouched
    assert row["peak_fp64_flop_per_s"] == pytest.approx(0.547e12) and row["peak_dram_bytes_per_s"] == 600e9
    assert row["peak_tensor_src_fp16_dst_fp32_flop_per_s"] == 70e12
    assert np.isnan(row["peak_l2_bytes_per_s"])  # no datasheet number for L2 bandwidth
    assert parse_sources(row["ceiling_sources"]) == {"fp32": "report", "fp64": "datasheet", "fp16": "datasheet",
                                                     "dram": "datasheet", "tensor_src_fp16_dst_fp32": "datasheet"}
    assert row["peak_source"] == "report+datasheet" and row["datasheet_gpu"] == "a10g"
    assert "1710 MHz" in cell_text("notes", row["notes"]) and "1300 MHz, 76 %" in cell_text("notes", row["notes"])


def test_gpu_option_and_user_roofs(gpus) -> None:
    from ncuroof.ceilings import fill_ceilings
    from ncuroof.errors import InputError

    k = fill_ceilings(_kernels(device_name=None), gpus)
    assert np.isnan(k.loc[0, "peak_fp32_flop_per_s"])
    assert "pass --gpu NAME (CC 8.6: a10g, a10, a40, rtx-3080, rtx-3090)" in cell_text("notes", k.loc[0, "notes"])
    k = fill_ceilings(_kernels(device_name=None), gpus, gpu="A40")
    assert k.loc[0, "peak_fp32_flop_per_s"] == 37.4e12 and k.loc[0, "datasheet_gpu"] == "a40"
    k = fill_ceilings(_kernels(peak_dram_bytes_per_s=1e12, ceiling_sources="dram:report"), gpus,
                      peak_flops={"*": 5e12}, peak_bandwidth={"dram": 2e11})
    assert k.loc[0, "peak_fp64_flop_per_s"] == k.loc[0, "peak_tensor_src_fp16_dst_fp32_flop_per_s"] == 5e12
    assert k.loc[0, "peak_dram_bytes_per_s"] == 2e11 and "dram:user" in k.loc[0, "ceiling_sources"]
    with pytest.raises(InputError, match="not in the datasheet catalog"):
        fill_ceilings(_kernels(), gpus, gpu="Voodoo 3")
    with pytest.raises(ValueError, match="unknown roof names"):
        fill_ceilings(_kernels(), gpus, peak_bandwidth={"hbm": 1.0})


@pytest.mark.parametrize("text,name,value", [("19.5T", "*", 19.5e12), ("fp64=9.7e12", "fp64", 9.7e12), ("FP32 = 900G", "fp32", 900e9)])
def test_parse_peak(text: str, name: str, value: float) -> None:
    from ncuroof.ceilings import parse_peak

    assert parse_peak(text, ("fp64", "fp32", "fp16", "tensor"), "*") == (name, pytest.approx(value))


@pytest.mark.parametrize("text", ["fp128=1T", "-5", "fast", "1X"])
def test_parse_peak_refuses(text: str) -> None:
    from ncuroof.ceilings import parse_peak

    with pytest.raises(ValueError):
        parse_peak(text, ("fp64", "fp32", "fp16", "tensor"), "*")


def test_cli_peaks_end_to_end(tmp_path) -> None:
    from test_bad_input import run

    csv = shared("ESMM-Research__metrics.csv")
    proc = run("analyze", str(csv), "--gpu", "a10g", "--peak-bandwidth", "500G", "-o", str(tmp_path / "o"))
    assert proc.returncode == 0, proc.stderr
    assert "datasheet (a10g)" in proc.stdout and "user" in proc.stdout
    k = pd.read_csv(tmp_path / "o" / "kernels.csv")
    assert (k["peak_dram_bytes_per_s"] == 500e9).all() and (k["peak_fp32_flop_per_s"] == 35e12).all()
    pts = pd.read_csv(tmp_path / "o" / "points.csv")
    assert set(pts["peak_bytes_source"]) == {"user"} and set(pts["peak_flop_source"]) == {"datasheet"}
    bad = run("analyze", str(csv), "--peak-flops", "fp7=1T", "-o", str(tmp_path / "p"))
    assert bad.returncode == 2 and "fp7" in bad.stderr and not (tmp_path / "p").exists()
