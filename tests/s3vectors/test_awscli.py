"""The AWS CLI (``aws s3vectors …`` from the awscli package), a client nobody here wrote,
driving the local server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

pytestmark = pytest.mark.s3vectors

pytest.importorskip("awscli")


def aws(endpoint: str, *args: str) -> Any:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    env.pop("AWS_PROFILE", None)
    cmd = [sys.executable, "-m", "awscli", "s3vectors", *args, "--endpoint-url", endpoint, "--output", "json"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(args[:1])} failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_aws_cli_create_put_query_list(endpoint: str, unique: Any) -> None:
    bucket = unique("cli")
    aws(endpoint, "create-vector-bucket", "--vector-bucket-name", bucket)
    aws(
        endpoint,
        "create-index",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--data-type",
        "float32",
        "--dimension",
        "3",
        "--distance-metric",
        "cosine",
        "--metadata-configuration",
        json.dumps({"nonFilterableMetadataKeys": ["source_text"]}),
    )
    vectors = [
        {
            "key": "star-wars",
            "data": {"float32": [0.9, 0.1, 0.0]},
            "metadata": {"genre": "scifi", "year": 1977, "source_text": "A farm boy joins rebels"},
        },
        {
            "key": "jurassic-park",
            "data": {"float32": [0.8, 0.3, 0.1]},
            "metadata": {"genre": "scifi", "year": 1993},
        },
        {
            "key": "finding-nemo",
            "data": {"float32": [0.1, 0.9, 0.2]},
            "metadata": {"genre": ["family", "animation"], "year": 2003},
        },
    ]
    aws(
        endpoint,
        "put-vectors",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--vectors",
        json.dumps(vectors),
    )

    out = aws(
        endpoint,
        "query-vectors",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--top-k",
        "3",
        "--query-vector",
        json.dumps({"float32": [1.0, 0.0, 0.0]}),
        "--filter",
        json.dumps({"$and": [{"genre": "scifi"}, {"year": {"$gte": 1980}}]}),
        "--return-metadata",
        "--return-distance",
    )
    assert out["distanceMetric"] == "cosine"
    assert [v["key"] for v in out["vectors"]] == ["jurassic-park"]
    assert out["vectors"][0]["metadata"] == {"genre": "scifi", "year": 1993}
    assert 0.0 < out["vectors"][0]["distance"] < 0.2

    out = aws(
        endpoint,
        "query-vectors",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--top-k",
        "2",
        "--query-vector",
        json.dumps({"float32": [0.0, 1.0, 0.0]}),
        "--filter",
        json.dumps({"genre": "family"}),
    )
    assert [v["key"] for v in out["vectors"]] == ["finding-nemo"]

    listed = aws(
        endpoint,
        "list-vectors",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--return-metadata",
    )
    assert sorted(v["key"] for v in listed["vectors"]) == ["finding-nemo", "jurassic-park", "star-wars"]
    indexes = aws(endpoint, "list-indexes", "--vector-bucket-name", bucket)
    assert [i["indexName"] for i in indexes["indexes"]] == ["movies"]
    got = aws(
        endpoint,
        "get-vectors",
        "--vector-bucket-name",
        bucket,
        "--index-name",
        "movies",
        "--keys",
        "star-wars",
        "--return-data",
    )
    assert got["vectors"][0]["data"]["float32"] == pytest.approx([0.9, 0.1, 0.0], abs=1e-7)
    info = aws(endpoint, "get-index", "--vector-bucket-name", bucket, "--index-name", "movies")
    assert info["index"]["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["source_text"]


def test_aws_cli_reports_service_errors(endpoint: str, unique: Any) -> None:
    with pytest.raises(AssertionError, match="NotFoundException"):
        aws(endpoint, "get-index", "--vector-bucket-name", unique("nobucket"), "--index-name", "nothing")
