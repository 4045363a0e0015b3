"""Chroma and transport errors mapped onto the vectorport exception tree, in one place.

chromadb raises the same ``ChromaError`` subclasses from the embedded Rust bindings and from
``HttpClient`` (the server's JSON error names are mapped back to these classes), except that
some server-side conditions arrive as the base ``ChromaError`` with only a message, and
transport failures surface as ``httpx`` errors or as a ``ValueError`` raised from one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from chromadb import errors as chroma_errors

from ...exceptions import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    TransientError,
    VectorportError,
)

__all__ = ["map_errors"]

# Chroma error class → vectorport class, most specific first (sorted by intent, not name).
_BY_CLASS: tuple[tuple[type[BaseException], type[VectorportError]], ...] = (
    (chroma_errors.NotFoundError, NotFoundError),
    (chroma_errors.UniqueConstraintError, ConflictError),
    (chroma_errors.IDAlreadyExistsError, ConflictError),
    (chroma_errors.RateLimitError, TransientError),
    (chroma_errors.InvalidArgumentError, ConfigurationError),
    (chroma_errors.InvalidDimensionException, ConfigurationError),
    (chroma_errors.InvalidUUIDError, ConfigurationError),
    (chroma_errors.DuplicateIDError, ConfigurationError),
    (chroma_errors.BatchSizeExceededError, ConfigurationError),
    (chroma_errors.AuthorizationError, ConfigurationError),
    (chroma_errors.ChromaAuthError, ConfigurationError),
    (chroma_errors.QuotaError, ConfigurationError),
    (chroma_errors.VersionMismatchError, ConfigurationError),
    (httpx.TimeoutException, TransientError),
    (httpx.TransportError, BackendUnavailableError),
)

# Conditions that the HTTP server reports as a bare ``ChromaError``: matched on the message.
_BY_MESSAGE: tuple[tuple[str, type[VectorportError]], ...] = (
    ("already exists", ConflictError),
    ("does not exist", NotFoundError),
)


def _classify(exc: BaseException) -> type[VectorportError] | None:
    for cls, target in _BY_CLASS:
        if isinstance(exc, cls):
            return target
    if isinstance(exc, chroma_errors.ChromaError):
        text = str(exc)
        for needle, target in _BY_MESSAGE:
            if needle in text:
                return target
        return BackendError
    # HttpClient() wraps a refused connection in a ValueError ("Could not connect to a
    # Chroma server"), keeping the httpx error as its context.
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, ValueError) and isinstance(cause, httpx.TransportError):
        return BackendUnavailableError
    return None


@contextmanager
def map_errors(what: str) -> Iterator[None]:
    """Re-raise driver errors inside the block as vectorport errors, ``from`` the original.

    ``what`` names the backend, collection and operation for the message, e.g.
    ``"chroma collection 'docs' at chroma:///data: upsert"``.
    """
    try:
        yield
    except VectorportError:
        raise
    except Exception as exc:
        target = _classify(exc)
        if target is None:
            raise
        hint = {
            BackendUnavailableError: "; is the Chroma server running and reachable?",
            NotFoundError: "; check the collection name (vectorport.connect(..., dimension=) creates it)",
            TransientError: "; retrying",
        }.get(target, "")
        raise target(f"{what}: {type(exc).__name__}: {exc}{hint}") from exc
