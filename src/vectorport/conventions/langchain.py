"""LangChain's conventions for stores that keep the text inside the metadata.

LangChain's ``AmazonS3Vectors`` (langchain-aws) stores ``Document.page_content`` under the
metadata key ``_page_content`` beside ``Document.metadata`` and the document id as the vector
key; reading pops the key back out (``""`` when it is missing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from .._models import JSON

__all__ = ["TEXT_KEY", "join_page_content", "split_page_content"]

TEXT_KEY: Final = "_page_content"
"""``AmazonS3Vectors(page_content_metadata_key=…)``'s default."""


def join_page_content(
    text: str | None, metadata: Mapping[str, JSON], *, text_key: str = TEXT_KEY
) -> dict[str, JSON]:
    """The metadata LangChain writes for ``Document(text, metadata=metadata)``.

    LangChain writes the text even when it is empty; a record without text gets no key, which
    LangChain reads as ``""`` all the same.

    >>> join_page_content("hi", {"a": 1})
    {'a': 1, '_page_content': 'hi'}
    """
    out = dict(metadata)
    if text is not None:
        out[text_key] = text
    return out


def split_page_content(
    metadata: Mapping[str, JSON], *, text_key: str = TEXT_KEY
) -> tuple[str | None, dict[str, JSON]]:
    """The text (``None`` when absent or not a string) and the rest of the metadata.

    >>> split_page_content({"a": 1, "_page_content": "hi"})
    ('hi', {'a': 1})
    """
    out = dict(metadata)
    text = out.pop(text_key, None)
    return (text if isinstance(text, str) else None), out
