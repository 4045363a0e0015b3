"""The cut-over alias: a stable name an app connects to once (``alias://NAME?registry=REG``),
whose serving store changes under it on evidence, with an instant rollback that loses nothing.

The phases, each a Python call returning an :class:`AliasReport` and a ``vectorport alias``
command: :func:`create` → :func:`shadow` → :func:`switch` → :func:`rollback` / :func:`retire`;
:func:`status`. See ``docs/cutover.md``.

Modules, one idea each: :mod:`._model` (phases, roles, members), :mod:`._sql` and
:mod:`._registry` (where aliases live: SQLite or PostgreSQL), :mod:`._routing` (which member a
call goes to, re-read within a bound), :mod:`._store` (the router store), :mod:`._writes`
(dual-write and the repair queue), :mod:`._shadow` (shadow reads), :mod:`._figures` (their
rolling figures), :mod:`._backfill` (the candidate's first copy, which never overwrites a newer
write), :mod:`._gates` (the switch's evidence), :mod:`._phases` (the operator's calls),
:mod:`._report` and :mod:`._html`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._registry import Backend

if TYPE_CHECKING:
    from ._backfill import SETTLE, BackfillStats
    from ._gates import Gate, Gates
    from ._model import AliasState, Feed, Member, Phase, Role
    from ._phases import create, retire, rollback, shadow, status, switch
    from ._report import AliasReport
    from ._routing import CHECK_INTERVAL
    from ._sql import default_registry

__all__ = [
    "CHECK_INTERVAL",
    "SETTLE",
    "AliasReport",
    "AliasState",
    "BackfillStats",
    "Feed",
    "Gate",
    "Gates",
    "Member",
    "Phase",
    "Role",
    "backend",
    "create",
    "default_registry",
    "retire",
    "rollback",
    "shadow",
    "status",
    "switch",
]

backend = Backend(name="alias", package=__name__, store="._store:AliasStore")
"""The alias, as the ``vectorport.backends`` entry point registers it: no test target of its own
(its members are the backends under test; ``tests/alias`` runs it on real ones)."""


_LAZY = {
    "SETTLE": "._backfill",
    "BackfillStats": "._backfill",
    "Gate": "._gates",
    "Gates": "._gates",
    "AliasState": "._model",
    "Feed": "._model",
    "Member": "._model",
    "Phase": "._model",
    "Role": "._model",
    "create": "._phases",
    "retire": "._phases",
    "rollback": "._phases",
    "shadow": "._phases",
    "status": "._phases",
    "switch": "._phases",
    "AliasReport": "._report",
    "CHECK_INTERVAL": "._routing",
    "default_registry": "._sql",
}


def __getattr__(name: str) -> Any:
    # the registry loads every backend's descriptor to resolve a URL scheme: the alias's
    # phases (its backfill, the ingest embedders) are imported only when asked for
    # (50 ms of every fresh process that opened any store)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
