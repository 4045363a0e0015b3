"""The app's calls in flight through one alias store, so that shadow reads use the time between
them.

A shadowed query asked of a candidate while the app's next call runs competes with it for the
process's interpreter and the machine's cores: on two idle cores, with both members on one
PostgreSQL server, every app call that overlapped a shadow query took about 0.7 ms longer, and
the app's p99 at a sample of 0.1 rose to 1.3-1.7x the store's own (``benchmarks/alias_bench.py``).
So the shadow thread asks a member when no app call is in flight (:meth:`Activity.wait_idle`),
waiting at most :data:`IDLE_WAIT` for such a moment: an app that is never idle gets at most a few
overlapping shadow queries a second, and the queue's bound (dropped and counted) does the rest.
A shadow query that starts in a pause can still overlap a call that arrives during it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["IDLE_WAIT", "Activity"]

IDLE_WAIT = 0.25
"""Seconds the shadow thread waits for a pause in the app's calls before it asks anyway."""

_RECHECK = 0.001
"""After a pause ended before the shadow thread could use it: seconds before it looks again."""


class Activity:
    """A count of the calls in flight, and an event set while it is zero."""

    def __init__(self) -> None:
        self._calls = 0
        self._lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()

    @contextmanager
    def call(self) -> Iterator[None]:
        """Around one app call."""
        with self._lock:
            self._calls += 1
            if self._calls == 1:
                self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1
                if not self._calls:
                    self._idle.set()

    def wait_idle(self, timeout: float = IDLE_WAIT) -> bool:
        """Wait until no call is in flight, at most ``timeout`` seconds; whether none is."""
        deadline = time.monotonic() + timeout
        while self._calls:
            left = deadline - time.monotonic()
            if left <= 0 or not self._idle.wait(left):
                return not self._calls
            if self._calls:  # the pause ended before this thread ran: do not spin on each call
                time.sleep(_RECHECK)
        return True
