"""What ``ncuroof list-gpus`` prints, importing nothing heavy (issue 54: it answers at once)."""

from __future__ import annotations

from typing import Any

from .. import fmt

__all__ = ["gpus_text"]


def gpus_text(gpus: Any) -> str:
    """What ``list-gpus`` prints: one line per datasheet GPU of ``metrics/gpus.toml``: its id
    (what ``--gpu`` and ``--what-if`` take), name, compute capability, dense FP32 FLOP/s and DRAM
    B/s at the boost clock, and the datasheet's confidence.

    Parameters
    ----------
    gpus : ncuroof.catalog.GpuCatalog
        :func:`ncuroof.catalog.load_gpus`.

    Returns
    -------
    str
        The lines, each ending in a newline, control characters made visible.
    """
    rows = [
        (
            g.id,
            g.name,
            f"CC {g.cc}",
            f"FP32 {fmt.si(g.flop_per_s.get('fp32'), 'FLOP/s')}",
            f"DRAM {fmt.si(g.dram_bytes_per_s, 'B/s')}",
            f"confidence {g.confidence}",
        )
        for g in gpus.gpus
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(5)] if rows else []
    lines = ["  ".join([*(c.ljust(w) for c, w in zip(r, widths)), r[5]]) for r in rows]
    return "".join(fmt.printable(line, layout=False) + "\n" for line in lines)
