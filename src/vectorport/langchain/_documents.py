"""What LangChain's store API, sync and awaitable, shares: texts to write as records, a search's
checked arguments, and matches as LangChain documents."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from langchain_core.documents import Document
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from .._handle import StoreHandle
from .._models import Match, Record
from ..exceptions import ConfigurationError, Problem, ValidationError

__all__ = ["READ", "Batch", "Search", "delete_filter", "document", "store_argument"]


def store_argument(kwargs: dict[str, Any], method: str) -> Any:
    """The ``store=`` a constructor method was given (taken out of ``kwargs``)."""
    if "store" not in kwargs:
        raise ConfigurationError(
            f"{method} needs store= (a vectorport URL such as 'memory://docs', or a store)"
        )
    return kwargs.pop("store")


READ = ("metadata", "text")


@dataclass(frozen=True)
class Batch:
    """Texts to write, with their keys and metadata, checked before anything is embedded."""

    texts: list[str]
    metadatas: list[dict[str, Any]]
    keys: list[str]

    @classmethod
    def of(
        cls, texts: Iterable[str], metadatas: list[dict[str, Any]] | None, ids: Sequence[str | None] | None
    ) -> Batch:
        if isinstance(texts, str | bytes):
            # iterated, one string is one document per character
            raise ConfigurationError(
                f"add_texts takes a list of texts, not one {type(texts).__name__}: add_texts([text], …)"
            )
        listed = list(texts)
        metas = [dict(m or {}) for m in metadatas] if metadatas is not None else [{} for _ in listed]
        if len(metas) != len(listed):
            raise ConfigurationError(f"got {len(listed)} texts but {len(metas)} metadatas")
        batch = cls(listed, metas, keys_for(ids, len(listed)))
        problems = [
            Problem(
                key, "text", f"is {type(text).__name__}, not a string: a LangChain document's page_content"
            )
            for key, text in zip(batch.keys, listed, strict=True)
            if not isinstance(text, str)
        ]
        if problems:
            raise ValidationError(
                problems[:20], backend="langchain", outcome="nothing was embedded or written"
            )
        return batch

    def records(self, vectors: Sequence[Sequence[float]]) -> list[Record]:
        if len(vectors) != len(self.texts):
            raise ConfigurationError(
                f"the embedding function returned {len(vectors)} vectors for {len(self.texts)} texts"
            )
        rows = zip(self.keys, vectors, self.metadatas, self.texts, strict=True)
        return [Record(key, vector, meta, text) for key, vector, meta, text in rows]


@dataclass(frozen=True)
class Search:
    """One search's arguments for the store, checked (filter included) before any I/O."""

    arguments: dict[str, Any]

    @classmethod
    def of(
        cls,
        vector: Sequence[float],
        k: int,
        filter: Any,
        options: Mapping[str, Any],
        handle: StoreHandle,
        *,
        vectors: bool,
    ) -> Search:
        unknown = sorted(set(options) - {"params"})
        if unknown:
            raise ConfigurationError(f"unknown search options: {', '.join(unknown)} (known: filter, params)")
        handle.check_filter(filter)
        include = [*READ, "vector"] if vectors else list(READ)
        params = options.get("params")
        return cls({"vector": vector, "k": k, "filter": filter, "include": include, "params": params})

    @staticmethod
    def pairs(matches: Sequence[Match]) -> list[tuple[Document, float]]:
        return [(document(m.key, m.text, m.metadata or {}), m.distance) for m in matches]

    def diverse(self, matches: Sequence[Match], k: int, lambda_mult: float) -> list[Document]:
        if not matches:
            return []
        picked = maximal_marginal_relevance(
            np.asarray(self.arguments["vector"], dtype=np.float32),
            [[float(x) for x in np.asarray(m.vector)] for m in matches],
            lambda_mult=lambda_mult,
            k=k,
        )
        return [document(matches[i].key, matches[i].text, matches[i].metadata or {}) for i in picked]


def keys_for(ids: Sequence[str | None] | None, n: int) -> list[str]:
    if ids is None:
        return [str(uuid.uuid4()) for _ in range(n)]
    if len(ids) != n:
        raise ConfigurationError(f"got {n} texts but {len(ids)} ids")
    return [str(uuid.uuid4()) if i is None else i for i in ids]


def document(key: str, text: str | None, metadata: Mapping[str, Any]) -> Document:
    return Document(id=key, page_content=text or "", metadata=dict(metadata))


def delete_filter(ids: list[str] | None, kwargs: dict[str, Any], handle: StoreHandle) -> Any:
    """The ``filter=`` of a ``delete`` call (taken out of ``kwargs``), checked: a delete takes ids
    or a filter, and nothing else."""
    flt = kwargs.pop("filter", None)
    if kwargs:
        raise ConfigurationError(f"delete() takes ids or filter=, not {', '.join(sorted(kwargs))}")
    if (ids is None) == (flt is None):
        raise ConfigurationError("delete() takes either ids or filter=, not both or neither")
    handle.check_filter(flt)
    return flt


def embedded(embedding: Any, method: str, rows: Any) -> list[list[float]]:
    """``rows`` the embedding function returned, checked: one row of numbers per text (a
    ``None`` once reached the store as a raw ``TypeError``)."""
    where = f"the embedding function {type(embedding).__name__}.{method}"
    if not isinstance(rows, Sequence) or isinstance(rows, str):
        raise ConfigurationError(f"{where} returned {type(rows).__name__}, not a list of vectors")
    if not rows:
        raise ConfigurationError(f"{where} returned no vectors")
    for i, row in enumerate(rows):
        if not isinstance(row, Sequence | np.ndarray) or isinstance(row, str) or not len(row):
            raise ConfigurationError(f"{where} returned {type(row).__name__} for text {i}, not a vector")
    return list(rows)
