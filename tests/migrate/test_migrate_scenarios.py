"""Migrations under stress on real backends: killed with SIGKILL and resumed, throttled by the
local bucket server, into a half-populated target, and from a lossy source through the CLI."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport._retry import RetryPolicy
from vectorport.cli import app
from vectorport.migrate import Checkpoint, Transformer

from ._migrate_data import N, all_records

LoadedSource = Callable[[str], tuple[str, list[Any]]]
SRC_ROOT = str(Path(vectorport.__file__).resolve().parents[1])
runner = CliRunner()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "vectorport", *args]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.mark.pgvector
@pytest.mark.s3vectors
@pytest.mark.parametrize("single_pass", [False, True], ids=["two-pass", "single-pass"])
def test_sigkill_at_random_points_then_resume(
    loaded_source: LoadedSource, url_for: Callable[..., str], tmp_path: Path, single_pass: bool
) -> None:
    source_url, _ = loaded_source("pgvector")
    # paced to 500 vectors/s so every kill lands mid-copy: three kills of at most N/10
    # records each, plus 0.2 s of slack, stay well below N (10 s of copying; at 1,000/s a
    # CI run once found the copy complete at a kill point)
    target_url = url_for("s3vectors", write_rate=500)
    ck = tmp_path / "ck.json"
    base = [
        "migrate",
        source_url,
        target_url,
        "--checkpoint",
        str(ck),
        "--metadata-policy",
        "flatten",
        "--batch-size",
        "100",
        "--concurrency",
        "4",
        "--no-progress",
        *(["--single-pass"] if single_pass else []),
        "--no-verify",
        "--json",
    ]
    rng = random.Random()
    kills: list[int] = []
    for point in range(3):
        log = tmp_path / f"run{point}.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(
                _cli(*base, *(["--resume"] if point else [])),
                env=_env(),
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        before = kills[-1] if kills else 0
        goal = min(before + rng.randint(N // 20, N // 10), N // 2)
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            saved = Checkpoint.load(ck) if ck.exists() else None
            if saved is not None and saved.copied >= goal:
                break
            time.sleep(0.02)
        time.sleep(rng.random() * 0.2)  # land anywhere inside a batch
        assert proc.poll() is None, f"finished before kill point {point}: {log.read_text()}"
        proc.kill()
        proc.wait()
        assert proc.returncode == -9
        saved = Checkpoint.load(ck)
        assert saved is not None and not saved.complete
        assert saved.copied >= before
        if single_pass:  # the digests saved are those of exactly the records acknowledged
            assert saved.single_pass and saved.digests is not None
            assert saved.digests.total == saved.copied
        kills.append(saved.copied)
    done = subprocess.run(
        _cli(*base[:-2], "--resume", "--json"), env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["copy"]["resumed_from"] == kills[-1]
    assert report["copy"]["records"] == N - kills[-1]
    check = report["verification"]
    assert check["ok"], check
    assert check["counts"]["target"] == N and check["counts"]["target_scanned"] == N
    assert check["duplicates"] == 0 and check["missing"]["total"] == 0
    assert check["method"] == "digest"
    # every segment's digest agreed: across three kills the copy's digests (single pass) or
    # the source's (two passes) were those of what the target holds
    assert check["segments"]["differing"] == 0, check["segments"]
    # a finished migration re-run: no copy, verification only
    again = subprocess.run(
        _cli(*base[:-3], "--json"), env=_env(), capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    data = json.loads(again.stdout)
    assert data["already_complete"] and data["copy"] is None and data["status"] == "verified"


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_throttled_bucket_server_completes_correctly(loaded_source: LoadedSource) -> None:
    server_mod = pytest.importorskip("vectorport.bucketserver")
    source_url, _ = loaded_source("pgvector")
    throttle = server_mod.Throttle(fraction=0.25, unavailable=0.05, seed=11)
    server = server_mod.LocalServer(throttle=throttle)
    server.start()
    try:
        target_url = f"s3vectors://throttled/chunks?endpoint_url={server.url}&write_rate=0&max_attempts=1"
        report = vectorport.migrate.run(
            source_url,
            target_url,
            metadata_policy="flatten",
            concurrency=4,
            batch_size=250,
            retry=RetryPolicy(attempts=30, base=0.005, cap=0.05),
            target_options={"retry": RetryPolicy(attempts=12, base=0.005, cap=0.05)},
        )
        assert report.status == "verified", report.to_json()
        assert throttle.throttled > 20
        assert report.verification is not None and report.verification.target_count == N
    finally:
        server.stop()


@pytest.mark.pgvector
@pytest.mark.s3vectors
def test_half_populated_target_is_idempotent(
    loaded_source: LoadedSource, url_for: Callable[..., str]
) -> None:
    source_url, records = loaded_source("pgvector")
    target_url = url_for("s3vectors", write_rate=0)
    target = vectorport.connect(target_url, dimension=len(records[0].vector))
    flat = Transformer(target.capabilities.metadata, "flatten")
    half = [Record(r.key, r.vector, *_fields(flat, r)) for r in records[: N // 2]]
    stale = [Record(r.key, r.vector, {"stale": True}, "old text") for r in records[N // 2 : N // 2 + 50]]
    target.upsert(half + stale)
    report = vectorport.migrate.run(source_url, target_url, metadata_policy="flatten")
    assert report.status == "verified", report.to_json()
    assert report.plan is not None and report.plan.target_count == N // 2 + 50
    got = all_records(target)
    assert len(got) == N and "stale" not in got[stale[0].key].metadata
    target.drop()
    target.close()


def _fields(t: Transformer, rec: Record) -> tuple[Any, Any]:
    out = t.apply(rec.metadata, rec.text)
    return out.metadata, out.text


@pytest.mark.pgvector
@pytest.mark.chroma
def test_lossy_source_plan_names_records_and_exits_4(
    loaded_source: LoadedSource, url_for: Callable[..., str], tmp_path: Path
) -> None:
    source_url, records = loaded_source("pgvector")
    target_url = url_for("chroma")
    nested = {r.key for r in records if "author" in r.metadata}
    res = runner.invoke(app, ["migrate", source_url, target_url, "--plan", "--json"])
    assert res.exit_code == 4, res.output
    data = json.loads(res.stdout)
    assert data["plan"]["refused"] and "--metadata-policy" in data["plan"]["suggestion"]
    groups = {g["kind"]: g for g in data["plan"]["metadata_problems"]}
    assert {"nested object", "null value"} <= set(groups)
    group = groups["nested object"]
    assert group["records"] == len(nested) and group["occurrences"]["total"] == len(nested)
    named = group["occurrences"]["items"]
    assert named and {o["key"] for o in named} <= nested
    assert {o["path"] for o in named} == {"metadata.author"}
    res = runner.invoke(app, ["migrate", source_url, target_url, "--plan"])
    assert res.exit_code == 4 and "metadata.author" in res.stdout and "--metadata-policy" in res.stdout
    res = runner.invoke(app, ["migrate", source_url, target_url, "--no-progress"])
    assert res.exit_code == 4
    with pytest.raises(vectorport.NotFoundError):
        vectorport.connect(target_url).close()  # refused: not even created
    ck = str(tmp_path / "ck.json")
    args = ["migrate", source_url, target_url, "--metadata-policy", "flatten", "--checkpoint", ck]
    res = runner.invoke(app, [*args, "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["status"] == "verified"
    with vectorport.connect(target_url) as target:
        target.drop()
