"""Analytic work from the shapes of a PyTorch trace (issue 41): each formula family by hand
arithmetic on traces built at test time in Kineto's format, the innermost-operator rule, the
refusal of a trace without shapes, and the shared traces."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ncuroof import api, catalog, views
from ncuroof.errors import InputError
from ncuroof.model import analytic
from tests.helpers.kineto import Trace
from tests.helpers.reports import shared

BF16, F32 = "c10::BFloat16", "float"
H100 = "NVIDIA H100 80GB HBM3"


def _table(tmp_path: Path, trace: Trace, **kw) -> object:
    path = trace.write(tmp_path / "t.json.gz")
    return api.analyze_trace(path, write=False, **kw).operators


def _row(t, op: str):
    rows = t[t["op"] == op]
    assert len(rows) == 1, f"{op}: {len(rows)} rows"
    return rows.iloc[0]


def test_linear_counts_once_at_addmm_with_bias(tmp_path: Path) -> None:
    tr = Trace()
    tr.op("aten::linear", [[8, 64], [32, 64], [32]], [BF16] * 3, ["", "", ""], dur=80)
    tr.op(
        "aten::addmm",
        [[32], [8, 64], [64, 32], [], []],
        [BF16] * 3 + ["Scalar"] * 2,
        ["", "", "", "1", "1"],
        dur=50,
    )
    tr.kernel("sm90_xmma_gemm_bf16", 10.0)
    t = _table(tmp_path, tr)
    assert "aten::linear" not in set(t["op"])
    r = _row(t, "aten::addmm")
    assert r["flop"] == 2 * 8 * 32 * 64 + 8 * 32
    assert r["bf16_flop"] == r["flop"] and r["fp32_flop"] == 0
    assert r["compulsory_bytes"] == (32 + 8 * 64 + 64 * 32 + 8 * 32) * 2
    assert r["time_s"] == pytest.approx(10e-6)
    assert r["launches"] == 1 and r["calls"] == 1
    assert r["roof"] == "tensor_bf16"
    assert r["roof_flop_per_s"] == pytest.approx(989e12)
    assert r["ridge_flop_per_byte"] == pytest.approx(989e12 / 3.35e12)
    assert r["bound"] == "memory"
    assert r["work_source"] == "analytic (from shapes)"
    assert r["time_at_roof_s"] == pytest.approx(r["compulsory_bytes"] / 3.35e12)


def test_mm_and_bmm_fp32_tf32_option(tmp_path: Path) -> None:
    tr = Trace()
    tr.op("aten::mm", [[128, 256], [256, 512]], [F32] * 2, ["", ""], dur=50)
    tr.kernel("gemm", 20.0)
    tr.kernel("splitk_reduce", 5.0)
    tr.skip()
    tr.op("aten::bmm", [[4, 16, 32], [4, 32, 8]], [F32] * 2, ["", ""], dur=50)
    tr.kernel("bmm", 3.0)
    for fp32, roof in (("fp32", "fp32"), ("tf32", "tensor_tf32")):
        t = _table(tmp_path, tr, fp32_matmul=fp32)
        mm = _row(t, "aten::mm")
        assert mm["flop"] == 2 * 128 * 512 * 256
        assert mm["compulsory_bytes"] == (128 * 256 + 256 * 512 + 128 * 512) * 4
        assert mm["launches"] == 2 and mm["time_s"] == pytest.approx(25e-6)
        assert mm["roof"] == roof and mm["precision"] == fp32
        bmm = _row(t, "aten::bmm")
        assert bmm["flop"] == 2 * 4 * 16 * 8 * 32
        assert bmm["compulsory_bytes"] == (4 * 16 * 32 + 4 * 32 * 8 + 4 * 16 * 8) * 4


def test_convolution_from_concrete_inputs(tmp_path: Path) -> None:
    tr = Trace()
    dims = [[2, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], []]
    conc = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]
    tr.op("aten::conv2d", dims, [F32] * 3 + ["ScalarList"] * 3 + ["Int"], conc, dur=90)
    cdims = [*dims[:6], [], [], []]
    cconc = ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]
    tr.op("aten::convolution", cdims, [F32] * 3 + [""] * 6, cconc, dur=80)
    tr.op("aten::_convolution", cdims, [F32] * 3 + [""] * 6, cconc, dur=70)
    tr.op("aten::cudnn_convolution", [[2, 3, 32, 32], [16, 3, 3, 3]], [F32] * 2, ["", ""], dur=60)
    tr.kernel("implicit_gemm", 7.0)
    r = _row(_table(tmp_path, tr), "aten::_convolution")
    out = 16 * 16  # (32 + 2*1 - 1*(3-1) - 1) // 2 + 1 = 16 per side
    assert r["flop"] == 2 * 2 * 16 * 3 * 9 * out + 2 * 16 * out
    assert r["compulsory_bytes"] == (2 * 3 * 32 * 32 + 16 * 27 + 16 + 2 * 16 * out) * 4


def test_convolution_bias_is_counted_once(tmp_path: Path) -> None:
    """ViT's patch embedding (issue 52): x [4,3,224,224], w [768,3,16,16], stride 16, bias [768].
    ATen's _convolution adds the bias as an aten::add_ of its own inside it: that kernel is the
    convolution's, whose formula counts the bias, so the trace's FLOPs are 2*N*K*C*R*S*P*Q + the
    bias, 925,446,144 (926,048,256 when the add_ counted it again)."""
    tr = Trace()
    dims = [[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], [], [], []]
    conc = ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "False", "[0, 0]", "1"]
    tr.op("aten::conv2d", dims[:7], [F32] * 3 + [""] * 4, conc[:6] + ["1"], dur=90)
    tr.op("aten::convolution", dims, [F32] * 3 + [""] * 6, conc, dur=80)
    tr.op("aten::_convolution", dims, [F32] * 3 + [""] * 6, conc, dur=70)
    tr.op("aten::cudnn_convolution", dims[:2], [F32] * 2, ["", ""], dur=20)
    tr.kernel("implicit_gemm", 7.0)
    tr.skip(25)
    tr.op("aten::add_", [[4, 768, 14, 14], [1, 768, 1, 1], []], [F32] * 2 + ["Scalar"], dur=10)
    tr.kernel("elementwise_add", 1.0)
    t = _table(tmp_path, tr)
    assert "aten::add_" not in set(t["op"])
    r = _row(t, "aten::_convolution")
    assert r["flop"] == 2 * 4 * 768 * 3 * 16 * 16 * 14 * 14 + 4 * 768 * 14 * 14 == 925_446_144
    assert t["flop"].sum() == 925_446_144
    assert r["launches"] == 2 and r["time_s"] == pytest.approx(8e-6)
    tr.skip(200)  # a bias add outside any convolution stays an add
    tr.op("aten::add_", [[4, 768, 14, 14], [1, 768, 1, 1], []], [F32] * 2 + ["Scalar"], dur=10)
    tr.kernel("elementwise_add", 1.0)
    assert _row(_table(tmp_path, tr), "aten::add_")["flop"] == 4 * 768 * 14 * 14


def test_every_gpu_second_is_in_a_row(tmp_path: Path) -> None:
    """Copies by kind, memsets and idle are rows of their own (issue 52): a device-to-device copy
    reads and writes its bytes at DRAM, a memset writes them, a host copy moves them over the link
    (no roof); the rows' times add up to the trace's span (first start to last end) and the
    shares to 1."""
    tr = Trace()
    tr.transfer("Memcpy HtoD (Pageable -> Device)", 10.0, 4_000_000)
    tr.op("aten::mm", [[128, 256], [256, 512]], [F32] * 2, ["", ""], dur=50)
    tr.kernel("gemm", 20.0)
    tr.skip(30)
    tr.transfer("Memcpy DtoD (Device -> Device)", 2.0, 1_000_000)
    tr.transfer("Memset (Device)", 1.0, 500_000)
    tr.transfer("Memcpy DtoH (Device -> Pinned)", 4.0, 2_000_000)
    t = _table(tmp_path, tr)
    h2d, d2d = _row(t, "memcpy HtoD"), _row(t, "memcpy DtoD")
    assert h2d["compulsory_bytes"] == 4_000_000 and h2d["time_s"] == pytest.approx(10e-6)
    assert h2d["work_source"] == "bytes moved (trace)" and math.isnan(h2d["time_at_roof_s"])
    assert d2d["compulsory_bytes"] == 2 * 1_000_000
    assert d2d["time_at_roof_s"] == pytest.approx(2e6 / 3.35e12)
    assert _row(t, "memset")["compulsory_bytes"] == 500_000
    assert _row(t, "memcpy DtoH")["calls"] == 1
    # span: the HtoD copy starts first (ts 1000 + 5000), the DtoH copy ends last
    first, last = 1000.0, 1000.0 + 10 + 1 + 1 + 3 + 30 + 2 + 1 + 1 + 1 + 4
    span = (last - first) * 1e-6
    busy = (10 + 20 + 2 + 1 + 4) * 1e-6
    assert t["time_s"].sum() == pytest.approx(span)
    assert _row(t, "idle (no kernel, copy or memset)")["time_s"] == pytest.approx(span - busy)
    assert t["time_share"].sum() == pytest.approx(1.0)


def test_attention_causal_halves_the_score_work(tmp_path: Path) -> None:
    q = [2, 8, 128, 64]
    tr = Trace()
    for causal in ("True", "False"):
        tr.op(
            "aten::scaled_dot_product_attention",
            [q, q, q, [], [], [], []],
            [BF16] * 3,
            ["", "", "", "", "0.0", causal, ""],
            dur=60,
        )
        tr.op(
            "aten::_scaled_dot_product_flash_attention",
            [q, q, q, [], [], [], []],
            [BF16] * 3,
            ["", "", "", "0.0", causal, "False", ""],
            dur=50,
        )
        tr.kernel(f"flash_fwd_{causal}", 30.0)
        tr.skip()
    t = _table(tmp_path, tr)
    rows = t[t["op"] == "aten::_scaled_dot_product_flash_attention"]
    full = 2 * 2 * 8 * 128 * 128 * (64 + 64)
    assert sorted(rows["flop"]) == [full * 0.5, full]
    assert set(rows["compulsory_bytes"]) == {4 * 2 * 8 * 128 * 64 * 2}


def test_per_element_families(tmp_path: Path) -> None:
    tr = Trace()
    tr.op(
        "aten::layer_norm",
        [[4, 1024], [], [1024], [1024], [], []],
        [F32] * 1 + [""] + [F32] * 2,
        ["", "[1024]", "", "", "1e-05", "True"],
        dur=60,
    )
    tr.op(
        "aten::native_layer_norm",
        [[4, 1024], [], [1024], [1024], []],
        [F32, "", F32, F32, "Double"],
        ["", "[1024]", "", "", "1e-05"],
        dur=50,
    )
    tr.kernel("layer_norm_kernel", 4.0)
    tr.skip()
    tr.op("aten::softmax", [[8, 512], [], []], [BF16, "Int", ""], ["", "-1", ""], dur=40)
    tr.op("aten::_softmax", [[8, 512], [], []], [BF16, "Int", "Bool"], ["", "-1", "False"], dur=30)
    tr.kernel("softmax_kernel", 2.0)
    tr.skip()
    tr.op(
        "aten::embedding",
        [[50000, 256], [4, 32], [], [], []],
        [F32, "long int", "Int", "Bool", "Bool"],
        ["", "", "-1", "False", "False"],
        dur=30,
    )
    tr.kernel("index_select", 2.0)
    tr.skip()
    tr.op("aten::add", [[4, 1, 64], [1, 8, 64], []], [BF16, BF16, "Scalar"], ["", "", "1"], dur=20)
    tr.kernel("elementwise_add", 1.0)
    tr.skip()
    tr.op(
        "aten::sum",
        [[16, 32, 8], [], [], []],
        [F32, "", "Bool", ""],
        ["", "[1]", "False", ""],
        dur=20,
    )
    tr.kernel("reduce_kernel", 1.0)
    t = _table(tmp_path, tr)
    ln = _row(t, "aten::native_layer_norm")
    assert ln["flop"] == 4 * 1024 * (5 + 2)
    assert ln["compulsory_bytes"] == (4096 + 1024 + 1024 + 4096) * 4
    sm = _row(t, "aten::_softmax")
    assert sm["flop"] == 8 * 512 * 5 and sm["compulsory_bytes"] == 2 * 8 * 512 * 2
    assert sm["roof"] == "fp32"  # 16-bit softmax computes in float (at::opmath_type)
    emb = _row(t, "aten::embedding")
    assert emb["flop"] == 0 and emb["compulsory_bytes"] == 4 * 32 * 8 + 2 * 4 * 32 * 256 * 4
    assert emb["bound"] == "memory"
    add = _row(t, "aten::add")
    assert add["flop"] == 4 * 8 * 64 and add["compulsory_bytes"] == (256 + 512 + 4 * 8 * 64) * 2
    s = _row(t, "aten::sum")
    assert s["flop"] == 16 * 32 * 8 and s["compulsory_bytes"] == (16 * 32 * 8 + 16 * 8) * 4


def test_no_formula_and_misfit_are_flags(tmp_path: Path) -> None:
    tr = Trace()
    tr.op("triton_poi_fused_add_0", [[10, 10]], [F32], [""], dur=20)
    tr.kernel("triton_poi_fused_add_0", 3.0)
    tr.skip()
    tr.op("aten::mm", [[4, 5], [6, 7]], [F32] * 2, ["", ""], dur=20)
    tr.kernel("gemm", 2.0)
    t = _table(tmp_path, tr)
    tri = _row(t, "triton_poi_fused_add_0")
    assert tri["flag"] == "no formula" and tri["work_source"] == "no formula"
    assert tri["time_s"] == pytest.approx(3e-6) and math.isnan(tri["flop"])
    assert tri["input_dims"] == "[[10,10]]" and tri["bound"] == "unknown"
    mm = _row(t, "aten::mm")
    assert mm["flag"].startswith("shapes do not fit") and math.isnan(mm["flop"])
    kernels = t[~t["work_source"].isin(["idle", "bytes moved (trace)"])]
    assert kernels["time_s"].sum() == pytest.approx(5e-6)
    # every GPU second in a row (issue 52): the gap between the two kernels is the idle row
    idle = _row(t, "idle (no kernel, copy or memset)")
    assert idle["time_s"] == pytest.approx(t["time_s"].sum() - 5e-6) and idle["time_s"] > 0
    assert t["time_share"].sum() == pytest.approx(1.0)


def test_trace_without_shapes_is_refused(tmp_path: Path) -> None:
    tr = Trace(shapes=False)
    tr.op("aten::mm", [[4, 5], [5, 7]], [F32] * 2)
    tr.kernel("gemm", 2.0)
    path = tr.write(tmp_path / "plain.json")
    with pytest.raises(InputError, match=r"record_shapes=True"):
        api.analyze_trace(path, write=False)


def test_unknown_gpu_needs_gpu_option(tmp_path: Path) -> None:
    tr = Trace(gpu="NVIDIA Mystery 9000")
    tr.op("aten::mm", [[4, 5], [5, 7]], [F32] * 2, ["", ""])
    tr.kernel("gemm", 2.0)
    path = tr.write(tmp_path / "m.json")
    with pytest.raises(InputError, match="--gpu"):
        api.analyze_trace(path, write=False)
    t = api.analyze_trace(path, write=False, gpu="h100-sxm").operators
    assert _row(t, "aten::mm")["flop"] == 2 * 4 * 7 * 5


def test_outputs_and_json_document(tmp_path: Path) -> None:
    from ncuroof.render import json_doc

    tr = Trace()
    tr.op("aten::mm", [[64, 64], [64, 64]], [BF16] * 2, ["", ""])
    tr.kernel("gemm", 2.0)
    path = tr.write(tmp_path / "run.pt.trace.json.gz")
    res = api.analyze_trace(path, formats=("csv",), write=True)
    assert res.outdir == tmp_path / "run.pt.trace.ncuroof"
    html = (res.outdir / "roofline.html").read_text()
    assert "analytic (from shapes)" in html and "aten::mm" in html
    doc = json.loads(json_doc.dumps(json_doc.trace_document(res)))
    ops = doc["products"]["operators"]
    assert ops[0]["flop"] == 2 * 64**3 and ops[0]["work_source"] == "analytic (from shapes)"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads(views.schema_text("analyze")))


def test_every_rule_has_a_known_family() -> None:
    cat = catalog.load_operators()
    assert {r.family for r in cat.rules.values()} <= set(catalog.OPERATOR_FAMILIES)
    assert cat.dtypes["c10::BFloat16"] == (2, "bf16") and cat.dtypes["float"] == (4, "fp32")


def test_shared_traces() -> None:
    alexnet = shared("hta__alexnet_trace.json.gz")
    triton = shared("hta__triton_example.json.gz")
    with pytest.raises(InputError, match=r"record_shapes=True"):
        api.analyze_trace(alexnet, write=False)
    # the Triton example has shapes but only an Inductor kernel: no formula, its time kept
    t = api.analyze_trace(triton, write=False, gpu="a100-40gb", device=0).operators
    assert (t["work_source"] == "no formula").all()
    assert t["time_s"].sum() > 0
    assert analytic.NO_FORMULA in set(t["flag"])


REPORT = "KernelBench__matmul_kernel.ncu-rep"


def _matmul_run(tmp_path: Path, m: int) -> Path:
    """The trace of KernelBench's naive FP32 matmul (4096^3, ncu's FP32 FLOPs = 2*4096^3):
    aten::mm of [m, 4096] x [4096, 4096] launching the report's kernel once."""
    tr = Trace(gpu="NVIDIA H100 PCIe")
    tr.op("aten::mm", [[m, 4096], [4096, 4096]], [F32] * 2, ["", ""], dur=100)
    tr.kernel(
        "matmul_kernel(float const*, float const*, float*, int)",
        52000.0,
        grid=[256, 256, 1],
        block=[16, 16, 1],
    )
    return tr.write(tmp_path / f"mm{m}.json")


def test_counted_against_analytic_with_a_report(tmp_path: Path) -> None:
    report = shared(REPORT)
    res = api.analyze([report], timeline=_matmul_run(tmp_path, 4096), write=False)
    r = _row(res.tables["operators"], "aten::mm")
    assert r["flop"] == 2 * 4096**3
    k = res.analysis.launches
    counted = sum(float(k[c].fillna(0).iloc[0]) for c in ("fp64_flop", "fp32_flop", "fp16_flop"))
    counted += float(k["tensor_flop"].fillna(0).iloc[0])
    assert r["counted_flop"] == pytest.approx(counted)  # all of ncu's FLOPs: FP32 + FP16 (HFMA2)
    assert r["counted_over_analytic"] == pytest.approx(1.0, rel=1e-3)  # ground truth 2*4096^3
    assert r["dram_bytes"] == pytest.approx(float(k["dram_bytes"].iloc[0]))
    assert r["dram_over_compulsory"] == pytest.approx(
        float(k["dram_bytes"].iloc[0]) / (3 * 4096**2 * 4)
    )
    assert r["dram_over_compulsory"] > 10  # the naive kernel re-reads its inputs
    assert "counted FLOPs below" not in r["flag"]
    # a formula that claims more than ncu counted: a flag, not a silent ratio
    res = api.analyze([report], timeline=_matmul_run(tmp_path, 8192), write=False)
    r = _row(res.tables["operators"], "aten::mm")
    assert r["counted_over_analytic"] == pytest.approx(0.5, rel=1e-3)
    assert "counted FLOPs below analytic" in r["flag"]


def _esmm_run(tmp_path: Path, n: int, shapes: bool = True) -> tuple[Any, Path]:
    """The ESMM report's launches and a trace of four aten::mm of ``n`` x 1024 by 1024 x 1024
    FP32 matrices, each launching one of ESMM's kernels as ncu profiled it (1024³ each)."""
    k = api.load(shared("ESMM-Research__profile_output.ncu-rep"))
    tr = Trace(gpu="NVIDIA A10G", shapes=shapes)
    for r in k.itertuples():
        tr.op("aten::mm", [[n, 1024], [1024, 1024]], [F32] * 2, ["", ""], dur=500)
        tr.kernel(r.kernel_demangled, r.time_s * 1e6, grid=list(r.grid), block=list(r.block))
    return k, tr.write(tmp_path / f"esmm{n}.json")


def test_counted_against_analytic_on_the_embedded_sgemms(tmp_path: Path) -> None:
    """``--timeline`` with a report on the repository's own data (issue 54 item 10: the test above
    reads ../shared): the operator's work is the formula's 4 x 2·1024³ FLOPs and ncu counted
    exactly that; its DRAM bytes are the four launches' over 4 x 12.6 MB compulsory. Shapes that
    claim twice the work (2048 x 1024 operands) give a ratio of 0.5 and a flag, not a silent
    ratio."""
    report = shared("ESMM-Research__profile_output.ncu-rep")
    k, trace = _esmm_run(tmp_path, 1024)
    res = api.analyze([report], timeline=trace, write=False)
    r = _row(res.tables["operators"], "aten::mm")
    assert r["flop"] == 4 * 2 * 1024**3 and r["counted_over_analytic"] == pytest.approx(1.0)
    assert r["dram_bytes"] == pytest.approx(k["dram_bytes"].sum())
    assert r["dram_over_compulsory"] == pytest.approx(k["dram_bytes"].sum() / (4 * 3 * 1024**2 * 4))
    assert "counted FLOPs below" not in r["flag"]
    res = api.analyze([report], timeline=_esmm_run(tmp_path, 2048)[1], write=False)
    r = _row(res.tables["operators"], "aten::mm")
    assert r["flop"] == 4 * 2 * 2048 * 1024**2
    assert (
        r["counted_over_analytic"] == pytest.approx(0.5)
        and "counted FLOPs below analytic" in r["flag"]
    )


def test_a_timeline_without_shapes_beside_the_embedded_report_adds_no_operators(
    tmp_path: Path,
) -> None:
    """The same rule on the repository's own data (runs without ../shared): the ESMM report with a
    trace recorded without shapes gets the production timeline (its four kernels matched) and no
    operators table."""
    report = shared("ESMM-Research__profile_output.ncu-rep")
    res = api.analyze([report], timeline=_esmm_run(tmp_path, 1024, shapes=False)[1], write=False)
    assert "operators" not in res.tables
    assert res.analysis.production is not None


def test_timeline_without_shapes_adds_no_operators(tmp_path: Path) -> None:
    report = shared(REPORT)
    tr = Trace(gpu="NVIDIA H100 PCIe", shapes=False)
    tr.op("aten::mm", [[4096, 4096], [4096, 4096]], [F32] * 2)
    tr.kernel(
        "matmul_kernel(float const*, float const*, float*, int)",
        52000.0,
        grid=[256, 256, 1],
        block=[16, 16, 1],
    )
    res = api.analyze([report], timeline=tr.write(tmp_path / "plain.json"), write=False)
    assert "operators" not in res.tables
    assert res.analysis.production is not None


def test_cli_trace_alone_and_refusal(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from ncuroof import cli

    tr = Trace()
    tr.op("aten::mm", [[256, 256], [256, 256]], [BF16] * 2, ["", ""])
    tr.kernel("gemm", 4.0)
    tr.skip()
    tr.op("evil\x1b]52;c;x\x07op", [[4]], [F32], [""])
    tr.kernel("k", 1.0)
    path = tr.write(tmp_path / "run.json.gz")
    with pytest.raises(SystemExit) as done:
        cli.main(["analyze", str(path), "-o", str(tmp_path / "out"), "-q"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "operators.csv" in out
    for name in ("operators.csv", "roofline.html"):
        text = (tmp_path / "out" / name).read_text()
        assert "\x1b" not in text and "\x07" not in text
    bare = Trace(shapes=False)
    bare.op("aten::mm")
    bare.kernel("gemm", 1.0)
    with pytest.raises(SystemExit) as done:
        cli.main(["analyze", str(bare.write(tmp_path / "bare.json"))])
    err = capsys.readouterr().err
    assert done.value.code == 2
    assert len(err.strip().splitlines()) == 1 and "record_shapes=True" in err


def test_kernel_without_launch_call_goes_by_external_id(tmp_path: Path) -> None:
    tr = Trace()
    tr.op("aten::linear", [[8, 64], [32, 64], []], [BF16] * 2 + [""], ["", "", ""], dur=80)
    tr.op("aten::mm", [[8, 64], [64, 32]], [BF16] * 2, ["", ""], dur=50)
    tr.kernel("gemm", 10.0, launch=False)  # External id of aten::mm; no runtime call, no flow
    r = _row(_table(tmp_path, tr), "aten::mm")
    assert r["flop"] == 2 * 8 * 32 * 64 and r["launches"] == 1


def test_rows_that_reach_the_ridge(tmp_path: Path) -> None:
    # mm [M, 4096] x [4096, 4096] bf16: AI(M) = 2*M*N*K / (2*(M*K + K*N + M*N)) = 4096*M/(2*M+4096)
    tr = Trace()
    tr.op("aten::mm", [[1, 4096], [4096, 4096]], [BF16] * 2, ["", ""])
    tr.kernel("gemv", 30.0)
    r = _row(_table(tmp_path, tr), "aten::mm")
    ridge = 989e12 / 3.35e12  # H100 SXM bf16 tensor over HBM3, gpus.toml
    assert r["ai_flop_per_byte"] == pytest.approx(4096 / (2 + 4096))
    # 256 rows: 4096*256/(512+4096) = 227.6 < ridge; 512 rows: 4096*512/(1024+4096) = 409.6
    assert 4096 * 256 / (512 + 4096) < ridge < 4096 * 512 / (1024 + 4096)
    assert r["note"] == "at M=1 rows; M=512 would reach AI 410 FLOP/B"
    assert analytic_text(r).startswith(
        "memory-bound at M=1 rows: AI 1 FLOP/B against a ridge of 295 FLOP/B (tensor_bf16);"
        " M=512 would reach AI 410 FLOP/B;"
    )


def analytic_text(r) -> str:
    from ncuroof.render import analytic as page

    return page.finding(r)


def test_mcp_session_analyzes_a_trace(tmp_path: Path) -> None:
    from ncuroof.mcp_server import Session

    tr = Trace()
    tr.op("aten::bmm", [[2, 8, 16], [2, 16, 4]], [BF16] * 2, ["", ""])
    tr.kernel("bmm", 2.0)
    doc = Session().analyze(str(tr.write(tmp_path / "t.json")))
    (row,) = doc["products"]["operators"]
    assert row["flop"] == 2 * 2 * 8 * 4 * 16 and row["work_source"] == "analytic (from shapes)"
    assert doc["kernels"] == [] and doc["options"]["work_source"] == "analytic (from shapes)"


def test_layer_norm_backward(tmp_path: Path) -> None:
    tr = Trace()
    x, w = [32, 768], [768]
    tr.op(
        "aten::native_layer_norm_backward",
        [x, x, [], [32, 1], [32, 1], w, w, []],
        [BF16, BF16, "", F32, F32, BF16, BF16, ""],
        ["", "", "[768]", "", "", "", "", "[True, True, True]"],
    )
    tr.kernel("layer_norm_grad_input_kernel", 3.0)
    tr.kernel("gamma_beta_backward", 2.0)
    r = _row(_table(tmp_path, tr), "aten::native_layer_norm_backward")
    n = 32 * 768
    assert r["flop"] == n * (8 + 4) and r["launches"] == 2
    # read: grad_out, input (bf16), mean, rstd (fp32), weight; written: grad_input, 2 x grad w
    assert r["compulsory_bytes"] == (2 * n * 2 + 2 * 32 * 4 + 768 * 2) + (n * 2 + 2 * 768 * 2)


def test_backward_and_variant_families(tmp_path: Path) -> None:
    tr = Trace()
    go, x, w = [2, 16, 16, 16], [2, 3, 32, 32], [16, 3, 3, 3]
    tr.op(
        "aten::convolution_backward",
        [go, x, w, [], [], [], [], [], [], [], []],
        [F32] * 3 + [""] * 8,
        [
            "",
            "",
            "",
            "[16]",
            "[2, 2]",
            "[1, 1]",
            "[1, 1]",
            "False",
            "[0, 0]",
            "1",
            "[True, True, True]",
        ],
    )
    tr.kernel("wgrad", 5.0)
    tr.skip()
    q = [2, 8, 128, 64]
    tr.op(
        "aten::_scaled_dot_product_flash_attention_backward",
        [q, q, q, q, q] + [[]] * 10,
        [BF16] * 5 + [""] * 10,
        [""] * 11 + ["True"] + [""] * 3,
    )
    tr.kernel("flash_bwd", 9.0)
    tr.skip()
    qs, kv = [2, 128, 8, 64], [2, 128, 2, 64]  # (B, S, H, D), grouped-query: 2 K/V heads
    tr.op(
        "aten::_flash_attention_forward",
        [qs, kv, kv] + [[]] * 8,
        [BF16] * 3 + [""] * 8,
        [""] * 8 + ["False", "False", ""],
    )
    tr.kernel("flash_fwd", 4.0)
    tr.skip()
    tx, tw = [1, 16, 8, 8], [16, 8, 4, 4]  # transposed: weight (C_in, C_out/groups, kh, kw)
    tr.op(
        "aten::convolution",
        [tx, tw, [], [], [], [], [], [], []],
        [F32, F32] + [""] * 7,
        ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"],
    )
    tr.kernel("dgrad_as_deconv", 2.0)
    t = _table(tmp_path, tr)
    cb = _row(t, "aten::convolution_backward")
    fwd = 2 * 2 * 16 * 3 * 9 * 16 * 16
    assert cb["flop"] == 2 * fwd + 2 * 16 * 16 * 16
    read = 2 * 16 * 256 + 2 * 3 * 1024 + 16 * 27
    assert cb["compulsory_bytes"] == (read + 2 * 3 * 1024 + 16 * 27 + 16) * 4
    fb = _row(t, "aten::_scaled_dot_product_flash_attention_backward")
    n = 2 * 8 * 128 * 64
    assert fb["flop"] == 2 * 2 * 8 * 128 * 128 * (3 * 64 + 2 * 64) * 0.5
    assert fb["compulsory_bytes"] == (5 * n + 3 * n) * 2
    ff = _row(t, "aten::_flash_attention_forward")
    assert ff["flop"] == 2 * 2 * 8 * 128 * 128 * (64 + 64)
    assert ff["compulsory_bytes"] == (n + 2 * (2 * 128 * 2 * 64) + n) * 2
    ct = _row(t, "aten::convolution")
    assert ct["flop"] == 2 * 1 * (16 * 8 * 16) * 64  # flop_counter: the input's spatial size
    assert ct["compulsory_bytes"] == (16 * 64 + 16 * 8 * 16 + 8 * 16 * 16) * 4


def test_batch_norm_inner_cudnn_op(tmp_path: Path) -> None:
    x, c = [8, 64, 28, 28], [64]
    dims = [x, c, c, c, c, [], [], [], []]
    types = [F32] * 5 + ["Scalar"] * 4
    conc = ["", "", "", "", "", "True", "0.1", "1e-05", "True"]
    tr = Trace()
    tr.op("aten::batch_norm", dims, types, conc, dur=80)
    tr.op("aten::_batch_norm_impl_index", dims, types, conc, dur=70)
    tr.op("aten::cudnn_batch_norm", dims[:8], types[:8], conc[:8], dur=60)
    tr.kernel("bn_fw_tr_1C11_kernel_NCHW", 6.0)
    t = _table(tmp_path, tr)
    assert list(t["op"]) == ["aten::cudnn_batch_norm"]
    n = 8 * 64 * 28 * 28
    r = t.iloc[0]
    assert r["flop"] == n * 7 and r["compulsory_bytes"] == (n + 64 + 64 + n) * 4


def test_cli_device_of_a_two_gpu_trace(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from ncuroof import cli

    tr = Trace()
    tr.op("aten::mm", [[16, 16], [16, 16]], [F32] * 2, ["", ""])
    tr.kernel("gemm", 1.0, device=0)
    tr.skip()
    tr.op("aten::mm", [[32, 16], [16, 16]], [F32] * 2, ["", ""])
    tr.kernel("gemm", 1.0, device=1)
    path = tr.write(tmp_path / "two.json")
    with pytest.raises(SystemExit) as done:
        cli.main(["analyze", str(path), "-q"])
    assert done.value.code == 2 and "--device" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        cli.main(["analyze", str(path), "--device", "1", "--json", "-q"])
    assert done.value.code == 0
    (row,) = json.loads(capsys.readouterr().out)["products"]["operators"]
    assert row["flop"] == 2 * 32 * 16 * 16


def test_calls_of_one_shape_add_up(tmp_path: Path) -> None:
    tr = Trace()
    for _ in range(3):
        tr.op("aten::mm", [[64, 128], [128, 32]], [BF16] * 2, ["", ""])
        tr.kernel("gemm", 2.0)
        tr.skip()
    r = _row(_table(tmp_path, tr), "aten::mm")
    assert r["calls"] == 3 and r["launches"] == 3 and r["time_s"] == pytest.approx(6e-6)
    assert r["flop_per_call"] == 2 * 64 * 32 * 128 and r["flop"] == 3 * r["flop_per_call"]
    assert r["compulsory_bytes_per_call"] == (64 * 128 + 128 * 32 + 64 * 32) * 2
    assert r["compulsory_bytes"] == 3 * r["compulsory_bytes_per_call"]


def test_a_kernel_no_gpu_timer_gives_is_refused(tmp_path: Path) -> None:
    """Issue 53 item 4: a 1e-300 us kernel wrote inf into operators.csv; now one line, exit 2."""
    tr = Trace()
    tr.op("aten::mm", [[4, 5], [5, 7]], [F32] * 2, ["", ""])
    tr.kernel("gemm", 1e-300)
    path = tr.write(tmp_path / "m.json")
    with pytest.raises(InputError, match="no GPU timer gives"):
        api.analyze_trace(path, write=False)


@pytest.mark.parametrize(
    "dims",
    [
        [[2**40, 2**40], [2**40, 2**40]],  # 2.66e36 FLOPs "at 4e28 % of the roof"
        [[4.5, 5], [5, 7]],  # not whole numbers
        [[1e300, 5], [5, 7]],
    ],
)
def test_shapes_no_gpu_holds_are_flagged_not_counted(tmp_path: Path, dims) -> None:
    """Issue 53 item 4: such a row keeps its time, gets no work (NaN, never inf) and says why."""
    tr = Trace()
    tr.op("aten::mm", dims, [F32] * 2, ["", ""])
    tr.kernel("gemm", 2.0)
    row = _row(api.analyze_trace(tr.write(tmp_path / "m.json"), write=False).operators, "aten::mm")
    assert math.isnan(row["flop"]) and row["time_s"] == pytest.approx(2e-6)
    assert row["flag"].startswith("shapes do not fit") and math.isnan(row["roof_fraction"])


def test_graph_replays_get_the_operators_that_captured_them() -> None:
    """The vLLM decode pair (issue 52, MIT, recorded on AMD with hipGraphLaunch): the 421 kernels
    one hipGraphLaunch replays carry no cpu_op; with the capture trace each is matched by name to
    the launch that captured it (421 of 421) and gets its operator and shapes, so no replayed
    kernel time is left without an operator, and the MoE layer appears with its shapes."""
    replay = shared("tracelens__vllm_decode_full_graph_execution.json.gz")
    capture = shared("tracelens__vllm_decode_full_graph_capture_rank_0.pt.trace.json.gz")
    alone = api.analyze_trace(replay, write=False, gpu="h100-sxm")
    both = api.analyze_trace(replay, write=False, gpu="h100-sxm", captures=[capture])
    assert both.attrs["graph_kernels"] == both.attrs["graph_matched"] == 421
    assert "graph_kernels" not in alone.attrs

    def kernel_time(t, op=None):
        k = t[~t["work_source"].isin(["idle", "bytes moved (trace)"])]
        return float(k["time_s"].sum() if op is None else k.loc[k["op"] == op, "time_s"].sum())

    # the same GPU time, now under the captured operators
    assert kernel_time(both.operators) == pytest.approx(kernel_time(alone.operators))
    assert kernel_time(both.operators, "no operator") == 0
    moe = both.operators[both.operators["op"] == "vllm::moe_forward"]
    assert len(moe) and moe["input_dims"].iloc[0].startswith("[[32,3072]")
    assert "vllm::moe_forward" not in set(alone.operators["op"])


def test_capture_of_another_kind_is_refused(tmp_path: Path) -> None:
    """--capture with an ncu report, or a capture file that is no trace: one line, exit 2."""
    from ncuroof.errors import NcuroofError

    tr = Trace()
    tr.op("aten::mm", [[4, 5], [5, 7]], [F32] * 2, ["", ""])
    tr.kernel("gemm", 1.0)
    path = tr.write(tmp_path / "t.json.gz")
    bad = tmp_path / "capture.json.gz"
    bad.write_bytes(b"not a trace")
    with pytest.raises(NcuroofError, match="capture.json.gz"):
        api.analyze_trace(path, write=False, captures=[bad])


def test_scaled_mm_fp8_and_packed_fp4(tmp_path: Path) -> None:
    """aten::_scaled_mm (issue 52): FP8 at the FP8 tensor roof, the scales read and C written at
    out_dtype (15 = BFloat16, 2 B); packed FP4 (two values a byte) counts K twice the stored K."""
    tr = Trace("NVIDIA B200")
    fp8, e8 = "c10::Float8_e4m3fn", "c10::Float8_e8m0fnu"
    dims = [[256, 512], [512, 1024], [], [], [], [], [], []]
    tr.op(
        "aten::_scaled_mm",
        dims[:2] + [[], []] + dims[4:],
        [fp8, fp8, F32, F32, "", "", "Scalar", "Scalar"],
        ["", "", "", "", "", "", "15", "False"],
        dur=30,
    )
    tr.kernel("sm100_fp8_gemm", 4.0)
    tr.skip()
    fp4 = "c10::Float4_e2m1fn_x2"
    tr.op(
        "aten::_scaled_mm",
        [[256, 256], [256, 1024], [256, 16], [1024, 16], [], [], [], []],
        [fp4, fp4, e8, e8, "", "", "Scalar", "Scalar"],
        ["", "", "", "", "", "", "15", "False"],
        dur=30,
    )
    tr.kernel("sm100_fp4_gemm", 2.0)
    t = _table(tmp_path, tr)
    rows = t[t["op"] == "aten::_scaled_mm"].set_index("precision")
    assert rows.loc["fp8", "flop"] == 2 * 256 * 1024 * 512
    # the per-tensor scales are 0-d float tensors: 4 B each
    assert rows.loc["fp8", "compulsory_bytes"] == 256 * 512 + 512 * 1024 + 2 * 4 + 256 * 1024 * 2
    assert rows.loc["fp8", "roof"] == "tensor_fp8"
    assert rows.loc["fp4", "flop"] == 2 * 256 * 1024 * 512  # K = 2 x 256 stored
    assert rows.loc["fp4", "compulsory_bytes"] == (
        256 * 256 + 256 * 1024 + 256 * 16 + 1024 * 16 + 256 * 1024 * 2
    )
    assert rows.loc["fp4", "roof"] == "tensor_fp4" and rows.loc["fp4", "fp4_flop"] > 0


def test_grouped_mm_and_fused_moe(tmp_path: Path) -> None:
    """aten::_grouped_mm: 640 rows of A [640, 256] over 8 groups of B [8, 256, 512] is
    2*640*256*512; vLLM's fused experts: 16 tokens of H 1024, top-2 of 8 experts, w1 [8, 2*768,
    1024], w2 [8, 1024, 768]: 2*T*k*N*H + 2*T*k*H*I, all 8 experts' weights read (T*k = 32 > 8)."""
    tr = Trace()
    tr.op(
        "aten::_grouped_mm",
        [[640, 256], [8, 256, 512], [8], [], []],
        [BF16, BF16, "int", "", "Scalar"],
        ["", "", "", "", ""],
        dur=30,
    )
    tr.kernel("grouped_gemm", 5.0)
    tr.skip()
    moe = [[16, 1024], [8, 1536, 1024], [8, 1024, 768], [16, 2], [16, 2]]
    tr.op("vllm::outplace_fused_experts", moe, [BF16, BF16, BF16, F32, "int"], [""] * 5, dur=40)
    tr.kernel("fused_moe_kernel", 9.0)
    t = _table(tmp_path, tr)
    g = _row(t, "aten::_grouped_mm")
    assert g["flop"] == 2 * 640 * 256 * 512
    assert g["compulsory_bytes"] == (640 * 256 + 8 * 256 * 512 + 640 * 512) * 2
    m = _row(t, "vllm::outplace_fused_experts")
    assert m["flop"] == 2 * 16 * 2 * 1536 * 1024 + 2 * 16 * 2 * 1024 * 768
    weights = (8 * 1536 * 1024 + 8 * 1024 * 768) * 2
    assert m["compulsory_bytes"] == 16 * 1024 * 2 + 16 * 2 * 4 * 2 + weights + 16 * 1024 * 2
    assert m["family"] == "fused_moe" and m["roof"] == "tensor_bf16"


def _slowed(src: Path, dst: Path, factor: float) -> Path:
    """A copy of the trace ``src`` with every kernel ``factor`` times as long."""
    import gzip

    doc = json.loads(gzip.open(src).read())
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["dur"] = e["dur"] * factor
    dst.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dst


def test_a_trace_compared_with_itself_passes_and_a_slowed_copy_fails(tmp_path: Path) -> None:
    """compare on two traces (issue 52): operators matched by name and shapes; the BERT trace
    against itself has speedup 1 on every operator and passes the gate; against a copy with every
    kernel 30 % longer, each operator is 1/1.3 as fast and the gate fails (exit 1)."""
    from tests.helpers.cli import run as run_cli

    trace = shared("tracelens__bert-small-uncased_h100.json.gz")
    same = api.compare_traces(trace, trace, fail_if_slower=5)
    work = same.table[same.table["work_source"] != "idle"]
    assert (same.table["status"] == "matched").all() and (work["speedup"] == 1.0).all()
    assert same.totals["speedup"] == 1.0 and same.gate.verdict == "pass"
    slow = _slowed(trace, tmp_path / "slow.json.gz", 1.3)
    worse = api.compare_traces(trace, slow, fail_if_slower=5)
    work = worse.table[~worse.table["work_source"].isin(["idle", "bytes moved (trace)"])]
    assert len(work) == 15  # 15 operators; the copy (memcpy DtoH) was not slowed
    assert work["speedup"].to_numpy() == pytest.approx(1 / 1.3, rel=1e-9)
    assert worse.gate.verdict == "fail" and worse.gate.exit_code == 1
    proc = run_cli(
        "compare", str(trace), str(slow), "-o", str(tmp_path / "c"), "--fail-if-slower", "5", "-q"
    )
    assert proc.returncode == 1
    saved = pd.read_csv(tmp_path / "c" / "trace_compare.csv")
    assert len(saved) == len(worse.table) and set(saved["status"]) == {"matched"}
    assert (
        run_cli(
            "compare",
            str(trace),
            str(trace),
            "-o",
            str(tmp_path / "d"),
            "--fail-if-slower",
            "5",
            "-q",
        ).returncode
        == 0
    )


def test_operators_added_and_removed_between_traces(tmp_path: Path) -> None:
    """An operator (with its shapes) only in one trace is only_before or only_after."""
    a, b = Trace(), Trace()
    for tr, n in ((a, 128), (b, 256)):
        tr.op("aten::mm", [[n, 64], [64, 32]], [F32] * 2, ["", ""], dur=20)
        tr.kernel("gemm", 2.0)
    t = api.compare_traces(a.write(tmp_path / "a.json.gz"), b.write(tmp_path / "b.json.gz")).table
    assert sorted(t["status"]) == ["only_after", "only_before"]
    gone = t[t["status"] == "only_before"].iloc[0]
    assert gone["input_dims"] == "[[128,64],[64,32]]" and gone["flop_before"] == 2 * 128 * 32 * 64


def test_a_rate_no_gpu_reaches_is_flagged_and_kept_off_the_chart(tmp_path: Path) -> None:
    """A 4096^3 FP32 GEMM in 1 ns runs at 2,051,328x the H100's FP32 roof (issue 53): the row is
    kept with its time and FLOPs, flagged, its roof fraction and time at the roof empty, its bound
    unknown, and the chart draws no dot for it; a plausible 5 ms one is left as it is."""
    from ncuroof.render import analytic as analytic_page

    for dur_us, impossible in ((0.001, True), (5000.0, False)):
        tr = Trace()
        tr.op("aten::mm", [[4096, 4096], [4096, 4096]], [F32] * 2, ["", ""], dur=20)
        tr.kernel("gemm", dur_us)
        t = _table(tmp_path, tr)
        r = _row(t, "aten::mm")
        assert r["flop"] == 2 * 4096**3 and r["time_s"] == pytest.approx(dur_us * 1e-6)
        assert ("faster than the roof" in r["flag"]) == impossible
        assert math.isnan(r["roof_fraction"]) == impossible
        assert (r["bound"] == "unknown") == impossible
        fig = analytic_page.figure(t, "t")
        dots = [d for d in fig.data if "aten::mm" in str(getattr(d, "text", "") or "")]
        assert bool(dots) != impossible


def test_collectives_are_rows_with_nccl_tests_bandwidths(tmp_path: Path) -> None:
    """NCCL kernels carrying PyTorch's metadata (issue 52) are rows of their own: an all-reduce of
    2^20 BFloat16 over 8 ranks in 100 us moves 2 MiB, algbw 2 MiB / 100 us and busbw algbw x
    2*7/8; an all-gather of 4 x 2^18 floats out over 4 ranks: busbw algbw x 3/4 (nccl-tests); the
    share of the step is each row's time share, and the coverage counts them as modelled."""
    tr = Trace()
    tr.op("aten::mm", [[256, 256], [256, 256]], [F32] * 2, ["", ""], dur=20)
    tr.kernel("gemm", 100.0)
    tr.op("nccl:all_reduce", [[1048576]], [BF16], [""], dur=20)
    meta = {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576}
    meta.update({"Group size": 8, "dtype": "BFloat16"})
    tr.kernel(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        100.0,
        args=meta,
    )
    tr.op("nccl:_all_gather_base", [[262144]], [F32], [""], dur=20)
    meta = {
        "Collective name": "_allgather_base",
        "In msg nelems": 262144,
        "Out msg nelems": 1048576,
    }
    meta.update({"Group size": 4, "dtype": "Float"})
    tr.kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 50.0, args=meta)
    t = _table(tmp_path, tr)
    ar, ag = _row(t, "allreduce (collective)"), _row(t, "_allgather_base (collective)")
    assert ar["compulsory_bytes"] == 2**20 * 2 and ar["group_size"] == 8
    assert ar["algbw_bytes_per_s"] == pytest.approx(2**21 / 100e-6)
    assert ar["busbw_bytes_per_s"] == pytest.approx(2**21 / 100e-6 * 2 * 7 / 8)
    assert ag["compulsory_bytes"] == 2**20 * 4
    assert ag["busbw_bytes_per_s"] == pytest.approx(2**22 / 50e-6 * 3 / 4)
    assert ar["work_source"] == "communication (trace metadata)" and math.isnan(ar["roof_fraction"])
    assert "nccl:all_reduce" not in set(t["op"])  # the kernel is the collective's row
    fams = analytic.family_coverage(t).set_index("family")
    assert fams.loc["communication", "formula_share"] == 1.0
