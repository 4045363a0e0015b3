"""The target collection's name: the one the target URL gives, or, when it gives none, the
source's name made valid for the target backend (``plain_default`` → ``plain-default`` for a
bucket index), checked against the backend's :class:`~vectorport.NameRule` before any write.

A name the URL gives is never changed behind the user's back: when it is not valid, the plan
is refused and names a valid one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._models import JSON
from .._names import NameRule
from ..exceptions import InvalidNameError

__all__ = ["TargetName", "target_name"]


@dataclass(frozen=True)
class TargetName:
    """How the target collection's name was chosen, when the target URL alone did not do it."""

    name: str
    """The name the plan uses: derived from the source's, or proposed for an invalid one."""
    given: str | None
    """The name the target URL gives (``None``: it gives none, so :attr:`name` is derived)."""
    source: str
    """The source collection's name."""
    rule: NameRule
    problem: str | None
    """Why :attr:`given` (or, when derived, :attr:`source`) is not a valid name."""

    @property
    def refused(self) -> bool:
        """The URL gives a name the target cannot hold: the migration must not run."""
        return self.given is not None and self.problem is not None

    def reason(self) -> str | None:
        """Why the plan is refused, with the name to use instead."""
        if not self.refused:
            return None
        return (
            f"{self.given!r} is not a valid {self.rule.what} ({self.problem}): {self.rule.what}s are "
            f"{self.rule.description}; name the target {self.name!r} instead"
        )

    def note(self) -> str | None:
        """What the plan says about a derived name."""
        if self.given is not None:
            return None
        if self.problem is None:
            return f"the target URL names no collection: the source's name {self.name!r} is used"
        return (
            f"the target URL names no collection and the source's name {self.source!r} is not a valid "
            f"{self.rule.what} ({self.problem}): {self.name!r} is used"
        )

    def to_dict(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "given": self.given,
            "source": self.source,
            "derived": self.given is None,
            "problem": self.problem,
            "rule": self.rule.description,
        }


def target_name(error: InvalidNameError, source: str) -> TargetName:
    """The name to plan with after the target URL named no collection (``error.name is None``)
    or an invalid one."""
    rule = error.rule
    if error.name is None:
        return TargetName(rule.propose(source), None, source, rule, rule.problem(source))
    return TargetName(rule.propose(error.name), error.name, source, rule, rule.problem(error.name))
