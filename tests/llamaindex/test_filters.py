"""Every LlamaIndex ``FilterOperator`` either means on LlamaIndexStore what it means on LlamaIndex's
own ``SimpleVectorStore`` (list fields for ``CONTAINS``/``ANY``/``ALL``), or is refused with an
error that names it, before any I/O."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import vectorport

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

from vectorport.llamaindex import LlamaIndexStore, to_portable

pytestmark = [pytest.mark.llamaindex, pytest.mark.memory]

TAGS = ["red", "green", "blue", "black"]


def _nodes() -> list[TextNode]:
    vectors = np.random.default_rng(5).normal(size=(60, 8))
    return [
        TextNode(
            id_=f"n{i:02d}",
            text=f"node {i}",
            embedding=[float(x) for x in vectors[i]],
            metadata={
                "tags": [TAGS[i % 4], TAGS[(i // 4) % 4]],
                "size": i % 9,
                "kind": ["a", "b", "c"][i % 3],
            },
        )
        for i in range(60)
    ]


@pytest.fixture
def stores() -> Iterator[tuple[LlamaIndexStore, SimpleVectorStore]]:
    ours, theirs = LlamaIndexStore("memory://frameworks-li-filters"), SimpleVectorStore()
    ours.add(_nodes())
    theirs.add(_nodes())
    yield ours, theirs
    ours.client.drop()


def _f(key: str, value: Any, op: FilterOperator) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)


SAME = {
    "contains": [_f("tags", "blue", FilterOperator.CONTAINS)],
    "any": [_f("tags", ["red", "black"], FilterOperator.ANY)],
    "all": [_f("tags", ["red", "blue"], FilterOperator.ALL)],
    "lte-and-ne": [_f("size", 4, FilterOperator.LTE), _f("kind", "b", FilterOperator.NE)],
    "lt-gt": [_f("size", 7, FilterOperator.LT), _f("size", 2, FilterOperator.GT)],
    # the whole value, as Python's == and `in`: a list field never equals one of its elements
    "eq-on-a-list-and-a-scalar": [_f("tags", "red", FilterOperator.EQ), _f("kind", "a", FilterOperator.EQ)],
    "ne-on-a-list": [_f("tags", "red", FilterOperator.NE), _f("size", 4, FilterOperator.LTE)],
    "in-nin": [_f("tags", ["red", "blue"], FilterOperator.IN), _f("kind", ["a", "c"], FilterOperator.NIN)],
    "in-on-a-scalar": [_f("kind", ["a", "c"], FilterOperator.IN), _f("size", 5, FilterOperator.GTE)],
}


@pytest.mark.parametrize("name", list(SAME))
def test_what_simplevectorstore_means(name: str, stores: tuple[LlamaIndexStore, SimpleVectorStore]) -> None:
    ours, theirs = stores
    sizes = set()
    for condition in (FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT):
        q = VectorStoreQuery(
            query_embedding=[1.0] * 8,
            similarity_top_k=60,
            filters=MetadataFilters(filters=SAME[name], condition=condition),
        )
        want = theirs.query(q).ids
        assert ours.query(q).ids == want, condition
        sizes.add(len(want))
    assert sizes - {0, 60}, "the filter selects some nodes, not all"


REFUSED = [
    (_f("kind", "a", FilterOperator.TEXT_MATCH), "TEXT_MATCH filter on 'kind'"),
    (_f("kind", "A", FilterOperator.TEXT_MATCH_INSENSITIVE), "TEXT_MATCH_INSENSITIVE filter on 'kind'"),
    (_f("kind", None, FilterOperator.IS_EMPTY), "IS_EMPTY filter on 'kind'"),
    (_f("kind", "b", FilterOperator.GT), "orders numbers only"),
    (_f("tags", ["red", "blue"], FilterOperator.EQ), "compares with a list"),
    (_f("kind", "a", FilterOperator.IN), "needs a non-empty list"),
]


@pytest.mark.parametrize(("flt", "message"), REFUSED, ids=[m for _, m in REFUSED])
def test_what_has_no_portable_form_is_refused(flt: MetadataFilter, message: str) -> None:
    filters = MetadataFilters(filters=[_f("size", 1, FilterOperator.GTE), flt])
    with pytest.raises(vectorport.UnsupportedFilterError, match=message):
        to_portable(filters)
    store = LlamaIndexStore("memory://frameworks-li-refused")  # no collection: nothing is touched
    with pytest.raises(vectorport.UnsupportedFilterError, match=message):
        store.query(VectorStoreQuery(query_embedding=[1.0] * 8, similarity_top_k=3, filters=filters))
    with pytest.raises(vectorport.UnsupportedFilterError, match=message):
        store.delete_nodes(filters=filters)


def test_nested_filters_and_doc_ids_make_one_portable_filter() -> None:
    nested = MetadataFilters(
        filters=[
            _f("kind", "a", FilterOperator.EQ),
            MetadataFilters(
                filters=[_f("size", 3, FilterOperator.GT), _f("tags", ["red"], FilterOperator.ANY)],
                condition=FilterCondition.OR,
            ),
        ]
    )
    assert to_portable(nested) == {
        "$and": [{"kind": {"$is": "a"}}, {"$or": [{"size": {"$gt": 3}}, {"tags": {"$in": ["red"]}}]}]
    }
    assert to_portable(MetadataFilters(filters=[])) is None
