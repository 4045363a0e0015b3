"""Portable snapshots: ``export`` writes Parquet parts plus a manifest that DuckDB and pandas read
as they are; ``import`` (``migrate parquet://DIR URL``) loads them back into every backend
exactly: vectors bit-equal (within a backend's declared ulps on its own write), metadata
JSON-equal, text equal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport._json import json_equal
from vectorport.testing.backends import backend_params

from ._migrate_data import DIM, N, all_records

pytest.importorskip("pyarrow")

from vectorport.backends.parquet._format import MANIFEST, Manifest, fold
from vectorport.snapshot import export, import_snapshot, snapshot_url

pytestmark = pytest.mark.parquet
LoadedSource = Callable[[str], tuple[str, list[Any]]]


def _duckdb_rows(directory: Path) -> dict[str, tuple[Any, str, str | None]]:
    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(
        f"SELECT key, vector, metadata, text FROM read_parquet('{directory}/*.parquet')"
    ).fetchall()
    return {k: (v, m, t) for k, v, m, t in rows}


@pytest.mark.parametrize("backend", backend_params())
def test_export_import_round_trips(
    backend: str, loaded_source: LoadedSource, url_for: Callable[..., str], tmp_path: Path
) -> None:
    source_url, _ = loaded_source(backend)
    source = vectorport.connect(source_url)
    expected = all_records(source)
    folder = tmp_path / "snap"
    report = export(source_url, folder, max_part_bytes=1_000_000)
    assert report.status == "verified", report.to_dict()
    assert report.count == N == len(expected) and report.parts > 1

    # DuckDB reads the parts as they are: every record, vectors bit-equal as FLOAT[dim]
    duck = _duckdb_rows(folder)
    assert duck.keys() == expected.keys()
    for key, rec in expected.items():
        vector, metadata, text = duck[key]
        assert np.array_equal(np.asarray(vector, dtype=np.float32), np.asarray(rec.vector)), key
        assert json_equal(json.loads(metadata), rec.metadata), key
        assert text == rec.text

    target_url = url_for(backend)
    restored = import_snapshot(folder, target_url, concurrency=2)
    assert restored.status == "verified", restored.to_json()
    target = vectorport.connect(target_url)
    ulps = target.capabilities.vector_ulps
    got = all_records(target)
    assert got.keys() == expected.keys() and target.count() == N
    for key, rec in expected.items():
        a = np.asarray(got[key].vector, dtype=np.float32)
        b = np.asarray(rec.vector, dtype=np.float32)
        if ulps == 0:
            assert np.array_equal(a, b), key
        else:
            assert np.all(np.abs(a - b) <= ulps * np.spacing(np.abs(b))), key
        assert json_equal(got[key].metadata, rec.metadata, target.capabilities.metadata.float_ulps), key
        assert got[key].text == rec.text
    target.drop()
    target.close()
    source.close()


@pytest.fixture
def memory_source() -> Any:
    from ._migrate_data import tricky_records

    store = vectorport.connect("memory://snapshot-src", dimension=DIM, metric="euclidean")
    store.upsert(tricky_records(1_200, DIM))
    yield store
    store.drop()


@pytest.mark.memory
def test_manifest_names_shape_and_digests(memory_source: Any, tmp_path: Path) -> None:
    import hashlib

    report = export("memory://snapshot-src", tmp_path, max_part_bytes=200_000, verify=False)
    m = Manifest.load(tmp_path)
    assert m is not None
    assert (m.dimension, m.metric, m.count, m.name) == (DIM, "euclidean", 1_200, "snapshot-src")
    assert len(m.parts) == report.parts > 2 and sum(p.records for p in m.parts) == 1_200
    assert fold([p.digest for p in m.parts]) == m.digest == report.digest
    for part in m.parts:
        data = (tmp_path / part.file).read_bytes()
        assert hashlib.sha256(data).hexdigest() == part.sha256 and len(data) == part.bytes
    raw = json.loads((tmp_path / MANIFEST).read_text())
    assert raw["format"] == "vectorport-snapshot" and raw["version"] == 1
    # pandas too
    pd = pytest.importorskip("pandas")
    frame = pd.read_parquet(tmp_path)
    assert len(frame) == 1_200 and list(frame.columns) == ["key", "vector", "metadata", "text"]


@pytest.mark.memory
def test_snapshot_store_reads_like_the_source(memory_source: Any, tmp_path: Path) -> None:
    export("memory://snapshot-src", tmp_path, max_part_bytes=150_000, verify=False)
    snap = vectorport.connect(snapshot_url(tmp_path))
    assert snap.count() == 1_200 and snap.spec.metric.value == "euclidean"
    # segments are disjoint and cover everything; a cursor resumes inside a part
    seen: list[str] = []
    for i in range(3):
        seen += [r.key for page in snap.scan(segment=(i, 3), batch_size=97) for r in page]
    assert sorted(seen) == sorted(r.key for r in memory_source.records())
    pages = snap.scan(batch_size=50)
    first = next(pages)
    rest = [r.key for page in snap.scan(batch_size=50, cursor=first.cursor) for r in page]
    assert len(first.records) + len(rest) == 1_200 and first.records[-1].key not in rest
    # exact search equals the memory reference, filtered or not
    rng = np.random.default_rng(3)
    for _ in range(5):
        q = rng.normal(size=DIM)
        for where in (None, {"draft": True}, {"count": {"$gte": 600}}):
            want = memory_source.query(q, k=7, filter=where)
            got = snap.query(q, k=7, filter=where)
            assert got.keys == want.keys
            assert np.allclose([m.distance for m in got], [m.distance for m in want])
    key = memory_source.records().__next__().key
    assert snap.get([key, "absent"])[0] == memory_source.get([key])[0]


@pytest.mark.memory
def test_a_pinned_snapshot_is_read_only_and_checked(memory_source: Any, tmp_path: Path) -> None:
    report = export("memory://snapshot-src", tmp_path, max_part_bytes=150_000, verify=False)
    # pinned to the digest export printed: that content and no other, so not written
    snap = vectorport.connect(snapshot_url(tmp_path, report.snapshot_digest))
    assert vectorport.Feature.WRITE not in snap.capabilities.features
    with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only here: it was opened with"):
        snap.upsert([vectorport.Record("new", np.ones(DIM))])
    with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only"):
        snap.delete(["x"])
    with pytest.raises(vectorport.UnsupportedFeatureError, match="read-only"):
        snap.drop()
    assert snap.count() == 1_200 and Manifest.load(tmp_path) == Manifest.load(tmp_path)
    # a damaged part is named, not read
    m = Manifest.load(tmp_path)
    assert m is not None
    part = tmp_path / m.parts[1].file
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    fresh = vectorport.connect(snapshot_url(tmp_path))
    with pytest.raises(vectorport.ConfigurationError, match=m.parts[1].file):
        list(fresh.scan())
    # a directory that holds something else is refused; a snapshot is replaced only on request
    with pytest.raises(vectorport.ConfigurationError, match="overwrite=True"):
        export("memory://snapshot-src", tmp_path)
    assert export("memory://snapshot-src", tmp_path, overwrite=True).status == "verified"
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(vectorport.ConfigurationError, match="empty directory"):
        export("memory://snapshot-src", tmp_path, overwrite=True)
    with pytest.raises(vectorport.NotFoundError, match=r"make one with `vectorport\.snapshot\.export\("):
        vectorport.connect(snapshot_url(tmp_path / "nothing-here"))


@pytest.mark.memory
def test_cli_export_then_import(memory_source: Any, tmp_path: Path) -> None:
    from vectorport.cli import app

    runner = CliRunner()
    folder = tmp_path / "snap"
    out = runner.invoke(app, ["export", "memory://snapshot-src", str(folder), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "verified" and data["count"] == 1_200 and data["parts"] == 1
    ck = tmp_path / "ck.json"
    out = runner.invoke(
        app, ["import", str(folder), "memory://snapshot-dst", "--checkpoint", str(ck), "--json"]
    )
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["status"] == "verified"
    assert vectorport.connect("memory://snapshot-dst").count() == 1_200
    vectorport.connect("memory://snapshot-dst").drop()
    # a snapshot directory is a target too: migrate writes one that import reads back
    out = runner.invoke(app, ["migrate", "memory://snapshot-src", snapshot_url(tmp_path / "t"), "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["status"] == "verified", out.output
    out = runner.invoke(app, ["import", str(tmp_path / "t"), "memory://snapshot-dst", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["status"] == "verified", out.output
    assert vectorport.connect("memory://snapshot-dst").count() == 1_200
    vectorport.connect("memory://snapshot-dst").drop()


@pytest.mark.memory
def test_snapshot_reads_only_the_parts_it_needs(memory_source: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    export("memory://snapshot-src", tmp_path, max_part_bytes=150_000, verify=False)
    m = Manifest.load(tmp_path)
    assert m is not None and len(m.parts) >= 4
    owner = {
        key: i
        for i, part in enumerate(m.parts)
        for key in pq.read_table(tmp_path / part.file, columns=["key"]).column("key").to_pylist()
    }
    # with at least N parts, segment i of N is parts i, i+N, …: each reader its own files
    snap = vectorport.connect(snapshot_url(tmp_path))
    for i in range(3):
        keys = [r.key for page in snap.scan(segment=(i, 3), batch_size=97) for r in page]
        assert keys and {owner[k] % 3 for k in keys} == {i}
    # a get opens only the parts holding its keys: a damaged part elsewhere is not read
    part = tmp_path / m.parts[-1].file
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    fresh = vectorport.connect(snapshot_url(tmp_path))
    wanted = [k for k, i in owner.items() if i in (0, 1)][::50]
    got = fresh.get([*wanted, "absent"])
    assert sorted(r.key for r in got) == sorted(wanted)
    assert {r.key: r for r in got} == {r.key: r for r in memory_source.get(wanted)}
    damaged = next(k for k, i in owner.items() if i == len(m.parts) - 1)
    with pytest.raises(vectorport.ConfigurationError, match=m.parts[-1].file):
        fresh.get([damaged])
