"""The backends, found through the ``vectorport.backends`` entry-point group and nowhere else.

Each backend package exports one :class:`Backend` descriptor (``backend`` in its
``__init__.py``) and registers it with one line in its ``pyproject.toml``::

    [project.entry-points."vectorport.backends"]
    toy = "vectorport.backends.toy:backend"

The descriptor names the store class as a string imported lazily (as fsspec does), so listing
the backends imports no driver; a missing driver is a :class:`NotInstalledError` naming the pip
extra. ``connect``, ``vectorport backends``, the pytest markers, the conformance suite and the
migration pair matrix (:mod:`vectorport.testing.backends`) all read :func:`available_backends`.

>>> sorted(s for b in available_backends() if b.name == "memory" for s in b.schemes)
['memory']
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ._async import AsyncStore, off_loop
from ._base import BaseStore
from ._models import Metric
from ._protocol import VectorStore
from ._suggest import refuse_unknown
from ._url import StoreURL, is_mapped, lent_engine
from .exceptions import ConfigurationError, NotInstalledError

__all__ = [
    "ENTRY_POINT_GROUP",
    "Backend",
    "TestTarget",
    "aconnect",
    "available_backends",
    "connect",
    "open_unbound",
    "open_url",
    "resolve",
]

ENTRY_POINT_GROUP = "vectorport.backends"


@dataclass(frozen=True)
class TestTarget:
    """How the test suites reach a fresh collection of a backend on a local server.

    ``url`` is a template with ``{scheme}`` (the backend's first scheme), ``{server}`` (what
    ``server`` yields) and ``{collection}`` (a fresh name). ``server`` is ``"module:callable"``
    (a leading ``.`` is relative to the backend's package), a callable taking an empty directory
    and returning a context manager that starts the server and yields its handle; ``None``
    yields the directory itself. Targets sharing a ``server`` share one running server.
    """

    __test__ = False  # not a pytest test class

    url: str
    server: str | None = None
    variant: str = ""
    """Empty for the backend's main target; else the target is called ``NAME+VARIANT``."""
    params: tuple[tuple[str, str], ...] = ()
    """URL parameters the conformance suite adds (say, no write pacing)."""
    conformance: bool = True
    """Run the shared conformance suite on this target."""
    seed: str | None = None
    """For a read-only backend (no :attr:`~vectorport.Feature.WRITE`): ``"module:callable"``,
    ``seed(url, dimension, metric, records)`` makes the collection at ``url`` hold exactly
    ``records`` by the backend's own route (an export, say). The suites then open it."""
    pairs: str = "all"
    """Where the main target stands in the migration pair matrix
    (:func:`vectorport.testing.backends.pair_params`): ``"all"``, in every ordered pair with
    each other backend; ``"target"``, in one pair only, as the target of the backend before it
    in the backend cycle, for a backend whose other pairs would run the same code again at a
    cost the suite's time budget cannot spare (the live-sync cycle still has it once a source
    and once a target)."""


@dataclass(frozen=True)
class Backend:
    """One backend: the same word is its name, entry point, pip extra, pytest marker and folder.

    ``store`` is ``"module:Class"``, a leading ``.`` relative to ``package`` (the backend's own
    package, usually ``__name__``), imported only when a store is opened.
    """

    name: str
    package: str
    store: str
    schemes: tuple[str, ...] = ()
    """URL schemes served; the first is the main one. Default: the name alone."""
    extra: str = ""
    """The pip extra that installs the driver (``pip install 'vectorport[EXTRA]'``)."""
    requires: tuple[str, ...] = ()
    """Driver modules, checked without importing them."""
    tests: tuple[TestTarget, ...] = ()
    """Where the test suites run it; the first target is the main one."""
    model_options: str = ""
    """For a backend of SQL tables: ``"module:callable"``, ``callable(model, options)`` gives the
    :func:`connect` options naming the table and its columns' roles as a SQLAlchemy mapped class
    (or ``Table``) maps them, ``options`` (the caller's) winning; ``connect(Model, bind=engine)``
    asks the backend of ``engine``'s URL. Empty: the backend opens no mapped class."""

    def __post_init__(self) -> None:
        if not self.schemes:
            object.__setattr__(self, "schemes", (self.name,))

    @property
    def installed(self) -> bool:
        """Are the driver modules importable (checked without importing them)?"""
        return self.missing() is None

    def missing(self) -> str | None:
        """The first driver module that is not installed, if any."""
        return next((m for m in self.requires if importlib.util.find_spec(m) is None), None)

    def target(self, variant: str = "") -> TestTarget:
        """The test target of that variant."""
        for target in self.tests:
            if target.variant == variant:
                return target
        raise ConfigurationError(f"the {self.name} backend has no test target {variant!r}")

    def target_name(self, target: TestTarget) -> str:
        return self.name + (f"+{target.variant}" if target.variant else "")

    def locate(self, spec: str) -> Any:
        """The object a ``"module:attr"`` spec names (``.module`` relative to the package)."""
        module, _, attr = spec.partition(":")
        if module.startswith("."):
            module = self.package + (module if module != "." else "")
        return getattr(importlib.import_module(module), attr)

    def load(self) -> type[BaseStore[Any]]:
        """The store class (importing its driver), or :class:`NotInstalledError`."""
        missing = self.missing()
        if missing:
            raise NotInstalledError(self.name, self.extra or self.name, missing)
        cls = self.locate(self.store)
        if not (isinstance(cls, type) and issubclass(cls, BaseStore)):
            raise ConfigurationError(f"{self.store} of backend {self.name!r} is not a vectorport BaseStore")
        return cls


def _descriptor(ep: EntryPoint) -> Backend:
    found = ep.load()
    if isinstance(found, Backend):
        return found
    # an entry point naming a store class (the form of vectorport 0.1): its package's
    # descriptor when it has one, else a backend serving the entry point's name
    module = importlib.import_module(ep.module)
    own = getattr(module, "backend", None)
    if isinstance(own, Backend):
        return own
    if isinstance(found, type) and issubclass(found, BaseStore):
        return Backend(ep.name, ep.module, f"{ep.module}:{ep.attr}")
    raise ConfigurationError(f"entry point {ep.name} = {ep.value!r} is not a vectorport Backend")


@functools.cache
def _registered() -> tuple[tuple[Backend, ...], tuple[str, ...]]:
    backends: dict[str, Backend] = {}
    broken: list[str] = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            found = _descriptor(ep)
        except Exception as exc:  # a broken third-party package must not hide the others
            broken.append(f"{ep.name} = {ep.value}: {type(exc).__name__}: {exc}")
            continue
        known = backends.get(found.name)
        if known is None:
            backends[found.name] = found
        elif known != found:
            broken.append(f"{ep.name} = {ep.value}: a second backend named {found.name!r}")
    return tuple(backends.values()), tuple(broken)


def available_backends() -> list[Backend]:
    """Every backend registered under the ``vectorport.backends`` entry-point group, by name."""
    return list(_registered()[0])


def broken_backends() -> list[str]:
    """Entry points of the group that could not be loaded, each with its error."""
    return list(_registered()[1])


def backend(name: str) -> Backend:
    """The backend of that name."""
    for found in available_backends():
        if found.name == name:
            return found
    names = ", ".join(b.name for b in available_backends())
    raise ConfigurationError(f"no backend named {name!r}; registered backends: {names}")


def resolve(scheme: str) -> Backend:
    """The backend serving a URL scheme."""
    for found in available_backends():
        if scheme in found.schemes:
            return found
    schemes = sorted(s for b in available_backends() for s in b.schemes)
    raise ConfigurationError(f"no backend for the URL scheme {scheme!r}; known schemes: {', '.join(schemes)}")


def open_url(url: StoreURL, options: dict[str, Any]) -> BaseStore[Any]:
    """The unbound store of a parsed URL (its collection not opened yet): every store made from
    a URL is made here, after one check that the URL carries only parameters its backend reads.

    >>> open_url(StoreURL.parse("memory://docs?colection=x"), {})  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    vectorport.exceptions.ConfigurationError: unknown memory URL parameter 'colection'
    (did you mean 'collection'?) in memory://docs?colection=x; known: collection
    """
    cls = resolve(url.scheme).load()
    known, listed = cls.url_parameters(url)
    refuse_unknown(url.params, known, f"{cls.name} URL parameter", listed, where=url.masked)
    return cls.from_url(url, **options)


def open_unbound(url: Any, *, bind: Any = None, **options: Any) -> BaseStore[Any]:
    """The store :func:`connect` opens, before its collection is looked up (no I/O on the
    collection): what it takes, made into a URL and options once for both."""
    url, options = _application_target(url, bind, options)
    return open_url(StoreURL.parse(url), options)


def _application_target(target: Any, bind: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(url, options)`` for ``connect(target, bind=…, **options)``: a SQLAlchemy mapped class
    (or ``Table``) with ``bind=`` an engine or URL becomes that URL and the options its backend
    reads from the model (:attr:`Backend.model_options`); anything else as is."""
    if is_mapped(target):
        if bind is None:
            raise ConfigurationError(
                f"connect({getattr(target, '__name__', getattr(target, '__table__', target))}) needs "
                "bind=: the engine (or URL) of the database holding its table, e.g. "
                "vectorport.connect(Chunk, bind=engine)"
            )
        owner = resolve(StoreURL.parse(bind).scheme)
        if not owner.model_options:
            readers = ", ".join(b.name for b in available_backends() if b.model_options) or "none"
            raise ConfigurationError(
                f"the {owner.name} backend opens no SQLAlchemy mapped class (those that do: "
                f"{readers}); bind= an engine of such a backend's database, or give a store URL"
            )
        return lent_engine(bind, owner.locate(owner.model_options)(target, options))
    if bind is not None:
        raise ConfigurationError(
            "bind= goes with a SQLAlchemy mapped class: vectorport.connect(Chunk, bind=engine); "
            "give a URL or an engine as the first argument otherwise"
        )
    return lent_engine(target, options)


def _open(
    url: Any,
    dimension: int | None,
    metric: str | Metric | None,
    embedding_model: str | None,
    bind: Any,
    options: dict[str, Any],
) -> BaseStore[Any]:
    """:func:`connect`'s store, as its class has it (:func:`aconnect` asks it for its async form)."""
    store = open_unbound(url, bind=bind, **options)
    try:
        store.bind(dimension, metric, embedding_model)
    except BaseException:
        store.close()
        raise
    return store


def connect(
    url: Any,
    *,
    dimension: int | None = None,
    metric: str | Metric | None = None,
    embedding_model: str | None = None,
    bind: Any = None,
    **options: Any,
) -> VectorStore:
    """Open the collection a URL names, creating it when ``dimension`` is given and it is missing.

    With ``dimension`` (and ``metric``, default cosine) an existing collection is checked
    against them and a :class:`~vectorport.exceptions.ConfigurationError` says what differs.
    Backend-specific ``options`` go to the backend (see ``docs/backends/``).

    ``url`` may also be what a SQLAlchemy application holds: a ``URL``, an ``Engine`` or an
    ``AsyncEngine`` (plus ``table=`` …), or a mapped class with ``bind=`` an engine or URL,
    whose columns give the table and its roles (``vectorport.connect(Chunk, bind=engine)``).

    >>> import vectorport
    >>> store = vectorport.connect("memory://doctest-connect", dimension=3, metric="cosine")
    >>> store.spec.dimension
    3
    >>> store.drop()
    """
    return _open(url, dimension, metric, embedding_model, bind, options)


async def aconnect(
    url: Any,
    *,
    dimension: int | None = None,
    metric: str | Metric | None = None,
    embedding_model: str | None = None,
    bind: Any = None,
    **options: Any,
) -> AsyncStore[VectorStore]:
    """:func:`vectorport.connect` for asyncio: the same arguments, a store with awaitable
    methods (:class:`AsyncStore`). Opening (and creating) the collection runs off the event
    loop; pgvector then serves reads and writes on psycopg's async connections."""
    store = await off_loop(_open, url, dimension, metric, embedding_model, bind, options)
    try:
        return store.asynchronous()
    except BaseException:
        await off_loop(store.close)
        raise
