"""Exponential backoff with full jitter, for :class:`~vectorport.exceptions.TransientError`."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .exceptions import TransientError

__all__ = ["RetryPolicy"]

log = logging.getLogger("vectorport")
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Retry a call on ``TransientError`` up to ``attempts`` times in all.

    The wait before retry ``n`` is uniform in ``[0, min(cap, base * 2**n)]`` (AWS's "full
    jitter"), or the server's ``retry_after`` when it is longer.
    """

    attempts: int = 8
    base: float = 0.1
    cap: float = 10.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        wait = random.uniform(0.0, min(self.cap, self.base * (2**attempt)))
        return max(wait, retry_after or 0.0)

    def call(self, fn: Callable[[], T], what: str = "call") -> T:
        """Run ``fn``; on ``TransientError`` wait and run it again, re-raising the last error."""
        for attempt in range(self.attempts):
            try:
                return fn()
            except TransientError as exc:
                if attempt + 1 >= self.attempts:
                    raise
                wait = self.delay(attempt, exc.retry_after)
                log.warning("%s: %s; retry %d/%d in %.2fs", what, exc, attempt + 1, self.attempts - 1, wait)
                time.sleep(wait)
        raise AssertionError("unreachable")
