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

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from .._retry import RetryPolicy
from ..exceptions import ConfigurationError
from ._progress import ProgressMode
from ._report import DEFAULT_CAP
from ._transform import MetadataPolicy

__all__ = ["MigrateOptions", "RunOptions", "SyncOptions", "option", "parse_shard"]

RUNNERS = ("local", "ray")


def option(
    default: Any,
    help: str,
    *,
    resume: str = "free",
    runners: tuple[str, ...] = RUNNERS,
    cli: bool = True,
    factory: bool = False,
    minimum: int | None = None,
    metavar: str | None = None,
    only: Mapping[str, tuple[Any, ...]] | None = None,
) -> Any:
    """A field of a run-options declaration.

    ``resume``: ``free`` (may change when a run is resumed) or ``fixed`` (recorded in the
    checkpoint; a resume with another value is refused). ``runners``: the runners that honour
    it; under any other a value other than the default is refused before any I/O. ``cli``:
    whether the command line offers it (objects such as a retry policy are Python only).
    ``minimum``: the smallest value (checked by the command line's parser too); ``metavar``: how
    help shows the value. ``only``: per runner, the only values it honours.
    """
    meta = {
        "help": help,
        "resume": resume,
        "runners": runners,
        "cli": cli,
        "minimum": minimum,
        "metavar": metavar,
        "only": dict(only or {}),
    }
    if factory:
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


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


@dataclass(frozen=True)
class RunOptions:
    """What every command's options share: the checks, the resume rule, the report section."""

    COMMAND: ClassVar[str]

    def __post_init__(self) -> None:
        concurrency = getattr(self, "concurrency", 1)
        if concurrency < 1:
            raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
        batch = getattr(self, "batch_size", None)
        if batch is not None and batch < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch}")
        policy = getattr(self, "metadata_policy", None)
        if policy is not None:
            object.__setattr__(self, "metadata_policy", MetadataPolicy.parse(policy))
        if hasattr(self, "progress"):  # a bool is still taken: True is a bar, False none
            object.__setattr__(self, "progress", ProgressMode.parse(self.progress))

    @classmethod
    def declared(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The declaration: each field with its ``help``, ``resume``, ``runners`` and ``cli``."""
        return dataclasses.fields(cls)

    def fixed(self) -> dict[str, Any]:
        """The options a resumed run must share with the run it continues (JSON values)."""
        return {
            f.name: _json(getattr(self, f.name)) for f in self.declared() if f.metadata["resume"] == "fixed"
        }

    def refused_by(self, runner: str) -> list[str]:
        """The options set away from their default that ``runner`` cannot honour."""
        out = []
        for f in self.declared():
            allowed = f.metadata["only"].get(runner)
            if allowed is not None and getattr(self, f.name) not in allowed:
                out.append(f.name)
            if runner in f.metadata["runners"]:
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if getattr(self, f.name) != default:
                out.append(f.name)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report's ``options`` section (the same under every runner)."""
        return {f.name: _json(getattr(self, f.name)) for f in self.declared()}


def _json(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, os.PathLike | Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, RetryPolicy):
        return dataclasses.asdict(value)
    return value


@dataclass(frozen=True)
class MigrateOptions(RunOptions):
    """How :func:`vectorport.migrate` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "migrate"

    plan_only: bool = option(False, "Plan only: print what would happen, write nothing.")
    batch_size: int | None = option(
        None, "Records per write (default 1000, capped by the target).", minimum=1
    )
    concurrency: int = option(4, "Write batches in flight (threads; per worker under Ray).", minimum=1)
    checkpoint: str | os.PathLike[str] | None = option(
        None, "Progress file, rewritten after every acknowledged batch (one per shard)."
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
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    retry: RetryPolicy | None = option(None, "Backoff for the target's writes.", cli=False)
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
        if self.resume and self.checkpoint is None:
            raise ConfigurationError("resume needs a checkpoint (the file of the interrupted run)")


@dataclass(frozen=True)
class SyncOptions(RunOptions):
    """How :func:`vectorport.sync` runs (its keyword arguments).

    For sync, ``resume="fixed"`` options are recorded in the sync state: a pass with other
    values reads the whole target again (a full pass) instead of trusting the state.
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
    until_equal: bool = option(False, "Exit once the target is caught up and verifies equal (exit 0).")
    poll: float = option(0.5, "Seconds between reads of an idle change feed, or between passes.", cli=False)
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    retry: RetryPolicy | None = option(None, "Backoff for the target's writes.", cli=False)
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)
    target_options: Mapping[str, Any] = option(dict, "Options of the target store.", cli=False, factory=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "shard", parse_shard(self.shard))
        if self.poll < 0:
            raise ConfigurationError(f"poll must not be negative, got {self.poll}")
