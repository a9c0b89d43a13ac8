"""Heavy optional-path modules (plotly, jinja2, pyarrow) imported on first use, not
at ``import ncuroof``.

A command that writes no page and no Parquet (``analyze --json`` into a loop, ``doctor``, the MCP
server's analyses) never pays for them; ``python -X importtime -m ncuroof --help`` shows it.
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any

__all__ = ["LazyModule"]

_LOCK = threading.Lock()


class LazyModule:
    """A stand-in for ``import NAME as alias``: the module is imported at the first attribute read.

    Parameters
    ----------
    name : str
        The dotted module name (``"plotly.graph_objects"``).
    """

    def __init__(self, name: str) -> None:
        self.__dict__["_name"] = name
        self.__dict__["_module"] = None

    def _load(self) -> ModuleType:
        module = self.__dict__["_module"]
        if module is None:
            with _LOCK:
                module = self.__dict__["_module"] or importlib.import_module(self.__dict__["_name"])
                self.__dict__["_module"] = module
        return module

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __repr__(self) -> str:
        return f"<lazy module {self.__dict__['_name']!r}>"
