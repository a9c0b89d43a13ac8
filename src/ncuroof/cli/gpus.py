"""``ncuroof list-gpus``: the datasheet GPUs of ``metrics/gpus.toml``, the ids ``--gpu`` and
``--what-if`` take."""

from __future__ import annotations

import click

from .common import echo

__all__ = ["list_gpus"]


@click.command(name="list-gpus")
@click.option("--json", "as_json", is_flag=True, help="Print the MCP list_gpus document instead.")
def list_gpus(as_json: bool) -> None:
    """List the datasheet GPUs (metrics/gpus.toml): id (for --gpu and --what-if), name, compute
    capability, dense FP32 FLOP/s and DRAM bandwidth at the boost clock, confidence."""
    from .. import catalog

    gpus = catalog.load_gpus()
    if as_json:
        from ..render import json_doc

        click.echo(json_doc.dumps(json_doc.gpus_document(gpus)), nl=False)
        return
    from ..render.gpus import gpus_text  # imports no pandas: list-gpus answers at once

    echo(gpus_text(gpus), nl=False)
