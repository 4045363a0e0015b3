"""Where the command line keeps a run's state when it is not given a path: the library takes
paths (``checkpoint=``), the CLI chooses them."""

from __future__ import annotations

from pathlib import Path

from .._paths import default_state, pair_file

__all__ = ["default_checkpoint", "default_state"]  # default_state: the library's own (sync's default)


def default_checkpoint(source: str, target: str) -> Path:
    """A migration's checkpoint when ``--checkpoint`` is not given: the state folder
    (:func:`vectorport._paths.state_dir`) ``/migrations/<hash of the two URLs>.json`` (plus the
    shard suffix of :func:`~vectorport.migrate.shard_path`)."""
    return pair_file("migrations", source, target, ".json")
