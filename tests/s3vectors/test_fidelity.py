"""Behaviour the real service documents and the local server first missed, through boto3
(and the AWS CLI where it is cheap). Each test names its source.

* Index modes — User Guide "Changing a vector index's mode" and the botocore model
  (``UpdateIndexMode``, ``QueryVectorsInput.queryMode``): buckets created since 2026-09-30 make
  ENHANCED indexes; ENHANCED supports ``$startsWith`` and allows 100 filter constraints; CLASSIC
  cannot be asked of an ENHANCED index, nor set on an index of a bucket created since then.
* Quotas — "Limitations and restrictions" (10,000 buckets per Region, 10,000 indexes per bucket;
  the model's ``ServiceQuotaExceededException`` is HTTP 402) and ``TagResource`` ("up to 50
  tags for each resource").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import vectorport
from vectorport import Record
from vectorport.bucketserver import Limits, LocalServer
from vectorport.exceptions import UnsupportedFilterError

from .conftest import boto_client
from .test_awscli import aws

pytestmark = pytest.mark.s3vectors

DATA: list[tuple[str, list[float], dict[str, Any]]] = [
    ("a", [1.0, 0.0], {"path": "docs/guide.md", "tags": ["alpha", "beta"], "n": 1}),
    ("b", [0.0, 1.0], {"path": "src/main.py", "tags": ["docs-team"], "n": 2}),
    ("c", [1.0, 1.0], {"path": "docs", "n": 3}),
    ("d", [1.0, 2.0], {"path": 42, "tags": [1, 2]}),
]


def _code(exc: pytest.ExceptionInfo[Any]) -> tuple[str, int]:
    resp = exc.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def _make_index(s3v: Any, bucket: str, name: str = "idx") -> dict[str, str]:
    s3v.create_index(
        vectorBucketName=bucket, indexName=name, dataType="float32", dimension=2, distanceMetric="euclidean"
    )
    ids = {"vectorBucketName": bucket, "indexName": name}
    s3v.put_vectors(**ids, vectors=[{"key": k, "data": {"float32": v}, "metadata": m} for k, v, m in DATA])
    return ids


def _keys(s3v: Any, ids: dict[str, str], flt: Any, **kw: Any) -> str:
    resp = s3v.query_vectors(**ids, topK=10, queryVector={"float32": [0.0, 0.0]}, filter=flt, **kw)
    return "".join(sorted(v["key"] for v in resp["vectors"]))


@pytest.fixture
def enhanced(s3v: Any, unique: Any) -> dict[str, str]:
    bucket = unique("enh")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    return _make_index(s3v, bucket)


@pytest.fixture(scope="module")
def old_server() -> Iterator[Any]:
    """A server whose buckets all count as created before 2026-09-30 (CLASSIC by default)."""
    server = LocalServer(limits=Limits(enhanced_since=float("inf"), max_buckets=3, max_indexes_per_bucket=2))
    server.start()
    yield boto_client(server.url)
    server.stop()


def test_new_buckets_make_enhanced_indexes(s3v: Any, enhanced: dict[str, str]) -> None:
    bucket = s3v.get_vector_bucket(vectorBucketName=enhanced["vectorBucketName"])["vectorBucket"]
    assert bucket["defaultIndexMode"] == "ENHANCED"
    assert s3v.get_index(**enhanced)["index"]["indexMode"] == "ENHANCED"


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"path": {"$startsWith": "docs"}}, "ac"),
        ({"path": {"$startsWith": "docs/"}}, "a"),
        ({"tags": {"$startsWith": "docs"}}, "b"),  # any element of a list, like $eq
        ({"path": {"$startsWith": ""}}, "abc"),  # strings only: 42 is no string
        ({"$and": [{"path": {"$startsWith": "docs"}}, {"n": {"$gte": 3}}]}, "c"),
    ],
)
def test_starts_with_on_an_enhanced_index(
    s3v: Any, enhanced: dict[str, str], flt: dict[str, Any], expected: str
) -> None:
    assert _keys(s3v, enhanced, flt) == expected


@pytest.mark.parametrize("operand", [1, True, ["docs"], None])
def test_starts_with_takes_a_string(s3v: Any, enhanced: dict[str, str], operand: Any) -> None:
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        _keys(s3v, enhanced, {"path": {"$startsWith": operand}})
    assert _code(exc) == ("ValidationException", 400)


def test_classic_query_mode_is_refused_on_an_enhanced_index(s3v: Any, enhanced: dict[str, str]) -> None:
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        _keys(s3v, enhanced, {"n": 1}, queryMode="CLASSIC")
    assert _code(exc) == ("ValidationException", 400)
    assert _keys(s3v, enhanced, {"n": 1}, queryMode="ENHANCED") == "a"


def test_new_bucket_indexes_cannot_become_classic(s3v: Any, enhanced: dict[str, str]) -> None:
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        s3v.update_index_mode(**enhanced, indexMode="CLASSIC")
    assert _code(exc) == ("ValidationException", 400)
    s3v.update_index_mode(**enhanced, indexMode="ENHANCED")
    assert s3v.get_index(**enhanced)["index"]["indexMode"] == "ENHANCED"


def test_enhanced_filters_allow_100_constraints(s3v: Any, enhanced: dict[str, str]) -> None:
    ninety_nine = list(range(100, 199))
    assert _keys(s3v, enhanced, {"$or": [{"n": 1}, {"n": {"$in": ninety_nine}}]}) == "a"  # 1 + 99
    with pytest.raises(s3v.exceptions.ValidationException, match="constraints") as exc:
        _keys(s3v, enhanced, {"$or": [{"n": {"$in": [1, 2]}}, {"n": {"$in": ninety_nine}}]})  # 101
    assert _code(exc) == ("ValidationException", 400)


def test_classic_indexes_of_older_buckets(old_server: Any) -> None:
    s3v = old_server
    s3v.create_vector_bucket(vectorBucketName="old-bucket")
    assert (
        s3v.get_vector_bucket(vectorBucketName="old-bucket")["vectorBucket"]["defaultIndexMode"] == "CLASSIC"
    )
    ids = _make_index(s3v, "old-bucket")
    assert s3v.get_index(**ids)["index"]["indexMode"] == "CLASSIC"
    with pytest.raises(s3v.exceptions.ValidationException, match="ENHANCED"):
        _keys(s3v, ids, {"path": {"$startsWith": "docs"}})
    # ENHANCED for one query leaves the index as it is.
    assert _keys(s3v, ids, {"path": {"$startsWith": "docs"}}, queryMode="ENHANCED") == "ac"
    assert _keys(s3v, ids, {"n": {"$in": list(range(1, 300))}}) == "abc"  # no constraint limit
    assert _keys(s3v, ids, {"n": 1}, queryMode="CLASSIC") == "a"
    # Index modes change in place, both ways, for a bucket created before 2026-09-30.
    s3v.update_index_mode(**ids, indexMode="ENHANCED")
    assert _keys(s3v, ids, {"path": {"$startsWith": "src"}}) == "b"
    s3v.update_index_mode(**ids, indexMode="CLASSIC")
    assert s3v.get_index(**ids)["index"]["indexMode"] == "CLASSIC"
    # The bucket default applies to indexes created afterwards only.
    s3v.put_vector_bucket_default_index_mode(vectorBucketName="old-bucket", defaultIndexMode="ENHANCED")
    s3v.create_index(
        vectorBucketName="old-bucket",
        indexName="later",
        dataType="float32",
        dimension=2,
        distanceMetric="cosine",
    )
    assert s3v.get_index(vectorBucketName="old-bucket", indexName="later")["index"]["indexMode"] == "ENHANCED"
    assert s3v.get_index(**ids)["index"]["indexMode"] == "CLASSIC"


def test_quotas_are_service_quota_exceeded(old_server: Any) -> None:
    s3v = old_server
    for name in ("quota-a", "quota-b"):
        s3v.create_vector_bucket(vectorBucketName=name)
    have = len(s3v.list_vector_buckets()["vectorBuckets"])
    for i in range(have, 3):
        s3v.create_vector_bucket(vectorBucketName=f"quota-fill-{i}")
    with pytest.raises(s3v.exceptions.ServiceQuotaExceededException) as exc:
        s3v.create_vector_bucket(vectorBucketName="quota-c")
    assert _code(exc) == ("ServiceQuotaExceededException", 402)
    for name in ("ix-1", "ix-2", "ix-3"):
        create = {"vectorBucketName": "quota-a", "indexName": name, "dataType": "float32"}
        if name == "ix-3":
            with pytest.raises(s3v.exceptions.ServiceQuotaExceededException) as exc:
                s3v.create_index(**create, dimension=2, distanceMetric="cosine")
            assert _code(exc) == ("ServiceQuotaExceededException", 402)
        else:
            s3v.create_index(**create, dimension=2, distanceMetric="cosine")


def test_at_most_50_tags_per_resource(s3v: Any, unique: Any) -> None:
    name = unique("tags")
    arn = s3v.create_vector_bucket(vectorBucketName=name, tags={f"k{i}": "v" for i in range(50)})[
        "vectorBucketArn"
    ]
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        s3v.tag_resource(resourceArn=arn, tags={"one-more": "v"})
    assert _code(exc) == ("ValidationException", 400)
    s3v.tag_resource(resourceArn=arn, tags={"k0": "replaced"})  # replacing a key adds none
    assert s3v.list_tags_for_resource(resourceArn=arn)["tags"]["k0"] == "replaced"
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.create_vector_bucket(vectorBucketName=unique("tags"), tags={f"k{i}": "v" for i in range(51)})


def test_aws_cli_starts_with_filter(endpoint: str, s3v: Any, enhanced: dict[str, str]) -> None:
    out = aws(
        endpoint,
        "query-vectors",
        "--vector-bucket-name",
        enhanced["vectorBucketName"],
        "--index-name",
        enhanced["indexName"],
        "--top-k",
        "10",
        "--query-vector",
        json.dumps({"float32": [0.0, 0.0]}),
        "--filter",
        json.dumps({"path": {"$startsWith": "docs"}}),
    )
    assert sorted(v["key"] for v in out["vectors"]) == ["a", "c"]


def test_adapter_refuses_filters_beyond_the_constraint_limit(endpoint: str, unique: Any) -> None:
    store = vectorport.connect(
        f"s3vectors://adapter/{unique('cons')}?endpoint_url={endpoint}", dimension=2, metric="euclidean"
    )
    try:
        store.upsert([Record("a", [1, 1], {"n": 1})])
        assert [m.key for m in store.query([1, 1], k=1, filter={"n": {"$in": list(range(100))}})] == ["a"]
        with pytest.raises(UnsupportedFilterError, match="constraints"):
            store.query([1, 1], k=1, filter={"n": {"$in": list(range(101))}})
        with pytest.raises(UnsupportedFilterError, match="constraints"):
            # $nin is sent as {"$or": [{"$nin": [...]}, {"$exists": false}]}: 100 + 1
            store.query([1, 1], k=1, filter={"n": {"$nin": list(range(100))}})
    finally:
        store.drop()
        store.close()


def test_every_operation_accepts_arns(s3v: Any, unique: Any, endpoint: str) -> None:
    # Each operation's model documents "either the vector bucket name or the vector bucket ARN"
    # (or "both names, or the index ARN").
    bucket = unique("arn")
    barn = s3v.create_vector_bucket(vectorBucketName=bucket)["vectorBucketArn"]
    assert s3v.get_vector_bucket(vectorBucketArn=barn)["vectorBucket"]["vectorBucketName"] == bucket
    iarn = s3v.create_index(
        vectorBucketArn=barn, indexName="idx", dataType="float32", dimension=2, distanceMetric="cosine"
    )["indexArn"]
    assert [i["indexArn"] for i in s3v.list_indexes(vectorBucketArn=barn)["indexes"]] == [iarn]
    assert s3v.get_index(indexArn=iarn)["index"]["indexName"] == "idx"
    s3v.put_vectors(indexArn=iarn, vectors=[{"key": "k", "data": {"float32": [1.0, 0.5]}}])
    assert s3v.get_vectors(indexArn=iarn, keys=["k"])["vectors"] == [{"key": "k"}]
    assert [v["key"] for v in s3v.list_vectors(indexArn=iarn)["vectors"]] == ["k"]
    got = s3v.query_vectors(indexArn=iarn, topK=1, queryVector={"float32": [1.0, 0.5]})
    assert got["vectors"] == [{"key": "k"}]
    s3v.update_index_mode(indexArn=iarn, indexMode="ENHANCED")
    s3v.delete_vectors(indexArn=iarn, keys=["k"])
    policy = json.dumps({"Version": "2012-10-17", "Statement": []})
    s3v.put_vector_bucket_policy(vectorBucketArn=barn, policy=policy)
    assert s3v.get_vector_bucket_policy(vectorBucketArn=barn)["policy"] == policy
    s3v.delete_vector_bucket_policy(vectorBucketArn=barn)
    s3v.put_vector_bucket_default_index_mode(vectorBucketArn=barn, defaultIndexMode="ENHANCED")
    assert aws(endpoint, "get-index", "--index-arn", iarn)["index"]["indexName"] == "idx"
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.get_vector_bucket(vectorBucketName=bucket, vectorBucketArn=barn)
    s3v.delete_index(indexArn=iarn)
    with pytest.raises(s3v.exceptions.NotFoundException):
        s3v.get_index(indexArn=iarn)
    s3v.delete_vector_bucket(vectorBucketArn=barn)
    with pytest.raises(s3v.exceptions.NotFoundException) as exc:
        s3v.get_vector_bucket(vectorBucketArn=barn)
    assert _code(exc) == ("NotFoundException", 404)


def test_cosine_distance_is_never_negative(s3v: Any, unique: Any) -> None:
    # Cosine distance is 1 - cos, within [0, 2]; float rounding used to give -2e-16 for a
    # vector queried against itself.
    import numpy as np

    bucket = unique("cosneg")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName="idx", dataType="float32", dimension=64, distanceMetric="cosine"
    )
    ids = {"vectorBucketName": bucket, "indexName": "idx"}
    vecs = np.random.default_rng(7).standard_normal((40, 64)).astype(np.float32)
    s3v.put_vectors(
        **ids, vectors=[{"key": f"v{i}", "data": {"float32": v.tolist()}} for i, v in enumerate(vecs)]
    )
    for i, v in enumerate(vecs):
        hit = s3v.query_vectors(**ids, topK=1, queryVector={"float32": v.tolist()}, returnDistance=True)[
            "vectors"
        ][0]
        assert hit["key"] == f"v{i}" and 0.0 <= hit["distance"] < 1e-6


def _shape_problems(shape: str, value: Any, path: str = "") -> list[str]:
    """Where ``value`` breaks the botocore output shape: unknown or missing members, wrong types."""
    from vectorport.bucketserver._shapes import load_model

    shapes = load_model().shapes
    spec = shapes[shape]
    kind = spec["type"]
    out: list[str] = []
    if kind == "structure" and not spec.get("document"):
        members = spec.get("members", {})
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        out += [f"{path}/{k}: not in the model" for k in value if k not in members]
        out += [f"{path}/{k}: required, missing" for k in spec.get("required", []) if k not in value]
        for k, v in value.items():
            if k in members:
                out += _shape_problems(members[k]["shape"], v, f"{path}/{k}")
    elif kind == "list":
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        for i, v in enumerate(value):
            out += _shape_problems(spec["member"]["shape"], v, f"{path}/{i}")
    elif kind == "map":
        for k, v in value.items():
            out += _shape_problems(spec["value"]["shape"], v, f"{path}/{k}")
    elif kind == "string" and (not isinstance(value, str) or value not in spec.get("enum", [value])):
        out.append(f"{path}: {value!r} is not a valid string here")
    elif kind in ("integer", "long") and (isinstance(value, bool) or not isinstance(value, int)):
        out.append(f"{path}: not an integer")
    elif kind in ("float", "double", "timestamp") and not isinstance(value, int | float):
        out.append(f"{path}: not a number")
    return out


def test_every_response_matches_the_model_output_shape(endpoint: str, unique: Any) -> None:
    import urllib.request
    from urllib.parse import quote

    from vectorport.bucketserver._shapes import load_model

    model = load_model()

    def call(op: str, body: dict[str, Any] | None, method: str = "POST", path: str | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{endpoint}{path or '/' + op}", data, method=method)
        with urllib.request.urlopen(req) as resp:
            raw = resp.read()
        output = model.operations[op].get("output")
        has_members = output is not None and bool(model.shapes[output["shape"]].get("members"))
        assert bool(raw) == has_members, op  # empty 200 body exactly when the output has no members
        doc = json.loads(raw) if raw else {}
        if output is not None:
            assert _shape_problems(output["shape"], doc) == [], op
        return doc

    b = {"vectorBucketName": unique("shape")}
    ix = {**b, "indexName": "idx"}
    call("CreateVectorBucket", {**b, "tags": {"a": "b"}})
    call("GetVectorBucket", b)
    call("ListVectorBuckets", {})
    arn = call(
        "CreateIndex",
        {
            **ix,
            "dataType": "float32",
            "dimension": 2,
            "distanceMetric": "cosine",
            "metadataConfiguration": {"nonFilterableMetadataKeys": ["body"]},
            "encryptionConfiguration": {"sseType": "AES256"},
        },
    )["indexArn"]
    call("GetIndex", ix)
    call("ListIndexes", b)
    call(
        "PutVectors",
        {
            **ix,
            "vectors": [
                {"key": "a", "data": {"float32": [1, 2]}, "metadata": {"x": [1, "y"], "body": "t"}},
                {"key": "b", "data": {"float32": [2, 1]}},
            ],
        },
    )
    call("GetVectors", {**ix, "keys": ["a", "b", "zz"], "returnData": True, "returnMetadata": True})
    assert "nextToken" in call(
        "ListVectors", {**ix, "returnData": True, "returnMetadata": True, "maxResults": 1}
    )
    query = {"topK": 2, "queryVector": {"float32": [1, 1]}, "returnDistance": True, "returnMetadata": True}
    call("QueryVectors", {**ix, **query, "filter": {"x": "y"}})
    call("DeleteVectors", {**ix, "keys": ["b"]})
    call("PutVectorBucketPolicy", {**b, "policy": "{}"})
    call("GetVectorBucketPolicy", b)
    call("DeleteVectorBucketPolicy", b)
    call("PutVectorBucketDefaultIndexMode", {**b, "defaultIndexMode": "ENHANCED"})
    call("UpdateIndexMode", {**ix, "indexMode": "ENHANCED"})
    tags = "/tags/" + quote(arn, safe="")
    call("TagResource", {"tags": {"k": "v"}}, path=tags)
    call("ListTagsForResource", None, method="GET", path=tags)
    call("UntagResource", None, method="DELETE", path=tags + "?tagKeys=k")
    call("DeleteIndex", ix)
    call("DeleteVectorBucket", b)


# ---------------------------------------------------------------------- audit: model and paging
def _aws_fails(endpoint: str, *args: str) -> str:
    """Run an AWS CLI command that must fail; returns its stderr."""
    with pytest.raises(AssertionError) as exc:
        aws(endpoint, *args)
    return str(exc.value)


@pytest.fixture
def paged(s3v: Any, unique: Any) -> dict[str, str]:
    """An index of 250 vectors k000…k249 at distance i from the origin."""
    bucket = unique("paged")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket, indexName="idx", dataType="float32", dimension=2, distanceMetric="euclidean"
    )
    ids = {"vectorBucketName": bucket, "indexName": "idx"}
    for start in range(0, 250, 125):
        s3v.put_vectors(
            **ids,
            vectors=[
                {"key": f"k{i:03d}", "data": {"float32": [float(i), 0.0]}} for i in range(start, start + 125)
            ],
        )
    return ids


def test_query_page_tokens_can_be_sent_again(s3v: Any, paged: dict[str, str], endpoint: str) -> None:
    # botocore's paginator resumes a MaxItems-truncated run (StartingToken; the CLI's
    # --max-items/--starting-token) by re-sending the token of the page it cut, and a retried
    # request re-sends its token: a page token must stay valid after it was used once.
    query = {**paged, "topK": 250, "queryVector": {"float32": [0.0, 0.0]}}
    token = s3v.query_vectors(**query)["nextToken"]
    first = s3v.query_vectors(**query, nextToken=token)
    again = s3v.query_vectors(**query, nextToken=token)
    assert first["vectors"] == again["vectors"] and [v["key"] for v in first["vectors"]][:1] == ["k100"]
    paginator = s3v.get_paginator("query_vectors")
    head = paginator.paginate(**query, PaginationConfig={"MaxItems": 150}).build_full_result()
    tail = paginator.paginate(
        **query, PaginationConfig={"MaxItems": 150, "StartingToken": head["NextToken"]}
    ).build_full_result()
    assert [v["key"] for v in head["vectors"] + tail["vectors"]] == [f"k{i:03d}" for i in range(250)]
    assert "NextToken" not in tail
    cli = [
        "query-vectors",
        "--vector-bucket-name",
        paged["vectorBucketName"],
        "--index-name",
        "idx",
        "--top-k",
        "250",
        "--query-vector",
        json.dumps({"float32": [0.0, 0.0]}),
        "--max-items",
        "120",
    ]
    head = aws(endpoint, *cli)
    tail = aws(endpoint, *cli[:-2], "--starting-token", head["NextToken"])
    assert [v["key"] for v in head["vectors"] + tail["vectors"]] == [f"k{i:03d}" for i in range(250)]
    assert head["distanceMetric"] == tail["distanceMetric"] == "euclidean"
    with pytest.raises(s3v.exceptions.ValidationException) as exc:
        s3v.query_vectors(**query, nextToken="not-a-token")
    assert _code(exc) == ("ValidationException", 400)


def test_model_patterns_are_enforced(s3v: Any, raw_s3v: Any, unique: Any, endpoint: str) -> None:
    # botocore never checks a shape's pattern, so the service is the only check: TagKey and
    # TagValue are ([\p{L}\p{Z}\p{N}_.:/=+\-@]*), KmsKeyArn is arn:aws…:kms:…:key/….
    arn = s3v.create_vector_bucket(vectorBucketName=unique("pattern"))["vectorBucketArn"]
    for tags in ({"k!": "v"}, {"k": "v#"}, {"tab\tkey": "v"}):
        with pytest.raises(s3v.exceptions.ValidationException) as exc:
            s3v.tag_resource(resourceArn=arn, tags=tags)
        assert _code(exc) == ("ValidationException", 400)
        assert "regular expression pattern" in exc.value.response["fieldList"][0]["message"]
    s3v.tag_resource(resourceArn=arn, tags={"équipe 1": "données", "a:b/c=d+e-f@g": "½", "x": ""})
    assert s3v.list_tags_for_resource(resourceArn=arn)["tags"]["équipe 1"] == "données"
    with pytest.raises(raw_s3v.exceptions.ValidationException):
        raw_s3v.untag_resource(resourceArn=arn, tagKeys=["bad!"])
    err = _aws_fails(
        endpoint,
        "create-vector-bucket",
        "--vector-bucket-name",
        unique("kms"),
        "--encryption-configuration",
        "sseType=aws:kms,kmsKeyArn=not-a-key-arn",
    )
    assert "(ValidationException)" in err and "kmsKeyArn" in err
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.get_vector_bucket(vectorBucketArn="arn:aws:s3vectors:us-east-1:123456789012:bucket/UPPER")


def test_required_query_string_members_are_checked(raw_s3v: Any, unique: Any) -> None:
    # UntagResource's tagKeys travels in the query string; without it the service answered
    # 500 InternalServerException (a KeyError) instead of a ValidationException.
    arn = raw_s3v.create_vector_bucket(vectorBucketName=unique("untag"))["vectorBucketArn"]
    with pytest.raises(raw_s3v.exceptions.ValidationException) as exc:
        raw_s3v.untag_resource(resourceArn=arn)
    assert _code(exc) == ("ValidationException", 400)
    assert exc.value.response["fieldList"] == [{"path": "/tagKeys", "message": "Member must not be null"}]


def test_reserved_aws_tag_prefix_is_refused(s3v: Any, unique: Any, endpoint: str) -> None:
    # User Guide "Adding a tag to a vector bucket": a tag key that starts with the AWS
    # reserved prefix aws: is refused.
    name = unique("awstag")
    arn = s3v.create_vector_bucket(vectorBucketName=name, tags={"team": "a"})["vectorBucketArn"]
    for call in (
        lambda: s3v.tag_resource(resourceArn=arn, tags={"aws:cloudformation:stack": "x"}),
        lambda: s3v.create_vector_bucket(vectorBucketName=unique("awstag"), tags={"AWS:x": "y"}),
        lambda: s3v.create_index(
            vectorBucketName=name,
            indexName="idx",
            dataType="float32",
            dimension=2,
            distanceMetric="cosine",
            tags={"aws:x": "y"},
        ),
    ):
        with pytest.raises(s3v.exceptions.ValidationException) as exc:
            call()
        assert _code(exc) == ("ValidationException", 400) and "aws:" in str(exc.value)
    assert s3v.list_tags_for_resource(resourceArn=arn)["tags"] == {"team": "a"}
    assert s3v.list_indexes(vectorBucketName=name)["indexes"] == []
    err = _aws_fails(endpoint, "tag-resource", "--resource-arn", arn, "--tags", "aws:k=v")
    assert "(ValidationException)" in err
