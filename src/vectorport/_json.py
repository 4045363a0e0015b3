"""JSON value helpers shared by validation, verification and the conformance kit."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["json_equal", "json_size"]


def json_size(value: Any) -> int:
    """UTF-8 bytes of the compact JSON encoding."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def json_equal(a: Any, b: Any, float_ulps: int = 0) -> bool:
    """Equality as JSON sees it: ``1 == 1.0`` (one number type) but ``True != 1`` and
    ``"1" != 1``; lists and tuples compare element-wise, objects key-wise. With
    ``float_ulps``, two floats within that many float64 ulps are equal (a backend's declared
    ``MetadataRules.float_ulps``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if a == b:
            return True
        if float_ulps and isinstance(a, float) and isinstance(b, float) and math.isfinite(a):
            return abs(a - b) <= float_ulps * math.ulp(max(abs(a), abs(b)))
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(json_equal(x, y, float_ulps) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k], float_ulps) for k in a)
    return type(a) is type(b) and a == b
