"""Checkpoints: where a migration (or one shard of it) has got to, in a small JSON file.

The file is rewritten atomically (temporary file in the same directory, ``fsync``,
``os.replace``), so a process killed at any instant leaves either the previous checkpoint or
the new one, never a torn file. It only ever names a scan cursor whose records — and all
records before them — the target has acknowledged.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .._digest import BinSums
from .._models import JSON
from .._paths import unwritable, writable_file
from ..exceptions import ConfigurationError

__all__ = ["Checkpoint", "shard_path"]

FORMAT = 1


def shard_path(path: str | os.PathLike[str], shard: tuple[int, int]) -> Path:
    """The checkpoint file of one shard: ``ck.json`` → ``ck.shard-1-of-4.json`` (unchanged for
    an unsharded migration), so N processes given the same ``--checkpoint`` never share a file."""
    p = Path(path)
    index, parts = shard
    if parts == 1:
        return p
    return p.with_name(f"{p.stem}.shard-{index}-of-{parts}{p.suffix or '.json'}")


@dataclass
class Checkpoint:
    """Progress of one migration shard. ``cursor`` is the source scan cursor after the last
    page the target acknowledged together with every page before it."""

    path: Path
    source: str
    target: str
    shard: tuple[int, int]
    transform: dict[str, JSON]
    """The run's fixed options (:meth:`~vectorport._options.RunOptions.fixed`)."""
    cursor: str | None = None
    copied: int = 0
    """Records acknowledged by the target up to ``cursor``."""
    scanned: bool = False
    """Every record of the shard was acknowledged by the target."""
    complete: bool = False
    """``scanned``, and the target finished what the copy deferred (pgvector: the HNSW index
    dropped for a bulk load is built again): the target is fully usable."""
    verified: bool | None = None
    source_count: int | None = None
    """The source's record count when the migration completed (to tell a changed source)."""
    single_pass: bool = False
    """A single-pass migration: it created the target (so a refusal found later drops it) and
    keeps :attr:`digests`."""
    digests: BinSums | None = None
    """Single pass: the digests of every record acknowledged up to ``cursor``, for verification
    without reading the source again."""
    created: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        # before the migration reads or writes anything: an unwritable path is one error now,
        # not a traceback at the first save, after the target was created
        writable_file(self.path, "checkpoint")

    def identity(self) -> dict[str, JSON]:
        """Which migration this is: its stores and shard. (Its ``transform``, the run's fixed
        options, may not change either: :meth:`~vectorport._options.RunOptions.check_fixed`.)"""
        return {"source": self.source, "target": self.target, "shard": list(self.shard)}

    def mismatch(self, other: Checkpoint) -> str | None:
        """Why ``other`` (this run's identity) is not the migration this checkpoint records."""
        mine, theirs = self.identity(), other.identity()
        for name in mine:
            if mine[name] != theirs[name]:
                return f"it records {name} {mine[name]!r}, this run has {theirs[name]!r}"
        return None

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Checkpoint | None:
        """The checkpoint at ``path``, or ``None`` when there is none."""
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read the checkpoint {p}: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigurationError(f"{p} is not a vectorport migration checkpoint (format {FORMAT})")
        try:
            return cls(
                path=p,
                source=data["source"],
                target=data["target"],
                shard=(int(data["shard"][0]), int(data["shard"][1])),
                transform=data["transform"],
                cursor=data["cursor"],
                copied=int(data["copied"]),
                scanned=bool(data.get("scanned", data["complete"])),
                complete=bool(data["complete"]),
                verified=data.get("verified"),
                source_count=data.get("source_count"),
                single_pass=bool(data.get("single_pass", False)),
                digests=BinSums.from_bytes(base64.b64decode(data["digests"]))
                if data.get("digests")
                else None,
                created=float(data["created"]),
                updated=float(data["updated"]),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ConfigurationError(f"the checkpoint {p} is damaged: {exc!r}") from exc

    def to_dict(self) -> dict[str, Any]:
        digests, self.digests = self.digests, None
        try:
            data = asdict(self)
        finally:
            self.digests = digests
        data["digests"] = None if digests is None else base64.b64encode(digests.to_bytes()).decode()
        data["path"] = str(self.path)
        data["shard"] = list(self.shard)
        return {"format": FORMAT, **data}

    def save(self) -> None:
        """Write atomically: a reader (or a resumed run) sees the old file or the new one."""
        self.updated = time.time()
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        payload = json.dumps(self.to_dict(), indent=1, ensure_ascii=False)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except OSError as exc:
            raise unwritable("checkpoint", self.path, exc) from exc
