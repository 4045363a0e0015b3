"""Which collection names a backend accepts, as data: the check, and a valid name proposed for
one that is not, so a migration can say which name it will use (or needs) before any write.

Each backend declares its rule once (``capabilities.collection_names``); its URL parsing checks
names with it, and the migration planner reads it.

>>> index = NameRule(
...     "index name", "3-63 lowercase letters, digits, hyphens and dots", min_length=3,
...     max_length=63, chars="a-z0-9.-", edges="a-z0-9", lowercase=True,
... )
>>> index.problem("plain_default"), index.propose("plain_default")
("it holds '_'", 'plain-default')
>>> index.problem("plain-default") is None, index.propose("plain-default")
(True, 'plain-default')
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import unicodedata
from dataclasses import dataclass

from .exceptions import InvalidNameError

__all__ = ["NameRule"]

_SHOWN_CHARS = 5


def _digest(name: str) -> str:
    """Eight hex digits of ``name``: what a proposal appends when it must shorten or lengthen
    a name, so two long names with one prefix get two proposals."""
    return hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _is_ip_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class NameRule:
    """The names a backend accepts for a collection (an index, a table).

    ``chars`` and ``edges`` are regular-expression character classes (without brackets) of the
    characters allowed anywhere and at both ends; ``chars=None`` allows any character but
    control and invisible format ones (Unicode category C).
    """

    what: str
    """What the name names, e.g. ``"S3 Vectors index name"``."""
    description: str
    """The rule in words, for messages."""
    min_length: int = 1
    max_length: int | None = None
    """In characters."""
    max_bytes: int | None = None
    """In UTF-8 bytes."""
    chars: str | None = None
    edges: str | None = None
    lowercase: bool = False
    no_double_dots: bool = False
    no_ip_address: bool = False
    replacement: str = "-"
    """What a proposal puts in place of a run of characters the rule does not allow."""

    def problem(self, name: str) -> str | None:
        """Why ``name`` is not valid (``None``: it is)."""
        if not name:
            return "it is empty"
        if self.chars is None:
            bad = [c for c in name if unicodedata.category(c).startswith("C")]
            if bad:
                label = unicodedata.name(bad[0], "a control character")
                return f"it holds U+{ord(bad[0]):04X} ({label})"
        else:
            bad = sorted(set(re.sub(f"[{self.chars}]", "", name)))
            if bad:
                shown = ", ".join(repr(c) for c in bad[:_SHOWN_CHARS])
                return f"it holds {shown}" + (" …" if len(bad) > _SHOWN_CHARS else "")
        if self.edges is not None:
            if not re.match(f"[{self.edges}]", name[0]):
                return f"it begins with {name[0]!r}"
            if not re.match(f"[{self.edges}]", name[-1]):
                return f"it ends with {name[-1]!r}"
        if len(name) < self.min_length or (self.max_length is not None and len(name) > self.max_length):
            return f"it has {len(name)} character" + ("s" if len(name) != 1 else "")
        size = len(name.encode("utf-8", "surrogatepass"))
        if self.max_bytes is not None and size > self.max_bytes:
            return f"it is {size} UTF-8 bytes long"
        if self.no_double_dots and ".." in name:
            return "it holds '..'"
        if self.no_ip_address and _is_ip_address(name):
            return "it is an IP address"
        return None

    def propose(self, name: str) -> str:
        """A valid name close to ``name`` (``name`` itself when valid), always the same for the
        same ``name``: characters the rule lacks become :attr:`replacement` (accents dropped
        first), letters are lower-cased where needed, and a name that must be cut or lengthened
        gets eight hex digits of the original.
        """
        if self.problem(name) is None:
            return name
        rep = self.replacement
        if self.chars is None:
            out = "".join(c for c in name if not unicodedata.category(c).startswith("C"))
        else:
            out = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
        if self.lowercase:
            out = out.lower()
        if self.chars is not None:
            out = re.sub(f"[^{self.chars}]+", rep, out)
        if self.no_double_dots:
            out = re.sub(r"\.{2,}", ".", out)
        if self.edges is not None:
            out = re.sub(f"^[^{self.edges}]+|[^{self.edges}]+$", "", out)
        suffix = rep + _digest(name)
        if self._too_long(out) or (self.no_ip_address and _is_ip_address(out)):
            out = self._cut(out, suffix) + suffix
        elif len(out) < self.min_length:
            out = (out + suffix) if out else _digest(name)
        if self.problem(out) is not None:  # a rule the steps above cannot meet: a plain digest
            out = _digest(name)
        return out

    def check(self, name: str, where: str = "") -> str:
        """``name``, or :class:`~vectorport.exceptions.InvalidNameError` naming a valid one.

        ``where`` (e.g. the masked URL) starts the message.
        """
        why = self.problem(name)
        if why is None:
            return name
        prefix = f"{where}: " if where else ""
        raise InvalidNameError(
            f"{prefix}{name!r} is not a valid {self.what} ({why}): {self.what}s are "
            f"{self.description}; {self.propose(name)!r} is one",
            name=name,
            rule=self,
        )

    def missing(self, message: str) -> InvalidNameError:
        """The error for a URL that names no collection (``message`` says how to name one)."""
        return InvalidNameError(message, name=None, rule=self)

    def _too_long(self, name: str) -> bool:
        if self.max_length is not None and len(name) > self.max_length:
            return True
        return self.max_bytes is not None and len(name.encode("utf-8", "surrogatepass")) > self.max_bytes

    def _cut(self, name: str, suffix: str) -> str:
        """``name`` shortened so that ``name + suffix`` fits, ending on an allowed edge."""
        keep = len(name)
        if self.max_length is not None:
            keep = min(keep, self.max_length - len(suffix))
        out = name[: max(keep, 0)]
        if self.max_bytes is not None:
            room = self.max_bytes - len(suffix.encode())
            out = out.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
        if self.edges is not None:
            out = re.sub(f"[^{self.edges}]+$", "", out)
        return out
