"""Gates about data: a store that lost records fails whatever its recall, the report counts every
store's records and calls the lost ones missing; ``assert_same`` catches one changed value."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.compare import GateFailure, Gates
from vectorport.testing import clustered_records
from vectorport.testing.plugin import DataMismatch, assert_parity, assert_same

from ._doubles import FailingStore, open_double

pytestmark = pytest.mark.memory

DIM = 8
RECORDS = clustered_records(400, DIM, clusters=4, seed=11)


@pytest.fixture
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[str, str, list[str]]]:
    """A source and a target that lost ``request.param`` records."""
    lost = int(request.param)
    name = f"miss-{lost}"
    src = vectorport.connect(f"memory://{name}-src", dimension=DIM)
    dst = vectorport.connect(f"memory://{name}-dst", dimension=DIM)
    src.upsert(RECORDS)
    dst.upsert(RECORDS)
    gone = [r.key for r in RECORDS[::7][:lost]]
    dst.delete(gone)
    yield f"memory://{name}-src", f"memory://{name}-dst", gone
    src.drop()
    dst.drop()


@pytest.mark.parametrize("pair", [20, 1], indirect=True, ids=["5pct", "one"])
@pytest.mark.parametrize("min_recall", [None, 0.0, 0.9])
def test_a_target_missing_records_fails_at_any_min_recall(
    pair: tuple[str, str, list[str]], min_recall: float | None
) -> None:
    src, dst, gone = pair
    result = vectorport.compare({"src": src, "dst": dst}, 30, k=10, min_recall=min_recall, warmup=0)
    assert not result.passed
    failed = [g for g in result.failures if g.gate == "max-missing"]
    assert [g.subject for g in failed] == ["dst"]
    assert failed[0].value == len(gone)
    message = failed[0].message
    assert gone[0] in message and "missing" in message
    records = {s.label: s.records for s in result.stores}
    assert records["src"] is not None and records["src"].count == len(RECORDS)
    assert records["dst"] is not None and records["dst"].count == len(RECORDS) - len(gone)
    assert records["dst"].missing == len(gone)
    text = result.explain()
    assert "(wrong)" not in text
    with pytest.raises(GateFailure, match="max-missing"):
        assert_parity({"src": src, "dst": dst}, 10, k=5, min_recall=0.0)
    assert result.check(min_recall=min_recall, max_missing=len(gone)).passed


@pytest.mark.parametrize("pair", [20], indirect=True)
def test_the_diff_calls_lost_records_missing(pair: tuple[str, str, list[str]]) -> None:
    src, dst, gone = pair
    queries = [r.vector for r in RECORDS if r.key in set(gone[:3])]
    result = vectorport.compare({"src": src, "dst": dst}, queries, k=5, min_recall=0.99, warmup=0)
    text = result.explain()
    assert "missing: the store does not hold this record" in text
    assert "in place of a missing record" in text and "(wrong)" not in text
    assert any(g in text for g in gone[:3])


@pytest.mark.parametrize("pair", [20], indirect=True)
def test_the_cli_fails_and_counts_records(pair: tuple[str, str, list[str]], tmp_path: Path) -> None:
    src, dst, gone = pair
    out_json = tmp_path / "r.json"
    result = CliRunner().invoke(
        app,
        ["compare", src, dst, "--sample", "10", "--filter", "null", "--filter", '{"lang": "en"}',
         "--min-recall", "0", "--output", str(out_json), "--report", str(tmp_path / "r.html")],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    err = " ".join(result.stderr.split())
    assert "max-missing FAILED: memory#2" in err and gone[0] in err
    assert "records" in result.stdout and str(len(RECORDS) - len(gone)) in result.stdout
    data = json.loads(out_json.read_text())
    assert [s["records"]["count"] for s in data["stores"]] == [len(RECORDS), len(RECORDS) - len(gone)]
    assert data["stores"][1]["records"]["missing"] == len(gone)
    page = (tmp_path / "r.html").read_text()
    assert str(len(RECORDS) - len(gone)) in page and "missing" in page


def test_filter_labels_survive_in_gate_lines() -> None:
    store = vectorport.connect("memory://miss-labels", dimension=DIM)
    store.upsert(RECORDS)
    half = vectorport.connect("memory://miss-labels-half", dimension=DIM)
    half.upsert(RECORDS[::2])  # a store lacking records: its recall gate fails per filter
    try:
        result = CliRunner().invoke(
            app,
            ["compare", "memory://miss-labels", "memory://miss-labels-half", "--sample", "4",
             "--filter", '{"lang": "en"}', "--filter", "null", "--min-recall", "1.0"],
        )  # fmt: skip
    finally:
        store.drop()
        half.drop()
    assert result.exit_code == 1
    assert '[filter {"lang": "en"}]' in " ".join(result.stderr.split())


def test_a_compare_where_every_query_failed_does_not_pass() -> None:
    store = vectorport.connect("memory://miss-failing", dimension=DIM)
    store.upsert(RECORDS)
    try:
        failing = open_double(FailingStore, "miss-failing")
        gates = Gates(allow_refused=True)
        result = vectorport.compare({"down": failing}, 5, k=3, warmup=0, truth=store, gates=gates)
    finally:
        store.drop()
    assert not result.passed
    assert [g.gate for g in result.failures] == ["answered"]


def test_assert_same_fails_on_one_changed_metadata_value() -> None:
    a = vectorport.connect("memory://same-a", dimension=DIM)
    b = vectorport.connect("memory://same-b", dimension=DIM)
    try:
        a.upsert(RECORDS[:50])
        b.upsert(RECORDS[:50])
        assert assert_same("memory://same-a", "memory://same-b").ok
        changed = RECORDS[7]
        edited = {**changed.metadata, "lang": "xx"}
        b.upsert([vectorport.Record(changed.key, changed.vector, edited, changed.text)])
        with pytest.raises(DataMismatch) as info:
            assert_same("memory://same-a", "memory://same-b")
        text = str(info.value)
        assert "metadata differences: 1" in text and changed.key in text and "metadata" in text
    finally:
        a.drop()
        b.drop()


@pytest.mark.parametrize("pair", [1], indirect=True)
def test_a_failed_gate_whose_queries_all_found_the_truth_prints_no_empty_header(
    pair: tuple[str, str, list[str]],
) -> None:
    """The one lost record is no query's answer: recall 1.0, the records gate fails, and the
    explanation says no query differs instead of a "worst queries" header over nothing."""
    src, dst, gone = pair
    far = [r.vector for r in RECORDS if r.key not in gone][:5]
    result = vectorport.compare({"src": src, "dst": dst}, far, k=1, min_recall=1.0, warmup=0)
    assert [g.gate for g in result.failures] == ["max-missing"]
    text = result.explain()
    assert "worst queries" not in text and "no query's results differ from the exact truth" in text, text
