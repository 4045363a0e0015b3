"""How :func:`vectorport.sync` runs: its options, declared once (keyword arguments, CLI flags,
report ``options``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

from .._options import option
from ..engine._options import TransferOptions, parse_shard
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy
from ..exceptions import ConfigurationError

__all__ = ["SyncOptions"]


@dataclass(frozen=True)
class SyncOptions(TransferOptions):
    """How :func:`vectorport.sync` runs (its keyword arguments).

    For sync, ``resume="fixed"`` options are recorded in the sync state, as a migration's are
    in its checkpoint: a later run over the same state with other values is refused before
    anything is written, unless it asks for ``full=True`` (a full pass compares and rewrites
    every record with the new values).
    """

    COMMAND: ClassVar[str] = "sync"

    delete: bool = option(False, "Delete target records that are not in the source (else: counted).")
    full: bool = option(False, "Read and compare the whole target instead of trusting the state.")
    state: str | os.PathLike[str] | None = option(
        None, "Sync state file (default: one per URL pair; one per shard beside it)."
    )
    shard: tuple[int, int] = option(
        (0, 1),
        "Sync only shard I of N (0-based) of the source, with its own state; run N processes.",
        runners=("local",),
        metavar="I/N",
    )
    verify: bool = option(False, "Verify the whole target afterwards (reads both stores).")
    batch_size: int | None = option(
        None, "Records per write (default 1000, capped by the target).", minimum=1
    )
    concurrency: int = option(4, "Write batches in flight (threads; per worker under Ray).", minimum=1)
    metadata_policy: MetadataPolicy = option(
        MetadataPolicy.ERROR,
        "Metadata the target cannot hold: error (not written, exit 1), flatten, stringify, drop.",
        resume="fixed",
    )
    text_key: str | None = option(None, "Source metadata key holding the chunk text.", resume="fixed")
    reembed: str | None = option(
        None,
        "Re-embed each written record's text with MODEL (recorded in the state: a state synced with "
        "another model is a full pass).",
        resume="fixed",
        metavar="MODEL",
    )
    sample_queries: int = option(20, "Sampled queries with --verify (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines, with the lag under --follow) or none; a bare "
        "--progress is bar, --no-progress none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    follow: bool = option(
        False,
        "Then apply the source's captured changes as they come, until stopped.",
        # a change feed is one stream, read by one process: Ray's shards scan instead
        runners=("local",),
    )
    max_outage: float = option(
        600.0,
        "Seconds --follow retries a source or target that keeps failing (an outage) before it "
        "stops with an error (exit 3), its position kept; 0: retry for as long as it lasts.",
        # a change feed is followed by one process (see follow)
        runners=("local",),
        metavar="SECONDS",
    )
    until_equal: bool = option(False, "Exit once the target is caught up and verifies equal (exit 0).")
    poll: float = option(0.5, "Seconds between reads of an idle change feed, or between passes.", cli=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
        if self.poll < 0:
            raise ConfigurationError(f"poll must not be negative, got {self.poll}")
        if not self.max_outage >= 0:
            raise ConfigurationError(
                f"max_outage must be seconds, 0 or more (0: no limit), got {self.max_outage}"
            )
