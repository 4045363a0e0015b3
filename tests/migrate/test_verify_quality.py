"""Verification tells data from search quality: a byte-exact copy into an approximate index is
"data: equal" whatever its recall; its quality is judged against the source on the same queries
and against exact truth, each verdict named, with exit 5 only when both fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport._exit import ExitCode
from vectorport.cli import app
from vectorport.migrate import QueryCheck, VerifyReport
from vectorport.verify._queries import RELATIVE_SLACK, relative_slack

runner = CliRunner()


def _check(target: float, source: float, required: float = 0.95, slack: float = 0.1) -> QueryCheck:
    return QueryCheck(10, 20, 0.5, 0.1, source, target, required, slack)


@pytest.mark.memory
@pytest.mark.parametrize(
    ("target", "source", "ok", "as_good", "meets", "start"),
    [
        (0.575, 0.565, True, True, False, "passed: as good as the source"),  # the 60k case
        (0.96, 1.0, True, True, True, "passed:"),
        (0.88, 1.0, True, False, True, "passed against exact truth"),
        (0.30, 0.90, False, False, False, "failed: worse than the source"),
    ],
)
def test_quality_verdicts(
    target: float, source: float, ok: bool, as_good: bool, meets: bool, start: str
) -> None:
    q = _check(target, source)
    assert (q.ok, q.as_good_as_source, q.meets_required) == (ok, as_good, meets)
    assert q.verdict.startswith(start), q.verdict
    report = VerifyReport("a", "b", (0, 1), source_count=5, target_count=5, queries=q)
    assert report.data_equal and report.differences == 0
    assert report.status == ("verified" if ok else "quality")
    assert report.exit_code == (ExitCode.OK if ok else ExitCode.QUALITY)
    data = report.to_dict()
    assert data["data"] == {"equal": True, "differences": 0}
    assert data["quality"] == {"ok": ok, "verdict": q.verdict}


@pytest.mark.memory
def test_the_relative_slack_is_the_noise_of_paired_answers() -> None:
    """Two approximate indexes that disagree query by query by chance (means 0.06 apart, per-query
    differences of -0.46 and +0.34) are as good as each other, which the fixed slack alone denied;
    a target that misses consistently is not; identical answers keep the fixed slack."""
    rng = np.random.default_rng(3)
    src = [0.5] * 100
    noisy = [s + d for s, d in zip(src, [-0.46, 0.34] * 50, strict=True)]
    check = _check(float(np.mean(noisy)), float(np.mean(src)))
    assert not check.as_good_as_source  # 0.06 below the source: more than RELATIVE_SLACK
    slack = relative_slack(src, noisy)
    assert 0.1 < slack < 0.15  # 3 x 0.40 / sqrt(100)
    assert replace(check, relative=slack).as_good_as_source
    garbled = [s - 0.3 + d for s, d in zip(src, rng.uniform(-0.02, 0.02, 100), strict=True)]
    assert relative_slack(src, garbled) == RELATIVE_SLACK  # a consistent loss: no noise allowed
    assert relative_slack(src, src) == RELATIVE_SLACK
    assert relative_slack([0.5], [0.1]) == RELATIVE_SLACK


@pytest.mark.memory
def test_data_differences_are_not_quality() -> None:
    report = VerifyReport("a", "b", (0, 1), source_count=5, target_count=4, queries=_check(0.1, 0.9))
    report.missing.add("k")
    assert report.differences == 2 and report.status == "differences"
    assert report.exit_code == ExitCode.PROBLEM


def _random(url: str, n: int = 4000, dim: int = 256) -> None:
    rng = np.random.default_rng(0)
    store = vectorport.connect(url, dimension=dim)
    store.upsert(
        [vectorport.Record(f"k{i:05d}", rng.standard_normal(dim).astype(np.float32)) for i in range(n)]
    )
    store.close()


@pytest.mark.pgvector
def test_random_vectors_into_a_weak_hnsw_index(url_for: Callable[..., str], tmp_path: Path) -> None:
    # high-dimensional random vectors and a sparse graph (m=4): recall far below pgvector's
    # declared 0.95, as with 60k 384-d random vectors at the default m=16
    weak = {"m": 4, "ef_construction": 8}
    exact = "memory://quality-src"
    _random(exact)
    first = url_for("pgvector", **weak)
    # an exact source: the weak index is worse than it and below exact truth: exit 5, data equal
    report = vectorport.migrate.run(exact, first, checkpoint=tmp_path / "a.json", sample_queries=100)
    v = report.verification
    assert v is not None and v.data_equal and v.queries is not None
    assert report.status == "quality" and report.exit_code == ExitCode.QUALITY
    assert v.queries.verdict.startswith("failed: worse than the source"), v.queries.verdict
    # the CLI table: data equal, the search-quality row marked as the failing one
    res = runner.invoke(app, ["verify", exact, first, "--queries", "100"], env={"COLUMNS": "200"})
    assert res.exit_code == ExitCode.QUALITY, res.output
    rows = {line.split("│")[2].strip(): line for line in res.stdout.splitlines() if line.count("│") >= 4}
    assert "✓" in rows["data"] and "equal" in rows["data"]
    assert "✗" in next(v for k, v in rows.items() if k.startswith("search quality"))
    assert "✗" in rows["target vs source (same queries)"] and "✗" in rows["target vs exact truth"]
    # an approximate source with the same index: the copy is as good as the source, so it passes
    second = url_for("pgvector", **weak)
    res = runner.invoke(
        app,
        ["migrate", first, second, "--checkpoint", str(tmp_path / "b.json"), "--queries", "100", "--json"],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    check = data["verification"]
    assert data["status"] == "verified" and check["data"]["equal"]
    assert check["queries"]["target_recall"] < 0.85  # the weak index is really weak
    assert check["quality"]["verdict"].startswith("passed: as good as the source"), check["quality"]
    vectorport.connect(exact).drop()


@pytest.mark.memory
def test_a_corrupt_source_vector_is_a_data_difference_not_a_crash() -> None:
    """A NaN that reached the source's storage (writes refuse it) differs from the target's
    copy; verification reports it as data and does not send it as a sampled query."""
    from vectorport.backends.memory import store as memory_backend

    rng = np.random.default_rng(1)
    recs = [vectorport.Record(f"k{i:03d}", rng.normal(size=8).tolist()) for i in range(60)]
    src = vectorport.connect("memory://verify-nan-src", dimension=8)
    dst = vectorport.connect("memory://verify-nan-dst", dimension=8)
    try:
        src.upsert(recs)
        dst.upsert(recs)
        coll = memory_backend._NAMESPACE[src.collection]
        bad = [f"k{i:03d}" for i in range(0, 60, 3)]
        for key in bad:
            coll.vectors[coll.rows[key], 2] = np.nan
        coll._matrix = None  # the search matrix is rebuilt from storage, as after a restart
        report = vectorport.migrate.verify(src.url.raw, dst.url.raw, sample_queries=30, k=5)
        assert report.status == "differences" and report.exit_code == ExitCode.PROBLEM
        assert sorted(item["key"] for item in report.vectors.items) == bad
        assert "NaN" in report.vectors.items[0]["problem"]
        assert report.queries is not None and report.queries.queries == 30  # of the 40 usable
    finally:
        src.drop()
        dst.drop()
