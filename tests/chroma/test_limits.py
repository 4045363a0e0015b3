"""Chroma 1.5's per-record SQLite limits (``MetadataRules.max_list_items``, ``max_keys``).

Chroma writes one record's list elements, and apart its scalar keys (the document is one more),
each as one SQLite INSERT of 6 bind parameters per row. Past 32,766 // 6 = 5,461 rows the
write is logged, fails to apply ("Error in compaction: Failed to apply logs to the metadata
segment"), and every later read and write of the collection fails the same way, also after
reopening. vectorport must refuse such records before writing anything.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

import vectorport
from vectorport import Record
from vectorport.backends.chroma import ChromaStore
from vectorport.exceptions import ConfigurationError, ValidationError
from vectorport.migrate import PlanRefusedError, plan

pytestmark = pytest.mark.chroma

LIST_LIMIT = 5_461
KEY_LIMIT = 5_459  # 5,461 rows: the keys, the document and the no-text marker
_names = itertools.count()


def test_limits_are_declared() -> None:
    rules = ChromaStore.capabilities.metadata
    assert rules.max_list_items == LIST_LIMIT and rules.max_keys == KEY_LIMIT


def _works(store: vectorport.VectorStore, count: int) -> None:
    """The collection still reads, searches and takes writes, also when opened again."""
    assert store.count() == count
    store.upsert([Record("after", [0, 1], {"tags": ["z"]}, "after")])
    assert store.get(["after"])[0].metadata == {"tags": ["z"]}
    assert store.query([0, 1], k=1)[0].key == "after"
    assert len(list(store.records())) == count + 1
    again = vectorport.connect(store.url.raw)
    try:
        assert again.count() == count + 1
        assert again.query([0, 1], k=1, filter={"tags": "z"})[0].key == "after"
    finally:
        again.close()


@pytest.mark.parametrize(
    ("metadata", "text", "path"),
    [
        ({"tags": list(range(LIST_LIMIT + 1))}, None, "metadata.tags"),
        ({"a": ["x"] * 2_731, "b": [True] * 2_731, "n": 1}, None, "metadata"),
        ({f"k{i}": i for i in range(KEY_LIMIT + 1)}, None, "metadata"),
    ],
    ids=["one-long-list", "lists-summed", "keys"],
)
def test_a_record_past_the_limits_is_refused_before_any_write(
    new_url: Callable[[], str], metadata: dict[str, object], text: str | None, path: str
) -> None:
    store = vectorport.connect(new_url(), dimension=2)
    try:
        store.upsert([Record("old", [1, 0], {"tags": ["a"]}, "old")])
        batch = [Record("good", [1, 1], {"tags": ["b"]}), Record("bad", [1, 2], metadata, text)]
        with pytest.raises(ValidationError) as info:
            store.upsert(batch)
        [problem] = info.value.problems
        assert (problem.key, problem.path) == ("bad", path)
        assert "limit" in problem.message
        assert store.get(["good", "bad"]) == []  # nothing of the batch was written
        _works(store, 1)
    finally:
        store.drop()
        store.close()


def test_records_at_the_limits_are_written(new_url: Callable[[], str]) -> None:
    at_lists = {"a": list(range(2_730)), "b": [f"s{i}" for i in range(2_731)]}
    at_keys = {f"k{i}": i for i in range(KEY_LIMIT)}
    store = vectorport.connect(new_url(), dimension=2)
    try:
        # Each record alone is at the limit; the limit is per record, not per batch.
        store.upsert(
            [Record(f"l{i}", [1, i], at_lists, "text") for i in range(3)]
            + [Record("keys", [2, 1], at_keys, "text")]
        )
        assert store.get(["l2"])[0].metadata == at_lists
        assert store.get(["keys"])[0] == Record("keys", np.array([2, 1], dtype=np.float32), at_keys, "text")
        # the text goes: the no-text marker takes the key slot kept for it
        store.upsert([Record("keys", [2, 1], at_keys, None)])
        assert store.get(["keys"])[0] == Record("keys", np.array([2, 1], dtype=np.float32), at_keys, None)
        # Replacing them (the merge path, which also deletes the keys the new record lacks).
        store.upsert([Record("keys", [2, 2], {"k0": "x", "tags": list(range(LIST_LIMIT))}, "text")])
        assert store.get(["keys"])[0].metadata == {"k0": "x", "tags": list(range(LIST_LIMIT))}
        _works(store, 4)
    finally:
        store.drop()
        store.close()


def test_the_plan_names_records_past_the_limits(url_for: Callable[..., str]) -> None:
    source = vectorport.connect(f"memory://chroma-limits-{next(_names)}", dimension=2)
    source.upsert(
        [
            Record("fine", [1, 0], {"tags": ["a", "b"]}),
            Record("long", [1, 1], {"tags": list(range(6_000))}),
            Record("summed", [1, 2], {"a": list(range(3_000)), "b": list(range(3_000))}),
        ]
    )
    target = url_for("chroma")
    try:
        p = plan(source, target)
        assert p.refused and p.records_unresolved == 2
        group = p.metadata_problems["lists too long"]
        found = {(o["key"], o["path"]) for o in group.occurrences.items}
        assert found == {("long", "metadata.tags"), ("summed", "metadata")}
        assert p.policy_outcomes["drop"] == 0 and p.policy_outcomes["stringify"] == 1
        with pytest.raises(PlanRefusedError):
            vectorport.migrate.run(source, target)
        moved = vectorport.migrate.run(source, target, metadata_policy="drop")
        assert moved.status == "verified", moved.to_dict()
        dst = vectorport.connect(target)
        try:
            assert dst.count() == 3 and dst.get(["long"])[0].metadata == {}
        finally:
            dst.drop()
            dst.close()
    finally:
        source.drop()
        source.close()


def test_server_writes_are_cut_below_its_request_size_limit(server_url: Callable[[], str]) -> None:
    # `chroma run` refuses request bodies over 40 MiB; 45 MiB of text in one batch goes in parts.
    store = vectorport.connect(server_url(), dimension=2, metric="euclidean")
    try:
        text = "x" * (1 << 20)
        assert store.upsert([Record(f"k{i}", [1, i], {"i": i}, text) for i in range(45)]) == 45
        assert store.count() == 45 and store.get(["k44"])[0].text == text
        # One record over the limit cannot be cut: a clear error, and nothing of it is written.
        with pytest.raises(ConfigurationError, match="40 MiB"):
            store.upsert([Record("huge", [0, 1], {}, "y" * (41 << 20))])
        _works(store, 45)
    finally:
        store.drop()
        store.close()
