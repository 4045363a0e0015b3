"""``export`` and ``import`` with ``--engine ray``: each task writes (or reads) its own Parquet
parts, the driver writes the manifest; the snapshot equals the single-process one (same content
digest, DuckDB reads it), the import equals the source (read back with boto3), and damage done
with boto3 afterwards is named key by key by ``verify --engine ray``."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

from ..migrate._migrate_data import DIM, fit_to, tricky_records
from ..migrate._raw import raw_metadata

pytestmark = [pytest.mark.ray, pytest.mark.s3vectors, pytest.mark.parquet]


def _boto3(url: str) -> tuple[Any, dict[str, str]]:
    import boto3

    parts = urlsplit(url)
    client = boto3.client(
        "s3vectors",
        endpoint_url=parse_qs(parts.query)["endpoint_url"][0],
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return client, {"vectorBucketName": str(parts.hostname), "indexName": parts.path.strip("/")}


def test_export_and_import_on_ray(ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    from vectorport.ray import export_on_ray, verify_on_ray
    from vectorport.snapshot import export

    n = 6_000
    source = url_for("s3vectors", write_rate=0)
    store = vectorport.connect(source, dimension=DIM)
    records = fit_to(tricky_records(n, DIM), store.capabilities.metadata)
    store.upsert(records)

    report = export_on_ray(source, tmp_path / "snap", workers=2, max_part_bytes=1_000_000, sample_queries=5)
    assert report.status == "verified", report.to_dict()
    assert report.count == n and report.engine == "ray"
    names = sorted(p.name for p in (tmp_path / "snap").glob("*.parquet"))
    assert {name[:10] for name in names} == {"part-00000", "part-00001"}  # each task its parts
    assert len(names) == report.parts >= 4
    assert [w["records"] > 0 for w in report.per_worker] == [True, True]
    # the same records as a single-process export: the order-free content digests agree
    assert export(source, tmp_path / "one", verify=False).digest == report.digest
    rows = duckdb.sql(f"SELECT count(*), count(DISTINCT key) FROM read_parquet('{tmp_path}/snap/*.parquet')")
    assert rows.fetchall() == [(n, n)]

    target = url_for("s3vectors", write_rate=0)
    args = ["import", str(tmp_path / "snap"), target, "--engine", "ray", "--workers", "2"]
    out = CliRunner().invoke(
        app, [*args, "--checkpoint", str(tmp_path / "ck.json"), "--queries", "5", "--json"]
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["engine"] == "ray" and data["status"] == "verified" and data["copy"]["records"] == n
    assert data["verification"]["engine"] == "ray" and data["verification"]["counts"]["target"] == n
    assert raw_metadata(target) == raw_metadata(source)

    # damage the import with boto3: one deleted, one changed, one added
    client, ids = _boto3(target)
    keys = sorted(r.key for r in records)
    gone, changed, extra = keys[1], keys[n // 3], "added by hand#0"
    got = client.get_vectors(**ids, keys=[changed], returnData=True, returnMetadata=True)["vectors"][0]
    client.delete_vectors(**ids, keys=[gone])
    client.put_vectors(
        **ids,
        vectors=[
            {"key": changed, "data": got["data"], "metadata": {**got["metadata"], "count": -1}},
            {"key": extra, "data": got["data"], "metadata": got["metadata"]},
        ],
    )
    found = verify_on_ray(source, target, workers=2, sample_queries=0)
    assert found.status == "differences"
    assert (found.missing.items, found.extra.items) == ([gone], [extra])
    assert [m["key"] for m in found.metadata.items] == [changed] and found.differences == 3
    single = vectorport.verify(source, target, sample_queries=0)
    assert (single.missing.items, single.extra.items, single.differences) == ([gone], [extra], 3)


def test_export_cli_on_ray(ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path) -> None:
    source = url_for("s3vectors", write_rate=0)
    store = vectorport.connect(source, dimension=DIM)
    store.upsert(fit_to(tricky_records(800, DIM), store.capabilities.metadata))
    args = ["export", source, str(tmp_path / "snap"), "--engine", "ray", "--workers", "2", "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["engine"] == "ray" and data["count"] == 800 and len(data["per_worker"]) == 2
    assert data["verification"]["status"] == "verified"


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "parquet:///x", "parquet:///y"],
        ["export", "parquet:///x", "DIR"],
        ["import", "DIR", "parquet:///y"],
        ["migrate", "parquet:///x", "parquet:///y"],
        ["sync", "parquet:///x", "parquet:///y"],
    ],
    ids=lambda a: a[0],
)
def test_engine_ray_without_the_extra_names_it(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *rest: Any) -> Any:
        return None if name == "ray" else real(name, *rest)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for name in [m for m in sys.modules if m == "vectorport.ray" or m.startswith("vectorport.ray.")]:
        monkeypatch.delitem(sys.modules, name)
    out = CliRunner().invoke(app, [*args, "--engine", "ray"])
    assert out.exit_code == 2, out.output  # a missing extra: 2 in every command
    assert "pip install 'vectorport[ray]'" in " ".join(out.output.split())
