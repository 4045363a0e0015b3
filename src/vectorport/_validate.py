"""Validation done once for every backend: keys, vectors, metadata. Nothing is written when
anything is wrong, and every problem names the record key and the path inside it."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._capabilities import Capabilities, MetadataRules
from ._json import json_size
from ._models import JSON, CollectionSpec, Metric, Record, Vector
from .exceptions import ConfigurationError, Problem, ValidationError

__all__ = [
    "Batch",
    "check_batch_size",
    "check_vector",
    "json_size",
    "key_problem",
    "metadata_problems",
    "validate_keys",
    "validate_records",
    "vector_type_problem",
]


@dataclass(frozen=True)
class Batch:
    """Validated, de-duplicated records in columns: what a backend's ``_write`` receives."""

    keys: list[str]
    vectors: Vector
    """``(n, dimension)`` float32, C-contiguous, finite."""
    metadatas: list[dict[str, JSON]]
    texts: list[str | None]

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, index: slice) -> Batch:
        return Batch(self.keys[index], self.vectors[index], self.metadatas[index], self.texts[index])

    def chunks(self, size: int) -> Iterator[Batch]:
        for start in range(0, len(self.keys), size):
            yield self[start : start + size]

    def records(self) -> Iterator[Record]:
        for i, key in enumerate(self.keys):
            yield Record(key, self.vectors[i], self.metadatas[i], self.texts[i])


def key_problem(key: object, max_bytes: int = 1024) -> str | None:
    """Why ``key`` is not a valid record key, or ``None``."""
    if not isinstance(key, str):
        return f"the key must be a string, got {type(key).__name__}"
    if not key:
        return "the key is empty"
    if "\x00" in key:
        return "the key contains a NUL character, which PostgreSQL text cannot hold"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "the key is not valid Unicode (lone surrogate)"
    if size > max_bytes:
        return f"the key is {size} UTF-8 bytes; the limit is {max_bytes}"
    return None


def validate_keys(keys: Iterable[str], max_bytes: int = 1024) -> list[str]:
    """Check keys and de-duplicate them, keeping first-seen order.

    A bare string is refused: iterated, ``"seed1"`` would be the keys ``s``, ``e``, ``d`` …
    """
    if isinstance(keys, str | bytes):
        raise ConfigurationError(f"pass a list of keys, e.g. [{keys!r}], not a bare {type(keys).__name__}")
    if not isinstance(keys, Iterable):
        raise ConfigurationError(f"keys must be a list of strings, got {type(keys).__name__}")
    out: dict[str, None] = {}
    problems: list[Problem] = []
    for i, key in enumerate(keys):
        why = key_problem(key, max_bytes)
        if why:
            problems.append(Problem(None, "key", f"{why} ({key!r})", index=i))
        else:
            out[key] = None
    if problems:
        raise ValidationError(problems)
    return list(out)


def check_batch_size(requested: int | None, limit: int) -> int:
    """The batch size a call uses: ``requested`` (a positive integer) capped at the backend's
    ``limit``, or ``limit`` when none was asked for."""
    if requested is None:
        return limit
    if isinstance(requested, bool) or not isinstance(requested, int | np.integer) or requested < 1:
        raise ConfigurationError(f"batch_size must be a positive integer, got {requested!r}")
    return min(requested, limit)


_NUMBER_KINDS = frozenset("iuf")  # numpy dtype kinds of numbers (not bool "b", str "U", object "O")


def _squared_norm(vector: Vector) -> float:
    """The float32 squared length; an overflow is ``inf`` (judged by the caller), not a
    RuntimeWarning on the user's stderr."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.dot(vector, vector))


def check_vector(vector: Any, dimension: int, metric: Metric) -> tuple[Vector | None, str | None]:
    """Convert to float32 and check dimension, finiteness, that the float32 length neither
    overflows nor (under cosine) underflows, and the cosine metric's non-zero norm."""
    if (
        isinstance(vector, np.ndarray)
        and vector.dtype == np.float32
        and vector.shape == (dimension,)
        and math.isfinite(sq := _squared_norm(vector))
        and sq > 0.0
    ):
        # Fast path for the usual query vector, one float32 reduction: NaN and ±inf propagate
        # into it, an overflowing length makes it inf, and a positive one means not all zeros
        # and no underflow. Anything else takes the full checks below.
        return vector, None
    why = vector_type_problem(vector)
    if why:
        return None, why
    try:
        raw = np.asarray(vector)
        if raw.dtype.kind not in _NUMBER_KINDS:
            return None, f"the vector's components must be numbers, got {raw.dtype.name} values"
        arr = raw.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        return None, f"the vector is not a sequence of numbers ({type(vector).__name__})"
    if arr.ndim != 1:
        return None, f"the vector must be one-dimensional, got shape {arr.shape}"
    if arr.shape[0] != dimension:
        return None, f"the vector has {arr.shape[0]} dimensions; the collection has {dimension}"
    if not np.isfinite(arr).all():
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        return None, f"the vector holds {arr[bad]} at index {bad}; only finite numbers are allowed"
    with np.errstate(over="ignore"):  # checked on the next line
        out = arr.astype(np.float32)
    if not np.isfinite(out).all():
        return None, "the vector holds values beyond float32 range"
    if metric is Metric.COSINE and not np.any(out):
        return None, "the vector is all zeros, which has no direction under the cosine metric"
    with np.errstate(over="ignore", under="ignore"):
        sq = float(np.dot(out, out))
    if not math.isfinite(sq):
        return None, (
            "the vector's length overflows float32 (its squared norm is beyond 3.4e38), so "
            "distances to it are not finite; scale it down"
        )
    if metric is Metric.COSINE and sq == 0.0:
        return None, (
            "the vector's length underflows float32 (its squared norm rounds to 0 although it is "
            "not all zeros), so its cosine is undefined; scale it up (cosine ignores length)"
        )
    return out, None


_NUMBER_TYPES: frozenset[type] = frozenset({int, float})


def vector_type_problem(vector: Any) -> str | None:
    """Why ``vector`` is not a flat sequence of numbers (str and bool components, which numpy
    would convert silently, included), or ``None``. Cheap: one pass over the element types."""
    if isinstance(vector, str | bytes | Mapping) or not isinstance(vector, Sequence | np.ndarray):
        return f"the vector is not a sequence of numbers ({type(vector).__name__})"
    if isinstance(vector, list | tuple):
        odd = set(map(type, vector)) - _NUMBER_TYPES
        if odd and not all(issubclass(t, np.integer | np.floating) for t in odd):
            name = sorted(t.__name__ for t in odd)[0]
            return f"the vector holds a {name}; its components must be numbers (int or float)"
    return None


MAX_METADATA_DEPTH = 32
"""Deepest nesting of objects and lists in metadata (PostgreSQL jsonb and Chroma hold far less
than Python's recursion limit; a document that deep is a bug upstream, not data)."""


def _json_problems(value: Any, path: str, out: list[str | tuple[str, str]], depth: int = 0) -> None:
    if depth > MAX_METADATA_DEPTH:
        out.append((path, f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep; flatten it"))
        return
    if value is None or isinstance(value, bool | str):
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                out.append((path, "the string is not valid Unicode (lone surrogate)"))
        return
    if isinstance(value, int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            out.append((path, f"{value} is not a JSON number; use null or a finite number"))
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _json_problems(item, f"{path}[{i}]", out, depth + 1)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                out.append((path, f"object keys must be strings, got {k!r}"))
                continue
            try:
                k.encode("utf-8")
            except UnicodeEncodeError:
                out.append((path, f"the key {k!r} is not valid Unicode (lone surrogate)"))
                continue
            _json_problems(item, f"{path}.{k}", out, depth + 1)
        return
    hint = {
        "tuple": "use a list",
        "bytes": "decode or base64-encode it",
        "set": "use a sorted list",
        "frozenset": "use a sorted list",
        "datetime": "use an ISO 8601 string or a Unix timestamp",
        "date": "use an ISO 8601 string",
    }.get(type(value).__name__, "use a JSON value (str, number, bool, null, list, object)")
    out.append((path, f"{type(value).__name__} is not JSON; {hint}"))


def _plain_json(metadata: dict[Any, Any]) -> bool:
    """Whether ``metadata`` is one object of valid JSON scalars and lists of them (exact types),
    on which :func:`_json_problems` finds nothing: checked without building a path per value,
    which was most of the plan's cost per record."""
    for key, value in metadata.items():
        if type(key) is not str or not (key.isascii() or not _lone_surrogate(key)):
            return False
        if type(value) is list:
            if not all(_plain_scalar(item) for item in value):
                return False
        elif not _plain_scalar(value):
            return False
    return True


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str:
        return value.isascii() or not _lone_surrogate(value)
    if kind is float:
        return math.isfinite(value)
    return kind is int or kind is bool or value is None


def _is_scalar(value: Any) -> bool:
    return isinstance(value, bool | int | float | str)


def _list_kind(value: list[Any]) -> str | None:
    kinds = {
        "bool"
        if isinstance(v, bool)
        else "number"
        if isinstance(v, int | float)
        else "str"
        if isinstance(v, str)
        else "other"
        for v in value
    }
    return kinds.pop() if len(kinds) == 1 and "other" not in kinds else None


def metadata_problems(metadata: Any, rules: MetadataRules, text: str | None = None) -> list[tuple[str, str]]:
    """Everything about ``metadata`` that is not JSON or that a backend with ``rules`` cannot hold.

    Returns ``(path, message)`` pairs; paths look like ``metadata.tags[2]``. Shared by record
    validation and the migration planner.
    """
    if not isinstance(metadata, dict):
        return [("metadata", f"metadata must be a JSON object, got {type(metadata).__name__}")]
    out: list[tuple[str, str]] = []
    if not _plain_json(metadata):
        found: list[str | tuple[str, str]] = []
        _json_problems(metadata, "metadata", found)
        out = [p for p in found if isinstance(p, tuple)]
        if out:
            return out
        _rule_problems(metadata, rules, out)
    elif not _plain_fits(metadata, rules):
        _rule_problems(metadata, rules, out)
    if rules.max_keys is not None and len(metadata) > rules.max_keys:
        out.append(("metadata", f"{len(metadata)} keys; the limit is {rules.max_keys}"))
    limited = rules.max_total_bytes is not None or rules.max_filterable_bytes is not None
    measured = json_size(metadata) if limited else 0  # once for both limits
    if rules.max_filterable_bytes is not None and metadata:
        size = measured
        if size > rules.max_filterable_bytes:
            out.append(
                (
                    "metadata",
                    f"{size} bytes of filterable metadata; the limit is {rules.max_filterable_bytes}",
                )
            )
    if rules.max_total_bytes is not None:
        counted = text if isinstance(text, str) and rules.text_in_metadata else ""  # others are refused
        size = measured + len(counted.encode("utf-8", "replace"))
        if size > rules.max_total_bytes:
            what = "metadata and text" if rules.text_in_metadata else "metadata"
            out.append(("metadata", f"{size} bytes of {what}; the limit is {rules.max_total_bytes}"))
    return out


def _rule_problems(metadata: dict[str, Any], rules: MetadataRules, out: list[tuple[str, str]]) -> None:
    """What of ``metadata`` (valid JSON) ``rules`` refuse, value by value, with its path."""
    if not rules.nul_characters:
        _nul_problems(metadata, "metadata", out)
    for key, value in metadata.items():
        path = f"metadata.{key}"
        if not key:
            out.append((path, "metadata keys must not be empty"))
        if key in rules.reserved_keys:
            out.append((path, f"the key {key!r} is reserved by this backend"))
        elif rules.reserved_prefixes and key.startswith(rules.reserved_prefixes):
            out.append((path, f"keys starting with {rules.reserved_prefixes} are reserved"))
        _value_rule_problems(value, path, rules, out)
    if rules.max_list_items is not None:
        _list_items_problem(metadata, rules.max_list_items, out)


def _plain_fits(metadata: dict[str, Any], rules: MetadataRules) -> bool:
    """For metadata :func:`_plain_json` accepts (scalars and lists of scalars): whether
    :func:`_rule_problems` finds nothing, decided without building a path per value (most
    of a migration's per-record check). ``False`` sends it to :func:`_rule_problems`, which
    says what is wrong."""
    nul = not rules.nul_characters
    reserved, prefixes = rules.reserved_keys, rules.reserved_prefixes
    items = 0
    for key, value in metadata.items():
        if not key or key in reserved or (prefixes and key.startswith(prefixes)) or (nul and "\x00" in key):
            return False
        if type(value) is list:
            if not _plain_list_fits(value, rules, nul):
                return False
            items += len(value)
        elif not _plain_scalar_fits(value, rules, nul):
            return False
    return rules.max_list_items is None or items <= rules.max_list_items


def _plain_scalar_fits(value: Any, rules: MetadataRules, nul: bool) -> bool:
    if value is None:
        return rules.null
    kind = type(value)
    if kind is str:
        return not (nul and "\x00" in value)
    if kind is int and rules.max_int is not None:
        return bool(abs(value) <= rules.max_int)
    return True


def _plain_list_fits(value: list[Any], rules: MetadataRules, nul: bool) -> bool:
    if not value:
        return rules.empty_lists
    if not rules.mixed_lists and _list_kind(value) is None:
        return False
    if rules.float_list_max_int is not None and _float_list_int_too_big(value, rules.float_list_max_int):
        return False
    return all(_plain_scalar_fits(v, rules, nul) for v in value)


def _list_items_problem(metadata: dict[str, Any], limit: int, out: list[tuple[str, str]]) -> None:
    sizes = {key: len(value) for key, value in metadata.items() if isinstance(value, list | tuple)}
    total = sum(sizes.values())
    if total <= limit:
        return
    rule = f"the limit is {limit} list elements per record"
    if len(sizes) == 1:
        key, size = next(iter(sizes.items()))
        out.append((f"metadata.{key}", f"the list has {size} elements; {rule}"))
        return
    largest = sorted(sizes, key=lambda key: -sizes[key])
    lists = ", ".join(f"{key}: {sizes[key]}" for key in largest[:5]) + (", …" if len(largest) > 5 else "")
    out.append(("metadata", f"{total} list elements in all ({lists}); {rule}"))


def _nul_problems(value: Any, path: str, out: list[tuple[str, str]]) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            out.append((path, "the string contains a NUL character, which this backend cannot store"))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _nul_problems(item, f"{path}[{i}]", out)
    elif isinstance(value, dict):
        for k, item in value.items():
            if "\x00" in k:
                out.append((path, f"the key {k!r} contains a NUL character, which this backend cannot store"))
            _nul_problems(item, f"{path}.{k}", out)


_FLOAT_LIST_MESSAGE = (
    "a list mixing integers and floats is stored as floats, and an integer in it is beyond "
    "±{limit}, which a float holds inexactly; store the numbers as strings"
)


def _float_list_int_too_big(value: list[Any], limit: int) -> bool:
    ints = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    has_float = any(isinstance(v, float) for v in value)
    return has_float and any(abs(v) > limit for v in ints)


def _value_rule_problems(value: Any, path: str, rules: MetadataRules, out: list[tuple[str, str]]) -> None:
    if value is None:
        if not rules.null:
            out.append((path, "null values are not supported; drop the key instead"))
    elif isinstance(value, dict):
        if not rules.nested_objects:
            out.append((path, "nested objects are not supported; flatten them"))
        else:
            for k, v in value.items():
                _value_rule_problems(v, f"{path}.{k}", rules, out)
    elif isinstance(value, list):
        if not value and not rules.empty_lists:
            out.append((path, "empty lists are not supported"))
        elif not rules.mixed_lists and value and _list_kind(value) is None:
            out.append((path, "lists must hold only strings, only numbers or only booleans"))
        elif rules.float_list_max_int is not None and _float_list_int_too_big(
            value, rules.float_list_max_int
        ):
            out.append((path, _FLOAT_LIST_MESSAGE.format(limit=rules.float_list_max_int)))
        else:
            for i, v in enumerate(value):
                _value_rule_problems(v, f"{path}[{i}]", rules, out)
    elif (
        isinstance(value, int)
        and not isinstance(value, bool)
        and rules.max_int is not None
        and abs(value) > rules.max_int
    ):
        out.append(
            (
                path,
                f"the integer {value} is beyond ±{rules.max_int}, which this backend "
                "stores inexactly; store it as a string",
            )
        )


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


_CHECKED: ContextVar[tuple[MetadataRules, frozenset[int]] | None] = ContextVar(
    "vectorport_checked_metadata", default=None
)


@contextmanager
def metadata_checked(rules: MetadataRules, metadatas: Iterable[dict[str, JSON]]) -> Iterator[None]:
    """Within: :func:`validate_records` takes these metadata objects (by identity, alive for
    the whole block) as already found holdable under ``rules`` by :func:`metadata_problems`
    with the same text, as a migration's checks find them just before writing, and does not
    check them again for a store whose rules are equal. Everything else is validated as always.
    """
    token = _CHECKED.set((rules, frozenset(id(m) for m in metadatas)))
    try:
        yield
    finally:
        _CHECKED.reset(token)


def validate_records(
    records: Iterable[Record],
    spec: CollectionSpec,
    caps: Capabilities,
    backend: str,
) -> Batch:
    """Validate every record, de-duplicate keys (last wins) and return one columnar batch.

    Raises :class:`ValidationError` listing every problem; nothing is written then.
    """
    _refuse_non_iterable(records)
    latest: dict[str, int] = {}
    items: list[Record] = []
    problems: list[Problem] = []
    checked = _CHECKED.get()
    done = checked[1] if checked is not None and checked[0] == caps.metadata else frozenset()
    for index, rec in enumerate(records):
        if not isinstance(rec, Record):
            problems.append(
                Problem(None, "", f"expected a vectorport.Record, got {type(rec).__name__}", index)
            )
            continue
        why = key_problem(rec.key, caps.max_key_bytes)
        if why:
            problems.append(Problem(rec.key if isinstance(rec.key, str) else None, "key", why, index))
            continue
        vec, why = check_vector(rec.vector, spec.dimension, spec.metric)
        if why:
            problems.append(Problem(rec.key, "vector", why, index))
        meta = {} if rec.metadata is None else rec.metadata
        if id(meta) not in done:
            for path, message in metadata_problems(meta, caps.metadata, rec.text):
                problems.append(Problem(rec.key, path, message, index))
        why = _text_problem(rec.text, caps.metadata)
        if why:
            problems.append(Problem(rec.key, "text", why, index))
        if vec is not None:
            latest[rec.key] = len(items)
            items.append(Record(rec.key, vec, meta, rec.text))
    if problems:
        raise ValidationError(problems, backend=backend)
    return _last_of_each(items, sorted(latest.values()), spec.dimension)


def _refuse_non_iterable(records: object) -> None:
    """Refuse one Record, a string or a mapping where an iterable of records belongs."""
    if isinstance(records, Record):
        raise ConfigurationError("upsert takes a list of records, e.g. upsert([record]), not one Record")
    if not isinstance(records, Iterable) or isinstance(records, str | bytes | Mapping):
        raise ConfigurationError(
            f"upsert takes an iterable of vectorport.Record, got {type(records).__name__}"
        )


def _text_problem(text: object, rules: MetadataRules) -> str | None:
    """Why a record's ``text`` cannot be stored under ``rules``, or ``None``."""
    if text is None:
        return None
    if not isinstance(text, str):
        return f"text must be a string or None, got {type(text).__name__}"
    if _lone_surrogate(text):
        return "the text is not valid Unicode (lone surrogate)"
    if not rules.nul_characters and "\x00" in text:
        return "the text contains a NUL character, which this backend cannot store"
    return None


def _last_of_each(items: list[Record], keep: list[int], dim: int) -> Batch:
    """The records at the ``keep`` positions (each key's last, in first-seen order) as columns."""
    vectors = np.empty((len(keep), dim), dtype=np.float32)
    for row, i in enumerate(keep):
        vectors[row] = items[i].vector
    return Batch(
        keys=[items[i].key for i in keep],
        vectors=vectors,
        metadatas=[dict(items[i].metadata) for i in keep],
        texts=[items[i].text for i in keep],
    )


def batch_from_columns(
    keys: Sequence[str],
    vectors: Vector,
    metadatas: Sequence[dict[str, JSON]],
    texts: Sequence[str | None],
) -> Batch:
    """A batch from columns already known to be valid (used by backends reading their own data)."""
    return Batch(list(keys), vectors, list(metadatas), list(texts))
