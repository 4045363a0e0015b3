"""Run options as typed values: one frozen declaration per command.

Each field of :class:`MigrateOptions` (and :class:`SyncOptions`) says, in its metadata, its help
text, whether it may change between a run and its resume, and the runners that can honour it.
Everything else derives from the declaration: the Python keyword arguments of
:func:`vectorport.migrate` (``MigrateOptions(**kwargs)``), the CLI's flags (the CLI names them
from the field names), the resume-compatibility check (:meth:`RunOptions.fixed`, recorded in a
checkpoint and compared when it is resumed) and the report's ``options`` section
(:meth:`RunOptions.to_dict`). The library knows no flag names and no state-file paths.

>>> o = MigrateOptions(metadata_policy="flatten", concurrency=8)
>>> o.metadata_policy, o.fixed()
(<MetadataPolicy.FLATTEN: 'flatten'>, {'metadata_policy': 'flatten', 'text_key': None, 'reembed': None})
>>> MigrateOptions(concurrency=0)
Traceback (most recent call last):
...
vectorport.exceptions.ConfigurationError: concurrency must be at least 1, got 0
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._options import RunOptions, option
from .._retry import RetryPolicy
from ..exceptions import ConfigurationError
from ._progress import ProgressMode
from ._report import DEFAULT_CAP
from ._transform import MetadataPolicy
from ._verify import VECTOR_TOLERANCE

__all__ = [
    "MigrateOptions",
    "RunOptions",
    "SyncOptions",
    "TransferOptions",
    "VerifyOptions",
    "option",
    "parse_shard",
]


def parse_shard(value: str | tuple[int, int] | None) -> tuple[int, int]:
    """``"I/N"`` or ``(I, N)`` with ``0 <= I < N`` (shards are numbered from 0, as scan segments)."""
    if value is None:
        return (0, 1)
    if isinstance(value, str):
        head, sep, tail = value.partition("/")
        try:
            if not sep:
                raise ValueError
            value = (int(head), int(tail))
        except ValueError:
            raise ConfigurationError(f"shard takes I/N, e.g. 0/4 (shards 0..N-1), got {value!r}") from None
    index, parts = value
    if not (isinstance(index, int) and isinstance(parts, int) and parts >= 1 and 0 <= index < parts):
        raise ConfigurationError(f"shard must be I/N with 0 <= I < N, got {index}/{parts}")
    return (index, parts)


@dataclass(frozen=True, kw_only=True)
class TransferOptions(RunOptions):
    """What the commands that read one store and write another (:class:`MigrateOptions`,
    :class:`SyncOptions`) take from Python only, declared once. Keyword-only, so in each
    command's keyword arguments and report ``options`` they follow the command's own fields."""

    WRITES_TARGET: ClassVar[bool] = True

    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    retry: RetryPolicy | None = option(None, "Backoff for the target's writes.", cli=False)
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)


@dataclass(frozen=True)
class MigrateOptions(TransferOptions):
    """How :func:`vectorport.migrate` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "migrate"

    plan_only: bool = option(False, "Plan only: print what would happen, write nothing.")
    batch_size: int | None = option(
        None,
        "Records per write (default 1000, capped by the target); when given, also per source page "
        "(default: the source's largest page), so the checkpoint moves every batch_size records.",
        minimum=1,
    )
    concurrency: int = option(4, "Write batches in flight (threads; per worker under Ray).", minimum=1)
    checkpoint: str | os.PathLike[str] | None = option(
        None, "Progress file, rewritten after every acknowledged source page (one per shard)."
    )
    resume: bool = option(False, "Continue an interrupted run from its checkpoint.")
    verify: bool = option(True, "Verify after copying (counts, keys, vectors, metadata, text, queries).")
    single_pass: bool | None = option(
        None,
        "Read the source once where a refusal can be rolled back (a new target; the default), "
        "with a note when the plan must read first; off: always plan over the whole source "
        "before the first write.",
        # Ray's shards check only their own records: its plan always reads the source first
        only={"ray": (None, False)},
    )
    metadata_policy: MetadataPolicy = option(
        MetadataPolicy.ERROR,
        "Metadata the target cannot hold: error (refuse the plan), flatten, stringify, drop.",
        resume="fixed",
    )
    text_key: str | None = option(None, "Source metadata key holding the chunk text.", resume="fixed")
    shard: tuple[int, int] = option(
        (0, 1),
        "Copy only shard I of N (0-based) of the source; run N processes.",
        runners=("local",),
        metavar="I/N",
    )
    reembed: str | None = option(
        None, "Re-embed each record's text with MODEL.", resume="fixed", metavar="MODEL"
    )
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines: stage, done, total, rate, eta) or none; "
        "a bare --progress is bar, --no-progress none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    sample_queries: int = option(20, "Sampled queries in verification (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
        if self.resume and self.checkpoint is None:
            raise ConfigurationError("resume needs a checkpoint (the file of the interrupted run)")


@dataclass(frozen=True)
class VerifyOptions(RunOptions):
    """How :func:`vectorport.migrate.verify` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "verify"

    metadata_policy: MetadataPolicy = option(
        MetadataPolicy.ERROR,
        "The policy the migration used (error, flatten, stringify or drop): the expected "
        "metadata is the source's, transformed.",
    )
    text_key: str | None = option(None, "The source metadata key holding the text, as the migration used it.")
    shard: tuple[int, int] = option(
        (0, 1), "Verify only shard I of N (0-based) of the source.", runners=("local",), metavar="I/N"
    )
    sample_queries: int = option(20, "Sampled queries (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)
    tolerance: float = option(VECTOR_TOLERANCE, "Vector tolerance (relative, float32 ulps).", cli=False)
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    # Ray's parallelism is its workers, each reading one native scan segment
    concurrency: int = option(4, "Pages compared in parallel (threads).", runners=("local",), minimum=1)
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines) or none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    method: str = option(
        "auto",
        "digest (both stores read once, then only differing key bins record by record), keyed "
        "(each source record fetched from the target by key) or auto (digest, except for shards "
        "and float-rounding targets).",
        metavar="METHOD",
        # Ray merges per-segment digests: it has no keyed pass
        only={"ray": ("auto", "digest")},
    )
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))


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
