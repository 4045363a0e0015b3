"""``verify --engine ray``: merged per-segment digests give the single-process verdict, counts and
difference lists; a target damaged with its own client (psycopg, chromadb) is reported with
exactly the damaged keys; a Chroma target (floats and cosine vectors read back within declared
ulps) verifies equal."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.migrate import VerifyReport

from ..migrate._migrate_data import DIM, fit_to, tricky_records
from ..migrate._raw import pg_damage

pytestmark = [pytest.mark.ray, pytest.mark.parquet]


def _snapshot(url_for: Callable[..., str], backend: str, tmp_path: Path, n: int) -> str:
    """A parquet:// source of ``n`` records the ``backend`` can hold as they are."""
    from vectorport.snapshot import export, snapshot_url

    probe = vectorport.connect(url_for(backend), dimension=DIM)
    rules = probe.capabilities.metadata
    probe.drop()
    probe.close()
    name = f"ray-verify-{backend}-{n}"
    store = vectorport.connect(f"memory://{name}", dimension=DIM)
    store.upsert(fit_to(tricky_records(n, DIM), rules))
    export(f"memory://{name}", tmp_path / "snap", verify=False)
    store.drop()
    return snapshot_url(tmp_path / "snap")


def _findings(report: VerifyReport) -> dict[str, Any]:
    """What both engines must agree on."""
    return {
        "status": report.status,
        "counts": (report.source_count, report.target_count),
        "differences": report.differences,
        "missing": sorted(report.missing.items),
        "extra": sorted(report.extra.items),
        "vectors": sorted(str(v["key"]) for v in report.vectors.items),
        "metadata": sorted(str(v["key"]) for v in report.metadata.items),
        "text": sorted(str(v["key"]) for v in report.text.items),
        "duplicates": report.duplicates,
    }


@pytest.mark.pgvector
def test_ray_verify_equals_single_process_and_names_the_damage(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from vectorport.ray import verify_on_ray

    n = 20_000
    source = _snapshot(url_for, "pgvector", tmp_path, n)
    target = url_for("pgvector")
    assert vectorport.migrate.run(source, target, checkpoint=tmp_path / "ck.json", sample_queries=0).ok

    one = vectorport.verify(source, target, sample_queries=5)
    clustered = verify_on_ray(source, target, workers=2, sample_queries=5)
    # the data verdict is the point here; the search-quality verdict over 5 sampled queries on an
    # HNSW index of these near-duplicate records may be either, but must be the same on both engines
    assert one.status == clustered.status, clustered.to_dict()
    assert one.status in {"verified", "quality"} and not one.differences, one.to_dict()
    assert _findings(clustered) == _findings(one)
    assert clustered.compared == one.compared == n and clustered.differing_bins == 0
    assert clustered.queries is not None and clustered.queries.target_recall == one.queries.target_recall  # type: ignore[union-attr]
    data = clustered.to_dict()
    assert data["engine"] == "ray" and data["workers"] == 2
    scans = [w for w in data["per_worker"] if not w["task"].startswith("detail")]  # type: ignore[union-attr]
    assert len(scans) == 4 and sum(w["records"] for w in scans) == 2 * n

    keys = sorted(r.key for r in tricky_records(n, DIM))
    gone, changed, extra = keys[10], keys[20_000 // 2], "added by hand#0"
    pg_damage(target, gone, changed, extra)
    one = vectorport.verify(source, target, sample_queries=0)
    clustered = verify_on_ray(source, target, workers=2, sample_queries=0)
    found = _findings(clustered)
    assert found == _findings(one)
    assert found["status"] == "differences"
    assert (found["missing"], found["extra"], found["metadata"]) == ([gone], [extra], [changed])
    assert found["vectors"] == found["text"] == []
    assert found["counts"] == (n, n)  # one gone, one added: the counts alone would not tell
    assert 1 <= clustered.differing_bins <= 3

    # the CLI: the same report, exit 1 for data differences
    out = CliRunner().invoke(
        vectorport_cli(),
        ["verify", source, target, "--engine", "ray", "--workers", "2", "--queries", "0", "--json"],
    )
    assert out.exit_code == 1, out.output
    report = json.loads(out.stdout)
    assert report["engine"] == "ray" and report["status"] == "differences"
    assert report["missing"]["items"] == [gone] and report["extra"]["items"] == [extra]


def vectorport_cli() -> Any:
    from vectorport.cli import app

    return app


@pytest.mark.chroma
def test_ray_verify_chroma_target_within_declared_ulps(
    ray_cluster: Any, url_for: Callable[..., str], tmp_path: Path
) -> None:
    from chromadb import HttpClient

    from vectorport.ray import verify_on_ray

    n = 4_000
    source = _snapshot(url_for, "chroma+http", tmp_path, n)
    target = url_for("chroma+http")
    assert vectorport.migrate.run(source, target, checkpoint=tmp_path / "ck.json", sample_queries=0).ok
    clustered = verify_on_ray(source, target, workers=2, sample_queries=5)
    one = vectorport.verify(source, target, sample_queries=5)
    assert clustered.status == one.status == "verified", clustered.to_dict()
    assert _findings(clustered) == _findings(one) and clustered.compared == n
    # cosine vectors come back within 2 ulps: digests differ, the detailed pass judges them equal
    assert clustered.differing_bins > 0

    keys = sorted(r.key for r in tricky_records(n, DIM))
    gone, changed, extra = keys[3], keys[n // 2], "added by hand#0"
    parts = urlsplit(target)
    client = HttpClient(host=parts.hostname, port=parts.port)
    coll = client.get_collection(parse_qs(parts.query)["collection"][0])
    got = coll.get(ids=[changed], include=["embeddings", "metadatas", "documents"])
    coll.delete(ids=[gone])
    coll.update(ids=[changed], metadatas=[{**got["metadatas"][0], "count": -1}])
    coll.add(ids=[extra], embeddings=[got["embeddings"][0]], metadatas=[got["metadatas"][0]], documents=["x"])
    clustered = verify_on_ray(source, target, workers=2, sample_queries=0)
    found = _findings(clustered)
    assert found == _findings(vectorport.verify(source, target, sample_queries=0))
    assert (found["missing"], found["extra"], found["metadata"]) == ([gone], [extra], [changed])


def test_memory_store_is_refused(ray_cluster: Any) -> None:
    from vectorport.ray import verify_on_ray

    with pytest.raises(vectorport.ConfigurationError, match="no Ray worker"):
        verify_on_ray("memory://a", "memory://b")


def _two_snapshots(tmp_path: Path, n: int) -> tuple[str, str]:
    """Two parquet:// snapshots of the same ``n`` records (every Ray worker reads a directory)."""
    from vectorport.snapshot import export, snapshot_url

    store = vectorport.connect("memory://ray-verify-runner", dimension=DIM)
    store.upsert(tricky_records(n, DIM))
    urls = []
    for name in ("a", "b"):
        export("memory://ray-verify-runner", tmp_path / name, verify=False)
        urls.append(snapshot_url(tmp_path / name))
    store.drop()
    return urls[0], urls[1]


def _progress_lines(err: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return [d for d in lines if d.get("schema") == "vectorport.progress/1"]


def test_standalone_verify_is_the_library_verify_with_the_ray_runner(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``verify(..., runner=RayRunner)`` gives the local findings, and its progress (json) is the
    local one's: the ``verify`` stage counting the source's records up to all of them."""
    from vectorport.ray import RayRunner

    n = 300
    source, target = _two_snapshots(tmp_path, n)
    capsys.readouterr()
    local = vectorport.verify(source, target, sample_queries=3, k=5, progress="json")
    local_lines = _progress_lines(capsys.readouterr().err)
    clustered = vectorport.verify(source, target, runner=RayRunner(2), sample_queries=3, k=5, progress="json")
    ray_lines = _progress_lines(capsys.readouterr().err)
    assert clustered.status == local.status == "verified", clustered.to_dict()
    assert _findings(clustered) == _findings(local) and clustered.compared == n
    assert clustered.queries is not None and local.queries is not None
    assert clustered.queries.k == local.queries.k == 5
    assert clustered.to_dict()["engine"] == "ray"
    for lines in (local_lines, ray_lines):
        assert lines and {d["stage"] for d in lines} == {"verify"}, lines
        assert lines[-1]["done"] == n and lines[-1]["total"] in (n, None), lines
    # progress off: nothing on stderr
    vectorport.verify(source, target, runner=RayRunner(2), sample_queries=0, progress="none")
    assert _progress_lines(capsys.readouterr().err) == []


@pytest.mark.parametrize(
    ("option", "value", "flag"),
    [
        ("shard", "0/2", ["--shard", "0/2"]),
        ("concurrency", 8, ["--concurrency", "8"]),
        ("method", "keyed", ["--method", "keyed"]),
    ],
)
def test_what_ray_cannot_honour_is_refused_before_io(
    ray_cluster: Any, tmp_path: Path, option: str, value: Any, flag: list[str] | None
) -> None:
    """Refused by name (option and runner) before any store is opened: the URLs do not exist."""
    from vectorport.ray import RayRunner

    source, target = (f"parquet://{tmp_path / 'nowhere' / s}" for s in ("a", "b"))
    with pytest.raises(vectorport.ConfigurationError, match=rf"^{option}: not supported by the ray runner"):
        vectorport.verify(source, target, runner=RayRunner(2), **{option: value})
    assert not (tmp_path / "nowhere").exists()
    if flag is not None:
        out = CliRunner().invoke(vectorport_cli(), ["verify", source, target, "--engine", "ray", *flag])
        assert out.exit_code != 0 and "Traceback" not in out.output, out.output
        assert f"{option}: not supported by the ray runner" in out.stderr, out.stderr


def test_cli_verify_ray_report_and_progress(ray_cluster: Any, tmp_path: Path) -> None:
    """``verify --engine ray --json --report --progress json``: the local command's report (apart
    from timings and the engine's fields), and the same progress lines on stderr."""
    n = 200
    source, target = _two_snapshots(tmp_path, n)
    reports = {}
    for engine in ("local", "ray"):
        path = tmp_path / f"{engine}.json"
        args = ["verify", source, target, "--engine", engine, "--queries", "4", "-k", "3", "--json"]
        out = CliRunner().invoke(vectorport_cli(), [*args, "--report", str(path), "--progress", "json"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.stdout) == json.loads(path.read_text())
        lines = _progress_lines(out.stderr)
        assert lines and lines[-1]["stage"] == "verify" and lines[-1]["done"] == n, out.stderr
        assert [d["done"] for d in lines if d["stage"] == "verify"].count(0) == 1, out.stderr  # one start
        reports[engine] = json.loads(out.stdout)
    local, ray_ = reports["local"], reports["ray"]
    assert ray_["engine"] == "ray" and ray_["workers"] == 2
    for key in ("status", "ok", "counts", "missing", "extra", "vectors", "metadata", "text", "duplicates"):
        assert ray_[key] == local[key], key
    assert ray_["queries"]["k"] == local["queries"]["k"] == 3


def test_export_on_ray_verification_reports_progress(
    ray_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An export's verification (the migration's, placed by the Ray runner) reports its
    ``verify`` stage with ``progress`` as the local runner does; without it, nothing."""
    from vectorport.ray import export_on_ray

    n = 250
    source, _ = _two_snapshots(tmp_path, n)
    capsys.readouterr()
    report = export_on_ray(source, tmp_path / "out", workers=2, sample_queries=0, progress="json")
    assert report.verification is not None and report.verification.ok, report.to_dict()
    lines = _progress_lines(capsys.readouterr().err)
    stages = [d["stage"] for d in lines]
    assert "export" in stages and "verify" in stages, lines
    assert [d for d in lines if d["stage"] == "verify"][-1]["done"] == n, lines
    export_on_ray(source, tmp_path / "quiet", workers=2, sample_queries=0)
    assert _progress_lines(capsys.readouterr().err) == []
