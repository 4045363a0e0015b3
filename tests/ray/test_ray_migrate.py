"""``migrate`` on a local Ray cluster: the same records as the single-process migration (read
back with boto3, not vectorport), a killed worker loses and duplicates nothing, and a bucket's
write cap is divided among the workers."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vectorport

from ..migrate._migrate_data import DIM, fit_to, tricky_records
from ..migrate._raw import raw_metadata

pytestmark = [pytest.mark.ray, pytest.mark.s3vectors, pytest.mark.parquet]


def _snapshot(url_for: Callable[..., str], tmp_path: Path, n: int) -> str:
    """A parquet:// source of ``n`` records (every worker process can read a directory)."""
    from vectorport.snapshot import export, snapshot_url

    probe = vectorport.connect(url_for("s3vectors"), dimension=DIM)
    rules = probe.capabilities.metadata
    probe.drop()
    name = f"ray-src-{n}"
    store = vectorport.connect(f"memory://{name}", dimension=DIM)
    store.upsert(fit_to(tricky_records(n, DIM), rules))
    export(f"memory://{name}", tmp_path / "snap", verify=False)
    store.drop()
    return snapshot_url(tmp_path / "snap")


def _same(a_url: str, b_url: str) -> None:
    a, b = raw_metadata(a_url), raw_metadata(b_url)
    assert a.keys() == b.keys() and a == b
    keys = sorted(a)
    sa, sb = vectorport.connect(a_url), vectorport.connect(b_url)
    for start in range(0, len(keys), 5_000):
        chunk = keys[start : start + 5_000]
        va = np.stack([np.asarray(r.vector) for r in sa.get(chunk)])
        vb = np.stack([np.asarray(r.vector) for r in sb.get(chunk)])
        assert np.array_equal(va, vb)


def test_ray_migration_equals_single_process(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from vectorport.ray import migrate_on_ray

    n = 4_000  # scale lives in benchmarks/
    source = _snapshot(url_for, tmp_path, n)
    single, clustered = url_for("s3vectors", write_rate=0), url_for("s3vectors", write_rate=0)
    one = vectorport.migrate(source, single, checkpoint=tmp_path / "one.json", sample_queries=5)
    assert one.status == "verified"
    report = migrate_on_ray(source, clustered, workers=2, checkpoint=tmp_path / "ck.json", sample_queries=5)
    assert report.status == "verified", json.dumps(report.to_dict(), default=str)[:3000]
    assert report.copy is not None and report.copy.records == n
    assert report.verification is not None and report.verification.target_count == n
    assert len(report.engine["per_worker"]) == 2 and all(
        w["records"] > 0 for w in report.engine["per_worker"]
    )
    assert report.to_dict()["options"] == one.to_dict()["options"] | {"checkpoint": str(tmp_path / "ck.json")}
    _same(single, clustered)


def test_killed_worker_loses_nothing(ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path) -> None:
    from vectorport.ray import migrate_on_ray

    n = 12_000
    source = _snapshot(url_for, tmp_path, n)
    # 1,500 records/s over two workers: the copy takes about 8 s, time to kill one mid-run
    target = url_for("s3vectors", write_rate=1500)
    pids: Path = ray_cluster.pids
    for old in pids.glob("*.pid"):
        old.unlink()
    result: dict[str, Any] = {}

    def run() -> None:
        result["report"] = migrate_on_ray(
            source, target, workers=2, checkpoint=tmp_path / "ck.json", batch_size=250, sample_queries=5
        )

    thread = threading.Thread(target=run)
    thread.start()
    shard0 = tmp_path / "ck.shard-0-of-2.json"
    deadline = time.monotonic() + 120
    killed = None
    while time.monotonic() < deadline and killed is None:
        time.sleep(0.2)
        try:
            copied = json.loads(shard0.read_text()).get("copied", 0)
        except (OSError, ValueError):
            continue
        if copied >= 1_000:
            killed = int((pids / "shard-0.pid").read_text())
            os.kill(killed, signal.SIGKILL)
    thread.join(timeout=300)
    assert killed is not None, "the copy finished before a worker could be killed"
    report = result["report"]
    assert report.engine["write_rate_per_worker"] == 750
    assert report.status == "verified", json.dumps(report.to_dict(), default=str)[:3000]
    assert int((pids / "shard-0.pid").read_text()) != killed  # shard 0 ran again, elsewhere
    assert report.engine["per_worker"][0]["resumed_from"] > 0  # continued, not restarted
    assert report.verification.target_count == n
    assert len(raw_metadata(target)) == n


def test_cli_engine_ray(ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    source = _snapshot(url_for, tmp_path, 3_000)
    target = url_for("s3vectors", write_rate=0)
    args = ["migrate", source, target, "--engine", "ray", "--workers", "2"]
    out = CliRunner().invoke(app, [*args, "--checkpoint", str(tmp_path / "ck.json"), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["engine"] == "ray" and data["status"] == "verified" and data["copy"]["records"] == 3_000
    assert data["schema"] == "vectorport.migrate/1"
    assert [w["shard"] for w in data["per_worker"]] == [0, 1]


def test_plan_on_ray_writes_nothing_and_prints_the_same_plan(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    source = _snapshot(url_for, tmp_path, 500)
    target = url_for("s3vectors", write_rate=0)
    plans = []
    for engine in ("local", "ray"):
        out = CliRunner().invoke(app, ["migrate", source, target, "--plan", "--engine", engine, "--json"])
        assert out.exit_code == 0, out.output
        data = json.loads(out.stdout)
        assert data["status"] == "planned" and data["copy"] is None
        plans.append(data["plan"])
    assert plans[0] == plans[1]
    with pytest.raises(vectorport.exceptions.NotFoundError):
        vectorport.connect(target)


@pytest.mark.parametrize(("flag", "name"), [(["--shard", "0/2"], "shard")], ids=["shard"])
def test_an_option_ray_cannot_honour_is_refused_before_any_io(
    flag: list[str], name: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from vectorport.cli import app

    source = _snapshot(url_for, tmp_path, 50)
    target = url_for("s3vectors", write_rate=0)
    out = CliRunner().invoke(app, ["migrate", source, target, "--engine", "ray", *flag])
    assert out.exit_code == 2 and name in out.output and "ray" in out.output, out.output
    with pytest.raises(vectorport.exceptions.NotFoundError):
        vectorport.connect(target)


@pytest.mark.chroma
def test_chroma_into_embedded_chroma_on_ray_copies_everything(ray_cluster: Any, tmp_path: Path) -> None:
    import chromadb

    from vectorport.ray import migrate_on_ray

    n = 1_500
    source = f"chroma://{tmp_path / 'src'}?collection=docs"
    target = f"chroma://{tmp_path / 'dst'}?collection=docs"
    store = vectorport.connect(source, dimension=DIM)
    store.upsert(fit_to(tricky_records(n, DIM), store.capabilities.metadata))
    report = migrate_on_ray(source, target, workers=2, checkpoint=tmp_path / "ck.json", sample_queries=5)
    assert report.status == "verified", report.to_json()[:3000]
    assert report.engine["workers"] == 1 and any("one process" in note for note in report.notes)
    got = chromadb.PersistentClient(path=str(tmp_path / "dst")).get_collection("docs").get(include=[])
    assert sorted(got["ids"]) == sorted(r.key for r in tricky_records(n, DIM))
