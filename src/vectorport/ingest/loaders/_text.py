"""Helpers the loaders share: decoding bytes and splitting text into paragraphs."""

from __future__ import annotations

import re

__all__ = ["collapse_spaces", "decode", "paragraphs"]

_BLANK_LINES = re.compile(r"\n[ \t]*\n+")
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")


def decode(data: bytes) -> str:
    """UTF-8 (with or without BOM), falling back to Latin-1, with normalised line ends and no
    NUL characters (PostgreSQL text cannot hold them)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Latin-1 maps every byte, so a legacy file is read rather than refused.
        text = data.decode("latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, trailing spaces stripped, empty ones dropped."""
    out = []
    for para in _BLANK_LINES.split(text):
        lines = [line.rstrip() for line in para.strip("\n").split("\n")]
        joined = "\n".join(lines).strip()
        if joined:
            out.append(joined)
    return out


def collapse_spaces(text: str) -> str:
    """Runs of spaces/tabs become one space (line breaks are kept)."""
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n")).strip()
