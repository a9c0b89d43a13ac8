"""``ncuroof mcp``: the MCP server over stdio (:mod:`ncuroof.mcp_server`)."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["mcp_cmd"]


@click.command(name="mcp")
@click.option(
    "--outdir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help=(
        "The only directory the tools may write into (analyze/compare with write=true, profile's"
        " reports). Default: the server writes nothing."
    ),
)
@click.option(
    "--allow-profile",
    is_flag=True,
    help="Offer the profile tool, which runs ncu on a command the client gives (needs --outdir).",
)
def mcp_cmd(outdir: Path | None, allow_profile: bool) -> None:
    """Serve analyze, compare, explain and list_gpus to an MCP client (an agent) over stdio.

    The tools return the documents of --json. Needs the MCP SDK: pip install 'ncuroof[mcp]'.
    """
    from .. import mcp_server

    mcp_server.serve(outdir, allow_profile)
