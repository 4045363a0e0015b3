"""The s3vectors store's collaborators on their own, without a store: ``BucketClient`` against
the local server through real boto3, ``MetadataMapping`` with no I/O at all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from vectorport import Include
from vectorport._retry import RetryPolicy
from vectorport._validate import Batch
from vectorport.backends.s3vectors._bucket import BucketClient
from vectorport.backends.s3vectors._layout import preset
from vectorport.backends.s3vectors._mapping import MetadataMapping
from vectorport.exceptions import NotFoundError, UnsupportedFilterError, ValidationError
from vectorport.filters import parse_filter

pytestmark = pytest.mark.s3vectors

ALL = frozenset(Include)


@pytest.fixture
def calls(s3v: Any, unique: Any) -> BucketClient:
    bucket, index = unique("parts"), unique("ix")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName=index, dataType="float32", dimension=2, distanceMetric="euclidean"
    )
    return BucketClient(s3v, bucket, index, where=f"test {bucket}/{index}", retry=RetryPolicy())


def test_bucket_client_writes_lists_counts_and_pages_queries(calls: BucketClient) -> None:
    keys = [f"k{i:03d}" for i in range(150)]
    vectors = np.asarray([[float(i), 0.0] for i in range(150)], np.float32)
    for start in range(0, 150, 50):
        metas = [{"n": i} for i in range(start, start + 50)]
        calls.put(keys[start : start + 50], vectors[start : start + 50], metas)
    assert calls.count(1) == calls.count(8) == 150  # one listing, and 16 segments in parallel
    request = {**calls.ids, "topK": 120, "queryVector": {"float32": [0.0, 0.0]}, "returnDistance": True}
    hits = calls.query(request)  # beyond one page of 100: followed by its token
    assert [h["key"] for h in hits] == keys[:120]
    assert calls.index in calls.names("ListIndexes", "indexes", "indexName", vectorBucketName=calls.bucket)
    calls.delete(keys[:100])
    assert calls.count(1) == 50
    assert calls.tag(None, "any") is None


def test_bucket_client_maps_errors_naming_the_index(calls: BucketClient) -> None:
    calls.call("DeleteIndex", **calls.ids)
    with pytest.raises(NotFoundError, match=f"test {calls.bucket}/{calls.index}"):
        calls.call("GetIndex", **calls.ids)


def test_metadata_mapping_encodes_decodes_and_checks_without_io() -> None:
    mapping = MetadataMapping(preset("langchain"))
    assert mapping.layout.text_key == "_page_content" and mapping.opened is None
    batch = Batch(["a", "b"], np.zeros((2, 2), np.float32), [{"lang": "en"}, {}], ["hello", None])
    metas = mapping.encode(batch, "s3vectors")
    assert metas[0] == {"lang": "en", "_page_content": "hello"}
    assert mapping.decode(metas[0], ALL) == ({"lang": "en"}, "hello")
    assert mapping.decode(metas[0], frozenset({Include.TEXT})) == ({}, "hello")
    mapping.created()  # as if vectorport created the index: the text key is non-filterable
    assert mapping.non_filterable == {"_page_content"}
    assert mapping.problems("a", {}, "x" * 3000, opened=True) == []
    with pytest.raises(UnsupportedFilterError):
        mapping.compile_filter(parse_filter({"_page_content": "hello"}))
    assert mapping.compile_filter(parse_filter({"lang": "en"})) == {"lang": {"$eq": "en"}}


def test_metadata_mapping_refuses_a_filterable_text_over_2kb() -> None:
    mapping = MetadataMapping(preset("langchain"))  # an index made elsewhere, nothing non-filterable
    problems = mapping.problems("a", {}, "x" * 3000, opened=True)
    assert problems and problems[0][0] == "metadata._page_content"
    batch = Batch(["a"], np.zeros((1, 2), np.float32), [{}], ["x" * 3000])
    with pytest.raises(ValidationError, match="layout is langchain"):
        mapping.encode(batch, "s3vectors")


@pytest.mark.parametrize(("dim", "text_bytes"), [(4096, 0), (384, 39_000)])
def test_a_put_past_the_payload_limit_is_sent_in_parts(
    s3v: Any, unique: Any, dim: int, text_bytes: int
) -> None:
    """500 vectors of 4,096 dimensions, or 500 with close to the 40 KB of metadata each may
    carry, make a body over the service's 20 MiB: every record arrives, bit for bit."""
    bucket, index = unique("big"), unique("ix")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket,
        indexName=index,
        dataType="float32",
        dimension=dim,
        distanceMetric="cosine",
        metadataConfiguration={"nonFilterableMetadataKeys": ["text"]},
    )
    calls = BucketClient(s3v, bucket, index, where=f"test {bucket}/{index}", retry=RetryPolicy())
    sent: list[int] = []
    s3v.meta.events.register("before-call.s3vectors.PutVectors", lambda **kw: sent.append(1))
    keys = [f"k{i:03d}" for i in range(500)]
    vectors = np.random.default_rng(dim).standard_normal((500, dim)).astype(np.float32)
    metas = [{"i": i, "text": "x" * text_bytes} if text_bytes else {"i": i} for i in range(500)]
    calls.put(keys, vectors, metas)
    assert len(sent) >= 2 and calls.count(1) == 500
    got = s3v.get_vectors(vectorBucketName=bucket, indexName=index, keys=keys[-3:], returnData=True)[
        "vectors"
    ]
    assert {g["key"]: g["data"]["float32"] for g in got} == {
        k: vectors[i].tolist() for i, k in enumerate(keys) if i >= 497
    }
