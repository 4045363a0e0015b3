"""`vectorport pgvector schema` SQL, applied to the embedded server: the RPC functions return
what the library's query returns, and vectorport adopts the table it creates."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.testing import clustered_records, query_vectors

pytestmark = pytest.mark.pgvector


@pytest.mark.parametrize("metric", ["cosine", "euclidean", "dot"])
def test_schema_sql_functions_match_library(pg_url: Callable[..., str], metric: str) -> None:
    table = f"rpc_{metric}"
    out = CliRunner().invoke(app, ["pgvector", "schema", "--table", table, "--dim", "8", "--metric", metric])
    assert out.exit_code == 0, out.output
    ddl = out.stdout
    assert f'CREATE OR REPLACE FUNCTION "public"."match_{table}"' in ddl
    assert "metadata @> filter" in ddl and "USING hnsw" in ddl and "USING gin" in ddl

    # apply the printed SQL with a plain connection, as a Supabase user would in the SQL editor
    probe = vectorport.connect(pg_url("probe_rpc"), dimension=2)
    conn, _ = probe.server.conn()  # type: ignore[attr-defined]
    conn.execute(ddl.encode())
    probe.drop()
    probe.close()

    store = vectorport.connect(pg_url(table))  # adopts the table: metric from its HNSW index
    try:
        assert store.spec.dimension == 8 and store.spec.metric.value == metric
        store.upsert(clustered_records(300, 8, clusters=6, seed=4))
        sconn, _ = store.server.conn()  # type: ignore[attr-defined]
        for q in query_vectors(5, 8, clusters=6, seed=5):
            for flt in ({}, {"lang": "en"}, {"draft": True}):
                want = store.query(q, k=7, filter=flt)
                rows = sconn.execute(
                    f"SELECT key, distance, score FROM match_{table}(%s, 7, %s::jsonb)",
                    (q, json.dumps(flt)),
                ).fetchall()
                assert [r[0] for r in rows] == want.keys
                np.testing.assert_allclose([r[1] for r in rows], [m.distance for m in want], rtol=1e-9)
                np.testing.assert_allclose([r[2] for r in rows], [m.score for m in want], rtol=1e-9)
            hyb = store.hybrid_query(q, "lorem cluster", k=5, filter={"lang": "en"}, weight=0.5)
            rows = sconn.execute(
                f"SELECT key, rrf_score, vector_rank, text_rank FROM hybrid_match_{table}"
                "(%s, %s, 5, %s::jsonb, 0.5, 0.5, 60)",
                ("lorem cluster", q, json.dumps({"lang": "en"})),
            ).fetchall()
            assert [r[0] for r in rows] == [m.key for m in hyb]
            assert [(r[2], r[3]) for r in rows] == [
                (m.extra["vector_rank"], m.extra["text_rank"]) for m in hyb
            ]
    finally:
        store.drop()
        store.close()


def test_schema_cli_refuses_bad_input() -> None:
    runner = CliRunner()
    assert (
        runner.invoke(
            app, ["pgvector", "schema", "--table", "t", "--dim", "8", "--metric", "hamming"]
        ).exit_code
        == 2
    )
    assert runner.invoke(app, ["pgvector", "schema", "--table", "t", "--dim", "5000"]).exit_code == 2
    out = runner.invoke(app, ["pgvector", "schema", "--table", "big", "--dim", "3072", "--json"])
    assert out.exit_code == 0
    assert "embedding::halfvec(3072)) halfvec_cosine_ops" in json.loads(out.stdout)["sql"]


def test_rpc_functions_answer_as_the_store_on_real_text(
    pg_url: Callable[..., str], pg_uri: str, tmp_path: Path
) -> None:
    """The three functions, created by the real ``psql -f``, called over SQL: the same keys in
    the same order, scores and ranks as ``query``, ``text_query`` and ``hybrid_query`` on the
    same rows and filter (a labelled corpus of real sentences, English stemming)."""
    from ..compare.labelled_corpus import EMBEDDER, PASSAGES, QUERIES, TOPIC

    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql is not installed")
    table = "rpc_text"
    out = CliRunner().invoke(app, ["pgvector", "schema", "--table", table, "--dim", "64"])
    assert out.exit_code == 0, out.output
    assert f'CREATE OR REPLACE FUNCTION "public"."text_match_{table}"' in out.stdout
    script = tmp_path / "schema.sql"
    script.write_text(out.stdout, encoding="utf-8")
    ran = subprocess.run(
        [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", pg_uri, "-f", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    store = vectorport.connect(pg_url(table))
    try:
        # the hashing embedder leaves many passages orthogonal to a query (distance exactly 1):
        # a little noise separates them, so which rows make the top k is not a tie
        keys = list(PASSAGES)
        noise = np.random.default_rng(7).normal(0, 0.05, (len(keys), 64))
        vectors = np.asarray(EMBEDDER.embed_documents([PASSAGES[k] for k in keys])) + noise
        store.upsert(
            vectorport.Record(k, v, {"topic": TOPIC[k]}, PASSAGES[k])
            for k, v in zip(keys, vectors, strict=True)
        )
        conn, _ = store.server.conn()  # type: ignore[attr-defined]
        texts_found = hybrid_checked = 0
        # the labelled questions, and words several passages share (more rows per answer)
        for text in [q for q, _ in QUERIES] + ["tea leaves", "bread", "moon earth", "bee", "two squares"]:
            vector = EMBEDDER.embed_query(text)
            for flt in ({}, {"topic": "tea"}, {"topic": "bees"}):
                want = store.query(vector, k=5, filter=flt)
                rows = conn.execute(
                    f"SELECT key, distance, score FROM match_{table}"
                    "(query_embedding => %s, match_count => 5, filter => %s::jsonb)",
                    (vector, json.dumps(flt)),
                ).fetchall()
                assert [r[0] for r in rows] == want.keys
                np.testing.assert_allclose([r[2] for r in rows], [m.score for m in want], rtol=1e-9)

                words = store.text_query(text, 5, filter=flt)  # type: ignore[attr-defined]
                rows = conn.execute(
                    f"SELECT key, score, text_rank, metadata, text FROM text_match_{table}"
                    "(query_text => %s, match_count => 5, filter => %s::jsonb)",
                    (text, json.dumps(flt)),
                ).fetchall()
                assert [r[0] for r in rows] == words.keys
                assert [r[1] for r in rows] == pytest.approx([m.score for m in words], rel=1e-12)
                assert [r[2] for r in rows] == [m.extra["text_rank"] for m in words]
                assert [(r[3], r[4]) for r in rows] == [(m.metadata, m.text) for m in words]
                texts_found += len(rows)

                for weight in (0.2, 0.5, 0.9):
                    fused = store.hybrid_query(  # type: ignore[attr-defined]
                        vector, text, 5, filter=flt, weight=weight, rrf_k=30
                    )
                    rows = conn.execute(
                        f"SELECT key, rrf_score, vector_rank, text_rank, distance FROM hybrid_match_{table}"
                        "(query_text => %s, query_embedding => %s, match_count => 5, filter => %s::jsonb,"
                        " semantic_weight => %s, full_text_weight => %s, rrf_k => 30)",
                        (text, vector, json.dumps(flt), weight, 1 - weight),
                    ).fetchall()
                    assert [r[0] for r in rows] == fused.keys
                    assert [r[1] for r in rows] == pytest.approx(
                        [m.extra["rrf_score"] for m in fused], rel=1e-12
                    )
                    assert [(r[2], r[3]) for r in rows] == [
                        (m.extra["vector_rank"], m.extra["text_rank"]) for m in fused
                    ]
                    np.testing.assert_allclose([r[4] for r in rows], [m.distance for m in fused], rtol=1e-9)
                    hybrid_checked += len(rows)
        # websearch parsing needs every term in one passage: some questions still find theirs
        assert texts_found >= 20 and hybrid_checked > 100
    finally:
        store.drop()
        store.close()
    count = f"SELECT count(*) FROM pg_proc WHERE proname LIKE '%match_{table}'"
    dropped = subprocess.run(
        [psql, "-X", "-qtA", "-d", pg_uri, "-c", count],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dropped.stdout.strip() == "0"  # drop() removes the three functions with the table
