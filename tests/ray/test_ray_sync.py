"""``sync --engine ray`` on a local Ray cluster, from an embedded pgvector source: changes made
with psycopg reach the target (read back with boto3 and chromadb) with exactly those counts, the
result and the counts equal the single-process sync's, a worker killed mid-pass loses and
duplicates nothing, and the CLI's JSON report carries the engine and the workers."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.migrate import shard_path
from vectorport.sync._state import committed

from ..migrate._raw import pg_change, raw_metadata, raw_vectors

pytestmark = [pytest.mark.ray, pytest.mark.pgvector]

DIM = 16


def _source(url_for: Callable[..., str], n: int) -> tuple[str, list[str]]:
    """A pgvector table of ``n`` records (metadata and text every backend holds); its keys."""
    url = url_for("pgvector")
    rng = random.Random(n)
    vectors = np.random.default_rng(n).standard_normal((n, DIM)).astype(np.float32)
    records = [
        Record(
            f"docs/{i:05d}.md#chunk{i % 4}",
            vectors[i],
            {"i": i, "lang": rng.choice(["en", "de", "fr"]), "tags": ["a", "b"][: i % 3 or 1]},
            f"chunk {i}",
        )
        for i in range(n)
    ]
    store = vectorport.connect(url, dimension=DIM)
    store.upsert(records)
    store.close()
    return url, [r.key for r in records]


def _change(url: str, keys: list[str]) -> tuple[int, int, int]:
    """Delete 40, change the metadata of 60 and add 25 records with psycopg; the three counts."""
    gone, changed = keys[:40], keys[100:160]
    copies = {f"added/by-hand#{i}": keys[500 + i] for i in range(25)}
    pg_change(url, gone=gone, changed=changed, copies=copies)
    return len(copies), len(changed), len(gone)


def _pg_keys(url: str) -> set[str]:
    store = vectorport.connect(url)
    try:
        return {r.key for page in store.scan(include=[]) for r in page}
    finally:
        store.close()


def _same_records(a: str, b: str) -> None:
    """Both targets hold the same keys, metadata and float32 vectors, read by their own clients."""
    assert raw_metadata(a) == raw_metadata(b)
    va, vb = raw_vectors(a), raw_vectors(b)
    assert va.keys() == vb.keys()
    assert all(np.array_equal(va[k], vb[k]) for k in va)


def _counts(report: Any) -> dict[str, Any]:
    s = report.sync
    return {
        "mode": s.mode,
        "new": s.new,
        "changed": s.changed,
        "unchanged": s.unchanged,
        "written": s.written,
        "gone": s.gone,
        "deleted": s.deleted,
        "target_read": s.target_read,
        "status": report.status,
    }


@pytest.mark.s3vectors
def test_raw_changes_reach_the_target_with_exact_counts(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from vectorport.ray import sync_on_ray

    n = 3_000
    source, keys = _source(url_for, n)
    target = url_for("s3vectors", write_rate=0)
    state = tmp_path / "sync.sqlite"
    first = sync_on_ray(source, target, workers=2, state=state)
    assert _counts(first) | {"target_read": None} == {
        "mode": "full",
        "new": n,
        "changed": 0,
        "unchanged": 0,
        "written": n,
        "gone": 0,
        "deleted": 0,
        "target_read": None,
        "status": "synced",
    }
    # each shard synced its own part of the source, with its own state file
    assert all(r.sync.new > 0 for r in first.shards) and sum(r.sync.new for r in first.shards) == n
    assert all(shard_path(state, (i, 2)).exists() for i in range(2)) and not state.exists()
    assert raw_metadata(target) == raw_metadata(source)

    new, changed, gone = _change(source, keys)
    second = sync_on_ray(source, target, workers=2, state=state, delete=True, verify=True, sample_queries=5)
    assert _counts(second) == {
        "mode": "incremental",
        "new": new,
        "changed": changed,
        "unchanged": n - gone - changed,
        "written": new + changed,
        "gone": gone,
        "deleted": gone,
        "target_read": 0,
        "status": "verified",
    }, second.to_json()
    # the target as boto3 sees it is the source as psycopg sees it
    assert raw_metadata(target) == raw_metadata(source)
    vectors = raw_vectors(target)
    assert vectors.keys() == _pg_keys(source)
    assert np.array_equal(vectors["added/by-hand#0"], vectors[keys[500]])

    data = second.to_dict()
    assert data["engine"] == "ray" and data["workers"] == 2 and len(data["per_worker"]) == 2
    assert data["sync"]["written"] == new + changed and data["verification"]["engine"] == "ray"

    third = sync_on_ray(source, target, workers=2, state=state, delete=True)
    assert (third.sync.mode, third.sync.written, third.sync.gone) == ("incremental", 0, 0)


@pytest.mark.chroma
def test_equals_the_single_process_sync(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from chromadb import HttpClient

    from vectorport.ray import sync_on_ray

    n = 2_000
    source, keys = _source(url_for, n)
    one, clustered = url_for("chroma+http"), url_for("chroma+http")

    def both(**options: Any) -> tuple[Any, Any]:
        a = vectorport.sync(source, one, state=tmp_path / "one.sqlite", **options)
        b = sync_on_ray(source, clustered, workers=2, state=tmp_path / "ray.sqlite", **options)
        return a, b

    a, b = both()
    # a full pass lists the target's keys after writing: a shard lists its target segment while
    # the other shard may still be writing into it, so only target_read depends on timing
    assert _counts(a) | {"target_read": 0} == _counts(b) | {"target_read": 0} and b.sync.new == n
    _same_records(one, clustered)

    _change(source, keys)
    a, b = both(delete=True)
    assert _counts(a) == _counts(b) and a.sync.mode == "incremental" and b.sync.deleted == 40
    _same_records(one, clustered)
    assert raw_metadata(clustered) == raw_metadata(source)

    # a record deleted from the target with chromadb: the count no longer matches the shards'
    # states, so every shard reads the target again, as the single-process sync does
    parts = urlsplit(clustered)
    client = HttpClient(host=parts.hostname, port=parts.port)
    client.get_collection(parse_qs(parts.query)["collection"][0]).delete(ids=[keys[1_000]])
    b = sync_on_ray(source, clustered, workers=2, state=tmp_path / "ray.sqlite")
    assert b.sync.mode == "full" and "changed outside sync" in (b.sync.reason or ""), b.to_json()
    assert (b.sync.new, b.sync.written) == (1, 1)
    _same_records(one, clustered)


@pytest.mark.s3vectors
def test_killed_worker_loses_nothing(ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path) -> None:
    from vectorport.ray import sync_on_ray

    n = 6_000
    source, _ = _source(url_for, n)
    # 1,200 records/s over two workers: each shard writes for about 5 s, time to kill one
    target = url_for("s3vectors", write_rate=1200)
    state = tmp_path / "sync.sqlite"
    pids: Path = ray_cluster.pids
    for old in pids.glob("*.pid"):
        old.unlink()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["report"] = sync_on_ray(source, target, workers=2, state=state, batch_size=200)
        except BaseException as exc:  # reported below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    killed = None
    while time.monotonic() < deadline and killed is None and thread.is_alive():
        time.sleep(0.2)
        running = committed(shard_path(state, (0, 2))) or {}
        written = running.get("committed_written")
        if isinstance(written, int) and written >= 800:
            killed = int((pids / "shard-0.pid").read_text())
            os.kill(killed, signal.SIGKILL)
    thread.join(timeout=300)
    assert "error" not in result, result.get("error")
    assert killed is not None, "the pass finished before a worker could be killed"
    report = result["report"]
    assert report.engine["write_rate_per_worker"] == 600 and report.status == "synced", report.to_json()
    assert int((pids / "shard-0.pid").read_text()) != killed  # shard 0 ran again, elsewhere
    assert report.shards[0].sync.resumed and not report.shards[1].sync.resumed
    assert report.to_dict()["per_worker"][0]["resumed"] is True
    # every record once, as boto3 lists them, and the states agree with the target: a second
    # pass finds nothing to write or delete
    listed = raw_metadata(target)
    assert len(listed) == n and listed == raw_metadata(source)
    again = sync_on_ray(source, target, workers=2, state=state, delete=True)
    assert (again.sync.mode, again.sync.new, again.sync.changed, again.sync.gone) == ("incremental", 0, 0, 0)


@pytest.mark.s3vectors
def test_cli_json_carries_engine_and_workers(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    n = 1_000
    source, keys = _source(url_for, n)
    target = url_for("s3vectors", write_rate=0)
    state = str(tmp_path / "s.sqlite")
    args = ["sync", source, target, "--engine", "ray", "--workers", "2", "--state", state]
    out = CliRunner().invoke(app, [*args, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["engine"] == "ray" and data["workers"] == 2 and data["status"] == "synced"
    assert data["sync"]["new"] == n and data["sync"]["mode"] == "full"
    assert [w["shard"] for w in data["per_worker"]] == [0, 1]
    assert all(w["records_per_second"] for w in data["per_worker"])
    assert [s["state"] for s in data["shards"]] == [
        str(shard_path(tmp_path / "s.sqlite", (i, 2))) for i in range(2)
    ]
    # the human report names each worker
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "engine: ray, 2 workers" in out.output and "sync 1/2 on" in out.output
    # --every: one JSON line per pass, each pass on Ray
    out = CliRunner().invoke(app, [*args, "--every", "1s", "--runs", "2", "--json"])
    assert out.exit_code == 0, out.output
    passes = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(p["engine"], p["sync"]["mode"], p["sync"]["written"]) for p in passes] == [
        ("ray", "incremental", 0)
    ] * 2
    # a fixed option changed since the shards' passes: refused before any write, naming the
    # option with both values and a shard's state, as one process refuses it
    gone = vectorport.connect(source)
    gone.delete([keys[0]])
    gone.close()
    out = CliRunner().invoke(app, [*args, "--metadata-policy", "drop", "--delete", "--json"])
    assert out.exit_code == 2, out.output
    error = json.loads(out.stdout)["error"]
    assert error.startswith(
        f"the sync state {shard_path(state, (0, 2))} records --metadata-policy error, "
    ), error
    assert "this run has --metadata-policy drop" in error and "--full" in error, error
    assert len(raw_metadata(target)) == n  # the record deleted is still there: nothing was written


@pytest.mark.chroma
def test_embedded_chroma_syncs_through_one_task(ray_cluster: Any, tmp_path: Path) -> None:
    """A store only one process may open is read and written by one Ray task, with the same
    counts as one process (read back with chromadb)."""
    import chromadb

    from vectorport.ray import sync_on_ray

    source = f"chroma://{tmp_path / 'src'}?collection=docs"
    target = f"chroma://{tmp_path / 'dst'}?collection=docs"
    store = vectorport.connect(source, dimension=DIM)
    vectors = np.random.default_rng(7).standard_normal((300, DIM)).astype(np.float32)
    store.upsert([Record(f"k{i:04d}", vectors[i], {"i": i}, f"chunk {i}") for i in range(300)])
    state = tmp_path / "s.sqlite"
    first = sync_on_ray(source, target, workers=2, state=state)
    assert (first.sync.mode, first.sync.new, first.status) == ("full", 300, "synced"), first.to_json()
    assert first.engine["workers"] == 1 and any("one process" in note for note in first.notes)
    store.delete(["k0000"])
    store.upsert([Record("k0001", vectors[1], {"i": -1}, "changed")])
    store.close()
    second = sync_on_ray(source, target, workers=2, state=state, delete=True, verify=True, sample_queries=3)
    counts = (second.sync.mode, second.sync.changed, second.sync.deleted, second.status)
    assert counts == ("incremental", 1, 1, "verified"), second.to_json()
    got = (
        chromadb.PersistentClient(path=str(tmp_path / "dst"))
        .get_collection("docs")
        .get(include=["metadatas"])
    )
    assert len(got["ids"]) == 299 and "k0000" not in got["ids"]
    assert {m["i"] for k, m in zip(got["ids"], got["metadatas"], strict=True) if k == "k0001"} == {-1}


def test_memory_store_is_refused(ray_cluster: Any, tmp_path: Path) -> None:
    from vectorport.ray import sync_on_ray

    with pytest.raises(vectorport.ConfigurationError, match="no Ray worker"):
        sync_on_ray("memory://a", "memory://b", state=tmp_path / "s.sqlite")
