"""``vectorport.aconnect`` on a backend without an async driver: the generic wrapper runs each
call off the event loop."""

from __future__ import annotations

import asyncio

import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.memory


def test_memory_answers_aconnect_off_the_event_loop() -> None:
    async def main() -> tuple[list[str], int, int, int]:
        async with await vectorport.aconnect("memory://async-generic", dimension=2) as store:
            assert type(store) is vectorport.AsyncStore
            await store.aupsert([Record("a", [1, 0]), Record("b", [0, 1])])
            found = await store.aquery([1, 0], k=1)
            pages = [page async for page in store.ascan(batch_size=1)]
            deleted = await store.adelete(["a"])
            left = await store.acount()
            await store.adrop()
            return found.keys, sum(len(p.records) for p in pages), deleted, left

    assert asyncio.run(main()) == (["a"], 2, 1, 1)
