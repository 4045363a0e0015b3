"""Which stores an alias's calls go to, as this process knows it: the registry's version, read
again at most every :data:`CHECK_INTERVAL` seconds, and the member stores opened for it.

The bound: a switch commits at time *T*; every process's first call that starts after
*T* + :data:`CHECK_INTERVAL` reads the new version and goes to the new serving store (a call
already running finishes on the store it started on). When the registry cannot be read at the
check, the call fails with :class:`~vectorport.exceptions.BackendUnavailableError` naming the
registry: no process serves a member it could not check for longer than the bound.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property

from .._protocol import VectorStore
from .._registry import connect
from ..exceptions import VectorportError
from ._model import AliasState, Member, Phase
from ._registry import Registry, no_alias

__all__ = ["CHECK_INTERVAL", "Router", "Routing"]

log = logging.getLogger("vectorport.alias")

CHECK_INTERVAL = 0.25
"""Seconds between two reads of an alias's registry version by one process."""

REOPEN_INTERVAL = 5.0
"""Seconds between two attempts to open a member that was down."""


@dataclass(frozen=True)
class Routing:
    """One registry version of an alias, with its member stores opened in this process."""

    state: AliasState
    stores: dict[str, VectorStore]
    """Opened members by URL; a member that could not be opened is left out (see ``down``)."""
    down: dict[str, str] = field(default_factory=dict)
    """Members that could not be opened, with the error."""

    @property
    def serving(self) -> VectorStore:
        return self.stores[self.state.serving.url]

    def others(self) -> list[tuple[Member, VectorStore | None]]:
        """The non-serving members and their stores (``None``: down)."""
        return [(m, self.stores.get(m.url)) for m in self.state.others]

    def shadowed(self) -> list[tuple[Member, VectorStore | None]]:
        """The members a sampled query is asked of: the non-serving ones whose backfill is done
        (a half-copied store's answers would be no evidence)."""
        return [(m, s) for m, s in self.others() if m.backfilled]

    @cached_property
    def shadowing(self) -> bool:
        """Whether a sampled query is asked of another member (worked out once per version,
        not on each call)."""
        return self.state.phase is not Phase.SERVING and any(m.backfilled for m in self.state.others)

    def written(self) -> list[tuple[Member, VectorStore | None]]:
        """The members written after the serving store, and their stores (``None``: down)."""
        return [(m, self.stores.get(m.url)) for m in self.state.written]


class Router:
    """The alias's current :class:`Routing` in this process, refreshed from the registry."""

    def __init__(self, registry: Registry, name: str, interval: float = CHECK_INTERVAL) -> None:
        self.registry = registry
        self.name = name
        self.interval = interval
        self._lock = threading.Lock()
        self._routing: Routing | None = None
        self._checked = 0.0
        self._opened = 0.0
        self._fresh: tuple[Routing, float] | None = None
        """The routing and when it was checked, published together for the lock-free path."""

    def current(self) -> Routing:
        """The routing to use for a call starting now (the registry read when it is due)."""
        fresh = self._fresh
        if fresh is not None and time.monotonic() - fresh[1] < self.interval:
            return fresh[0]  # no lock on the path of most calls: the check is not due
        with self._lock:
            now = time.monotonic()
            routing = self._routing
            if routing is not None and now - self._checked < self.interval:
                return routing
            version = self.registry.version(self.name)
            if version is None:
                raise no_alias(self.name, self.registry.label)
            stale = routing is None or version != routing.state.version
            if stale or (routing is not None and routing.down and now - self._opened > REOPEN_INTERVAL):
                routing = self._reload(routing)
                self._opened = now
            self._checked = now
            assert routing is not None
            self._fresh = (routing, now)
            return routing

    def _reload(self, old: Routing | None) -> Routing:
        state = self.registry.require(self.name)
        kept = dict(old.stores) if old is not None else {}
        stores: dict[str, VectorStore] = {}
        down: dict[str, str] = {}
        for member in state.members:
            store = kept.pop(member.url, None)
            if store is None:
                try:
                    store = connect(member.url)
                except VectorportError as exc:
                    if member.url == state.serving.url:
                        raise
                    log.warning("alias %s: member %s is down: %s", self.name, member.label, exc)
                    down[member.url] = str(exc)
                    continue
            stores[member.url] = store
        for store in kept.values():  # members that left the alias
            store.close()
        self._routing = Routing(state, stores, down)
        if old is not None:
            log.info("alias %s: version %d (%s)", self.name, state.version, state.phase.value)
        return self._routing

    def close(self) -> None:
        with self._lock:
            self._fresh = None
            routing, self._routing = self._routing, None
        if routing is not None:
            for store in routing.stores.values():
                store.close()
