"""``ncuroof mcp``: the analysis as a Model Context Protocol server over stdio, for
agents and tuning loops.

Built on the official MCP Python SDK (``pip install 'ncuroof[mcp]'``,
``mcp.server.mcpserver.MCPServer``). The tools return the documents of ``--json``
(:mod:`ncuroof.render.json_doc`):

``analyze(path, ...)``
    The ``analyze --json`` document of a report, CSV export(s) or saved analysis directory.
``compare(before, after, ...)``
    The ``compare --json`` document, with the gate's result when ``fail_if_slower_pct`` is given.
``explain(path, kernel, ...)``
    One kernel's record with every launch's evidence, advice, flags and notes.
``list_gpus()``
    The datasheet GPUs of ``metrics/gpus.toml`` (what ``gpu`` and ``--what-if`` take).
``profile(command, name, ...)``
    Only when the server was started with ``--allow-profile``: runs ncu on the command, keeps the
    report in the output directory and returns its analysis.

Bad input is a tool error whose text is the CLI's one line (``ncuroof: error: ...``); the server
keeps serving. The server reads the paths the client gives, writes only inside the output directory
it was started with (``--outdir``; without one it writes nothing) and runs ncu only through
``profile``. The process stays warm: imports, the metric catalog and the GPU table are loaded once,
and the last few analyses are kept (keyed by the inputs' paths, sizes and modification times, and
the options), so ``explain`` after ``analyze`` of the same report costs no second analysis.
"""

from __future__ import annotations

import collections
import inspect
import io
import os
import threading
from pathlib import Path
from typing import Any

from . import api, catalog, views
from .errors import InputError, MissingModuleError, NcuroofError
from .model.analysis import Analysis, AnalysisOptions
from .render import json_doc
from .views.base import Option
from .views.options import ANALYSIS, FAIL_IF_SLOWER, LAUNCH_COUNT, analysis_options

__all__ = ["Session", "build_server", "serve", "INSTALL_HINT", "error_text"]

#: What ``ncuroof mcp`` says without the SDK.
INSTALL_HINT = "ncuroof mcp needs the MCP Python SDK: pip install 'ncuroof[mcp]'"
#: Analyses kept by a session (see the module docstring).
CACHED_ANALYSES = 4


def error_text(exc: BaseException) -> str:
    """The CLI's one line for an error a tool met (``ncuroof: error: ...``), control
    characters escaped."""
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return f"ncuroof: error: {text}"


def options_of(**values: Any) -> AnalysisOptions:
    """The :class:`~ncuroof.model.analysis.AnalysisOptions` of a tool call's analysis options
    (:data:`ncuroof.views.options.ANALYSIS`, spelled as the CLI's), each parsed as declared.

    Raises
    ------
    ValueError
        For an unknown value or a roof that does not parse (the message says which).
    """
    return analysis_options(dict(values))


class Session:
    """What the server's tools do, without the protocol: one per server process.

    Parameters
    ----------
    outdir : Path, optional
        The only directory the tools may write into (each analysis in ``<input stem>.ncuroof/``
        there, each comparison in ``<after stem>.compare/``); None: nothing is written.
    allow_profile : bool, default False
        Whether the ``profile`` tool (which runs ncu) exists; it needs ``outdir`` for its reports.
    """

    def __init__(self, outdir: Path | None = None, allow_profile: bool = False) -> None:
        if allow_profile and outdir is None:
            raise InputError(
                "--allow-profile needs --outdir DIR: the reports ncu writes are kept there"
            )
        self.outdir = Path(outdir).resolve() if outdir is not None else None
        self.allow_profile = allow_profile
        self._cache: collections.OrderedDict[tuple, Analysis] = collections.OrderedDict()
        self._lock = threading.Lock()
        catalog.load(), catalog.load_gpus()  # warm: every call after this one reuses them

    @staticmethod
    def _paths(value: Any) -> list[Path]:
        """A tool's ``path`` argument as paths, checked as the command line checks its own: at most
        ``[limits] mcp_paths`` of them, each text of at most ``mcp_path_chars`` characters without
        a NUL, naming a file (not ``''``, ``'.'`` or ``'/'``); InputError in one line otherwise."""
        lim = catalog.limits()
        items = [value] if isinstance(value, (str, Path)) else list(value)
        if len(items) > lim["mcp_paths"]:
            raise InputError(
                catalog.over_limit("mcp_paths", f"{len(items):,} paths in one request")
            )
        for p in items:
            text = str(p)
            if len(text) > lim["mcp_path_chars"]:
                raise InputError(
                    catalog.over_limit("mcp_path_chars", f"a path of {len(text):,} characters")
                )
            if "\x00" in text:
                raise InputError(f"the path {text[:60]!r} holds a NUL byte: pass the file's name")
            if text.strip() in ("", ".", "..") or not Path(text).name:
                raise InputError(
                    f"{text!r} names no file: pass a report, an ncu CSV export, an output directory"
                    " or a PyTorch trace"
                )
        return api.as_paths(items)

    def _inside(self, name: str) -> Path:
        """``outdir / name``, refused unless it stays directly inside ``outdir``."""
        assert self.outdir is not None
        target = (self.outdir / Path(name).name).resolve()
        if target.parent != self.outdir:
            raise InputError(
                f"{name!r} would be written outside the server's output directory {self.outdir}"
            )
        return target

    def _write_to(self, write: bool, name: str) -> Path | None:
        if not write:
            return None
        if self.outdir is None:
            raise InputError(
                "this server writes nothing: start it with ncuroof mcp --outdir DIR to keep outputs"
            )
        return self._inside(name)

    def analysis(self, paths: list[Path], options: AnalysisOptions) -> Analysis:
        """The analysis of ``paths`` (:func:`ncuroof.api.analysis_of`), from the cache when the
        inputs did not change."""
        key = (tuple((str(p.resolve()), *_stamp(p)) for p in paths), repr(options))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        a = api.analysis_of(paths, options)
        with self._lock:
            self._cache[key] = a
            while len(self._cache) > CACHED_ANALYSES:
                self._cache.popitem(last=False)
        return a

    def analyze(self, path: str | list[str], write: bool = False, **options: Any) -> dict[str, Any]:
        """The ``analyze --json`` document (outputs written into ``outdir`` when ``write``)."""
        paths = self._paths(path)
        if not paths:
            raise InputError(
                "no input files given: pass a .ncu-rep/.ncu-repz report or an ncu CSV export"
            )
        asked = views.view_values(options)
        if len(paths) == 1 and api.is_trace(paths[0]) and options.get("timeline") is None:
            return self._trace(paths[0], write, asked["fp32_matmul"], options)
        opts = options_of(**options)
        out = self._write_to(write, api.default_outdir(paths[0]).name)
        if out is None and len(paths) == 1 and not asked["ranks"]:  # the cached analysis serves
            a = self.analysis(paths, opts)
            made = views.build(a, views.request(**asked))
            return json_doc.analysis_document(a, products=views.in_document(made))
        result = api.analyze(paths, out, opts, write=out is not None, **asked)
        return json_doc.analysis_document(
            result.analysis,
            result.outdir,
            list(result.files),
            result.failures,
            views.in_document(result.tables),
        )

    def _trace(
        self, path: Path, write: bool, fp32_matmul: str, options: dict[str, Any]
    ) -> dict[str, Any]:
        """A PyTorch trace alone: its operators with analytic work (issue 41); ``gpu`` and
        ``device`` are the only options it reads."""
        out = self._write_to(write, api.default_outdir(path).name)
        res = api.analyze_trace(
            path,
            out,
            gpu=options.get("gpu"),
            device=options.get("device"),
            fp32_matmul=fp32_matmul,
            write=out is not None,
        )
        return json_doc.trace_document(res)

    def compare(
        self,
        before: str | list[str],
        after: str | list[str],
        fail_if_slower_pct: float | None = None,
        strict: bool = False,
        write: bool = False,
        **options: Any,
    ) -> dict[str, Any]:
        """The ``compare --json`` document (``compare.csv``/``.html`` written into
        ``outdir`` when ``write``)."""
        b, a, opts = self._paths(before), self._paths(after), options_of(**options)
        for side, given in (("before", b), ("after", a)):
            if not given:
                raise InputError(
                    f"{side} names no run: give a report, an ncu CSV export or an ncuroof output"
                    " directory"
                )
        out = self._write_to(
            write, (a[0].name if a[0].is_dir() else api.default_outdir(a[0]).stem) + ".compare"
        )
        result = api.compare_runs(
            b, a, out, opts, write=out is not None, strict=strict, fail_if_slower=fail_if_slower_pct
        )
        return json_doc.compare_document(result, b, a, fail_if_slower_pct)

    def explain(self, path: str | list[str], kernel: str, **options: Any) -> dict[str, Any]:
        """One kernel's evidence and advice (:func:`ncuroof.render.json_doc.explain_document`)."""
        return json_doc.explain_document(
            self.analysis(self._paths(path), options_of(**options)), kernel
        )

    def list_gpus(self) -> dict[str, Any]:
        """The datasheet GPUs (:func:`ncuroof.render.json_doc.gpus_document`)."""
        return json_doc.gpus_document(catalog.load_gpus())

    def profile(
        self,
        command: list[str],
        name: str,
        launch_count: int | None = None,
        kernel_name: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Run ``command`` under ncu into ``outdir/<name>.ncu-rep`` and return its
        ``analyze --json`` document."""
        if not self.allow_profile:
            raise InputError(
                "profiling is off: start the server with ncuroof mcp --outdir DIR --allow-profile"
            )
        report = self._inside(
            name
        )  # no suffix: the one this ncu version writes by default (api.profile_run)
        res = api.profile_run(
            list(command),
            report,
            echo=lambda line: None,
            launch_count=launch_count,
            kernel_name=kernel_name,
        )
        return self.analyze(str(res.report), write=True, **options)


def _stamp(p: Path) -> tuple[int, int]:
    """Size and modification time of an input (a directory's launch table when it has one,
    :func:`ncuroof.parser.saved.saved_launches`); (-1, -1) when absent."""
    from .parser.saved import saved_launches

    target = (saved_launches(p) or p / "launches.csv") if p.is_dir() else p
    try:
        st = target.stat()
    except OSError:
        return (-1, -1)
    return (st.st_size, st.st_mtime_ns)


def _param(o: Option) -> Any:
    """The keyword-only tool parameter of a declaration: its type, default, description and, for a
    bounded option, the bounds the CLI applies (pydantic ``Field``), as the SDK reads it."""
    from typing import Annotated

    from pydantic import Field

    bounds: dict[str, float] = {}
    if o.bounds is not None:
        low, high, open_low = o.bounds
        bounds = {"gt" if open_low else "ge": low, **({"le": high} if high is not None else {})}
    return inspect.Parameter(
        o.name,
        inspect.Parameter.KEYWORD_ONLY,
        default=o.default,
        annotation=Annotated[o.kind, Field(description=o.help, **bounds)],
    )


def _option_parameters() -> list[Any]:
    """The analysis options every analyzing tool takes (:data:`ncuroof.views.options.ANALYSIS`),
    as keyword-only parameters with descriptions."""
    return [_param(o) for o in ANALYSIS]


def _tool(fn: Any, own: list[Any], options: list[Any], doc: str) -> Any:
    """``fn(**kwargs)`` with the signature ``own + options`` (what the SDK reads for the
    tool's input schema)."""
    import functools
    import inspect

    @functools.wraps(fn)
    def call(**kwargs: Any) -> dict[str, Any]:
        return fn(**kwargs)

    call.__signature__ = inspect.Signature([*own, *options], return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    call.__doc__ = doc
    del call.__wrapped__  # the SDK must read the signature above, not fn's
    return call


#: The keyword a tool receives instead of its arguments when they did not validate.
_INVALID = "_ncuroof_invalid_arguments"


def _guarded(fn: Any) -> Any:
    """``fn`` whose user errors (bad input, a bad option, an unknown kernel) are an error result
    holding the CLI's one line, as it is (a raised ``ToolError`` would reach the client prefixed
    with the tool's name).
    """
    import functools

    from mcp.types import CallToolResult, TextContent

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        if _INVALID in kwargs:  # arguments that did not validate (:func:`_one_line_validation`)
            text = error_text(ValueError(kwargs[_INVALID]))
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        try:
            return fn(**kwargs)
        except (NcuroofError, ValueError, KeyError, OSError) as exc:
            text = error_text(exc)
        except Exception as exc:  # noqa: BLE001 - a defect: one line, no traceback, keep serving
            text = error_text(exc).replace("error:", f"internal error: {type(exc).__name__}:", 1)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)

    return call


def _forbid_unknown_arguments(server: Any, name: str) -> None:
    """Make the tool ``name`` refuse arguments it does not declare (``top: -1`` to ``analyze``
    was accepted silently), in its validation and in the schema clients read. The SDK keeps its
    tools in a private registry: where that changes, the tool stays as registered (and
    ``tests/integration/test_mcp.py`` says so)."""
    from pydantic import ConfigDict

    tool = getattr(getattr(server, "_tool_manager", None), "_tools", {}).get(name)
    meta = getattr(tool, "fn_metadata", None)
    if meta is None:
        return
    base = meta.arg_model
    config = ConfigDict(**{**base.model_config, "extra": "forbid"})
    meta.arg_model = type(base.__name__, (base,), {"model_config": config, "__module__": __name__})
    tool.parameters = {**tool.parameters, "additionalProperties": False}
    _one_line_validation(meta)


def _one_line_validation(meta: Any) -> None:
    """Make ``meta`` (the SDK's argument metadata of a tool) say a bad argument in the CLI's one
    line (``ncuroof: error: argument 'top': Input should be a valid integer``), not pydantic's
    multi-line text with a URL; left as it is where the SDK lays it out otherwise."""
    from pydantic import ValidationError

    check = getattr(meta, "validate_arguments", None)
    if check is None:
        return

    def validate(arguments: Any) -> Any:
        try:
            return check(arguments)
        except ValidationError as exc:  # handed to the tool (:func:`_guarded`) as its error
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = ".".join(str(x) for x in first.get("loc", ())) or "arguments"
            more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
            return {_INVALID: f"argument {where!r}: {first.get('msg', '')}{more}"}

    try:
        object.__setattr__(meta, "validate_arguments", validate)
    except (AttributeError, TypeError):
        return


#: What each tool does, as the client reads it.
_DESCRIPTIONS = {
    "analyze": (
        "Analyze ncu reports: the document of `ncuroof analyze --json` (kernels longest"
        " first, units in the key names); a PyTorch trace with shapes alone gives its operators"
        " with analytic (from shapes) FLOPs and bytes against the datasheet roofs."
    ),
    "compare": (
        "Compare two runs: the document of `ncuroof compare --json` (speedups, AI and roof"
        " fraction before and after, the gate)."
    ),
    "explain": (
        "One kernel's full evidence and advice, with every launch's diagnosis, flags and notes."
    ),
    "list_gpus": (
        "The datasheet GPUs of metrics/gpus.toml: ids for gpu, peak FLOP/s and bandwidth,"
        " published measurements."
    ),
    "profile": (
        "Run the command under ncu (--set roofline), keep the report in the output"
        " directory, return its analysis."
    ),
}

#: What the tools take as paths: one input or several files of one run.
_PATHS = str | list[str]


#: A parameter without a default.
_REQUIRED = inspect.Parameter.empty
#: ``write``: also write the outputs into the server's output directory.
_WRITE = Option(
    "write",
    "Also write the outputs (tables, page) into the server's output directory (needs ncuroof mcp"
    " --outdir).",
    bool,
    False,
)


def _own_parameters(tool: str) -> list[Any]:
    """The parameters of ``tool`` before the analysis options (its inputs, ``write``, and for
    ``analyze`` the views' options, :func:`ncuroof.views.view_options`)."""
    if tool == "analyze":
        path = Option(
            "path",
            "A .ncu-rep report, ncu CSV export(s) (files of one run), an ncuroof output directory,"
            " or a PyTorch profiler trace recorded with shapes (.json, .json.gz) alone: its"
            " operators with analytic FLOPs and bytes (work_source 'analytic (from shapes)',"
            " products.operators).",
            _PATHS,
            _REQUIRED,
        )
        return [_param(o) for o in (path, _WRITE, *views.view_options())]
    if tool == "compare":
        own = (
            Option(
                "before",
                "The run before the change (report, CSV or output directory).",
                _PATHS,
                _REQUIRED,
            ),
            Option("after", "The run after the change.", _PATHS, _REQUIRED),
            FAIL_IF_SLOWER,
            Option(
                "strict",
                "Refuse runs that differ in GPU, ncu version, clocks or metric set.",
                bool,
                False,
            ),
            _WRITE,
        )
        return [_param(o) for o in own]
    # explain
    kernel = "The kernel: its kernel_key, kernel_label or kernel_name in analyze's document."
    own = (
        Option("path", "The report (as for analyze).", _PATHS, _REQUIRED),
        Option("kernel", kernel, str, _REQUIRED),
    )
    return [_param(o) for o in own]


def _profile_parameters() -> list[Any]:
    """The parameters of the ``profile`` tool before the analysis options."""
    own = (
        Option("command", "The program and its arguments.", list[str], _REQUIRED),
        Option("name", "Report name in the output directory.", str, _REQUIRED),
        LAUNCH_COUNT,
        Option("kernel_name", "ncu --kernel-name.", str | None),
    )
    return [_param(o) for o in own]


def _new_server() -> Any:
    """The SDK's ``MCPServer`` named ncuroof, with its instructions; no tools yet."""
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError as exc:
        raise MissingModuleError(f"{INSTALL_HINT} ({exc})") from None
    from ._version import __version__

    return MCPServer(
        "ncuroof",
        version=__version__,
        instructions=(
            "Roofline analysis of NVIDIA Nsight Compute (ncu) reports. analyze returns each"
            " kernel's bound, diagnosis, evidence, advice and time saved at its roof (schema:"
            " ncuroof/schemas/analyze.schema.json); compare checks a change; explain details one"
            " kernel."
        ),
    )


def build_server(session: Session) -> Any:
    """The MCP server of a :class:`Session`: its tools registered on the SDK's ``MCPServer``.

    Raises
    ------
    MissingModuleError
        The MCP SDK is not installed (:data:`INSTALL_HINT`).
    """
    server = _new_server()
    opts = _option_parameters()
    for name in ("analyze", "compare", "explain"):
        doc = _DESCRIPTIONS[name]
        tool = _tool(getattr(session, name), _own_parameters(name), opts, doc)
        server.add_tool(_guarded(tool), name=name, description=doc)
    list_gpus = _tool(session.list_gpus, [], [], "")
    server.add_tool(_guarded(list_gpus), name="list_gpus", description=_DESCRIPTIONS["list_gpus"])
    if session.allow_profile:
        profile = _tool(session.profile, _profile_parameters(), opts, "")
        server.add_tool(_guarded(profile), name="profile", description=_DESCRIPTIONS["profile"])
    for name in ("analyze", "compare", "explain", "list_gpus", "profile"):
        _forbid_unknown_arguments(server, name)
    return server


def serve(outdir: Path | None = None, allow_profile: bool = False) -> None:
    """Serve the tools over stdio until the client closes the connection (``ncuroof mcp``).

    The messages pass through :func:`_guard_stdio` first: a malformed one is answered with a
    JSON-RPC error, an oversized one refused, the end of the client's stdin ends the server (a
    tool still running included) and Ctrl-C exits at once (130).

    Raises
    ------
    MissingModuleError
        The MCP SDK is not installed.
    InputError
        ``allow_profile`` without ``outdir``.
    """
    server = build_server(Session(outdir, allow_profile))
    _guard_stdio()
    server.run("stdio")


def _screened(line: bytes) -> tuple[Any, int, str] | None:
    """Why a JSON-RPC message from the client cannot be served, as (its id or None, JSON-RPC error
    code, message); None for one the SDK may read."""
    import json

    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None, -32700, "Parse error: the message is not JSON"
    if isinstance(msg, list):
        return None, -32600, "Invalid Request: batches are not supported"
    if not isinstance(msg, dict):
        return None, -32600, "Invalid Request: a message is a JSON object"
    mid = msg.get("id")
    if mid is not None and (isinstance(mid, bool) or not isinstance(mid, (str, int, float))):
        return None, -32600, "Invalid Request: id is a string or a number"
    if "method" not in msg and not ("result" in msg or "error" in msg):
        return mid, -32600, "Invalid Request: no method"
    if "method" in msg and not isinstance(msg["method"], str):
        return mid, -32600, "Invalid Request: method is a string"
    return None


class _Wire(io.RawIOBase):
    """The server's side of stdout: whole lines only, under one lock, so that a JSON-RPC error
    written by :func:`_guard_stdio` never lands inside one of the SDK's messages."""

    def __init__(self, fd: int) -> None:
        self._fd, self._lock, self._pending = fd, threading.Lock(), b""

    def writable(self) -> bool:
        return True

    def _out(self, data: bytes) -> None:
        while data:
            data = data[os.write(self._fd, data) :]

    def write(self, b: Any) -> int:
        with self._lock:
            self._pending += bytes(b)
            cut = self._pending.rfind(b"\n") + 1
            if cut:
                self._out(self._pending[:cut])
                self._pending = self._pending[cut:]
        return len(b)

    def line(self, data: bytes) -> None:
        """Write one whole line of our own."""
        with self._lock:
            self._out(data)


def _guard_stdio() -> None:
    """Put a filter between the client and the SDK (module docstring of :func:`serve`): the
    client's messages are read here, line by line up to ``[limits] mcp_request_bytes``, screened
    (:func:`_screened`) and handed on through a pipe that becomes ``sys.stdin``; replies go
    through :class:`_Wire` as ``sys.stdout``."""
    import json
    import signal
    import sys

    limit = int(catalog.limits()["mcp_request_bytes"])
    wire = _Wire(os.dup(sys.stdout.fileno()))
    source = sys.stdin.buffer
    read_end, write_end = os.pipe()

    def refuse(mid: Any, code: int, message: str) -> None:
        error = {"jsonrpc": "2.0", "id": mid, "error": {"code": code, "message": message}}
        wire.line((json.dumps(error) + "\n").encode())

    def pump() -> None:
        with os.fdopen(write_end, "wb", buffering=0) as sink:
            while line := source.readline(limit + 1):
                if len(line) > limit and not line.endswith(b"\n"):
                    while (rest := source.readline(limit + 1)) and not rest.endswith(b"\n"):
                        pass
                    refuse(None, -32600, f"Invalid Request: more than {limit:,} bytes")
                elif line.strip():
                    why = _screened(line)
                    if why is None:
                        sink.write(line if line.endswith(b"\n") else line + b"\n")
                    else:
                        refuse(*why)
        # the client went: the SDK ends on the closed pipe; a tool still running is not waited for
        watchdog = threading.Timer(5.0, os._exit, args=(0,))
        watchdog.daemon = True
        watchdog.start()

    def aborted(signum: int, frame: Any) -> None:
        os.write(2, b"ncuroof: aborted\n")
        os._exit(130)

    threading.Thread(target=pump, name="ncuroof-mcp-stdin", daemon=True).start()
    sys.stdin = io.TextIOWrapper(os.fdopen(read_end, "rb"), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(wire, encoding="utf-8", write_through=True)
    signal.signal(signal.SIGINT, aborted)
