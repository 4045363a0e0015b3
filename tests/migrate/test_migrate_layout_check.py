"""The plan names what a target's layout cannot hold before anything is written: a text over
2 KB for an index that LangChain created (its ``_page_content`` filterable), on the local bucket
server; the same records go through into an index vectorport creates in LangChain's layout."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import Record
from vectorport._features import SupportsLayoutCheck
from vectorport.cli import app
from vectorport.migrate import plan

pytestmark = pytest.mark.s3vectors
runner = CliRunner()


def _client(bucket_server: Any) -> Any:
    import boto3

    return boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


def _source(name: str) -> str:
    url = f"memory://{name}"
    records = [Record(f"short#{i}", [1.0, float(i)], {"i": i}, "a short text") for i in range(5)]
    records += [Record("long#0", [0.5, 1.0], {"i": 99}, "x" * 3000)]
    with vectorport.connect(url, dimension=2) as store:
        store.upsert(records)
    return url


def test_a_long_text_for_langchains_filterable_page_content_is_named_by_the_plan(bucket_server: Any) -> None:
    client = _client(bucket_server)
    client.create_vector_bucket(vectorBucketName="layout-check")
    # as langchain-aws AmazonS3Vectors creates an index: no non-filterable keys
    client.create_index(
        vectorBucketName="layout-check",
        indexName="langchain-made",
        dataType="float32",
        dimension=2,
        distanceMetric="cosine",
    )
    source = _source("layout-check-src")
    target = f"s3vectors://layout-check/langchain-made?endpoint_url={bucket_server.url}&layout=langchain"
    with vectorport.connect(target) as store:
        assert isinstance(store, SupportsLayoutCheck)
        assert "layout_check" in store.capabilities.features
    planned = plan(source, target)
    assert planned.refused and planned.records == 6
    group = planned.metadata_problems["layout: text in filterable metadata"]
    assert group.records == 1 and [o["key"] for o in group.occurrences.items] == ["long#0"]
    assert group.occurrences.items[0]["path"] == "metadata._page_content"
    assert "non-filterable" in group.message
    assert planned.policy_outcomes == {"flatten": 1, "stringify": 1, "drop": 1}  # no policy fixes a text
    res = runner.invoke(app, ["migrate", source, target, "--no-progress", "--json"])
    assert res.exit_code == 4, res.output
    report = json.loads(res.stdout)
    assert report["status"] == "refused"
    assert any("layout: text in filterable metadata" in r for r in report["plan"]["reasons"])
    assert client.list_vectors(vectorBucketName="layout-check", indexName="langchain-made")["vectors"] == []

    # vectorport creates its LangChain-layout indexes with _page_content non-filterable: all fit
    fresh = f"s3vectors://layout-check/langchain-fresh?endpoint_url={bucket_server.url}&layout=langchain"
    assert not plan(source, fresh).refused
    report_ok = vectorport.migrate.run(source, fresh)
    assert report_ok.status == "verified"
    with vectorport.connect(fresh) as copied:
        assert copied.get(["long#0"])[0].text == "x" * 3000
