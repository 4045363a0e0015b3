"""The tail of a not-found message: what exists there, and the nearest name to the one asked for."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Sequence

from .exceptions import ConfigurationError

__all__ = ["nearest", "refuse_unknown", "what_exists"]

SHOWN = 10
"""Names listed at most; the rest are counted."""


def nearest(wanted: str, names: Sequence[str]) -> str | None:
    """The name closest to ``wanted`` (case-insensitively), if any is close.

    >>> nearest("tickts", ["docs", "tickets"])
    'tickets'
    >>> nearest("zzz", ["docs", "tickets"]) is None
    True
    """
    folded = {n.lower(): n for n in names}
    found = difflib.get_close_matches(wanted.lower(), list(folded), n=1, cutoff=0.6)
    return folded[found[0]] if found else None


def what_exists(kind: str, wanted: str, names: Sequence[str] | None, where: str = "there") -> str:
    """``"; did you mean 'b'? (the collections there: 'a', 'b')"``, ready to append to a message.

    ``names`` is ``None`` when they could not be listed (then nothing is said).

    >>> what_exists("collections", "tickts", ["docs", "tickets"])
    "; did you mean 'tickets'? (the collections there: 'docs', 'tickets')"
    >>> what_exists("tables", "docs", [])
    '; there are no tables there'
    """
    if names is None:
        return ""
    if not names:
        return f"; there are no {kind} {where}"
    shown = ", ".join(repr(n) for n in names[:SHOWN])
    if len(names) > SHOWN:
        shown += f" and {len(names) - SHOWN} more"
    guess = nearest(wanted, names)
    if guess is None:
        return f"; the {kind} {where}: {shown}"
    return f"; did you mean {guess!r}? (the {kind} {where}: {shown})"


def refuse_unknown(
    given: Iterable[str], known: Collection[str], what: str, listed: str = "", where: str = ""
) -> None:
    """Refuse the names of ``given`` not in ``known`` (a typo such as ``ef_serach``): a
    :class:`~vectorport.exceptions.ConfigurationError` naming each with the nearest known one,
    where it was (``where``), and every known name (or ``listed``, a description of them).

    >>> refuse_unknown(["colection", "tabel"], ["collection", "table"], "option")
    ... # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    vectorport.exceptions.ConfigurationError: unknown options 'colection' (did you mean
    'collection'?), 'tabel' (did you mean 'table'?); known: collection, table
    """
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return
    parts = []
    for name in unknown:
        close = nearest(name, sorted(known))
        parts.append(f"{name!r}" + (f" (did you mean {close!r}?)" if close else ""))
    plural = "s" if len(unknown) > 1 else ""
    at = f" in {where}" if where else ""
    takes = listed or ", ".join(sorted(known)) or "none"
    raise ConfigurationError(f"unknown {what}{plural} {', '.join(parts)}{at}; known: {takes}")
