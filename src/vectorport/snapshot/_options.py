"""How :func:`vectorport.snapshot.export` runs: one frozen declaration, as for ``migrate``
(:mod:`vectorport.migrate._options`): the keyword arguments, the CLI's flags and the report's
``options`` derive from it, and a runner that cannot honour a field refuses it before any I/O.

>>> ExportOptions(segments=2).to_dict()["segments"]
2
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from .._options import RunOptions, option
from .._report import DEFAULT_CAP
from ..engine._progress import ProgressMode
from ..exceptions import ConfigurationError

__all__ = ["SCAN_BATCH", "ExportOptions"]

SCAN_BATCH = 1000
"""Records per source scan page when ``batch_size`` is not given."""


@dataclass(frozen=True)
class ExportOptions(RunOptions):
    """How :func:`vectorport.snapshot.export` runs (its keyword arguments)."""

    COMMAND: ClassVar[str] = "export"

    max_part_bytes: int | None = option(
        None, "Approximate size of one Parquet part in bytes (default 128 MiB).", cli=False
    )
    batch_size: int = option(SCAN_BATCH, "Records per page read from the source.", minimum=1)
    segments: int | None = option(
        None,
        "Scan segments of the source, each written as its own series of parts (default: 1 in "
        "one process, one per worker under Ray).",
        minimum=1,
    )
    overwrite: bool = option(False, "Replace a snapshot already in the directory.")
    verify: bool = option(True, "Read the snapshot back and compare it with the source.")
    sample_queries: int = option(20, "Sampled queries in verification (0: none).", minimum=0)
    k: int = option(10, "Top-k of the sampled queries.", minimum=1)
    progress: ProgressMode = option(
        ProgressMode.NONE,
        "Progress on stderr: bar, json (JSON Lines) or none (CLI default: bar when stderr is a terminal).",
        metavar="MODE",
    )
    cap: int = option(DEFAULT_CAP, "Examples kept per group of problems in the report.", cli=False)
    source_options: Mapping[str, Any] = option(dict, "Options of the source store.", cli=False, factory=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("max_part_bytes", "segments"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigurationError(f"{name} must be positive, got {value}")
