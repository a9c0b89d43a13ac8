"""The log level of dask in a fleet (:mod:`ncuroof.runs.fleet`): this process's scheduler and
client, and the workers of the local cluster ncuroof starts itself.

``LocalCluster(silence_logs=...)`` sets the level of the ``distributed.nanny`` logger only; a
worker process logs with dask's configured levels, so a worker whose heartbeat races the
scheduler's shutdown printed an ERROR traceback on ncuroof's stderr after a successful run. Every
input's failure already reaches the user as one line of its own, so dask logs only what ``-v`` asks
for (a loaded machine's "event loop was unresponsive" warnings included). This module imports
``distributed``: it is imported only when a fleet runs on dask.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["LogLevel", "dask_level"]


def dask_level() -> int:
    """The level of dask's ``distributed`` logger: CRITICAL unless ncuroof runs with ``-v`` (then
    the level of this process's root logger, INFO or DEBUG)."""
    root = logging.getLogger().getEffectiveLevel()
    return logging.CRITICAL if root >= logging.WARNING else root


class LogLevel(WorkerPlugin):
    """Sets the ``distributed`` logger of the worker process it is installed in to ``level``."""

    name = "ncuroof-log-level"

    def __init__(self, level: int) -> None:
        self.level = level

    def setup(self, worker: Any) -> None:  # noqa: ARG002 (the plugin interface)
        logging.getLogger("distributed").setLevel(self.level)
