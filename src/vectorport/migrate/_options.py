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
from dataclasses import dataclass
from typing import ClassVar

from .._options import RunOptions, option
from ..engine._options import TransferOptions, parse_shard
from ..engine._progress import ProgressMode
from ..engine._transform import MetadataPolicy
from ..exceptions import ConfigurationError

__all__ = ["MigrateOptions", "RunOptions", "TransferOptions", "option", "parse_shard"]


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
