"""LlamaIndex's ``EQ``/``NE``/``IN``/``NIN`` compare a metadata field's whole value (Python's
``==`` and ``in`` in its ``SimpleVectorStore``): ``EQ tags='red'`` matches no node whose
``tags`` is ``['red', 'green']``. On every backend that can tell a list from a scalar inside its
search, LlamaIndexStore returns the nodes SimpleVectorStore returns for the same nodes; on S3
Vectors, which cannot, they go as LlamaIndex's own S3VectorStore sends them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from vectorport.testing.backends import backend_params

pytest.importorskip("llama_index.core")

from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    SimpleVectorStore,
    VectorStoreQuery,
)

from vectorport.filters import evaluate, parse_filter
from vectorport.llamaindex import LlamaIndexStore, to_portable

pytestmark = pytest.mark.llamaindex

N = 48
TAGS = ["red", "green", "blue"]


def _nodes() -> list[TextNode]:
    vectors = np.random.default_rng(43).normal(size=(N, 8))
    nodes = []
    for i in range(N):
        # a third of the nodes hold one tag as a string, the rest a list of one or two
        tags: Any = TAGS[i % 3] if i % 3 == 0 else [TAGS[i % 3], TAGS[(i // 3) % 3]][: 1 + i % 2]
        nodes.append(
            TextNode(
                id_=f"n{i:02d}",
                text=f"node {i}",
                embedding=[float(x) for x in vectors[i]],
                metadata={"tags": tags, "kind": ["a", "b"][i % 2]},
            )
        )
    return nodes


def _f(key: str, value: Any, op: FilterOperator) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)


FILTERS = {
    "eq": [_f("tags", "red", FilterOperator.EQ)],
    "ne": [_f("tags", "red", FilterOperator.NE)],
    "in": [_f("tags", ["red", "green"], FilterOperator.IN)],
    "nin": [_f("tags", ["red", "green"], FilterOperator.NIN)],
    "eq-or-in": [_f("tags", "blue", FilterOperator.EQ), _f("kind", ["a"], FilterOperator.IN)],
}


@pytest.fixture(params=backend_params())
def ours(request: pytest.FixtureRequest, url_for: Callable[..., str]) -> Iterator[LlamaIndexStore]:
    store = LlamaIndexStore(url_for(request.param))
    store.add(_nodes())
    yield store
    with contextlib.suppress(KeyError):
        store.client.drop()
    store.close()


def _query(filters: list[MetadataFilter], condition: FilterCondition) -> VectorStoreQuery:
    return VectorStoreQuery(
        query_embedding=[1.0] * 8,
        similarity_top_k=N,
        filters=MetadataFilters(filters=filters, condition=condition),
    )


def test_eq_ne_in_nin_compare_the_whole_value_as_simplevectorstore_does(ours: LlamaIndexStore) -> None:
    theirs = SimpleVectorStore()
    theirs.add(_nodes())
    # the case the issue measured: EQ tags='red' is only the nodes whose tags is 'red' itself
    red = [f"n{i:02d}" for i in range(N) if i % 3 == 0]
    assert sorted(theirs.query(_query(FILTERS["eq"], FilterCondition.AND)).ids or []) == red
    if "$is" not in ours.client.capabilities.filter_operators:
        # S3 Vectors cannot tell a list from a scalar: EQ/NE/IN/NIN go as LlamaIndex's own
        # S3VectorStore sends them ($eq, $ne, $in, $nin), elements of a list matching
        for name, filters in FILTERS.items():
            element = to_portable(MetadataFilters(filters=filters), whole_values=False)
            want = sorted(n.node_id for n in _nodes() if evaluate(parse_filter(element), n.metadata))
            assert sorted(ours.query(_query(filters, FilterCondition.AND)).ids or []) == want, name
        return
    for name, filters in FILTERS.items():
        for condition in (FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT):
            want = theirs.query(_query(filters, condition)).ids or []
            got = ours.query(_query(filters, condition))
            assert sorted(got.ids or []) == sorted(want), (name, condition)
            # read back through LlamaIndex's own node: the metadata as SimpleVectorStore has it
            assert {n.node_id: n.metadata["tags"] for n in got.nodes or []} == {
                n.node_id: n.metadata["tags"] for n in _nodes() if n.node_id in want
            }
    assert sorted(ours.query(_query(FILTERS["eq"], FilterCondition.AND)).ids or []) == red


@pytest.mark.pgvector
def test_a_long_in_list_is_one_hashed_membership_on_pgvector(url_for: Callable[..., str]) -> None:
    """IN/NIN with thousands of values: one membership test per field (two bind parameters), so
    the row's metadata is read once, not once per value; the answer is SimpleVectorStore's."""
    from vectorport.backends.pgvector.filters import PgFilterCompiler

    values = [f"tag{i}" for i in range(5_000)] + ["red", "blue"]
    for op in (FilterOperator.IN, FilterOperator.NIN):
        portable = to_portable(MetadataFilters(filters=[_f("tags", values, op)]))
        assert len(PgFilterCompiler().where(parse_filter(portable)).params) == 2
    ours = LlamaIndexStore(url_for("pgvector"))
    ours.add(_nodes())
    theirs = SimpleVectorStore()
    theirs.add(_nodes())
    try:
        for op in (FilterOperator.IN, FilterOperator.NIN):
            query = _query([_f("tags", values, op)], FilterCondition.AND)
            want = sorted(theirs.query(query).ids or [])
            assert sorted(ours.query(query).ids or []) == want and want
    finally:
        ours.client.drop()
        ours.close()
