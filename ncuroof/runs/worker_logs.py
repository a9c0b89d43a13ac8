"""The log level of the dask workers that ncuroof starts itself (:mod:`ncuroof.runs.fleet`).

``LocalCluster(silence_logs=...)`` sets the level of the ``distributed.nanny`` logger only; a
worker process logs with dask's configured levels, so a worker whose heartbeat races the
scheduler's shutdown printed an ERROR traceback on ncuroof's stderr after a successful run. Every
input's failure already reaches the user as one line of its own, so the workers of a local cluster
log only what ``-v`` asks for. This module imports ``distributed``: it is imported only when a
local cluster starts.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["LogLevel", "worker_level"]


def worker_level() -> int:
    """The level of the workers' ``distributed`` logger: CRITICAL unless ncuroof runs with ``-v``
    (then the level of this process's root logger, INFO or DEBUG)."""
    root = logging.getLogger().getEffectiveLevel()
    return logging.CRITICAL if root >= logging.WARNING else root


class LogLevel(WorkerPlugin):
    """Sets the ``distributed`` logger of the worker process it is installed in to ``level``."""

    name = "ncuroof-log-level"

    def __init__(self, level: int) -> None:
        self.level = level

    def setup(self, worker: Any) -> None:  # noqa: ARG002 (the plugin interface)
        logging.getLogger("distributed").setLevel(self.level)
