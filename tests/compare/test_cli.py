"""``vectorport compare`` on memory:// stores (in process: memory collections are per process)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.testing import clustered_records

from . import _doubles

pytestmark = pytest.mark.memory

DIM = 16
RECORDS = clustered_records(600, DIM, clusters=6, seed=4)


@pytest.fixture(scope="module")
def urls() -> Iterator[tuple[str, str]]:
    a = vectorport.connect("memory://cli-a", dimension=DIM)
    b = vectorport.connect("memory://cli-b", dimension=DIM)
    a.upsert(RECORDS)
    b.upsert(RECORDS)
    yield "memory://cli-a", "memory://cli-b"
    a.drop()
    b.drop()


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["compare", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_passing_gates_exit_0_with_table_json_and_html(urls: tuple[str, str], tmp_path: Path) -> None:
    code, out, err = run(
        *urls,
        "--sample", "20",
        "--filter", "null",
        "--filter", '{"lang": "en"}',
        "--k", "5",
        "--output", str(tmp_path / "r.json"),
        "--report", str(tmp_path / "r.html"),
        "--min-recall", "1", "--max-violations", "0", "--min-overlap", "1", "--max-underfill", "0",
    )  # fmt: skip
    assert code == 0, out + err
    assert "recall@5" in out and "memory#2" in out and "per filter" in out
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["passed"] is True and len(data["stores"]) == 2 and data["config"]["queries"] == 40
    assert "<svg" in (tmp_path / "r.html").read_text()


def test_failing_gate_exits_1_names_the_gate_and_writes_markdown(
    urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the CLI opens stores by URL: serve the broken double under a scheme of its own
    from vectorport import _registry

    double = _registry.Backend("postfilter", _doubles.__name__, f"{_doubles.__name__}:PostFilteringStore")
    registered = _registry.available_backends()
    monkeypatch.setattr(_registry, "available_backends", lambda: [*registered, double])
    summary = tmp_path / "step_summary"  # GitHub's $GITHUB_STEP_SUMMARY has no suffix
    code, out, err = run(
        f"exact={urls[0]}", "broken=postfilter://cli-b",
        "--sample", "10", "--filter", '{"stars": {"$gte": 80}}', "--max-underfill", "0",
        "--markdown", str(summary), "--report", str(tmp_path / "r.md"),
    )  # fmt: skip
    assert code == 1, out + err
    assert "gate failed: max-underfill FAILED: broken" in " ".join(err.split())
    assert "worst queries" in out and "exact" in out
    md = summary.read_text()
    assert md == (tmp_path / "r.md").read_text()
    assert md.startswith("## vectorport compare: **FAILED**")
    rows = [line for line in md.splitlines() if line.startswith("| broken")]
    assert rows and "[" not in rows[0], rows  # one row per store, rich markup stripped
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    header = next(line for line in md.splitlines() if line.startswith("| store"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert len(cells) == len(columns)
    assert float(cells[columns.index("recall@10")]) < 1.0
    assert "| FAIL | max-underfill FAILED: broken" in md


def test_json_to_stdout_is_machine_readable(urls: tuple[str, str]) -> None:
    code, out, _ = run("--json", urls[0], "--sample", "5", "--k", "3")
    assert code == 0
    data = json.loads(out)
    assert data["stores"][0]["overall"]["recall"] == 1.0


def test_jsonl_queries_with_text_and_relevance(urls: tuple[str, str], tmp_path: Path) -> None:
    pytest.importorskip("vectorport.ingest")
    from vectorport.ingest.embedders import resolve_embedder

    emb = resolve_embedder(f"hash:{DIM}")
    vec = emb.embed_queries(["what is a vector"])[0]
    lines = [
        {"id": "v", "vector": RECORDS[0].vector.tolist(), "relevant": [RECORDS[0].key]},
        {"id": "t", "text": "what is a vector", "filter": {"lang": "en"}},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n\n")
    code, out, err = run(urls[0], "--queries", str(path), "--embedder", f"hash:{DIM}", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["config"]["labelled_queries"] == 1
    assert data["stores"][0]["overall"]["relevance"]["mrr"] == 1.0
    assert [q["id"] for q in data["queries"]] == ["v", "t"]
    assert vec.shape == (DIM,)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "exactly one of --queries FILE or --sample N"),
        (("--sample", "3", "--filter", "{bad"), "--filter is not valid JSON"),
        (("--sample", "3", "--filter", '{"x": {"$bogus": 1}}'), "unknown operator"),
        (("--sample", "3", "--params", "[1]"), "--params must be"),
        (("--queries", "/nonexistent.jsonl"), "cannot read queries"),
    ],
)
def test_usage_errors_exit_2(urls: tuple[str, str], args: tuple[str, ...], message: str) -> None:
    code, out, err = run(urls[0], *args)
    assert code == 2, out + err
    assert message in " ".join(err.split())


def test_text_queries_without_vectors_need_an_embedder(urls: tuple[str, str], tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"text": "hello"}\n{"vector": [1, 2]}\n')
    code, _, err = run(urls[0], "--queries", str(path), "--embedder", "hash:16")
    assert code == 2 and "2 dimensions" in err


def test_tables_are_not_truncated_in_ci_logs(urls: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A CI log is not a terminal: rich's default of 80 columns cut every figure to ``1.…``."""
    from vectorport.cli._common import LOG_WIDTH, make_console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console().width == LOG_WIDTH
    monkeypatch.setenv("COLUMNS", "100")
    assert make_console().width == 100
    monkeypatch.delenv("COLUMNS")
    code, out, _ = run(*urls, "--sample", "5", "--k", "5")
    assert code == 0, out
    assert "…" not in out and "1.0000" in out


@pytest.mark.parametrize("vector", [["a", "b"], "abc", {"x": 1}, [[1, 2], [3]], [True, 1.0], []])
def test_a_bad_query_vector_is_named_by_file_and_line(
    urls: tuple[str, str], tmp_path: Path, vector: object
) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text(
        json.dumps({"id": "ok", "vector": [1.0] * DIM})
        + "\n"
        + json.dumps({"id": "bad", "vector": vector})
        + "\n"
    )
    code, _, err = run(urls[0], "--queries", str(path))
    assert code == 2, err
    assert f"{path}:2" in err and "vector" in err
