"""An Nsight Systems SQLite export made by this project, not by nsys (issue 54 item 10: the nsys
tests skipped in a clone without ``../shared``, whose ``gpu4__report.sqlite`` may not be copied
into the repository).

It holds the tables and columns :func:`ncuroof.parser.timeline.read_timeline` reads, declared as
nsys's export declares them, with the launches of the shared export's program: four ``vecAdd``
launches (correlation IDs 123-126) on streams 13-16 of a Tesla T4, grid 1024 x 1 x 1, blocks of
256, and the runtime calls that launched them. The nsys tests that read the shared export run on
this one too, with the same expected values.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

_TABLES = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER,
    correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
    callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
    contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
    globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
    mangledName INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
    gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
    blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
    dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
    localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL);
"""

#: A process's global IDs: nsys keeps the process in the bits above 24 of a thread's ID.
_PID = 284_833_876_017_152
_TID = _PID + 200_206
#: (start, end) in ns of the four launches, overlapping on their streams.
_KERNELS = [
    (548_779_327, 548_801_887),
    (548_795_167, 548_824_222),
    (548_817_694, 548_851_678),
    (548_844_510, 548_875_581),
]


def made_export(path: Path) -> Path:
    """Write the made export at ``path`` (a new file) and return ``path``."""
    with contextlib.closing(sqlite3.connect(path)) as con, con:
        con.executescript(_TABLES)
        con.executemany(
            "INSERT INTO StringIds VALUES (?, ?)",
            [
                (1, "[kernel.kallsyms]"),
                (478, "vecAdd(double *, double *, double *, int)"),
                (479, "vecAdd"),
                (480, "cudaLaunchKernel_v7000"),
                (481, "cudaMemcpy_v3020"),
            ],
        )
        con.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'Tesla T4')")
        calls = [(547_230_557 + 3_000 * i, 120 + i, 481) for i in range(3)]  # copies first
        calls += [(start - 2_000, 123 + i, 480) for i, (start, _) in enumerate(_KERNELS)]
        con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)",
            [(s, s + 1_500, _TID, corr, name) for s, corr, name in calls],
        )
        con.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, 0, 1, ?, ?, ?, 478, 479, NULL,"
            " 16, 1024, 1, 1, 256, 1, 1, 0, 0, 0, 0, ?)",
            [(s, e, 13 + i, 123 + i, _PID, i + 1) for i, (s, e) in enumerate(_KERNELS)],
        )
    return path
