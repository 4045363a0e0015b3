"""Exponential backoff with full jitter, for :class:`~vectorport.exceptions.TransientError`.

There is one retry layer: the store's (:attr:`BaseStore.retry`). An engine that wants another
policy for its calls, or to count the retries, does not wrap the store's calls in a loop of its
own (which multiplied the attempts and hid the inner ones): it opens a :func:`retry_scope`
around them, and every :meth:`RetryPolicy.call` in that thread's context follows it.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from .exceptions import TransientError

__all__ = ["Backoff", "RetryPolicy", "retry_scope"]

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
        """Run ``fn``; on ``TransientError`` wait and run it again, re-raising the last error.

        Inside a :func:`retry_scope` with a policy, that policy replaces this one.
        """
        scope = _SCOPE.get()
        policy = self if scope is None or scope.policy is None else scope.policy
        backoff = Backoff(policy)
        while True:
            try:
                return fn()
            except TransientError as exc:
                wait = backoff.retry(exc, what)
                if wait is None:
                    raise
                if scope is not None and scope.on_retry is not None:
                    scope.on_retry(exc)
                time.sleep(wait)

    async def acall(self, fn: Callable[[], Awaitable[T]], what: str = "call") -> T:
        """:meth:`call` for a coroutine function: the same attempts and waits, awaited."""
        backoff = Backoff(self)
        while True:
            try:
                return await fn()
            except TransientError as exc:
                wait = backoff.retry(exc, what)
                if wait is None:
                    raise
                await asyncio.sleep(wait)


class Backoff:
    """The failures in a row of one call (up to the policy's ``attempts``) or of one outage (up
    to ``limit`` seconds since the first failure; 0: no limit): the wait before each next
    attempt, ``None`` once none is left. The one backoff loop every retry goes through."""

    def __init__(self, policy: RetryPolicy, limit: float | None = None) -> None:
        self.policy, self.limit = policy, limit
        self.failures = 0
        self.began = time.monotonic()

    @property
    def lasted(self) -> float:
        """Seconds since the first failure of this run of failures."""
        return time.monotonic() - self.began if self.failures else 0.0

    def retry(self, exc: TransientError, what: str) -> float | None:
        """Count ``exc`` as a failure of the call ``what``; the wait before its next attempt
        (logged), ``None`` when none is left (the caller re-raises ``exc``)."""
        wait = self.next_wait(exc.retry_after)
        if wait is not None:
            log.warning(
                "%s: %s; retry %d/%d in %.2fs", what, exc, self.failures, self.policy.attempts - 1, wait
            )
        return wait

    def next_wait(self, retry_after: float | None = None) -> float | None:
        """Count a failure; the wait before the next attempt, or ``None`` when none is left
        (the last attempt of an outage is made at its limit)."""
        if not self.failures:
            self.began = time.monotonic()
        if self.limit is None:
            if self.failures + 1 >= self.policy.attempts:
                return None
            wait = self.policy.delay(self.failures, retry_after)
            self.failures += 1
            return wait
        lasted = time.monotonic() - self.began
        if self.limit and lasted >= self.limit:
            return None
        wait = self.policy.delay(min(self.failures, 16), retry_after)
        self.failures += 1
        return min(wait, self.limit - lasted) if self.limit else wait


@dataclass(frozen=True)
class _Scope:
    policy: RetryPolicy | None
    on_retry: Callable[[TransientError], None] | None


_SCOPE: ContextVar[_Scope | None] = ContextVar("vectorport_retry_scope", default=None)


@contextmanager
def retry_scope(
    policy: RetryPolicy | None = None, on_retry: Callable[[TransientError], None] | None = None
) -> Iterator[None]:
    """Inside the block (in this thread), retried calls follow ``policy`` when given and report
    each retry to ``on_retry``.

    >>> from vectorport.exceptions import TransientError
    >>> seen, tries = [], iter([TransientError("busy"), None])
    >>> def flaky():
    ...     exc = next(tries)
    ...     if exc:
    ...         raise exc
    ...     return "ok"
    >>> with retry_scope(RetryPolicy(attempts=2, base=0.0), on_retry=seen.append):
    ...     RetryPolicy(attempts=1).call(flaky)
    'ok'
    >>> len(seen)
    1
    """
    token = _SCOPE.set(_Scope(policy, on_retry))
    try:
        yield
    finally:
        _SCOPE.reset(token)
