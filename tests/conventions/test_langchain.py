"""LangChain's page content in the metadata."""

from __future__ import annotations

from vectorport.conventions.langchain import TEXT_KEY, join_page_content, split_page_content


def test_page_content_round_trips() -> None:
    assert TEXT_KEY == "_page_content"
    meta = join_page_content("chunk", {"a": 1})
    assert meta == {"a": 1, "_page_content": "chunk"}
    assert split_page_content(meta) == ("chunk", {"a": 1})


def test_no_text_is_no_key_and_a_non_string_is_no_text() -> None:
    assert join_page_content(None, {"a": 1}) == {"a": 1}
    assert split_page_content({"a": 1}) == (None, {"a": 1})
    assert split_page_content({"_page_content": 3}) == (None, {})
    assert split_page_content({"t": "x"}, text_key="t") == ("x", {})
