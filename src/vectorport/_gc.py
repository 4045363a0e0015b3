"""Fewer cyclic garbage collections while a bulk job allocates (a copy, a digest pass).

A copy makes and drops millions of short-lived containers (a driver's rows, records, metadata
dicts). CPython counts them towards its cyclic collector, whose default thresholds ``(700, 10,
10)`` then start a collection every 700 of them and, every so often, a full one over every
object the process holds (the drivers' and frameworks' modules: hundreds of thousands). Almost
none of this garbage is cyclic: reference counting frees it. ``py-spy`` put 16 % of a chromadb ``get``
of 100k x 384 records in ``gc_collect_main``; raising the thresholds for the copy and the
verification took the copy of a Chroma -> pgvector migration from 15.0-17.2 s to 10.8-14.2 s
(same process, alternated; ``docs/performance.md``).

The thresholds are the process's, so :func:`bulk_allocations` raises them while at least one
bulk job runs (nested and concurrent jobs share one raise) and puts back what it found when the
last one ends, unless someone changed them meanwhile. It never lowers a threshold and leaves a
collector switched off (``gc.disable()`` or a first threshold of 0) as it is. Cycles are still
collected, only less often.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BULK_THRESHOLDS", "bulk_allocations"]

BULK_THRESHOLDS = (100_000, 20, 10)
"""The collector's thresholds during a bulk job: a young collection every 100,000 container
allocations, a middle one every 20 of those, a full one at most every 10 middle ones (20
million allocations: cyclic garbage that outlived a young collection is still freed within a
few hundred thousand records). ``(100000, 50, 100)`` copied at the same speed (three rounds
each, alternated: 17.5-19.2 s and 18.0-19.3 s against 20.0-21.8 s at the defaults)."""

_lock = threading.Lock()
_jobs = 0
_found: tuple[int, ...] | None = None
"""The thresholds the first job found (``None``: left as they were)."""
_set: tuple[int, ...] | None = None
"""The thresholds it set."""


@contextmanager
def bulk_allocations() -> Iterator[None]:
    """Raise the cyclic collector's thresholds to at least :data:`BULK_THRESHOLDS` for the block.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with bulk_allocations():
    ...     gc.get_threshold() >= BULK_THRESHOLDS or before[0] == 0
    True
    >>> gc.get_threshold() == before
    True
    """
    global _jobs, _found, _set
    with _lock:
        if _jobs == 0:
            found: tuple[int, ...] = gc.get_threshold()
            # as many values as this Python's collector has (three in CPython 3.11-3.14)
            raised = tuple(max(a, b) for a, b in zip(found, BULK_THRESHOLDS, strict=False))
            raised += found[len(raised) :]
            if found[0] != 0 and raised != found:
                _found, _set = found, raised
                gc.set_threshold(*_set)
        _jobs += 1
    try:
        yield
    finally:
        with _lock:
            _jobs -= 1
            if _jobs == 0 and _found is not None:
                if gc.get_threshold() == _set:  # nobody changed them meanwhile
                    gc.set_threshold(*_found)
                _found = _set = None
