"""Members carry their embedder: a member's recorded embedding model resolves to an embedder
(:func:`vectorport.ingest.embedders.resolve_embedder`), so a text query or a written text is
embedded by *each member's own model*.

A vector reaches only the members of the model it came from; a member of another model receives
the text, embedded again by its model (writes: off the app's call, through the repair queue,
:mod:`._writes`; shadow reads: in the shadow thread, :mod:`._shadow`). A record without text
cannot be embedded again: a write of one is refused by name before anything is written.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from .._embedder import Embedder
from .._models import Include, QueryResult, Record
from ..exceptions import Advice, Advised, Call, ConfigurationError, Problem, ValidationError
from ..ingest.embedders import resolve_embedder, same_model
from ._model import Member

__all__ = ["Embedders", "EmbedsText", "other_model", "reembedded", "require_text"]


@runtime_checkable
class EmbedsText(Protocol):
    """A store that embeds texts itself, with its members' own models (the alias store): the
    framework adapters hand it texts, not the vectors of their own embedding function."""

    @property
    def text_model(self) -> str:
        """The model a text query is embedded with now (the serving member's); empty: none the
        store can run, so the caller embeds with its own function and passes vectors."""
        ...

    def add_texts(
        self, keys: Sequence[str], texts: Sequence[str], metadatas: Sequence[Mapping[str, Any]]
    ) -> None: ...

    def query_text(
        self, text: str, k: int = 10, *, filter: Any = None, include: Sequence[Include] = ...
    ) -> QueryResult: ...


def other_model(a: Member, b: Member) -> bool:
    """Whether the two members' vectors come from different embedding models."""
    return not same_model(a.embedding_model, b.embedding_model)


class Embedders:
    """The embedders of an alias's members in this process, loaded once per model."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded: dict[str, Embedder] = {}

    def of(self, member: Member) -> Embedder:
        """The embedder of ``member``'s recorded model."""
        model = member.embedding_model
        if not model:
            raise ConfigurationError(
                Advised.of(
                    "{} records no embedding model, so a text cannot be embedded for it; shadow it with `{}`",
                    member.label,
                    Call("alias shadow", ("NAME", "URL"), (Advice("model", "SPEC"),)),
                )
            )
        with self._lock:
            if model not in self._loaded:
                self._loaded[model] = resolve_embedder(model)
            return self._loaded[model]


def require_text(records: Sequence[Record], member: Member) -> None:
    """Refuse, naming them, records a member of another model cannot embed (no text)."""
    why = f"no text: {member.label} embeds with another model ({member.embedding_model})"
    bare = [Problem(r.key, "text", why) for r in records if not r.text]
    if bare:
        raise ValidationError(bare, backend="alias", hint="write the records with their text")


def reembedded(records: Sequence[Record], embedder: Embedder) -> list[Record]:
    """``records`` with their vectors computed again from their text by ``embedder``."""
    if not records:
        return []
    vectors = embedder.embed_documents([r.text or "" for r in records])
    return [replace(r, vector=[float(x) for x in v]) for r, v in zip(records, vectors, strict=True)]
