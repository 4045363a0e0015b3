"""memory vs pgvector (HNSW) vs chroma vs s3vectors on clustered data, filters at several
selectivities; a deliberately broken store is caught; the CLI runs end to end on real servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import vectorport
from vectorport import MetadataRules
from vectorport.testing import clustered_records

from ._doubles import PostFilteringStore, open_double

pytestmark = [pytest.mark.pgvector, pytest.mark.chroma, pytest.mark.s3vectors]

for _module in ("psycopg", "chromadb", "boto3"):
    pytest.importorskip(_module)
pytest.importorskip("vectorport.backends.pgvector")
pytest.importorskip("vectorport.backends.chroma")
pytest.importorskip("vectorport.backends.s3vectors")

DIM = 32
N = 3000
# scalar fields only: every backend filters them natively (no nested objects for chroma/S3)
RECORDS = clustered_records(N, DIM, clusters=12, seed=7, rules=MetadataRules(nested_objects=False))
FILTERS: list[dict[str, Any] | None] = [
    None,  # 100 %
    {"lang": "en"},  # ~15 %
    {"stars": {"$gte": 90}},  # ~10 %
    {"cluster": 3, "draft": False},  # ~6 %
    {"stars": {"$lt": 3}, "lang": {"$ne": "fr"}},  # ~2 %
]
GATES = {"min_recall": 0.9, "max_violations": 0, "min_overlap": 0.85, "max_underfill": 0.0}


@pytest.fixture(scope="module")
def stores(url_for: Callable[..., str]) -> Iterator[dict[str, str]]:
    urls = {
        "memory": url_for("memory", "compare-real"),
        "pgvector": url_for("pgvector"),
        "chroma": url_for("chroma"),
        "s3vectors": url_for("s3vectors"),
    }
    opened = []
    for url in urls.values():
        store = vectorport.connect(url, dimension=DIM, metric="cosine")
        store.upsert(RECORDS)
        opened.append(store)
    yield urls
    for store in opened:
        store.drop()
        store.close()


def test_real_backends_answer_like_exact_search(stores: dict[str, str], tmp_path: Path) -> None:
    result = vectorport.compare(stores, 25, k=10, filter=FILTERS, warmup=5, **GATES)
    print(result)
    assert result.passed, result.explain()
    assert [s.backend for s in result.stores] == ["memory", "pgvector", "chroma", "s3vectors"]
    assert len(result.groups) == len(FILTERS)
    selectivities = sorted(g.selectivity for g in result.groups)
    assert selectivities[0] < 0.05 and selectivities[-1] == 1.0
    for s in result.stores:
        assert s.overall.violations == 0 and s.overall.unknown == 0 and s.overall.refused == 0
        assert s.overall.distance_error_max < 1e-3, (s.label, s.overall.distance_error_max)
    assert result.store("memory").overall.recall == 1.0
    data = json.loads(result.to_json())
    pg = next(st for st in data["config"]["stores"] if st["backend"] == "pgvector")
    assert pg["info"]["pgvector"]["index"] == "hnsw" and pg["versions"].get("psycopg")
    result.write_html(tmp_path / "real.html")


def test_broken_store_among_real_ones_fails_its_gates_only(stores: dict[str, str]) -> None:
    broken = open_double(PostFilteringStore, stores["memory"].removeprefix("memory://"))
    result = vectorport.compare(
        {"pgvector": stores["pgvector"], "s3vectors": stores["s3vectors"], "broken": broken},
        10,
        k=10,
        filter=FILTERS[1:3],
        warmup=2,
        truth=stores["memory"],
        **GATES,
    )
    assert not result.passed
    failing = {
        (g.gate, g.subject.split(" vs ")[-1] if " vs " in g.subject else g.subject) for g in result.failures
    }
    assert ("max-underfill", "broken") in failing and ("min-recall", "broken") in failing
    assert all("broken" in g.subject for g in result.failures), [g.message for g in result.failures]


def test_cli_on_three_real_backends(
    stores: dict[str, str], url_for: Callable[..., str], tmp_path: Path
) -> None:
    # a chroma *server* copy: the CLI is a separate process, so it reaches chroma over HTTP
    http_url = url_for("chroma+http")
    with vectorport.connect(http_url, dimension=DIM, metric="cosine") as remote:
        remote.upsert(RECORDS)
    try:
        args = [
            f"pg={stores['pgvector']}",
            f"chroma={http_url}",
            f"s3={stores['s3vectors']}",
            "--sample", "15", "--k", "10", "--warmup", "3",
            "--filter", "null", "--filter", '{"lang": "en"}', "--filter", '{"stars": {"$lt": 3}}',
            "--output", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"),
        ]  # fmt: skip
        env = {**os.environ, "COLUMNS": "200"}
        cmd = [sys.executable, "-m", "vectorport", "compare", *args]
        ok = subprocess.run(
            [*cmd, "--min-recall", "0.9", "--max-violations", "0"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert ok.returncode == 0, ok.stdout + ok.stderr
        assert "recall@10" in ok.stdout and "per filter" in ok.stdout
        data = json.loads((tmp_path / "r.json").read_text())
        assert [s["label"] for s in data["stores"]] == ["pg", "chroma", "s3"]
        assert data["config"]["truth"]["source"].startswith("pgvector://")
        assert "<svg" in (tmp_path / "r.html").read_text()
        # an impossible gate: exit 1, the gate named
        bad = subprocess.run(
            [*cmd, "--min-recall", "1.01"], capture_output=True, text=True, env=env, timeout=300
        )
        assert bad.returncode == 1, bad.stdout + bad.stderr
        assert "gate failed: min-recall FAILED" in bad.stderr
    finally:
        with vectorport.connect(http_url) as remote:
            remote.drop()
