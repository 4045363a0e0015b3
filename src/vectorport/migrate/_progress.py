"""Progress on stderr with rate and ETA (rich), or nothing at all."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

__all__ = ["Progress"]


class Progress:
    """A thread-safe progress bar for one phase. Disabled, it costs one ``if`` per call.

    rich is imported only when the bar is shown, so library users who never ask for progress
    never load it.
    """

    def __init__(self, description: str, total: int | None, *, enabled: bool, completed: int = 0) -> None:
        self.description = description
        self.total = total
        self.enabled = enabled
        self.completed = completed
        self._lock = threading.Lock()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if self.enabled:
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
        return self

    def advance(self, n: int) -> None:
        with self._lock:
            self.completed += n
            if self._bar is not None:
                self._bar.update(self._task, advance=n)

    def update(self, completed: int, total: int | None) -> None:
        """Set the position (for work that reports where it is, not how much it did)."""
        with self._lock:
            self.completed, self.total = completed, total
            if self._bar is not None:
                self._bar.update(self._task, completed=completed, total=total)

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.update(self._task, total=total)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
