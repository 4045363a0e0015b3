"""vectorport.compare on memory:// stores: figures, gates, broken doubles, outputs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import vectorport
from vectorport import ConfigurationError, UnsupportedFilterError
from vectorport.backends.memory import MemoryStore
from vectorport.compare import GateFailure, Gates, Query, Status
from vectorport.filters import FilterNode
from vectorport.testing import clustered_records

from ._doubles import DroppingStore, LeakyFilterStore, PostFilteringStore, open_double

pytestmark = pytest.mark.memory

DIM = 16
RECORDS = clustered_records(1200, DIM, clusters=8, seed=21)
FILTERS = [None, {"lang": "en"}, {"stars": {"$gte": 90}}, {"tags": {"$in": ["faq"]}, "draft": False}]
_names = itertools.count()


@pytest.fixture
def loaded() -> Iterator[str]:
    name = f"cmp-{next(_names)}"
    store = vectorport.connect(f"memory://{name}", dimension=DIM)
    store.upsert(RECORDS)
    yield name
    store.drop()


def test_identical_stores_agree_perfectly(loaded: str) -> None:
    copy = vectorport.connect(f"memory://{loaded}-copy", dimension=DIM)
    copy.upsert(RECORDS)
    try:
        result = vectorport.compare(
            [f"memory://{loaded}", copy],
            40,
            k=10,
            filter=FILTERS,
            min_recall=1.0,
            max_violations=0,
            min_overlap=1.0,
            max_underfill=0.0,
        )
    finally:
        copy.drop()
    assert result.passed, result.explain()
    assert [s.label for s in result.stores] == ["memory#1", "memory#2"]
    assert len(result.queries) == 160 and len(result.groups) == 4
    for s in result.stores:
        f = s.overall
        assert (f.recall, f.underfill, f.violations, f.wrong, f.unknown) == (1.0, 0.0, 0, 0, 0)
        assert f.distance_error_max < 1e-6 and f.distance_agreement == 1.0
        assert f.latency.count == 160 and f.latency.p50 <= f.latency.p95 <= f.latency.p99
        assert f.qps is not None and f.qps > 0
        assert set(s.by_filter) == {g.label for g in result.groups}
    pair = result.pairs[0]
    assert pair.overall.overlap == 1.0 and pair.overall.rbo == pytest.approx(1.0)
    sel = {g.label: g.selectivity for g in result.groups}
    assert sel["none"] == 1.0 and 0 < sel['{"stars": {"$gte": 90}}'] < 0.2


def test_post_filtering_store_fails_recall_and_underfill(loaded: str) -> None:
    broken = open_double(PostFilteringStore, loaded)
    result = vectorport.compare(
        {"exact": f"memory://{loaded}", "postfilter": broken},
        30,
        k=10,
        filter=FILTERS,
        min_recall=0.95,
        max_underfill=0.0,
        max_violations=0,
    )
    assert not result.passed
    failed = {(g.gate, g.subject) for g in result.failures}
    assert ("max-underfill", "postfilter") in failed and ("min-recall", "postfilter") in failed
    assert all(g.subject == "postfilter" for g in result.failures)
    # under-fill is reported apart from wrong results: the answers it gave were right
    f = result.store("postfilter").overall
    assert f.underfilled > 0 and f.shortfall > 0 and f.wrong == 0 and f.violations == 0
    assert result.store("postfilter").by_filter["none"].recall == 1.0
    # named per filter: the unfiltered group passes, a selective one fails
    per_filter = {g.filter for g in result.failures if g.gate == "min-recall"}
    assert '{"stars": {"$gte": 90}}' in per_filter and "none" not in per_filter
    with pytest.raises(GateFailure) as info:
        result.raise_for_gates()
    text = str(info.value)
    assert "max-underfill FAILED: postfilter" in text and "- docs/" in text


def test_leaky_filter_is_caught_as_violations(loaded: str) -> None:
    leaky = open_double(LeakyFilterStore, loaded)
    result = vectorport.compare(
        {"exact": f"memory://{loaded}", "leaky": leaky}, 20, k=10, filter=FILTERS[1:], max_violations=0
    )
    assert [g.gate for g in result.failures] == ["max-violations"]
    f = result.store("leaky").overall
    assert f.violations > 0 and f.violating_queries > 0 and f.underfilled == 0
    explained = result.explain()
    assert "(violation)" in explained and "metadata {" in explained


def test_dropped_record_is_caught_by_recall_and_overlap(loaded: str) -> None:
    victim = RECORDS[7]
    dropping = open_double(DroppingStore, loaded, dropped=victim.key)
    queries = [Query(victim.vector, id="victim"), *[Query(r.vector) for r in RECORDS[100:120]]]
    result = vectorport.compare(
        {"exact": f"memory://{loaded}", "dropping": dropping},
        queries,
        k=5,
        min_recall=0.999,
        min_overlap=0.999,
    )
    failed = {g.gate for g in result.failures}
    assert failed == {"min-recall", "min-overlap"}
    outcome = result.store("dropping").outcomes[0]
    assert outcome.judgement is not None and victim.key in outcome.judgement.missing_required
    assert outcome.judgement.wrong  # the gap was filled by a farther record
    assert "query victim" in result.explain()


def test_near_ties_count_as_hits() -> None:
    store = vectorport.connect("memory://cmp-ties", dimension=2, metric="euclidean")
    try:
        # four records at the same distance from the query: any two of them are a perfect top 2
        store.upsert(
            [vectorport.Record(k, v) for k, v in zip("abcd", [[1, 0], [0, 1], [-1, 0], [0, -1]], strict=True)]
        )
        reverse = open_double(_ReverseTies, "cmp-ties")
        result = vectorport.compare({"m": store, "rev": reverse}, [[0.0, 0.0]], k=2, warmup=0)
        assert result.store("rev").outcomes[0].keys == ("d", "c")
        assert result.store("rev").overall.recall == 1.0
        assert result.pairs[0].overall.overlap == 0.0  # different keys, both right
    finally:
        store.drop()


class _ReverseTies(MemoryStore):
    def _search(self, vector, k, where, include, params):  # type: ignore[no-untyped-def]
        return list(reversed(super()._search(vector, 4, where, include, params)))[:k]


class _RefusingStore(PostFilteringStore):
    def _compile_filter(self, where: FilterNode) -> FilterNode:
        raise UnsupportedFilterError("no filters here")


def test_refused_queries_are_reported_and_fail_the_answered_gate(loaded: str) -> None:
    refusing = open_double(_RefusingStore, loaded)
    result = vectorport.compare(
        {"exact": f"memory://{loaded}", "refusing": refusing},
        10,
        k=5,
        filter=[None, {"lang": "en"}],
        min_recall=0.9,
    )
    f = result.store("refusing").overall
    assert f.refused == 10 and f.answered == 10 and f.recall == 1.0
    assert [g.gate for g in result.failures] == ["answered"]
    assert result.store("refusing").outcomes[10].status is Status.REFUSED
    assert result.check(min_recall=0.9, allow_refused=True).passed


def test_relevance_metrics_and_text_queries(loaded: str) -> None:
    def embed(texts: list[str]) -> np.ndarray:
        return np.stack([RECORDS[int(t.split()[-1])].vector for t in texts])

    queries = [
        {"id": "q0", "text": "record 3", "relevant": [RECORDS[3].key]},
        {"id": "q1", "text": "record 9", "relevant": {RECORDS[9].key: 2, "no/such#key": 1}},
        {"id": "q2", "vector": RECORDS[11].vector.tolist()},  # unlabelled
    ]
    result = vectorport.compare([f"memory://{loaded}"], queries, k=5, embedder=embed, warmup=0)
    rel = result.store("memory").overall.relevance
    assert rel is not None and rel.queries == 2 and rel.mrr == 1.0 and rel.hit == 1.0
    assert 0.5 < rel.ndcg < 1.0  # q1's second relevant key does not exist
    assert result.truth_relevance == rel
    with pytest.raises(ConfigurationError, match="embedder"):
        vectorport.compare([f"memory://{loaded}"], queries, k=5)


def test_json_has_every_figure_and_masks_secrets(loaded: str, tmp_path: pytest.TempPathFactory) -> None:
    result = vectorport.compare(
        {"a": f"memory://reader:sekrit@{loaded}"}, 5, k=3, filter=[None, {"lang": "en"}], min_recall=0.5
    )
    path = result.write_json(tmp_path / "r.json")  # type: ignore[operator]
    text = path.read_text()
    assert "sekrit" not in text
    data = json.loads(text)
    assert data["schema"] == "vectorport.compare/1" and data["passed"] is True
    store = data["stores"][0]
    assert store["url"] == f"memory://reader:***@{loaded}"
    for key in ("recall", "underfill", "violations", "wrong", "distance_error_max", "latency", "qps"):
        assert key in store["overall"], key
    assert set(store["by_filter"]) == {"none", '{"lang": "en"}'}
    assert len(store["queries"]) == 10 and store["queries"][0]["status"] == "ok"
    cfg = data["config"]
    assert cfg["k"] == 3 and cfg["truth"]["records"] == len(RECORDS)
    assert cfg["stores"][0]["capabilities"]["exact"] is True and "versions" in cfg["stores"][0]
    assert cfg["stores"][0]["info"]["dimension"] == DIM
    assert {"scan", "truth", "judge", "total", "query_time_sum"} <= set(data["timings"])
    assert [g["gate"] for g in data["gate_results"]][:2] == ["max-missing", "answered"]
    assert store["records"]["count"] == len(RECORDS) and store["records"]["missing"] == 0


def test_concurrency_and_explicit_truth(loaded: str) -> None:
    truth = vectorport.connect(f"memory://{loaded}-truth", dimension=DIM)
    truth.upsert(RECORDS)
    try:
        result = vectorport.compare(
            [f"memory://{loaded}"], 50, k=10, truth=truth, concurrency=4, min_recall=1.0
        )
    finally:
        truth.drop()
    assert result.passed and result.truth.source.endswith("-truth")
    assert result.store("memory").overall.latency.count == 50


def test_bad_arguments_are_refused_before_any_query(loaded: str) -> None:
    url = f"memory://{loaded}"
    with pytest.raises(ConfigurationError, match="k must be"):
        vectorport.compare([url], 5, k=0)
    with pytest.raises(ConfigurationError, match="dimensions"):
        vectorport.compare([url], [[1.0, 2.0]], k=3)
    with pytest.raises(ConfigurationError, match="list of filters"):
        vectorport.compare([url], [RECORDS[0].vector], filter=[{"lang": "en"}, None])
    other = vectorport.connect("memory://cmp-other-dim", dimension=DIM + 1)
    try:
        with pytest.raises(ConfigurationError, match="truth"):
            vectorport.compare([url, other], 3)
    finally:
        other.drop()


def test_terminal_table_names_the_figures(loaded: str) -> None:
    broken = open_double(PostFilteringStore, loaded)
    result = vectorport.compare(
        {"exact": f"memory://{loaded}", "post": broken}, 10, k=10, filter=FILTERS[:2], max_underfill=0
    )
    text = str(result)
    for needle in (
        "recall@10",
        "under-filled",
        "violations",
        "p95 ms",
        "per filter",
        "FAIL",
        "max-underfill",
    ):
        assert needle in text, needle
    assert Gates(max_missing=None).evaluate(result) == ()


# ---------------------------------------------------------------------- the lead's acceptance tests
LEAD_FILTERS = [None, {"cluster": 2}, {"lang": "en", "stars": {"$gte": 50}}]


def _load(store: vectorport.BaseStore) -> vectorport.BaseStore:
    store.bind(16, "cosine")
    store.upsert(clustered_records(2000, 16, clusters=8, seed=3))
    return store


@pytest.fixture
def stores() -> Iterator[dict[str, vectorport.BaseStore]]:
    made = {
        "exact": _load(MemoryStore(vectorport.StoreURL.parse("memory://cmp-exact"), "cmp-exact")),
        "postfilter": _load(PostFilteringStore(vectorport.StoreURL.parse("memory://cmp-pf"), "cmp-pf")),
        "leaky": _load(LeakyFilterStore(vectorport.StoreURL.parse("memory://cmp-leaky"), "cmp-leaky")),
    }
    yield made
    for store in made.values():
        store.drop()


def test_gates_catch_post_filtering_and_leaks(
    stores: dict[str, vectorport.BaseStore], tmp_path: Path
) -> None:
    result = vectorport.compare(
        stores, 40, k=10, filter=LEAD_FILTERS, min_recall=0.95, max_violations=0, max_underfill=0.0, warmup=2
    )
    exact, post, leaky = (result.store(label) for label in ("exact", "postfilter", "leaky"))
    assert exact.overall.recall == pytest.approx(1.0)
    assert post.overall.recall < 0.6  # under-filled answers from the wrong scope
    assert leaky.overall.violations > 0
    assert not result.passed
    failed = {(g.subject, g.gate) for g in result.failures}
    assert ("postfilter", "min-recall") in failed and ("postfilter", "max-underfill") in failed
    assert ("leaky", "max-violations") in failed
    assert not any(subject == "exact" for subject, _ in failed)
    text = result.explain()
    assert "postfilter" in text and "leaky" in text
    with pytest.raises(Exception, match="min-recall"):
        result.raise_for_gates()

    data = json.loads(result.to_json())
    assert {s["label"] for s in data["stores"]} == {"exact", "postfilter", "leaky"}
    html = result.write_html(tmp_path / "report.html").read_text()
    assert (
        html.count("<svg") >= 2 and "postfilter" in html and "http" not in html.split("<body", 1)[0].lower()
    )


def test_exact_stores_pass_every_gate(stores: dict[str, vectorport.BaseStore]) -> None:
    result = vectorport.compare(
        {"a": stores["exact"], "b": "memory://cmp-exact"},
        30,
        k=5,
        filter=LEAD_FILTERS,
        min_recall=1.0,
        max_violations=0,
        min_overlap=1.0,
        max_underfill=0.0,
        warmup=1,
    )
    assert result.passed, result.explain()
    (pair,) = result.pairs
    assert pair.overall.overlap == pytest.approx(1.0)


def test_bad_query_files_name_the_line(loaded: str, tmp_path: Path) -> None:
    from vectorport import FilterError
    from vectorport.compare import load_queries

    good = json.dumps({"vector": RECORDS[0].vector.tolist(), "id": "first"})
    cases = {
        '{"vector": [1.0, 2.0], "id": "short"}': (
            ConfigurationError,
            r"q\.jsonl:3 \(short\) has 2 dimensions",
        ),
        '{"vector": [1.0], "filter": {"a": {"$foo": 1}}}': (FilterError, r"\$foo.*query at .*q\.jsonl:3"),
        '{"vector": [1.0], "lang": "en"}': (ConfigurationError, r"q\.jsonl:3: unknown field"),
        "[1.0, 2.0]": (ConfigurationError, r"q\.jsonl:3: expected a JSON object"),
        "{oops": (ConfigurationError, r"q\.jsonl:3: not JSON"),
    }
    for line, (error, message) in cases.items():
        path = tmp_path / "q.jsonl"
        path.write_text(f"{good}\n\n{line}\n")
        with pytest.raises(error, match=message):
            vectorport.compare([f"memory://{loaded}"], load_queries(path), k=3)
