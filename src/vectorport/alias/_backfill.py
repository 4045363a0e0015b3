"""The candidate's first copy, which never overwrites a newer write.

How: from the moment a candidate joins (``alias shadow``) every process writes it after the
serving store (dual-write) and logs each written key in the registry *before* it writes the
serving store (the touched-key log: sequence number, key, operation). The backfill then

1. waits until every process has read the new registry version (the routing bound) and the
   calls started before it have finished (:data:`SETTLE`), so no write reaches the serving
   store without reaching the candidate too;
2. copies the serving store into the candidate with :func:`vectorport.migrate.run` (unverified:
   the store changes under it);
3. reads the log's newest sequence number *after* the copy, and re-copies every key logged up to
   it from the serving store (:func:`~._writes.recopy`: copy, read the serving store again, copy
   again what changed meanwhile).

A copy can replace a newer record only when an app write landed between the copy's read of the
serving store and its write to the candidate. Such a write began before the copy finished, so
its key was logged before step 3 read the log's end: step 3 re-copies it from the serving store
(the truth). A write that begins after step 3's read reaches the candidate by dual-write, after
any copy. The switch's digest verification catches anything else.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import migrate
from .._embedder import Embedder
from .._protocol import VectorStore
from ..ingest.embedders import same_model
from ._registry import Registry
from ._routing import CHECK_INTERVAL
from ._writes import recopy

__all__ = ["SETTLE", "BackfillStats", "backfill", "copy_with_migrate", "copy_with_sync"]

SETTLE = 2 * CHECK_INTERVAL + 1.0
"""Seconds waited after a candidate joins before the backfill reads the serving store: every
process has read the new version (the routing bound), and calls started before have ended."""
_CHUNK = 500

Copy = Callable[[VectorStore, VectorStore], int]
"""Copies the serving store into the candidate; returns how many records it copied."""


@dataclass
class BackfillStats:
    copied: int = 0
    """Records the bulk copy wrote."""
    touched: int = 0
    """Keys written through the alias meanwhile (the touched-key log)."""
    recopied: int = 0
    """Of those, records the candidate held older (or deleted) after the copy, copied again."""
    seconds: float = 0.0


def copy_with_migrate(serving: VectorStore, candidate: VectorStore) -> int:
    """The bulk copy: :func:`vectorport.migrate.run`, unverified (the source changes under it);
    a candidate of another embedding model is copied by ``migrate --reembed`` with its model."""
    model = candidate.spec.embedding_model
    reembed = None if same_model(model, serving.spec.embedding_model) else model
    report = migrate.run(serving, candidate, verify=False, progress="none", reembed=reembed)
    return report.copy.records if report.copy is not None else 0


def copy_with_sync(source: str, target: str) -> Copy:
    """The catch-up copy of a candidate fed by ``vectorport sync --follow`` (``--feed capture``):
    one :func:`vectorport.sync` pass of the same two URLs (the same state file: the changes the
    follower had not applied yet)."""

    def copy(serving: VectorStore, candidate: VectorStore) -> int:
        stats = migrate.sync(source, target, delete=True).sync
        return stats.new + stats.changed + stats.deleted

    return copy


def backfill(
    registry: Registry,
    name: str,
    serving: VectorStore,
    candidate: VectorStore,
    *,
    copy: Copy = copy_with_migrate,
    settle: float = SETTLE,
    embedder: Embedder | None = None,
) -> BackfillStats:
    """Copy ``serving`` into ``candidate`` while the app writes both (see the module docstring);
    ``embedder``: the candidate's, when its model is another one."""
    started = time.monotonic()
    time.sleep(settle)
    stats = BackfillStats(copied=copy(serving, candidate))
    end = registry.last_write(name)
    keys = [k for k, seq in sorted(registry.written_since(name, 0).items()) if seq <= end]
    stats.touched = len(keys)
    for start in range(0, len(keys), _CHUNK):
        stats.recopied += recopy(serving, candidate, keys[start : start + _CHUNK], embedder)
    stats.seconds = time.monotonic() - started
    return stats
