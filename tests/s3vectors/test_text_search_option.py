"""``text_search=``: an index vectorport creates (``connect(..., dimension=…)``, ``migrate`` into a
new index) gets full-text search on its text key, declared in the capabilities; refused before
any I/O where it cannot be had."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import vectorport
from vectorport._features import hybrid_search_of, text_search_of
from vectorport.backends.s3vectors import S3VectorsStore
from vectorport.backends.s3vectors._text import text_search_option
from vectorport.backends.s3vectors.store import TEXT_KEY

from .test_text_search import FEATURES, count_calls

pytestmark = pytest.mark.s3vectors

RECORDS = [
    vectorport.Record("tea", [1.0, 0.0], {"topic": "tea"}, "Green tea leaves are steamed after picking."),
    vectorport.Record("bread", [0.0, 1.0], {"topic": "bread"}, "Sourdough bread rises with wild yeast."),
    vectorport.Record("bees", [0.6, 0.8], {"topic": "bees"}, "Honey bees dance to show where flowers are."),
]


def configs(s3v: Any, bucket: str, index: str) -> list[dict[str, str]]:
    found = s3v.get_index(vectorBucketName=bucket, indexName=index)["index"]
    return list((found.get("metadataConfiguration") or {}).get("textSearchConfigurations") or [])


def test_connect_creates_a_searchable_index(endpoint: str, s3v: Any, unique: Any) -> None:
    name = unique("ts")
    url = f"s3vectors://text-option/{name}?endpoint_url={endpoint}&text_search=true"
    store = vectorport.connect(url, dimension=2, metric="cosine")
    mem = vectorport.connect("memory://text-option", dimension=2, metric="cosine")
    try:
        assert isinstance(store, S3VectorsStore)
        assert store.capabilities.features >= FEATURES
        assert configs(s3v, "text-option", name) == [{"metadataKey": TEXT_KEY, "status": "ACTIVE"}]
        assert store.info()["s3vectors"]["text_search_keys"] == [TEXT_KEY]
        for s in (store, mem):
            s.upsert(RECORDS)
        for text, flt in [("bread yeast", None), ("tea bees", {"topic": "bees"}), ("flowers", None)]:
            got = text_search_of(store).text_query(text, 3, filter=flt)
            want = text_search_of(mem).text_query(text, 3, filter=flt)
            assert [(m.key, m.score, m.extra) for m in got] == [(m.key, m.score, m.extra) for m in want]
            assert got.keys  # every text finds something
            fused = hybrid_search_of(store).hybrid_query([1, 0], text, 2, filter=flt, weight=0.3)
            ref = hybrid_search_of(mem).hybrid_query([1, 0], text, 2, filter=flt, weight=0.3)
            assert [(m.key, m.extra) for m in fused] == [(m.key, m.extra) for m in ref]
        # reopened without the option: the index itself says it is searchable
        with vectorport.connect(f"s3vectors://text-option/{name}?endpoint_url={endpoint}") as again:
            assert again.capabilities.features >= FEATURES
    finally:
        store.drop()
        store.close()
        mem.drop()


def test_a_language_and_another_layout(endpoint: str, s3v: Any, unique: Any) -> None:
    name = unique("ts-es")
    url = f"s3vectors://text-option/{name}?endpoint_url={endpoint}&layout=langchain"
    store = vectorport.connect(url, dimension=2, metric="euclidean", text_search="es")
    try:
        assert configs(s3v, "text-option", name) == [
            {"metadataKey": "_page_content", "language": "es", "status": "ACTIVE"}
        ]
        assert store.capabilities.features >= FEATURES
        store.upsert([vectorport.Record("a", [1, 0], {}, "el zorro rojo")])
        assert text_search_of(store).text_query("zorro").keys == ["a"]
    finally:
        store.drop()
        store.close()


def test_migrate_into_a_new_searchable_index(endpoint: str, unique: Any) -> None:
    src = vectorport.connect("memory://text-option-src", dimension=2, metric="cosine")
    src.upsert(RECORDS)
    name = unique("ts-mig")
    target = f"s3vectors://text-option/{name}?endpoint_url={endpoint}&text_search=true"
    try:
        report = vectorport.migrate.run(src, target)
        assert report.ok, report
        with vectorport.connect(target) as dst:
            assert dst.capabilities.features >= FEATURES
            assert text_search_of(dst).text_query("sourdough").keys == ["bread"]
            got, want = (text_search_of(s).text_query("bees flowers") for s in (dst, src))
            assert [(m.key, m.score) for m in got] == [(m.key, m.score) for m in want]
            dst.drop()
    finally:
        src.drop()


def test_refused_before_any_io(endpoint: str) -> None:
    # refused while the URL is read, before the store sends anything
    base = f"s3vectors://text-option/never?endpoint_url={endpoint}"
    with pytest.raises(vectorport.ConfigurationError, match="text_search must be true, false or"):
        vectorport.connect(f"{base}&text_search=maybe", dimension=2)
    with pytest.raises(vectorport.ConfigurationError, match="inside a JSON node"):
        vectorport.connect(f"{base}&layout=llamaindex&text_search=true", dimension=2)
    parsed = [text_search_option(v) for v in (None, False, "false", "0", True, "TRUE", "on", "es", " ZH ")]
    assert parsed == [None, None, None, None, "", "", "", "es", "zh"]


def test_an_existing_index_is_not_changed(
    endpoint: str, unique: Any, caplog: pytest.LogCaptureFixture
) -> None:
    name = unique("ts-old")
    plain = vectorport.connect(f"s3vectors://text-option/{name}?endpoint_url={endpoint}", dimension=2)
    plain.upsert(RECORDS)
    asked = f"s3vectors://text-option/{name}?endpoint_url={endpoint}&text_search=true"
    try:
        with caplog.at_level(logging.WARNING, logger="vectorport"):
            store = vectorport.connect(asked, dimension=2)
        assert "text_search applies when vectorport creates the index" in caplog.text
        assert isinstance(store, S3VectorsStore)
        assert not FEATURES & store.capabilities.features
        calls = count_calls(store)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="no text search"):
            text_search_of(store)
        with pytest.raises(vectorport.UnsupportedFeatureError, match="not full-text searchable"):
            store.text_query("tea")
        assert calls == []
        store.close()
    finally:
        plain.drop()
        plain.close()


def test_a_new_index_follows_the_source_language_and_verify_compares_it(
    endpoint: str, s3v: Any, unique: Any
) -> None:
    """A Spanish index migrated into a new one made with ``text_search=true`` analyzes in Spanish
    too (as the raw client reads the index); into one analyzing French, ``verify`` reports the
    language difference: the same records searched in another language are not the same store."""
    base = f"s3vectors://text-option/{{}}?endpoint_url={endpoint}"
    src_name, same, other = unique("ts-src"), unique("ts-same"), unique("ts-fr")
    src = vectorport.connect(base.format(src_name), dimension=2, text_search="es")
    src.upsert([vectorport.Record("a", [1, 0], {}, "los zorros corren"), *RECORDS])
    french = vectorport.connect(base.format(other), dimension=2, text_search="fr")
    try:
        assert src.text_language == "spanish"  # type: ignore[attr-defined]
        assert src.info()["s3vectors"]["text_search_language"] == "spanish"
        report = vectorport.migrate.run(src.url.raw, base.format(same) + "&text_search=true")
        assert report.ok, report
        assert configs(s3v, "text-option", same) == [
            {"metadataKey": TEXT_KEY, "language": "es", "status": "ACTIVE"}
        ]
        assert any("language" in note for note in report.plan.notes), report.plan.notes
        french.upsert(list(src.get(["a", "tea", "bread", "bees"])))
        checked = vectorport.migrate.verify(src.url.raw, french.url.raw, sample_queries=0)
        assert not checked.ok
        assert "text search language: source spanish, target french" in checked.collection, checked.collection
        assert vectorport.migrate.verify(src.url.raw, base.format(same), sample_queries=0).ok
    finally:
        for name in (src_name, same, other):
            with vectorport.connect(base.format(name)) as s:
                s.drop()
