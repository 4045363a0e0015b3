"""The local server reached through boto3's own environment variable
(``AWS_ENDPOINT_URL_S3VECTORS``) needs no credentials, as ``endpoint_url=`` in the URL does not
(it once failed with botocore's "Unable to locate credentials")."""

from __future__ import annotations

import os
from typing import Any

import pytest

import vectorport

pytestmark = pytest.mark.s3vectors


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL_S3VECTORS", "AWS_ENDPOINT_URL"])
def test_the_endpoint_from_the_environment_needs_no_credentials(
    endpoint: str, unique: Any, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv(variable, endpoint)
    with vectorport.connect(f"s3vectors://{unique('envep')}/docs", dimension=2, metric="cosine") as store:
        store.upsert([vectorport.Record("a", [1.0, 0.0], {"n": 1}, "x")])
        assert store.count() == 1
        store.drop()
