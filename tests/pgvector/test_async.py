"""``vectorport.aconnect`` on pgvector: psycopg's async connections from a pool, the sync
store's statements, and no thread per call."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport
from vectorport import Record

pytestmark = pytest.mark.pgvector
pytest.importorskip("psycopg_pool")


class CountingExecutor(ThreadPoolExecutor):
    """The loop's default executor, counting what runs in a thread (``asyncio.to_thread``)."""

    submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        CountingExecutor.submitted += 1
        return super().submit(fn, *args, **kwargs)


def _records(n: int) -> list[Record]:
    rng = np.random.default_rng(7)
    return [
        Record(
            f"docs/{i % 7}.md#chunk{i}",
            rng.normal(size=8).astype("float32"),
            {"n": i, "even": i % 2 == 0},
            f"t{i}",
        )
        for i in range(n)
    ]


def test_async_store_matches_the_sync_one_and_runs_no_thread_per_call(pg_url: Callable[..., str]) -> None:
    url = pg_url(pool_size=4)
    records = _records(60)
    queries = [r.vector for r in records[:40]]

    async def main() -> tuple[list[Any], list[Any], int, list[Record], int]:
        store = await vectorport.aconnect(url, dimension=8)
        assert type(store).__name__ == "AsyncPgVectorStore"
        try:
            assert await store.aupsert(records, batch_size=25) == 60  # opens the pool
            loop = asyncio.get_running_loop()
            loop.set_default_executor(CountingExecutor(max_workers=2))
            CountingExecutor.submitted = 0
            plain = await asyncio.gather(*(store.aquery(q, k=5) for q in queries))
            filtered = await asyncio.gather(*(store.aquery(q, k=5, filter={"even": True}) for q in queries))
            count = await store.acount()
            got = await store.aget(
                ["docs/1.md#chunk1", "missing", "docs/0.md#chunk0"], include=["vector", "text"]
            )
            await store.aupsert([Record("docs/0.md#chunk0", records[0].vector, {"n": -1}, None)])
            threads = CountingExecutor.submitted
            return list(plain), list(filtered), count, got, threads
        finally:
            await store.adrop()
            await store.aclose()

    with vectorport.connect(url, dimension=8) as sync:
        sync.upsert(records)
        expected = [sync.query(q, k=5).keys for q in queries]
        expected_filtered = [sync.query(q, k=5, filter={"even": True}).keys for q in queries]
    plain, filtered, count, got, threads = asyncio.run(main())
    assert [r.keys for r in plain] == expected
    assert [r.keys for r in filtered] == expected_filtered
    assert all(m.metadata is not None and m.metadata["even"] for r in filtered for m in r)
    assert count == 60
    assert [r.key for r in got] == ["docs/1.md#chunk1", "docs/0.md#chunk0"]
    assert got[0].text == "t1" and np.allclose(got[0].vector, records[1].vector)
    assert threads == 0  # 80 queries, a count, a get and an upsert: all on the async driver


def test_scan_delete_text_and_hybrid_search_run_on_the_async_driver_as_the_sync_store_does(
    pg_url: Callable[..., str],
) -> None:
    url = pg_url(pool_size=3)
    records = _records(50)
    probe = records[5].vector

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with await vectorport.aconnect(url, dimension=8) as store:
            await store.aupsert(records)
            loop = asyncio.get_running_loop()
            loop.set_default_executor(CountingExecutor(max_workers=2))
            CountingExecutor.submitted = 0
            pages = [page async for page in store.ascan(batch_size=9, include=["metadata"])]
            out["pages"] = [[r.key for r in page] for page in pages]
            resumed = [p async for p in store.ascan(batch_size=9, include=[], cursor=pages[1].cursor)]
            out["resumed"] = [r.key for page in resumed for r in page]
            halves = [[r.key async for p in store.ascan(segment=(i, 2)) for r in p] for i in range(2)]
            out["halves"] = halves
            out["text"] = (await store.atext_query("t12", k=3)).keys
            out["hybrid"] = (await store.ahybrid_query(probe, "t5", k=4, filter={"even": False})).keys
            out["deleted_keys"] = await store.adelete(["docs/0.md#chunk0", "docs/1.md#chunk1", "nope"])
            out["deleted_filter"] = await store.adelete(filter={"n": {"$gte": 40}})
            out["count"] = await store.acount()
            out["threads"] = CountingExecutor.submitted
            with pytest.raises(vectorport.ConfigurationError):
                await store.adelete(filter={})
            await store.adrop()
        return out

    with vectorport.connect(url, dimension=8) as sync:
        sync.upsert(records)
        pages = [[r.key for r in page] for page in sync.scan(batch_size=9)]
        text = sync.text_query("t12", k=3).keys
        hybrid = sync.hybrid_query(probe, "t5", k=4, filter={"even": False}).keys
        sync.drop()
    out = asyncio.run(main())
    assert out["pages"] == pages and sum(map(len, pages)) == 50
    assert out["resumed"] == [k for page in pages[2:] for k in page]
    assert sorted(out["halves"][0] + out["halves"][1]) == sorted(r.key for r in records)
    assert not set(out["halves"][0]) & set(out["halves"][1])
    assert out["text"] == text and text[0] == "docs/5.md#chunk12"
    assert out["hybrid"] == hybrid and hybrid[0] == "docs/5.md#chunk5"
    assert out["deleted_keys"] == 3 and out["deleted_filter"] == 10 and out["count"] == 38
    # 4 scans (13 pages), 2 searches, 2 deletes, a count: one thread, the once-only key check
    # before the store's first scan (the sync store's code, off the loop)
    assert out["threads"] == 1


def test_async_upsert_is_a_full_replace_and_refuses_bad_records_before_writing(
    pg_url: Callable[..., str],
) -> None:
    url = pg_url()

    async def main() -> tuple[list[Record], str, int]:
        async with await vectorport.aconnect(url, dimension=3) as store:
            await store.aupsert([Record("a", [1, 0, 0], {"x": 1, "y": 2}, "one")])
            await store.aupsert([Record("a", [0, 1, 0], {"x": 3}, None)])
            got = await store.aget(["a"], include=["metadata", "text", "vector"])
            with pytest.raises(vectorport.ValidationError) as err:
                await store.aupsert([Record("b", [1, 0, 0]), Record("c", [1, 0])])
            n = await store.acount()
            await store.adrop()
            return got, str(err.value), n

    got, error, n = asyncio.run(main())
    assert got[0].metadata == {"x": 3} and got[0].text is None and list(got[0].vector) == [0, 1, 0]
    assert "c" in error and n == 1


def test_terminated_sessions_are_replaced_and_the_call_retried(pg_uri: str, admin: Any) -> None:
    url = f"{pg_uri}&table=async_terminated&application_name=vp_async_terminated&pool_size=2"
    records = _records(10)

    async def main() -> list[list[str]]:
        async with await vectorport.aconnect(url, dimension=8) as store:
            await store.aupsert(records)
            before = await store.aquery(records[0].vector, k=3)
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name = 'vp_async_terminated'"
            ).fetchone()
            assert killed is not None and killed[0] >= 1
            after = await asyncio.gather(*(store.aquery(records[0].vector, k=3) for _ in range(4)))
            await store.adrop()
            return [before.keys, *(r.keys for r in after)]

    keys = asyncio.run(main())
    assert all(k == keys[0] for k in keys) and len(keys[0]) == 3


@pytest.fixture
def own_server() -> Iterator[Path]:
    """A data directory of its own (its server is killed and stopped here), readable by the
    server's user when the tests run as root (see ``pg_dir``)."""
    from vectorport.backends.pgvector import stop_embedded

    root = Path(tempfile.mkdtemp(prefix="vectorport-async-restart-"))
    root.chmod(0o755)
    yield root / "pgdata"
    stop_embedded(root / "pgdata")
    shutil.rmtree(root, ignore_errors=True)


def test_the_async_pool_recovers_when_the_embedded_server_restarts(own_server: Path) -> None:
    from vectorport.backends.pgvector import stop_embedded

    url = f"pgvector://{own_server}?table=docs&index=exact&pool_size=3"
    records = _records(12)

    async def main() -> list[list[str]]:
        async with await vectorport.aconnect(url, dimension=8) as store:
            await store.aupsert(records)
            first = (await store.aquery(records[0].vector, k=3)).keys
            pid = int((own_server / "postmaster.pid").read_text().split()[0])
            os.kill(pid, signal.SIGKILL)  # the server dies under the pool's connections
            after_kill = await asyncio.gather(*(store.aquery(records[0].vector, k=3) for _ in range(6)))
            await asyncio.to_thread(stop_embedded, own_server)  # stopped behind its back
            after_stop = await store.aquery(records[0].vector, k=3)
            count = await store.acount()
            await store.adrop()
            return [first, *(r.keys for r in after_kill), after_stop.keys, [str(count)]]

    keys = asyncio.run(main())
    assert all(k == keys[0] for k in keys[1:-1]) and len(keys[0]) == 3
    assert keys[-1] == ["12"]


def test_a_server_that_is_gone_is_a_one_line_error(own_server: Path) -> None:
    from vectorport.backends.pgvector import stop_embedded
    from vectorport.backends.pgvector._embedded import embedded_conninfo

    uri = embedded_conninfo(own_server)  # a server by its libpq URI: nothing starts it again

    async def main() -> str:
        async with await vectorport.aconnect(f"{uri}&table=gone&pool_size=2", dimension=3) as store:
            await store.aupsert([Record("a", [1, 0, 0])])
            await asyncio.to_thread(stop_embedded, own_server)
            with pytest.raises(vectorport.BackendUnavailableError) as err:
                await store.aquery([1, 0, 0], k=1)
            return str(err.value)

    message = asyncio.run(main())
    assert "\n" not in message and "no longer answers" in message and "start it again" in message


def test_searches_gathered_beside_others_run_each_with_its_own_settings(pg_url: Callable[..., str]) -> None:
    """Concurrent searches go a few to a connection in one pipeline, grouped by the ``hnsw.*``
    settings they need: each must still run with its own (``ef_search=1`` without iterative
    scans finds a single row; the others find k), and one whose caller gave up is skipped."""
    url = pg_url(pool_size=2)
    records = _records(200)
    probes = [r.vector for r in records[:48]]
    kinds: list[dict[str, Any]] = [
        {},
        {"filter": {"even": True}},
        {"params": {"ef_search": 1, "iterative_scan": "off"}},
        {"filter": {"even": False}, "params": {"ef_search": 40}},
    ]
    calls = [(q, kinds[i % 4]) for i, q in enumerate(probes)]

    async def main() -> tuple[list[list[str]], bool]:
        async with await vectorport.aconnect(url, dimension=8) as store:
            await store.aupsert(records)
            abandoned = asyncio.ensure_future(store.aquery(probes[0], k=5, params={"ef_search": 1}))
            tasks = [store.aquery(q, k=5, **kw) for q, kw in calls]
            abandoned.cancel()
            found = await asyncio.gather(*tasks)
            again = await store.aquery(probes[0], k=5)  # the queue is not stuck behind it
            await store.adrop()
            return [r.keys for r in found], again.keys == found[0].keys and abandoned.cancelled()

    with vectorport.connect(url, dimension=8) as sync:
        sync.upsert(records)
        expected = [sync.query(q, k=5, **kw).keys for q, kw in calls]
    found, settled = asyncio.run(main())
    assert found == expected and settled
    assert [len(keys) for keys in found[:4]] == [5, 5, 1, 5]


def test_a_search_failing_inside_a_pipelined_batch_fails_alone(pg_url: Callable[..., str]) -> None:
    """One search of a pipelined batch fails on the server (a NUL in its filter: PostgreSQL's
    jsonb refuses it, 22P05). The pipeline is one transaction, so it aborted the others: each
    runs again alone, the failing one gets its own mapped error, every other its own rows, and
    the connection serves the next batch with the right ``hnsw.*`` settings."""
    from vectorport.exceptions import ValidationError

    url = pg_url(pool_size=1)  # one connection: every concurrent search goes to one pipeline
    records = _records(200)
    probes = [r.vector for r in records[:16]]
    kinds: list[dict[str, Any]] = [
        {},
        {"filter": {"even": True}},
        {"params": {"ef_search": 1, "iterative_scan": "off"}},
    ]
    calls = [(q, kinds[i % 3]) for i, q in enumerate(probes)]
    bad = 5
    calls[bad] = (probes[bad], {"filter": {"even": "a\x00b"}})
    batches: list[int] = []

    async def main() -> tuple[list[Any], list[list[str]]]:
        async with await vectorport.aconnect(url, dimension=8) as store:
            await store.aupsert(records)
            pipelined = store._searches
            many = pipelined._many

            async def counted(batch: Any) -> Any:  # delegates: records the batch sizes only
                batches.append(len(batch))
                return await many(batch)

            pipelined._many = counted
            first = await asyncio.gather(
                *[store.aquery(q, k=5, **kw) for q, kw in calls], return_exceptions=True
            )
            again = await asyncio.gather(
                *[store.aquery(q, k=5, **kinds[i % 3]) for i, q in enumerate(probes)]
            )
            await store.adrop()
            return first, [r.keys for r in again]

    with vectorport.connect(url, dimension=8) as sync:
        sync.upsert(records)
        expected = [sync.query(q, k=5, **kw).keys if i != bad else None for i, (q, kw) in enumerate(calls)]
        expected_again = [sync.query(q, k=5, **kinds[i % 3]).keys for i, q in enumerate(probes)]
    first, again = asyncio.run(main())
    # the first batch took the first eight queued searches, the failing one among them
    assert batches[0] > bad, batches
    failed = first[bad]
    assert isinstance(failed, ValidationError) and "22P05" in str(failed) and "NUL" in str(failed)
    assert [r.keys for i, r in enumerate(first) if i != bad] == [
        e for i, e in enumerate(expected) if i != bad
    ]
    assert again == expected_again
    assert [len(keys) for keys in again[:3]] == [5, 5, 1]  # ef_search=1 without iterative scans: 1 row
