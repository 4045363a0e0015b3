"""The contract every store meets. Annotate against :class:`VectorStore`; implement by
subclassing :class:`vectorport.BaseStore`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Protocol, runtime_checkable

from ._capabilities import Capabilities
from ._models import CollectionSpec, QueryResult, Record, ScanPage
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

    @property
    def spec(self) -> CollectionSpec: ...

    def upsert(self, records: Iterable[Record], *, batch_size: int | None = None) -> int: ...

    def get(self, keys: Iterable[str], *, include: Iterable[str] | None = None) -> list[Record]: ...

    def delete(self, keys: Iterable[str] | None = None, *, filter: FilterLike = None) -> int: ...

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
