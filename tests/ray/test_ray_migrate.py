"""``migrate`` on a local Ray cluster beyond the option matrix (``test_option_matrix.py``: every
option means the same as in one process): a killed worker loses and duplicates nothing, a bucket's
write cap is divided among the workers, and a store one process may open is not opened by two
(the one task running the whole command shows the local runner's progress on the driver)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport.engine._checkpoint import shard_path

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


def test_resume_after_the_whole_run_was_killed(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    """kill -9 of the driver (the ``vectorport migrate --engine ray`` process) and of the workers
    running its shards, then ``--resume``: every record arrives once, the shards continue from
    their checkpoints.

    Judged on what the kill left: the workers are killed too (once its driver dies, Ray stops the
    driver's tasks only after a while, time for them to go on copying), and a round whose copy
    had finished before the kill landed (a test process starved on a busy machine sees the
    checkpoint late) has nothing to resume, so it is run again on a new target, at most twice."""
    from vectorport.ray import migrate_on_ray

    n = 6_000
    source = _snapshot(url_for, tmp_path, n)
    for attempt in range(3):
        target = url_for("s3vectors", write_rate=1000)
        ck = tmp_path / f"round-{attempt}" / "ck.json"
        ck.parent.mkdir()
        left = _kill_mid_copy(ray_cluster, source, target, ck)
        if sum(left) < n:
            break
    else:
        pytest.fail("every round's copy finished before the kill landed: nothing to resume was judged")
    report = migrate_on_ray(
        source, target, workers=2, checkpoint=ck, resume=True, batch_size=250, sample_queries=0
    )
    assert report.status == "verified", report.to_json()[:3000]
    resumed = sorted(w["resumed_from"] for w in report.engine["per_worker"])
    assert resumed == sorted(left) and sum(resumed) >= 1_000  # each shard went on from its checkpoint
    assert len(raw_metadata(target)) == n


def _kill_mid_copy(ray_cluster: Any, source: str, target: str, ck: Path) -> list[int]:
    """Start ``vectorport migrate --engine ray`` with 2 workers, kill -9 it and its shards'
    workers once shard 0 has copied 1,000 records; what each shard's checkpoint then holds."""
    pids: Path = ray_cluster.pids
    for old in pids.glob("*.pid"):
        old.unlink()
    address = ray_cluster.get_runtime_context().gcs_address
    args = ["migrate", source, target, "--engine", "ray", "--address", address, "--workers", "2"]
    args += ["--checkpoint", str(ck), "--batch-size", "250", "--queries", "0"]
    driver = subprocess.Popen([sys.executable, "-m", "vectorport", *args], stdout=subprocess.DEVNULL)
    deadline, seen = time.monotonic() + 120, False
    while time.monotonic() < deadline and not seen and driver.poll() is None:
        time.sleep(0.2)
        seen = _copied(shard_path(ck, (0, 2))) >= 1_000
    driver.kill()
    driver.wait()
    for pid_file in pids.glob("shard-*.pid"):
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    # a driver that finished before a poll saw its checkpoint: a round with nothing left to resume
    seen = seen or _copied(shard_path(ck, (0, 2))) >= 1_000
    assert seen, "the copy failed (or never started) before the driver could be killed"
    return [_copied(shard_path(ck, (i, 2))) for i in range(2)]


def _copied(checkpoint: Path) -> int:
    """What a shard's checkpoint says was copied (0: not written yet)."""
    try:
        return int(json.loads(checkpoint.read_text()).get("copied", 0))
    except (OSError, ValueError):  # not written yet, or caught mid-write
        return 0


def _stage_ends(err: str) -> dict[str, tuple[int, int | None]]:
    """Each progress stage's last (done, total), in the order the stages started."""
    ends: dict[str, tuple[int, int | None]] = {}
    for line in err.splitlines():
        doc = json.loads(line) if line.startswith("{") else {}
        if doc.get("schema") == "vectorport.progress/1":
            ends[doc["stage"]] = (doc["done"], doc["total"])
    return ends


@pytest.mark.chroma
def test_progress_of_a_run_delegated_to_one_task_is_the_local_runs(ray_cluster: Any, tmp_path: Path) -> None:
    """A run into an embedded Chroma directory runs as one Ray task; ``--progress json`` still
    writes the local runner's stages on the driver's stderr, each ending at the same count."""
    from typer.testing import CliRunner

    from vectorport.cli import app

    n = 300
    ends: dict[tuple[str, str], dict[str, tuple[int, int | None]]] = {}
    for engine in ("local", "ray"):
        source = f"chroma://{tmp_path / engine / 'src'}?collection=docs"
        store = vectorport.connect(source, dimension=DIM)
        store.upsert(fit_to(tricky_records(n, DIM), store.capabilities.metadata))
        commands = {
            "migrate": [
                "migrate",
                source,
                f"chroma://{tmp_path / engine / 'dst'}?collection=docs",
                "--queries",
                "2",
            ],
            "export": ["export", source, str(tmp_path / engine / "snap")],
        }
        for command, args in commands.items():
            flags = ["--engine", engine, "--progress", "json", "--json"]
            out = CliRunner().invoke(app, [*args, *flags], catch_exceptions=False)
            assert out.exit_code == 0, out.output
            ends[command, engine] = _stage_ends(out.stderr)
    for command in ("migrate", "export"):
        assert ends[command, "ray"] == ends[command, "local"], (command, ends)
    assert ends["migrate", "local"]["copy"][0] == ends["export", "local"]["export"][0] == n, ends
