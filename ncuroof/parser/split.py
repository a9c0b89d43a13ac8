"""Run one function over slices of a report on several processes: the first slice here, the others in
worker interpreters started at once.

The workers are plain child interpreters (``python -c``), not ``multiprocessing`` children: they do
not re-run the caller's ``__main__`` (a user's script without a ``__name__`` guard) and inherit no
threads. Each reads one pickled call ``(module, function, args)`` on stdin and writes one pickled
``("ok", result)`` or ``("error", exception)`` on stdout; an exception raised in a worker is raised
again here, as it was. Starting one costs about the import of ``ncuroof`` (0.6 s on the 2-core
reference machine), so callers split only work worth several times that.
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

__all__ = ["run_split", "cores"]

_ROOT = str(Path(__file__).resolve().parent.parent.parent)
_BOOT = ("import importlib, pickle, sys\n"
         "module, name, args = pickle.load(sys.stdin.buffer)\n"
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


@dataclass
class _Worker:
    proc: subprocess.Popen[bytes]
    err: Any  # a temporary file: stderr without a pipe to fill


def _start(fn: Callable[..., Any], args: tuple[Any, ...]) -> _Worker:
    """A worker interpreter running ``fn(*args)``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p))
    err = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    assert proc.stdin is not None
    proc.stdin.write(pickle.dumps((fn.__module__, fn.__name__, args), protocol=pickle.HIGHEST_PROTOCOL))
    proc.stdin.close()
    return _Worker(proc, err)


def _finish(w: _Worker) -> Any:
    """The worker's result, or its exception raised again."""
    assert w.proc.stdout is not None
    data = w.proc.stdout.read()
    code = w.proc.wait()
    if code != 0 or not data:
        w.err.seek(0)
        lines = w.err.read().decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(f"a worker process ended with code {code}: {lines[-1] if lines else 'no message'}")
    status, value = pickle.loads(data)
    if status == "error":
        raise value
    return value


def run_split(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], **here: Any) -> list[Any]:
    """``[fn(*args) for args in calls]``, the first call in this process and the others at the same
    time in worker processes.

    Parameters
    ----------
    fn : callable
        A module-level function (workers import it by module and name); its arguments and
        result must pickle.
    calls : sequence of tuple
        The positional arguments of each call.
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
        Whatever a call raised (the first call's, or a worker's, re-raised here).
    RuntimeError
        When a worker process dies without a result.
    """
    workers = [_start(fn, args) for args in calls[1:]]
    try:
        first = fn(*calls[0], **here)
        return [first, *(_finish(w) for w in workers)]
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
            w.proc.stdout.close()  # type: ignore[union-attr]
            w.err.close()
