"""A mistyped bucket is reported as a missing bucket, a mistyped index as a missing index, each
with what exists there and the nearest name."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.exceptions import NotFoundError

pytestmark = pytest.mark.s3vectors


def test_wrong_bucket_and_wrong_index(endpoint: str, unique: Any) -> None:
    bucket = unique("tickets-bucket")
    made = vectorport.connect(f"s3vectors://{bucket}/support?endpoint_url={endpoint}", dimension=2)
    try:
        with pytest.raises(NotFoundError) as caught:
            vectorport.connect(f"s3vectors://{bucket[:-1]}x/support?endpoint_url={endpoint}")
        message = str(caught.value)
        assert f"vector bucket '{bucket[:-1]}x' does not exist" in message
        assert f"did you mean {bucket!r}?" in message and "index" not in message.split(";")[0]

        with pytest.raises(NotFoundError) as caught:
            vectorport.connect(f"s3vectors://{bucket}/suport?endpoint_url={endpoint}")
        message = str(caught.value)
        assert f"the index 'suport' does not exist in the vector bucket {bucket!r}" in message
        assert "did you mean 'support'? (the indexes in it: 'support')" in message

        result = CliRunner().invoke(app, ["info", f"s3vectors://{bucket}/suport?endpoint_url={endpoint}"])
        assert result.exit_code == 2
        assert "did you mean 'support'?" in result.stderr and "dimension=" not in result.stderr
    finally:
        made.drop()
        made.close()
