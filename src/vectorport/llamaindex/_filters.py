"""LlamaIndex's ``MetadataFilters`` as vectorport's portable filter.

==========================  ==========================================  ===========================
LlamaIndex                  portable filter                             note
==========================  ==========================================  ===========================
``EQ`` / ``NE``             ``{k: {"$is": v}}`` / ``{k: {"$is_not": v}}`` the whole value
``GT GTE LT LTE``           ``$gt $gte $lt $lte``                       numbers only
``IN``                      ``{"$or": [{k: {"$is": v1}} …]}``           the whole value
``NIN``                     ``{"$and": [{k: {"$is_not": v1}} …]}``      the whole value
``CONTAINS``                ``{k: {"$eq": v}}``                         a list field holding ``v``
``ANY``                     ``{k: {"$in": [...]}}``                     a list field holding one
``ALL``                     ``{"$and": [{k: v1}, {k: v2} …]}``          a list field holding all
condition ``AND`` / ``OR``  ``$and`` / ``$or``                          nested ``MetadataFilters`` too
condition ``NOT``           ``{"$not": {"$or": [...]}}``                none of the filters matches
``TEXT_MATCH(_INSENSITIVE)``, ``IS_EMPTY``                              refused: no portable form
==========================  ==========================================  ===========================

``EQ``, ``NE``, ``IN`` and ``NIN`` compare the whole value, as ``SimpleVectorStore`` does (Python's
``==`` and ``in``): ``EQ tags='a'`` does not match ``tags=['a', 'b']`` and ``NE`` does; ``NE`` and
``NIN`` match a node without the key. The portable ``$eq``/``$in`` would match the list's
elements; ``$is`` never matches a list. A backend that cannot tell a list from a scalar in its
search (S3 Vectors, which has no ``$is``) gets them as LlamaIndex's own ``S3VectorStore`` sends
them (``$eq``, ``$ne``, ``$in``, ``$nin``: on a list field, its elements), so an app answers there
as with LlamaIndex's store for that service (``to_portable(..., whole_values=False)``).

``CONTAINS``, ``ANY`` and ``ALL`` have the list meaning LlamaIndex's database stores give them
(PostgreSQL's ``@>``, Chroma's and S3's any-element match); ``SimpleVectorStore`` also applies
them to substrings of a string, which no backend can do inside its search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ..exceptions import UnsupportedFilterError

__all__ = ["to_portable"]

_NUMBER_OPS = {
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
}


def to_portable(filters: MetadataFilters | None, *, whole_values: bool = True) -> dict[str, Any] | None:
    """The portable filter meaning ``filters`` (``None`` or no filters: ``None``).

    ``whole_values=False`` (a backend without ``$is``: S3 Vectors) sends ``EQ``/``NE``/``IN``/
    ``NIN`` as ``$eq``/``$ne``/``$in``/``$nin``, as LlamaIndex's own ``S3VectorStore`` does: on
    a list field they then test its elements.

    Raises
    ------
    UnsupportedFilterError
        An operator or value the portable language cannot express; nothing was sent.

    Examples
    --------
    >>> from llama_index.core.vector_stores import MetadataFilter, MetadataFilters
    >>> to_portable(MetadataFilters(filters=[
    ...     MetadataFilter(key="lang", value="en"),
    ...     MetadataFilter(key="stars", value=10, operator=">="),
    ... ]))
    {'$and': [{'lang': {'$is': 'en'}}, {'stars': {'$gte': 10}}]}
    """
    if filters is None or not filters.filters:
        return None
    return _group(filters, _OPERATORS if whole_values else _ELEMENT_OPERATORS)


def _group(filters: MetadataFilters, table: _Table) -> dict[str, Any]:
    children = [
        _group(f, table) if isinstance(f, MetadataFilters) else _one(f, table)
        for f in filters.filters
        if _nonempty(f)
    ]
    if not children:
        raise UnsupportedFilterError(
            "an empty nested MetadataFilters has no meaning; remove it or give it filters"
        )
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.NOT:
        return {"$not": children[0] if len(children) == 1 else {"$or": children}}
    if len(children) == 1:
        return children[0]
    return {"$or" if condition == FilterCondition.OR else "$and": children}


def _nonempty(f: Any) -> bool:
    return not isinstance(f, MetadataFilters) or bool(f.filters)


def _one(f: MetadataFilter, table: _Table) -> dict[str, Any]:
    op = getattr(f, "operator", FilterOperator.EQ)  # the legacy ExactMatchFilter has none
    translate = table.get(op)
    if translate is None:
        raise UnsupportedFilterError(
            f"LlamaIndex's {op.name} filter on {f.key!r} has no portable form (substring and "
            "emptiness tests cannot run inside every backend's search); filter on exact values "
            "with EQ, IN or CONTAINS instead"
        )
    return translate(f.key, f.value, op)


def _scalar(key: str, value: Any, op: FilterOperator) -> Any:
    if isinstance(value, list):
        raise UnsupportedFilterError(
            f"LlamaIndex's {op.name} filter on {key!r} compares with a list {value!r}; the portable "
            "filter compares scalars: use IN for any of several values"
        )
    if value is None:
        raise UnsupportedFilterError(f"LlamaIndex's {op.name} filter on {key!r} has no value")
    return value


def _values(key: str, value: Any, op: FilterOperator) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise UnsupportedFilterError(
            f"LlamaIndex's {op.name} filter on {key!r} needs a non-empty list of values, got {value!r}"
        )
    return list(value)


def _compare(name: str) -> Callable[[str, Any, FilterOperator], dict[str, Any]]:
    def build(key: str, value: Any, op: FilterOperator) -> dict[str, Any]:
        return {key: {name: _scalar(key, value, op)}}

    return build


def _number(key: str, value: Any, op: FilterOperator) -> dict[str, Any]:
    value = _scalar(key, value, op)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UnsupportedFilterError(
            f"LlamaIndex's {op.name} filter on {key!r} compares with {value!r}; the portable filter "
            "orders numbers only (a string range cannot run the same on every backend)"
        )
    return {key: {_NUMBER_OPS[op]: value}}


def _each(name: str, join: str) -> Callable[[str, Any, FilterOperator], dict[str, Any]]:
    """``{join: [{key: {name: v}} …]}`` over the filter's values (one value: its test alone)."""

    def build(key: str, value: Any, op: FilterOperator) -> dict[str, Any]:
        each: Sequence[dict[str, Any]] = [{key: {name: _scalar(key, v, op)}} for v in _values(key, value, op)]
        return each[0] if len(each) == 1 else {join: list(each)}

    return build


_Table = dict[FilterOperator, Callable[[str, Any, FilterOperator], dict[str, Any]]]

_OPERATORS: _Table = {
    FilterOperator.ALL: _each("$eq", "$and"),
    FilterOperator.ANY: lambda key, value, op: {key: {"$in": _values(key, value, op)}},
    FilterOperator.CONTAINS: _compare("$eq"),
    FilterOperator.EQ: _compare("$is"),
    FilterOperator.GT: _number,
    FilterOperator.GTE: _number,
    FilterOperator.IN: _each("$is", "$or"),
    FilterOperator.LT: _number,
    FilterOperator.LTE: _number,
    FilterOperator.NE: _compare("$is_not"),
    FilterOperator.NIN: _each("$is_not", "$and"),
}

_ELEMENT_OPERATORS: _Table = {
    **_OPERATORS,
    FilterOperator.EQ: _compare("$eq"),
    FilterOperator.IN: lambda key, value, op: {key: {"$in": _values(key, value, op)}},
    FilterOperator.NE: _compare("$ne"),
    FilterOperator.NIN: lambda key, value, op: {key: {"$nin": _values(key, value, op)}},
}
