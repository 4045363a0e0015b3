"""Options every command shares: the shard ``I/N`` and what a copy from one store into another
takes from Python only (:class:`TransferOptions`). The mechanism (``option()``, :class:`RunOptions`)
is :mod:`vectorport._options`; each command declares its own options in its package."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._options import RunOptions, option
from .._report import DEFAULT_CAP
from .._retry import RetryPolicy
from ..exceptions import ConfigurationError

__all__ = ["TransferOptions", "parse_shard"]


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
