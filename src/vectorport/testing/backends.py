"""The registered backends as test parameters, and their local servers started on demand.

Everything here reads :func:`vectorport.available_backends` (the ``vectorport.backends``
entry points): a backend registered there is in the conformance suite, the migration pair
matrix and the cross-backend tests with no test file naming it. Each parameter carries the
backend's pytest marker (its name), so ``pytest -m NAME`` selects exactly the tests that touch
it, and is skipped when the backend's driver is not installed.

The pytest plugin provides a session fixture ``vectorport_servers`` (a :class:`ServerPool`)::

    @pytest.fixture(scope="class", params=conformance_params())
    def store_factory(request, vectorport_servers):
        return vectorport_servers.factory(request.param)
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

import pytest

from .._features import Feature
from .._models import Metric, Record
from .._protocol import VectorStore
from .._registry import Backend, TestTarget, available_backends, backend, connect
from ..exceptions import NotInstalledError

__all__ = [
    "ServerPool",
    "backend_names",
    "backend_params",
    "conformance_params",
    "pair_params",
    "targets",
]

_names = itertools.count()


def targets() -> dict[str, tuple[Backend, TestTarget]]:
    """Every test target of every registered backend, by target name (``NAME`` or ``NAME+VARIANT``)."""
    return {b.target_name(t): (b, t) for b in available_backends() for t in b.tests}


def _writable(owner: Backend) -> bool:
    # a backend not installed is kept: its params are skipped, with the reason
    return not owner.installed or Feature.WRITE in owner.load().capabilities.features


def backend_names() -> list[str]:
    """The registered backends that have a test target and can be written (:attr:`Feature.WRITE`:
    the cross-backend tests load data into each), in registry order. A read-only backend runs
    the conformance suite through its target's ``seed``."""
    return [b.name for b in available_backends() if b.tests and _writable(b)]


def _param(*names: str, id: str | None = None) -> Any:
    """A ``pytest.param`` of these target names, carrying each backend's marker and skipped when
    a driver is missing."""
    found = targets()
    owners = [found[n][0] for n in names]
    marks: list[Any] = [getattr(pytest.mark, b.name) for b in dict.fromkeys(owners)]
    missing = [(b.name, b.missing()) for b in owners if b.missing()]
    if missing:
        name, module = missing[0]
        marks.append(pytest.mark.skip(reason=f"the {name} backend needs {module} (not installed)"))
    return pytest.param(*names, marks=marks, id=id or "-to-".join(names))


def backend_params() -> list[Any]:
    """One param per writable backend (its main target)."""
    return [_param(name) for name in backend_names()]


def conformance_params() -> list[Any]:
    """One param per test target that runs the conformance suite."""
    return [_param(name) for name, (_b, t) in targets().items() if t.conformance]


def pair_params() -> list[Any]:
    """Every ordered pair of different backends (main targets): the migration matrix. A backend
    whose main target says ``pairs="target"`` (``TestTarget.pairs``) is in one pair only: the
    target of the backend before it in :func:`cycle_params`."""
    names = backend_names()
    every = {n for n in names if backend(n).tests[0].pairs == "all"}
    into = {(a, b) for a, b in _cycle(names) if b not in every}
    return [_param(a, b) for a in names for b in names if a != b and ({a, b} <= every or (a, b) in into)]


def cycle_params() -> list[Any]:
    """Each backend paired with the next one (and the last with the first): every backend is
    once a source and once a target, in as many tests as there are backends."""
    return [_param(a, b) for a, b in _cycle(backend_names())]


def _cycle(names: Sequence[str]) -> list[tuple[str, str]]:
    if len(names) < 2:
        return []
    return list(zip(names, [*names[1:], *names[:1]], strict=True))


class ServerPool:
    """The local servers of the test targets, each started on first use (one per backend and
    ``server``), all stopped by :meth:`close`. A backend whose driver is missing raises
    :class:`~vectorport.exceptions.NotInstalledError` (the fixtures turn it into a skip)."""

    def __init__(self) -> None:
        self._stack = ExitStack()
        self._handles: dict[tuple[str, str | None], Any] = {}
        self._root: Path | None = None

    def _directory(self) -> Path:
        if self._root is None:
            # not under pytest's tmp_path: pytest keeps it at mode 0700, and when the tests run
            # as root the embedded PostgreSQL runs as a system user that must reach it
            self._root = Path(tempfile.mkdtemp(prefix="vectorport-servers-"))
            self._root.chmod(0o755)
        path = Path(tempfile.mkdtemp(dir=self._root))
        path.chmod(0o755)
        return path

    def handle(self, name: str) -> Any:
        """What the server of target ``name`` yielded (a data directory, ``host:port``, a
        server object), starting it on first use."""
        owner, target = self._target(name)
        key = (owner.name, target.server)
        if key not in self._handles:
            missing = owner.missing()
            if missing:
                raise NotInstalledError(owner.name, owner.extra or owner.name, missing)
            directory = self._directory()
            if target.server is None:
                self._handles[key] = directory
            else:
                start: Callable[[Path], AbstractContextManager[Any]] = owner.locate(target.server)
                self._handles[key] = self._stack.enter_context(start(directory))
        return self._handles[key]

    @staticmethod
    def _target(name: str) -> tuple[Backend, TestTarget]:
        found = targets().get(name)
        if found is None:
            base, _, variant = name.partition("+")
            return backend(base), backend(base).target(variant)
        return found

    def url(self, name: str, collection: str | None = None, **params: Any) -> str:
        """The URL of a collection (a fresh name by default) on target ``name``'s server, with
        ``params`` added to its query."""
        owner, target = self._target(name)
        coll = collection or f"c{os.getpid()}x{next(_names)}"
        url = target.url.format(scheme=owner.schemes[0], server=self.handle(name), collection=coll)
        extra = "&".join(f"{k}={v}" for k, v in params.items())
        if extra:
            url += ("&" if "?" in url else "?") + extra
        return url

    def factory(self, name: str) -> Callable[[int, str | Metric], VectorStore]:
        """``factory(dimension, metric)``: a bound store on a new, empty collection of target
        ``name`` with the target's conformance parameters (the conformance kit's
        ``store_factory``); a read-only backend's is an empty one its ``seed`` made."""
        owner, target = self._target(name)
        params = dict(target.params)

        def make(dimension: int, metric: str | Metric) -> VectorStore:
            url = self.url(name, **params)
            if target.seed is not None:
                owner.locate(target.seed)(url, dimension, Metric(metric).value, [])
            return connect(url, dimension=dimension, metric=metric)

        return make

    def loader(self, name: str) -> Callable[[VectorStore, Sequence[Record]], VectorStore] | None:
        """For a read-only target (one with a ``seed``): ``load(store, records)`` makes the
        store's collection hold exactly ``records`` and returns the store opened again on it
        (the conformance kit's ``store_loader``); ``None`` for a writable target."""
        owner, target = self._target(name)
        if target.seed is None:
            return None
        seed = owner.locate(target.seed)

        def load(store: VectorStore, records: Sequence[Record]) -> VectorStore:
            url, spec = store.url.raw, store.spec
            store.close()
            seed(url, spec.dimension, spec.metric.value, records)
            return connect(url)

        return load

    def close(self) -> None:
        """Stop every server started, remove their directories."""
        try:
            self._stack.close()
        finally:
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)
            self._handles.clear()
            self._root = None


def server_pool() -> Iterator[ServerPool]:
    """A :class:`ServerPool` closed when the generator ends (the body of a session fixture)."""
    pool = ServerPool()
    try:
        yield pool
    finally:
        pool.close()
