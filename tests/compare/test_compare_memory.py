"""The comparison harness on the exact reference and on a deliberately broken store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import vectorport
from vectorport.backends.memory import MemoryStore
from vectorport.filters import evaluate
from vectorport.testing import clustered_records

pytestmark = pytest.mark.memory

FILTERS = [None, {"cluster": 2}, {"lang": "en", "stars": {"$gte": 50}}]


class PostFilteringStore(MemoryStore):
    """A double of a store under comparison: ranks first, filters afterwards (the classic bug)."""

    def _search(self, vector, k, where, include, params):  # type: ignore[no-untyped-def]
        ranked = super()._search(vector, k, None, include | {vectorport.Include.METADATA}, params)
        return [m for m in ranked if evaluate(where, m.metadata)]


class LeakyStore(MemoryStore):
    """A double that ignores the filter altogether: every answer can leave the scope."""

    def _search(self, vector, k, where, include, params):  # type: ignore[no-untyped-def]
        return super()._search(vector, k, None, include, params)


def _load(store: vectorport.BaseStore) -> vectorport.BaseStore:
    store.bind(16, "cosine")
    store.upsert(clustered_records(2000, 16, clusters=8, seed=3))
    return store


@pytest.fixture
def stores():
    made = {
        "exact": _load(MemoryStore(vectorport.StoreURL.parse("memory://cmp-exact"), "cmp-exact")),
        "postfilter": _load(PostFilteringStore(vectorport.StoreURL.parse("memory://cmp-pf"), "cmp-pf")),
        "leaky": _load(LeakyStore(vectorport.StoreURL.parse("memory://cmp-leaky"), "cmp-leaky")),
    }
    yield made
    for store in made.values():
        store.drop()


def test_gates_catch_post_filtering_and_leaks(stores, tmp_path: Path) -> None:
    result = vectorport.compare(
        stores, 40, k=10, filter=FILTERS, min_recall=0.95, max_violations=0, max_underfill=0.0, warmup=2
    )
    exact, post, leaky = (result.store(label) for label in ("exact", "postfilter", "leaky"))
    assert exact.overall.recall == pytest.approx(1.0)
    assert post.overall.recall < 0.6  # under-filled answers from the wrong scope
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
    assert html.count("<svg") >= 2 and "postfilter" in html and "http" not in html.split("<body", 1)[0].lower()


def test_exact_stores_pass_every_gate(stores) -> None:
    result = vectorport.compare(
        {"a": stores["exact"], "b": "memory://cmp-exact"}, 30, k=5, filter=FILTERS,
        min_recall=1.0, max_violations=0, min_overlap=1.0, max_underfill=0.0, warmup=1,
    )
    assert result.passed, result.explain()
    (pair,) = result.pairs
    assert pair.overall.overlap == pytest.approx(1.0)
