"""Concurrent searches of one async store sent several to a connection, in one pipeline.

An event loop that awaits many searches at once is one thread: each search on its own
connection leaves that connection's server backend idle from the moment its result is ready
until the loop has read it, handed the connection to the next search and sent that one. On a
busy machine the loop's thread waits for a core like every other thread, and every backend
waits with it. Here the searches wait in one queue instead of for a connection, and up to
``pool_size`` drainers (one connection each at a time) take the next few at once and send them
together: the backend runs them back to back while the loop reads the results of another.

A pipeline is one implicit transaction, so one failed search would abort those after it: then
each search of that batch runs again alone (:data:`One`), its own outcome (result, mapped
error, retry) its caller's, as if it had never been batched.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["Pipelined"]

C = TypeVar("C")
R = TypeVar("R")

DEPTH = 8
"""The most searches one connection is sent at a time (more: a longer tail when the queue
empties, a connection still busy with its batch while others idle)."""


class Pipelined(Generic[C, R]):
    """A queue of calls, drained by at most ``width()`` tasks: each takes up to :data:`DEPTH`
    calls (its share of the queue) and runs them with ``many`` (one connection, one pipeline),
    a single one with ``one``."""

    def __init__(
        self,
        one: Callable[[C], Awaitable[R]],
        many: Callable[[Sequence[C]], Awaitable[list[R]]],
        width: Callable[[], int],
    ) -> None:
        self._one, self._many, self._width = one, many, width
        self._queue: deque[tuple[C, asyncio.Future[R]]] = deque()
        self._drainers: set[asyncio.Task[None]] = set()

    async def run(self, call: C) -> R:
        """``call``'s result, run alone or in a batch with calls queued beside it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[R] = loop.create_future()
        self._queue.append((call, done))
        # drainers of a loop that has gone (closed with their tasks pending) count no more
        self._drainers = {t for t in self._drainers if not t.done() and t.get_loop() is loop}
        if len(self._drainers) < max(1, self._width()):
            self._drainers.add(loop.create_task(self._drain(loop)))
        return await done

    def _take(self, loop: asyncio.AbstractEventLoop) -> list[tuple[C, asyncio.Future[R]]]:
        """This drainer's share of the queue (at least one, at most :data:`DEPTH`), without
        calls nobody awaits any more (cancelled, or queued on another loop)."""
        share = min(DEPTH, max(1, -(-len(self._queue) // max(1, self._width()))))
        taken: list[tuple[C, asyncio.Future[R]]] = []
        while self._queue and len(taken) < share:
            call, done = self._queue.popleft()
            if not done.done() and done.get_loop() is loop:
                taken.append((call, done))
        return taken

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        while self._queue:
            batch = self._take(loop)
            try:
                if len(batch) > 1:
                    await self._batch(batch)
                elif batch:
                    await self._alone(*batch[0])
            except BaseException:  # this task cancelled: nobody is left waiting on its calls
                for _, done in batch:
                    if not done.done():
                        done.cancel()
                raise

    async def _batch(self, batch: list[tuple[C, asyncio.Future[R]]]) -> None:
        try:
            results = await self._many([call for call, _ in batch])
        except Exception:
            # one search failed and aborted the rest: each runs alone, with its own outcome
            for call, done in batch:
                await self._alone(call, done)
            return
        for (_, done), result in zip(batch, results, strict=True):
            if not done.done():
                done.set_result(result)

    async def _alone(self, call: C, done: asyncio.Future[R]) -> None:
        if done.done():
            return
        try:
            result = await self._one(call)
        except Exception as exc:
            if not done.done():
                done.set_exception(exc)
            return
        if not done.done():
            done.set_result(result)
