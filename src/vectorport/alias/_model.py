"""What an alias is: its phase, its members and their roles, and the version every change bumps.

Plain frozen data read from and written to the registry (:mod:`._registry`); no I/O.

>>> a = AliasState("docs", Phase.SERVING, 1, 1.0, (Member("memory://a", Role.SERVING),))
>>> a.serving.url, [m.url for m in a.others]
('memory://a', [])
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from .._url import mask_url
from ..exceptions import ConfigurationError

__all__ = ["AliasState", "Feed", "Member", "Phase", "Role"]


class Phase(StrEnum):
    """Where an alias stands in the cut-over."""

    SERVING = "serving"
    """One store serves; no other member."""
    SHADOW = "shadow"
    """A candidate receives every write and a sample of the reads; the serving store answers."""
    SWITCHED = "switched"
    """The candidate serves; the store it replaced still receives every write (rollback is instant)."""


class Role(StrEnum):
    """A member's part in its alias."""

    SERVING = "serving"
    """Answers every read; its write result is the app's result."""
    CANDIDATE = "candidate"
    """Shadows the serving store (phase ``shadow``)."""
    PREVIOUS = "previous"
    """Served before the switch; receives every write until retired (phase ``switched``)."""


class Feed(StrEnum):
    """How a non-serving member receives the app's writes."""

    DUAL_WRITE = "dual-write"
    """The alias writes it after the serving store, in the app's call (failures: repair queue)."""
    CAPTURE = "capture"
    """``vectorport sync --follow`` from the serving store (a PostgreSQL source) writes it."""


@dataclass(frozen=True)
class Member:
    """One store of an alias: its URL, its role, how it is fed, and the embedding model its
    vectors come from (``None``: the serving store's; room for a member of another model)."""

    url: str
    role: Role
    feed: Feed = Feed.DUAL_WRITE
    embedding_model: str | None = None
    backfilled: bool = True
    """False while the backfill of a new candidate runs: the alias logs every key it writes
    (the touched-key log) so the backfill can re-copy them (:mod:`._backfill`)."""

    @property
    def label(self) -> str:
        """The URL with its secrets masked: what reports and errors show."""
        return mask_url(self.url)


@dataclass(frozen=True)
class AliasState:
    """An alias as one registry version holds it."""

    name: str
    phase: Phase
    version: int
    sample: float
    """The fraction of the reads a candidate shadows."""
    members: tuple[Member, ...] = field(default_factory=tuple)

    @property
    def serving(self) -> Member:
        """The member every read goes to."""
        for member in self.members:
            if member.role is Role.SERVING:
                return member
        raise ConfigurationError(f"alias {self.name!r} has no serving store in its registry")

    @property
    def others(self) -> list[Member]:
        """The members that are not serving, in registry order."""
        return [m for m in self.members if m.role is not Role.SERVING]

    @property
    def written(self) -> list[Member]:
        """The members the alias writes after the serving store (dual-write feed)."""
        return [m for m in self.others if m.feed is Feed.DUAL_WRITE]

    @property
    def logging_writes(self) -> bool:
        """Whether the alias logs the keys it writes (a backfill is under way)."""
        return any(not m.backfilled for m in self.others)

    def member(self, url: str) -> Member:
        """The member of that URL (as given to ``shadow``/``create``)."""
        for member in self.members:
            if member.url == url:
                return member
        urls = ", ".join(m.label for m in self.members)
        raise ConfigurationError(f"{mask_url(url)} is not a member of alias {self.name!r} (members: {urls})")

    def with_members(self, phase: Phase, members: tuple[Member, ...]) -> AliasState:
        """The next state: ``phase`` and ``members``, one version later."""
        return replace(self, phase=phase, members=members, version=self.version + 1)
