"""Where the command line keeps a run's state when it is not given a path: the library takes
paths (``checkpoint=``), the CLI chooses them."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .._paths import state_dir

__all__ = ["default_checkpoint", "default_state"]


def default_checkpoint(source: str, target: str) -> Path:
    """A migration's checkpoint when ``--checkpoint`` is not given: the state folder
    (:func:`vectorport._paths.state_dir`) ``/migrations/<hash of the two URLs>.json`` (plus the
    shard suffix of :func:`~vectorport.migrate.shard_path`)."""
    digest = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return state_dir() / "migrations" / f"{digest}.json"


def default_state(source: str, target: str) -> Path:
    """A sync's state when ``--state`` is not given: the state folder
    (:func:`vectorport._paths.state_dir`) ``/syncs/<hash of the two URLs>.sqlite`` (a shard's
    beside it, :func:`~vectorport.migrate.shard_path`)."""
    digest = hashlib.sha256(f"{source}\n{target}".encode()).hexdigest()[:16]
    return state_dir() / "syncs" / f"{digest}.sqlite"
