"""Arrow's memory in this process: which pool it allocates from, and giving freed pages back.

Used by every phase that holds Arrow data: the decoding workers (:mod:`ncuroof.parser.ncu_rep`
take the pool this process uses), the analysis (:mod:`ncuroof.model.analysis`, between its
phases) and the writing of the tables (:mod:`ncuroof.api`); the command line chooses the pool
once (:func:`use_returning_pool`).
"""

from __future__ import annotations

import ctypes
import os
import threading

from .._lazy import LazyModule
from .._rlimit import address_space_limit

pa = LazyModule("pyarrow")  # imported when memory is released or the pool chosen

__all__ = ["release_memory", "use_returning_pool", "address_space_limit", "JEMALLOC_DECAY_MS"]


def release_memory() -> None:
    """Give the memory freed so far back to the system: Arrow's pool (its unused pages) and, with
    glibc, ``malloc_trim``. The two allocators do not reuse each other's free pages, so a phase
    that allocates with one (writing the tables: Arrow) would otherwise add to the other's free
    pages (the analysis: numpy and Python) in the peak resident memory."""
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError, TypeError):  # not glibc (Windows: no CDLL(None))
        pass


#: Milliseconds jemalloc keeps freed pages before it gives them back (its default is 1 s). Writing
#: a table of long names frees its slices faster than that: gene-pop x 100,000 (5.5 kB demangled
#: names, 1.3 GB of CSV) peaked at 805 MB while writing, 594 MB with 50 ms; 0 ms gave 480 MB but
#: doubled the writing time of the ESMM benchmark (0.6 -> 1.05 s); 50 ms costs it nothing
#: measurable.
JEMALLOC_DECAY_MS = 50


def use_returning_pool() -> None:
    """Make Arrow allocate from its jemalloc pool in this process (the decoding workers it starts
    take the same pool: :mod:`ncuroof.parser.ncu_rep.parallel`), when this pyarrow has one and the
    user chose no pool (``ARROW_DEFAULT_MEMORY_POOL``). The environment is left as it is:
    ``ncuroof profile`` runs the user's program with it.

    For the command line (one analysis per process): jemalloc gives freed pages back to the system
    within a second, where the default pool (mimalloc) keeps them, so a phase's Arrow copies do not
    stay in the resident memory of the phases after it (~50 MB less peak on 100,000 launches),
    within :data:`JEMALLOC_DECAY_MS`.
    """
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    if address_space_limit() is not None:
        # jemalloc and mimalloc reserve address space in large arenas: under ulimit -v 800000 a
        # CSV analysis died of SIGSEGV in Arrow's writer thread (issue 53); malloc stays within it.
        pa.set_memory_pool(pa.system_memory_pool())
        threading.stack_size(1 << 20)  # 1 MiB stacks: a thread's 8 MiB default counts in the limit
        return
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return
    pa.set_memory_pool(pool)
    pa.jemalloc_set_decay_ms(JEMALLOC_DECAY_MS)
