"""Collection names in migrations, on real backends: a target URL that names no collection gets
the source's name made valid for the target (``plain_default`` → ``plain-default`` for a bucket
index); one that names an invalid collection is refused by the plan (exit 4) with a valid name,
before anything is written. The rules themselves are checked against Chroma and the local
bucket server, which refuse what the rules refuse and accept every proposal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport import InvalidNameError, Record
from vectorport.cli import app
from vectorport.migrate import PlanRefusedError, plan

runner = CliRunner()

ODD_NAMES = [
    "plain_default",
    "Plain Default",
    "ab",
    "a",
    "_x_",
    "1.2.3.4",
    "a..b",
    "x" * 70,
    "é-docs",
    "docs.",
    "données_2024",
    "a\nb",
    "y" * 45,
    "ü" * 30,
    "-",
    "...",
]


def _records(n: int = 12) -> list[Record]:
    return [Record(f"doc#{i}", [1.0, float(i), 0.5], {"i": i, "lang": "en"}, f"text {i}") for i in range(n)]


def _chroma_source(chroma_dir: str, name: str) -> str:
    url = f"chroma://{chroma_dir}/names-src?collection={name}"
    with vectorport.connect(url, dimension=3) as store:
        store.upsert(_records())
    return url


def _bucket(bucket_server: Any, bucket: str, index: str = "") -> str:
    return f"s3vectors://{bucket}/{index}?endpoint_url={bucket_server.url}"


def _indexes(bucket_server: Any, bucket: str) -> list[str]:
    import boto3

    client = boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    try:
        return sorted(i["indexName"] for i in client.list_indexes(vectorBucketName=bucket)["indexes"])
    except client.exceptions.NotFoundException:
        return []


# ---------------------------------------------------------------------------- the rules


@pytest.mark.chroma
def test_chroma_rule_agrees_with_chroma_and_its_proposals_are_accepted(tmp_path: Path) -> None:
    import chromadb

    from vectorport.backends.chroma._client import COLLECTION_NAMES

    client = chromadb.PersistentClient(str(tmp_path / "db"))
    names = [*ODD_NAMES, "abc", "A.b", "a" * 512, "a" * 513, "999.999.999.999", "::1"]
    for name in names:
        problem = COLLECTION_NAMES.problem(name)
        try:
            client.create_collection(name)
            accepted = True
        except Exception:  # chromadb's InvalidArgumentError (and ValueError for some inputs)
            accepted = False
        assert accepted == (problem is None), (name, problem)
        proposal = COLLECTION_NAMES.propose(name)
        assert COLLECTION_NAMES.problem(proposal) is None
        assert proposal == COLLECTION_NAMES.propose(name)  # deterministic
        client.get_or_create_collection(proposal)
    assert COLLECTION_NAMES.propose("plain_default") == "plain_default"


@pytest.mark.s3vectors
def test_index_rule_agrees_with_the_bucket_server_and_its_proposals_are_accepted(bucket_server: Any) -> None:
    import boto3

    from vectorport.backends.s3vectors._client import INDEX_NAMES

    client = boto3.client(
        "s3vectors",
        endpoint_url=bucket_server.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )
    client.create_vector_bucket(vectorBucketName="names-rule")
    for name in [*ODD_NAMES, "abc", "a.b.c", "a" * 63, "a" * 64]:
        problem = INDEX_NAMES.problem(name)
        try:
            client.create_index(
                vectorBucketName="names-rule",
                indexName=name,
                dataType="float32",
                dimension=2,
                distanceMetric="cosine",
            )
            accepted = True
        except Exception:  # the server's ValidationException, or botocore's own length check
            accepted = False
        assert accepted == (problem is None), (name, problem)
        proposal = INDEX_NAMES.propose(name)
        assert INDEX_NAMES.problem(proposal) is None, proposal
        if proposal not in _indexes(bucket_server, "names-rule"):
            client.create_index(
                vectorBucketName="names-rule",
                indexName=proposal,
                dataType="float32",
                dimension=2,
                distanceMetric="cosine",
            )
    assert INDEX_NAMES.propose("plain_default") == "plain-default"


def test_invalid_names_are_refused_before_any_io_with_a_valid_one(tmp_path: Path) -> None:
    never = tmp_path / "never"
    with pytest.raises(InvalidNameError, match="'plain-default' is one") as info:
        vectorport.connect("s3vectors://bucket/plain_default?endpoint_url=http://127.0.0.1:9", dimension=3)
    assert info.value.name == "plain_default" and info.value.proposal == "plain-default"
    with pytest.raises(InvalidNameError, match="'a-63617a37' is one"):
        vectorport.connect(f"chroma://{never}?collection=a_", dimension=3)
    with pytest.raises(InvalidNameError, match=r"45 UTF-8 bytes.*'y{31}_[0-9a-f]{8}' is one"):
        vectorport.connect(f"pgvector://{never}?table={'y' * 45}", dimension=3)
    for url in (
        "s3vectors://bucket?endpoint_url=http://127.0.0.1:9",
        f"chroma://{never}",
        f"pgvector://{never}",
    ):
        with pytest.raises(InvalidNameError) as missing:
            vectorport.connect(url, dimension=3)
        assert missing.value.name is None and missing.value.proposal is None
    assert not never.exists()


# ---------------------------------------------------------------------------- migrations


@pytest.mark.chroma
@pytest.mark.s3vectors
def test_a_bucket_url_without_an_index_gets_the_source_name_made_valid(
    chroma_dir: str, bucket_server: Any, tmp_path: Path
) -> None:
    source = _chroma_source(chroma_dir, "plain_default")
    target = _bucket(bucket_server, "names-derived")
    planned = plan(source, target)
    assert not planned.refused and planned.target_spec.name == "plain-default"
    assert planned.target_name is not None and planned.target_name.given is None
    assert any("'plain-default' is used" in n and "'_'" in n for n in planned.notes)
    assert _indexes(bucket_server, "names-derived") == []  # the plan wrote nothing
    ck = str(tmp_path / "ck.json")
    res = runner.invoke(app, ["migrate", source, target, "--checkpoint", ck, "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["status"] == "verified"
    assert report["plan"]["target_name"]["name"] == "plain-default"
    assert report["plan"]["target_name"]["derived"] is True
    assert _indexes(bucket_server, "names-derived") == ["plain-default"]
    with vectorport.connect(_bucket(bucket_server, "names-derived", "plain-default")) as copied:
        assert copied.count() == 12
        assert copied.get(["doc#3"])[0].text == "text 3"
    # the library's verify finds the same derived index
    assert vectorport.verify(source, target).ok


@pytest.mark.chroma
@pytest.mark.s3vectors
def test_a_bucket_url_naming_an_invalid_index_is_refused_with_a_valid_one(
    chroma_dir: str, bucket_server: Any, tmp_path: Path
) -> None:
    source = _chroma_source(chroma_dir, "plain_default")
    target = _bucket(bucket_server, "names-refused", "plain_default")
    res = runner.invoke(app, ["migrate", source, target, "--plan", "--json"])
    assert res.exit_code == 4, res.output
    data = json.loads(res.stdout)["plan"]
    assert data["refused"] and data["records"] == 12  # the whole plan, not only the name
    assert data["target_name"] == {
        "name": "plain-default",
        "given": "plain_default",
        "source": "plain_default",
        "derived": False,
        "problem": "it holds '_'",
        "rule": "3-63 lowercase letters, digits, hyphens and dots, beginning and ending with a letter "
        "or digit",
    }
    assert "'plain_default' is not a valid S3 Vectors index name" in data["reasons"][0]
    assert "'plain-default'" in data["suggestion"]
    ck = str(tmp_path / "ck.json")
    res = runner.invoke(app, ["migrate", source, target, "--checkpoint", ck, "--no-progress"])
    assert res.exit_code == 4, res.output
    assert "plain-default" in res.stdout
    with pytest.raises(PlanRefusedError, match="plain-default"):
        vectorport.migrate.run(source, target)
    assert _indexes(bucket_server, "names-refused") == []  # nothing written, not even the bucket's index
    with pytest.raises(vectorport.ConfigurationError, match="name the target 'plain-default'"):
        vectorport.verify(source, target)  # never against the proposal in its place
    # the proposal, named in the URL, runs
    fixed = _bucket(bucket_server, "names-refused", "plain-default")
    assert vectorport.migrate.run(source, fixed, checkpoint=tmp_path / "ck2.json").status == "verified"


@pytest.mark.chroma
@pytest.mark.s3vectors
def test_an_invalid_bucket_name_is_not_taken_for_the_index(chroma_dir: str, bucket_server: Any) -> None:
    source = _chroma_source(chroma_dir, "plain_default")
    res = runner.invoke(app, ["migrate", source, _bucket(bucket_server, "Bad_Bucket", "docs"), "--plan"])
    assert res.exit_code == 2, res.output  # a bad URL: 2 in every command
    assert "vector bucket name" in res.output and "'bad-bucket' is one" in res.output


@pytest.mark.chroma
def test_a_chroma_url_without_a_collection_gets_the_source_name_made_valid(chroma_dir: str) -> None:
    source = vectorport.connect("memory://", collection="names Odd..", dimension=3)
    source.upsert(_records(5))
    target = f"chroma://{chroma_dir}/names-dst"
    report = vectorport.migrate.run(source, target)
    assert report.status == "verified", report.to_dict()
    assert report.plan is not None and report.plan.target_spec.name == "names-Odd"
    with vectorport.connect(f"{target}?collection=names-Odd") as copied:
        assert copied.count() == 5
    source.drop()


@pytest.mark.chroma
@pytest.mark.pgvector
def test_a_pgvector_url_without_a_table_gets_a_short_enough_name(
    chroma_dir: str, pg_dir: Path, tmp_path: Path
) -> None:
    long_name = "a_chroma_collection_with_a_name_longer_than_forty_bytes"
    source = _chroma_source(chroma_dir, long_name)
    target = f"pgvector://{pg_dir}"
    planned = plan(source, target)
    name = planned.target_spec.name
    assert not planned.refused and name.startswith(long_name[:31]) and len(name) == 40, name
    report = vectorport.migrate.run(source, target, checkpoint=tmp_path / "ck.json")
    assert report.status == "verified"
    with vectorport.connect(f"pgvector://{pg_dir}?table={name}") as copied:
        assert copied.count() == 12
        copied.drop()
    refused = plan(source, f"pgvector://{pg_dir}?table={long_name}")
    assert refused.refused and refused.target_name is not None and refused.target_name.name == name
