"""Long backend work that is not a stream of records — an index build, an embedded server's
start — told to whoever listens (the CLI's stderr, a migration's progress bar).

A backend calls :func:`report`; nothing is shown unless a listener is registered with
:func:`listening`, so library users see only the usual log records.

>>> seen = []
>>> with listening(seen.append):
...     report("index_build", "building the index", done=5, total=10)
>>> seen[0].kind, seen[0].fraction
('index_build', 0.5)
>>> report("server_start", "nobody listens")  # no listener: a DEBUG log record only
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Activity", "listening", "report", "subscribe"]

log = logging.getLogger("vectorport.activity")


@dataclass(frozen=True)
class Activity:
    """One report: ``kind`` (``index_build``, ``server_start``), a one-line ``message``, and
    for progress, ``done`` of ``total`` units. ``finished`` marks the last report of a task."""

    kind: str
    message: str
    done: int | None = None
    total: int | None = None
    finished: bool = False

    @property
    def fraction(self) -> float | None:
        if self.done is None or not self.total:
            return None
        return min(1.0, self.done / self.total)


Listener = Callable[[Activity], None]
_listeners: list[Listener] = []
_lock = threading.Lock()


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call ``listener`` with every :class:`Activity` reported (from any thread) in the block."""
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def subscribe(listener: Listener) -> None:
    """Register ``listener`` for the life of the process (the CLI's stderr lines)."""
    with _lock:
        _listeners.append(listener)


def report(
    kind: str, message: str, *, done: int | None = None, total: int | None = None, finished: bool = False
) -> None:
    """Tell the listeners; a listener's own failure never fails the work it watches."""
    event = Activity(kind, message, done, total, finished)
    log.debug("%s", message)
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(event)
        except Exception:  # progress display only
            log.debug("activity listener failed", exc_info=True)
