"""The metric catalog files in metrics/ load, follow their grammar, and say where they come from."""

from __future__ import annotations

import re

import pytest

from ncuroof import catalog


def test_every_recipe_names_real_looking_metrics_and_a_label() -> None:
    cat = catalog.load()
    names = cat.scalar_metrics
    assert "gpu__time_duration.sum" in names and "dram__bytes.sum" in names
    metric = re.compile(r"^[a-z][a-z0-9_]*__[A-Za-z0-9_.]+$")
    assert all(metric.match(m) for m in names), sorted(m for m in names if not metric.match(m))
    for p in cat.precisions.values():
        for r in (*p.rate, *p.count, *p.peak):
            assert r.label and r.terms
    for lv in cat.levels.values():
        assert lv.definitions and all(d.source for d in lv.definitions)


def test_parse_term_grammar() -> None:
    t = catalog.parse_term("2*a__b.sum | c__d.sum | 0")
    assert [(a.metric, a.weight) for a in t.alts] == [
        ("a__b.sum", 2.0),
        ("c__d.sum", 1.0),
        (None, 0.0),
    ]
    for bad in ("x*a__b", "a b", ""):
        with pytest.raises(ValueError):
            catalog.parse_term(bad)


def test_gpu_catalog_entries_have_sources_and_si_values() -> None:
    gpus = catalog.load_gpus()
    required = {
        "v100-sxm2",
        "v100-pcie",
        "a100-40gb",
        "a100-80gb-sxm",
        "a100-80gb-pcie",
        "a10",
        "a10g",
        "a40",
        "l4",
        "l40s",
        "t4",
        "rtx-2080-ti",
        "rtx-3080",
        "rtx-3090",
        "rtx-4090",
        "rtx-5090",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "gh200",
        "b200",
    }
    assert required <= {g.id for g in gpus.gpus}
    for g in gpus.gpus:
        assert g.source and g.confidence
        assert 1e11 < g.flop_per_s["fp32"] < 1e15 and 1e11 < g.dram_bytes_per_s < 1e13
        assert 1e6 <= g.l2_bytes <= 2e8 and 5e8 < g.boost_hz < 3e9
        # The datasheet FP32 peak is SMs x FP32 lanes (64 on GV100, TU10x, GA100; 128 since GA10x) x
        # 2 x boost clock, within 3 %.
        lanes = 64 if g.cc in ("7.0", "7.5", "8.0") else 128
        assert g.flop_per_s["fp32"] == pytest.approx(g.sms * lanes * 2 * g.boost_hz, rel=0.03), g.id


@pytest.mark.parametrize(
    "unit,factor",
    [
        ("", 1),
        ("%", 1),
        ("byte", 1),
        ("Kbyte", 1e3),
        ("Mbyte", 1e6),
        ("Gbyte", 1e9),
        ("nsecond", 1),
        ("ns", 1),
        ("usecond", 1e3),
        ("us", 1e3),
        ("msecond", 1e6),
        ("second", 1e9),
        ("hz", 1),
        ("Ghz", 1e9),
        ("cycle/second", 1),
        ("cycle/nsecond", 1e9),
        ("Gbyte/s", 1e9),
        ("Kbyte/block", 1e3),
        ("inst/Kcycle", 1e-3),
        ("register/thread", 1),
    ],
)
def test_unit_factors_to_ncu_base_units(unit: str, factor: float) -> None:
    assert catalog.load_csv_rules().factor(unit) == pytest.approx(factor)


@pytest.mark.parametrize("unit", ["Fooby", "Xbyte", "byte/fortnight", "%%", "K"])
def test_unknown_units_are_refused_not_guessed(unit: str) -> None:
    assert catalog.load_csv_rules().factor(unit) is None


def test_labels_point_at_metrics_the_catalog_reads() -> None:
    cat = catalog.load()
    for (section, label), metric in catalog.load_csv_rules().labels.items():
        assert section and label
        assert metric in cat.scalar_metrics, (label, metric)


def test_achievable_roofs_are_the_published_measurements() -> None:
    gpus = {g.id: g for g in catalog.load_gpus().gpus}
    # H200: TileOPs PR #1993 copy/triad/read at 0.82/0.84/0.94 of the theoretical 4.8 TB/s; the
    # roof is the highest.
    assert sorted(m.value for m in gpus["h200"].measured) == pytest.approx(
        [0.82 * 4.8e12, 0.84 * 4.8e12, 0.94 * 4.8e12]
    )
    assert (
        gpus["h200"].achievable()["dram"].value == pytest.approx(4.512e12)
        and "read" in gpus["h200"].achievable()["dram"].what
    )
    # STREAM-like copies (issue 21): V100 820 GB/s, A100 1,800 GB/s, never on a GPU they exceed;
    # H100 SXM: 2,900 GB/s (issue 21) and a D2D copy of 2,903 GB/s (aigatech/vpbenchmarking): the
    # higher; H100 PCIe: memcpy 1,860 GB/s.
    for gpu_id, value in (
        ("v100-sxm2", 820e9),
        ("v100-pcie", 820e9),
        ("a100-80gb-sxm", 1.8e12),
        ("a100-80gb-pcie", 1.8e12),
        ("h100-sxm", 2.903e12),
        ("h100-pcie", 1.86e12),
    ):
        assert gpus[gpu_id].achievable()["dram"].value == value, gpu_id
    assert sorted(m.value for m in gpus["h100-sxm"].measured) == [2.9e12, 2.903e12]
    for gpu_id in ("a100-40gb", "gh200", "a40"):
        assert gpus[gpu_id].achievable() == {}, gpu_id
    # RTX 5070: GPU-Roofline-Profiler's FMA microbenchmark and device-to-device copy.
    ach = gpus["rtx-5070"].achievable()
    assert ach["fp32"].value == pytest.approx(33.49e12) and ach["dram"].value == pytest.approx(
        591.6e9
    )
    for g in gpus.values():
        for m in g.measured:
            assert (
                m.what and m.method and m.date and m.source and m.confidence in ("H", "M", "L")
            ), g.id
            if m.quantity == "dram":
                assert m.value <= g.dram_bytes_per_s, g.id  # a copy cannot beat the bus


def test_opcode_tensor_paths_get_the_most_generous_roof_with_their_assumption(tmp_path) -> None:
    gpus = catalog.load_gpus()
    for path, key in (
        ("sass_hmma", "fp16"),
        ("sass_imma", "int8"),
        ("sass_dmma", "fp64"),
        ("src_fp16_dst_fp32", "fp16_fp32acc"),
        ("op_hmma_src_fp16_sparsity_on", ""),
        ("legacy_x512", "fp16_fp32acc"),
    ):
        assert gpus.tensor_key(path) == key, path
    for path in ("sass_hmma", "sass_imma", "sass_dmma"):
        rule = gpus.tensor_rule(path)
        assert rule.assumption and rule.confidence in ("H", "M", "L"), path
    text = (catalog.metrics_dir() / "gpus.toml").read_text()
    bad = text.replace(
        'quantity = "fp32"\nvalue = 33.49', 'quantity = "fp32"\nvalue = 33.49\nfraction = 1.0'
    )
    assert bad != text
    (tmp_path / "gpus.toml").write_text(bad)
    with pytest.raises(ValueError, match="rtx-5070"):
        catalog.load_gpus(tmp_path)


@pytest.mark.parametrize(
    "opcode, path, ops",
    [
        ("HMMA.16816.F32.BF16", "sass_hmma_bf16", 2 * 16 * 8 * 16),
        ("HMMA.16816.F32", "sass_hmma_fp16_fp32acc", 2 * 16 * 8 * 16),
        ("HMMA.1688.F16", "sass_hmma_fp16", 2 * 16 * 8 * 8),
        ("HMMA.1684.F32.TF32", "sass_hmma_tf32", 2 * 16 * 8 * 4),
        ("HMMA.16816.F32.SAT", "sass_hmma", 2 * 16 * 8 * 16),
        ("IMMA.16832.S8.S8.SAT", "sass_imma", 2 * 16 * 8 * 32),
        ("HGMMA.64x128x16.F32.BF16", "sass_hgmma_bf16", 2 * 64 * 128 * 16 / 4),
        ("HGMMA.64x256x16.F16", "sass_hgmma_fp16", 2 * 64 * 256 * 16 / 4),
        ("HGMMA.64x64x8.F32.TF32", "sass_hgmma_tf32", 2 * 64 * 64 * 8 / 4),
        ("HGMMA.64x96x16.F32", "sass_hgmma_fp16_fp32acc", 2 * 64 * 96 * 16 / 4),
        ("IGMMA.64x256x32.S8.S8", "sass_igmma_int8", 2 * 64 * 256 * 32 / 4),
        ("QGMMA.64x128x32.F32.E4M3.E4M3", "sass_qgmma_fp8", 2 * 64 * 128 * 32 / 4),
        ("HGMMA.64x128x32.F32.BF16.SP", None, 0),
        # issue 44: the shape modifier read for every mma.sync family (M 16|8, N 8, K the rest)
        ("IMMA.16816.S8.S8", "sass_imma", 2 * 16 * 8 * 16),
        ("IMMA.16816.S8.S8.SAT", "sass_imma", 2 * 16 * 8 * 16),
        ("IMMA.8816.S8.S8", "sass_imma", 2 * 8 * 8 * 16),  # the convention kept: 2048
        ("IMMA.8832.S4.S4", "sass_imma", 2 * 8 * 8 * 32),
        ("IMMA.16864.S4.S4", "sass_imma", 2 * 16 * 8 * 64),
        ("HMMA.1688.F32.BF16", "sass_hmma_bf16", 2 * 16 * 8 * 8),
        ("HMMA.16816.F16", "sass_hmma_fp16", 2 * 16 * 8 * 16),
        ("HMMA.884.F32.F32", "sass_hmma_fp16_fp32acc", 512),
        ("HMMA.884.F16.F16", "sass_hmma_fp16", 1024),
        ("DMMA.884", "sass_dmma", 2 * 8 * 8 * 4),
        ("DMMA.16816", "sass_dmma", 2 * 16 * 8 * 16),
        ("BMMA.88128.AND.POPC", "sass_bmma", 2 * 8 * 8 * 128),
        ("BMMA.168256.XOR.POPC", "sass_bmma", 2 * 16 * 8 * 256),
        ("UTCHMMA.128x256x16.F32.BF16", "sass_utcmma", 2 * 128 * 256 * 16),
        ("UTCHMMA.2CTA", None, 0),  # shape in the instruction descriptor: incomplete, not guessed
        ("HMMA.SP.16832.F32", None, 0),
        ("IMMA.16864.S8.S8.SP", None, 0),
    ],
)
def test_mma_shapes_by_hand(opcode: str, path: str | None, ops: float) -> None:
    shape = next((s for s in catalog.load().tensor.shapes if s.pattern.search(opcode)), None)
    if path is None:  # sparse or shapeless: no dense shape, reported as incomplete work
        assert shape is None
        assert catalog.load().tensor.looks_like_mma.search(opcode)
        return
    assert shape.path == path and shape.ops_of(opcode) == ops
    if path not in ("sass_bmma", "sass_utcmma"):  # no datasheet gives a b1 / tcgen05 rate
        assert catalog.load_gpus().tensor_key(path)  # every other opcode path has a datasheet key


def test_geforce_and_workstation_entries_by_hand() -> None:
    """The GeForce and workstation entries of issue 42: FP32 = SMs x FP32 lanes per SM (64 on
    Turing, 128 from GA10x on) x 2 x boost clock, dense FP16 tensor = SMs x (1024 FLOP/clk on
    Turing, 1024 on GA10x/Ada) x boost clock, INT8 twice that."""
    from ncuroof.catalog import load_gpus

    gpus = {g.id: g for g in load_gpus().gpus}
    tflops = 1e12
    for gid, lanes in (
        ("rtx-2070-super", 64),
        ("rtx-2060", 64),
        ("rtx-3070", 128),
        ("rtx-a6000", 128),
        ("rtx-4080", 128),
        ("rtx-6000-ada", 128),
    ):
        g = gpus[gid]
        fp32, fp16 = g.flop_per_s["fp32"], g.tensor["fp16"]
        assert fp32 == pytest.approx(g.sms * lanes * 2 * g.boost_hz, rel=5e-3), gid
        assert fp16 == pytest.approx(g.sms * 1024 * g.boost_hz, rel=5e-3), gid
        assert g.tensor["int8"] == pytest.approx(2 * fp16, rel=5e-3), gid
    # the RTX 2070 SUPER: 40 SMs x 64 x 2 x 1.77 GHz = 9.06 TFLOP/s, 72.5 FP16 tensor, 448 GB/s
    g = gpus["rtx-2070-super"]
    assert (g.flop_per_s["fp32"], g.tensor["fp16"], g.dram_bytes_per_s) == (
        9.06 * tflops,
        72.5 * tflops,
        448e9,
    )


def test_a_geforce_rtx_2070_super_report_gets_datasheet_roofs() -> None:
    from tests.helpers.reports import kernels_of

    k = kernels_of("alife_cuda__profile_output.ncu-rep")
    assert set(k["device_name"]) == {"NVIDIA GeForce RTX 2070 SUPER"}
    assert set(k["datasheet_gpu"]) == {"rtx-2070-super"}
    assert (k["peak_dram_bytes_per_s"] == 448e9).all()  # 14 Gbit/s x 256 bit


def test_imma_16816_count_of_issue_44() -> None:
    """1,056,964,608 IMMA.16816.S8.S8 x 2*16*8*16 = 4.33e12 INT8 ops (issue 44, A40 report)."""
    shape = next(s for s in catalog.load().tensor.shapes if s.pattern.search("IMMA.16816.S8.S8"))
    ops = 1_056_964_608 * shape.ops_of("IMMA.16816.S8.S8")
    assert ops == 4_329_327_034_368
    assert round(ops / 1e12, 2) == 4.33


@pytest.mark.parametrize(
    "name,close",
    [
        ("a100", ["a100-80gb-sxm", "a100-80gb-pcie", "a100-40gb"]),
        ("h100", ["h100-sxm", "h100-pcie"]),
        ("rtx4090", ["rtx-4090"]),
    ],
)
def test_an_unknown_gpu_id_gets_the_ids_it_is_close_to(name, close) -> None:
    """Issue 54 item 5: ``--gpu a100`` names the A100 entries, not all 35 ids."""
    gpus = catalog.load_gpus()
    assert gpus.by_name(name) is None
    line = gpus.unknown("--gpu", name)
    assert "\n" not in line and "ncuroof list-gpus" in line
    suggested = line.split("did you mean ")[1].split("?")[0].split(", ")
    assert set(close) <= set(suggested) and len(suggested) < len(gpus.gpus) / 4
    assert "did you mean" not in gpus.unknown("--gpu", "qqqq")
