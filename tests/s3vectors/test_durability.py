"""A server killed with SIGKILL restarts with every acknowledged write (log + snapshot)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.s3vectors


@contextmanager
def server_process(data: Path, *extra: str, cli: bool = True) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    if cli:
        cmd = [sys.executable, "-m", "vectorport", "bucket", "serve"]
    else:
        cmd = [sys.executable, "-m", "vectorport.bucketserver"]
    proc = subprocess.Popen(
        [*cmd, "--data", str(data), "--port", "0", "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, "the server did not start"
        yield json.loads(line)["endpoint_url"], proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()


def _write(s3v: Any, ids: dict[str, str], rng: np.random.Generator, start: int, n: int) -> dict[str, Any]:
    written = {}
    for lo in range(start, start + n, 500):
        batch = []
        for i in range(lo, min(start + n, lo + 500)):
            vec = rng.standard_normal(8).astype(np.float32)
            meta = {"i": i, "tag": f"t{i % 7}", "body": "é" * (i % 50)}
            batch.append({"key": f"doc/{i}", "data": {"float32": vec.tolist()}, "metadata": meta})
            written[f"doc/{i}"] = (vec, meta)
        s3v.put_vectors(**ids, vectors=batch)  # acknowledged: must survive
    return written


def _check(s3v: Any, ids: dict[str, str], expected: dict[str, Any]) -> None:
    pages = s3v.get_paginator("list_vectors").paginate(**ids, returnData=True, returnMetadata=True)
    got = {v["key"]: v for page in pages for v in page["vectors"]}
    assert set(got) == set(expected)
    for key, (vec, meta) in expected.items():
        assert got[key]["data"]["float32"] == vec.tolist()
        assert got[key]["metadata"] == meta


@pytest.mark.parametrize(
    ("cli", "extra"),
    [(True, ()), (False, ("--snapshot-bytes", "200000"))],
    ids=["log-only-via-cli", "snapshot-plus-log"],
)
def test_kill_9_keeps_every_acknowledged_write(
    tmp_path: Path, make_client: Any, cli: bool, extra: tuple[str, ...]
) -> None:
    rng = np.random.default_rng(7)
    ids = {"vectorBucketName": "durable", "indexName": "chunks"}
    with server_process(tmp_path, *extra, cli=cli) as (url, proc):
        s3v = make_client(url)
        s3v.create_vector_bucket(vectorBucketName="durable")
        s3v.create_index(
            **ids,
            dataType="float32",
            dimension=8,
            distanceMetric="euclidean",
            metadataConfiguration={"nonFilterableMetadataKeys": ["body"]},
        )
        expected = _write(s3v, ids, rng, 0, 1700)
        doomed = [f"doc/{i}" for i in range(0, 1700, 3)]
        s3v.delete_vectors(**ids, keys=doomed[:500])
        s3v.delete_vectors(**ids, keys=doomed[500:])
        for key in doomed:
            del expected[key]
        expected.update(_write(s3v, ids, rng, 0, 10))  # re-put some deleted keys: full replace
        s3v.create_index(
            vectorBucketName="durable",
            indexName="gone",
            dataType="float32",
            dimension=2,
            distanceMetric="cosine",
        )
        s3v.delete_index(vectorBucketName="durable", indexName="gone")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    if extra:
        index_dirs = list((tmp_path / "indexes").iterdir())
        assert len(index_dirs) == 1 and (index_dirs[0] / "snapshot.npz").exists()
    with server_process(tmp_path, cli=cli) as (url, _):
        s3v = make_client(url)
        assert [i["indexName"] for i in s3v.list_indexes(vectorBucketName="durable")["indexes"]] == ["chunks"]
        _check(s3v, ids, expected)
        hit = s3v.query_vectors(
            **ids,
            topK=1,
            queryVector={"float32": expected["doc/4"][0].tolist()},
            filter={"tag": "t4"},
            returnDistance=True,
        )["vectors"][0]
        assert hit["key"] == "doc/4" and hit["distance"] == 0.0


def test_a_torn_log_tail_is_cut_off(tmp_path: Path, make_client: Any) -> None:
    ids = {"vectorBucketName": "torn", "indexName": "chunks"}
    with server_process(tmp_path, cli=False) as (url, proc):
        s3v = make_client(url)
        s3v.create_vector_bucket(vectorBucketName="torn")
        s3v.create_index(**ids, dataType="float32", dimension=8, distanceMetric="cosine")
        expected = _write(s3v, ids, np.random.default_rng(1), 0, 20)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    (wal,) = (tmp_path / "indexes").glob("*/wal.log")
    with open(wal, "ab") as fh:  # a record whose write was cut short by the crash
        fh.write(b'\xff\x00\x00\x00\x12\x34\x56\x78{"op":"put",')
    with server_process(tmp_path, cli=False) as (url, _):
        s3v = make_client(url)
        _check(s3v, ids, expected)
        more = _write(s3v, ids, np.random.default_rng(2), 100, 5)  # the log keeps working after the cut
    with server_process(tmp_path, cli=False) as (url, _):
        _check(make_client(url), ids, {**expected, **more})
