"""What the base class does for every backend, exercised through the memory store and small
doubles of a *backend* (the base class is the thing under test)."""

import datetime as dt
from collections.abc import Sequence

import numpy as np
import pytest

import vectorport
from vectorport import Record, TransientError, ValidationError
from vectorport._retry import RetryPolicy
from vectorport._validate import Batch
from vectorport.backends.memory import MemoryStore
from vectorport.filters import parse_filter
from vectorport.testing import ExactIndex, clustered_records, judge, query_vectors

pytestmark = pytest.mark.memory


@pytest.fixture
def store():
    s = vectorport.connect("memory://base-store", dimension=2, metric="cosine")
    yield s
    s.drop()


@pytest.mark.parametrize(
    ("metadata", "path", "fragment"),
    [
        ({"when": dt.datetime(2024, 1, 1)}, "metadata.when", "ISO 8601"),
        ({"tags": ["a", b"b"]}, "metadata.tags[1]", "bytes is not JSON"),
        ({"deep": {"x": [1, {"y": float("inf")}]}}, "metadata.deep.x[1].y", "not a JSON number"),
        ({"s": {1}}, "metadata.s", "sorted list"),
        ({1: "x"}, "metadata", "keys must be strings"),
    ],
)
def test_metadata_errors_name_key_and_path(store, metadata, path, fragment) -> None:
    with pytest.raises(ValidationError) as info:
        store.upsert([Record("ok", [1, 0]), Record("docs/a.md#chunk2", [1, 0], metadata)])
    assert info.value.key == "docs/a.md#chunk2"
    assert info.value.path == path
    assert fragment in str(info.value) and "nothing was written" in str(info.value)
    assert store.count() == 0


def test_every_problem_is_reported(store) -> None:
    with pytest.raises(ValidationError) as info:
        store.upsert([Record("a", [0, 0]), Record("b", [1]), Record("", [1, 1])])
    assert [p.path for p in info.value.problems] == ["vector", "vector", "key"]


def test_an_overflowing_float32_vector_is_refused_without_a_warning(store) -> None:
    # a float32 array takes the fast path; under filterwarnings=error a numpy overflow warning
    # on the way to the refusal would fail this test
    huge = np.array([np.finfo(np.float32).max, 1.0], np.float32)
    with pytest.raises(ValidationError, match=r"overflows float32.*nothing was written"):
        store.upsert([Record("ok", [1, 0]), Record("docs/a.md#chunk1", huge)])
    assert store.count() == 0


class FlakyMemory(MemoryStore):
    """A backend whose writes fail transiently twice (what throttling looks like)."""

    failures = 2

    def _write(self, batch: Batch) -> None:
        if self.failures:
            self.failures -= 1
            raise TransientError("throttled", retry_after=0.0)
        super()._write(batch)


def test_transient_errors_are_retried_and_batches_split() -> None:
    url = vectorport.StoreURL.parse("memory://flaky")
    s = FlakyMemory(url, "flaky", retry=RetryPolicy(attempts=3, base=0.001))
    s.bind(2)
    try:
        assert s.upsert([Record(f"k{i}", [1, i]) for i in range(25)], batch_size=10) == 25
        assert s.count() == 25
        s.failures = 5
        with pytest.raises(TransientError):
            s.upsert([Record("x", [1, 1])])
    finally:
        s.drop()


def test_an_awaited_call_is_retried_by_the_same_backoff_and_its_last_error_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """RetryPolicy.acall waits and tries again as call does, logging each retry, and re-raises
    the last TransientError once the attempts are spent."""
    import asyncio

    policy, tries = RetryPolicy(attempts=3, base=0.0), []

    async def flaky(fail: int) -> str:
        tries.append(1)
        if len(tries) <= fail:
            raise TransientError("throttled", retry_after=0.0)
        return "ok"

    assert asyncio.run(policy.acall(lambda: flaky(2), "write")) == "ok"
    assert len(tries) == 3
    assert [r.getMessage()[:27] for r in caplog.records] == [
        "write: throttled; retry 1/2",
        "write: throttled; retry 2/2",
    ]
    tries.clear()
    with pytest.raises(TransientError, match="throttled"):
        asyncio.run(policy.acall(lambda: flaky(5), "write"))
    assert len(tries) == 3


class PostFilteringMemory(MemoryStore):
    """The classic silent bug: rank first, filter afterwards."""

    def _search(self, vector, k, where, include, params):
        ranked = super()._search(vector, k, None, include | {vectorport.Include.METADATA}, params)
        from vectorport.filters import evaluate

        return [m for m in ranked if evaluate(where, m.metadata)]


def test_the_judge_catches_a_post_filtering_store() -> None:
    s = PostFilteringMemory(vectorport.StoreURL.parse("memory://postfilter"), "postfilter")
    s.bind(8, "euclidean")
    try:
        recs = clustered_records(300, 8, clusters=4, seed=1)
        s.upsert(recs)
        index = ExactIndex.from_records(s.spec.metric, recs)
        where = parse_filter({"cluster": 1})
        q = query_vectors(1, 8, clusters=4, seed=1)[0]
        j = judge(index, q, s.query(q, k=10, filter={"cluster": 1}), where)
        assert j.k_returned < j.k_expected or j.recall < 1.0
    finally:
        s.drop()


def test_get_keeps_request_order_and_dedupes(store) -> None:
    store.upsert([Record("a", [1, 0]), Record("b", [0, 1])])
    assert [r.key for r in store.get(["b", "a", "b", "zz"])] == ["b", "a"]
    assert store.get(["a"], include=["metadata"])[0].vector is None


def test_query_result_reports_k(store) -> None:
    store.upsert([Record("a", [1, 0]), Record("b", [0, 1])])
    res = store.query([1, 0], k=5)
    assert (res.k_requested, res.k_returned, res.keys) == (5, 2, ["a", "b"])
    assert res[0].score == pytest.approx(1.0) and res.to_dict()["k_returned"] == 2


def test_records_equality_and_helpers() -> None:
    a = Record("k", np.array([1, 2], dtype=np.float32), {"x": 1}, "t")
    assert a == Record("k", [1.0, 2.0], {"x": 1}, "t")
    assert a != Record("k", [1.0, 2.5], {"x": 1}, "t")
    assert a.to_dict() == {"key": "k", "vector": [1.0, 2.0], "metadata": {"x": 1}, "text": "t"}
    seq: Sequence[str] = query_vectors(2, 3).shape  # type: ignore[assignment]
    assert tuple(seq) == (2, 3)


@pytest.mark.parametrize(
    ("metadata", "path"),
    [
        ({"a": "ok", "b": "bad \ud800"}, "metadata.b"),
        ({"tags": ["x", "\udfff"]}, "metadata.tags[1]"),
        ({"\ud800key": 1}, "metadata"),
        ({"n": float("nan")}, "metadata.n"),
        ({"l": [1.0, float("inf")]}, "metadata.l[1]"),
        ({"t": (1, 2)}, "metadata.t"),
        ({"d": {"x": "\ud800"}}, "metadata.d.x"),
    ],
)
def test_metadata_that_is_not_json_is_named_by_path(metadata: dict[str, object], path: str) -> None:
    from vectorport._validate import metadata_problems

    problems = metadata_problems(metadata, MemoryStore.capabilities.metadata)
    assert [p for p, _ in problems] == [path], problems


def test_plain_metadata_has_no_json_problem() -> None:
    from vectorport._validate import _json_problems, _plain_json

    plain = {"s": "é", "i": 10**30, "f": -0.5, "b": True, "n": None, "l": ["a", 1, 2.5, None], "e": []}
    assert _plain_json(plain)
    found: list[object] = []
    _json_problems(plain, "metadata", found)  # type: ignore[arg-type]
    assert found == []
    assert not _plain_json({"d": {"x": 1}}) and not _plain_json({"l": [[1]]})  # nested: the full walk


def test_metadata_a_migration_checked_is_trusted_only_for_those_objects_and_those_rules() -> None:
    from dataclasses import replace

    from vectorport._validate import metadata_checked, validate_records

    store = vectorport.connect("memory://checked", dimension=2, metric="cosine")
    caps = store.capabilities
    reserved = replace(caps.metadata, reserved_keys=frozenset({"_id"}))
    checked = {"_id": 1}
    other = {"_id": 2}
    records = [Record("a", [1.0, 0.0], checked, None), Record("b", [0.0, 1.0], other, None)]
    strict = replace(caps, metadata=reserved)
    with pytest.raises(ValidationError) as err:
        validate_records(records, store.spec, strict, "memory")
    assert {p.key for p in err.value.problems} == {"a", "b"}
    with metadata_checked(reserved, [checked]), pytest.raises(ValidationError) as err:
        validate_records(records, store.spec, strict, "memory")
    assert {p.key for p in err.value.problems} == {"b"}  # only the object the checks saw is trusted
    looser = replace(reserved, reserved_keys=frozenset())
    with metadata_checked(looser, [checked, other]), pytest.raises(ValidationError) as err:
        validate_records(records, store.spec, strict, "memory")
    assert {p.key for p in err.value.problems} == {"a", "b"}  # checked under other rules: checked again
