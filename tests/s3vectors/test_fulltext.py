"""Full-text and hybrid search (``textSearchConfigurations``, ``UpdateMetadataConfiguration``,
``QueryVectors.queryTexts``/``returnScores``) through boto3 and the AWS CLI.

Sources: the botocore model's documentation of these members and the User Guide pages
"Configuring full-text search" and "Querying with full-text and vector search": BM25 ranks a
full-text-only search, RRF fuses the vector ranking with one full-text ranking per query text
field, ``returnScores`` adds nothing to a vector-only request, full-text needs an ENHANCED
index, each ``queryTexts`` entry targets a distinct searchable key, and
``UpdateMetadataConfiguration`` takes ``add`` or ``delete`` but not both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vectorport.bucketserver import Limits, LocalServer

from .conftest import boto_client
from .test_awscli import aws

pytestmark = pytest.mark.s3vectors

DOCS: list[tuple[str, list[float], dict[str, Any]]] = [
    ("a", [1.0, 0.0], {"title": "Vector search basics", "body": "embeddings answer similarity queries"}),
    ("b", [0.0, 1.0], {"title": "Hybrid search", "body": "hybrid search fuses BM25 ranking with vectors"}),
    ("c", [1.0, 1.0], {"title": "Cooking pasta", "body": "boil water, add salt and pasta", "lang": "it"}),
    ("d", [1.0, 0.2], {"title": ["search", "tips"], "lang": "en"}),
    ("e", [0.3, 1.0], {"title": "Search search search", "lang": "en"}),
    ("f", [0.5, 0.5], {"body": "nothing to see"}),
]


def _code(exc: pytest.ExceptionInfo[Any]) -> tuple[str, int]:
    resp = exc.value.response
    return resp["Error"]["Code"], resp["ResponseMetadata"]["HTTPStatusCode"]


def _create(s3v: Any, bucket: str, name: str = "docs", **config: Any) -> dict[str, str]:
    s3v.create_index(
        vectorBucketName=bucket,
        indexName=name,
        dataType="float32",
        dimension=2,
        distanceMetric="euclidean",
        metadataConfiguration={
            "nonFilterableMetadataKeys": ["body"],
            "textSearchConfigurations": [{"metadataKey": "body", "language": "en"}, {"metadataKey": "title"}],
            **config,
        },
    )
    ids = {"vectorBucketName": bucket, "indexName": name}
    s3v.put_vectors(**ids, vectors=[{"key": k, "data": {"float32": v}, "metadata": m} for k, v, m in DOCS])
    return ids


@pytest.fixture
def docs(s3v: Any, unique: Any) -> dict[str, str]:
    bucket = unique("fts")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    return _create(s3v, bucket)


def _text(s3v: Any, ids: dict[str, str], *texts: tuple[str, str], **kw: Any) -> list[dict[str, Any]]:
    query = [{"metadataKey": key, "text": text} for key, text in texts]
    return list(s3v.query_vectors(**ids, topK=kw.pop("topK", 10), queryTexts=query, **kw)["vectors"])


def test_configurations_are_reported_active(s3v: Any, docs: dict[str, str]) -> None:
    config = s3v.get_index(**docs)["index"]["metadataConfiguration"]
    assert config == {
        "nonFilterableMetadataKeys": ["body"],
        "textSearchConfigurations": [
            {"metadataKey": "body", "language": "en", "status": "ACTIVE"},
            {"metadataKey": "title", "status": "ACTIVE"},
        ],
    }


def test_full_text_only_is_ranked_by_bm25(s3v: Any, docs: dict[str, str]) -> None:
    # Only records that contain a query term come back; the analyzer lowercases and splits on
    # punctuation; more occurrences in a field of similar length rank higher; a list of
    # strings is searchable text too.
    hits = _text(s3v, docs, ("title", "SEARCH"), returnScores=True, returnDistance=True)
    assert hits[0]["key"] == "e" and {h["key"] for h in hits} == {"a", "b", "d", "e"}
    for hit in hits:
        assert "distance" not in hit  # no query vector, no distance
        assert set(hit["scores"]) == {"bm25Scores"}
        (score,) = hit["scores"]["bm25Scores"]
        assert score["metadataKey"] == "title" and score["score"] > 0
    scores = [h["scores"]["bm25Scores"][0]["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert [h["key"] for h in _text(s3v, docs, ("body", "pasta."))] == ["c"]
    assert _text(s3v, docs, ("body", "absent-term")) == []
    # Without returnScores the results carry no scores.
    assert all(set(h) == {"key"} for h in _text(s3v, docs, ("title", "search")))
    # Two fields: the scores of each field the record matched.
    both = _text(s3v, docs, ("title", "pasta"), ("body", "pasta"), returnScores=True)
    assert both[0]["key"] == "c" and [s["metadataKey"] for s in both[0]["scores"]["bm25Scores"]] == [
        "title",
        "body",
    ]


def test_rarer_terms_weigh_more(s3v: Any, docs: dict[str, str]) -> None:
    # "cooking" is in one title of five, "search" in four: of two two-word titles matching one
    # term each, the one with the rare term ranks higher (BM25's idf).
    hits = _text(s3v, docs, ("title", "search cooking"), returnScores=True)
    keys = [h["key"] for h in hits]
    assert keys[0] == "c" and keys.index("c") < keys.index("b")
    score = {h["key"]: h["scores"]["bm25Scores"][0]["score"] for h in hits}
    assert score["c"] > score["b"] > 0


def test_filters_apply_to_full_text(s3v: Any, docs: dict[str, str]) -> None:
    assert [h["key"] for h in _text(s3v, docs, ("title", "search"), filter={"lang": "en"})] == ["e", "d"]
    with pytest.raises(s3v.exceptions.ValidationException):
        _text(s3v, docs, ("title", "search"), filter={"body": "x"})  # still non-filterable


def test_hybrid_fuses_with_reciprocal_rank_fusion(s3v: Any, docs: dict[str, str]) -> None:
    vector = {"float32": [1.0, 0.0]}
    top_k = 3
    by_vector = s3v.query_vectors(**docs, topK=top_k, queryVector=vector, returnDistance=True)["vectors"]
    by_text = _text(s3v, docs, ("title", "search"), topK=top_k)
    expected: dict[str, float] = {}
    for ranking in ([h["key"] for h in by_vector], [h["key"] for h in by_text]):
        for rank, key in enumerate(ranking, start=1):
            expected[key] = expected.get(key, 0.0) + 1.0 / (60 + rank)
    hybrid = s3v.query_vectors(
        **docs,
        topK=top_k,
        queryVector=vector,
        queryTexts=[{"metadataKey": "title", "text": "search"}],
        returnScores=True,
        returnDistance=True,
    )["vectors"]
    assert len(hybrid) == top_k
    best = sorted(expected.items(), key=lambda kv: (-kv[1], kv[0]))[:top_k]
    assert [h["key"] for h in hybrid] == [k for k, _ in best]
    distances = {h["key"]: h["distance"] for h in by_vector}
    for hit in hybrid:
        assert hit["scores"]["fused"] == pytest.approx(expected[hit["key"]])
        if hit["key"] in distances:  # matched the vector search
            assert hit["scores"]["vectorDistance"] == pytest.approx(distances[hit["key"]])
            assert hit["distance"] == pytest.approx(distances[hit["key"]])
        else:
            assert "vectorDistance" not in hit["scores"]


def test_return_scores_adds_nothing_to_vector_only_queries(s3v: Any, docs: dict[str, str]) -> None:
    hits = s3v.query_vectors(**docs, topK=2, queryVector={"float32": [1.0, 0.0]}, returnScores=True)
    assert all(set(h) == {"key"} for h in hits["vectors"])


def test_full_text_results_are_paginated(s3v: Any, unique: Any) -> None:
    bucket = unique("ftspage")
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket,
        indexName="idx",
        dataType="float32",
        dimension=2,
        distanceMetric="euclidean",
        metadataConfiguration={"textSearchConfigurations": [{"metadataKey": "t"}]},
    )
    ids = {"vectorBucketName": bucket, "indexName": "idx"}
    s3v.put_vectors(
        **ids,
        vectors=[
            {
                "key": f"k{i:03d}",
                "data": {"float32": [1.0, float(i)]},
                "metadata": {"t": "word " * (1 + i % 5)},
            }
            for i in range(230)
        ],
    )
    pages = list(
        s3v.get_paginator("query_vectors").paginate(
            **ids, topK=230, queryTexts=[{"metadataKey": "t", "text": "word"}]
        )
    )
    assert [len(p["vectors"]) for p in pages] == [100, 100, 30]
    assert len({v["key"] for p in pages for v in p["vectors"]}) == 230


def test_invalid_full_text_requests(s3v: Any, docs: dict[str, str]) -> None:
    bad: list[dict[str, Any]] = [
        {"queryTexts": [{"metadataKey": "lang", "text": "en"}]},  # not searchable
        {"queryTexts": [{"metadataKey": "title", "text": "a"}, {"metadataKey": "title", "text": "b"}]},
        {},  # neither queryVector nor queryTexts
    ]
    for extra in bad:
        with pytest.raises(s3v.exceptions.ValidationException) as exc:
            s3v.query_vectors(**docs, topK=3, **extra)
        assert _code(exc) == ("ValidationException", 400)


def test_update_metadata_configuration(s3v: Any, docs: dict[str, str]) -> None:
    add = {"textSearchConfigurations": [{"metadataKey": "lang"}]}
    arn = s3v.update_metadata_configuration(**docs, add=add)["indexArn"]
    assert arn == s3v.get_index(**docs)["index"]["indexArn"]
    assert [h["key"] for h in _text(s3v, docs, ("lang", "IT"))] == ["c"]  # indexed at once
    with pytest.raises(s3v.exceptions.ConflictException) as exc:
        s3v.update_metadata_configuration(**docs, add=add)
    assert _code(exc) == ("ConflictException", 409)
    delete = {"textSearchConfigurations": [{"metadataKey": "title"}]}
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.update_metadata_configuration(**docs, add=add, delete=delete)  # not both
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.update_metadata_configuration(**docs)  # nor neither
    s3v.update_metadata_configuration(**docs, delete=delete)
    keys = [
        c["metadataKey"]
        for c in s3v.get_index(**docs)["index"]["metadataConfiguration"]["textSearchConfigurations"]
    ]
    assert keys == ["body", "lang"]
    with pytest.raises(s3v.exceptions.ValidationException):
        _text(s3v, docs, ("title", "search"))
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.update_metadata_configuration(**docs, delete=delete)  # no longer configured
    with pytest.raises(s3v.exceptions.ValidationException):
        s3v.update_metadata_configuration(
            **docs, add={"textSearchConfigurations": [{"metadataKey": f"k{i}"} for i in range(9)]}
        )  # 2 + 9 > 10


@pytest.fixture(scope="module")
def classic() -> Iterator[Any]:
    """A server whose buckets count as created before 2026-09-30 (CLASSIC indexes)."""
    server = LocalServer(limits=Limits(enhanced_since=float("inf")))
    server.start()
    yield boto_client(server.url)
    server.stop()


def test_full_text_needs_an_enhanced_index(classic: Any) -> None:
    s3v = classic
    s3v.create_vector_bucket(vectorBucketName="old-fts")
    with pytest.raises(s3v.exceptions.ValidationException, match="ENHANCED"):
        _create(s3v, "old-fts")
    s3v.create_index(
        vectorBucketName="old-fts",
        indexName="plain",
        dataType="float32",
        dimension=2,
        distanceMetric="cosine",
    )
    ids = {"vectorBucketName": "old-fts", "indexName": "plain"}
    add = {"textSearchConfigurations": [{"metadataKey": "title"}]}
    with pytest.raises(s3v.exceptions.ValidationException, match="ENHANCED"):
        s3v.update_metadata_configuration(**ids, add=add)
    s3v.update_index_mode(**ids, indexMode="ENHANCED")
    s3v.update_metadata_configuration(**ids, add=add)
    s3v.put_vectors(
        **ids, vectors=[{"key": "x", "data": {"float32": [1.0, 0.0]}, "metadata": {"title": "hi"}}]
    )
    assert [h["key"] for h in _text(s3v, ids, ("title", "hi"))] == ["x"]
    with pytest.raises(s3v.exceptions.ValidationException, match="full-text"):
        s3v.update_index_mode(**ids, indexMode="CLASSIC")
    s3v.update_metadata_configuration(**ids, delete=add)
    s3v.update_index_mode(**ids, indexMode="CLASSIC")
    with pytest.raises(s3v.exceptions.ValidationException, match="ENHANCED"):
        _text(s3v, ids, ("title", "hi"))


def test_configurations_survive_a_restart(tmp_path: Path) -> None:
    server = LocalServer(tmp_path)
    s3v = boto_client(server.start())
    s3v.create_vector_bucket(vectorBucketName="durable")
    ids = _create(s3v, "durable")
    server.stop()
    server = LocalServer(tmp_path)
    s3v = boto_client(server.start())
    try:
        assert [h["key"] for h in _text(s3v, ids, ("body", "pasta"))] == ["c"]
        assert len(s3v.get_index(**ids)["index"]["metadataConfiguration"]["textSearchConfigurations"]) == 2
    finally:
        server.stop()


def test_aws_cli_reads_an_index_with_full_text(endpoint: str, docs: dict[str, str]) -> None:
    # The AWS CLI ships an older s3vectors model (no textSearchConfigurations, no queryTexts):
    # it must still read such an index and query it by vector.
    where = ["--vector-bucket-name", docs["vectorBucketName"], "--index-name", docs["indexName"]]
    info = aws(endpoint, "get-index", *where)["index"]
    assert info["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["body"]
    out = aws(
        endpoint,
        "query-vectors",
        *where,
        "--top-k",
        "1",
        "--query-vector",
        json.dumps({"float32": [0.0, 1.0]}),
    )
    assert [v["key"] for v in out["vectors"]] == ["b"]


def test_responses_match_the_model_output_shapes(s3v: Any, docs: dict[str, str]) -> None:
    from .test_fidelity import _shape_problems

    hybrid = s3v.query_vectors(
        **docs,
        topK=4,
        queryVector={"float32": [1.0, 0.0]},
        queryTexts=[{"metadataKey": "title", "text": "search"}, {"metadataKey": "body", "text": "pasta"}],
        returnScores=True,
        returnDistance=True,
        returnMetadata=True,
    )
    hybrid.pop("ResponseMetadata")
    assert _shape_problems("QueryVectorsOutput", hybrid) == []
    index = s3v.get_index(**docs)
    index.pop("ResponseMetadata")
    index["index"]["creationTime"] = 0  # parsed to a datetime by botocore
    assert _shape_problems("GetIndexOutput", index) == []
    out = s3v.update_metadata_configuration(
        **docs, add={"textSearchConfigurations": [{"metadataKey": "lang"}]}
    )
    out.pop("ResponseMetadata")
    assert _shape_problems("UpdateMetadataConfigurationOutput", out) == []
