"""The frozen filter tree. Built by :func:`vectorport.filters.parse`, never by hand-written dicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "And",
    "Compare",
    "CompareOp",
    "Exists",
    "FilterNode",
    "In",
    "Not",
    "Or",
    "Scalar",
]

Scalar: TypeAlias = str | int | float | bool
CompareOp: TypeAlias = Literal["$eq", "$ne", "$is", "$is_not", "$gt", "$gte", "$lt", "$lte"]
RANGE_OPS: frozenset[str] = frozenset({"$gt", "$gte", "$lt", "$lte"})


@dataclass(frozen=True)
class Compare:
    """``field <op> value``. Range operators (``$gt`` …) always carry a number.

    ``$eq`` matches a scalar equal to ``value`` or a list holding it; ``$is`` only the scalar
    (a list never, whatever it holds): the whole value is compared, as LlamaIndex's ``EQ`` does.
    ``$ne`` and ``$is_not`` are their negations."""

    field: str
    op: CompareOp
    value: Scalar

    @property
    def operator(self) -> str:
        return self.op


@dataclass(frozen=True)
class In:
    """``field $in [values]`` or ``$nin`` (``negated=True``). ``values`` is never empty."""

    field: str
    values: tuple[Scalar, ...]
    negated: bool = False

    @property
    def operator(self) -> str:
        return "$nin" if self.negated else "$in"


@dataclass(frozen=True)
class Exists:
    """``field $exists true|false``: the key is present in the metadata (whatever its value)."""

    field: str
    exists: bool = True

    @property
    def operator(self) -> str:
        return "$exists"


@dataclass(frozen=True)
class And:
    """All children match. Has at least one child."""

    children: tuple[FilterNode, ...]

    @property
    def operator(self) -> str:
        return "$and"


@dataclass(frozen=True)
class Or:
    """At least one child matches. Has at least one child."""

    children: tuple[FilterNode, ...]

    @property
    def operator(self) -> str:
        return "$or"


@dataclass(frozen=True)
class Not:
    """The child does not match (a missing field makes the child false, so ``$not`` is true)."""

    child: FilterNode

    @property
    def operator(self) -> str:
        return "$not"


FilterNode: TypeAlias = Compare | In | Exists | And | Or | Not
