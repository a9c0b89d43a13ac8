"""Read Nsight Compute ``.ncu-rep`` reports (and ``.ncu-repz``, their zstd-compressed form).

The modules, by role, each importing only those below it:

* :mod:`.verify`: the decoder checked against NVIDIA's ``ncu_report`` on a sample of launches,
  and a decoded table's rates against its durations;
* :mod:`.decode`: our own decoder, the launch records of a report into the raw table;
* :mod:`.reference`: the same table read through ``ncu_report`` (the reference), run in a worker
  process (:mod:`._ncu_worker`) whose abort cannot take ncuroof down;
  :mod:`.parallel`: slices of a report decoded side by side by worker interpreters;
* :mod:`.rows`: a launch's row of the raw table, made the same way by both readers;
  :mod:`.source`: a report's bytes, a ``.ncu-rep``'s memory map or a ``.ncu-repz`` decompressed
  forward from its stream;
* :mod:`.compressed`: the zstd frames of a ``.ncu-repz``, checked, and its decompressed copy;
* :mod:`.framing`: the file header and the block walk both readers start from;
* :mod:`.protobuf`: the protobuf messages of a report, declared at run time.
"""

from __future__ import annotations

from .compressed import is_compressed, uncompressed
from .decode import LEARNED, PROCESSES_ENV, PayloadError, UnsupportedReport, read_nvr
from .framing import MAGIC
from .reference import read_ncu_rep
from .source import streamable
from .verify import EarlySample, against_ncu_report, check_rates

__all__ = [
    "MAGIC",
    "LEARNED",
    "PROCESSES_ENV",
    "EarlySample",
    "PayloadError",
    "UnsupportedReport",
    "against_ncu_report",
    "check_rates",
    "is_compressed",
    "read_ncu_rep",
    "read_nvr",
    "streamable",
    "uncompressed",
]
