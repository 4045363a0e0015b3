"""The one exception tree of vectorport.

Every error vectorport raises derives from :class:`VectorportError`. Backends map their
driver's errors (SQLSTATE codes, botocore error codes, Chroma exceptions) onto this tree
inside one context manager each and re-raise ``from`` the original, so the cause is kept.
Several classes also inherit the built-in exception a caller already catches (``ValueError``,
``KeyError``, ``ImportError``, ``ConnectionError``), as Supabase ``vecs`` does::

    VectorportError
    ├── ConfigurationError (ValueError)        bad URL, bad option, spec mismatch on open
    │   ├── InvalidNameError                   a collection name the backend refuses (or none)
    │   └── NotInstalledError (ImportError)    the driver for a scheme is missing: pip extra named
    ├── UnsupportedError                       the backend cannot do this
    │   ├── UnsupportedFeatureError            e.g. dot metric on S3 Vectors, k above max top-k
    │   └── UnsupportedFilterError             a filter the backend cannot express exactly
    ├── FilterError (ValueError)               a malformed filter, with the path to the bad part
    ├── ValidationError (ValueError)           bad records: key, vector, metadata (key + path named)
    ├── NotFoundError (KeyError)               missing collection / bucket / index
    ├── ConflictError                          already exists, or exists with another spec
    └── BackendError                           the backend failed
        ├── BackendUnavailableError (ConnectionError)   cannot reach the server
        └── TransientError                     retry the same call later (throttling, deadlock)

:class:`TransientError` is the retryable class: the base store and the migration engine back
off and retry exactly these.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._names import NameRule

__all__ = [
    "BackendError",
    "BackendUnavailableError",
    "ConfigurationError",
    "ConflictError",
    "FilterError",
    "InvalidNameError",
    "NotFoundError",
    "NotInstalledError",
    "Problem",
    "TransientError",
    "UnsupportedError",
    "UnsupportedFeatureError",
    "UnsupportedFilterError",
    "ValidationError",
    "VectorportError",
]


class VectorportError(Exception):
    """Base class of every error raised by vectorport."""


class ConfigurationError(VectorportError, ValueError):
    """A URL, option or collection spec is wrong (for example: opening with another dimension)."""


class InvalidNameError(ConfigurationError):
    """A URL names a collection (index, table) by a name the backend does not accept, or names
    none. ``name`` is the name (``None``: none given), ``rule`` the backend's
    :class:`~vectorport.NameRule` and :attr:`proposal` a valid name close to it."""

    def __init__(self, message: str, *, name: str | None, rule: NameRule) -> None:
        super().__init__(message)
        self.name = name
        self.rule = rule

    @property
    def proposal(self) -> str | None:
        """A valid name derived from :attr:`name` (``None`` when no name was given)."""
        return None if self.name is None else self.rule.propose(self.name)


class NotInstalledError(ConfigurationError, ImportError):
    """The driver for a backend is not installed; the message names the pip extra to install."""

    def __init__(self, scheme: str, extra: str, missing: str) -> None:
        self.scheme = scheme
        self.extra = extra
        self.missing = missing
        super().__init__(
            f"the {scheme!r} backend needs the Python module {missing!r}, which is not installed; "
            f"install it with: pip install 'vectorport[{extra}]'"
        )


class UnsupportedError(VectorportError):
    """The backend cannot do what was asked. Raised before any I/O."""


class UnsupportedFeatureError(UnsupportedError):
    """A feature, metric or limit the backend does not support."""


class UnsupportedFilterError(UnsupportedError):
    """A valid portable filter that this backend cannot express exactly.

    vectorport never drops such a filter or applies it after ranking; it refuses instead.
    """


class FilterError(VectorportError, ValueError):
    """A malformed filter. ``path`` points at the offending part, e.g. ``$and[1].stars.$gt``."""

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        self.reason = message
        where = f" at {path}" if path else ""
        super().__init__(f"invalid filter{where}: {message}")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one record: which record, where in it, and what."""

    key: str | None
    path: str
    message: str
    index: int | None = None

    def __str__(self) -> str:
        if self.key is None and self.index is None:  # not a record: a query vector, a response
            return f"{self.path}: {self.message}" if self.path else self.message
        who = f"record {self.key!r}" if self.key is not None else f"record #{self.index}"
        where = f" at {self.path}" if self.path else ""
        return f"{who}{where}: {self.message}"


class ValidationError(VectorportError, ValueError):
    """Records that cannot be written. Nothing of the batch was written.

    ``problems`` lists every problem found (capped in the message); ``key`` and ``path`` are
    those of the first one.
    """

    def __init__(
        self,
        problems: Sequence[Problem],
        *,
        backend: str = "",
        hint: str = "",
        outcome: str = "nothing was written",
    ) -> None:
        self.problems = list(problems)
        first = self.problems[0] if self.problems else Problem(None, "", "invalid input")
        self.key = first.key
        self.path = first.path
        shown = "; ".join(str(p) for p in self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        prefix = f"{backend}: " if backend else ""
        tail = f". {hint}" if hint else ""
        super().__init__(f"{prefix}{shown}{more}; {outcome}{tail}")


class NotFoundError(VectorportError, KeyError):
    """A collection, table, bucket or index does not exist."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "not found"


class ConflictError(VectorportError):
    """The thing exists already, or exists with a different spec."""


class BackendError(VectorportError):
    """The backend reported a failure that is not the caller's input."""


class BackendUnavailableError(BackendError, ConnectionError):
    """The server cannot be reached (refused, DNS, timeout, down)."""


class TransientError(BackendError):
    """A failure that the same call may not hit again: throttling, deadlock, 503.

    ``retry_after`` is the server's hint in seconds, when it gave one.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)
