# ruff: noqa: E501  (the cases are a table: one per line)
"""Over a hundred bad invocations and environments, across every command, in one table: wrong
URLs, unknown flags and values of the wrong type or range, missing and unwritable files, hostile
identifiers, malformed, deep and huge filters, servers that do not answer, wrong dimensions and
embedders, unset keys and bad profiles. Each ends in one ``error:`` line on stderr (no traceback,
no secret) and the exit code ``docs/exit-codes.md`` documents (2: a bad URL, option, file or
environment; 3: a backend that does not answer; 4: a refused migration plan), and writes
nothing: no collection appears and no file is left in the workspace. All run in this process."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.snapshot import export
from vectorport.testing import clustered_records

pytestmark = [pytest.mark.memory, pytest.mark.parquet]

DEAD = "http://127.0.0.1:9"  # the discard port: nothing answers
S3 = "s3vectors://bucket-a/index"
PG_DEAD = "postgresql://u@127.0.0.1:9/db?table=t&connect_timeout=1"
DEEP = '{"a": ' * 2000 + "1" + "}" * 2000  # deeper than Python's JSON parser recurses

CASES: list[tuple[str, list[str], dict[str, str], int, str | None]] = [
    ("unknown scheme: info", ["info", "bogus://x"], {}, 2, None),
    ("missing collection: info", ["info", "memory://sweep-missing"], {}, 2, None),
    ("unknown scheme: migrate", ["migrate", "bogus://x", "memory://sweep-y"], {}, 2, None),
    ("missing source: verify", ["verify", "memory://sweep-missing", "memory://sweep-src"], {}, 2, None),
    ("unknown scheme: sync", ["sync", "bogus://x", "memory://sweep-y", "--state", "{tmp}/st"], {}, 2, None),
    ("unknown scheme: compare", ["compare", "bogus://x", "--sample", "3"], {}, 2, None),
    ("unknown scheme: search", ["search", "bogus://x", "hello"], {}, 2, None),
    ("unknown scheme: doctor", ["doctor", "bogus://x"], {}, 2, None),
    ("unknown scheme: export", ["export", "bogus://x", "{tmp}/snap"], {}, 2, None),
    ("no snapshot: import", ["import", "{tmp}/nothing", "memory://sweep-imp"], {}, 2, None),
    ("no folder: ingest", ["ingest", "{tmp}/nothing", "memory://sweep-ing", "-e", "hash:8"], {}, 2, None),
    ("unknown scheme: drop", ["drop", "bogus://x", "--yes"], {}, 2, None),
    ("not pgvector: build-index", ["pgvector", "build-index", "memory://sweep-src"], {}, 2, None),
    ("unknown AWS_PROFILE: info", ["info", f"{S3}?region=us-east-1"], {"AWS_PROFILE": "nope"}, 2, None),
    ("unknown AWS_PROFILE: migrate", ["migrate", "memory://sweep-src", f"{S3}?region=us-east-1"],
     {"AWS_PROFILE": "nope"}, 2, None),
    ("unknown AWS_PROFILE: compare", ["compare", f"{S3}?region=us-east-1", "--sample", "2"],
     {"AWS_PROFILE": "nope"}, 2, None),
    ("invalid bucket name", ["info", f"s3vectors://Bad_Bucket/index?endpoint_url={DEAD}"], {}, 2, None),
    ("endpoint not a URL", ["info", f"{S3}?endpoint_url=notaurl"], {}, 2, None),
    ("bucket endpoint down", ["info", f"{S3}?endpoint_url={DEAD}"], {}, 3, None),
    ("chroma server down", ["info", "chroma+http://127.0.0.1:9?collection=docs"], {}, 3, None),
    ("postgres down", ["info", "postgresql://u@127.0.0.1:9/db?table=t&connect_timeout=2"], {}, 3, None),
    ("unset VOYAGE_API_KEY", ["ingest", "{tmp}/docs", "memory://sweep-voy", "-e", "voyage:voyage-3.5"],
     {"VOYAGE_API_KEY": ""}, 2, None),
    ("unknown embedder", ["ingest", "{tmp}/docs", "memory://sweep-emb", "-e", "nosuch:model"], {}, 2, None),
    ("no queries file", ["compare", "memory://sweep-src", "--queries", "{tmp}/none.jsonl"], {}, 2, None),
    ("filter not JSON", ["compare", "memory://sweep-src", "--sample", "3", "--filter", "{bad"], {}, 2, None),
    ("bad shard", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--shard", "nope"], {}, 2, None),
    ("unknown filter operator", ["search", "memory://sweep-src", "hi", "--filter", '{"x": {"$bogus": 1}}',
     "-e", "hash:8"], {}, 2, None),
    ("no chroma directory", ["info", "chroma://{tmp}/no-chroma?collection=docs"], {}, 2, None),
    ("supabase without a key", ["info", "supabase://abc.supabase.co/bucket-a/index"],
     {"VECTORPORT_SUPABASE_KEY": ""}, 2, None),
    ("snapshot directory not empty", ["export", "memory://sweep-src", "{tmp}/docs"], {}, 2, None),

    ("root: unknown flag", ["--nope"], {}, 2, "--nope"),
    ("root: unknown command", ["nosuch"], {}, 2, "nosuch"),
    ("backends: extra argument", ["backends", "extra"], {}, 2, "extra"),
    ("info: no URL", ["info"], {}, 2, "url"),
    ("info: empty URL", ["info", ""], {}, 2, None),
    ("info: memory default missing", ["info", "memory://"], {}, 2, None),
    ("info: chroma dir without collection", ["info", "chroma://{tmp}/no-chroma"], {}, 2, None),
    ("info: chroma hostile collection", ["info", "chroma://{tmp}/chroma-x?collection=../../etc"], {}, 2, None),
    ("info: bucket without index", ["info", f"s3vectors://bucket-a?endpoint_url={DEAD}"], {}, 2, None),
    ("info: bucket name too short", ["info", f"s3vectors://b/index?endpoint_url={DEAD}"], {}, 2, None),
    ("info: hostile index name", ["info", f"s3vectors://bucket-a/..%2F..?endpoint_url={DEAD}"], {}, 2, None),
    ("info: bad text_search", ["info", f"{S3}?endpoint_url={DEAD}&text_search=klingon"], {}, 2, "klingon"),
    ("info: parquet without dir", ["info", "parquet://"], {}, 2, None),
    ("info: parquet no snapshot", ["info", "parquet://{tmp}/nothing"], {}, 2, None),
    ("info: manifest not JSON", ["info", "parquet://{tmp}/badmanifest"], {}, 2, None),
    ("info: chroma bad port", ["info", "chroma+http://127.0.0.1:notaport/docs"], {}, 2, None),
    ("info: postgres without table", ["info", "postgresql://u@127.0.0.1:9/db?connect_timeout=1"], {}, 2, None),
    ("info: postgres hostile table", ["info", 'postgresql://u@127.0.0.1:9/db?table=a%22%3Bdrop&connect_timeout=1'], {}, 3, None),
    ("info: no region", ["info", S3], {"AWS_REGION": "", "AWS_DEFAULT_REGION": ""}, 2, None),
    ("info: bad AWS_ENDPOINT_URL_S3VECTORS", ["info", f"{S3}?region=us-east-1"], {"AWS_ENDPOINT_URL_S3VECTORS": "notaurl"}, 2, None),
    ("compare: no URLs", ["compare"], {}, 2, None),
    ("compare: k zero", ["compare", "memory://sweep-src", "-k", "0"], {}, 2, None),
    ("compare: negative sample", ["compare", "memory://sweep-src", "--sample", "-1"], {}, 2, None),
    ("compare: recall above 1", ["compare", "memory://sweep-src", "--sample", "3", "--min-recall", "1.5"], {}, 2, None),
    ("compare: filter is a list", ["compare", "memory://sweep-src", "--sample", "3", "--filter", "[]"], {}, 2, None),
    ("compare: empty $and", ["compare", "memory://sweep-src", "--sample", "3", "--filter", '{"$and": []}'], {}, 2, None),
    ("compare: deeply nested filter", ["compare", "memory://sweep-src", "--sample", "3", "--filter", DEEP], {}, 2, None),
    ("compare: queries not JSON", ["compare", "memory://sweep-src", "--queries", "{tmp}/bad.jsonl"], {}, 2, None),
    ("compare: queries empty", ["compare", "memory://sweep-src", "--queries", "{tmp}/empty.jsonl"], {}, 2, None),
    ("compare: unknown embedder", ["compare", "memory://sweep-src", "--queries", "{tmp}/q.jsonl", "-e", "nosuch:x"], {}, 2, None),
    ("compare: unknown mode", ["compare", "memory://sweep-src", "--sample", "3", "--mode", "bogus"], {}, 2, None),
    ("compare: weight above 1", ["compare", "memory://sweep-src", "--queries", "{tmp}/q.jsonl", "--mode", "vector,hybrid", "--weight", "2"], {}, 2, None),
    ("compare: unwritable output", ["compare", "memory://sweep-src", "--sample", "3", "--output", "/proc/nope/x.html"], {}, 2, None),
    ("compare: params not JSON", ["compare", "memory://sweep-src", "--sample", "3", "--params", "notjson"], {}, 2, None),
    ("compare: unknown truth", ["compare", "memory://sweep-src", "--sample", "3", "--truth", "nosuch"], {}, 2, None),
    ("compare: one store missing", ["compare", "memory://sweep-src", "memory://sweep-missing", "--sample", "3"], {}, 2, None),
    ("compare: dimension differs", ["compare", "memory://sweep-src", "memory://sweep-dim3", "--sample", "3"], {}, 2, None),
    ("doctor: missing collection", ["doctor", "memory://sweep-missing"], {}, 2, None),
    ("doctor: no source root", ["doctor", "memory://sweep-src", "--no-embedder", "--source-root", "{tmp}/nothing"], {}, 2, None),
    ("doctor: no canaries file", ["doctor", "memory://sweep-src", "--canaries", "{tmp}/nothing.json"], {}, 2, None),
    ("doctor: unknown embedder", ["doctor", "memory://sweep-src", "-e", "nosuch:x"], {}, 2, None),
    ("drop: missing collection", ["drop", "memory://sweep-missing", "--yes"], {}, 2, None),
    ("drop: no URL", ["drop"], {}, 2, None),
    ("drop: pinned snapshot", ["drop", "parquet://{tmp}/snap?expect_digest={snap_digest}", "--yes"], {}, 2, "read-only"),
    ("ingest: zero target tokens", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:8", "--target-tokens", "0"], {}, 2, None),
    ("ingest: unknown metric", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:8", "--metric", "manhattan"], {}, 2, None),
    ("ingest: hash dimension 0", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:0"], {}, 2, None),
    ("ingest: hash dimension not a number", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:abc"], {}, 2, None),
    ("ingest: wrong dimension", ["ingest", "{tmp}/docs", "memory://sweep-src", "-e", "hash:16"], {}, 2, None),
    ("ingest: batch size 0", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:8", "--batch-size", "0"], {}, 2, None),
    ("ingest: unset OPENAI_API_KEY", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "openai:text-embedding-3-small"], {"OPENAI_API_KEY": ""}, 2, None),
    ("migrate: onto itself", ["migrate", "memory://sweep-src", "memory://sweep-src"], {}, 2, None),
    ("migrate: batch size 0", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--batch-size", "0"], {}, 2, None),
    ("migrate: batch size not a number", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--batch-size", "many"], {}, 2, None),
    ("migrate: concurrency 0", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--concurrency", "0"], {}, 2, None),
    ("migrate: unknown policy", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--metadata-policy", "bogus"], {}, 2, None),
    ("migrate: resume without a checkpoint", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--resume", "--checkpoint", "{tmp}/no-checkpoint.json"], {}, 2, "--resume, but there is no checkpoint at"),
    ("migrate: resume, no run to resume", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--resume"], {}, 2, "or run without --resume to start from the beginning"),
    ("migrate: corrupt checkpoint", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--resume", "--checkpoint", "{tmp}/corrupt.json"], {}, 2, None),
    ("migrate: unknown reembed model", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--reembed", "nosuch:x"], {}, 2, None),
    ("migrate: shard out of range", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--shard", "4/4"], {}, 2, None),
    ("migrate: unknown engine", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--engine", "bogus"], {}, 2, None),
    ("migrate: zero workers", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--engine", "ray", "--workers", "0"], {}, 2, None),
    ("migrate: k zero", ["migrate", "memory://sweep-src", "memory://sweep-dst", "-k", "0"], {}, 2, None),
    ("migrate: unknown progress", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--progress", "loud"], {}, 2, None),
    ("migrate: wrong dimension target", ["migrate", "memory://sweep-src", "memory://sweep-dim3"], {}, 4, None),
    ("migrate: bucket endpoint down", ["migrate", "memory://sweep-src", f"{S3}?endpoint_url={DEAD}&region=us-east-1"], {}, 3, None),
    ("migrate: postgres down", ["migrate", "memory://sweep-src", PG_DEAD], {}, 3, None),
    ("migrate: unwritable state dir", ["migrate", "memory://sweep-src", "memory://sweep-dst"], {"VECTORPORT_STATE_DIR": "/proc/nope"}, 2, None),
    ("verify: target missing", ["verify", "memory://sweep-src", "memory://sweep-missing"], {}, 2, None),
    ("verify: bad shard", ["verify", "memory://sweep-src", "memory://sweep-src", "--shard", "1/0"], {}, 2, None),
    ("verify: digest for no snapshot", ["verify", "memory://sweep-src", "memory://sweep-src", "--expect-digest", "sha256:" + "0" * 64], {}, 2, None),
    ("search: empty text", ["search", "memory://sweep-src", "", "-e", "hash:8"], {}, 2, None),
    ("search: k zero", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "-k", "0"], {}, 2, None),
    ("search: unknown mode", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--mode", "bogus"], {}, 2, None),
    ("search: $in takes a list", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--filter", '{"a": {"$in": 5}}'], {}, 2, None),
    ("search: min score not a number", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--min-score", "abc"], {}, 2, None),
    ("search: wrong dimension embedder", ["search", "memory://sweep-src", "hi", "-e", "hash:16"], {}, 2, None),
    ("search: unset VOYAGE_API_KEY", ["search", "memory://sweep-src", "hi", "-e", "voyage:voyage-3.5@8"], {"VOYAGE_API_KEY": ""}, 2, "VOYAGE_API_KEY"),
    ("search: weight above 1", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--mode", "hybrid", "--weight", "5"], {}, 2, None),
    ("export: missing source", ["export", "memory://sweep-missing", "{tmp}/snap2"], {}, 2, None),
    ("export: part size 0", ["export", "memory://sweep-src", "{tmp}/snap2", "--part-mb", "0"], {}, 2, None),
    ("export: into a file", ["export", "memory://sweep-src", "{tmp}/docs/a.md"], {}, 2, None),
    ("import: not a snapshot", ["import", "{tmp}/docs", "memory://sweep-imp"], {}, 2, None),
    ("import: manifest not JSON", ["import", "{tmp}/badmanifest", "memory://sweep-imp"], {}, 2, None),
    ("import: digest not hex", ["import", "{tmp}/snap", "memory://sweep-imp", "--expect-digest", "xyz"], {}, 2, None),
    ("import: wrong digest", ["import", "{tmp}/snap", "memory://sweep-imp", "--expect-digest", "sha256:" + "0" * 64], {}, 2, None),
    # pinned: an unpinned import also warns that nothing pinned it (one more stderr line)
    ("import: into wrong dimension", ["import", "{tmp}/snap", "memory://sweep-dim3", "--expect-digest", "{snap_digest}"], {}, 4, None),
    ("sync: no target", ["sync", "memory://sweep-src"], {}, 2, None),
    ("sync: bad every", ["sync", "memory://sweep-src", "memory://sweep-dst", "--every", "nonsense"], {}, 2, None),
    ("sync: follow with every", ["sync", "memory://sweep-src", "memory://sweep-dst", "--follow", "--every", "5m"], {}, 2, None),
    ("sync: unknown capture", ["sync", "memory://sweep-src", "--setup-capture", "--capture", "bogus"], {}, 2, None),
    ("sync: memory cannot capture", ["sync", "memory://sweep-src", "--setup-capture"], {}, 2, None),
    ("sync: corrupt state", ["sync", "memory://sweep-src", "memory://sweep-dst", "--state", "{tmp}/corrupt.json"], {}, 2, None),
    ("sync: zero runs", ["sync", "memory://sweep-src", "memory://sweep-dst", "--every", "1s", "--runs", "0"], {}, 2, None),
    ("bucket serve: unusable data dir", ["bucket", "serve", "--data", "/proc/nope", "--port", "0"], {}, 2, None),
    ("bucket serve: port out of range", ["bucket", "serve", "--data", "{tmp}/bk", "--port", "99999"], {}, 2, None),
    ("bucket serve: top-k 0", ["bucket", "serve", "--data", "{tmp}/bk", "--max-top-k", "0"], {}, 2, None),
    ("bucket serve: throttle fraction 2", ["bucket", "serve", "--data", "{tmp}/bk", "--throttle-fraction", "2"], {}, 2, None),
    ("pgvector schema: no table", ["pgvector", "schema", "--dim", "3"], {}, 2, None),
    ("pgvector schema: dim 0", ["pgvector", "schema", "--table", "t", "--dim", "0"], {}, 2, None),
    ("pgvector schema: unknown metric", ["pgvector", "schema", "--table", "t", "--dim", "3", "--metric", "manhattan"], {}, 2, None),
    ("pgvector schema: unknown index", ["pgvector", "schema", "--table", "t", "--dim", "3", "--index", "bogus"], {}, 2, None),
    ("pgvector schema: NUL in table", ["pgvector", "schema", "--table", "a\x00b", "--dim", "3"], {}, 2, None),
    ("pgvector schema: unknown language", ["pgvector", "schema", "--table", "t", "--dim", "3", "--language", "klingon;drop"], {}, 2, None),
    ("pgvector stop: empty directory", ["pgvector", "stop", "{tmp}/empty"], {}, 2, "is not a PostgreSQL data directory (it holds no PG_VERSION): no embedded server runs there"),
    ("pgvector stop: no directory", ["pgvector", "stop", "{tmp}/no-pgdata"], {}, 2, "no-pgdata does not exist: no embedded server runs there"),
    ("pgvector start: unusable dir", ["pgvector", "start", "/proc/nope"], {}, 2, None),
    ("pgvector build-index: postgres down", ["pgvector", "build-index", PG_DEAD], {}, 3, None),
    ("search: filter 40 levels deep", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--filter", '{"$not": ' * 40 + '{"a": 1}' + "}" * 40], {}, 2, "nested"),
    ("search: filter of a million values", ["search", "memory://sweep-src", "hi", "-e", "hash:8", "--filter", '{"a": {"$in": [' + ",".join(["1"] * 1_000_001) + "]}}"], {}, 2, "split it"),
    ("verify: unknown policy", ["verify", "memory://sweep-src", "memory://sweep-src", "--metadata-policy", "bogus"], {}, 2, None),
    ("export: zero workers", ["export", "memory://sweep-src", "{tmp}/snap3", "--engine", "ray", "--workers", "0"], {}, 2, None),
    ("compare: negative max missing", ["compare", "memory://sweep-src", "--sample", "3", "--max-missing", "-1"], {}, 2, None),
    ("compare: mode without queries", ["compare", "memory://sweep-src", "--mode", "vector"], {}, 2, None),
    ("compare: unwritable markdown", ["compare", "memory://sweep-src", "--sample", "3", "--markdown", "/proc/nope/x.md"], {}, 2, None),
    ("doctor: unknown check", ["doctor", "memory://sweep-src", "--skip", "bogus"], {}, 2, None),
    ("sync: unknown policy", ["sync", "memory://sweep-src", "memory://sweep-dst", "--metadata-policy", "bogus"], {}, 2, None),
    ("sync: teardown on memory", ["sync", "memory://sweep-src", "--teardown-capture"], {}, 2, None),
    ("sync: unwritable report", ["sync", "memory://sweep-src", "memory://sweep-dst", "--report", "/proc/nope/r.json"], {}, 2, None),
    ("pgvector schema: m zero", ["pgvector", "schema", "--table", "t", "--dim", "3", "--m", "0"], {}, 2, None),
    ("info: NUL in collection", ["info", "memory://a\x00b"], {}, 2, None),
    ("info: postgres password masked", ["info", "postgresql://u:SECRET@127.0.0.1:9/db?table=t&connect_timeout=1"], {}, 3, None),
    ("migrate: report is a directory", ["migrate", "memory://sweep-src", "memory://sweep-dst2", "--report", "{tmp}"], {}, 2, None),
    ("ingest: empty folder", ["ingest", "{tmp}/empty", "memory://sweep-ing", "-e", "hash:8"], {}, 2, "nothing to ingest in"),
    ("ingest: no readable file", ["ingest", "{tmp}/pictures", "memory://sweep-ing", "-e", "hash:8"], {}, 2, "of a type vectorport reads (.eml, .htm, .html"),
    ("ingest: globs match nothing", ["ingest", "{tmp}/docs", "memory://sweep-ing", "-e", "hash:8", "--include", "*.pdf"], {}, 2, "matching the include/exclude patterns"),
    ("unknown URL parameter: memory target", ["migrate", "memory://sweep-src", "memory://sweep-dst?colection=docs"], {}, 2, "unknown memory URL parameter 'colection' (did you mean 'collection'?) in memory://sweep-dst?colection=docs; known: collection"),
    ("unknown URL parameter: memory source", ["info", "memory://sweep-src?bogus=1"], {}, 2, "unknown memory URL parameter 'bogus' in"),
    ("unknown URL parameter: ingest target", ["ingest", "{tmp}/docs", "memory://sweep-ing?dimension=8", "-e", "hash:8"], {}, 2, "unknown memory URL parameter 'dimension'"),
    ("unknown URL parameter: parquet", ["info", "parquet://{tmp}/snap?digest=sha256:00"], {}, 2, "unknown parquet URL parameter 'digest' (did you mean 'expect_digest'?)"),
    ("unknown URL parameter: chroma", ["info", "chroma://{tmp}/no-chroma?collection=docs&tenant=t"], {}, 2, "unknown chroma URL parameter 'tenant' in"),
    ("unknown URL parameter: chroma server", ["info", "chroma+http://127.0.0.1:9?collection=docs&databse=d"], {}, 2, "'databse' (did you mean 'database'?)"),
    ("unknown URL parameter: bucket", ["info", f"{S3}?endpoint_url={DEAD}&regoin=us-east-1"], {}, 2, "unknown s3vectors URL parameter 'regoin' (did you mean 'region'?)"),
    ("unknown URL parameter: supabase", ["info", "supabase://abc.supabase.co/bucket-a/index?key=k&profile=p"], {}, 2, "unknown s3vectors URL parameter 'profile'"),
    ("unknown URL parameter: pgvector", ["info", "pgvector://{tmp}/pgdata?table=t&ef_serach=80"], {}, 2, "'ef_serach' (did you mean 'ef_search'?)"),
    ("unknown URL parameter: postgres", ["info", "postgresql://u@127.0.0.1:9/db?table=t&conect_timeout=1"], {}, 2, "'conect_timeout' (did you mean 'connect_timeout'?)"),
]  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "docs").mkdir()
    (tmp / "docs" / "a.md").write_text("# A\n\nSome text.\n")
    (tmp / "empty").mkdir()
    (tmp / "pictures").mkdir()
    (tmp / "pictures" / "a.png").write_bytes(b"\x89PNG\r\n")
    (tmp / "bad.jsonl").write_text("{not json\n")
    (tmp / "empty.jsonl").write_text("")
    (tmp / "q.jsonl").write_text(json.dumps({"text": "some text", "relevant": ["a.md#0"]}) + "\n")
    (tmp / "corrupt.json").write_text("garbage\x00")
    (tmp / "badmanifest").mkdir()
    (tmp / "badmanifest" / "_manifest.json").write_text("{nope")
    store = vectorport.connect("memory://sweep-src", dimension=8)
    store.upsert(clustered_records(50, 8))
    small = vectorport.connect("memory://sweep-dim3", dimension=3)
    export("memory://sweep-src", tmp / "snap", verify=False)
    yield tmp
    store.drop()
    small.drop()


def test_at_least_a_hundred_distinct_cases() -> None:
    assert len(CASES) >= 100
    assert len({c[0] for c in CASES}) == len(CASES)
    assert len({(tuple(c[1]), tuple(sorted(c[2].items()))) for c in CASES}) == len(CASES)


def _state(workspace: Path) -> tuple[set[str], set[str]]:
    """The memory collections and the workspace's files: what a refused command must not change."""
    files = {str(p.relative_to(workspace)) for p in workspace.rglob("*") if not p.is_dir()}
    return set(vectorport.connect("memory://sweep-src").list_collections()), files


@pytest.mark.parametrize(("args", "env", "code", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_line_no_traceback_documented_code_nothing_written(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    code: int,
    needle: str | None,
) -> None:
    monkeypatch.setenv("VECTORPORT_STATE_DIR", str(workspace / "state"))
    for name in (
        "AWS_PROFILE",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "VOYAGE_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(workspace / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(workspace / "no-aws-credentials"))
    for name, value in env.items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
    # the digest export printed for {tmp}/snap: the SHA-256 of its manifest
    pinned = "sha256:" + hashlib.sha256((workspace / "snap" / "_manifest.json").read_bytes()).hexdigest()
    argv = [a.replace("{tmp}", str(workspace)).replace("{snap_digest}", pinned) for a in args]
    before = _state(workspace)
    res = CliRunner().invoke(app, argv)
    assert isinstance(res.exception, SystemExit), f"traceback: {res.exception!r}\n{res.output}"
    assert "Traceback" not in res.output and "SECRET" not in res.output
    assert res.exit_code == code, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), res.stderr
    if needle is not None:
        assert needle in lines[0], lines[0]
    assert _state(workspace) == before, "a refused command wrote something"
