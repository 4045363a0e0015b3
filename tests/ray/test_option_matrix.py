"""One option matrix: every ``migrate`` and ``sync`` option under both runners (threads in this process, Ray
tasks under the ``ray`` marker) on the same small data gives the same target contents (read back
with boto3, not vectorport), the same report apart from timings and placement, and the same exit
code; an option a runner cannot honour is refused by it before anything is read or written."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app

from ..migrate._migrate_data import DIM, fit_to, tricky_records
from ..migrate._raw import raw_metadata

pytestmark = [pytest.mark.ray, pytest.mark.s3vectors, pytest.mark.parquet]

N = 300
CASES: dict[str, list[str]] = {
    "default": [],
    "plan": ["--plan"],
    "batch-size": ["--batch-size", "7"],
    "concurrency": ["--concurrency", "1"],
    "no-verify": ["--no-verify"],
    "two-pass": ["--two-pass"],
    "single-pass": ["--single-pass"],
    "flatten": ["--metadata-policy", "flatten"],
    "stringify": ["--metadata-policy", "stringify"],
    "drop": ["--metadata-policy", "drop"],
    "text-key": ["--text-key", "title", "--metadata-policy", "drop"],
    "queries": ["--queries", "0"],
    "k": ["-k", "3"],
    "reembed": ["--reembed", f"hash:{DIM}", "--text-key", "title"],
    "progress": ["--progress"],
    "shard": ["--shard", "0/2"],
}
REFUSED_BY = {"ray": {"shard", "single-pass"}}
"""Options a runner refuses (before any I/O, naming the option and the runner)."""
TWO_PASS_EVERYWHERE = {"plan", "two-pass", "reembed"}
"""Cases whose plan reads the source first under every runner (the rest: in one pass locally)."""

VOLATILE = {"timings", "seconds", "checkpoint", "records_per_second", "engine", "workers", "per_worker"}
VOLATILE |= {"write_rate_per_worker", "index_seconds", "method", "segments", "read_back", "scan_segments"}
VOLATILE |= {"key_bins", "differing_bins", "batches", "concurrency", "target_scanned", "skipped"}
VOLATILE |= {"target", "name"}  # each run writes its own index


def _stable(doc: Any, drop: set[str] = VOLATILE) -> Any:
    """A report without what differs by placement or time alone."""
    if isinstance(doc, dict):
        return {k: _stable(v, drop) for k, v in doc.items() if k not in drop}
    if isinstance(doc, list):
        return [_stable(v, drop) for v in doc]
    return doc


@pytest.fixture
def source(tmp_path: Path, url_for: Callable[..., str]) -> str:
    """A parquet:// snapshot every runner's processes can read, with metadata a bucket takes."""
    from vectorport.snapshot import export, snapshot_url

    probe = vectorport.connect(url_for("s3vectors"), dimension=DIM)
    rules = probe.capabilities.metadata
    probe.drop()
    name = f"matrix-{tmp_path.name}"
    store = vectorport.connect(f"memory://{name}", dimension=DIM)
    records = fit_to(tricky_records(N, DIM), rules)
    store.upsert(
        [
            vectorport.Record(r.key, r.vector, {**r.metadata, "title": f"t{i}"}, r.text)
            for i, r in enumerate(records)
        ]
    )
    export(f"memory://{name}", tmp_path / "snap", verify=False)
    store.drop()
    return snapshot_url(tmp_path / "snap")


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys()) for d in _diff(a.get(k), b.get(k), f"{path}.{k}")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def _run(engine: str, source: str, target: str, flags: list[str], tmp: Path) -> tuple[int, dict[str, Any]]:
    args = ["migrate", source, target, "--engine", engine, "--checkpoint", str(tmp / f"{engine}.json")]
    out = CliRunner().invoke(app, [*args, *flags, "--json"], catch_exceptions=False)
    return out.exit_code, json.loads(out.stdout) if out.stdout.strip() else {}


def _contents(url: str) -> dict[str, Any] | None:
    try:
        return raw_metadata(url)
    except Exception:  # no index: nothing was written
        return None


@pytest.mark.parametrize("case", list(CASES))
def test_an_option_means_the_same_under_every_runner(
    case: str, source: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    flags = CASES[case]
    reference = url_for("s3vectors", write_rate=0)
    code, report = _run("local", source, reference, flags, tmp_path)
    assert code == 0, report
    target = url_for("s3vectors", write_rate=0)
    got_code, got = _run("ray", source, target, flags, tmp_path)
    if case in REFUSED_BY["ray"]:
        assert got_code == 2 and got.get("kind") == "ConfigurationError", got
        assert case.replace("-", "_") in got["error"] and "ray" in got["error"]
        assert _contents(target) is None  # refused before anything was written
        return
    assert got_code == code, (got, report)
    # the one difference a runner makes to how a run reads, said in its report: Ray's shards
    # cannot share the single pass's checks, so its plan reads the source first
    said = [n for n in got.get("notes", []) if n.startswith("single pass not used (the ray runner")]
    assert len(said) == (0 if case in TWO_PASS_EVERYWHERE else 1), got.get("notes")
    got["notes"] = [n for n in got.get("notes", []) if n not in said]
    a, b = _stable(got), _stable(report)
    assert a == b, _diff(a, b)
    assert _contents(target) == _contents(reference)


SYNC_CASES: dict[str, list[str]] = {
    "default": [],
    "delete": ["--delete"],
    "full": ["--full"],
    "verify": ["--verify", "--queries", "3"],
    "batch-size": ["--batch-size", "7"],
    "concurrency": ["--concurrency", "1"],
    "flatten": ["--metadata-policy", "flatten"],
    "text-key": ["--text-key", "title"],
    "progress": ["--progress"],
    "until-equal": ["--until-equal", "--queries", "3"],
    "shard": ["--shard", "0/2"],
    "follow": ["--follow"],
}
SYNC_REFUSED_BY = {"ray": {"shard", "follow"}}
SYNC_VOLATILE = {"state", "shards", "target_read", "source_read", "bins", "bins_checked"}


def _sync(engine: str, source: str, target: str, flags: list[str], tmp: Path) -> tuple[int, dict[str, Any]]:
    args = ["sync", source, target, "--engine", engine, "--state", str(tmp / f"{engine}.sqlite")]
    out = CliRunner().invoke(app, [*args, *flags, "--json"], catch_exceptions=False)
    return out.exit_code, json.loads(out.stdout) if out.stdout.strip() else {}


@pytest.mark.parametrize("case", list(SYNC_CASES))
def test_a_sync_option_means_the_same_under_every_runner(
    case: str, source: str, ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    flags = SYNC_CASES[case]
    target = url_for("s3vectors", write_rate=0)
    if case in SYNC_REFUSED_BY["ray"]:
        got_code, got = _sync("ray", source, target, flags, tmp_path)
        assert got_code == 2 and got.get("kind") == "ConfigurationError", got
        assert case.replace("-", "_") in got["error"] and "ray" in got["error"]
        assert _contents(target) is None  # refused before anything was written
        return
    reference = url_for("s3vectors", write_rate=0)
    code, report = _sync("local", source, reference, flags, tmp_path)
    assert code == 0, report
    got_code, got = _sync("ray", source, target, flags, tmp_path)
    assert got_code == code, (got, report)
    drop = VOLATILE | SYNC_VOLATILE
    a, b = _stable(got, drop), _stable(report, drop)
    assert a == b, _diff(a, b)
    assert _contents(target) == _contents(reference)
