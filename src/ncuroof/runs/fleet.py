"""Fleets: many unrelated reports analyzed one by one as one ``dask.distributed`` job.

``ncuroof analyze runs/*.ncu-rep --stack`` with :data:`FLEET_MIN_INPUTS` or more inputs (or with
``--scheduler`` or ``--workers``) analyzes every input alone in a task (:func:`analyze_input`: only
its launch table, :func:`ncuroof.model.analysis.launch_table`: read, kernels, roofs, classification,
diagnosis of each launch) on a :class:`distributed.LocalCluster` of this machine's cores, or on an
existing cluster given by its scheduler address. The launch tables of the inputs that succeed are
concatenated in input order: they equal the tables of each report analyzed alone, and
:func:`ncuroof.model.analysis.from_launches` makes one analysis of them (points, dots, summary:
computed once for the fleet, every step per launch or per kernel). An input that fails (missing,
corrupt, foreign, or a worker that died on it) is listed in the failures table and never stops the
others; when no input succeeds the whole job fails with the first error. Fewer inputs run in this
process, the same way, without starting a cluster.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError, NcuroofError
from ..model.analysis import AnalysisOptions
from ..parser.ncu_rep import PROCESSES_ENV
from ..schema import FAILURES, validate_launches

__all__ = ["FLEET_MIN_INPUTS", "FleetResult", "analyze_input", "analyze_on_worker", "run", "wanted"]

#: Stacks of at least this many inputs run on dask; smaller ones in this process (no cluster
#: start-up). ``scripts/bench_fleet.py`` on 2 cores: a local cluster costs about 1.5 s to start, and
#: copies of a 4-launch report analyze in 0.16 s each in-process, so dask pays from about 16 of them
#: (0.95 of the in-process time; 32: 0.89; 8: 1.49); stacks of four 5,000-launch reports are still
#: faster in-process (a big report is decoded on several processes anyway,
#: :mod:`ncuroof.parser.ncu_rep.parallel`).
FLEET_MIN_INPUTS = 16

#: Seconds to wait for an existing scheduler to answer.
CONNECT_TIMEOUT_S = 10


@dataclass
class FleetResult:
    """What :func:`run` produced.

    Attributes
    ----------
    launches : DataFrame
        The classified and diagnosed :data:`~ncuroof.schema.LAUNCHES` tables of the inputs that
        succeeded, concatenated in input order (``source`` tells them apart).
    failures : DataFrame
        :data:`~ncuroof.schema.FAILURES`: one row per input that failed, in input order.
    """

    launches: pd.DataFrame
    failures: pd.DataFrame


def wanted(n_inputs: int, scheduler: str | None, workers: int | None = None) -> bool:
    """Whether a stack of ``n_inputs`` runs on dask: with a scheduler or a number of local workers
    asked for, or from :data:`FLEET_MIN_INPUTS` inputs."""
    return scheduler is not None or workers is not None or n_inputs >= FLEET_MIN_INPUTS


def analyze_input(path: str, source: str, options: AnalysisOptions) -> dict[str, Any]:
    """Analyze one input alone (a dask task): its launch table
    (:func:`ncuroof.model.analysis.launch_table`), or its error.

    Parameters
    ----------
    path : str
        The file to read (absolute, so that a worker in another directory finds it).
    source : str
        The input as the user gave it: the ``source`` column of the tables.
    options : AnalysisOptions
        How to analyze (:func:`ncuroof.model.analysis.build`).

    Returns
    -------
    dict
        ``source`` and either ``kernels`` (the classified launch table) or ``error`` (the one-line
        message of the :class:`~ncuroof.errors.NcuroofError`, naming the input as given). Other
        exceptions propagate (a defect, reported by :func:`run` as an internal error of that input).
    """
    from ..model import analysis

    try:
        k = analysis.launch_table([Path(path)], replace(options, stack=False))
    except NcuroofError as exc:
        about_input = exc.path is None or exc.path == Path(path)
        return {"source": source, "error": f"{source}: {exc.message}" if about_input else str(exc)}
    return {"source": source, "kernels": k.assign(source=source)}


def analyze_on_worker(path: str, source: str, options: AnalysisOptions) -> dict[str, Any]:
    """:func:`analyze_input` as a dask task: the worker decodes reports in its own process only
    (the cluster already runs a process per core;
    :data:`ncuroof.parser.ncu_rep.decode.PROCESSES_ENV`)."""
    os.environ[PROCESSES_ENV] = "1"
    return analyze_input(path, source, options)


def _failure(source: str, exc: BaseException) -> dict[str, Any]:
    return {
        "source": source,
        "error": f"{source}: internal error while analyzing it: {type(exc).__name__}: {exc}",
    }


@contextlib.contextmanager
def _quiet_dask() -> Iterator[None]:
    """dask's logs in this process (cluster start and stop, warnings of a loaded machine) shown only
    when ncuroof runs with -v (:func:`~ncuroof.runs.worker_logs.dask_level`)."""
    from .worker_logs import dask_level

    log = logging.getLogger("distributed")
    before = log.level
    log.setLevel(dask_level())
    try:
        yield
    finally:
        log.setLevel(before)


@contextlib.contextmanager
def _client(scheduler: str | None, workers: int) -> Iterator[Any]:
    """A dask client: of the scheduler at ``scheduler``, or of a local cluster of
    ``workers`` processes."""
    from distributed import Client, LocalCluster

    from .worker_logs import LogLevel, dask_level

    if scheduler is not None:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except (OSError, TimeoutError, ValueError) as exc:
            raise InputError(
                f"cannot reach the dask scheduler ({exc}); start one (dask scheduler) or drop"
                " --scheduler",
                scheduler,
            ) from exc
        with client:
            yield client
        return
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            silence_logs=dask_level(),
            plugins=(LogLevel(dask_level()),),
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _on_dask(
    tasks: list[tuple[str, str]],
    options: AnalysisOptions,
    scheduler: str | None,
    workers: int,
    advance: Callable[[], None],
) -> list[dict[str, Any]]:
    from distributed import as_completed

    with _quiet_dask(), _client(scheduler, workers) as client:
        futures = client.map(
            analyze_on_worker,
            [p for p, _ in tasks],
            [s for _, s in tasks],
            options=options,
            pure=False,
        )
        where = {f.key: i for i, f in enumerate(futures)}
        out: list[dict[str, Any]] = [{}] * len(tasks)
        for f in as_completed(futures):
            i = where[f.key]
            try:
                out[i] = f.result()
            # a defect or a dead worker sinks this input only
            except Exception as exc:  # noqa: BLE001
                out[i] = _failure(tasks[i][1], exc)
            advance()
        return out


def _in_process(
    tasks: list[tuple[str, str]], options: AnalysisOptions, advance: Callable[[], None]
) -> list[dict[str, Any]]:
    out = []
    for path, source in tasks:
        try:
            out.append(analyze_input(path, source, options))
        # as on dask: one input's defect does not sink the others
        except Exception as exc:  # noqa: BLE001
            out.append(_failure(source, exc))
        advance()
    return out


def run(
    paths: Sequence[str | Path],
    options: AnalysisOptions | None = None,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: Callable[[int], Callable[[], None]] | None = None,
) -> FleetResult:
    """Analyze every input alone, on dask when :func:`wanted`, and gather the tables.

    Parameters
    ----------
    paths : sequence of path
        Reports or CSV exports, each a whole run.
    options : AnalysisOptions, optional
        The same for every input (``stack`` is ignored: each input is a whole run).
    scheduler : str, optional
        Address of a running dask scheduler (``tcp://HOST:PORT``); its workers must see the
        inputs at their absolute paths. Default: a local cluster when :func:`wanted`.
    workers : int, optional
        Worker processes of the local cluster; default this machine's cores (at most one per input).
    progress : callable, optional
        Progress-bar factory (``factory(total)`` returns ``advance()``), one step per input.

    Returns
    -------
    FleetResult

    Raises
    ------
    InputError
        When no input could be analyzed (the first error), when there are no inputs, or when
        the scheduler cannot be reached.

    Notes
    -----
    The local cluster starts its workers as new Python processes (spawn): a script that calls
    this (or :func:`ncuroof.api.analyze` of a large stack) must do so under
    ``if __name__ == "__main__":``, as with :mod:`multiprocessing`. Starting the cluster costs a
    few seconds (the workers import pandas and ncuroof), which is why small stacks run in-process.
    """
    if not paths:
        raise InputError("no input files given")
    tasks = [(str(Path(p).resolve()), str(p)) for p in paths]
    options = options if options is not None else AnalysisOptions()
    if options.expect is not None:
        options = replace(options, expect=Path(options.expect).resolve())
    advance = progress(len(tasks)) if progress is not None else (lambda: None)
    if wanted(len(tasks), scheduler, workers):
        n = workers or max(1, min(os.cpu_count() or 1, len(tasks)))
        outcomes = _on_dask(tasks, options, scheduler, n, advance)
    else:
        outcomes = _in_process(tasks, options, advance)
    return _gathered(outcomes)


def _gathered(outcomes: list[dict[str, Any]]) -> FleetResult:
    """The inputs' kernel tables stacked and the failures listed; InputError when all failed."""
    ok = [o for o in outcomes if "error" not in o]
    failures = pd.DataFrame(
        [{"source": o["source"], "error": o["error"]} for o in outcomes if "error" in o],
        columns=list(FAILURES),
    ).astype({n: c.dtype for n, c in FAILURES.items()})
    if not ok:
        raise InputError(
            f"none of the {len(outcomes)} inputs could be analyzed; the first:"
            f" {failures['error'].iloc[0]}"
        )
    return FleetResult(
        validate_launches(pd.concat([o["kernels"] for o in ok], ignore_index=True)), failures
    )


def page_meta(failures: pd.DataFrame | None) -> dict[str, str]:
    """The page header's line on a fleet's failed inputs (empty when none or not a fleet)."""
    if failures is None or not len(failures):
        return {}
    shown = "; ".join(failures["error"].head(5))  # each error names its input
    more = (
        f" (and {len(failures) - 5} more, see failures.csv)"
        if len(failures) > 5
        else " (failures.csv)"
    )
    return {"failed inputs": f"{len(failures)}: {shown}{more}"}
