"""Parse Mongo-style filter dicts into the frozen tree, validating every part."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

from ..exceptions import FilterError
from ._ast import RANGE_OPS, And, Compare, CompareOp, Exists, FilterNode, In, Not, Or, Scalar

__all__ = ["parse_filter", "to_dict"]

MAX_DEPTH = 32
"""Deepest nesting of objects and lists a filter may have (a portable filter needs a handful)."""
MAX_ITEMS = 1_000_000
"""Most objects, lists and values one filter may hold."""

_FIELD_OPS = ("$eq", "$ne", "$is", "$is_not", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$not")
_LOGICAL_OPS = ("$and", "$or", "$not")


def parse_filter(spec: Mapping[str, Any] | FilterNode | None) -> FilterNode | None:
    """Parse a portable filter; ``None`` or ``{}`` mean "no filter".

    >>> parse_filter({"lang": "en", "stars": {"$gte": 10}})
    And(children=(Compare(field='lang', op='$eq', value='en'), Compare(field='stars', op='$gte', value=10)))
    """
    if spec is None:
        return None
    if isinstance(spec, And | Or | Not | Compare | In | Exists):
        return spec
    if not isinstance(spec, Mapping):
        raise FilterError(f"a filter must be a JSON object, got {type(spec).__name__}")
    if not spec:
        return None
    _check_size(spec)
    return _parse_object(spec, "")


def _check_size(spec: Mapping[str, Any]) -> None:
    """Refuse a filter nested deeper than ``MAX_DEPTH``, holding more than ``MAX_ITEMS`` parts or
    strings that are not Unicode, without recursion (a hostile filter must not exhaust the
    stack)."""
    stack: list[tuple[Any, int]] = [(spec, 1)]
    items = 1
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise FilterError(f"the filter is nested more than {MAX_DEPTH} levels deep; flatten it")
        if isinstance(value, Mapping | list | tuple):
            # counted before they are walked: a filter of millions of values is refused at once
            items += 2 * len(value) if isinstance(value, Mapping) else len(value)
            if items > MAX_ITEMS:
                raise FilterError(
                    f"the filter holds more than {MAX_ITEMS:,} objects, lists and values; split it"
                )
        if isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
            stack.extend((k, depth + 1) for k in value if isinstance(k, str))
        elif isinstance(value, list | tuple):
            stack.extend((v, depth + 1) for v in value)
        elif isinstance(value, str) and not _is_unicode(value):
            raise FilterError(f"{value!r} is not valid Unicode (lone surrogate); no store can hold it")


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _join(path: str, part: str) -> str:
    if part.startswith("["):
        return f"{path}{part}"
    return f"{path}.{part}" if path else part


def _parse_object(spec: Mapping[str, Any], path: str) -> FilterNode:
    if not isinstance(spec, Mapping):
        raise FilterError(f"expected a JSON object, got {_describe(spec)}", path)
    if not spec:
        raise FilterError("an empty object is not a filter here", path)
    nodes: list[FilterNode] = []
    for key, value in spec.items():
        if not isinstance(key, str):
            raise FilterError(f"keys must be strings, got {key!r}", path)
        sub = _join(path, key)
        if key.startswith("$"):
            if key in ("$and", "$or"):
                nodes.append(_parse_logical(key, value, sub))
            elif key == "$not":
                nodes.append(Not(_parse_object(value, sub)))
            else:
                hint = (
                    f"{key} applies to a field: write {{'<field>': {{'{key}': …}}}}"
                    if key in _FIELD_OPS
                    else f"unknown operator; top-level operators are {', '.join(_LOGICAL_OPS)}"
                )
                raise FilterError(hint, sub)
        else:
            if not key:
                raise FilterError("field names must not be empty", path)
            nodes.append(_parse_field(key, value, sub))
    return nodes[0] if len(nodes) == 1 else And(tuple(nodes))


def _parse_logical(op: str, value: Any, path: str) -> FilterNode:
    if not isinstance(value, list):
        raise FilterError(f"{op} takes a list of filters, got {_describe(value)}", path)
    if not value:
        raise FilterError(f"{op} needs at least one filter", path)
    children = tuple(_parse_object(item, f"{path}[{i}]") for i, item in enumerate(value))
    return And(children) if op == "$and" else Or(children)


def _parse_field(field: str, value: Any, path: str) -> FilterNode:
    if isinstance(value, Mapping) and any(isinstance(k, str) and k.startswith("$") for k in value):
        if not all(isinstance(k, str) and k.startswith("$") for k in value):
            raise FilterError("do not mix operators and plain keys in one object", path)
        nodes = [_parse_operator(field, op, operand, _join(path, op)) for op, operand in value.items()]
        return nodes[0] if len(nodes) == 1 else And(tuple(nodes))
    return Compare(field, "$eq", _scalar(value, path))


def _parse_operator(field: str, op: str, operand: Any, path: str) -> FilterNode:
    if op in ("$eq", "$ne", "$is", "$is_not"):
        return Compare(field, cast(CompareOp, op), _scalar(operand, path))
    if op in RANGE_OPS:
        if isinstance(operand, bool) or not isinstance(operand, int | float):
            raise FilterError(f"{op} takes a number, got {_describe(operand)}", path)
        return Compare(field, cast(CompareOp, op), _finite(operand, path))
    if op in ("$in", "$nin"):
        if not isinstance(operand, list | tuple):
            raise FilterError(f"{op} takes a list of values, got {_describe(operand)}", path)
        if not operand:
            raise FilterError(f"{op} needs at least one value", path)
        values = tuple(_scalar(v, f"{path}[{i}]") for i, v in enumerate(operand))
        return In(field, values, negated=op == "$nin")
    if op == "$exists":
        if not isinstance(operand, bool):
            raise FilterError(f"$exists takes true or false, got {_describe(operand)}", path)
        return Exists(field, operand)
    if op == "$not":
        if not isinstance(operand, Mapping) or not operand:
            raise FilterError(
                f"$not on a field takes an operator object such as {{'$gt': 5}}, got {_describe(operand)}",
                path,
            )
        return Not(_parse_field(field, operand, path))
    if op in ("$and", "$or"):
        raise FilterError(f"{op} is a top-level operator; it cannot apply to a field", path)
    raise FilterError(f"unknown operator {op!r}; known: {', '.join(_FIELD_OPS)}", path)


def _scalar(value: Any, path: str) -> Scalar:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        return _finite(value, path)
    if value is None:
        raise FilterError("null is not a filter value; use {'$exists': false} for absent keys", path)
    raise FilterError(f"expected a string, number or boolean, got {_describe(value)}", path)


def _finite(value: int | float, path: str) -> int | float:
    if isinstance(value, float) and not math.isfinite(value):
        raise FilterError(f"numbers must be finite, got {value!r}", path)
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def to_dict(node: FilterNode | None) -> dict[str, Any]:
    """The canonical portable dict for a tree (``parse_filter(to_dict(t)) == t``)."""
    if node is None:
        return {}
    if isinstance(node, Compare):
        return {node.field: {node.op: node.value}}
    if isinstance(node, In):
        return {node.field: {node.operator: list(node.values)}}
    if isinstance(node, Exists):
        return {node.field: {"$exists": node.exists}}
    if isinstance(node, And):
        return {"$and": [to_dict(c) for c in node.children]}
    if isinstance(node, Or):
        return {"$or": [to_dict(c) for c in node.children]}
    return {"$not": to_dict(node.child)}
