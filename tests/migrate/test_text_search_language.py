"""A migration's target made by it searches text as its source does, read back through the raw
clients (boto3's ``GetIndex``, psycopg's ``pg_ts_config`` and the table's DDL): a table with full-text
search gives a new bucket index full-text search in its language (``CreateIndex``'s
``textSearchConfigurations``) unless ``text_search=false``; a bucket index analyzing a language
PostgreSQL has no text search configuration for (``ja``) is refused before any write."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import ConfigurationError, Record
from vectorport._exit import ExitCode
from vectorport.backends.s3vectors.store import TEXT_KEY
from vectorport.cli import app

pytestmark = [pytest.mark.pgvector, pytest.mark.s3vectors]

_names = itertools.count()
RECORDS = [
    Record("a", [1.0, 0.0], {"n": 1}, "los zorros corren por el bosque"),
    Record("b", [0.0, 1.0], {"n": 2}, "el perro duerme"),
]


def _unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def _client(bucket_server: Any) -> Any:
    import boto3

    return boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def _configs(bucket_server: Any, bucket: str, index: str) -> list[dict[str, str]]:
    found = _client(bucket_server).get_index(vectorBucketName=bucket, indexName=index)["index"]
    return list((found.get("metadataConfiguration") or {}).get("textSearchConfigurations") or [])


def _pg(pg_dir: Path) -> Any:
    import psycopg

    from vectorport.backends.pgvector._embedded import embedded_conninfo

    return psycopg.connect(embedded_conninfo(pg_dir), autocommit=True)


def test_a_japanese_index_into_a_new_table_is_refused_before_any_write(
    bucket_server: Any, pg_dir: Path
) -> None:
    """PostgreSQL ships no Japanese text search configuration; the plan refuses naming the
    language and ``language=``; with ``language=simple`` named, the plan says what differs."""
    bucket, index, table = "lang-src", _unique("ja"), f"ja_{next(_names)}"
    source = f"s3vectors://{bucket}/{index}?endpoint_url={bucket_server.url}"
    with vectorport.connect(source + "&text_search=ja", dimension=2) as src:
        src.upsert(RECORDS)
    with _pg(pg_dir) as conn:
        shipped = {row[0] for row in conn.execute("SELECT cfgname FROM pg_ts_config")}
        assert {"simple", "spanish", "english"} <= shipped
        assert not shipped & {"ja", "japanese"}
        with pytest.raises(ConfigurationError, match=r"'ja'.*language=simple"):
            vectorport.migrate.run(source, f"pgvector://{pg_dir}?table={table}")
        # the command line: its one-line error and the usage exit code, no traceback
        result = CliRunner().invoke(
            app, ["migrate", source, f"pgvector://{pg_dir}?table={table}", "--no-progress"]
        )
        assert result.exit_code == ExitCode.USAGE, result.output
        assert "'ja'" in result.output and "Traceback" not in result.output, result.output
        assert conn.execute("SELECT to_regclass(%s)", (table,)).fetchone() == (None,)
    chosen = vectorport.migrate.plan(source, f"pgvector://{pg_dir}?table={table}&language=simple")
    assert any("'simple'" in note and "'ja'" in note for note in chosen.notes), chosen.notes
    with vectorport.connect(source) as src:
        src.drop()


def test_a_table_with_full_text_search_gives_a_new_index_full_text_search(
    bucket_server: Any, pg_dir: Path
) -> None:
    """A Spanish table → a new index analyzing ``es`` (no option given); ``text_search=false``
    keeps it off and the plan says so; a Russian table (no analyzer) → the standard analyzer,
    and the plan says the language differs."""
    bucket = "lang-dst"
    base = f"s3vectors://{bucket}/{{}}?endpoint_url={bucket_server.url}"
    made: list[str] = []
    for language in ("spanish", "russian"):
        table = f"{language}_{next(_names)}"
        with vectorport.connect(f"pgvector://{pg_dir}?table={table}&language={language}", dimension=2) as src:
            src.upsert(RECORDS)
        made.append(f"pgvector://{pg_dir}?table={table}")
    spanish, russian = made
    es, off, ru = _unique("es"), _unique("off"), _unique("ru")
    try:
        report = vectorport.migrate.run(spanish, base.format(es))
        assert report.ok, report
        assert _configs(bucket_server, bucket, es) == [
            {"metadataKey": TEXT_KEY, "language": "es", "status": "ACTIVE"}
        ]
        assert any("'spanish'" in note for note in report.plan.notes), report.plan.notes
        report = vectorport.migrate.run(spanish, base.format(off) + "&text_search=false")
        assert report.ok, report
        assert _configs(bucket_server, bucket, off) == []
        assert any("text_search=false" in note for note in report.plan.notes), report.plan.notes
        planned = vectorport.migrate.plan(russian, base.format(ru))
        assert any("'russian'" in note and "'simple'" in note for note in planned.notes), planned.notes
        # a bucket that makes CLASSIC indexes cannot have full-text search: none is asked for
        client = _client(bucket_server)
        client.create_vector_bucket(vectorBucketName="lang-classic")
        client.put_vector_bucket_default_index_mode(
            vectorBucketName="lang-classic", defaultIndexMode="CLASSIC"
        )
        classic = f"s3vectors://lang-classic/{_unique('cl')}?endpoint_url={bucket_server.url}"
        report = vectorport.migrate.run(spanish, classic)
        assert report.ok, report
        assert _configs(bucket_server, "lang-classic", classic.split("/")[3].split("?")[0]) == []
        assert any("CLASSIC" in note for note in report.plan.notes), report.plan.notes
        with vectorport.connect(classic) as s:
            s.drop()
        client.delete_vector_bucket(vectorBucketName="lang-classic")
    finally:
        for name in (es, off):
            with vectorport.connect(base.format(name)) as s:
                s.drop()
        for url in made:
            with vectorport.connect(url) as s:
                s.drop()
