"""Datasheet and user roofs: the catalog agrees with ncu's own peak_sustained, roofs the input
lacks are filled and labelled, user roofs replace all others."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ncuroof.schema import cell_text, from_text, parse_sources
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPORTS, kernels_of, needs_ncu_report, shared


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
    datasheet bandwidth equals ncu's dram peak within 5 % (HBM/GDDR clocks do not
    follow --clock-control).
    """
    k = kernels_of(name)
    spec = gpus.by_device(k.loc[0, "device_name"])
    assert spec is not None and spec.id == gpu_id
    row = k.loc[0]
    for p in ("fp64", "fp32"):
        per_cycle_report = row[f"peak_{p}_flop_per_s"] / row["sm_clock_hz"]
        per_cycle_datasheet = spec.flop_per_s[p] / spec.boost_hz
        assert per_cycle_datasheet == pytest.approx(per_cycle_report, rel=0.02), p
    assert spec.dram_bytes_per_s == pytest.approx(row["peak_dram_bytes_per_s"], rel=0.05)
    # Report roofs are kept, never replaced by the datasheet (which may fill
    # roofs the report lacks).
    sources = parse_sources(row["ceiling_sources"])
    assert sources["fp32"] == sources["fp64"] == sources["dram"] == "report"


def test_every_entry_matches_its_own_name_and_device_names_pick_the_right_variant(gpus) -> None:
    names = {
        "Tesla V100-SXM2-16GB": "v100-sxm2",
        "Tesla V100-PCIE-32GB": "v100-pcie",
        "NVIDIA A100-SXM4-40GB": "a100-40gb",
        "NVIDIA A100-SXM4-80GB": "a100-80gb-sxm",
        "NVIDIA A100 80GB PCIe": "a100-80gb-pcie",
        "NVIDIA A10G": "a10g",
        "NVIDIA A10": "a10",
        "NVIDIA A40": "a40",
        "NVIDIA L4": "l4",
        "NVIDIA L40S": "l40s",
        "Tesla T4": "t4",
        "NVIDIA GeForce RTX 2080 Ti": "rtx-2080-ti",
        "NVIDIA GeForce RTX 3080": "rtx-3080",
        "NVIDIA GeForce RTX 3090": "rtx-3090",
        "NVIDIA GeForce RTX 4090": "rtx-4090",
        "NVIDIA GeForce RTX 5090": "rtx-5090",
        "NVIDIA H100 80GB HBM3": "h100-sxm",
        "NVIDIA H100 PCIe": "h100-pcie",
        "NVIDIA H200": "h200",
        "NVIDIA GH200 480GB": "gh200",
        "NVIDIA B200": "b200",
    }
    for device, gpu_id in names.items():
        assert gpus.by_device(device).id == gpu_id, device
    for device in (
        "NVIDIA GeForce RTX 3080 Ti",
        "NVIDIA GeForce RTX 3060 Laptop GPU",
        "NVIDIA GeForce GTX 1660 SUPER",
    ):
        assert gpus.by_device(device) is None, device
    for g in gpus.gpus:
        assert gpus.by_name(g.id) is g and gpus.by_name(g.name.upper()) is g
        # Dense tensor >= non-tensor FP16 where both exist; FP64 <= FP32.
        assert g.flop_per_s["fp64"] <= g.flop_per_s["fp32"]
        if "fp16" in g.tensor and "fp16" in g.flop_per_s:
            assert g.tensor["fp16"] >= g.flop_per_s["fp16"]


def _kernels(**over) -> pd.DataFrame:
    base = {
        "device_name": "NVIDIA A10G",
        "cc": "8.6",
        "sm_clock_hz": 1.3e9,
        "status": "ok",
        "notes": "",
        **{f"peak_{p}_flop_per_s": np.nan for p in ("fp64", "fp32", "fp16")},
        **{f"peak_{lv}_bytes_per_s": np.nan for lv in ("l1", "l2", "dram")},
        "peak_tensor_src_fp16_dst_fp32_flop_per_s": np.nan,
        "ceiling_sources": "",
    }
    base.update(over)
    return from_text(pd.DataFrame([base]))  # roof sources and notes as data, as in a table


@pytest.mark.parametrize(
    "device,entry",
    [
        # device names as ncu wrote them in the shared reports (PROVENANCE.md), entry by hand
        ("NVIDIA GeForce RTX 2070 SUPER", "rtx-2070-super"),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("Tesla V100-SXM2-16GB", "v100-sxm2"),
    ],
)
def test_a_device_name_gets_its_datasheet_dram_roof(gpus, device: str, entry: str) -> None:
    """A launch naming only its device gets that GPU's datasheet DRAM roof (runs without
    ../shared; the RTX 2070 SUPER case was tested on a shared report alone): the entry matched,
    and its ``dram_gbps`` in metrics/gpus.toml, read here (448 GB/s: 14 Gbit/s x 256 bit)."""
    from ncuroof.model.roofs import fill_ceilings
    from tests.helpers.reports import datasheet

    k = fill_ceilings(_kernels(device_name=device, cc=datasheet(entry)["cc"]), gpus)
    assert k.loc[0, "datasheet_gpu"] == entry
    assert k.loc[0, "peak_dram_bytes_per_s"] == datasheet(entry)["dram_gbps"] * 1e9


def test_fill_from_datasheet_keeps_report_roofs_and_labels_each(gpus) -> None:
    from ncuroof.model.roofs import fill_ceilings
    from ncuroof.schema import parse_sources

    k = fill_ceilings(_kernels(peak_fp32_flop_per_s=27e12, ceiling_sources="fp32:report"), gpus)
    row = k.loc[0]
    assert row["peak_fp32_flop_per_s"] == 27e12  # the report's, untouched
    # one clock: datasheet compute roofs (A10G, boost 1710 MHz) at the 1300 MHz this launch ran at;
    # DRAM at its datasheet bandwidth
    assert (
        row["peak_fp64_flop_per_s"] == pytest.approx(0.547e12 * 1300 / 1710)
        and row["peak_dram_bytes_per_s"] == 600e9
    )
    assert row["peak_tensor_src_fp16_dst_fp32_flop_per_s"] == pytest.approx(70e12 * 1300 / 1710)
    assert np.isnan(row["peak_l2_bytes_per_s"])  # no datasheet number for L2 bandwidth
    assert parse_sources(row["ceiling_sources"]) == {
        "fp32": "report",
        "fp64": "datasheet",
        "fp16": "datasheet",
        "dram": "datasheet",
        "tensor_src_fp16_dst_fp32": "datasheet",
    }
    assert row["peak_source"] == "report+datasheet" and row["datasheet_gpu"] == "a10g"
    notes = cell_text("notes", row["notes"])
    assert (
        "1710 MHz" in notes
        and "1.3 GHz = 76% of boost" in notes
        and "fp64 (datasheet 547 GFLOP/s at boost)" in notes
    )


def test_gpu_option_and_user_roofs(gpus) -> None:
    from ncuroof.errors import InputError
    from ncuroof.model.roofs import fill_ceilings

    k = fill_ceilings(_kernels(device_name=None), gpus)
    assert np.isnan(k.loc[0, "peak_fp32_flop_per_s"])
    same_cc = ", ".join(g.id for g in gpus.gpus if g.cc == "8.6")  # in file order
    assert same_cc.startswith("a10g, a10, a40, rtx-3080, rtx-3090")
    assert f"pass --gpu NAME (CC 8.6: {same_cc})" in cell_text("notes", k.loc[0, "notes"])
    k = fill_ceilings(_kernels(device_name=None), gpus, gpu="A40")
    a40 = gpus.by_name("a40")
    assert (
        k.loc[0, "peak_fp32_flop_per_s"] == pytest.approx(37.4e12 * 1.3e9 / a40.boost_hz)
        and k.loc[0, "datasheet_gpu"] == "a40"
    )
    k = fill_ceilings(
        _kernels(peak_dram_bytes_per_s=1e12, ceiling_sources="dram:report"),
        gpus,
        peak_flops={"*": 5e12},
        peak_bandwidth={"dram": 2e11},
    )
    assert (
        k.loc[0, "peak_fp64_flop_per_s"]
        == k.loc[0, "peak_tensor_src_fp16_dst_fp32_flop_per_s"]
        == 5e12
    )
    assert (
        k.loc[0, "peak_dram_bytes_per_s"] == 2e11
        and ("dram", "user") in k.loc[0, "ceiling_sources"]
    )
    with pytest.raises(InputError) as err:
        fill_ceilings(_kernels(), gpus, gpu="Voodoo 3")
    assert_one_line_error(err, None, "Voodoo 3", "datasheet")
    with pytest.raises(ValueError) as err:
        fill_ceilings(_kernels(), gpus, peak_bandwidth={"hbm": 1.0})
    assert_one_line_error(err, None, "hbm")


@pytest.mark.parametrize(
    "text,name,value",
    [("19.5T", "*", 19.5e12), ("fp64=9.7e12", "fp64", 9.7e12), ("FP32 = 900G", "fp32", 900e9)],
)
def test_parse_peak(text: str, name: str, value: float) -> None:
    from ncuroof.model.roofs import parse_peak

    assert parse_peak(text, ("fp64", "fp32", "fp16", "tensor"), "*") == (name, pytest.approx(value))


@pytest.mark.parametrize("text", ["fp128=1T", "-5", "fast", "1X"])
def test_parse_peak_refuses(text: str) -> None:
    from ncuroof.model.roofs import parse_peak

    with pytest.raises(ValueError):
        parse_peak(text, ("fp64", "fp32", "fp16", "tensor"), "*")


def test_cli_peaks_end_to_end(tmp_path) -> None:
    from tests.helpers.cli import run

    csv = shared("ESMM-Research__metrics.csv")
    proc = run(
        "analyze", str(csv), "--gpu", "a10g", "--peak-bandwidth", "500G", "-o", str(tmp_path / "o")
    )
    assert proc.returncode == 0, proc.stderr
    assert "datasheet (a10g)" in proc.stdout and "user" in proc.stdout
    k = pd.read_csv(tmp_path / "o" / "launches.csv")
    assert (k["peak_dram_bytes_per_s"] == 500e9).all() and (
        k["peak_fp32_flop_per_s"] == 35e12
    ).all()
    pts = pd.read_csv(tmp_path / "o" / "points.csv")
    assert set(pts["peak_bytes_source"]) == {"user"} and set(pts["peak_flop_source"]) == {
        "datasheet"
    }
    bad = run("analyze", str(csv), "--peak-flops", "fp7=1T", "-o", str(tmp_path / "p"))
    # click's usage error (several lines), not ncuroof's one-line error
    assert bad.returncode == 2 and "fp7" in bad.stderr and not (tmp_path / "p").exists()


def test_achievable_roofs_from_measurements_and_the_user(gpus) -> None:
    import dataclasses

    from ncuroof.catalog import Measurement
    from ncuroof.model.roofs import fill_achievable, fill_ceilings
    from ncuroof.schema import parse_sources

    # A10G has no published measurement: nothing achievable unless the user gives it.
    k = fill_ceilings(_kernels(), gpus)
    assert (
        np.isnan(k.loc[0, "achievable_dram_bytes_per_s"]) and k.loc[0, "achievable_sources"] == ()
    )
    # A measured tensor roof reaches the datapaths whose datasheet key it names.
    spec = dataclasses.replace(
        gpus.by_name("a10g"),
        measured=(
            Measurement("tensor_fp16_fp32acc", 56e12, "a GEMM", "cuBLAS", "2025", "somewhere", "M"),
            Measurement("dram", 500e9, "copy", "STREAM", "2025", "somewhere", "M"),
            Measurement("dram", 520e9, "read", "STREAM", "2025", "x", "M"),
        ),
    )
    k = fill_achievable(_kernels(), gpus, {"NVIDIA A10G": spec})
    row = k.loc[0]
    assert (
        row["achievable_tensor_src_fp16_dst_fp32_flop_per_s"] == 56e12
        and row["achievable_dram_bytes_per_s"] == 520e9
    )  # the highest
    assert parse_sources(row["achievable_sources"]) == {
        "tensor_src_fp16_dst_fp32": "measured",
        "dram": "measured",
    }
    assert "achievable DRAM roof 520 GB/s: read (x, confidence M)" in cell_text(
        "notes", row["notes"]
    )
    assert "above this launch's peak roof" not in cell_text("notes", row["notes"])
    low = fill_achievable(_kernels(peak_dram_bytes_per_s=480e9), gpus, {"NVIDIA A10G": spec}).loc[0]
    assert (
        "520 GB/s: read (x, confidence M): above this launch's peak roof, which is at the clock ncu"
        " measured" in cell_text("notes", low["notes"])
    )
    # User values replace the measurements; '*' is every precision and the tensor datapaths.
    k = fill_achievable(
        _kernels(),
        gpus,
        {"NVIDIA A10G": spec},
        achievable_flops={"*": 20e12, "fp64": 0.5e12},
        achievable_bandwidth={"dram": 450e9, "l2": 2e12},
    )
    row = k.loc[0]
    assert (
        row["achievable_fp64_flop_per_s"],
        row["achievable_fp32_flop_per_s"],
        row["achievable_tensor_src_fp16_dst_fp32_flop_per_s"],
        row["achievable_dram_bytes_per_s"],
        row["achievable_l2_bytes_per_s"],
    ) == (0.5e12, 20e12, 20e12, 450e9, 2e12)
    assert set(parse_sources(row["achievable_sources"]).values()) == {"user"}
    assert np.isnan(row["peak_dram_bytes_per_s"])  # peaks untouched
    with pytest.raises(ValueError, match="hbm"):  # the name refused, not the sentence
        fill_achievable(_kernels(), gpus, {}, achievable_bandwidth={"hbm": 1e12})


CUTLASS = "cutlass-panjd123__4f3955ed3c_report.ncu-rep"
IMMA_PER_GEMM = 110_592  # IMMA.16832 instructions per 3072x384x384 GEMM (PROVENANCE.md)


def _hmma_analysis(gpu: str | None = None, opcode: str = "HMMA.16816", **roofs):
    """The CUTLASS IMMA report with its opcode counters relabelled (default HMMA.16816 without type
    modifiers: 16x8x16, 4096 ops each, the family path), through the pipeline: the HMMA case of
    issue 21 on real counters.
    """
    from ncuroof import catalog, parser
    from ncuroof.model import classify, formulas
    from ncuroof.model.roofs import fill_ceilings

    cat, gpus = catalog.load(), catalog.load_gpus()
    raw = parser.read(shared(CUTLASS), cat)
    prefix = "sass__inst_executed_per_opcode_with_modifier_all["
    imma = [c for c in raw.columns if c.startswith(prefix + "IMMA.16832")]
    assert imma, "the report's IMMA counters"
    raw = raw.rename(columns={c: prefix + opcode + "]" for c in imma})
    k = fill_ceilings(formulas.compute_launches(raw, cat), gpus, gpu=gpu, catalog=cat, **roofs)
    pts = formulas.compute_points(k)
    return classify.classify(k, pts, cat), pts, gpus


@needs_ncu_report
def test_sass_hmma_work_gets_the_datasheet_dense_fp16_roof() -> None:
    k, pts, gpus = _hmma_analysis()
    row = k.set_index("launch_id").loc[0]
    assert row["tensor_sass_hmma_flop"] == IMMA_PER_GEMM * 2 * 16 * 8 * 16
    # A100 80GB PCIe datasheet: 312 TFLOP/s dense FP16 (the most generous type an
    # HMMA allows), labelled.
    assert gpus.by_device(row["device_name"]).tensor["fp16"] == 312e12
    # one clock: the datasheet roof is at boost, scaled to the SM clock ncu measured
    # like the report's roofs
    peak = 312e12 * row["sm_clock_hz"] / gpus.by_device(row["device_name"]).boost_hz
    assert row["sm_clock_hz"] < gpus.by_device(row["device_name"]).boost_hz and row[
        "peak_tensor_sass_hmma_flop_per_s"
    ] == pytest.approx(peak)
    assert ("tensor_sass_hmma", "datasheet") in row["ceiling_sources"]
    notes = cell_text("notes", row["notes"])
    assert (
        "tensor sass_hmma roof = datasheet FP16 312 TFLOP/s" in notes and "(confidence L)" in notes
    )
    # The binding point by hand: tensor work is the main precision; at each level the attainable
    # roof is min(312e12, AI x the report's bandwidth roof); the lowest binds, and the fraction is
    # achieved / that roof.
    fps = row["tensor_sass_hmma_flop"] / row["time_s"]
    roofs = {
        lv: min(peak, fps / row[f"{lv}_bytes_per_s"] * row[f"peak_{lv}_bytes_per_s"])
        for lv in ("l1", "l2", "dram")
    }
    level = min(roofs, key=roofs.get)
    mine = pts[(pts["launch_id"] == 0) & (pts["precision"] == "tensor:sass_hmma")].set_index(
        "level"
    )
    assert mine.loc[level, "roof_flop_per_s"] == pytest.approx(roofs[level], rel=1e-9)
    assert row["roof_fraction"] == pytest.approx(fps / roofs[level], rel=1e-6)
    # On an A40 (the report): 149.7 TFLOP/s; a user tensor roof overrides either.
    a40 = _hmma_analysis(gpu="a40")[0].set_index("launch_id").loc[0]
    assert a40["peak_tensor_sass_hmma_flop_per_s"] == pytest.approx(
        149.7e12 * a40["sm_clock_hz"] / gpus.by_name("a40").boost_hz
    )
    user = _hmma_analysis(peak_flops={"tensor": 100e12})[0].set_index("launch_id").loc[0]
    assert (
        user["peak_tensor_sass_hmma_flop_per_s"] == 100e12
        and ("tensor_sass_hmma", "user") in user["ceiling_sources"]
    )
    assert user["roof_fraction"] == pytest.approx(
        fps
        / min(
            100e12,
            *(
                fps / user[f"{lv}_bytes_per_s"] * user[f"peak_{lv}_bytes_per_s"]
                for lv in ("l1", "l2", "dram")
            ),
        ),
        rel=1e-6,
    )


@needs_ncu_report
@pytest.mark.parametrize(
    "opcode, path, key",
    [
        ("HGMMA.64x128x16.F32.BF16", "sass_hgmma_bf16", "bf16"),
        ("HGMMA.64x128x8.F32.TF32", "sass_hgmma_tf32", "tf32"),
        ("HGMMA.64x128x16.F32", "sass_hgmma_fp16_fp32acc", "fp16_fp32acc"),
        ("IGMMA.64x128x32.S8.S8", "sass_igmma_int8", "int8"),
    ],
)
def test_hopper_warpgroup_mma_gets_the_roof_of_its_source_type(
    opcode: str, path: str, key: str, gpus
) -> None:
    # The same counters as Hopper wgmma opcodes: each of a warpgroup's 4 warps executes the
    # instruction, so one counts 2*M*N*K/4 ops; the roof is the H100 SXM datasheet's for the
    # type the opcode names.
    k = _hmma_analysis(gpu="h100-sxm", opcode=opcode)[0].set_index("launch_id")
    m, n, kk = (int(x) for x in opcode.split(".")[1].split("x"))
    assert k.loc[0, f"tensor_{path}_flop"] == IMMA_PER_GEMM * 2 * m * n * kk / 4
    h100 = gpus.by_name("h100-sxm")
    assert k.loc[0, f"peak_tensor_{path}_flop_per_s"] == pytest.approx(
        h100.tensor[key] * k.loc[0, "sm_clock_hz"] / h100.boost_hz
    )
    assert np.isfinite(k.loc[0, "roof_fraction"])


@needs_ncu_report
@pytest.mark.parametrize(
    "opcode, path, key",
    [
        ("HMMA.16816.F32", "sass_hmma_fp16_fp32acc", "fp16_fp32acc"),
        ("HMMA.16816.F16", "sass_hmma_fp16", "fp16"),
        ("HMMA.16816.F32.BF16", "sass_hmma_bf16", "bf16"),
    ],
)
def test_hmma_accumulator_modifier_picks_the_datasheet_roof(
    opcode: str, path: str, key: str, gpus
) -> None:
    # On an RTX 3080 FP32 accumulation runs at half the FP16-accumulate rate (59.5 vs 119 TFLOP/s
    # dense): the opcode's .F32/.F16 modifier picks the roof instead of the most generous guess,
    # with no assumption noted.
    k = _hmma_analysis(gpu="rtx-3080", opcode=opcode)[0].set_index("launch_id")
    spec = gpus.by_name("rtx-3080")
    assert spec.tensor["fp16_fp32acc"] == 59.5e12 and spec.tensor["fp16"] == 119e12
    assert k.loc[0, f"tensor_{path}_flop"] == IMMA_PER_GEMM * 2 * 16 * 8 * 16
    assert k.loc[0, f"peak_tensor_{path}_flop_per_s"] == pytest.approx(
        spec.tensor[key] * k.loc[0, "sm_clock_hz"] / spec.boost_hz
    )
    assert "confidence L" not in cell_text("notes", k.loc[0, "notes"])


@needs_ncu_report
@pytest.mark.parametrize(
    "opcode, m, n, kk",
    [
        ("IMMA.16816.S8.S8", 16, 8, 16),
        ("IMMA.8816.S8.S8", 8, 8, 16),
        ("IMMA.16832.S8.S8", 16, 8, 32),
    ],
)
def test_imma_shape_modifier_counts_the_int8_work(
    opcode: str, m: int, n: int, kk: int, gpus
) -> None:
    # Issue 44 class 1: IMMA.16816 (m16n8k16, Ampere) was "no MMA shape known" and tensor work 0.
    # The report's IMMA counters relabelled: every IMMA shape is 2*M*N*K ops per warp instruction,
    # at the A40 INT8 datasheet roof.
    k = _hmma_analysis(gpu="a40", opcode=opcode)[0].set_index("launch_id")
    assert k.loc[0, "tensor_sass_imma_flop"] == IMMA_PER_GEMM * 2 * m * n * kk
    assert k.loc[0, "tensor_flop"] == IMMA_PER_GEMM * 2 * m * n * kk
    assert "no MMA shape known" not in cell_text("notes", k.loc[0, "notes"])
    a40 = gpus.by_name("a40")
    assert k.loc[0, "peak_tensor_sass_imma_flop_per_s"] == pytest.approx(
        a40.tensor["int8"] * k.loc[0, "sm_clock_hz"] / a40.boost_hz
    )


@needs_ncu_report
def test_a_kernel_whose_main_precision_has_no_roof_is_placed_at_another() -> None:
    # The RTX 5070 datasheet has no tensor rates: the HMMA work (the main precision) has no roof.
    # The fused launch 2 also runs FP32 work (its epilogue), which has the report's roof: it is
    # placed there instead of nowhere, and says so. Launches 0 and 1 have no other work:
    # nothing to place them at.
    k, pts, _ = _hmma_analysis(gpu="rtx-5070")
    k = k.set_index("launch_id")
    assert k["peak_tensor_sass_hmma_flop_per_s"].isna().all()
    assert k.loc[2, "tensor_sass_hmma_flop"] > 100 * k.loc[2, "fp32_flop"] > 0
    fp32 = pts[(pts["launch_id"] == 2) & (pts["precision"] == "fp32")]
    assert k.loc[2, "roof_fraction"] == fp32.loc[fp32["roof_flop_per_s"].idxmin(), "roof_fraction"]
    assert (
        "placed at FP32 on the roofline: no source has a roof for its main precision"
        " TENSOR:SASS_HMMA (pass --peak-flops tensor=VALUE)"
        in cell_text("notes", k.loc[2, "notes"])
    )
    assert k.loc[[0, 1], "roof_fraction"].isna().all()


@needs_ncu_report
@pytest.mark.parametrize(
    "names, bandwidth",
    [
        ([CUTLASS], 1800e9),  # A100 80GB PCIe: STREAM-like copy, metrics/gpus.toml [measured]
        (
            [
                "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep",
                "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
            ],
            820e9,
        ),  # V100
    ],
)
def test_published_achievable_bandwidth_on_real_reports(
    names: list[str], bandwidth: float, gpus
) -> None:
    from ncuroof.model import analysis

    a = analysis.build([shared(n) for n in names])
    spec = gpus.by_device(a.launches["device_name"].iat[0])
    assert spec.achievable()["dram"].value == bandwidth
    assert (a.launches["achievable_dram_bytes_per_s"] == bandwidth).all()
    assert all(c == (("dram", "measured"),) for c in a.launches["achievable_sources"])
    assert all(
        "achievable DRAM roof" in cell_text("notes", n) and "issue 21" in cell_text("notes", n)
        for n in a.launches["notes"]
    )
    # Peak roofs stay as they were (report or datasheet).
    assert (a.launches["peak_dram_bytes_per_s"] != bandwidth).all()
    _check_achievable_by_hand(a, bandwidth)


def _check_achievable_by_hand(a, bandwidth: float) -> None:
    """Every DRAM point: achievable roof = min(peak FLOP/s, AI x achievable B/s),
    fraction = achieved / that, from the launch table's own rates; and where DRAM binds, the
    launches and the summary carry the same.
    """
    k = a.launches.set_index(["source", "launch_id"])
    dram = a.points[a.points["level"] == "dram"]
    assert len(dram)
    for p in dram.itertuples():
        row = k.loc[(p.source, p.launch_id)]
        col = (
            f"{p.precision}_flop_per_s"
            if ":" not in p.precision
            else f"tensor_{p.precision.split(':')[1]}_flop_per_s"
        )
        ai = row[col] / row["dram_bytes_per_s"]
        roof = min(p.peak_flop_per_s, ai * bandwidth)
        assert p.achievable_roof_flop_per_s == pytest.approx(roof, rel=1e-9)
        assert p.achievable_roof_fraction == pytest.approx(row[col] / roof, rel=1e-9)
        assert p.achievable_bytes_source == "measured"
    bound = a.launches[
        a.launches["notes"].map(lambda n: "at DRAM (binding level)" in cell_text("notes", n))
    ]
    for r in bound.itertuples():
        if (
            r.bound == "memory"
        ):  # memory bound at DRAM: the fraction of the achievable roof is bandwidth over bandwidth
            assert r.achievable_roof_fraction == pytest.approx(
                r.dram_bytes_per_s / bandwidth, rel=1e-9
            )
    s = a.summary[a.summary["level"] == "dram"]
    assert (
        np.isfinite(s["achievable_roof_fraction"]).all()
        and (s["achievable_bytes_per_s"] == bandwidth).all()
    )
    assert (s["achievable_source"] == "dram:measured").all()


@needs_ncu_report
def test_user_achievable_roofs_on_an_h100_report(gpus) -> None:
    from ncuroof.model import analysis

    # H100 PCIe: the published memcpy measurement (1,860 GB/s, metrics/gpus.toml) is its achievable
    # DRAM roof; the user's --achievable-bandwidth replaces it, beside the report's peak.
    name = "cs599k__2025-04-21-vector-based.ncu-rep"
    plain = analysis.build([shared(name)])
    assert {
        q: m.value
        for q, m in gpus.by_device(plain.launches["device_name"].iat[0]).achievable().items()
    } == {"dram": 1.86e12}
    assert (plain.launches["achievable_dram_bytes_per_s"] == 1.86e12).all() and all(
        c == (("dram", "measured"),) for c in plain.launches["achievable_sources"]
    )
    assert plain.launches["achievable_roof_fraction"].to_numpy() == pytest.approx(
        (plain.launches["dram_bytes_per_s"] / 1.86e12).to_numpy(), rel=1e-9
    )
    opts = analysis.AnalysisOptions(
        achievable_bandwidth={"dram": 1.7e12}, achievable_flops={"fp32": 40e12}
    )
    a = analysis.build([shared(name)], opts)
    assert all(
        parse_sources(c) == {"fp32": "user", "dram": "user"}
        for c in a.launches["achievable_sources"]
    )
    assert (a.launches["peak_dram_bytes_per_s"] == plain.launches["peak_dram_bytes_per_s"]).all()
    k = a.launches
    assert (k["bound"] == "memory").all()  # the SiLU kernels bind at DRAM
    assert k["achievable_roof_fraction"].to_numpy() == pytest.approx(
        (k["dram_bytes_per_s"] / 1.7e12).to_numpy(), rel=1e-9
    )
    assert k["roof_fraction"].to_numpy() == pytest.approx(
        (k["dram_bytes_per_s"] / k["peak_dram_bytes_per_s"]).to_numpy(), rel=1e-9
    )
    frac = k["dram_bytes_per_s"].iat[0]
    assert (
        f"at {100 * frac / 1.7e12:.0f}% of achievable DRAM bandwidth"
        f" ({100 * frac / k['peak_dram_bytes_per_s'].iat[0]:.0f}% of the report's)"
        in k["evidence"].iat[0]
    )
    assert "of achievable DRAM bandwidth (" in a.summary["evidence"].iat[0]
    from ncuroof.render import provenance

    assert provenance.roof_sources(k).endswith(
        "achievable roofs beside them: dram, fp32 (--achievable-flops/--achievable-bandwidth)"
    )


def test_user_achievable_roofs_on_the_embedded_cutlass_report() -> None:
    """The user's achievable roofs through the whole analysis on a report the repository keeps
    (runs without ../shared): CUTLASS's ReferenceGemm on an A100 binds at L1 (memory-bound), so
    its achievable fraction is its L1 bandwidth over the user's 15 TB/s, beside the report's
    peak, which stays; every roof given is the user's, and the header line says so."""
    from ncuroof.model import analysis
    from ncuroof.render import provenance

    name = shared("cutlass-panjd123__4fb3ff3f6a_report-s8.ncu-rep")
    plain = analysis.build([name])
    roofs = {"dram": 1.7e12, "l2": 4e12, "l1": 15e12}
    a = analysis.build(
        [name],
        analysis.AnalysisOptions(achievable_bandwidth=roofs, achievable_flops={"fp32": 18e12}),
    )
    k = a.launches.set_index("kernel_name")
    for level in roofs:
        assert (k[f"achievable_{level}_bytes_per_s"] == roofs[level]).all()
        assert (
            a.launches[f"peak_{level}_bytes_per_s"] == plain.launches[f"peak_{level}_bytes_per_s"]
        ).all()
    assert all(
        parse_sources(c) == {"fp32": "user", "dram": "user", "l2": "user", "l1": "user"}
        for c in k["achievable_sources"]
    )
    ref = k.loc["ReferenceGemm_kernel"]
    assert ref["bound"] == "memory"
    assert ref["achievable_roof_fraction"] == pytest.approx(ref["l1_bytes_per_s"] / 15e12, rel=1e-9)
    assert ref["roof_fraction"] == pytest.approx(
        ref["l1_bytes_per_s"] / ref["peak_l1_bytes_per_s"], rel=1e-9
    )
    assert (
        f"at {100 * ref['l1_bytes_per_s'] / 15e12:.0f}% of achievable L1 bandwidth"
        f" ({100 * ref['roof_fraction']:.0f}% of the report's)" in ref["evidence"]
    )
    assert provenance.roof_sources(a.launches).endswith(
        "achievable roofs beside them: dram, fp32, l1, l2"
        " (--achievable-flops/--achievable-bandwidth)"
    )


@needs_ncu_report
@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.name)
def test_every_launch_with_work_has_a_roof_and_a_roof_fraction(path) -> None:
    from ncuroof.model import analysis

    a = analysis.build([path])
    work = a.points.groupby(["source", "launch_id"])["flop"].max()
    k = a.launches.set_index(["source", "launch_id"]).loc[work.index]
    assert np.isfinite(k["roof_fraction"]).all(), k.loc[
        ~np.isfinite(k["roof_fraction"]), "notes"
    ].tolist()
    bind = a.points.merge(k.reset_index()[["source", "launch_id"]])
    assert bind.groupby(["source", "launch_id"])["roof_flop_per_s"].min().map(np.isfinite).all()


def test_datasheet_notes_are_each_launch_s_own(gpus) -> None:
    """Launches taking turns between SM clocks and the roofs they lack: each launch's datasheet
    note names its own clock and roofs (the notes are made once per distinct combination)."""
    from ncuroof.model.roofs import fill_ceilings

    rows = [
        _kernels(sm_clock_hz=1.3e9),
        _kernels(sm_clock_hz=1.71e9, peak_fp32_flop_per_s=27e12, ceiling_sources="fp32:report"),
        _kernels(sm_clock_hz=1.3e9),
        _kernels(sm_clock_hz=np.nan, peak_dram_bytes_per_s=5e11, ceiling_sources="dram:report"),
        _kernels(sm_clock_hz=1.71e9, peak_fp32_flop_per_s=27e12, ceiling_sources="fp32:report"),
    ]
    k = fill_ceilings(pd.concat(rows, ignore_index=True), gpus)
    notes = [cell_text("notes", n) for n in k["notes"]]
    assert notes[0] == notes[2] and notes[1] == notes[4]
    assert "1.3 GHz = 76% of boost" in notes[0] and ", fp32 (datasheet" in notes[0]
    assert "1.71 GHz = 100% of boost" in notes[1] and ", fp32 (datasheet" not in notes[1]
    assert "no measured SM clock: at the boost clock" in notes[3] and ", dram," not in notes[3]
    assert all("fp64 (datasheet 547 GFLOP/s at boost)" in n for n in notes)
    assert list(k["datasheet_gpu"]) == ["a10g"] * 5


RTX5090 = "ai-infra-notes__leetgpu_matmul_full.ncu-rep"


def _rtx5090_with_bf16_work(sparse_ops: float):
    """The RTX 5090 report's own tensor metrics (its peaks: aggregate src_bf16_dst_fp32 174,080
    ops/cycle, op_hmma_src_bf16_dst_fp32_sparsity_off 87,040) with BF16 MMA work written in:
    41.2 % of the dense peak over the launch's duration, ``sparse_ops`` of it sparse."""
    from ncuroof import catalog, parser
    from ncuroof.model import formulas

    cat = catalog.load()
    raw = parser.read(shared(RTX5090), cat)
    pre = "sm__ops_path_tensor_"
    agg, off = pre + "src_bf16_dst_fp32", pre + "op_hmma_src_bf16_dst_fp32_sparsity_off"
    on = pre + "op_hmma_src_bf16_dst_fp32_sparsity_on"
    assert raw[agg + ".sum.peak_sustained"].iloc[0] == 174_080
    assert raw[off + ".sum.peak_sustained"].iloc[0] == 87_040
    cycles = (
        raw["gpu__time_duration.sum"].iloc[0]
        * 1e-9
        * raw["sm__cycles_elapsed.avg.per_second"].iloc[0]
    )
    ops = 0.412 * 87_040 * cycles
    raw[agg + ".sum"], raw[off + ".sum"], raw[on + ".sum"] = ops, ops - sparse_ops, sparse_ops
    for c in (agg, off, on):
        raw = raw.drop(columns=[c + ".sum.per_cycle_elapsed"], errors="ignore")
    k = formulas.compute_launches(raw, cat)
    return k, formulas.compute_points(k)


@needs_ncu_report
def test_dense_bf16_work_is_judged_against_the_dense_peak() -> None:
    # Issue 44 class 2: dense work (sparse ops 0) at the aggregate's sparsity-on peak showed
    # 20.6 % where ncu's own pct_of_peak said 41.2 %.
    k, pts = _rtx5090_with_bf16_work(0.0)
    clock = k.loc[0, "sm_clock_hz"]
    assert k.loc[0, "peak_tensor_src_bf16_dst_fp32_flop_per_s"] == pytest.approx(87_040 * clock)
    frac = k.loc[0, "tensor_src_bf16_dst_fp32_flop_per_s"] / (87_040 * clock)
    assert frac == pytest.approx(0.412, rel=1e-3)
    assert "dense peak" in cell_text("notes", k.loc[0, "notes"])
    # the same work is placed once: the aggregate, not again as its op_hmma child
    tensor = pts[pts["precision"].str.startswith("tensor")]
    assert set(tensor["precision"]) == {"tensor:src_bf16_dst_fp32"}
    assert tensor.groupby("level").size().max() == 1


@needs_ncu_report
def test_sparse_bf16_work_keeps_the_sparse_peak() -> None:
    k, _ = _rtx5090_with_bf16_work(1e6)
    clock = k.loc[0, "sm_clock_hz"]
    assert k.loc[0, "peak_tensor_src_bf16_dst_fp32_flop_per_s"] == pytest.approx(174_080 * clock)


@needs_ncu_report
def test_l1_zero_contradicted_by_sectors_falls_back_to_the_sectors() -> None:
    # Issue 44 class 3: the RTX 5090 flash-attention launch had 128 x
    # l1tex__lsu_writeback_active_mem_lgds = 0 B while l1tex__t_sectors = 4,984,832 (159.5 MB):
    # the report's own metrics with those two values written in.
    from ncuroof import catalog, parser
    from ncuroof.model import formulas

    cat = catalog.load()
    raw = parser.read(shared(RTX5090), cat)
    wb = "l1tex__lsu_writeback_active_mem_lgds.sum"
    raw[wb], raw[wb + ".per_second"] = 0.0, 0.0
    raw["l1tex__t_sectors.sum"] = 4_984_832.0
    k = formulas.compute_launches(raw, cat)
    assert k.loc[0, "l1_bytes"] == 4_984_832 * 32 == 159_514_624
    assert k.loc[0, "l1_definition"] == "nersc"
    assert k.loc[0, "l1_bytes_per_s"] == pytest.approx(159_514_624 / k.loc[0, "time_s"])
    notes = cell_text("notes", k.loc[0, "notes"])
    assert "L1 bytes are 0 under the ncu definition" in notes and "160 MB" in notes
    # untouched: a launch whose writeback counter holds bytes keeps the ncu definition
    k0 = formulas.compute_launches(parser.read(shared(RTX5090), cat), cat)
    assert k0.loc[0, "l1_definition"] == "ncu"
    assert k0.loc[0, "l1_bytes"] == 128 * 8_417_909


def test_datasheet_note_names_only_the_roofs_the_launch_used(gpus) -> None:
    # Issue 44 class 11: an FP64-only kernel's note listed the FP16 datasheet roof. The roofs are
    # all filled (table columns); the note names FP64 and DRAM, the work this launch did.
    from ncuroof.model.roofs import fill_ceilings

    k = _kernels(
        fp64_flop=1e9,
        fp32_flop=0.0,
        fp16_flop=0.0,
        tensor_src_fp16_dst_fp32_flop=0.0,
        dram_bytes=1e8,
        l2_bytes=2e8,
        l1_bytes=3e8,
    )
    row = fill_ceilings(k, gpus).loc[0]
    assert row["peak_fp16_flop_per_s"] > 0  # filled all the same
    notes = cell_text("notes", row["notes"])
    assert "roofs for fp64 (datasheet 547 GFLOP/s at boost), dram from the" in notes
    assert "fp16 (datasheet" not in notes and "tensor src_fp16" not in notes
    # the L2 and L1 bytes have no roof (the A10G datasheet gives none): said, with the fix
    assert "no L2 roof: 200 MB counted at L2" in notes and "--peak-bandwidth l2=" in notes
    assert "no L1 roof: 300 MB counted at L1" in notes
