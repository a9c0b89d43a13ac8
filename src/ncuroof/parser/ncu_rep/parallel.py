"""Run one function over slices of a report on several processes: the first slice here, the others
in worker interpreters.

The workers are plain child interpreters (``python -c``), not ``multiprocessing`` children: they do
not re-run the caller's ``__main__`` (a user's script without a ``__name__`` guard) and inherit no
threads. Each imports a module named on its command line, then reads one pickled call
``(module, function, args, result file)`` on stdin (none: it exits), runs it with a
``progress(n)`` keyword that writes ``\\0progress n`` lines on its stderr, writes one pickled
``("ok", result)`` or ``("error", exception)`` into the result file (a temporary file this process
made) and exits; this process reads the file once the worker has ended, so a worker's memory is
given back before its result takes memory here (the peak of the two is not their sum). An
exception raised in a worker is raised again here, as it was. A thread per worker reads its
stderr, so the caller's progress bar counts the workers' work as it is done. Starting one costs
about the import of ``ncuroof`` (0.6 s on the 2-core reference machine), so :class:`Workers` are
started before the work is planned (the imports overlap the planning) and callers split only work
worth several times that.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Workers", "cores"]

_ROOT = str(Path(__file__).resolve().parents[3])  # the folder holding the ncuroof package
_PROGRESS = b"\0progress "
_BOOT = (
    "import importlib, pickle, sys\n"
    # not the current directory python -c puts first
    "sys.path[:1] = [p for p in sys.path[:1] if p]\n"
    "importlib.import_module(sys.argv[1])\n"
    "call = sys.stdin.buffer.read()\n"
    "if not call:\n"
    "    sys.exit(0)\n"
    "module, name, args, result = pickle.loads(call)\n"
    "def progress(n):\n"
    "    sys.stderr.write(f'\\0progress {n}\\n')\n"
    "    sys.stderr.flush()\n"
    "try:\n"
    "    out = ('ok', getattr(importlib.import_module(module), name)(*args, progress=progress))\n"
    "except Exception as exc:\n"
    "    out = ('error', exc)\n"
    "with open(result, 'wb') as f:\n"
    "    pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)\n"
)


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
    """A worker process, the file its result goes to, and what its stderr reader thread has
    gathered: stderr lines, progress."""

    proc: subprocess.Popen[bytes]
    result: str  # the temporary file the worker writes its pickled result into
    err: list[bytes] = field(default_factory=list)
    done: int = 0  # work the worker reported through progress(n)
    passed: int = 0  # of which passed on to this process's progress
    reader: threading.Thread | None = None

    def read(self) -> None:
        """Start the thread that reads the worker's stderr to its end (the worker's end)."""

        def stderr() -> None:
            for line in self.proc.stderr:  # type: ignore[union-attr]
                if line.startswith(_PROGRESS):
                    self.done += int(line[len(_PROGRESS) :])
                else:
                    self.err.append(line)

        self.reader = threading.Thread(target=stderr, daemon=True)
        self.reader.start()

    def pass_progress(self, progress: Callable[[int], None] | None) -> None:
        """Tell ``progress`` the work reported since the last call."""
        new, self.passed = self.done - self.passed, self.done
        if progress is not None and new:
            progress(new)


def _start(module: str) -> _Worker:
    """A worker interpreter importing ``module``, then waiting for its call, with an empty result
    file of its own (made here, only this user may read it); it allocates Arrow memory from the
    pool this process uses (:func:`ncuroof.parser.memory.use_returning_pool`)."""
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH", "")) if p),
    )
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        env.setdefault("ARROW_DEFAULT_MEMORY_POOL", arrow.default_memory_pool().backend_name)
    fd, result = tempfile.mkstemp(prefix="ncuroof-worker-", suffix=".pickle")
    os.close(fd)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, module],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
    except BaseException:
        _remove(result)
        raise
    return _Worker(proc, result)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _send(w: _Worker, call: bytes) -> None:
    assert w.proc.stdin is not None
    try:
        w.proc.stdin.write(call)
        w.proc.stdin.close()
    except BrokenPipeError:  # the worker died: _finish says how
        pass


def _finish(w: _Worker, progress: Callable[[int], None] | None) -> Any:
    """The worker's result, read from its file once it has ended (its file removed), or its
    exception raised again; its progress passed on meanwhile."""
    while w.reader is not None and w.reader.is_alive():
        w.reader.join(timeout=0.1)
        w.pass_progress(progress)
    w.pass_progress(progress)
    code = w.proc.wait()
    try:
        with open(w.result, "rb") as f:
            if code != 0 or not os.fstat(f.fileno()).st_size:
                lines = b"".join(w.err).decode("utf-8", "replace").strip().splitlines()
                raise _WorkerDied(
                    f"a worker process ended with code {code}:"
                    f" {lines[-1] if lines else 'no message'}"
                )
            status, value = pickle.load(f)
    finally:
        _remove(w.result)
    if status == "error":
        raise value
    return value


class Workers:
    """``n`` worker interpreters that import ``module`` at once (a context manager: on leaving, any
    still running is killed).

    Parameters
    ----------
    n : int
        Workers to start (0: :meth:`run` runs everything here); fewer start where no temporary
        file or process can be made (:attr:`workers` lists those that did).
    module : str
        The module they import while this process goes on (the one whose function they will run).
    """

    def __init__(self, n: int, module: str) -> None:
        self.workers: list[_Worker] = []
        for _ in range(max(0, n)):
            try:
                self.workers.append(_start(module))
            except OSError:  # no temporary file or no process to be had: fewer workers
                break

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        for w in self.workers:
            if w.proc.stdin is not None and not w.proc.stdin.closed:
                _send(w, b"")
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait()
            if w.reader is not None:
                w.reader.join()
            w.proc.stderr.close()  # type: ignore[union-attr]
            _remove(w.result)

    def run(
        self,
        fn: Callable[..., Any],
        calls: Sequence[tuple[Any, ...]],
        progress: Callable[[int], None] | None = None,
    ) -> list[Any]:
        """``[fn(*args, progress=...) for args in calls]``: the first call here, the others at the
        same time on the workers (at most one call each; workers left over exit unused).

        Parameters
        ----------
        fn : callable
            A module-level function (workers import it by module and name) taking a ``progress``
            keyword (a callable told ``progress(n)`` as ``n`` more units of work are done); its
            arguments and result must pickle.
        calls : sequence of tuple
            The positional arguments of each call; at most one more than the workers.
        progress : callable, optional
            Told the work of every call, the workers' included, as it is done (a progress bar).

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
        busy = self.workers[: len(calls) - 1]
        for w, args in zip(busy, calls[1:]):
            w.read()
            _send(
                w,
                pickle.dumps(
                    (fn.__module__, fn.__name__, args, w.result), protocol=pickle.HIGHEST_PROTOCOL
                ),
            )
        for w in self.workers[len(busy) :]:
            _send(w, b"")

        def here(n: int) -> None:  # this process's work, and the workers' reported meanwhile
            if progress is not None:
                progress(n)
                for w in busy:
                    w.pass_progress(progress)

        results = [fn(*calls[0], progress=here)]
        for w, args in zip(busy, calls[1:]):
            try:
                results.append(_finish(w, progress))
            except _WorkerDied:
                results.append(fn(*args, progress=_skipping(progress, w.passed)))
        return results


def _skipping(progress: Callable[[int], None] | None, done: int) -> Callable[[int], None]:
    """``progress`` less the first ``done`` units (already counted when a dead worker's
    call is run again)."""
    left = [done]

    def tell(n: int) -> None:
        skip = min(n, left[0])
        left[0] -= skip
        if progress is not None and n > skip:
            progress(n - skip)

    return tell
