"""Chroma and transport errors mapped onto the vectorport exception tree, in one place.

chromadb raises the same ``ChromaError`` subclasses from the embedded Rust bindings and from
``HttpClient`` (the server's JSON error names are mapped back to these classes), except that
some server-side conditions arrive as the base ``ChromaError`` with only a message,
transport failures surface as ``httpx`` errors or as a ``ValueError`` raised from one, and an
HTTP answer that is not a Chroma JSON error (another service on that port, a proxy's 502) as a
bare ``Exception`` of the response body, classified here by its HTTP status.
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
    (httpx.ConnectTimeout, BackendUnavailableError),  # no server answering: retrying will not help
    (httpx.TimeoutException, TransientError),
    # a kept-alive connection the server closed as the request went out ("Server disconnected
    # without sending a response", seen in CI after a 5 s pause): a new connection gets through,
    # and every write is an upsert by key, so sending it again is safe. A server that is gone
    # refuses the retry's new connection, which is BackendUnavailableError at once.
    (httpx.RemoteProtocolError, TransientError),
    (httpx.TransportError, BackendUnavailableError),
)

# Conditions that the HTTP server reports as a bare ``ChromaError``: matched on the message.
_BY_MESSAGE: tuple[tuple[str, type[VectorportError]], ...] = (
    ("already exists", ConflictError),
    ("does not exist", NotFoundError),
    # a read that raced the embedded server's own log compaction (seen on scans under live
    # writes); the same read a moment later succeeds
    ("Error finding id", TransientError),
    # a read of a new collection's vector segment before its first flush reached disk (seen
    # once under two concurrent writers, chroma run 1.5.9): retried; if the segment never
    # appears the retries run out and the error says so
    ("Error creating hnsw segment reader: Nothing found on disk", TransientError),
    # Chroma saves a collection's HNSW index files in place (index_metadata.pickle is rewritten,
    # not replaced): a server or process killed while it saves can leave them truncated, and
    # every later read of the collection then fails (seen with chroma run 1.5.9 under SIGKILL)
    ("Error creating hnsw segment reader", BackendError),
)

# An HTTP answer that is not a Chroma JSON error (chromadb raises a bare ``Exception`` of the
# body, which HttpClient() may wrap in a ValueError): by status. Anything else is BackendError.
_BY_STATUS: dict[int, type[VectorportError]] = {
    401: ConfigurationError,
    403: ConfigurationError,
    404: BackendUnavailableError,
    405: BackendUnavailableError,
    413: ConfigurationError,
    429: TransientError,
    502: TransientError,
    503: TransientError,
    504: TransientError,
}

_HINTS: dict[str, str] = {
    "auth": "; the server refused the credentials: pass the auth header with headers={...}",
    "not_chroma": (
        "; the server there answered HTTP {status}, not like a Chroma 1.x server: check the host "
        "and port (a server starts with `chroma run --path DIR --port PORT`)"
    ),
    "transient": "; retrying",
    "too_large": (
        "; the server refuses request bodies that large (`chroma run` takes up to 40 MiB, its "
        "max_payload_size_bytes): a single record's text and metadata must stay under it"
    ),
    "tenant": "; check the tenant= and database= URL parameters (they must exist on the server)",
    "collection": "; check the collection name (vectorport.connect(..., dimension=) creates it)",
    "unreachable": "; is a Chroma server running there (`chroma run --path DIR --port PORT`)?",
    "damaged": (
        "; Chroma cannot read this collection's on-disk HNSW index (its files are truncated, as "
        "Chroma leaves them when its process is killed while saving the index). Chroma has no "
        "repair for this: restore the collection from a vectorport snapshot, or migrate it again "
        "from its source into a new collection"
    ),
}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _classify(exc: BaseException) -> tuple[type[VectorportError], str] | None:
    """The vectorport class for a driver error and the hint to append, or ``None``."""
    for cls, target in _BY_CLASS:
        if isinstance(exc, cls):
            if target is NotFoundError:
                text = str(exc)
                return target, "tenant" if ("Tenant" in text or "Database" in text) else "collection"
            if target is BackendUnavailableError:
                return target, "unreachable"
            return target, "transient" if target is TransientError else ""
    if isinstance(exc, chroma_errors.ChromaError):
        text = str(exc)
        for needle, target in _BY_MESSAGE:
            if needle in text:
                if target is TransientError:
                    return target, "transient"
                if target is BackendError:
                    return target, "damaged"
                return target, "collection" if target is NotFoundError else ""
        return BackendError, ""
    if not isinstance(exc, ValueError) and type(exc) is not Exception:
        return None
    # HttpClient() wraps a refused connection in a ValueError ("Could not connect to a Chroma
    # server"), keeping the httpx error as its context; a non-Chroma HTTP answer arrives as a
    # bare Exception of the response body, perhaps wrapped in a ValueError.
    for cause in _chain(exc):
        if isinstance(cause, httpx.RemoteProtocolError):
            return TransientError, "transient"
        if isinstance(cause, httpx.TransportError):
            return BackendUnavailableError, "unreachable"
        if isinstance(cause, httpx.HTTPStatusError):
            status = cause.response.status_code
            target = _BY_STATUS.get(status, BackendError)
            if target is TransientError:
                return target, "transient"
            if status == 413:
                return target, "too_large"
            if target is ConfigurationError:
                return target, "auth"
            return target, f"not_chroma:{status}"
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
        found = _classify(exc)
        if found is None:
            raise
        target, hint = found
        status = ""
        if hint.startswith("not_chroma:"):
            hint, status = hint.split(":")
        text = _HINTS.get(hint, "").format(status=status)
        detail = f"{type(exc).__name__}: {str(exc).strip()}"
        transport = next((c for c in _chain(exc) if isinstance(c, httpx.TransportError)), None)
        if transport is not None:
            detail = f"cannot connect ({type(transport).__name__}: {transport})"
        elif hint == "not_chroma":
            detail = f"HTTP {status}"  # the body is an HTML page or empty: not worth quoting
        elif len(detail) > 500:
            detail = detail[:500] + "…"
        raise target(f"{what}: {detail}{text}") from exc
