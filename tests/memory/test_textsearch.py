"""The text and hybrid search reference: tokenizer, exact BM25, fusion, and refusal elsewhere."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vectorport
from vectorport._textsearch import analyze, fuse

CORPUS = [
    ("a", [1.0, 0.0], {"lang": "en"}, "the red fox jumps"),
    ("b", [0.0, 1.0], {"lang": "en"}, "a red red hen"),
    ("c", [0.7, 0.7], {"lang": "fr"}, "le renard rouge"),
    ("d", [0.6, 0.8], {"lang": "en"}, None),
]


@pytest.fixture
def store() -> Iterator[vectorport.VectorStore]:
    s = vectorport.connect("memory://test-textsearch", dimension=2)
    s.upsert(vectorport.Record(k, v, m, t) for k, v, m, t in CORPUS)
    yield s
    s.drop()


def _bm25(term_freqs: list[int], doc_lengths: list[int], all_lengths: list[int], df: int) -> list[float]:
    docs = len(all_lengths)
    idf = math.log(1 + (docs - df + 0.5) / (df + 0.5))
    avgdl = sum(all_lengths) / docs
    return [
        idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))
        for tf, dl in zip(term_freqs, doc_lengths, strict=True)
    ]


def test_tokenizer_rules() -> None:
    assert analyze("Don't PANIC, v1.2 ready-made 東京") == [
        "don't",
        "panic",
        "v1.2",
        "ready",
        "made",
        "東",
        "京",
    ]


def test_bm25_by_hand(store: vectorport.VectorStore) -> None:
    hits = store.text_query("red")  # type: ignore[attr-defined]
    # 3 records have text (lengths 4, 4, 3); "red" is in 2 of them, twice in b
    want = _bm25([2, 1], [4, 4], [4, 4, 3], 2)
    assert [m.key for m in hits] == ["b", "a"]
    assert [m.score for m in hits] == pytest.approx(want)
    assert [m.distance for m in hits] == pytest.approx([-w for w in want])
    assert [m.extra["text_rank"] for m in hits] == [1, 2]
    assert hits.k_returned == 2


def test_text_filter_is_inside_the_ranking(store: vectorport.VectorStore) -> None:
    hits = store.text_query("red renard", k=1, filter={"lang": "fr"})  # type: ignore[attr-defined]
    assert [m.key for m in hits] == ["c"]


def test_hybrid_by_hand(store: vectorport.VectorStore) -> None:
    hits = store.hybrid_query([0.0, 1.0], "fox", k=2, weight=0.7, rrf_k=10)  # type: ignore[attr-defined]
    # vector order: b, d, c, a (candidates 2k = 4); text: a
    # a: 0.7/14 + 0.3/11 = 0.0773 beats b: 0.7/11 = 0.0636
    assert [m.key for m in hits] == ["a", "b"]
    assert hits.matches[1].extra == {
        "rrf_score": pytest.approx(0.7 / 11),
        "vector_rank": 1,
        "text_rank": None,
    }
    assert hits.matches[0].extra["rrf_score"] == pytest.approx(0.7 / 14 + 0.3 / 11)
    assert hits.matches[0].distance == pytest.approx(1.0)  # cosine distance of a to the query


def test_hybrid_text_only_candidate_gets_its_distance(store: vectorport.VectorStore) -> None:
    hits = store.hybrid_query([0.0, 1.0], "fox", k=1, weight=0.0)  # type: ignore[attr-defined]
    # k = 1: vector candidates b, d; a comes from text alone and still has its distance
    assert [(m.key, m.extra["vector_rank"]) for m in hits] == [("a", None)]
    assert hits.matches[0].distance == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weight": 1.5}, "weight"),
        ({"weight": "x"}, "weight"),
        ({"rrf_k": 0}, "rrf_k"),
        ({"rrf_k": True}, "rrf_k"),
    ],
)
def test_bad_fusion_arguments_are_refused(store: vectorport.VectorStore, kwargs: dict, match: str) -> None:
    with pytest.raises(vectorport.ConfigurationError, match=match):
        store.hybrid_query([1.0, 0.0], "fox", **kwargs)  # type: ignore[attr-defined]


def test_empty_text_is_refused(store: vectorport.VectorStore) -> None:
    with pytest.raises(vectorport.ConfigurationError, match="non-empty query text"):
        store.text_query("  ")  # type: ignore[attr-defined]


def test_store_without_text_search_is_refused_before_io(tmp_path: Path) -> None:
    chroma = vectorport.connect(f"chroma://{tmp_path}?collection=docs", dimension=2)
    try:
        assert not {"text_search", "hybrid"} & chroma.capabilities.features
        with pytest.raises(vectorport.UnsupportedFeatureError, match="chroma collection 'docs' has no text"):
            vectorport.text_search_of(chroma)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="no hybrid search"):
            vectorport.hybrid_search_of(chroma)
    finally:
        chroma.drop()
        chroma.close()


words = st.sampled_from(["red", "fox", "hen", "blue", "sky", "fox's", "東"])
texts = st.one_of(st.none(), st.lists(words, min_size=1, max_size=6).map(" ".join))


@settings(max_examples=60, deadline=None)
@given(
    docs=st.lists(
        st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.sampled_from(["x", "y"]), texts),
        min_size=1,
        max_size=25,
    ),
    query=st.lists(words, min_size=1, max_size=3).map(" ".join),
    k=st.integers(1, 6),
    weight=st.sampled_from([0.0, 0.3, 0.5, 1.0]),
    rrf_k=st.integers(1, 80),
    filtered=st.booleans(),
)
def test_hybrid_is_the_fusion_of_its_two_rankings(
    docs: list[tuple[float, float, str, str | None]],
    query: str,
    k: int,
    weight: float,
    rrf_k: int,
    filtered: bool,
) -> None:
    s = vectorport.connect("memory://test-textsearch-prop", dimension=2, metric="euclidean")
    try:
        s.upsert(vectorport.Record(f"k{i:02d}", [x, y], {"g": g}, t) for i, (x, y, g, t) in enumerate(docs))
        where = {"g": "x"} if filtered else None
        q = np.array([0.1, -0.2])
        vec = [m.key for m in s.query(q, 2 * k, filter=where)]
        txt = [m.key for m in s.text_query(query, 2 * k, filter=where)]  # type: ignore[attr-defined]
        got = s.hybrid_query(q, query, k, filter=where, weight=weight, rrf_k=rrf_k)  # type: ignore[attr-defined]
        want = fuse(vec, txt, weight=weight, rrf_k=rrf_k)[:k]
        assert [m.key for m in got] == [f.key for f in want]
        assert [m.extra["rrf_score"] for m in got] == pytest.approx([f.rrf_score for f in want])
        if filtered:
            assert all(m.metadata == {"g": "x"} for m in got)
        # text matches are exactly the records holding a query term
        terms = set(analyze(query))
        holders = {
            f"k{i:02d}"
            for i, (_, _, g, t) in enumerate(docs)
            if t is not None and terms & set(analyze(t)) and (not filtered or g == "x")
        }
        assert {m.key for m in s.text_query(query, 100, filter=where)} == holders  # type: ignore[attr-defined]
    finally:
        s.drop()


def test_text_ranking_is_declared_in_capabilities() -> None:
    """Which stores rank text by the reference BM25 (equal results) and which by their own
    ranking (filter inside, fusion arithmetic and depth, ties by key guaranteed) is data."""
    from vectorport.backends.memory import MemoryStore

    assert MemoryStore.capabilities.text_ranking == "BM25"
    declared = {b.name: b.load().capabilities for b in vectorport.available_backends() if b.installed}
    for name, caps in declared.items():
        assert (caps.text_ranking is None) == ("text_search" not in caps.features), name
    if "pgvector" in declared:
        assert declared["pgvector"].text_ranking == "ts_rank_cd"
    store = vectorport.connect("memory://text-ranking", dimension=2)
    assert store.info()["capabilities"]["text_ranking"] == "BM25"
    store.drop()
