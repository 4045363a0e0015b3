"""A scan page of large texts is cut at PAGE_BYTES of text (at least one row), whatever
its row count: importing or verifying a store of 8 MB texts no longer holds a thousand of them
at once. Every record is still read once, in key order, and a cursor resumes after a cut page,
from the synchronous and the asynchronous client."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest

import vectorport
from vectorport import Record
from vectorport._paging import PAGE_BYTES

pytestmark = pytest.mark.pgvector

BIG = 6 * 1024 * 1024  # three of them pass PAGE_BYTES (16 MB)


def _records() -> list[Record]:
    rng = random.Random(7)
    out = [Record(f"big{i:02d}", [rng.random(), 1.0], {"i": i}, f"{i:02d}" + "x" * BIG) for i in range(8)]
    out += [Record(f"small{i:03d}", [rng.random(), 1.0], {"i": i}, "tiny") for i in range(40)]
    return out


def _check(pages: list[list[Record]], wanted: list[Record]) -> None:
    for page in pages:
        texts = sum(len(r.text or "") for r in page)
        assert len(page) == 1 or texts - len(page[-1].text or "") < PAGE_BYTES
    got = [r for page in pages for r in page]
    assert [r.key for r in got] == sorted(r.key for r in wanted)
    assert {r.key: r.text for r in got} == {r.key: r.text for r in wanted}


def test_pages_of_large_texts_are_cut_by_bytes(pg_url: Callable[..., str]) -> None:
    wanted = _records()
    with vectorport.connect(pg_url(), dimension=2, metric="euclidean") as store:
        store.upsert(wanted, batch_size=4)
        pages = [list(p.records) for p in store.scan(batch_size=1000)]
        assert max(sum(r.key.startswith("big") for r in p) for p in pages) == 3
        assert len(pages) == 3  # big00-02, big03-05, then big06-07 and every small one
        _check(pages, wanted)
        # a cursor taken from a cut page resumes right after it
        first = next(iter(store.scan(batch_size=1000)))
        assert first.cursor is not None and len(first) < 48
        rest = [list(p.records) for p in store.scan(batch_size=1000, cursor=first.cursor)]
        _check([list(first.records), *rest], wanted)
        # without texts, pages are cut by rows only
        keys = [list(p.records) for p in store.scan(batch_size=1000, include=["metadata"])]
        assert [len(p) for p in keys] == [48]

        async def read() -> list[list[Record]]:
            return [list(p.records) async for p in store.asynchronous().ascan(batch_size=1000)]

        _check(asyncio.run(read()), wanted)
