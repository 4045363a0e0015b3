"""How a store class is composed of small collaborators, for every backend.

Each concern of a store is one small class holding what it needs (the store, a client, the
snapshot directory): pgvector's ``Capture``, s3vectors' ``BucketClient``, Chroma's
``ChromaConnection``, Parquet's ``Snapshot``. A method the store offers on behalf of a
collaborator (a feature protocol method such as ``text_query`` or ``check_integrity``, or a
:class:`~vectorport.BaseStore` primitive a part serves whole) is declared on the store class as
a :class:`Forward`: the store's method *is* the collaborator's, with its signature and
docstring, and the protocol checks (``isinstance(store, SupportsTextSearch)``) see it like any
method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ["Forward"]

P = ParamSpec("P")
R = TypeVar("R")


class Forward(Generic[P, R]):
    """A store method that is a collaborator's: ``text_query = Forward("text",
    TextSearch.text_query)`` makes ``store.text_query(...)`` call ``store.text.text_query(...)``."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.method = method
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Forward[P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> Forward[P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound: Callable[P, R] = getattr(getattr(obj, self.part), self.method.__name__)
        return bound

    def __call__(self, store: object, *args: P.args, **kwargs: P.kwargs) -> R:
        """Called through the class (``ParquetStore.check_integrity(store)``)."""
        return self.__get__(store)(*args, **kwargs)
