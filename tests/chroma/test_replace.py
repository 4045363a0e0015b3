"""Full replace over Chroma's merging upsert: what is left of the old version (nothing)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport._features import Feature, split_replace_of
from vectorport.backends.chroma._write import NO_TEXT

from ._plain import collection_name, plain_client

pytestmark = pytest.mark.chroma


def _keys(store: vectorport.VectorStore, flt: dict[str, object]) -> list[str]:
    return sorted(m.key for m in store.query([1, 0], k=10, filter=flt))


def test_no_trace_of_the_old_version_in_reads_or_filters(new_url: Callable[[], str]) -> None:
    url = new_url()
    store = vectorport.connect(url, dimension=2, metric="euclidean")
    try:
        store.upsert([Record("k", [1, 0], {"tags": ["a", "b"], "n": 1, "s": "x"}, "first text")])
        # A list becomes a scalar, scalars go, a list arrives.
        store.upsert([Record("k", [1, 1], {"tags": "c", "m": [1, 2]}, "second text")])
        assert store.get(["k"])[0] == Record(
            "k", np.array([1, 1], dtype=np.float32), {"tags": "c", "m": [1, 2]}, "second text"
        )
        assert _keys(store, {"tags": "a"}) == [] and _keys(store, {"tags": "c"}) == ["k"]
        assert _keys(store, {"n": 1}) == [] and _keys(store, {"s": {"$ne": "x"}}) == ["k"]
        assert _keys(store, {"m": 2}) == ["k"]
        # A scalar becomes a list, the text goes: one upsert with the document "" and a marker.
        store.upsert([Record("k", [1, 2], {"tags": ["d"]}, None)])
        assert store.get(["k"])[0] == Record("k", np.array([1, 2], dtype=np.float32), {"tags": ["d"]}, None)
        assert _keys(store, {"m": 2}) == [] and _keys(store, {"tags": "c"}) == []
        assert _keys(store, {"tags": "d"}) == ["k"]
        with plain_client(url) as client:
            coll = client.get_collection(collection_name(url))
            assert coll.get(where_document={"$contains": "text"})["ids"] == []
            raw = coll.get(ids=["k"], include=["metadatas", "documents"])
            assert raw["documents"] == [""] and raw["metadatas"] == [{"tags": ["d"], NO_TEXT: True}]
        # Back to text and metadata, and to nothing at all.
        store.upsert([Record("k", [1, 3], {"tags": ["e"], "n": 2}, "third")])
        store.upsert([Record("k", [1, 4], {}, "fourth")])
        assert store.get(["k"])[0] == Record("k", np.array([1, 4], dtype=np.float32), {}, "fourth")
        assert _keys(store, {"tags": "e"}) == [] and store.count() == 1
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("split", [False, True], ids=["upsert", "split"])
def test_a_batch_mixing_new_replaced_and_text_dropping_records(
    new_url: Callable[[], str], split: bool
) -> None:
    """The same full replace by Chroma's upsert and, inside ``split_replace`` (what sync uses),
    by a delete and a write anew."""
    url = new_url()
    store = vectorport.connect(url, dimension=2, metric="euclidean")
    try:
        assert Feature.SPLIT_REPLACE in store.capabilities.features
        store.upsert([Record(f"k{i}", [1, i], {"i": i, "old": True}, f"t{i}") for i in range(6)])
        batch = [
            Record(f"k{i}", [2, i], {"i": -i} if i % 2 else {}, None if i % 3 == 0 else f"new{i}")
            for i in range(9)
        ]
        with split_replace_of(store) if split else nullcontext():
            assert store.upsert(batch) == 9
        if split:  # written anew: no text is no document, without the marker an upsert needs
            with plain_client(url) as client:
                raw = client.get_collection(collection_name(url)).get(
                    ids=["k3"], include=["metadatas", "documents"]
                )
            assert raw["documents"] == [None] and raw["metadatas"] == [{"i": -3}]
        got = {r.key: r for r in store.get([r.key for r in batch])}
        for want in batch:
            assert got[want.key] == Record(
                want.key, np.asarray(want.vector, dtype=np.float32), want.metadata, want.text
            )
        assert store.count() == 9 and _keys(store, {"old": True}) == []
    finally:
        store.drop()
        store.close()


@pytest.mark.parametrize("split", [False, True], ids=["upsert", "split"])
def test_metadata_only_and_identical_rewrites(new_url: Callable[[], str], split: bool) -> None:
    """Records whose vector and text Chroma holds are written by a metadata update (or not at
    all): the result is the same full replace, a type change (1 to True) included."""
    url = new_url()
    store = vectorport.connect(url, dimension=2, metric="euclidean")
    try:
        old = [
            Record(f"k{i}", [1, i], {"i": i, "flag": 1, "gone": "x"}, f"t{i}" if i % 2 else None)
            for i in range(6)
        ]
        store.upsert(old)
        new = [
            Record("k0", [1, 0], {"i": 0, "flag": True, "gone": "x"}, None),  # a bool for an int, only
            Record("k1", [1, 1], {}, "t1"),  # every metadata key removed
            Record("k2", [1, 2], {"i": 2, "flag": 1, "gone": "x"}, None),  # identical
            Record("k3", [1, 3], {"i": 3, "flag": 1, "gone": "x"}, None),  # the text removed
            Record("k4", [1, 4.5], {"i": 4, "flag": 1, "gone": "x"}, None),  # the vector changed
            Record("k5", [1, 5], {"i": 5.0}, "t5"),  # an int for a float
        ]
        with split_replace_of(store) if split else nullcontext():
            assert store.upsert(new) == 6
        got = {r.key: r for r in store.get([r.key for r in new])}
        for want in new:
            have = got[want.key]
            assert (have.metadata, have.text) == (want.metadata, want.text)
            assert {k: type(v) for k, v in have.metadata.items()} == {
                k: type(v) for k, v in want.metadata.items()
            }
            assert np.array_equal(have.vector, np.asarray(want.vector, dtype=np.float32))
        assert _keys(store, {"gone": "x"}) == ["k0", "k2", "k3", "k4"]
        assert _keys(store, {"flag": True}) == ["k0"]
        assert store.count() == 6
    finally:
        store.drop()
        store.close()


def test_replacing_records_keeps_their_scan_position(embedded_url: Callable[[], str]) -> None:
    store = vectorport.connect(embedded_url(), dimension=2)
    try:
        store.upsert([Record(f"k{i:03}", [1, i], {"i": i}, "t") for i in range(30)])
        first = next(store.scan(batch_size=10, include=[]))
        store.upsert([Record(first.records[0].key, [2, 0], {"i": -1}, "changed")])
        rest = [r.key for page in store.scan(batch_size=10, include=[], cursor=first.cursor) for r in page]
        assert rest == [f"k{i:03}" for i in range(10, 30)]
    finally:
        store.drop()
        store.close()
