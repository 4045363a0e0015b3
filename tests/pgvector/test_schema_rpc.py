"""`vectorport pgvector schema` SQL, applied to the embedded server: the RPC functions return
what the library's query returns, and vectorport adopts the table it creates."""

from __future__ import annotations

import json
from collections.abc import Callable

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
    conn, _ = probe._conn()  # type: ignore[attr-defined]
    conn.execute(ddl.encode())
    probe.drop()
    probe.close()

    store = vectorport.connect(pg_url(table))  # adopts the table: metric from its HNSW index
    try:
        assert store.spec.dimension == 8 and store.spec.metric.value == metric
        store.upsert(clustered_records(300, 8, clusters=6, seed=4))
        sconn, _ = store._conn()  # type: ignore[attr-defined]
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
