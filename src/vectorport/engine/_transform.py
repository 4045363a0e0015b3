"""Metadata policies: what happens to metadata values the target cannot hold, and ``--text-key``.

The same :class:`Transformer` runs in the plan (to say what will change), in the copy (to change
it) and in the verifier (to know what the target should hold), so the three never disagree.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .._capabilities import MetadataRules
from .._json import json_size
from .._models import JSON
from .._validate import metadata_problems
from ..exceptions import ConfigurationError

__all__ = ["NO_TEXT", "Change", "MetadataPolicy", "Transformed", "Transformer", "problem_kind"]


class MetadataPolicy(StrEnum):
    """What to do with a metadata value the target backend cannot hold.

    ===========  ===========================================================================
    policy       effect
    ===========  ===========================================================================
    error        nothing is changed; a plan with any such value is refused (the default)
    flatten      nested objects become dotted keys (``{"a": {"b": 1}}`` → ``{"a.b": 1}``);
                 any other value the target cannot hold is stringified
    stringify    the value becomes its JSON text (``null`` → ``"null"``, ``[1, "a"]`` →
                 ``'[1,"a"]'``, ``2**60`` → ``"1152921504606846976"``)
    drop         the key is removed; when the metadata is still over a size or key-count
                 limit, its largest values are removed until it fits
    ===========  ===========================================================================
    """

    ERROR = "error"
    FLATTEN = "flatten"
    STRINGIFY = "stringify"
    DROP = "drop"

    @classmethod
    def parse(cls, value: str | MetadataPolicy) -> MetadataPolicy:
        """Accept a policy or its name."""
        if isinstance(value, MetadataPolicy):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            choices = ", ".join(p.value for p in cls)
            raise ConfigurationError(f"unknown metadata policy {value!r}; choose one of {choices}") from None


# Problem messages come from vectorport._validate; these short names group them in plans.
_KINDS: tuple[tuple[str, str], ...] = (
    ("null values are not supported", "null value"),
    ("nested objects are not supported", "nested object"),
    ("empty lists are not supported", "empty list"),
    ("lists must hold only", "mixed or nested list"),
    ("stores inexactly", "integer beyond exact range"),
    ("is reserved by this backend", "reserved key"),
    ("are reserved", "reserved key prefix"),
    ("metadata keys must not be empty", "empty key"),
    ("keys; the limit is", "too many keys"),
    ("list elements", "lists too long"),
    ("bytes of filterable metadata", "filterable metadata too large"),
    ("bytes of metadata and text", "metadata and text too large"),
    ("bytes of metadata;", "metadata too large"),
    ("is not JSON", "not JSON"),
    ("is not a JSON number", "not JSON"),
)
_NUMBERS = re.compile(r"-?\d+(\.\d+)?")


def problem_kind(message: str) -> str:
    """A short, stable name for a metadata problem message, used to group problems."""
    for needle, kind in _KINDS:
        if needle in message:
            return kind
    return _NUMBERS.sub("N", message)


@dataclass(frozen=True)
class Change:
    """One change a policy made to one record's metadata."""

    path: str
    """Where, e.g. ``metadata.author`` (the key as stored in the source)."""
    action: str
    """``flattened``, ``stringified``, ``dropped``, ``text_from_key`` or ``defaulted`` (the
    target fills the field: its :attr:`MetadataRules.defaults`)."""
    kind: str
    """Why: the :func:`problem_kind` of the problem it fixed (or ``text key``)."""


@dataclass
class Transformed:
    """A record's metadata and text as the target will get them."""

    metadata: dict[str, JSON]
    text: str | None
    changes: list[Change] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """Every problem the target would have with the *source* metadata, as ``(path, message)``."""
    unresolved: list[tuple[str, str]] = field(default_factory=list)
    """Problems the policy did not fix: the record cannot be written as is."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


NO_TEXT = "the record has no text to re-embed"


class Transformer:
    """Apply a :class:`MetadataPolicy` for a target's :class:`MetadataRules`, plus ``text_key``.

    Parameters
    ----------
    rules:
        The target backend's metadata rules (``target.capabilities.metadata``).
    policy:
        What to do with values the target cannot hold.
    text_key:
        A source metadata key holding the chunk text (e.g. LangChain's ``page_content``): when a
        record has no text and this key holds a string, the string becomes the text and the key
        leaves the metadata.

    >>> from .. import MetadataRules
    >>> t = Transformer(MetadataRules(nested_objects=False), "flatten")
    >>> t.apply({"author": {"name": "ada"}}, None).metadata
    {'author.name': 'ada'}
    """

    def __init__(
        self,
        rules: MetadataRules,
        policy: MetadataPolicy | str = MetadataPolicy.ERROR,
        text_key: str | None = None,
        *,
        needs_text: bool = False,
    ) -> None:
        self.rules = rules
        self.policy = MetadataPolicy.parse(policy)
        self.text_key = text_key or None
        self.needs_text = needs_text
        """A record without text cannot be written (its vector is made from its text: re-embedding)."""
        # Per-value checks: size and key-count limits are record-level and handled after.
        self._value_rules = replace(rules, max_keys=None, max_total_bytes=None, max_filterable_bytes=None)
        self._defaults = rules.defaults

    def apply(self, metadata: dict[str, JSON] | None, text: str | None) -> Transformed:
        """Transform one record's metadata and text. Never raises for unholdable values: they
        are listed in ``problems`` and, when the policy cannot fix them, ``unresolved`` (with
        ``needs_text``, a record left without text too)."""
        out = self._apply(metadata, text)
        if self.needs_text and out.text is None:
            out.unresolved.append(("text", NO_TEXT))
        return out

    def _apply(self, metadata: dict[str, JSON] | None, text: str | None) -> Transformed:
        meta = dict(metadata or {})
        changes: list[Change] = []
        if self.text_key is not None and text is None and isinstance(meta.get(self.text_key), str):
            text = meta.pop(self.text_key)
            changes.append(Change(f"metadata.{self.text_key}", "text_from_key", "text key"))
        for key, value in self._defaults:
            if key not in meta:  # the target's column default fills it, as the app's INSERT does
                meta[key] = json.loads(value)
                changes.append(Change(f"metadata.{key}", "defaulted", "the target column's default"))
        problems = metadata_problems(meta, self.rules, text)
        if not problems:
            return Transformed(meta, text, changes)
        if self.policy is MetadataPolicy.ERROR:
            return Transformed(meta, text, changes, problems, list(problems))
        out: dict[str, JSON] = {}
        unresolved: list[tuple[str, str]] = []
        for key, value in meta.items():
            found = metadata_problems({key: value}, self._value_rules)
            if not found:
                self._put(out, key, value, unresolved)
                continue
            kind = problem_kind(found[0][1])
            path = f"metadata.{key}"
            if self.policy is MetadataPolicy.DROP:
                changes.append(Change(path, "dropped", kind))
            elif kind in ("reserved key", "reserved key prefix", "empty key"):
                unresolved.extend(found)  # the key's name is the problem: only drop can help
                self._put(out, key, value, unresolved)
            elif self.policy is MetadataPolicy.FLATTEN and isinstance(value, dict) and value:
                self._flatten(out, key, value, path, changes, unresolved)
            else:
                changes.append(Change(path, "stringified", kind))
                self._put(out, key, _dumps(value), unresolved)
        rest = metadata_problems(out, self.rules, text)
        if rest and self.policy is MetadataPolicy.DROP:
            rest = self._drop_until_fits(out, text, changes)
        seen = set(unresolved)
        unresolved.extend(p for p in rest if p not in seen)
        return Transformed(out, text, changes, problems, unresolved)

    def _put(self, out: dict[str, JSON], key: str, value: JSON, unresolved: list[tuple[str, str]]) -> None:
        if key in out:
            unresolved.append((f"metadata.{key}", "two source keys map to this key after flattening"))
            return
        out[key] = value

    def _flatten(
        self,
        out: dict[str, JSON],
        prefix: str,
        value: dict[str, JSON],
        path: str,
        changes: list[Change],
        unresolved: list[tuple[str, str]],
    ) -> None:
        changes.append(Change(path, "flattened", "nested object"))
        for sub, item in value.items():
            key = f"{prefix}.{sub}"
            if isinstance(item, dict) and item:
                self._flatten(out, key, item, f"{path}.{sub}", changes, unresolved)
                continue
            found = metadata_problems({key: item}, self._value_rules)
            if found:
                changes.append(Change(f"{path}.{sub}", "stringified", problem_kind(found[0][1])))
                item = _dumps(item)
            self._put(out, key, item, unresolved)

    def _drop_until_fits(
        self, out: dict[str, JSON], text: str | None, changes: list[Change]
    ) -> list[tuple[str, str]]:
        rest = metadata_problems(out, self.rules, text)
        while rest and out:
            largest = max(out, key=lambda k: json_size(out[k]))
            kind = problem_kind(rest[0][1])
            del out[largest]
            changes.append(Change(f"metadata.{largest}", "dropped", kind))
            rest = metadata_problems(out, self.rules, text)
        return rest

    def describe(self) -> dict[str, JSON]:
        """The transform as JSON (for checkpoints and reports)."""
        return {"metadata_policy": self.policy.value, "text_key": self.text_key}
