"""Click options generated from the declarations of :mod:`ncuroof.views` (issue 40): the analysis
options (:data:`ncuroof.views.options.ANALYSIS`), the views' options and the commands' bounded
options, each spelled once there; and the comma-separated choices of ``--format``/``--levels``."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click

from ..model.analysis import AnalysisOptions
from ..output.tables import FORMATS
from ..render.page import PLOTLYJS
from ..views.base import Option
from ..views.options import ANALYSIS
from ..views.options import analysis_options as _analysis_options

__all__ = [
    "click_option",
    "click_options",
    "analysis_options",
    "analysis_options_but",
    "analysis_values",
    "ranged",
    "csv_choice",
    "csv_metavar",
    "formats_option",
    "plotlyjs_option",
]


def _number(o: Option) -> type | None:
    """``int`` or ``float`` when the option's value is a number (``int | None`` included)."""
    kinds = (o.kind, *typing.get_args(o.kind))
    return next((k for k in (int, float) if k in kinds), None)


def ranged(o: Option) -> click.ParamType:
    """The click range of a bounded option (its :attr:`~ncuroof.views.base.Option.bounds`)."""
    low, high, open_low = o.bounds  # type: ignore[misc]
    if _number(o) is int:
        return click.IntRange(int(low), None if high is None else int(high), min_open=open_low)
    return click.FloatRange(low, high, min_open=open_low)


def _checked(o: Option) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """A click callback refusing a value the option's ``parse`` refuses (the value is kept as
    given: it is parsed once, by :meth:`~ncuroof.views.base.Option.value`)."""

    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        try:
            o.value(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), ctx=ctx, param=param) from exc
        return value

    return callback


def click_option(o: Option) -> Callable[[Any], Any]:
    """The click option of a declaration: its spelling, help, default, type (choices, range or
    file) and a callback checking it parses."""
    kw: dict[str, Any] = {"help": o.help, "show_default": o.show_default}
    if o.metavar:
        kw["metavar"] = o.metavar
    if o.is_flag:
        kw["is_flag"] = True
    kw["default"] = None if "/" in o.cli_flags[0] else o.default
    if o.choices:
        kw["type"] = click.Choice(o.choices)
    elif o.bounds:
        kw["type"] = ranged(o)
    elif o.path:
        kw["type"] = click.Path(path_type=Path, dir_okay=False)
    elif not o.is_flag and _number(o) is not None:
        kw["type"] = _number(o)
    if o.multiple:
        kw["multiple"] = True
        kw["default"] = ()
    if o.parse is not None and not o.path and not o.choices:
        kw["callback"] = _checked(o)
    return click.option(*o.cli_flags, o.name, **kw)


def click_options(options: Iterable[Option]) -> Callable[[Any], Any]:
    """A decorator adding the click options of ``options``, the first listed first in ``--help``."""
    listed = list(options)

    def decorate(f: Any) -> Any:
        for o in reversed(listed):
            f = click_option(o)(f)
        return f

    return decorate


def analysis_options(f: Any) -> Any:
    """The analysis options (:data:`ncuroof.views.options.ANALYSIS`), shared by every command that
    analyzes."""
    return click_options(ANALYSIS)(f)


def analysis_options_but(*names: str) -> Callable[[Any], Any]:
    """:func:`analysis_options` without ``names`` (``profile`` and ``explain`` have a ``-k`` of
    their own)."""
    return click_options([o for o in ANALYSIS if o.name not in names])


def analysis_values(kw: dict[str, Any]) -> AnalysisOptions:
    """Pop the :func:`analysis_options` values out of a command's keyword arguments; a combination
    the options refuse is a usage error."""
    try:
        return _analysis_options(kw)
    except ValueError as exc:  # a combination of options that click does not check alone
        raise click.UsageError(str(exc)) from exc


def csv_choice(allowed: tuple[str, ...]) -> Callable[..., tuple[str, ...] | None]:
    """A click callback reading a comma-separated subset of ``allowed``."""

    def callback(
        ctx: click.Context, param: click.Parameter, value: str | None
    ) -> tuple[str, ...] | None:
        if value is None:
            return None
        items = tuple(v.strip().lower() for v in value.split(",") if v.strip())
        bad = [v for v in items if v not in allowed]
        if bad or not items:
            raise click.BadParameter(
                f"{','.join(bad) or value!r}: choose from {','.join(allowed)}", ctx=ctx, param=param
            )
        return items

    return callback


def csv_metavar(allowed: tuple[str, ...]) -> str:
    """``csv[,parquet]``: how a :func:`csv_choice` option is written."""
    return f"{allowed[0]}[,{','.join(allowed[1:])}]"


def formats_option(what: str) -> Callable[[Any], Any]:
    """``--format csv[,parquet]`` (the ``formats`` keyword) of a command writing tables; ``what``:
    its help."""
    return click.option(
        "--format",
        "formats",
        callback=csv_choice(FORMATS),
        default="csv",
        show_default=True,
        metavar=csv_metavar(FORMATS),
        help=what,
    )


def plotlyjs_option(page: str) -> Callable[[Any], Any]:
    """``--plotlyjs embed|cdn`` of a command writing the HTML page ``page``."""
    return click.option(
        "--plotlyjs",
        type=click.Choice(list(PLOTLYJS)),
        default="embed",
        show_default=True,
        help=(f"Embed plotly.js in {page} (works offline) or link it from the CDN (smaller file)."),
    )
