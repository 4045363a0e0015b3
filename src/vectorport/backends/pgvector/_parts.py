"""How :class:`~vectorport.backends.pgvector.PgVectorStore` is composed of its collaborators.

Each concern of the store is one small class holding the store it serves (``Capture``:
change capture, …). A method the store offers on behalf of a collaborator (a feature protocol
method such as ``setup_capture``) is declared on the store class as a :class:`Forward`: the
store's method *is* the collaborator's, with its signature and docstring, and the protocol
checks (``isinstance(store, SupportsChangeFeed)``) see it like any method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

__all__ = ["Forward"]

P = ParamSpec("P")
R = TypeVar("R")


class Forward(Generic[P, R]):
    """A store method that is a collaborator's: ``setup_capture = Forward("capture",
    Capture.setup_capture)`` makes ``store.setup_capture(...)`` call
    ``store.capture.setup_capture(...)``."""

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
        """Called through the class (``PgVectorStore.setup_capture(store)``)."""
        return self.__get__(store)(*args, **kwargs)
