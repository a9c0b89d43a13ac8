"""``ncuroof explain``: one kernel's numbers, evidence and advice, and its launches (the MCP
server's ``explain`` tool on the command line)."""

from __future__ import annotations

from pathlib import Path

import click

from .common import JSON_HELP, echo
from .options import analysis_options_but, analysis_values

__all__ = ["explain_cmd"]


@click.command(name="explain")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-k",
    "--kernel",
    required=True,
    help="The kernel: its name, label or key as analyze prints it (kernels.csv).",
)
@analysis_options_but("kernels")
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP.format(kind="explain"))
def explain_cmd(inputs: tuple[Path, ...], kernel: str, as_json: bool, **kw: object) -> None:
    """Explain one kernel of INPUTS (reports, CSV exports or an analyze output folder): its share
    of the time, the binding dot and roof, the diagnosis with its evidence and advice, the speed of
    light, and each launch's verdict, notes and flags."""
    from .. import api
    from ..errors import InputError
    from ..render import json_doc, text

    analysis = api.analysis_of(list(inputs), analysis_values(kw))
    try:
        doc = json_doc.explain_document(analysis, kernel)
    except KeyError as exc:
        raise InputError(str(exc.args[0]), inputs[0]) from None
    if as_json:
        click.echo(json_doc.dumps(doc), nl=False)
        return
    echo(text.explain_text(doc, text.terminal_width()), nl=False)
