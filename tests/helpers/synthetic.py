"""Synthetic kernels tables for page and scale tests (no ../shared needed).

The numbers are made up but consistent (rates = work / time, roofs of an H100-like GPU), so the
formulas's points and the page can be checked against the arithmetic here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ncuroof import catalog
from ncuroof.model import diagnose, formulas
from ncuroof.schema import LAUNCHES, empty, validate_launches

PEAK = {"fp64": 33.5e12, "fp32": 67e12, "fp16": 134e12}
BW = {"l1": 33e12, "l2": 11e12, "dram": 3.35e12}


def kernels_table(
    n_launch: int, n_kernels: int, seed: int = 0, fp64_every: int = 5
) -> pd.DataFrame:
    """``n_launch`` launches of ``n_kernels`` kernels (Zipf-distributed launch counts and times).

    Kernel ``k`` is named ``kern_k``; every ``fp64_every``-th kernel does FP64 work, the others
    FP32 (and kernel 1, when present, both). Returns a validated kernels table.
    """
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_kernels + 1) ** 1.2
    kid = rng.choice(n_kernels, size=n_launch, p=weights / weights.sum())
    kid[:n_kernels] = np.arange(n_kernels)[: min(n_kernels, n_launch)]
    base_t = 1e-5 * (1 + 20 * weights / weights.max())
    time_s = base_t[kid] * rng.uniform(0.9, 1.1, n_launch)
    ai_dram = (10 ** rng.uniform(-1, 2.5, n_kernels))[kid]  # per launch: its kernel's
    frac = rng.uniform(0.05, 0.9, n_kernels)[kid]
    k = _launches(kid, time_s)
    flop = _fill_flops(k, kid, time_s, ai_dram, frac, fp64_every)
    _fill_bytes(k, flop / ai_dram, time_s)
    _fill_labels(k, ai_dram, frac)
    k = formulas.time_at_roof(k)
    k = diagnose.diagnose_launches(
        k, formulas.compute_points(k), catalog.load(), catalog.load_gpus()
    )
    return validate_launches(k)


def _launches(kid: np.ndarray, time_s: np.ndarray) -> pd.DataFrame:
    """A kernels table with one launch of kernel ``kid[i]`` taking ``time_s[i]`` per row."""
    k = empty(LAUNCHES).reindex(range(len(kid)))
    k["source"] = "synthetic"
    k["launch_id"] = np.arange(len(kid))
    k["kernel_name"] = [f"kern_{i}" for i in kid]
    k["kernel_demangled"] = [f"void kern_{i}<float>(float *, int)" for i in kid]
    k["nvtx_range"] = ""
    k["device_name"] = "Synthetic H100"
    k["cc"] = "9.0"
    k["time_s"] = time_s
    k["sm_clock_hz"] = 1.755e9
    return k


def _fill_flops(k, kid, time_s, ai_dram, frac, fp64_every: int) -> np.ndarray:
    """FP64 or FP32 work at ``frac`` of the attainable roof at the DRAM AI (kernel 1 also does a
    tenth in FP64); the FLOPs of each launch."""
    fp64 = (kid % fp64_every) == 0
    both = kid == 1
    for p in ("fp64", "fp32", "fp16"):
        k[f"{p}_flop"] = np.nan
        k[f"{p}_flop_per_s"] = np.nan
        k[f"peak_{p}_flop_per_s"] = PEAK[p]
    prec = np.where(fp64, "fp64", "fp32")
    peak = np.array([PEAK[p] for p in prec])
    fps = frac * np.minimum(peak, ai_dram * BW["dram"])
    flop = fps * time_s
    for p in ("fp64", "fp32"):
        sel = (prec == p) | (both & (p == "fp64"))
        share = np.where(both & (p == "fp64"), 0.1, 1.0)
        k.loc[sel, f"{p}_flop"] = (flop * share)[sel]
        k.loc[sel, f"{p}_flop_per_s"] = (fps * share)[sel]
    k["tensor_flop"] = np.nan
    k["tensor_flop_per_s"] = np.nan
    return flop


def _fill_bytes(k: pd.DataFrame, dram: np.ndarray, time_s: np.ndarray) -> None:
    """DRAM bytes ``dram``; L2 and L1 moving 3x and 8x as much."""
    for lv, factor in (("dram", 1.0), ("l2", 3.0), ("l1", 8.0)):
        b = dram * factor
        k[f"{lv}_bytes"] = b
        k[f"{lv}_bytes_per_s"] = b / time_s
        k[f"peak_{lv}_bytes_per_s"] = BW[lv]
        k[f"{lv}_definition"] = "ncu"


def _fill_labels(k: pd.DataFrame, ai_dram: np.ndarray, frac: np.ndarray) -> None:
    """Throughputs, sources, the bound by the DRAM AI against the FP32 ridge, status ok."""
    k["sm_throughput_frac"] = frac
    k["memory_throughput_frac"] = frac
    k["waves_per_sm"] = 4.0
    k["flop_source"] = "count"
    k["tensor_source"] = ""
    k["peak_source"] = "report"
    report = tuple((r, "report") for r in ("fp64", "fp32", "fp16", "l1", "l2", "dram"))
    k["ceiling_sources"] = pd.Series([report] * len(k), index=k.index, dtype=object)
    k["datasheet_gpu"] = ""
    k["ncu_version"] = "synthetic"
    k["bound"] = np.where(ai_dram < PEAK["fp32"] / BW["dram"], "memory", "compute")
    k["status"] = "ok"
    k["notes"] = pd.Series([[] for _ in range(len(k))], index=k.index, dtype=object)
