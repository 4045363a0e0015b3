"""Progress on stderr: a bar with rate and ETA (rich), JSON Lines, or nothing at all.

:class:`ProgressMode` is the ``progress`` option of every run (``none``, ``bar``, ``json``;
``True``/``False`` mean ``bar``/``none``). In ``json`` mode each phase writes one compact
``vectorport.progress/1`` document per line on stderr, when it starts, at most once a second
while it runs and moves (a line repeating the last one's ``done`` and ``total`` is not written,
so a stage's start line is written once however long its first records take), and when it
ends::

    {"schema": "vectorport.progress/1", "stage": "copy", "done": 4000, "total": 10000,
     "rate": 2012.5, "eta": 2.98, "elapsed": 1.99}

``rate`` is units per second since the phase started (``null`` until one is done), ``eta`` the
seconds left at that rate (``null`` without a total). ``sync --follow`` adds ``lag`` (seconds)
and ``behind`` (changes not yet applied) to its ``follow`` lines.

A run in another process (a Ray task running a whole command) forwards its phases instead of
showing them (:func:`forwarded`); the driver replays them with a :class:`Relay`, so they are
shown there as the same run in the driver's own process would show them.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from types import TracebackType
from typing import Any

from .._activity import Activity
from ..exceptions import ConfigurationError

__all__ = [
    "JSON_INTERVAL",
    "PROGRESS_SCHEMA",
    "IndexBar",
    "Progress",
    "ProgressEvent",
    "ProgressMode",
    "Relay",
    "emit_progress",
    "forwarded",
    "polled",
]

PROGRESS_SCHEMA = "vectorport.progress/1"
JSON_INTERVAL = 1.0
"""Seconds between two JSON lines of one phase (its first and last are always written)."""

FORWARD_INTERVAL = 0.2
"""Seconds between two forwarded positions of one phase (its start and end are always sent)."""

_write_lock = threading.Lock()

ProgressEvent = tuple[str, int, str, int, "int | None"]
"""A forwarded phase event: ``(kind, phase id, stage, done, total)``, kind ``start``, ``at`` or ``end``."""

_sink: Callable[[ProgressEvent], None] | None = None
_ids = itertools.count()


@contextmanager
def forwarded(sink: Callable[[ProgressEvent], None]) -> Iterator[None]:
    """Within the block, every enabled :class:`Progress` of this process sends its events to
    ``sink`` instead of writing to stderr (for a :class:`Relay` in another process)."""
    global _sink
    _sink = sink
    try:
        yield
    finally:
        _sink = None


class ProgressMode(Enum):
    """How a run shows its progress on stderr. Falsy when ``NONE``, so ``if progress:`` reads
    as it did when the option was a bool."""

    NONE = "none"
    BAR = "bar"
    JSON = "json"

    def __bool__(self) -> bool:
        return self is not ProgressMode.NONE

    @classmethod
    def parse(cls, value: ProgressMode | bool | str | None) -> ProgressMode:
        """``True`` → ``bar``, ``False``/``None`` → ``none``, or a mode's name.

        >>> ProgressMode.parse(True), ProgressMode.parse("json")
        (<ProgressMode.BAR: 'bar'>, <ProgressMode.JSON: 'json'>)
        """
        if isinstance(value, cls):
            return value
        if value is None or value is False:
            return cls.NONE
        if value is True:
            return cls.BAR
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        raise ConfigurationError(f"progress takes none, bar or json (or True/False), got {value!r}")


def emit_progress(
    stage: str, done: int, total: int | None, rate: float | None, eta: float | None, **extra: Any
) -> None:
    """Write one ``vectorport.progress/1`` line on stderr (whole lines, from any thread)."""
    doc = {"schema": PROGRESS_SCHEMA, "stage": stage, "done": done, "total": total}
    doc |= {"rate": _round(rate), "eta": _round(eta)} | extra
    line = json.dumps(doc, ensure_ascii=False, default=str) + "\n"
    with _write_lock:
        sys.stderr.write(line)
        sys.stderr.flush()


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class Progress:
    """Thread-safe progress for one phase. Disabled, it costs one ``if`` per call.

    ``enabled``: a :class:`ProgressMode` (or a bool: a bar or nothing). rich is imported only
    when a bar is shown, so library users who never ask for one never load it.
    """

    def __init__(
        self,
        description: str,
        total: int | None,
        *,
        enabled: ProgressMode | bool,
        completed: int = 0,
    ) -> None:
        self.description = description
        self.total = total
        self.mode = ProgressMode.parse(enabled)
        self.enabled = bool(self.mode)
        self.completed = completed
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None
        self._started = time.monotonic()
        self._start_done = completed
        self._last_line = 0.0
        self._last_shown: tuple[int, int | None] | None = None
        self._sink = _sink if self.enabled else None
        self._id = next(_ids)

    def __enter__(self) -> Progress:
        self._started = time.monotonic()
        self._start_done = self.completed
        if self._sink is not None:
            self._send("start", force=True)
        elif self.mode is ProgressMode.BAR:
            self._start_bar()
        elif self.mode is ProgressMode.JSON:
            self._line(force=True)
        return self

    def _start_bar(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            ProgressColumn,
            Task,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress
        from rich.text import Text

        class RateColumn(ProgressColumn):
            def render(self, task: Task) -> Text:
                speed = task.finished_speed or task.speed
                return Text("-- rec/s" if speed is None else f"{speed:,.0f} rec/s")

        self._bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.description, total=self.total, completed=self.completed)

    def _line(self, *, force: bool = False) -> None:
        """A JSON line, at most once per :data:`JSON_INTERVAL` and only when ``done`` or ``total``
        moved, unless ``force`` (call under the lock or before threads start)."""
        now = time.monotonic()
        shown = (self.completed, self.total)
        if not force and (now - self._last_line < JSON_INTERVAL or shown == self._last_shown):
            return
        self._last_line, self._last_shown = now, shown
        elapsed = now - self._started
        moved = self.completed - self._start_done
        rate = moved / elapsed if moved > 0 and elapsed > 0 else None
        eta = None
        if self.total is not None and rate:
            eta = max(self.total - self.completed, 0) / rate
        emit_progress(self.description, self.completed, self.total, rate, eta, elapsed=round(elapsed, 3))

    def _send(self, kind: str, *, force: bool = False) -> None:
        """Forward the position, at most once per :data:`FORWARD_INTERVAL` unless ``force``."""
        now = time.monotonic()
        if self._sink is None or (not force and now - self._last_line < FORWARD_INTERVAL):
            return
        self._last_line = now
        self._sink((kind, self._id, self.description, self.completed, self.total))

    def advance(self, n: int) -> None:
        with self._lock:
            self.completed += n
            if self._sink is not None:
                self._send("at")
            elif self._bar is not None:
                self._bar.update(self._task, advance=n)
            elif self.mode is ProgressMode.JSON:
                self._line()

    def update(self, completed: int, total: int | None) -> None:
        """Set the position (for work that reports where it is, not how much it did)."""
        with self._lock:
            self.completed, self.total = completed, total
            if self._sink is not None:
                self._send("at")
            elif self._bar is not None:
                self._bar.update(self._task, completed=completed, total=total)
            elif self.mode is ProgressMode.JSON:
                self._line()

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._sink is not None:
            with self._lock:
                self._send("at", force=True)
        elif self._bar is not None:
            self._bar.update(self._task, total=total)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._sink is not None:
            with self._lock:
                self._send("end", force=True)
        elif self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.mode is ProgressMode.JSON:
            with self._lock:
                self._line(force=True)


class Relay:
    """The driver's side of :func:`forwarded`: each forwarded phase shown by a :class:`Progress`
    of its own, in ``mode``, as the run would have shown it in this process."""

    def __init__(self, mode: ProgressMode) -> None:
        self.mode = mode
        self.open: dict[int, Progress] = {}

    def play(self, event: ProgressEvent) -> None:
        kind, key, stage, done, total = event
        if kind == "start":
            if key in self.open:  # a retried task numbers its phases again
                self.open.pop(key).__exit__(None, None, None)
            self.open[key] = Progress(stage, total, enabled=self.mode, completed=done).__enter__()
            return
        bar = self.open.get(key)
        if bar is None:
            return
        bar.update(done, total)
        if kind == "end":
            self.open.pop(key).__exit__(None, None, None)

    def close(self) -> None:
        """End the phases still open (the task failed or was lost mid-phase)."""
        while self.open:
            self.open.popitem()[1].__exit__(None, None, None)


@contextmanager
def polled(
    bar: Progress, total: int | None, done: Callable[[], int] | None, every: float = 0.5
) -> Iterator[None]:
    """While the block runs (tasks placed elsewhere), the bar follows ``done()``: what those
    tasks committed so far, read from their checkpoints or states every ``every`` seconds."""
    if done is None:
        yield
        return
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every):
            bar.update(done(), total)

    thread = threading.Thread(target=poll, name="vectorport-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.update(done(), total)


class IndexBar:
    """A progress bar for an index build the target reports (:mod:`vectorport._activity`),
    shown once the copy's bar is gone."""

    def __init__(self, enabled: ProgressMode | bool) -> None:
        self.mode = ProgressMode.parse(enabled)
        self.bar: Progress | None = None

    def __call__(self, event: Activity) -> None:
        if event.kind != "index_build" or not self.mode:
            return
        if event.finished:
            self.close()
        elif event.total:
            if self.bar is None:
                self.bar = Progress("index build (heap blocks)", event.total, enabled=self.mode).__enter__()
            self.bar.update(event.done or 0, event.total)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def __enter__(self) -> IndexBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
