"""Bulk loads: the HNSW index is dropped before loading an empty/small table and built after;
an interrupted load (exception, SIGKILL) leaves a table that answers exactly and gets its index
back at the next write or load, or from `build-index` (never from a mere open); concurrent
loaders leave the build to the last one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport.testing import ExactIndex, clustered_vectors, judge, query_vectors

pytestmark = pytest.mark.pgvector

DIM = 16
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])


def _records(n: int, start: int = 0) -> list[vectorport.Record]:
    vectors, labels = clustered_vectors(n, DIM, clusters=8, seed=start + 3)
    return [
        vectorport.Record(f"doc{start + i:06d}", vectors[i], {"cluster": int(labels[i]), "odd": i % 2 == 1})
        for i in range(n)
    ]


def _index_names(store: vectorport.VectorStore) -> set[str]:
    conn, _ = store.server.conn()  # type: ignore[attr-defined]
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' AND tablename = %s",
        (store.collection,),  # type: ignore[attr-defined]
    ).fetchall()
    return {str(r[0]) for r in rows}


def _hnsw(store: vectorport.VectorStore) -> bool:
    return f"{store.collection}_embedding_hnsw" in _index_names(store)  # type: ignore[attr-defined]


def _assert_exact(store: vectorport.VectorStore, flt: dict[str, object] | None = None) -> None:
    """Top-10 answers equal the exact oracle's over what the table holds."""
    recs = list(store.records())
    index = ExactIndex.from_records(vectorport.Metric.COSINE, recs)
    from vectorport.filters import parse_filter

    for q in query_vectors(5, DIM, clusters=8, seed=3):
        result = store.query(q, k=10, filter=flt)
        j = judge(index, q, result, parse_filter(flt))
        assert not j.violations and j.recall == 1.0, j


def _wait_lock_free(store: vectorport.VectorStore) -> None:
    """A SIGKILLed client's server session ends (and drops its advisory locks) asynchronously."""
    conn, _ = store.server.conn()  # type: ignore[attr-defined]
    key = store.indexing.lock_name  # type: ignore[attr-defined]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (got,) = conn.execute("SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)).fetchone()
        if got:
            conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
            return
        time.sleep(0.05)
    raise AssertionError("the killed loader's session still holds the index lock")


def test_bulk_load_defers_the_index_and_builds_it_after(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=DIM, metric="cosine")
    try:
        assert _hnsw(store)
        with store.bulk_load(expected=3000):
            assert not _hnsw(store)
            store.upsert(_records(1500))
            _assert_exact(store, {"odd": True})  # no index: exact scans, still correct
            store.upsert(_records(1500, 1500))
        assert _hnsw(store)
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        (analyzed,) = conn.execute(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = %s",
            (store.collection,),
        ).fetchone()
        assert analyzed
        assert store.count() == 3000
        with conn.transaction():  # at 3,000 rows the planner rightly prefers a seq scan
            conn.execute("SET LOCAL enable_seqscan = off")
            plan = conn.execute(
                f'EXPLAIN SELECT key FROM "{store.collection}" ORDER BY embedding <=> %s LIMIT 10',
                (np.ones(DIM, dtype=np.float32),),
            ).fetchall()
        assert any("_embedding_hnsw" in row[0] for row in plan), plan
    finally:
        store.drop()
        store.close()


def test_a_bulk_load_into_an_empty_table_still_upserts(pg_url: Callable[..., str]) -> None:
    """Batches are copied straight into a table that held nothing; a batch whose keys the table
    already holds (a resumed copy's overlap) replaces them, and the rest of the load merges."""
    store = vectorport.connect(pg_url(), dimension=DIM, metric="cosine")
    try:
        first, again = _records(300), _records(300, 200)
        changed = [vectorport.Record(r.key, r.vector, {"cluster": -1}, "changed") for r in again]
        with store.bulk_load(expected=500):
            assert store.indexing.direct  # type: ignore[attr-defined]
            store.upsert(first)
            store.upsert(changed)  # keys 200..299 are held already
            assert not store.indexing.direct  # type: ignore[attr-defined]
            store.upsert(_records(100, 1000))
        assert not store.indexing.direct  # type: ignore[attr-defined]
        assert store.count() == 600
        held = {r.key: r for r in store.get([r.key for r in first + again], include=["metadata", "text"])}
        assert all(held[r.key].metadata == {"cluster": -1} and held[r.key].text == "changed" for r in again)
        assert held["doc000000"].metadata == dict(first[0].metadata) and held["doc000000"].text is None
    finally:
        store.drop()
        store.close()


def test_bulk_load_keeps_the_index_of_a_populated_table(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=DIM, metric="cosine")
    off = vectorport.connect(pg_url(deferred_index="false"), dimension=DIM, metric="cosine")
    try:
        store.upsert(_records(1200))
        with store.bulk_load(expected=10):  # 1,200 rows >= max(1000, 2 * 10): rebuild costs more
            assert _hnsw(store)
            store.upsert(_records(10, 5000))
        with off.bulk_load(expected=10_000):  # deferred_index=false: never dropped
            assert _hnsw(off)
        assert _hnsw(store) and store.count() == 1210
    finally:
        store.drop()
        store.close()
        off.drop()
        off.close()


def test_exact_collection_bulk_load_is_a_no_op(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(index="exact"), dimension=DIM)
    try:
        with store.bulk_load():
            store.upsert(_records(50))
        assert store.count() == 50 and not any("hnsw" in n for n in _index_names(store))
        with pytest.raises(vectorport.ConfigurationError, match="expected"), store.bulk_load(expected=-1):
            pass
    finally:
        store.drop()
        store.close()


def test_failed_bulk_load_leaves_a_correct_table_then_next_load_builds(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=DIM, metric="cosine")
    try:
        with pytest.raises(RuntimeError, match="source went away"), store.bulk_load(expected=2000):
            store.upsert(_records(2000))
            raise RuntimeError("source went away")
        assert not _hnsw(store)
        _assert_exact(store, {"cluster": 3})
        with store.bulk_load(expected=2000):
            store.upsert(_records(100, 2000))
        assert _hnsw(store) and store.count() == 2100
    finally:
        store.drop()
        store.close()


def test_concurrent_loaders_leave_the_build_to_the_last(pg_url: Callable[..., str]) -> None:
    url = pg_url()
    first = vectorport.connect(url, dimension=DIM, metric="cosine")
    second = vectorport.connect(url)
    try:
        a = first.bulk_load(expected=1000)
        b = second.bulk_load(expected=1000)
        a.__enter__()
        b.__enter__()
        first.upsert(_records(600))
        second.upsert(_records(600, 600))
        a.__exit__(None, None, None)
        assert not _hnsw(first)  # the second loader is still running
        third = vectorport.connect(url)  # opening does not build under a running load either
        assert not _hnsw(third)
        third.close()
        b.__exit__(None, None, None)
        assert _hnsw(first) and first.count() == 1200
    finally:
        first.drop()
        first.close()
        second.close()


_CHILD = """
import sys, vectorport
from tests.pgvector.test_bulk_load import _records
store = vectorport.connect(sys.argv[1])
with store.bulk_load(expected=100_000):
    for i in range(1000):
        store.upsert(_records(500, 500 * i))
        if i == 3:
            print("loading", flush=True)
"""


def test_sigkill_mid_bulk_load_then_reopen_builds_nothing_until_a_write(
    pg_url: Callable[..., str], caplog: pytest.LogCaptureFixture
) -> None:
    url = pg_url()
    store = vectorport.connect(url, dimension=DIM, metric="cosine")
    repo = Path(__file__).resolve().parents[2]
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([SRC_ROOT, str(repo), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, url],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "loading", proc.stderr.read() if proc.stderr else line
        proc.kill()
        proc.wait()
        assert proc.returncode == -9
        _wait_lock_free(store)
        assert not _hnsw(store) and store.count() >= 2000
        _assert_exact(store, {"odd": False})  # the open store, without the index: exact answers
        with vectorport.connect(url) as again:  # opening builds nothing: it may be read-only
            assert not _hnsw(again) and "has no valid HNSW index" in caplog.text
            assert again.info()["pgvector"]["hnsw_index"] == "missing"
            _assert_exact(again, {"odd": True})
            assert again.count() == store.count() and not _hnsw(again)
            again.upsert(_records(1, 900_000))  # the first write builds it, then writes
            assert _hnsw(again) and again.info()["pgvector"]["hnsw_index"] == "valid"
            assert again.build_index() == "present"  # type: ignore[attr-defined]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        store.drop()
        store.close()


def test_first_ingest_is_a_bulk_load(pg_url: Callable[..., str], tmp_path: Path) -> None:
    from vectorport.ingest import ChunkingConfig, HashEmbedder, ingest

    for i in range(6):
        (tmp_path / f"d{i}.md").write_text(
            f"# Doc {i}\n\n" + "\n\n".join(f"Para {j} of {i}." for j in range(5))
        )
    url = pg_url()
    report = ingest(tmp_path, url, embedder=HashEmbedder(DIM), chunking=ChunkingConfig(20, 0, 5))
    assert report.added == 6
    with vectorport.connect(url) as store:
        assert _hnsw(store) and store.count() == report.chunks_written
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        hnsw_oid, gin_oid = (
            conn.execute("SELECT %s::regclass::oid", (f"{store.collection}_{suffix}",)).fetchone()[0]  # type: ignore[index]
            for suffix in ("embedding_hnsw", "metadata_gin")
        )
        # created with the table, the HNSW index would precede the GIN index; rebuilt after
        # the load by bulk_load, it follows it
        assert hnsw_oid > gin_oid
        store.drop()


def test_a_migration_verifies_what_the_table_holds_not_what_it_wrote(pg_url: Callable[..., str]) -> None:
    """Verification compares the copy's digests with the table as read back: jsonb keeps -0.0
    as 0.0, so the bin of that record differs from the copy's digests and is compared record
    by record (where -0.0 and 0.0 are equal values); every other bin agrees."""
    records = _records(1500)
    records[7] = vectorport.Record(records[7].key, records[7].vector, {"z": -0.0}, "neg zero")
    src = vectorport.connect("memory://verify-what-is-held", dimension=DIM)
    url = pg_url()
    try:
        src.upsert(records)
        report = vectorport.migrate.run(src, url)
        v = report.verification
        assert report.status == "verified" and v is not None, report.to_json()
        assert v.method == "digest" and v.compared == 1500
        assert v.bins is not None and v.bins["differing"] == 1, v.bins  # the -0.0 record's bin
        assert v.queries is not None and v.queries.ok
        with vectorport.connect(url) as target:
            assert target.get([records[7].key])[0].metadata == {"z": 0.0}
            target.drop()
    finally:
        src.drop()
