"""JSON value helpers shared by validation, verification and the conformance kit."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_equal", "json_size"]


def json_size(value: Any) -> int:
    """UTF-8 bytes of the compact JSON encoding."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``1 == 1.0`` (one number type) but ``True != 1`` and
    ``"1" != 1``; lists and tuples compare element-wise, objects key-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
