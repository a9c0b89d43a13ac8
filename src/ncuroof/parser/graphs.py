"""CUDA and HIP graph replays given the operators that captured them (issue 52).

Serving frameworks (vLLM, SGLang) capture a step once into a graph and replay it with one
``cudaGraphLaunch``/``hipGraphLaunch``: the replayed kernels share that call's correlation and carry
no ``cpu_op``, so a trace of the replays alone has no operators or shapes for them. The trace of
the capture has both: each kernel launch made while capturing is a runtime call with the kernel's
name (its args' ``kernel``) inside the ``cpu_op`` that made it, and launches no kernel then (it is
recorded into the graph). :func:`captured_launches` lists those calls, cut into graphs at each
``*GraphInstantiate*`` call; :func:`replayed_rows` aligns each replay's kernels, in GPU order, with
the graph whose captured kernel names match most of them (:class:`difflib.SequenceMatcher`), and
gives each matched kernel the captured call's operator row. Verified on the MIT-licensed vLLM pair
of ``../shared/fixtures`` (recorded on AMD with ``hipGraphLaunch``): 421 of 421 replayed kernels
matched by name.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["GRAPH_LAUNCH", "captured_launches", "graph_correlations", "replayed_rows"]

#: The runtime calls that replay a graph (CUDA, HIP).
GRAPH_LAUNCH = re.compile(r"^(cuda|hip)GraphLaunch")
_INSTANTIATE = re.compile(r"GraphInstantiate")


def _texts(codes: pd.Series, strings: list[str]) -> np.ndarray:
    """String codes of a scan (NaN for none) as text (None for none)."""
    table = np.array([*strings, None], dtype=object)
    c = codes.to_numpy(float)
    return table[np.where(np.isfinite(c), c, len(strings)).astype(np.int64)]


def graph_correlations(launch: pd.DataFrame, strings: list[str]) -> set[float]:
    """The correlation ids of the graph launches among a scan's runtime calls (``call`` codes)."""
    names = _texts(launch["call"], strings)
    hit = np.array([bool(n and GRAPH_LAUNCH.match(n)) for n in names], dtype=bool)
    return set(launch.loc[hit, "correlation"].dropna().tolist())


def captured_launches(
    launch: pd.DataFrame, kernels: pd.DataFrame, strings: list[str]
) -> pd.DataFrame:
    """The kernel launches a capture trace recorded into graphs.

    Parameters
    ----------
    launch : DataFrame
        The scan's runtime calls (``thread``, ``ts``, ``correlation``, ``call`` and ``kernel``
        string codes; a scan made with ``graphs=True``).
    kernels : DataFrame
        The scan's kernel events (``correlation``): a launch that ran a kernel was not captured.
    strings : list of str
        The scan's strings.

    Returns
    -------
    DataFrame
        In call order: ``launch_thread``, ``launch_ts`` (Kineto µs), ``kernel_name``, ``graph`` (0
        for the launches before the first ``*GraphInstantiate*`` call, 1 up to the second, ...),
        and ``external``/``correlation`` NaN (for :func:`ncuroof.parser.timeline._operator_rows`).
    """
    kernel = _texts(launch["kernel"], strings)
    ran = set(kernels["correlation"].dropna().tolist())
    keep = np.array([k is not None for k in kernel]) & ~launch["correlation"].isin(ran).to_numpy()
    names = _texts(launch["call"], strings)
    inst = np.sort(
        launch["ts"].to_numpy(float)[[bool(n and _INSTANTIATE.search(n)) for n in names]]
    )
    ts = launch["ts"].to_numpy(float)[keep]
    out = pd.DataFrame(
        {
            "launch_thread": launch["thread"].to_numpy(float)[keep],
            "launch_ts": ts,
            "kernel_name": kernel[keep],
            "graph": np.searchsorted(inst, ts),
            "external": np.nan,
            "correlation": np.nan,
        }
    )
    return out.sort_values("launch_ts", kind="stable").reset_index(drop=True)


def _alignment(names: tuple[str, ...], graphs: list[list[str]]) -> tuple[int, list[tuple]]:
    """The graph whose names match most of ``names`` and the matching blocks (a, b, size)."""
    best: tuple[int, list[tuple]] = (-1, [])
    most = 0
    for g, captured in enumerate(graphs):
        sm = difflib.SequenceMatcher(None, names, captured, autojunk=False)
        blocks = [tuple(b) for b in sm.get_matching_blocks() if b.size]
        hits = sum(b[2] for b in blocks)
        if hits > most:
            best, most = (g, blocks), hits
    return best


def replayed_rows(
    kernels: pd.DataFrame, graph_corr: set[float], captured: pd.DataFrame, rows: np.ndarray
) -> tuple[np.ndarray, int, int]:
    """The operator row of each replayed kernel, from the capture.

    Parameters
    ----------
    kernels : DataFrame
        One device's kernel events in the replay trace (``name``, ``ts``, ``correlation``).
    graph_corr : set of float
        The correlation ids of its graph launches (:func:`graph_correlations`).
    captured : DataFrame
        :func:`captured_launches` of the capture traces.
    rows : ndarray of int
        The operator row of each captured launch (-1 for none).

    Returns
    -------
    (ndarray, int, int)
        Per kernel the captured operator row (-1 for a kernel not replayed or not matched), the
        replayed kernels, and those matched.
    """
    out = np.full(len(kernels), -1, dtype=np.int64)
    replayed = kernels["correlation"].isin(graph_corr).to_numpy()
    if not replayed.any() or not len(captured):
        return out, int(replayed.sum()), 0
    groups = [g for _, g in captured.groupby("graph", sort=True)]
    graphs = [g["kernel_name"].tolist() for g in groups]
    starts = [g.index.to_numpy() for g in groups]
    cache: dict[tuple[str, ...], Any] = {}
    matched = 0
    sub = kernels[replayed]
    for _, replay in sub.groupby("correlation", sort=False):
        replay = replay.sort_values("ts", kind="stable")
        names = tuple(str(n) for n in replay["name"])
        g, blocks = cache.setdefault(names, _alignment(names, graphs))
        if g < 0:
            continue
        pos = replay.index.to_numpy()
        for a, b, size in blocks:
            out[pos[a : a + size]] = rows[starts[g][b : b + size]]
            matched += size
    return out, int(replayed.sum()), matched
