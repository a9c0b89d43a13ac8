"""``ncuroof mcp`` (issue 30) driven by the official MCP client SDK over stdio: the tools are
listed, analyze and compare return the documents of ``--json`` (valid against the shipped schemas),
bad input is an error result with the CLI's line and the server keeps serving, writes stay in
--outdir, and ncu is out of reach unless --allow-profile."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time

import pytest

from ncuroof.render import json_doc
from tests.helpers.errors import assert_one_line_error
from tests.helpers.reports import REPO, shared

pytest.importorskip("mcp", reason="the MCP SDK is an extra: pip install 'ncuroof[mcp]'")
jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra")

from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402

REPORT = "ESMM-Research__profile_output.ncu-rep"
BEFORE, AFTER = (
    "gene-pop2020__time-dram_dzv_ak_ncuroof-time-0.ncu-rep",
    "gene-pop2020__time-flops_dzv_ak_ncuroof-time-0.ncu-rep",
)
ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}


def cli_json(*args: str) -> tuple[dict | None, subprocess.CompletedProcess]:
    proc = subprocess.run(
        [sys.executable, "-m", "ncuroof", *args, "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    return (json.loads(proc.stdout) if proc.stdout else None), proc


async def session_calls(
    server_args: list[str], calls: list[tuple[str, dict]]
) -> tuple[list[str], list]:
    """Start ``ncuroof mcp ARGS``, list its tools and make the calls in order, in one session."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ncuroof", "mcp", *server_args], env=ENV
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        names = [t.name for t in (await s.list_tools()).tools]
        return names, [await s.call_tool(name, args) for name, args in calls]


def doc_of(result) -> dict:
    assert not result.is_error, result.content[0].text
    text_doc = json.loads(result.content[0].text)
    assert result.structured_content == text_doc  # the same document, structured and as text
    return text_doc


def without_outputs(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "outputs"}


def test_tools_answer_as_the_cli_and_bad_input_does_not_stop_the_server(tmp_path):
    report, before, after = str(shared(REPORT)), str(shared(BEFORE)), str(shared(AFTER))
    missing = str(tmp_path / "missing.ncu-rep")
    calls = [
        ("analyze", {"path": missing}),
        ("analyze", {"path": report}),
        ("compare", {"before": before, "after": after, "fail_if_slower_pct": 0}),
        ("explain", {"path": report, "kernel": "no_such_kernel"}),
        ("list_gpus", {}),
    ]
    names, (bad, analyzed, compared, unknown, gpus) = asyncio.run(session_calls([], calls))
    assert {"analyze", "compare", "explain", "list_gpus"} <= set(names) and "profile" not in names

    _, proc = cli_json("analyze", missing)
    assert bad.is_error and bad.content[0].text == proc.stderr.strip() and proc.returncode == 2

    cli_doc, proc = cli_json("analyze", report, "-o", str(tmp_path / "a"))
    doc = doc_of(analyzed)
    jsonschema.validate(doc, json_doc.shipped_schema("analyze"))
    assert without_outputs(doc) == without_outputs(cli_doc) and doc["outputs"] == {
        "outdir": None,
        "files": [],
    }
    assert not (
        REPO.parent / "shared" / "fixtures" / "ESMM-Research__profile_output.ncuroof"
    ).exists()

    cli_cmp, proc = cli_json(
        "compare", before, after, "-o", str(tmp_path / "c"), "--fail-if-slower", "0"
    )
    cmp_doc = doc_of(compared)
    jsonschema.validate(cmp_doc, json_doc.shipped_schema("compare"))
    assert (
        without_outputs(cmp_doc) == without_outputs(cli_cmp)
        and cmp_doc["gate"]["passed"] is False
        and proc.returncode == 1
    )

    assert unknown.is_error and unknown.content[0].text.startswith(
        "ncuroof: error: no kernel 'no_such_kernel'"
    )
    ids = [g["id"] for g in doc_of(gpus)["gpus"]]
    assert "h100-sxm" in ids and "a10g" in ids


def test_explain_after_analyze_reuses_the_analysis_and_details_a_kernel():
    from ncuroof.mcp_server import Session

    s = Session()
    doc = s.analyze(str(shared(REPORT)))
    first = doc["kernels"][0]
    ex = s.explain(str(shared(REPORT)), first["kernel_label"])
    assert ex["kernel"] == first and ex["launches"][0]["advice"] == first["advice"]
    assert len(s._cache) == 1  # one analysis served both calls


def test_several_inputs_are_analyzed_as_analyze_does_whether_written_or_not(tmp_path):
    """Two reports of one kernel on two runs are MPI ranks to ``analyze`` (ranks.csv): the MCP
    tool gives the same products without writing files as with."""
    from ncuroof.mcp_server import Session

    ranks = [str(shared(f"cs599k__silu-2025-04-{d}-v1.ncu-rep")) for d in ("18", "19")]
    written = Session(outdir=tmp_path / "out").analyze(ranks, write=True)
    unwritten = Session().analyze(ranks)
    assert list(written["products"]) == list(unwritten["products"]) == ["ranks"]
    assert written["products"]["ranks"] == unwritten["products"]["ranks"]
    assert unwritten["outputs"]["files"] == []


def test_writes_stay_in_outdir_and_profile_only_when_allowed(tmp_path):
    out = tmp_path / "out"
    calls = [
        ("analyze", {"path": str(shared(REPORT)), "write": True}),
        ("profile", {"command": ["true"], "name": "../escape"}),
    ]
    names, (analyzed, profiled) = asyncio.run(
        session_calls(["--outdir", str(out), "--allow-profile"], calls)
    )
    assert "profile" in names
    doc = doc_of(analyzed)
    assert doc["outputs"]["outdir"] == str(out.resolve() / "ESMM-Research__profile_output.ncuroof")
    assert sorted(p.name for p in out.iterdir()) == ["ESMM-Research__profile_output.ncuroof"]
    assert "launches.csv" in doc["outputs"]["files"]
    # no ncu here (or the program is not a CUDA program): an error result, and nothing outside out/
    assert profiled.is_error and profiled.content[0].text.startswith("ncuroof: error:")
    assert not (tmp_path / "escape.ncu-rep").exists()


def test_without_the_sdk_mcp_says_how_to_install(monkeypatch, capsys):
    from ncuroof import cli

    monkeypatch.setitem(
        sys.modules, "mcp.server.mcpserver", None
    )  # import fails as if the extra were not installed
    with pytest.raises(SystemExit) as exc:
        cli.main(["mcp"])
    assert exc.value.code == 2
    assert_one_line_error(capsys.readouterr().err, None, "pip install 'ncuroof[mcp]'")


def test_mcp_arguments_are_judged_like_the_cli_and_the_server_keeps_serving(tmp_path):
    """Issue 45: a negative gate, an unknown argument, an empty run list and a pattern that
    backtracks without limit are each an error result in one line; no traceback reaches the
    server's stderr, identical runs never fail the gate, and the next call is answered."""
    report = str(shared(REPORT))
    long_name = tmp_path / "k.csv"
    text = shared("ESMM-Research__metrics.csv").read_text(encoding="utf-8")
    long_name.write_text(text.replace("basic(", "a" * 60 + "!basic("), encoding="utf-8")
    expect = tmp_path / "expect.toml"  # a pattern that backtracks without limit in Python's re
    expect.write_text('[sizes]\nn = 1\n[[kernel]]\nmatch = "^(a|aa)+$"\nflop = "n"\n')
    calls = [
        ("compare", {"before": report, "after": report, "fail_if_slower_pct": -5}),
        ("analyze", {"path": report, "top": -1}),
        ("compare", {"before": report, "after": []}),
        ("compare", {"before": str(long_name), "after": str(long_name), "match": "bogus"}),
        ("analyze", {"path": str(long_name), "expect": str(expect)}),
        ("compare", {"before": report, "after": report, "fail_if_slower_pct": 5}),
        ("list_gpus", {}),
    ]
    start = time.monotonic()
    _, results = asyncio.run(session_calls([], calls))
    negative, unknown, empty, bad_choice, backtracking, same, gpus = results
    assert time.monotonic() - start < 60
    assert backtracking.is_error and "(a|aa)+$" in backtracking.content[0].text
    assert "regex_seconds" in backtracking.content[0].text
    for result, words in (
        (negative, ("fail_if_slower_pct", "greater than or equal to 0")),
        (unknown, ("top", "Extra inputs are not permitted")),
        (empty, ("after names no run",)),
        (bad_choice, ("match",)),
    ):
        assert result.is_error, words
        message = result.content[0].text
        assert all(w in message for w in words), message
        assert "Traceback" not in message and "internal error" not in message
    assert doc_of(same)["gate"]["passed"] is True  # identical runs never fail the gate
    assert doc_of(gpus)["gpus"]


class _Raw:
    """``ncuroof mcp`` over raw stdio: bytes in, one JSON-RPC message per line out."""

    def __init__(self) -> None:
        self.p = subprocess.Popen(
            [sys.executable, "-m", "ncuroof", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=ENV,
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"},
                },
            }
        )
        assert "result" in self.recv()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg) -> None:
        data = msg if isinstance(msg, bytes) else (json.dumps(msg) + "\n").encode()
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def recv(self) -> dict:
        return json.loads(self.p.stdout.readline())

    def call(self, i: int, tool: str, arguments: dict) -> str:
        params = {"name": tool, "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        r = self.recv()
        assert r["id"] == i and r["result"]["isError"]
        return r["result"]["content"][0]["text"]


def test_malformed_requests_get_json_rpc_errors_and_bad_paths_one_line() -> None:
    """Issue 53: malformed JSON, a batch, a request without a method or with an object id each get
    a JSON-RPC error; '/', a 5000-character path, a NUL, 2000 paths and a wrong argument type get
    the CLI's one line (no pydantic text, no URL); the end of stdin ends the server at once."""
    s = _Raw()
    for data, code in (
        (b"{not json\n", -32700),
        (b'[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]\n', -32600),
        (b'{"jsonrpc":"2.0","id":3}\n', -32600),
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}\n', -32600),
    ):
        s.send(data)
        assert s.recv()["error"]["code"] == code
    for i, (path, words) in enumerate(
        (
            ("/", "names no file"),
            ("a" * 5000, "limits.mcp_path_chars"),
            ("x\x00y", "NUL byte"),
            (["a.ncu-rep"] * 2000, "limits.mcp_paths"),
        ),
        start=10,
    ):
        text = s.call(i, "analyze", {"path": path})
        assert text.startswith("ncuroof: error: ") and words in text and "\n" not in text
    text = s.call(20, "analyze", {"path": "x.ncu-rep", "focus": "most"})
    assert text.startswith("ncuroof: error: argument 'focus'") and "http" not in text
    assert "\n" not in text
    t0 = time.monotonic()
    s.p.stdin.close()
    assert s.p.wait(timeout=20) == 0 and time.monotonic() - t0 < 10


def test_ctrl_c_stops_the_server_with_one_line() -> None:
    """SIGINT: 'ncuroof: aborted', exit 130, no traceback, the server gone (issue 53)."""
    import signal

    s = _Raw()
    s.p.send_signal(signal.SIGINT)
    assert s.p.wait(timeout=20) == 130
    err = s.p.stderr.read().decode()
    assert err.strip().splitlines()[-1] == "ncuroof: aborted" and "Traceback" not in err
