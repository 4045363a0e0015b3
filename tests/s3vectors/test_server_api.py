"""The local server through raw boto3: operations, limits, validation and error codes as
botocore's s3vectors model and AWS's documentation describe them."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.request
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.s3vectors


def _code(exc: pytest.ExceptionInfo[Any]) -> tuple[str, int]:
    resp = exc.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


@pytest.fixture
def index(s3v: Any, unique: Any) -> dict[str, str]:
    bucket, name = unique("api"), "idx"
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket,
        indexName=name,
        dataType="float32",
        dimension=2,
        distanceMetric="euclidean",
        metadataConfiguration={"nonFilterableMetadataKeys": ["body"]},
    )
    return {"vectorBucketName": bucket, "indexName": name}


def _put(s3v: Any, ids: dict[str, str], *items: tuple[str, list[float], dict[str, Any] | None]) -> None:
    vectors = []
    for key, vec, meta in items:
        v: dict[str, Any] = {"key": key, "data": {"float32": vec}}
        if meta is not None:
            v["metadata"] = meta
        vectors.append(v)
    s3v.put_vectors(**ids, vectors=vectors)


def _query(s3v: Any, ids: dict[str, str], **kw: Any) -> list[dict[str, Any]]:
    kw.setdefault("topK", 100)
    kw.setdefault("queryVector", {"float32": [0.0, 0.0]})
    return list(s3v.query_vectors(**ids, returnDistance=True, **kw)["vectors"])


# ---------------------------------------------------------------------- buckets and indexes
def test_bucket_lifecycle_and_errors(s3v: Any, unique: Any) -> None:
    name = unique("life")
    arn = s3v.create_vector_bucket(vectorBucketName=name)["vectorBucketArn"]
    assert arn.endswith(f":bucket/{name}") and arn.startswith("arn:aws:s3vectors:us-east-1:")
    with pytest.raises(s3v.exceptions.ConflictException) as exc:
        s3v.create_vector_bucket(vectorBucketName=name)
    assert _code(exc) == ("ConflictException", 409)
    got = s3v.get_vector_bucket(vectorBucketArn=arn)["vectorBucket"]
    assert got["vectorBucketName"] == name and got["encryptionConfiguration"] == {"sseType": "AES256"}
    names = [b["vectorBucketName"] for b in s3v.list_vector_buckets(prefix=name)["vectorBuckets"]]
    assert names == [name]
    s3v.create_index(
        vectorBucketName=name, indexName="a.b-c", dataType="float32", dimension=3, distanceMetric="cosine"
    )
    with pytest.raises(s3v.exceptions.ConflictException):
        s3v.delete_vector_bucket(vectorBucketName=name)  # not empty
    with pytest.raises(s3v.exceptions.ConflictException):
        s3v.create_index(
            vectorBucketName=name, indexName="a.b-c", dataType="float32", dimension=3, distanceMetric="cosine"
        )
    s3v.delete_index(vectorBucketName=name, indexName="a.b-c")
    with pytest.raises(s3v.exceptions.NotFoundException) as exc:
        s3v.get_index(vectorBucketName=name, indexName="a.b-c")
    assert _code(exc) == ("NotFoundException", 404)
    s3v.delete_vector_bucket(vectorBucketName=name)
    with pytest.raises(s3v.exceptions.NotFoundException):
        s3v.get_vector_bucket(vectorBucketName=name)


@pytest.mark.parametrize("name", ["Upper", "has_underscore", "-dash", "dash-", "a.b"])
def test_bucket_naming_rules(s3v: Any, name: str) -> None:
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.create_vector_bucket(vectorBucketName=name)


def test_index_validation(s3v: Any, raw_s3v: Any, unique: Any) -> None:
    bucket = unique("ixv")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    base = {
        "vectorBucketName": bucket,
        "indexName": "okay",
        "dataType": "float32",
        "distanceMetric": "cosine",
    }
    for bad in (
        {"dimension": 0},
        {"dimension": 4097},
        {"dimension": 4, "distanceMetric": "dot"},
        {"dimension": 4, "dataType": "float16"},
        {"dimension": 4, "indexName": "UPPER"},
        {
            "dimension": 4,
            "metadataConfiguration": {"nonFilterableMetadataKeys": [f"k{i}" for i in range(11)]},
        },
    ):
        with pytest.raises(raw_s3v.exceptions.ValidationException) as exc:
            raw_s3v.create_index(**{**base, **bad})
        assert _code(exc) == ("ValidationException", 400)
    with pytest.raises(s3v.exceptions.NotFoundException):
        s3v.create_index(**{**base, "vectorBucketName": unique("missing"), "dimension": 4})
    s3v.create_index(**{**base, "dimension": 4096})
    assert s3v.get_index(vectorBucketName=bucket, indexName="okay")["index"]["dimension"] == 4096


def test_validation_exception_has_field_list(raw_s3v: Any, index: dict[str, str]) -> None:
    with pytest.raises(raw_s3v.exceptions.ValidationException) as exc:
        raw_s3v.query_vectors(**index, topK=0, queryVector={"float32": [0.0, 0.0]})
    body = exc.value.response
    assert "topK" in body["Error"]["Message"]
    assert body["fieldList"][0]["path"] == "/topK"


def test_list_indexes_pagination(s3v: Any, unique: Any) -> None:
    bucket = unique("pages")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    for i in range(5):
        s3v.create_index(
            vectorBucketName=bucket,
            indexName=f"idx-{i}",
            dataType="float32",
            dimension=2,
            distanceMetric="cosine",
        )
    pages = s3v.get_paginator("list_indexes").paginate(
        vectorBucketName=bucket, PaginationConfig={"PageSize": 2}
    )
    names = [i["indexName"] for page in pages for i in page["indexes"]]
    assert names == [f"idx-{i}" for i in range(5)]


# ---------------------------------------------------------------------- vectors
def test_put_get_delete_full_replace(s3v: Any, index: dict[str, str]) -> None:
    _put(s3v, index, ("a", [0.5, 0.25], {"x": 1, "tags": ["p"]}), ("b", [1.0, 2.0], None))
    _put(s3v, index, ("a", [3.0, 4.0], {"y": True}))
    got = s3v.get_vectors(**index, keys=["a", "b", "zz"], returnData=True, returnMetadata=True)["vectors"]
    assert [v["key"] for v in got] == ["a", "b"]
    assert got[0]["data"]["float32"] == [3.0, 4.0] and got[0]["metadata"] == {"y": True}
    bare = s3v.get_vectors(**index, keys=["a"])["vectors"][0]
    assert set(bare) == {"key"}
    s3v.delete_vectors(**index, keys=["a", "nope"])
    assert [v["key"] for v in s3v.get_vectors(**index, keys=["a", "b"])["vectors"]] == ["b"]


def test_float32_values_are_stored(s3v: Any, index: dict[str, str]) -> None:
    _put(s3v, index, ("f", [0.1, 1e-30], None))
    got = s3v.get_vectors(**index, keys=["f"], returnData=True)["vectors"][0]["data"]["float32"]
    assert got == [float(np.float32(0.1)), float(np.float32(1e-30))]


@pytest.mark.parametrize(
    ("vector", "metadata", "fragment"),
    [
        ([1.0], None, "dimension"),
        ([1.0, 2.0, 3.0], None, "dimension"),
        ([float("nan"), 1.0], None, "float32"),
        ([float("inf"), 1.0], None, "float32"),
        ([1e39, 1.0], None, "float32"),
        ([1.0, 1.0], {"n": None}, "null"),
        ([1.0, 1.0], {"n": {"nested": 1}}, "metadata"),
        ([1.0, 1.0], {"n": [1, None]}, "lists"),
        ([1.0, 1.0], {"big": "x" * 2100}, "Filterable metadata must have at most 2048 bytes"),
        ([1.0, 1.0], {"body": "x" * 41_000}, "at most 40960 bytes"),
        ([1.0, 1.0], {f"k{i}": i for i in range(51)}, "51 keys"),
    ],
)
def test_put_vectors_validation(
    raw_s3v: Any, index: dict[str, str], vector: list[float], metadata: Any, fragment: str
) -> None:
    item: dict[str, Any] = {"key": "bad", "data": {"float32": vector}}
    if metadata is not None:
        item["metadata"] = metadata
    with pytest.raises(raw_s3v.exceptions.ValidationException) as exc:
        raw_s3v.put_vectors(**index, vectors=[{"key": "good", "data": {"float32": [1.0, 1.0]}}, item])
    assert fragment in str(exc.value)
    assert raw_s3v.get_vectors(**index, keys=["good"])["vectors"] == []  # nothing of the batch written


def test_non_filterable_metadata_has_the_larger_budget(s3v: Any, index: dict[str, str]) -> None:
    _put(s3v, index, ("long", [1.0, 0.0], {"body": "x" * 30_000, "tag": "t"}))
    assert (
        s3v.get_vectors(**index, keys=["long"], returnMetadata=True)["vectors"][0]["metadata"]["tag"] == "t"
    )


def test_batch_limits_and_duplicates(s3v: Any, raw_s3v: Any, index: dict[str, str]) -> None:
    many = [{"key": f"k{i}", "data": {"float32": [1.0, float(i)]}} for i in range(501)]
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.put_vectors(**index, vectors=many)
    s3v.put_vectors(**index, vectors=many[:500])
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.get_vectors(**index, keys=[f"k{i}" for i in range(101)])
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.delete_vectors(**index, keys=[f"k{i}" for i in range(501)])
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        s3v.put_vectors(**index, vectors=[many[0], many[0]])
    assert "Duplicate" in str(exc.value)
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.put_vectors(**index, vectors=[{"key": "x" * 1025, "data": {"float32": [1.0, 1.0]}}])


def test_cosine_rejects_zero_vectors(s3v: Any, unique: Any) -> None:
    bucket = unique("cos")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName="cix", dataType="float32", dimension=2, distanceMetric="cosine"
    )
    with pytest.raises(s3v.exceptions.ValidationException, match="zero"):
        s3v.put_vectors(
            vectorBucketName=bucket, indexName="cix", vectors=[{"key": "z", "data": {"float32": [0, 0]}}]
        )


def test_list_vectors_pagination_and_segments(s3v: Any, raw_s3v: Any, index: dict[str, str]) -> None:
    keys = {f"key-{i:04d}" for i in range(1234)}
    items = sorted(keys)
    for start in range(0, len(items), 500):
        s3v.put_vectors(
            **index, vectors=[{"key": k, "data": {"float32": [1.0, 2.0]}} for k in items[start : start + 500]]
        )
    first = s3v.list_vectors(**index)
    assert len(first["vectors"]) == 500 and "nextToken" in first  # AWS default page size
    pages = s3v.get_paginator("list_vectors").paginate(**index, PaginationConfig={"PageSize": 1000})
    listed = [v["key"] for page in pages for v in page["vectors"]]
    assert sorted(listed) == items and len(listed) == len(items)
    parts = []
    for seg in range(7):
        pages = s3v.get_paginator("list_vectors").paginate(**index, segmentCount=7, segmentIndex=seg)
        parts.append({v["key"] for page in pages for v in page["vectors"]})
    assert set().union(*parts) == keys and sum(map(len, parts)) == len(keys)
    for bad in (
        {"maxResults": 1001},
        {"segmentCount": 17, "segmentIndex": 0},
        {"segmentCount": 4, "segmentIndex": 4},
        {"segmentCount": 4},
    ):
        with pytest.raises(raw_s3v.exceptions.ValidationException):
            raw_s3v.list_vectors(**index, **bad)


def test_euclidean_is_plain_l2_and_cosine_is_one_minus_cos(
    s3v: Any, index: dict[str, str], unique: Any
) -> None:
    # AWS: "Euclidean - measures the straight-line distance between vectors": [0,0]-[3,4] is 5, not 25.
    _put(s3v, index, ("origin", [0.0, 0.0], None), ("p", [3.0, 4.0], None))
    hits = _query(s3v, index, queryVector={"float32": [0.0, 0.0]})
    assert [(h["key"], h["distance"]) for h in hits] == [("origin", 0.0), ("p", 5.0)]
    bucket = unique("cosd")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName="cix", dataType="float32", dimension=2, distanceMetric="cosine"
    )
    ids = {"vectorBucketName": bucket, "indexName": "cix"}
    _put(s3v, ids, ("same", [2.0, 0.0], None), ("orth", [0.0, 3.0], None), ("opp", [-1.0, 0.0], None))
    resp = s3v.query_vectors(**ids, topK=3, queryVector={"float32": [1.0, 0.0]}, returnDistance=True)
    assert resp["distanceMetric"] == "cosine"
    assert [(h["key"], round(h["distance"], 6)) for h in resp["vectors"]] == [
        ("same", 0.0),
        ("orth", 1.0),
        ("opp", 2.0),
    ]


def test_query_options_and_limits(s3v: Any, raw_s3v: Any, index: dict[str, str]) -> None:
    _put(s3v, index, ("a", [1.0, 0.0], {"g": "x", "body": "text"}))
    resp = s3v.query_vectors(**index, topK=1, queryVector={"float32": [1.0, 0.0]})
    assert resp["vectors"] == [{"key": "a"}] and resp["distanceMetric"] == "euclidean"
    resp = s3v.query_vectors(**index, topK=1, queryVector={"float32": [1.0, 0.0]}, returnMetadata=True)
    assert resp["vectors"][0]["metadata"] == {"g": "x", "body": "text"}
    with pytest.raises(s3v.exceptions.ValidationException, match="topK"):
        s3v.query_vectors(**index, topK=10_001, queryVector={"float32": [1.0, 0.0]})
    with pytest.raises(s3v.exceptions.ValidationException, match="dimension"):
        s3v.query_vectors(**index, topK=1, queryVector={"float32": [1.0, 0.0, 0.0]})
    arn = s3v.get_index(**index)["index"]["indexArn"]
    assert (
        s3v.query_vectors(indexArn=arn, topK=1, queryVector={"float32": [1.0, 0.0]})["vectors"][0]["key"]
        == "a"
    )
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.query_vectors(**index, indexArn=arn, topK=1, queryVector={"float32": [1.0, 0.0]})


# ---------------------------------------------------------------------- filters
FILTER_DATA: list[tuple[str, list[float], dict[str, Any]]] = [
    ("a", [0.0, 1.0], {"genre": "drama", "year": 2019, "tags": ["x", "y"], "ok": True}),
    ("b", [0.0, 2.0], {"genre": "comedy", "year": 2021, "tags": ["y"], "ok": False}),
    ("c", [0.0, 3.0], {"genre": "drama", "year": 2023.5, "price": 30}),
    ("d", [0.0, 4.0], {"year": "2020", "tags": [1, 2], "price": 10}),
    ("e", [0.0, 5.0], {"ok": 1}),
]


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"genre": "drama"}, "ac"),
        ({"genre": {"$eq": "drama"}}, "ac"),
        ({"tags": "y"}, "ab"),  # $eq on a list matches any element (AWS documents this)
        ({"tags": {"$eq": 2}}, "d"),
        ({"genre": {"$ne": "drama"}}, "bde"),  # a missing key matches $ne (vectorport oracle)
        ({"tags": {"$ne": "y"}}, "cde"),
        ({"year": {"$gt": 2019}}, "bc"),  # the string "2020" is no number
        ({"year": {"$gte": 2019, "$lte": 2021}}, "ab"),
        ({"price": {"$gte": 10, "$lte": 50}}, "cd"),
        ({"year": {"$lt": 2023.5}}, "ab"),
        ({"genre": {"$in": ["comedy", "drama"]}}, "abc"),
        ({"tags": {"$in": [1, "x"]}}, "ad"),
        ({"genre": {"$nin": ["comedy"]}}, "acde"),
        ({"price": {"$exists": True}}, "cd"),
        ({"price": {"$exists": False}}, "abe"),
        ({"ok": True}, "a"),  # type-strict: 1 is not true
        ({"ok": 1}, "e"),
        ({"year": 2023.5}, "c"),
        ({"$and": [{"genre": "drama"}, {"year": {"$gte": 2020}}]}, "c"),
        ({"$or": [{"genre": "comedy"}, {"price": {"$lt": 20}}]}, "bd"),
        ({"$or": [{"$and": [{"genre": "drama"}, {"tags": "x"}]}, {"ok": False}]}, "ab"),
    ],
)
def test_filters_are_applied_before_ranking(
    s3v: Any, index: dict[str, str], flt: dict[str, Any], expected: str
) -> None:
    _put(s3v, index, *FILTER_DATA)
    hits = _query(s3v, index, topK=1 if len(expected) == 1 else 100, filter=flt)
    assert "".join(sorted(h["key"] for h in hits)) == expected


def test_filters_agree_with_the_vectorport_oracle(s3v: Any, index: dict[str, str]) -> None:
    from vectorport.filters import evaluate, parse_filter

    _put(s3v, index, *FILTER_DATA)
    filters = [
        {"genre": {"$ne": "drama"}},
        {"tags": {"$nin": ["y", 2]}},
        {"year": {"$lte": 2021}},
        {"ok": {"$in": [True, 1]}},
        {"$or": [{"price": {"$exists": False}}, {"year": {"$gt": 2022}}]},
    ]
    for flt in filters:
        want = {k for k, _, m in FILTER_DATA if evaluate(parse_filter(flt), m)}
        assert {h["key"] for h in _query(s3v, index, filter=flt)} == want, flt


@pytest.mark.parametrize(
    "flt",
    [
        {},
        {"genre": "drama", "year": 2019},  # one key per filter object
        {"$and": []},
        {"$or": {"genre": "drama"}},
        {"year": {"$gt": "2019"}},  # range operators take numbers only
        {"year": {"$gt": True}},
        {"genre": {"$in": []}},
        {"genre": {"$in": "drama"}},
        {"genre": {"$exists": 1}},
        {"genre": {"$regex": "d.*"}},
        {"genre": {"$not": {"$eq": "drama"}}},
        {"genre": None},
        {"genre": ["drama"]},
        {"genre": {}},
        {"$nor": [{"genre": "drama"}]},
        {"body": "text"},  # non-filterable key
        "genre",
    ],
)
def test_invalid_filters_are_rejected(s3v: Any, index: dict[str, str], flt: Any) -> None:
    _put(s3v, index, *FILTER_DATA)
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        _query(s3v, index, filter=flt)
    assert _code(exc) == ("ValidationException", 400)


# ---------------------------------------------------------------------- tags, policies, raw HTTP
def test_tags_and_policy(s3v: Any, index: dict[str, str]) -> None:
    arn = s3v.get_index(**index)["index"]["indexArn"]
    s3v.tag_resource(resourceArn=arn, tags={"team": "search", "env": "dev"})
    s3v.untag_resource(resourceArn=arn, tagKeys=["env"])
    assert s3v.list_tags_for_resource(resourceArn=arn)["tags"] == {"team": "search"}
    policy = json.dumps({"Version": "2012-10-17", "Statement": []})
    s3v.put_vector_bucket_policy(vectorBucketName=index["vectorBucketName"], policy=policy)
    assert s3v.get_vector_bucket_policy(vectorBucketName=index["vectorBucketName"])["policy"] == policy


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any], Any]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status, json.loads(resp.read()), resp.headers
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), err.headers


def test_supabase_route_requires_the_bearer_key(
    endpoint: str, supabase_key: str, index: dict[str, str]
) -> None:
    url = f"{endpoint}/storage/v1/vector/GetIndex"
    status, body, headers = _post(url, index, {})
    assert status == 403 and headers["x-amzn-ErrorType"] == "AccessDeniedException" and body["message"]
    status, _, _ = _post(url, index, {"Authorization": "Bearer wrong"})
    assert status == 403
    status, body, _ = _post(url, index, {"Authorization": f"Bearer {supabase_key}"})
    assert status == 200 and body["index"]["indexName"] == index["indexName"]


def test_raw_http_errors(endpoint: str, index: dict[str, str]) -> None:
    status, body, headers = _post(
        f"{endpoint}/QueryVectors", {**index, "queryVector": {"float32": [math.pi, 1]}}, {}
    )
    assert status == 400 and headers["x-amzn-ErrorType"] == "ValidationException"
    assert body["fieldList"] == [{"path": "/topK", "message": "Member must not be null"}]
    status, body, headers = _post(f"{endpoint}/NoSuchOperation", {}, {})
    assert status == 400


def test_query_topk_beyond_one_page_is_paginated(s3v: Any, index: dict[str, str]) -> None:
    # AWS since June 2026: topK up to 10,000, results in pages of 100 linked by nextToken,
    # followed by the SDK paginator with the same query parameters.
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(300, 2)).astype(np.float32)
    for start in range(0, 300, 100):
        _put(s3v, index, *((f"p{i}", vecs[i].tolist(), {"i": i}) for i in range(start, start + 100)))
    query = {"topK": 250, "queryVector": {"float32": [0.25, -0.5]}, "returnDistance": True}
    first = s3v.query_vectors(**index, **query)
    assert len(first["vectors"]) == 100 and first["nextToken"]
    pages = list(s3v.get_paginator("query_vectors").paginate(**index, **query))
    assert [len(p["vectors"]) for p in pages] == [100, 100, 50]
    got = [v["key"] for p in pages for v in p["vectors"]]
    dist = np.linalg.norm(vecs.astype(np.float64) - np.array([0.25, -0.5]), axis=1)
    assert got == [f"p{i}" for i in np.argsort(dist, kind="stable")[:250]]
    filtered = [v for p in s3v.get_paginator("query_vectors").paginate(
        **index, **query, filter={"i": {"$lt": 120}}) for v in p["vectors"]]  # fmt: skip
    assert len(filtered) == 120 and all(int(v["key"][1:]) < 120 for v in filtered)


def test_the_server_package_exports_a_small_public_namespace() -> None:
    # Callers (CLI, demo, tests, benchmarks) use these names; the modules behind them are private.
    import vectorport.bucketserver as bucketserver

    assert sorted(bucketserver.__all__) == ["Limits", "LocalServer", "Throttle", "running", "serve"]
    assert all(
        getattr(bucketserver, name).__module__.startswith("vectorport.bucketserver._")
        for name in bucketserver.__all__
    )
