"""Page tokens of the List operations: the last name or key of a page, as base64 JSON."""

from __future__ import annotations

import base64
import json
from typing import Any

from ._errors import ValidationException

__all__ = ["decode_token", "encode_token", "page_names"]


def encode_token(state: dict[str, Any]) -> str:
    raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def decode_token(token: str) -> dict[str, Any]:
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8"))
    except (ValueError, UnicodeError):
        raise ValidationException("The nextToken is invalid") from None
    if not isinstance(state, dict):
        raise ValidationException("The nextToken is invalid")
    return state


def page_names(names: list[str], limit: int, token: str | None) -> tuple[list[str], str | None]:
    start = 0
    if token is not None:
        after = decode_token(token).get("a")
        if not isinstance(after, str):
            raise ValidationException("The nextToken is invalid")
        start = next((i for i, n in enumerate(names) if n > after), len(names))
    chosen = names[start : start + limit]
    more = start + limit < len(names)
    return chosen, (encode_token({"a": chosen[-1]}) if more and chosen else None)
