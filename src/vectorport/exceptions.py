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

Advice is structured: where a message names an option and a value (``metadata_policy='flatten'``,
``resume=True``), a call (``vectorport.sync('a', 'b')``) or a step each wording says its own way
(create the collection, install change capture), the message is an :class:`Advised` text built
from :class:`Advice`, :class:`Call` and :class:`Step` parts. Its ``str`` says them in Python; the
command line renders the same parts as its flags and commands (``--metadata-policy flatten``)
through its option declarations, so rewording a sentence cannot break the command line's advice.
An error carries them as :attr:`VectorportError.advice`; a report note is an :class:`Advised` itself.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ._names import NameRule

__all__ = [
    "Action",
    "Advice",
    "Advised",
    "BackendError",
    "BackendUnavailableError",
    "Call",
    "ConfigurationError",
    "ConflictError",
    "FilterError",
    "InvalidNameError",
    "NotFoundError",
    "NotInstalledError",
    "Problem",
    "Step",
    "TransientError",
    "UnsupportedError",
    "UnsupportedFeatureError",
    "UnsupportedFilterError",
    "ValidationError",
    "VectorportError",
    "Wording",
]


@dataclass(frozen=True)
class Advice:
    """An option and its value named in a message: ``Advice("metadata_policy", "flatten")``.

    ``value`` ``...`` (the default) leaves the value to the reader (``checkpoint=``); ``None``
    is the option unset. In Python: ``metadata_policy='flatten'``; on the command line:
    ``--metadata-policy flatten``.
    """

    option: str
    value: Any = ...

    @property
    def plain(self) -> Any:
        """The value as the caller gives it (an enum member as its value, a whole float as an
        ``int``: ``max_outage=30``)."""
        value = self.value.value if isinstance(self.value, Enum) else self.value
        return int(value) if isinstance(value, float) and value.is_integer() else value

    def __str__(self) -> str:
        return f"{self.option}=" if self.value is ... else f"{self.option}={self.plain!r}"


@dataclass(frozen=True)
class Call:
    """A call of one of vectorport's commands, e.g. ``Call("sync", ("memory://a", "memory://b"))``:
    ``vectorport.sync('memory://a', 'memory://b')`` in Python, ``vectorport sync … …`` on the
    command line. ``command`` is the command's words (``"alias create"``), ``options`` the
    options the call names (each said as its wording says an :class:`Advice`).

    >>> str(Call("alias create", ("docs",), (Advice("serve", "URL"),)))
    "vectorport.alias.create('docs', serve='URL')"
    """

    command: str
    args: tuple[str, ...]
    options: tuple[Advice, ...] = ()

    @property
    def function(self) -> str:
        """The Python function that runs the command (:data:`_FUNCTIONS`, else its words
        joined by dots: ``alias create`` is ``vectorport.alias.create``)."""
        return "vectorport." + _FUNCTIONS.get(self.command, self.command.replace(" ", "."))

    def __str__(self) -> str:
        return f"{self.function}({', '.join([*map(repr, self.args), *map(str, self.options)])})"


_FUNCTIONS = {
    "export": "snapshot.export",
    "ingest": "ingest.ingest",
    "migrate": "migrate.run",
    "pgvector schema": "backends.pgvector.schema_sql",
}
"""The commands whose Python function is not named by their words."""


class Action(Enum):
    """A step a message advises that each wording says as a phrase of its own: in Python a
    keyword argument or a store method, on the command line the command that does it. The
    value is the Python wording."""

    ADOPT = "pass dimension= to adopt it"
    CREATE = "pass dimension= (and metric=) to create it"
    CREATE_THERE = "pass dimension= (and metric=) to create the collection there"
    CREATE_TABLE = "create the collection with dimension="
    CREATE_WITH_INDEX = "pass dimension= (and metric=) to create it with the index"
    NAME_METRIC = "pass metric= (cosine, euclidean or dot; searches are then exact)"
    REINSTALL_CAPTURE = "teardown_capture() and setup_capture()"
    REMOVE_CAPTURE = "teardown_capture()"
    SCHEDULE_SYNC = "call sync again on a schedule"
    SETUP_CAPTURE = "install it first with the source store's setup_capture()"


@dataclass(frozen=True)
class Step:
    """A step named in a message, said whole by each wording: ``Step(Action.CREATE)`` is
    ``pass dimension= (and metric=) to create it`` in Python, the commands that create a
    collection on the command line. ``subject`` is what the step acts on where a wording names
    it (the source whose change capture to install).

    >>> Advised.of("x does not exist; {}", Step(Action.CREATE))
    'x does not exist; pass dimension= (and metric=) to create it'
    """

    action: Action
    subject: str = ""

    def __str__(self) -> str:
        return self.action.value


Part = str | Advice | Call | Step
"""One part of an :class:`Advised` text."""


class Wording(Protocol):
    """How an :class:`Advised` text says its :class:`Advice`, :class:`Call` and :class:`Step` parts."""

    def option(self, advice: Advice) -> str: ...

    def call(self, call: Call) -> str: ...

    def step(self, step: Step) -> str: ...


class _PythonWording:
    """The library's own wording: keyword arguments, function calls and store methods."""

    def option(self, advice: Advice) -> str:
        return str(advice)

    def call(self, call: Call) -> str:
        return str(call)

    def step(self, step: Step) -> str:
        return str(step)


class Advised(str):
    """A message naming options or calls: a ``str`` (their Python wording) that keeps its parts.

    ``Advised.of("pass {}: {}", Advice("metadata_policy", "flatten"), why)`` fills each ``{}`` of
    the (constant) template with the next argument: an :class:`Advice`, :class:`Call` or
    :class:`Step` stays a part, anything else is inserted as text. :meth:`worded` says the same
    with another :class:`Wording` (the command line's flags).

    >>> note = Advised.of("pass {} to delete them", Advice("delete", True))
    >>> note, note.advice
    ('pass delete=True to delete them', (Advice(option='delete', value=True),))
    """

    parts: tuple[Part, ...]

    def __new__(cls, parts: Sequence[Part]) -> Advised:
        text = super().__new__(cls, _render(parts, PYTHON))
        text.parts = tuple(parts)
        return text

    def __getnewargs__(self) -> tuple[tuple[Part, ...]]:  # type: ignore[override]
        return (self.parts,)

    @classmethod
    def of(cls, template: str, *args: object) -> Advised:
        """``template``'s ``{}`` fields (``{!r}``, ``{:g}`` …) filled by ``args`` in order, as
        :meth:`str.format` would; :class:`Advice`, :class:`Call` and :class:`Step` arguments
        (and an :class:`Advised` argument's parts) stay parts."""
        parts: list[Part] = []
        values = iter(args)
        formatter = string.Formatter()
        for literal, field, spec, conversion in formatter.parse(template):
            parts.append(literal)
            if field is None:
                continue
            value = next(values)
            if isinstance(value, Advised):
                parts.extend(value.parts)
            elif isinstance(value, Advice | Call | Step):
                parts.append(value)
            else:
                parts.append(format(formatter.convert_field(value, conversion), spec or ""))
        return cls(parts)

    @property
    def advice(self) -> tuple[Advice, ...]:
        """The options this text names, in order."""
        return tuple(p for p in self.parts if isinstance(p, Advice))

    def worded(self, wording: Wording) -> str:
        """This text with its options, calls and steps said by ``wording``."""
        return _render(self.parts, wording)


def _render(parts: Sequence[Part], wording: Wording) -> str:
    return "".join(_said(p, wording) for p in parts)


def _said(part: Part, wording: Wording) -> str:
    if isinstance(part, Advice):
        return wording.option(part)
    if isinstance(part, Call):
        return wording.call(part)
    if isinstance(part, Step):
        return wording.step(part)
    return part


PYTHON: Wording = _PythonWording()
"""The library's wording of advice (``metadata_policy='flatten'``)."""


def worded(text: str, wording: Wording) -> str:
    """``text`` said by ``wording`` when it is :class:`Advised`; any other text as it is."""
    return text.worded(wording) if isinstance(text, Advised) else text


class VectorportError(Exception):
    """Base class of every error raised by vectorport.

    A message given as :class:`Advised` text keeps its parts: :attr:`advice` lists the options
    it names and :meth:`worded` says it with another :class:`Wording`.
    """

    @property
    def advice(self) -> tuple[Advice, ...]:
        """The options the message names (``()`` when it names none)."""
        message = self.args[0] if self.args else None
        return message.advice if isinstance(message, Advised) else ()

    def worded(self, wording: Wording) -> str:
        """The message with its options, calls and steps said by ``wording``."""
        message = self.args[0] if self.args else None
        return message.worded(wording) if isinstance(message, Advised) else str(self)


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
        tail = Advised.of(". {}", hint) if hint else ""
        super().__init__(Advised.of("{}{}{}; {}{}", prefix, shown, more, outcome, tail))


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
