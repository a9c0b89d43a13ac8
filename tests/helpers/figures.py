"""The roofline figure as a written page holds it: parsed back from the page's HTML, no browser."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np


def arr(v: object) -> np.ndarray:
    """A figure JSON array: a list, or plotly's typed array ``{"dtype": "f4", "bdata": base64}``."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).astype(float)
    return np.asarray([np.nan if e is None else e for e in v], dtype=float)


def figure_of(page: Path) -> tuple[list[dict], dict]:
    """The data and layout of the roofline figure, parsed from the page's
    ``Plotly.newPlot`` call."""
    html = page.read_text(encoding="utf-8")
    m = re.search(r'Plotly\.newPlot\(\s*"roofline",\s*', html)
    dec = json.JSONDecoder()
    data, j = dec.raw_decode(html, m.end())
    layout, _ = dec.raw_decode(html, html.index("{", j))
    return data, layout
