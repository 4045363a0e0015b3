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


def test_text_and_hybrid_search_are_awaitable_where_the_store_has_them() -> None:
    records = [Record("a", [1, 0], {}, "red apples"), Record("b", [0, 1], {}, "green pears")]

    async def main() -> tuple[list[str], list[str], list[str], list[str]]:
        async with await vectorport.aconnect("memory://async-text", dimension=2) as store:
            await store.aupsert(records)
            text = (await store.atext_query("pears", k=2)).keys
            hybrid = (await store.ahybrid_query([1, 0], "pears", k=2)).keys
            sync_text = store.sync.text_query("pears", k=2).keys
            sync_hybrid = store.sync.hybrid_query([1, 0], "pears", k=2).keys
            await store.adrop()
            return text, hybrid, sync_text, sync_hybrid

    text, hybrid, sync_text, sync_hybrid = asyncio.run(main())
    assert text == sync_text == ["b"]
    assert hybrid == sync_hybrid and sorted(hybrid) == ["a", "b"]
