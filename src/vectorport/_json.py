"""JSON value helpers shared by validation, verification and the conformance kit, and the fast
reading and writing of large JSON documents (vector data) by the bucket client and server."""

from __future__ import annotations

import json
import math
from typing import Any

try:
    import orjson as _orjson
except ImportError:  # an optional speed-up: json reads and writes the same documents
    _orjson = None  # type: ignore[assignment]

__all__ = ["canonical_dumps", "fast_dumps", "fast_loads", "json_equal", "json_size"]

# Every digit becomes "0" and every byte that can open a JSON number ("[", ",", ":", "-",
# whitespace) becomes ",": a number of 19 or more digits then shows as ",000…".
_NUMBER_SHAPES = bytes.maketrans(b"123456789[:- \t\n\r", b"000000000,,,,,,,")
_LONG_NUMBER = b"," + b"0" * 19
_PASSTHROUGH = 0 if _orjson is None else _orjson.OPT_PASSTHROUGH_DATETIME | _orjson.OPT_PASSTHROUGH_DATACLASS
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=True)


def fast_loads(data: bytes) -> Any:
    """``json.loads(data)``: the very same objects, or the same exception (a ``ValueError``).

    orjson reads it when installed (about 5x faster on a body of floats), but only where it
    gives what ``json`` gives: anything it refuses (NaN, 1e400, lone surrogates, UTF-16, deep
    nesting) goes to :func:`json.loads`, and so does a document with a run of 19 or more
    digits opening a number, since orjson reads an integer beyond 64 bits as a float where
    ``json`` keeps it exact.
    """
    if _orjson is not None and _LONG_NUMBER not in data.translate(_NUMBER_SHAPES):
        try:
            return _orjson.loads(data)
        except _orjson.JSONDecodeError:
            pass
    return json.loads(data)


def fast_dumps(doc: Any) -> bytes:
    """``json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()``: the same JSON
    values (a float may be spelled differently, ``1e-05`` as ``0.00001``, never with another
    value), or the same exception.

    orjson writes it when installed (about 40x faster on a response of vector data, whose
    floats ``json`` writes with ``repr`` one Python call each), but only where it writes what
    ``json`` writes: whatever it refuses (an integer beyond 64 bits, a lone surrogate, a key
    that is not a string, a type it does not know) and any output holding ``null`` (orjson
    writes NaN and infinities as ``null``, ``json`` as ``NaN`` and ``Infinity``) go to
    :func:`json.dumps`.
    """
    if _orjson is not None:
        try:
            out = _orjson.dumps(doc, option=_PASSTHROUGH)
        except TypeError:
            pass
        else:
            if b"null" not in out:
                return out
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def canonical_dumps(doc: Any) -> bytes:
    """``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` as UTF-8,
    byte for byte (record digests, stored in checkpoints and sync states, rely on it).

    orjson writes it when installed (a third of the cost on a record's metadata): it sorts keys
    by code point and escapes strings exactly as ``json`` does (every code point checked), and
    spells a float as ``repr`` does except below 1e-4 and for NaN and infinities (checked on
    millions of bit patterns). So a document whose output could hold such a float (``0.0000``,
    ``e-`` or ``null`` anywhere in it, strings included) is written by ``json``, as is whatever
    orjson refuses (an integer beyond 64 bits, a key that is not a string, a type it does not
    know).
    """
    if _orjson is not None:
        try:
            out = _orjson.dumps(doc, option=_PASSTHROUGH | _orjson.OPT_SORT_KEYS)
        except TypeError:
            pass
        else:
            if b"0.0000" not in out and b"e-" not in out and b"null" not in out:
                return out
    return _CANONICAL.encode(doc).encode("utf-8")


def json_size(value: Any) -> int:
    """UTF-8 bytes of the compact JSON encoding (``json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))``).

    A value of strings, integers, finite floats, booleans and nulls in dicts and lists is
    measured by orjson when installed (~3x cheaper on a record's metadata): orjson writes
    strings, integers and the rest byte for byte as ``json`` does, and a float with the same
    digits, but not always the same notation (``1e-05`` as ``0.00001``), so each float's
    difference to its ``repr`` is added. Other types, NaN and infinities, and whatever orjson
    refuses (an integer beyond 64 bits, a lone surrogate, a key that is not a string) are
    measured by ``json`` as before.
    """
    if _orjson is not None:
        try:
            delta = _float_delta(value)
            if delta is not None:
                return len(_orjson.dumps(value)) + delta
        except (TypeError, RecursionError):
            pass
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _float_delta(value: Any) -> int | None:
    """Bytes ``json`` writes more than orjson for ``value`` (its floats), or ``None`` when
    ``value`` holds anything but ``str``, ``int``, ``bool``, ``None`` and finite ``float``
    inside ``dict`` and ``list`` (exact types)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return 0
    if kind is float:
        if not math.isfinite(value):
            return None
        return len(float.__repr__(value)) - len(_orjson.dumps(value))
    if kind is not dict and kind is not list:
        return None
    total = 0
    for item in value.values() if kind is dict else value:
        if type(item) is str:
            continue
        delta = _float_delta(item)
        if delta is None:
            return None
        total += delta
    return total


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
