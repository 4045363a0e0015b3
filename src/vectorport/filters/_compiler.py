"""The compiler base class every backend's native filter compiler derives from.

A subclass defines one ``visit_<op>`` method per operator it can express exactly
(``visit_eq``, ``visit_ne``, ``visit_is``, ``visit_is_not``, ``visit_gt``, ``visit_gte``,
``visit_lt``, ``visit_lte``, ``visit_in``, ``visit_nin``, ``visit_exists``, ``visit_and``,
``visit_or``, ``visit_not``).
Any operator without a method raises :class:`~vectorport.exceptions.UnsupportedFilterError`
naming the backend and the operator, and :meth:`FilterCompiler.supported_operators` is derived
from the methods, so capabilities never restate it.
"""

from __future__ import annotations

from typing import ClassVar, Generic, NoReturn, TypeVar

from ..exceptions import UnsupportedFilterError
from ._ast import And, Compare, CompareOp, Exists, FilterNode, In, Not, Or
from ._parse import to_dict

__all__ = ["ALL_OPERATORS", "FilterCompiler", "push_not_down"]

T = TypeVar("T")

ALL_OPERATORS: tuple[str, ...] = (
    "$and",
    "$eq",
    "$exists",
    "$gt",
    "$gte",
    "$in",
    "$is",
    "$is_not",
    "$lt",
    "$lte",
    "$ne",
    "$nin",
    "$not",
    "$or",
)


_DUAL: dict[str, CompareOp] = {"$eq": "$ne", "$ne": "$eq", "$is": "$is_not", "$is_not": "$is"}


def _method_name(op: str) -> str:
    return "visit_" + op.lstrip("$")


class FilterCompiler(Generic[T]):
    """Compile a filter tree into a backend's native form, exactly or not at all."""

    backend: ClassVar[str] = "backend"

    @classmethod
    def supported_operators(cls) -> frozenset[str]:
        """The operators this compiler has a ``visit_`` method for."""
        return frozenset(op for op in ALL_OPERATORS if hasattr(cls, _method_name(op)))

    def compile(self, node: FilterNode) -> T:
        """Compile ``node``; raises ``UnsupportedFilterError`` before any I/O when it cannot."""
        method = getattr(self, _method_name(node.operator), None)
        if method is None:
            return self.unsupported(node, f"{node.operator} is not supported")
        result: T = method(node)
        return result

    def unsupported(self, node: FilterNode, why: str) -> NoReturn:
        """Raise the standard refusal for ``node``."""
        raise UnsupportedFilterError(
            f"{self.backend} cannot apply the filter {to_dict(node)} exactly ({why}); "
            "vectorport refuses rather than filter after ranking. Rewrite the filter or use "
            "another backend for this query."
        )


def push_not_down(node: FilterNode) -> FilterNode:
    """Rewrite ``$not`` with exact equivalents (De Morgan and operator duals) where they exist.

    ``not $eq → $ne``, ``not $is → $is_not``, ``not $in → $nin``, ``not $exists → $exists``
    flipped, ``not $and → $or`` of negations, and so on. ``not`` over a range operator has no
    exact dual (a missing or non-numeric field matches the negation but not the opposite
    range), so it stays a :class:`Not`; a backend without ``visit_not`` then refuses it.
    """
    if isinstance(node, And):
        return And(tuple(push_not_down(c) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(push_not_down(c) for c in node.children))
    if not isinstance(node, Not):
        return node
    child = node.child
    if isinstance(child, Not):
        return push_not_down(child.child)
    if isinstance(child, And):
        return Or(tuple(push_not_down(Not(c)) for c in child.children))
    if isinstance(child, Or):
        return And(tuple(push_not_down(Not(c)) for c in child.children))
    if isinstance(child, Compare) and child.op in _DUAL:
        return Compare(child.field, _DUAL[child.op], child.value)
    if isinstance(child, In):
        return In(child.field, child.values, negated=not child.negated)
    if isinstance(child, Exists):
        return Exists(child.field, not child.exists)
    return node
