"""Bucket layouts: records written in each tool's documented shape read back as chunk text and
the user's metadata, detection from the index and its vectors, and what each layout refuses.

Records are written with plain boto3 in the shape each tool documents (the real LangChain and
LlamaIndex clients are exercised in ``tests/interop``); s3vectors-embed-cli needs Bedrock and
STS, so its shape comes from its README ("Metadata": ``S3VECTORS-EMBED-SRC-CONTENT`` holds the
text and should be non-filterable, ``S3VECTORS-EMBED-SRC-LOCATION`` the source file).
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

import pytest
from typer.testing import CliRunner

import vectorport
from vectorport.cli import app
from vectorport.exceptions import ConfigurationError, UnsupportedFilterError, ValidationError

pytestmark = pytest.mark.s3vectors

BUCKET = "layouts"


@pytest.fixture
def index(s3v: Any, unique: Any) -> str:
    with contextlib.suppress(s3v.exceptions.ConflictException):
        s3v.create_vector_bucket(vectorBucketName=BUCKET)
    return str(unique("lay"))


def _create(s3v: Any, index: str, non_filterable: list[str]) -> None:
    config = (
        {"metadataConfiguration": {"nonFilterableMetadataKeys": non_filterable}} if non_filterable else {}
    )
    s3v.create_index(
        vectorBucketName=BUCKET,
        indexName=index,
        dataType="float32",
        dimension=2,
        distanceMetric="cosine",
        **config,
    )


def _put(s3v: Any, index: str, items: list[tuple[str, dict[str, Any]]]) -> None:
    vectors = [
        {"key": key, "data": {"float32": [1.0, float(i + 1)]}, "metadata": meta}
        for i, (key, meta) in enumerate(items)
    ]
    s3v.put_vectors(vectorBucketName=BUCKET, indexName=index, vectors=vectors)


def _url(endpoint: str, index: str, extra: str = "") -> str:
    return f"s3vectors://{BUCKET}/{index}?endpoint_url={endpoint}&write_rate=0{extra}"


EMBED_CLI = [
    (
        "e1",
        {
            "S3VECTORS-EMBED-SRC-CONTENT": "File contents...",
            "S3VECTORS-EMBED-SRC-LOCATION": "s3://my-bucket/docs/file.txt",
            "category": "documentation",
        },
    ),
    ("e2", {"S3VECTORS-EMBED-SRC-CONTENT": "Sample text", "category": "documentation", "version": "1.0"}),
]
# What llama-index-vector-stores-s3 0.4 writes for TextNode(id_="n1", text="node text",
# metadata={"lang": "en"}) with no source document.
NODE = (
    '{"id_": "n1", "embedding": null, "metadata": {"lang": "en"}, "excluded_embed_metadata_keys": [], '
    '"excluded_llm_metadata_keys": [], "relationships": {}, "metadata_template": "{key}: {value}", '
    '"metadata_separator": "\\n", "text": "node text", "mimetype": "text/plain", "start_char_idx": null, '
    '"end_char_idx": null, "text_template": "{metadata_str}\\n\\n{content}", "class_name": "TextNode"}'
)
LLAMAINDEX = [("n1", {"lang": "en", "_node_content": NODE, "_node_type": "TextNode", "ref_doc_id": "None"})]
LANGCHAIN = [
    ("l1", {"_page_content": "page text", "genre": "scifi"}),
    ("l2", {"_page_content": "", "genre": "x"}),
]


@pytest.mark.parametrize(
    ("non_filterable", "items", "name", "expected"),
    [
        (
            ["S3VECTORS-EMBED-SRC-CONTENT"],
            EMBED_CLI,
            "s3vectors-embed-cli",
            {
                "e1": (
                    "File contents...",
                    {
                        "S3VECTORS-EMBED-SRC-LOCATION": "s3://my-bucket/docs/file.txt",
                        "category": "documentation",
                    },
                ),
                "e2": ("Sample text", {"category": "documentation", "version": "1.0"}),
            },
        ),
        (["_node_content", "_node_type"], LLAMAINDEX, "llamaindex", {"n1": ("node text", {"lang": "en"})}),
        ([], LANGCHAIN, "langchain", {"l1": ("page text", {"genre": "scifi"}), "l2": ("", {"genre": "x"})}),
        (["body"], [("c1", {"body": "custom text", "n": 1})], "text_key", {"c1": ("custom text", {"n": 1})}),
    ],
)
def test_a_tools_records_read_as_text_and_metadata(
    s3v: Any,
    index: str,
    endpoint: str,
    non_filterable: list[str],
    items: list[tuple[str, dict[str, Any]]],
    name: str,
    expected: dict[str, tuple[str, dict[str, Any]]],
) -> None:
    _create(s3v, index, non_filterable)
    _put(s3v, index, items)
    with vectorport.connect(_url(endpoint, index)) as store:
        assert store.info()["layout"]["name"] == name
        assert {r.key: (r.text, r.metadata) for r in store.records()} == expected
        best = store.query([1.0, 1.0], k=1)[0]
        assert (best.text, best.metadata) == expected[best.key]


def test_an_empty_index_goes_by_its_non_filterable_keys(s3v: Any, index: str, endpoint: str) -> None:
    _create(s3v, index, ["S3VECTORS-EMBED-SRC-CONTENT"])
    with vectorport.connect(_url(endpoint, index)) as store:
        assert store.info()["layout"] == {
            "name": "s3vectors-embed-cli",
            "text_key": "S3VECTORS-EMBED-SRC-CONTENT",
            "detected": "non-filterable keys",
        }
        store.upsert(
            [vectorport.Record("a", [1, 0], {"S3VECTORS-EMBED-SRC-LOCATION": "file:///a.txt"}, "text a")]
        )
    raw = s3v.get_vectors(vectorBucketName=BUCKET, indexName=index, keys=["a"], returnMetadata=True)
    assert raw["vectors"][0]["metadata"] == {
        "S3VECTORS-EMBED-SRC-LOCATION": "file:///a.txt",
        "S3VECTORS-EMBED-SRC-CONTENT": "text a",
    }


def test_a_mixed_index_is_read_by_its_majority_with_a_warning(
    s3v: Any, index: str, endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    _create(s3v, index, [])
    _put(s3v, index, [*LANGCHAIN, ("v1", {"vectorport_text": "mine"})])
    with (
        caplog.at_level(logging.WARNING, logger="vectorport"),
        vectorport.connect(_url(endpoint, index)) as store,
    ):
        assert store.info()["layout"]["name"] == "langchain"
    assert "mix layouts (langchain: 2, vectorport: 1)" in caplog.text


def test_the_url_names_a_layout_and_creation_declares_its_text_field(
    s3v: Any, index: str, endpoint: str
) -> None:
    expect = {
        "vectorport": ["vectorport_text"],
        "langchain": ["_page_content"],
        "llamaindex": ["_node_content", "_node_type"],
        "s3vectors-embed-cli": ["S3VECTORS-EMBED-SRC-CONTENT"],
    }
    for name, keys in expect.items():
        with vectorport.connect(
            _url(endpoint, f"{index}-{name[:4]}", f"&layout={name}"), dimension=2
        ) as store:
            got = s3v.get_index(vectorBucketName=BUCKET, indexName=f"{index}-{name[:4]}")["index"]
            assert got["metadataConfiguration"]["nonFilterableMetadataKeys"] == keys
            assert store.info()["layout"] == {"name": name, "text_key": keys[0], "detected": None}
    with vectorport.connect(_url(endpoint, index), dimension=2, text_key="chunk") as store:
        got = s3v.get_index(vectorBucketName=BUCKET, indexName=index)["index"]
        assert got["metadataConfiguration"]["nonFilterableMetadataKeys"] == ["chunk"]
        assert store.info()["layout"]["name"] == "text_key"


def test_llamaindex_layout_writes_a_node_and_refuses_its_keys(s3v: Any, index: str, endpoint: str) -> None:
    with vectorport.connect(_url(endpoint, index, "&layout=llamaindex"), dimension=2) as store:
        store.upsert([vectorport.Record("n1", [1, 0], {"lang": "en"}, "node text")])
        raw = s3v.get_vectors(vectorBucketName=BUCKET, indexName=index, keys=["n1"], returnMetadata=True)
        assert raw["vectors"][0]["metadata"] == LLAMAINDEX[0][1] | {"_node_content": NODE}
        with pytest.raises(ValidationError, match=r"_node_type.*reserved"):
            store.upsert([vectorport.Record("n2", [1, 0], {"_node_type": "x"}, "t")])
        with pytest.raises(UnsupportedFilterError, match="_node_content"):
            store.query([1, 0], filter={"_node_content": "x"})
        assert json.loads(raw["vectors"][0]["metadata"]["_node_content"])["text"] == "node text"


def test_layout_options_are_checked(endpoint: str) -> None:
    with pytest.raises(ConfigurationError, match=r"unknown bucket layout 'haystack'.*langchain"):
        vectorport.connect(_url(endpoint, "any", "&layout=haystack"))
    with pytest.raises(ConfigurationError, match="layout=langchain keeps the text under '_page_content'"):
        vectorport.connect(_url(endpoint, "any", "&layout=langchain&text_key=body"))


def test_info_names_the_layout(s3v: Any, index: str, endpoint: str) -> None:
    _create(s3v, index, [])
    _put(s3v, index, LANGCHAIN)
    result = CliRunner().invoke(app, ["info", _url(endpoint, index)])
    assert result.exit_code == 0, result.output
    assert "langchain, text in '_page_content' (detected: 2 of 2 sampled vectors)" in result.output
