"""Run one function over slices of a report on several processes: the first slice here, the others in
worker interpreters.

The workers are plain child interpreters (``python -c``), not ``multiprocessing`` children: they do
not re-run the caller's ``__main__`` (a user's script without a ``__name__`` guard) and inherit no
threads. Each imports a module named on its command line, then reads one pickled call
``(module, function, args)`` on stdin (none: it exits) and writes one pickled ``("ok", result)`` or
``("error", exception)`` on stdout; an exception raised in a worker is raised again here, as it
was. Starting one costs about the import of ``ncuroof`` (0.6 s on the 2-core reference machine), so
:class:`Workers` are started before the work is planned (the imports overlap the planning) and
callers split only work worth several times that.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Workers", "run_split", "cores"]

_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_BOOT = ("import importlib, pickle, sys\n"
         "importlib.import_module(sys.argv[1])\n"
         "call = sys.stdin.buffer.read()\n"
         "if not call:\n"
         "    sys.exit(0)\n"
         "module, name, args = pickle.loads(call)\n"
         "try:\n"
         "    out = ('ok', getattr(importlib.import_module(module), name)(*args))\n"
         "except Exception as exc:\n"
         "    out = ('error', exc)\n"
         "pickle.dump(out, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)\n")


def cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


class _WorkerDied(RuntimeError):
    """A worker ended without a result."""


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    err: Any  # a temporary file: stderr without a pipe to fill


def _start(module: str) -> _Worker:
    """A worker interpreter importing ``module``, then waiting for its call."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p))
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-c", _BOOT, module], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    return _Worker(proc, err)


def _send(w: _Worker, call: bytes) -> None:
    assert w.proc.stdin is not None
    try:
        w.proc.stdin.write(call)
        w.proc.stdin.close()
    except BrokenPipeError:  # the worker died: _finish says how
        pass


def _finish(w: _Worker) -> Any:
    """The worker's result, or its exception raised again."""
    assert w.proc.stdout is not None
    data = w.proc.stdout.read()
    code = w.proc.wait()
    if code != 0 or not data:
        w.err.seek(0)
        lines = w.err.read().decode("utf-8", "replace").strip().splitlines()
        raise _WorkerDied(f"a worker process ended with code {code}: {lines[-1] if lines else 'no message'}")
    status, value = pickle.loads(data)
    if status == "error":
        raise value
    return value


def _finish_or_here(w: _Worker, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """The worker's result; its call run in this process when the worker died without one."""
    try:
        return _finish(w)
    except _WorkerDied:
        return fn(*args)


class Workers:
    """``n`` worker interpreters that import ``module`` at once (a context manager: on leaving, any
    still running is killed).

    Parameters
    ----------
    n : int
        Workers to start (0: :meth:`run` runs everything here).
    module : str
        The module they import while this process goes on (the one whose function they will run).
    """

    def __init__(self, n: int, module: str) -> None:
        self.workers = [_start(module) for _ in range(max(0, n))]

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self.workers:
            if w.proc.stdin is not None and not w.proc.stdin.closed:
                _send(w, b"")
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait()
            w.proc.stdout.close()  # type: ignore[union-attr]
            w.err.close()

    def run(self, fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], **here: Any) -> list[Any]:
        """``[fn(*args) for args in calls]``: the first call here, the others at the same time on the
        workers (at most one call each; workers left over exit unused).

        Parameters
        ----------
        fn : callable
            A module-level function (workers import it by module and name); its arguments and
            result must pickle.
        calls : sequence of tuple
            The positional arguments of each call; at most one more than the workers.
        **here
            Keyword arguments for the first call only (such as a progress callback, which cannot
            travel to another process).

        Returns
        -------
        list
            The results, in the order of ``calls``.

        Raises
        ------
        Exception
            Whatever a call raised (the first call's, or a worker's, re-raised here). A worker
            that dies without a result (killed, out of memory) has its call run here instead.
        ValueError
            For more calls than workers plus one.
        """
        if len(calls) - 1 > len(self.workers):
            raise ValueError(f"{len(calls) - 1} calls for {len(self.workers)} workers")
        busy = self.workers[:len(calls) - 1]
        for w, args in zip(busy, calls[1:]):
            _send(w, pickle.dumps((fn.__module__, fn.__name__, args), protocol=pickle.HIGHEST_PROTOCOL))
        for w in self.workers[len(busy):]:
            _send(w, b"")
        first = fn(*calls[0], **here)
        return [first, *(_finish_or_here(w, fn, args) for w, args in zip(busy, calls[1:]))]


def run_split(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], **here: Any) -> list[Any]:
    """:meth:`Workers.run` on workers started for it (one per call after the first)."""
    with Workers(len(calls) - 1, fn.__module__) as workers:
        return workers.run(fn, calls, **here)
