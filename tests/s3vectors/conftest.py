"""A local S3-Vectors-compatible server for the whole session, and helpers."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("boto3")

from vectorport.backends.s3vectors.store import TEXT_KEY
from vectorport.bucketserver import LocalServer

from ..conftest import SUPABASE_KEY

_names = itertools.count()


@pytest.fixture
def unique() -> Any:
    """``unique(prefix)`` → a fresh lowercase resource name."""
    return lambda prefix: f"{prefix}-{next(_names)}"


@pytest.fixture(scope="session")
def server(bucket_server: LocalServer) -> LocalServer:
    """The shared session server of ``tests/conftest.py`` (Supabase mode on)."""
    return bucket_server


@pytest.fixture(scope="session")
def endpoint(server: LocalServer) -> str:
    return server.url


@pytest.fixture(scope="session")
def supabase_key() -> str:
    return SUPABASE_KEY


@pytest.fixture(scope="session")
def make_client() -> Any:
    """``make_client(endpoint, **botocore_config)`` → a boto3 s3vectors client with dummy keys."""
    return boto_client


def boto_client(endpoint: str, **config: Any) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3vectors",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}, **config),
    )


@pytest.fixture(scope="session")
def s3v(endpoint: str) -> Any:
    return boto_client(endpoint)


@pytest.fixture(scope="session")
def raw_s3v(endpoint: str) -> Any:
    """A client that skips botocore's own parameter validation: the server must catch it."""
    return boto_client(endpoint, parameter_validation=False)


def searchable_index(
    s3v: Any, bucket: str, index: str, dimension: int, metric: str, key: str = TEXT_KEY, **extra: Any
) -> None:
    """An index whose text key is full-text searchable, made as a user would with boto3."""
    s3v.create_vector_bucket(vectorBucketName=bucket)
    s3v.create_index(
        vectorBucketName=bucket,
        indexName=index,
        dataType="float32",
        dimension=dimension,
        distanceMetric=metric,
        metadataConfiguration={
            "nonFilterableMetadataKeys": [key],
            "textSearchConfigurations": [{"metadataKey": key}],
        },
        **extra,
    )
