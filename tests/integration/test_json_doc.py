"""``analyze --json`` and ``compare --json`` (issue 30): one document on stdout, valid against the
shipped schemas, agreeing with launches.csv and with each run's own analysis; the schemas equal what
``scripts/make_schemas.py`` generates from ncuroof/schema.py."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pandas as pd
import pytest

from ncuroof import views
from ncuroof.render import json_doc
from ncuroof.schema import KERNEL_SUMMARY, KERNEL_WORK, LEVELS, PRECISIONS
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, shared

jsonschema = pytest.importorskip(
    "jsonschema", reason="jsonschema is in the test extra (pip install 'ncuroof[test]')"
)

TWO_LAUNCHES = "RooflineAnalysis_On_NVIDIA_GPU__output0.ncu-rep"  # one kernel launched twice
FOUR_KERNELS = "ESMM-Research__profile_output.ncu-rep"
GENE_DRAM, GENE_FLOPS = (
    "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep",
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
)


def _no_constant(name: str) -> float:
    raise AssertionError(f"the document holds {name}")


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.run(
        [sys.executable, "-m", "ncuroof", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def document(proc: subprocess.CompletedProcess) -> dict:
    """stdout as exactly one JSON document (NaN and inf refused)."""
    return json.loads(proc.stdout, parse_constant=_no_constant)


def validate(doc: dict, kind: str) -> None:
    validator = jsonschema.Draft202012Validator(json_doc.shipped_schema(kind))
    errors = [f"{list(e.path)}: {e.message[:200]}" for e in validator.iter_errors(doc)]
    assert not errors, errors[:5]


@pytest.mark.parametrize("kind", ["analyze", "compare"])
def test_shipped_schemas_are_generated_from_schema_py(kind):
    shipped = (REPO / "src" / "ncuroof" / "schemas" / f"{kind}.schema.json").read_text(
        encoding="utf-8"
    )
    assert shipped == views.schema_text(kind), (
        "run scripts/make_schemas.py after changing ncuroof/schema.py"
    )
    jsonschema.Draft202012Validator.check_schema(json.loads(shipped))


def test_schema_has_every_declared_kernel_column():
    props = json_doc.shipped_schema("analyze")["properties"]["kernels"]["items"]["properties"]
    assert set(KERNEL_SUMMARY) | set(KERNEL_WORK) <= set(props)
    assert props["time_s"]["type"] == ["number", "null"] and "[s]" in props["time_s"]["description"]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory):
    """``analyze --json`` of a 4-kernel report: the process, its document and launches.csv."""
    out = tmp_path_factory.mktemp("json") / "out"
    proc = run_cli("analyze", str(shared(FOUR_KERNELS)), "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    return proc, document(proc), pd.read_csv(out / "launches.csv"), out


def test_analyze_json_is_one_document_and_the_outputs_are_written(analyzed):
    proc, doc, csv, out = analyzed
    validate(doc, "analyze")
    assert doc["schema"] == "ncuroof.analyze" and doc["schema_version"] == json_doc.DOCUMENT_VERSION
    assert (
        doc["outputs"]["outdir"] == str(out)
        and "launches.csv" in doc["outputs"]["files"]
        and (out / "roofline.html").is_file()
    )
    assert "wrote" not in proc.stdout  # the summary is not printed beside the document
    inp = doc["inputs"][0]
    import hashlib

    assert inp["sha256"] == hashlib.sha256(shared(FOUR_KERNELS).read_bytes()).hexdigest()
    assert inp["gpu"] == csv["device_name"].iloc[0] and inp["ncu_version"] == str(
        csv["ncu_version"].iloc[0]
    )


def test_analyze_json_agrees_with_kernels_csv(analyzed):
    """Per kernel: launches, time and each precision's FLOPs and each level's bytes are
    launches.csv's launches summed (to the last digit: one launch each here); a value missing
    there is null, never 0.
    """
    _, doc, csv, _ = analyzed
    assert len(doc["kernels"]) == csv["kernel_key"].nunique() == 4
    for rec in doc["kernels"]:
        rows = csv[csv["kernel_key"] == rec["kernel_key"]]
        assert rec["launches"] == len(rows) == 1
        row = rows.iloc[0]
        assert rec["time_s"] == row["time_s"]
        for col in [f"{p}_flop" for p in PRECISIONS] + [f"{lv}_bytes" for lv in LEVELS]:
            assert (rec[col] is None) == pd.isna(row[col]), col
            if rec[col] is not None:
                assert rec[col] == row[col], col
        assert (
            rec["bound"] == row["bound"]
            and rec["diagnosis"] == row["diagnosis"]
            and rec["advice"] == row["advice"]
        )
        # the kernel's binding dot divides summed FLOPs by summed time; the launch row uses its own
        # rate: equal to rounding
        assert rec["roof_fraction"] == pytest.approx(row["roof_fraction"], rel=1e-14)
        assert rec["time_at_roof_s"] == row["time_at_roof_s"] and rec["saving_s"] == row["saving_s"]
        assert isinstance(rec["flags"], list)


def test_a_kernels_launches_are_summed_and_rates_time_weighted():
    """Two launches of one kernel: FLOPs and bytes summed, the rate their sum over the summed time
    (hand arithmetic)."""
    from ncuroof.model.analysis import build

    a = build([shared(TWO_LAUNCHES)])
    doc = json.loads(json_doc.dumps(json_doc.analysis_document(a)), parse_constant=_no_constant)
    validate(doc, "analyze")
    (rec,) = doc["kernels"]
    k = a.launches
    assert rec["launches"] == 2 and rec["time_s"] == pytest.approx(k["time_s"].sum(), rel=1e-15)
    assert rec["dram_bytes"] == k["dram_bytes"].iloc[0] + k["dram_bytes"].iloc[1]
    assert rec["dram_bytes_per_s"] == pytest.approx(rec["dram_bytes"] / rec["time_s"], rel=1e-12)
    assert {(d["precision"], d["level"]) for d in rec["dots"]} == set(
        zip(a.dots["precision"], a.dots["level"])
    )
    assert doc["totals"]["launches"] == 2 and doc["outputs"] == {"outdir": None, "files": []}


def test_value_never_writes_nan_inf_or_zero_for_missing():
    assert [json_doc.value(v) for v in (math.nan, math.inf, -math.inf, None, pd.NA, "", 0.0)] == [
        None
    ] * 6 + [0.0]
    assert json_doc.value([("a", 1.5)]) == [["a", 1.5]]


def test_explain_names_the_kernels_when_one_is_unknown():
    from ncuroof.model.analysis import build

    a = build([shared(TWO_LAUNCHES)])
    label = a.summary["kernel_label"].iloc[0]
    doc = json_doc.explain_document(a, label)
    assert doc["kernel"]["kernel_label"] == label and len(doc["launches"]) == 2
    assert all(r["evidence"] for r in doc["launches"])
    with pytest.raises(KeyError, match=label):
        json_doc.explain_document(a, "no_such_kernel")


def test_compare_json_gate_and_speedup_from_each_sides_own_analysis(tmp_path):
    before, after = shared(GENE_DRAM), shared(GENE_FLOPS)
    proc = run_cli(
        "compare",
        str(before),
        str(after),
        "-o",
        str(tmp_path / "c"),
        "--json",
        "--fail-if-slower",
        "0",
    )
    assert proc.returncode == 1, proc.stderr  # the gate failed: exit 1, and the document says why
    doc = document(proc)
    validate(doc, "compare")
    assert doc["gate"]["passed"] is False and doc["gate"]["findings"] and "slower" in proc.stderr
    from ncuroof.model.analysis import build

    tb, ta = (build([p]).summary.set_index("kernel_key")["time_s"] for p in (before, after))
    for rec in doc["kernels"]:
        assert rec["status"] == "matched"
        key = rec["kernel_key"]
        assert rec["time_s_before"] == tb[key] and rec["time_s_after"] == ta[key]
        assert rec["speedup"] == pytest.approx(tb[key] / ta[key], rel=1e-15)
    assert (
        doc["inputs"]["before"][0]["path"] == str(before)
        and doc["inputs"]["after"][0]["launches"] >= 1
    )
    rec = doc["kernels"][0]
    assert (
        rec["dram_bytes_before"] is not None and rec["dram_bytes_after"] is None
    )  # the FLOP run measured no DRAM bytes
    assert (tmp_path / "c" / "compare.csv").is_file()


def test_compare_json_without_gate_is_null(tmp_path):
    from ncuroof import api

    r = api.compare_runs(shared(TWO_LAUNCHES), shared(TWO_LAUNCHES), write=False)
    doc = json.loads(
        json_doc.dumps(json_doc.compare_document(r, [shared(TWO_LAUNCHES)], [shared(TWO_LAUNCHES)]))
    )
    validate(doc, "compare")
    assert (
        doc["gate"] is None
        and doc["kernels"][0]["speedup"] == 1.0
        and doc["outputs"]["outdir"] is None
    )
    assert (
        doc["kernels"][0]["dram_bytes_before"] == doc["kernels"][0]["dram_bytes_after"] is not None
    )


def test_bad_input_with_json_is_one_line_on_stderr_and_nothing_on_stdout(tmp_path):
    proc = run_cli("analyze", str(tmp_path / "missing.ncu-rep"), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert_one_line_error(proc.stderr, tmp_path / "missing.ncu-rep")


def test_dumps_escapes_what_a_terminal_would_act_on():
    name = "k\x1b[31m\x9b2J\u202eevil\x7f"
    text = json_doc.dumps({"kernel_name": name, "x": math.nan and None})
    assert not any(c in text for c in "\x1b\x9b\u202e\x7f")
    assert json.loads(text)["kernel_name"] == name  # escapes, decoded back to the same text


def test_the_document_carries_the_products_written_beside_it(tmp_path):
    """--json serializes the products of the run (issue 31): the phases, the what-if projection and
    the PM samples and their phases, one record per row of their CSV read back with pandas, valid
    against the schema; the per-launch instruction points are in their file only."""
    out = tmp_path / "out"
    proc = run_cli(
        "analyze",
        str(shared("cutlass-panjd123__4f3955ed3c_report.ncu-rep")),
        "-o",
        str(out),
        "-q",
        "--json",
        "--group-by",
        "nvtx",
        "--what-if",
        "h100-sxm",
    )
    assert proc.returncode == 0, proc.stderr
    doc = document(proc)
    validate(doc, "analyze")
    # the report was PM-sampled (issue 51): its samples and phases are products too
    assert set(doc["products"]) == {"phases", "whatif", "samples", "sample_phases"}
    assert (out / "instruction_points.csv").is_file()
    for name in ("phases", "whatif", "samples", "sample_phases"):
        table = pd.read_csv(out / f"{name}.csv", keep_default_na=False, na_values=[""])
        recs = doc["products"][name]
        assert len(recs) == len(table) > 0
        for c in table.columns:
            got = [r[c] for r in recs]
            want = [None if pd.isna(v) else v for v in table[c]]
            if pd.api.types.is_numeric_dtype(table[c]) and not pd.api.types.is_bool_dtype(table[c]):
                assert all(
                    (g is None and w is None) or math.isclose(g, w, rel_tol=1e-15)
                    for g, w in zip(got, want, strict=True)
                ), (name, c)
            else:
                assert got == [w if w != "" else None for w in want], (name, c)


def test_a_plain_run_has_no_products_in_its_document(analyzed):
    assert analyzed[1]["products"] == {}
