"""``compare --mode`` and :func:`compare_modes` on a labelled corpus of real text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.compare import Query, compare_modes

from .labelled_corpus import EMBEDDER, QUERIES, direct_figures, load, write_queries

runner = CliRunner()


@pytest.fixture
def memory() -> Iterator[vectorport.VectorStore]:
    store = vectorport.connect("memory://compare-modes", dimension=64, embedding_model=EMBEDDER.model_id)
    load(store)
    yield store
    store.drop()


def test_figures_match_a_direct_computation(memory: vectorport.VectorStore, tmp_path: Path) -> None:
    queries = [Query(text=t, relevant=r) for t, r in QUERIES]
    out = compare_modes({"mem": memory}, queries, 5, weights=[0.3, 0.7], embedder=EMBEDDER)
    assert [r.label for r in out.rows] == ["vector", "text", "hybrid w=0.3", "hybrid w=0.7"]
    for row in out.rows:
        want = direct_figures(memory, row.mode, 5, row.weight or 0.5)
        assert (row.hit_at_1, row.mrr, row.ndcg) == pytest.approx(want)
        assert row.queries == len(QUERIES)
    text = out.rows[1]
    assert text.hit_at_1 == 1.0  # every query shares words with its passage
    assert out.rows[0].hit_at_1 < 1.0  # a hashing embedder is a weak retriever
    # the threshold keeps at least 90 % of the relevant results returned
    for row in out.rows:
        kept = sum(s >= row.threshold for s in row.relevant_scores)
        assert kept >= 0.9 * len(row.relevant_scores)
        assert row.threshold == max(
            t
            for t in row.relevant_scores
            if sum(s >= t for s in row.relevant_scores) >= 0.9 * len(row.relevant_scores)
        )


def test_cli_mode_table_and_refusal(memory: vectorport.VectorStore, tmp_path: Path) -> None:
    qfile = write_queries(tmp_path / "q.jsonl")
    chroma = f"chroma://{tmp_path / 'c'}?collection=docs"
    other = vectorport.connect(chroma, dimension=64, embedding_model=EMBEDDER.model_id)
    load(other)
    other.close()
    result = runner.invoke(
        app,
        [
            "compare", "mem=memory://compare-modes", f"chroma={chroma}", "--queries", str(qfile),
            "--mode", "vector,text,hybrid", "--weight", "0.3,0.5,0.7", "-k", "5", "--json",
            "--markdown", str(tmp_path / "summary.md"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = {(r["store"], r["mode"], r["weight"]): r for r in data["rows"]}
    assert len(rows) == 10
    for mode, weight in [("vector", None), ("text", None), ("hybrid", 0.3), ("hybrid", 0.5), ("hybrid", 0.7)]:
        got = rows["mem", mode, weight]
        assert (got["hit_at_1"], got["mrr"], got["ndcg"]) == pytest.approx(
            direct_figures(memory, mode, 5, weight or 0.5)
        )
    assert rows["chroma", "vector", None]["refused"] is None
    assert "has no text search" in rows["chroma", "text", None]["refused"]
    assert "has no hybrid search" in rows["chroma", "hybrid", 0.5]["refused"]
    assert "| mem | hybrid w=0.7 | 12 |" in (tmp_path / "summary.md").read_text()

    result = runner.invoke(app, ["compare", "memory://compare-modes", "--mode", "text"])
    assert result.exit_code == 2
    result = runner.invoke(
        app, ["compare", "memory://compare-modes", "--queries", str(qfile), "--mode", "fuzzy"]
    )
    assert result.exit_code == 2 and "modes must be among" in result.output


def test_the_bucket_figures_equal_the_reference(
    memory: vectorport.VectorStore, bucket_server: Any, tmp_path: Path
) -> None:
    from vectorport.backends.s3vectors.store import EMBEDDING_TAG

    from ..s3vectors.conftest import boto_client, searchable_index

    # an index whose text key is full-text searchable: the local server ranks text by the
    # reference BM25, so every mode gives the memory store's figures
    tags = {EMBEDDING_TAG: EMBEDDER.model_id}
    searchable_index(boto_client(bucket_server.url), "compare-modes", "docs", 64, "cosine", tags=tags)
    url = f"s3vectors://compare-modes/docs?endpoint_url={bucket_server.url}"
    bucket = vectorport.connect(url)
    try:
        load(bucket)
        queries = [Query(text=t, relevant=r) for t, r in QUERIES]
        stores = {"mem": memory, "bucket": bucket}
        out = compare_modes(stores, queries, 5, weights=[0.3, 0.7], embedder=EMBEDDER)
        rows = {(r.store, r.label): r for r in out.rows}
        assert len(rows) == 8
        for label in ["vector", "text", "hybrid w=0.3", "hybrid w=0.7"]:
            got, want = rows["bucket", label], rows["mem", label]
            assert got.refused is None
            assert (got.hit_at_1, got.mrr, got.ndcg, got.threshold) == pytest.approx(
                (want.hit_at_1, want.mrr, want.ndcg, want.threshold)
            )
            assert (got.hit_at_1, got.mrr, got.ndcg) == pytest.approx(
                direct_figures(bucket, got.mode, 5, got.weight or 0.5)
            )
        qfile = write_queries(tmp_path / "q.jsonl")
        result = runner.invoke(
            app,
            ["compare", f"bucket={url}", "--queries", str(qfile), "--mode", "text,hybrid", "--json"],
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert [(r["mode"], r["refused"]) for r in data["rows"]] == [("text", None), ("hybrid", None)]
    finally:
        bucket.drop()
        bucket.close()
