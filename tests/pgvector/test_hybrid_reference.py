"""pgvector's text and hybrid search against the memory reference (vectorport._textsearch).

What is guaranteed and checked here: the filter inside both rankings, the fusion arithmetic
and candidate depth, ties by key, and, with the ``simple`` configuration and
``text_parser=any``, the same matching records as BM25 on plain words. The text *order* is
``ts_rank_cd``'s, not BM25's, so it is not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import vectorport
from vectorport._textsearch import fuse

pytestmark = pytest.mark.pgvector

WORDS = ["red", "fox", "hen", "blue", "sky", "run", "cat"]


@pytest.fixture(scope="module")
def pair(pg_url: Callable[..., str]) -> Iterator[tuple[vectorport.VectorStore, vectorport.VectorStore]]:
    pg = vectorport.connect(
        pg_url(index="exact", language="simple", text_parser="any"), dimension=2, metric="euclidean"
    )
    mem = vectorport.connect("memory://pg-hybrid-reference", dimension=2, metric="euclidean")
    yield pg, mem
    pg.drop()
    pg.close()
    mem.drop()


docs_strategy = st.lists(
    st.tuples(
        st.integers(-20, 20),
        st.integers(-20, 20),
        st.sampled_from(["x", "y"]),
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    docs=docs_strategy,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    k=st.integers(1, 6),
    weight=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    rrf_k=st.integers(1, 80),
    filtered=st.booleans(),
)
# four records tie on distance at the vector side's cut (2k = 2 candidates): which of them is a
# candidate decides the fused ranks, so the exact side cuts ties by key as the reference does
@example(
    docs=[(0, 0, "x", "red")] * 4 + [(0, -1, "x", "red")],
    query="red",
    k=1,
    weight=0.0,
    rrf_k=1,
    filtered=False,
)
def test_hybrid_agrees_with_the_reference(
    pair: tuple[vectorport.VectorStore, vectorport.VectorStore],
    docs: list[tuple[int, int, str, str]],
    query: str,
    k: int,
    weight: float,
    rrf_k: int,
    filtered: bool,
) -> None:
    pg, mem = pair
    for store in (pg, mem):
        store.delete_all()
        # small integer coordinates: distances are exact in float32, so ties are real ties
        store.upsert(
            vectorport.Record(f"k{i:02d}", [x, y], {"g": g}, t) for i, (x, y, g, t) in enumerate(docs)
        )
    where = {"g": "x"} if filtered else None
    q = np.array([1.0, -2.0])
    # the same records match the text (plain words, simple configuration, any term)
    pg_text = pg.text_query(query, 100, filter=where)  # type: ignore[attr-defined]
    mem_text = mem.text_query(query, 100, filter=where)  # type: ignore[attr-defined]
    assert {m.key for m in pg_text} == {m.key for m in mem_text}
    # the vector side is exact: the same ranking, ties by key
    assert [m.key for m in pg.query(q, 2 * k, filter=where)] == [
        m.key for m in mem.query(q, 2 * k, filter=where)
    ]
    # the fusion is the reference's, over pgvector's own two rankings
    vec = [m.key for m in pg.query(q, 2 * k, filter=where)]
    txt = [m.key for m in pg.text_query(query, 2 * k, filter=where)]  # type: ignore[attr-defined]
    got = pg.hybrid_query(q, query, k, filter=where, weight=weight, rrf_k=rrf_k)  # type: ignore[attr-defined]
    want = fuse(vec, txt, weight=weight, rrf_k=rrf_k)[:k]
    assert [m.key for m in got] == [f.key for f in want]
    assert [m.extra["rrf_score"] for m in got] == pytest.approx([f.rrf_score for f in want])
    assert [(m.extra["vector_rank"], m.extra["text_rank"]) for m in got] == [
        (f.vector_rank, f.text_rank) for f in want
    ]
    if filtered:
        assert all(m.metadata == {"g": "x"} for m in got)


def test_parsers(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url(), dimension=2)
    try:
        store.upsert(
            [
                vectorport.Record("fox", [1, 0], {}, "Red foxes hunt small rodents at dusk"),
                vectorport.Record("owl", [0, 1], {}, "Owls hunt at night"),
                vectorport.Record("sea", [1, 1], {}, "The sea is blue"),
            ]
        )
        question = "how do red foxes hunt in winter"

        def keys(parser: str | None, text: str = question) -> list[str]:
            params = None if parser is None else {"text_parser": parser}
            return [m.key for m in store.text_query(text, params=params)]  # type: ignore[attr-defined]

        # all-terms parsing finds nothing for a natural question; any-term finds both hunters
        assert keys(None) == keys("websearch") == keys("plain") == []
        assert set(keys("any")) == {"fox", "owl"}
        assert keys("any")[0] == "fox"  # more of the question's terms
        assert keys("websearch", '"at night" -sea') == ["owl"]
        hybrid = store.hybrid_query(  # type: ignore[attr-defined]
            [0, 1], question, k=3, params={"text_parser": "any"}
        )
        assert {m.key: m.extra["text_rank"] for m in hybrid}["fox"] == 1
        with pytest.raises(vectorport.ConfigurationError, match="text_parser must be one of any, plain"):
            keys("fuzzy")
        with pytest.raises(vectorport.ConfigurationError, match="only the text_parser param"):
            store.text_query("x", params={"ef_search": 10})  # type: ignore[attr-defined]
    finally:
        store.drop()
        store.close()


def test_text_search_configuration_per_collection(pg_url: Callable[..., str]) -> None:
    store = vectorport.connect(pg_url("hybrid_es", language="spanish"), dimension=2)
    english = vectorport.connect(pg_url(), dimension=2)
    reopened = None
    try:
        for s in (store, english):
            s.upsert([vectorport.Record("ninos", [1, 0], {}, "Los niños corren en el parque")])
        # the Spanish stemmer makes "correr" and "corren" one lexeme; English does not
        assert [m.key for m in store.text_query("correr")] == ["ninos"]  # type: ignore[attr-defined]
        assert [m.key for m in english.text_query("correr")] == []  # type: ignore[attr-defined]
        reopened = vectorport.connect(pg_url("hybrid_es"))  # no language=: recorded with the table
        assert reopened.info()["pgvector"]["language"] == "spanish"
        assert [m.key for m in reopened.text_query("correr")] == ["ninos"]  # type: ignore[attr-defined]
    finally:
        if reopened is not None:
            reopened.close()
        for s in (store, english):
            s.drop()
            s.close()


def test_compare_modes_on_pgvector(pg_url: Callable[..., str]) -> None:
    from vectorport.compare import Query, compare_modes

    from ..compare.labelled_corpus import EMBEDDER, QUERIES, direct_figures, load

    store = vectorport.connect(
        pg_url(text_parser="any", index="exact"), dimension=64, embedding_model=EMBEDDER.model_id
    )
    mem = vectorport.connect("memory://pg-compare-modes", dimension=64)
    try:
        load(store)
        load(mem)
        queries = [Query(text=t, relevant=r) for t, r in QUERIES]
        out = compare_modes({"pg": store, "mem": mem}, queries, 5, weights=[0.3, 0.7], embedder=EMBEDDER)
        assert len(out.rows) == 8
        for row in out.rows:
            target = store if row.store == "pg" else mem
            assert (row.hit_at_1, row.mrr, row.ndcg) == pytest.approx(
                direct_figures(target, row.mode, 5, row.weight or 0.5)
            )
        by = {(r.store, r.label): r for r in out.rows}
        # any-term parsing finds every labelled passage; so does BM25
        assert by["pg", "text"].hit_at_1 == by["mem", "text"].hit_at_1 == 1.0
        assert by["pg", "vector"].mrr == pytest.approx(by["mem", "vector"].mrr)  # exact enough at 12 rows
    finally:
        store.drop()
        store.close()
        mem.drop()
