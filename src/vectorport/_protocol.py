"""The contract every store meets: what :func:`vectorport.connect` returns, and all that the
engine, the commands and the framework adapters use of a store. Annotate against
:class:`VectorStore`; implement by subclassing :class:`vectorport.BaseStore`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

from ._capabilities import Capabilities
from ._models import CollectionSpec, Metric, QueryResult, Record, ScanPage
from ._url import StoreURL
from .filters import FilterNode

__all__ = ["VectorStore"]

FilterLike = Mapping[str, Any] | FilterNode | None


@runtime_checkable
class VectorStore(Protocol):
    """One collection of chunk records in one backend, bound by :func:`vectorport.connect`."""

    name: ClassVar[str]
    """The backend name: ``memory``, ``pgvector``, ``chroma``, ``s3vectors``."""
    capabilities: ClassVar[Capabilities]
    url: StoreURL
    collection: str
    """The collection's name in the backend (a pgvector table, a bucket's index …)."""

    @property
    def spec(self) -> CollectionSpec:
        """The bound collection's spec; ``NotFoundError`` while the store is not bound."""
        ...

    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        """Open the collection; with ``dimension`` create it when missing. Checks the spec."""
        ...

    def ensure(self, spec: CollectionSpec) -> CollectionSpec:
        """Open the collection, creating it as ``spec`` says when missing (a migration's
        target, at its first write); an existing one is checked against ``spec``."""
        ...

    def check_filter(self, filter: FilterLike) -> None:
        """Refuse, before any I/O, a filter that is malformed or that the backend cannot apply."""
        ...

    def upsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int: ...

    def get(self, keys: Iterable[str], *, include: Iterable[str] | None = None) -> list[Record]: ...

    def delete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int: ...

    def delete_all(self) -> int:
        """Delete every record, keeping the (empty) collection."""
        ...

    def query(
        self,
        vector: Sequence[float] | Any,
        k: int = 10,
        *,
        filter: FilterLike = None,
        include: Iterable[str] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> QueryResult: ...

    def count(self) -> int: ...

    def scan(
        self,
        *,
        batch_size: int | None = None,
        include: Iterable[str] | None = None,
        segment: tuple[int, int] = (0, 1),
        cursor: str | None = None,
    ) -> Iterator[ScanPage]: ...

    def drop(self) -> None: ...

    def list_collections(self) -> list[str]: ...

    def close(self) -> None: ...

    def info(self) -> dict[str, Any]: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None:
        """:meth:`close`."""
        ...
