"""Scan cursors: one opaque, checked encoding for every backend.

A backend's ``_scan_page`` deals in a *position* (a small JSON object of its own: the last key,
an offset, a service token); :meth:`BaseStore.scan` turns it into the cursor a caller sees and
back. The cursor names the backend and the segment it belongs to, so resuming a scan with the
cursor of another backend or another segment (which would skip or repeat records) is refused
before any I/O, as is anything that is not a cursor at all.

>>> c = encode_cursor("memory", (0, 2), {"after": "docs/a.md#3"})
>>> decode_cursor(c, "memory", (0, 2))
{'after': 'docs/a.md#3'}
>>> decode_cursor(c, "memory", (1, 2))
Traceback (most recent call last):
...
vectorport.exceptions.ConfigurationError: this memory scan cursor belongs to segment (0, 2), ...
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from .exceptions import ConfigurationError

__all__ = ["Position", "decode_cursor", "encode_cursor", "position_field"]

Position = dict[str, Any]
"""Where a backend's scan stands: JSON-ready, backend-defined."""

_VERSION = 2
_MAX_CURSOR = 65_536  # characters; a real cursor is a key (<= 1 KiB) or a service token


def encode_cursor(backend: str, segment: tuple[int, int], position: Position) -> str:
    """The opaque cursor for ``position`` in ``segment`` of a ``backend`` scan."""
    raw = json.dumps({"v": _VERSION, "b": backend, "s": list(segment), "p": position}, ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")


def decode_cursor(cursor: object, backend: str, segment: tuple[int, int]) -> Position:
    """The position a cursor made by :func:`encode_cursor` holds; ``ConfigurationError`` when it
    is not one, or belongs to another backend or segment."""
    if not isinstance(cursor, str):
        raise ConfigurationError(f"a scan cursor is a string (a page's .cursor), got {type(cursor).__name__}")
    shown = cursor[:40] + ("…" if len(cursor) > 40 else "")
    bad = ConfigurationError(f"not a {backend} scan cursor: {shown!r}; pass a page's .cursor as it was")
    if len(cursor) > _MAX_CURSOR:
        raise bad
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error, RecursionError):
        raise bad from None
    if not (isinstance(data, dict) and data.get("v") == _VERSION and isinstance(data.get("p"), dict)):
        raise bad
    seg = data.get("s")
    if not (isinstance(seg, list) and len(seg) == 2 and all(type(x) is int for x in seg)):
        raise bad
    if data.get("b") != backend:
        raise ConfigurationError(
            f"this scan cursor belongs to a {data.get('b')!r} store, not {backend!r}; "
            "resume a scan on the store that made the cursor"
        )
    if tuple(seg) != tuple(segment):
        raise ConfigurationError(
            f"this {backend} scan cursor belongs to segment {tuple(seg)}, not {tuple(segment)}; "
            "resume with the segment it came from"
        )
    position: Position = data["p"]
    return position


def position_field(position: Position, name: str, kind: type[Any], backend: str) -> Any:
    """``position[name]`` checked to be a ``kind`` (a forged or damaged cursor is refused)."""
    value = position.get(name)
    if type(value) is not kind:
        raise ConfigurationError(f"not a {backend} scan cursor: its {name!r} is not a {kind.__name__}")
    return value
