"""This process's virtual-memory limit (``ulimit -v``), read without importing anything heavy:
the command line's error messages need it before pandas or pyarrow is imported (issue 54: a
``--help`` that starts at once)."""

from __future__ import annotations

__all__ = ["address_space_limit"]


def address_space_limit() -> int | None:
    """This process's virtual-memory limit in bytes (``ulimit -v``, RLIMIT_AS), None without one."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):  # not on POSIX
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)
