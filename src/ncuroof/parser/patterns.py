"""Regular expressions that users and agents hand ncuroof (``--pair 'regex:...'``, ``--pair-file``,
``--expect`` kernel patterns, the MCP tools), matched under a time limit.

Python's ``re`` backtracks without bound: ``(a+)+$`` against forty ``a`` and a ``!`` runs for
minutes. These patterns are compiled by the ``regex`` module, which takes the same syntax and stops
a match after a timeout; all matches of one pattern in one call share
``[limits].regex_seconds`` of ``metrics/thresholds.toml``, and a pattern past it is one line
naming the option and the pattern (issue 43).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import regex

from ..catalog import limits
from ..errors import InputError

__all__ = ["UserPattern"]


class UserPattern:
    """A user's pattern, searched under a shared time budget.

    Parameters
    ----------
    text : str
        The pattern, in Python's syntax.
    option : str
        Where it came from (``--pair``, ``--expect FILE``...), for the messages.
    """

    def __init__(self, text: str, option: str) -> None:
        self.text, self.option = text, option
        try:
            self._rx = regex.compile(text, flags=regex.VERSION0)
        except (regex.error, OverflowError, RecursionError) as exc:
            raise InputError(
                f"{option} {text!r} is not a regular expression ({exc}); fix it"
            ) from None
        self._budget = float(limits()["regex_seconds"])
        self._deadline: float | None = None

    def search(self, value: str) -> bool:
        """Whether the pattern occurs in ``value``; InputError once the budget is spent."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self._budget
        left = self._deadline - now
        try:
            if left <= 0:
                raise TimeoutError
            return self._rx.search(value, timeout=left) is not None
        except TimeoutError:
            raise InputError(
                f"{self.option} {self.text!r} took over {self._budget:g} s on the kernel names"
                " (a pattern that backtracks without limit, such as (a+)+$): simplify it, or raise"
                " limits.regex_seconds in metrics/thresholds.toml"
            ) from None

    def any(self, values: Iterable[str]) -> bool:
        """Whether the pattern occurs in any of ``values``."""
        return any(self.search(v) for v in values)
