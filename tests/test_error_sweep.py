"""30 bad environments and invocations, across the commands: each ends in one error line on
stderr (no traceback) and the exit code ``docs/exit-codes.md`` documents (2: a bad URL, option,
file or environment; 3: a backend that does not answer)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.testing import clustered_records

pytestmark = pytest.mark.memory

DEAD = "http://127.0.0.1:9"  # the discard port: nothing answers
S3 = "s3vectors://bucket-a/index"

CASES: list[tuple[str, list[str], dict[str, str], int]] = [
    ("unknown scheme: info", ["info", "bogus://x"], {}, 2),
    ("missing collection: info", ["info", "memory://sweep-missing"], {}, 2),
    ("unknown scheme: migrate", ["migrate", "bogus://x", "memory://sweep-y"], {}, 2),
    ("missing source: verify", ["verify", "memory://sweep-missing", "memory://sweep-src"], {}, 2),
    ("unknown scheme: sync", ["sync", "bogus://x", "memory://sweep-y", "--state", "{tmp}/st"], {}, 2),
    ("unknown scheme: compare", ["compare", "bogus://x", "--sample", "3"], {}, 2),
    ("unknown scheme: search", ["search", "bogus://x", "hello"], {}, 2),
    ("unknown scheme: doctor", ["doctor", "bogus://x"], {}, 2),
    ("unknown scheme: export", ["export", "bogus://x", "{tmp}/snap"], {}, 2),
    ("no snapshot: import", ["import", "{tmp}/nothing", "memory://sweep-imp"], {}, 2),
    ("no folder: ingest", ["ingest", "{tmp}/nothing", "memory://sweep-ing", "-e", "hash:8"], {}, 2),
    ("unknown scheme: drop", ["drop", "bogus://x", "--yes"], {}, 2),
    ("not pgvector: build-index", ["pgvector", "build-index", "memory://sweep-src"], {}, 2),
    ("unknown AWS_PROFILE: info", ["info", f"{S3}?region=us-east-1"], {"AWS_PROFILE": "nope"}, 2),
    ("unknown AWS_PROFILE: migrate", ["migrate", "memory://sweep-src", f"{S3}?region=us-east-1"],
     {"AWS_PROFILE": "nope"}, 2),
    ("unknown AWS_PROFILE: compare", ["compare", f"{S3}?region=us-east-1", "--sample", "2"],
     {"AWS_PROFILE": "nope"}, 2),
    ("invalid bucket name", ["info", f"s3vectors://Bad_Bucket/index?endpoint_url={DEAD}"], {}, 2),
    ("endpoint not a URL", ["info", f"{S3}?endpoint_url=notaurl"], {}, 2),
    ("bucket endpoint down", ["info", f"{S3}?endpoint_url={DEAD}"], {}, 3),
    ("chroma server down", ["info", "chroma+http://127.0.0.1:9?collection=docs"], {}, 3),
    ("postgres down", ["info", "postgresql://u@127.0.0.1:9/db?table=t&connect_timeout=2"], {}, 3),
    ("unset VOYAGE_API_KEY", ["ingest", "{tmp}/docs", "memory://sweep-voy", "-e", "voyage:voyage-3.5"],
     {"VOYAGE_API_KEY": ""}, 2),
    ("unknown embedder", ["ingest", "{tmp}/docs", "memory://sweep-emb", "-e", "nosuch:model"], {}, 2),
    ("no queries file", ["compare", "memory://sweep-src", "--queries", "{tmp}/none.jsonl"], {}, 2),
    ("filter not JSON", ["compare", "memory://sweep-src", "--sample", "3", "--filter", "{bad"], {}, 2),
    ("bad shard", ["migrate", "memory://sweep-src", "memory://sweep-dst", "--shard", "nope"], {}, 2),
    ("unknown filter operator", ["search", "memory://sweep-src", "hi", "--filter", '{"x": {"$bogus": 1}}',
     "-e", "hash:8"], {}, 2),
    ("no chroma directory", ["info", "chroma://{tmp}/no-chroma?collection=docs"], {}, 2),
    ("supabase without a key", ["info", "supabase://abc.supabase.co/bucket-a/index"],
     {"VECTORPORT_SUPABASE_KEY": ""}, 2),
    ("snapshot directory not empty", ["export", "memory://sweep-src", "{tmp}/docs"], {}, 2),
]  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("sweep")
    (tmp / "docs").mkdir()
    (tmp / "docs" / "a.md").write_text("# A\n\nSome text.\n")
    store = vectorport.connect("memory://sweep-src", dimension=8)
    store.upsert(clustered_records(50, 8))
    yield tmp
    store.drop()


def test_thirty_cases() -> None:
    assert len(CASES) == 30


@pytest.mark.parametrize(("args", "env", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_line_no_traceback_documented_code(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], env: dict[str, str], code: int
) -> None:
    monkeypatch.setenv("VECTORPORT_STATE_DIR", str(workspace / "state"))
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "VOYAGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(workspace / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(workspace / "no-aws-credentials"))
    for name, value in env.items():
        if value:
            monkeypatch.setenv(name, value)
        else:
            monkeypatch.delenv(name, raising=False)
    argv = [a.replace("{tmp}", str(workspace)) for a in args]
    res = CliRunner().invoke(app, argv)
    assert isinstance(res.exception, SystemExit), f"traceback: {res.exception!r}\n{res.output}"
    assert "Traceback" not in res.output
    assert res.exit_code == code, res.output
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "error" in lines[0].lower(), res.stderr
