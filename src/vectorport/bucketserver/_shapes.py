r"""Request validation driven by botocore's ``s3vectors`` service model.

The server checks every request against the same shapes the SDKs are generated from
(required members, types, lengths, ranges, enums, unions and patterns), so a client that
skips client-side validation (raw HTTP, ``parameter_validation=False``) gets the service's
``ValidationException`` with a Smithy-style ``fieldList``. botocore itself never checks a
``pattern`` (a KMS key ARN, a tag key), so for those the server is the only check.

Patterns are matched against the whole value, as AWS's services do (``TagKey``'s
``([\p{L}\p{Z}\p{N}_.:/=+\-@]*)`` rejects ``"k!"``), with the Java/ECMA Unicode property
classes ``\p{L}``, ``\p{Z}``, ``\p{N}`` … that Python's ``re`` lacks spelled out from
:mod:`unicodedata`.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from ._errors import ValidationException

__all__ = ["ServiceModel", "load_model"]


@functools.cache
def load_model() -> ServiceModel:
    """The newest ``s3vectors`` model shipped with the installed botocore."""
    from botocore.loaders import Loader

    raw = Loader().load_service_model("s3vectors", "service-2")
    return ServiceModel(raw)


class ServiceModel:
    """Operations (HTTP method and URI) and shapes of the service."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.shapes: dict[str, dict[str, Any]] = raw["shapes"]
        self.operations: dict[str, dict[str, Any]] = raw["operations"]

    def route(self, method: str, path: str) -> tuple[str, dict[str, str]] | None:
        """The operation for ``method path`` and its URI labels, or ``None``."""
        parts = [p for p in path.split("/") if p]
        for name, op in self.operations.items():
            http = op["http"]
            if http["method"] != method:
                continue
            template = [p for p in http["requestUri"].split("?")[0].split("/") if p]
            if len(template) != len(parts):
                continue
            labels: dict[str, str] = {}
            for want, got in zip(template, parts, strict=True):
                if want.startswith("{") and want.endswith("}"):
                    labels[want.strip("{}+")] = got
                elif want != got:
                    break
            else:
                return name, labels
        return None

    def output_has_members(self, operation: str) -> bool:
        """Whether the operation's output shape can carry anything (else AWS answers 200 with
        an empty body)."""
        spec = self.operations[operation].get("output")
        return spec is not None and bool(self.shapes[spec["shape"]].get("members"))

    def input_shape(self, operation: str) -> str | None:
        spec = self.operations[operation].get("input")
        return None if spec is None else str(spec["shape"])

    def validate(self, operation: str, params: dict[str, Any]) -> None:
        """Raise ``ValidationException`` listing every constraint ``params`` breaks."""
        shape = self.input_shape(operation)
        if shape is None:
            return
        problems: list[tuple[str, str]] = []
        self._check(shape, params, "", problems)
        if problems:
            raise _validation_error(problems)

    # ------------------------------------------------------------------ internals
    def _check(self, name: str, value: Any, path: str, out: list[tuple[str, str]]) -> None:
        shape = self.shapes[name]
        check = _CHECKS.get(shape["type"])
        if check is not None:
            check(self, shape, value, path, out)

    def _check_structure(
        self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]
    ) -> None:
        if shape.get("document"):
            return
        if not isinstance(value, dict):
            out.append((path or "/", "Member must be a structure"))
            return
        members: dict[str, Any] = shape.get("members", {})
        if shape.get("union"):
            set_members = [k for k in members if value.get(k) is not None]
            if len(set_members) != 1:
                out.append((path or "/", "Member must have exactly one of its union members set"))
        # URI labels, query-string and header members are checked like body members:
        # the router puts them into ``value`` under their member names.
        for req in shape.get("required", []):
            if value.get(req) is None:
                out.append((f"{path}/{req}", "Member must not be null"))
        for key, spec in members.items():
            if value.get(key) is not None:
                self._check(spec["shape"], value[key], f"{path}/{key}", out)

    def _check_list(self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]) -> None:
        if not isinstance(value, list):
            out.append((path or "/", "Member must be a list"))
            return
        self._check_length(shape, len(value), path or "/", out, "length")
        if self.shapes[shape["member"]["shape"]]["type"] in ("float", "double") and _plain_numbers(value):
            return  # vector data: one type check over the list instead of one call per value
        for i, item in enumerate(value):
            if item is None:
                out.append((f"{path}/{i}", "Member must not be null"))
            else:
                self._check(shape["member"]["shape"], item, f"{path}/{i}", out)

    def _check_map(self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]) -> None:
        if not isinstance(value, dict):
            out.append((path or "/", "Member must be a map"))
            return
        self._check_length(shape, len(value), path or "/", out, "length")
        for k, v in value.items():
            self._check(shape["key"]["shape"], k, f"{path}/{k}", out)
            self._check(shape["value"]["shape"], v, f"{path}/{k}", out)

    def _check_string(self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]) -> None:
        where = path or "/"
        if not isinstance(value, str):
            out.append((where, "Member must be a string"))
            return
        self._check_length(shape, len(value), where, out, "length")
        enum = shape.get("enum")
        if enum and value not in enum:
            out.append((where, f"Member must satisfy enum value set: [{', '.join(enum)}]"))
        pattern = shape.get("pattern")
        if pattern is not None and _pattern(pattern).fullmatch(value) is None:
            out.append((where, f"Member must satisfy regular expression pattern: {pattern}"))

    def _check_integer(
        self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]
    ) -> None:
        where = path or "/"
        if isinstance(value, bool) or not isinstance(value, int):
            out.append((where, "Member must be an integer"))
            return
        if "min" in shape and value < shape["min"]:
            out.append((where, f"Member must have value greater than or equal to {shape['min']}"))
        if "max" in shape and value > shape["max"]:
            out.append((where, f"Member must have value less than or equal to {shape['max']}"))

    def _check_boolean(
        self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]
    ) -> None:
        if not isinstance(value, bool):
            out.append((path or "/", "Member must be a boolean"))

    def _check_number(self, shape: dict[str, Any], value: Any, path: str, out: list[tuple[str, str]]) -> None:
        timestamp = shape["type"] == "timestamp"
        allowed = (int, float, str) if timestamp else (int, float)
        if isinstance(value, bool) or not isinstance(value, allowed):
            out.append((path or "/", f"Member must be a {'timestamp' if timestamp else 'number'}"))

    @staticmethod
    def _check_length(
        shape: dict[str, Any], size: int, where: str, out: list[tuple[str, str]], what: str
    ) -> None:
        if "min" in shape and size < shape["min"]:
            out.append((where, f"Member must have {what} greater than or equal to {shape['min']}"))
        if "max" in shape and size > shape["max"]:
            out.append((where, f"Member must have {what} less than or equal to {shape['max']}"))


_Check = Callable[[ServiceModel, dict[str, Any], Any, str, list[tuple[str, str]]], None]

_CHECKS: dict[str, _Check] = {
    "boolean": ServiceModel._check_boolean,
    "double": ServiceModel._check_number,
    "float": ServiceModel._check_number,
    "integer": ServiceModel._check_integer,
    "list": ServiceModel._check_list,
    "long": ServiceModel._check_integer,
    "map": ServiceModel._check_map,
    "string": ServiceModel._check_string,
    "structure": ServiceModel._check_structure,
    "timestamp": ServiceModel._check_number,
}
"""The check of each shape type (a type not listed, e.g. ``blob``, is not checked)."""


_PROPERTY = re.compile(r"\\p\{(\w+)\}")


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    r"""A model pattern as a Python regex: ``\p{X}`` (a Unicode general category) becomes
    the code point ranges of that category."""
    out: list[str] = []
    depth = 0  # inside a character class
    i = 0
    while i < len(pattern):
        m = _PROPERTY.match(pattern, i)
        if m is not None:
            ranges = _category_ranges(m.group(1))
            out.append(ranges if depth else f"[{ranges}]")
            i = m.end()
            continue
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[":
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
        out.append(ch)
        i += 1
    return re.compile("".join(out))


def _category_ranges(category: str) -> str:
    """Character-class ranges of every code point whose general category is ``category``
    (``Lu``) or starts with it (``L``: letters, ``Z``: separators, ``N``: numbers)."""
    return _all_category_ranges().get(category, "")


@functools.cache
def _all_category_ranges() -> dict[str, str]:
    # One pass over every code point (~0.3 s, once per process), run by run.
    runs: dict[str, list[tuple[int, int]]] = {}
    category = unicodedata.category
    start, current = 0, category(chr(0))
    for cp in range(1, sys.maxunicode + 2):
        cat = category(chr(cp)) if cp <= sys.maxunicode else ""
        if cat != current:
            for name in (current, current[0]):
                spans = runs.setdefault(name, [])
                if spans and spans[-1][1] == start - 1:
                    spans[-1] = (spans[-1][0], cp - 1)
                else:
                    spans.append((start, cp - 1))
            start, current = cp, cat
    return {name: "".join(_range(lo, hi) for lo, hi in spans) for name, spans in runs.items()}


def _range(lo: int, hi: int) -> str:
    return re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"


def _plain_numbers(values: list[Any]) -> bool:
    """Every value is exactly a ``float`` or ``int`` (not ``bool``, not ``None``)."""
    return set(map(type, values)) <= {float, int}


def _validation_error(problems: list[tuple[str, str]]) -> ValidationException:
    n = len(problems)
    head = f"{n} validation error{'s' if n > 1 else ''} detected: "
    text = "; ".join(f"Value at '{p}' failed to satisfy constraint: {m}" for p, m in problems)
    return ValidationException(head + text, [{"path": p, "message": m} for p, m in problems])
