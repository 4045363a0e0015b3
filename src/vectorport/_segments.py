"""Stable key hashing for ``scan(segment=(i, n))`` where a backend has no native segments."""

from __future__ import annotations

import zlib

__all__ = ["segment_of"]


def segment_of(key: str, parts: int) -> int:
    """Segment number of ``key``: CRC-32 of its UTF-8 bytes modulo ``parts`` (stable across
    processes and machines, unlike ``hash()``)."""
    return zlib.crc32(key.encode("utf-8")) % parts
