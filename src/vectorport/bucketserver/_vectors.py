"""Vector data operations: Put/Get/Delete/ListVectors, with the checks on vector values and
metadata that QueryVectors shares (:func:`parse_vector`)."""

from __future__ import annotations

import itertools
import json
import math
import secrets
import time
from typing import Any

import numpy as np

from ._core import Index, ServiceCore, index_not_found
from ._errors import TooManyRequestsException, ValidationException
from ._paging import decode_token, encode_token
from ._table import VectorTable

__all__ = ["VectorOperations", "parse_vector"]

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_EXACT_INT = float(2**53)


def _meta_size(value: Any) -> int:
    """Bytes a metadata value takes: UTF-8 of strings, JSON text of numbers and booleans."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, list):
        return sum(_meta_size(v) for v in value)
    if isinstance(value, dict):
        return sum(len(k.encode("utf-8")) + _meta_size(v) for k, v in value.items())
    return len(json.dumps(value))


class VectorOperations(ServiceCore):
    """The vector data operations."""

    def _check_write_rate(self, index: Index, count: int) -> None:
        rate = self.limits.write_rate
        if rate is None:
            return
        with self.lock:
            now = time.monotonic()
            index.rate_tokens = min(rate, index.rate_tokens + (now - index.rate_stamp) * rate)
            if index.rate_stamp == 0.0:
                index.rate_tokens = rate
            index.rate_stamp = now
            if index.rate_tokens < count:
                raise TooManyRequestsException(
                    f"Write rate exceeded for index {index.name}: at most {rate:g} vectors per second"
                )
            index.rate_tokens -= count

    def _metadata(self, meta: Any, index: Index, where: str) -> dict[str, Any]:
        limits = self.limits
        if meta is None:
            return {}
        if not isinstance(meta, dict):
            raise ValidationException(f"{where}: metadata must be a JSON object")
        if len(meta) > limits.max_metadata_keys:
            raise ValidationException(
                f"{where}: metadata has {len(meta)} keys; at most {limits.max_metadata_keys} are allowed"
            )
        fsize = total = 0
        for key, value in meta.items():
            if not key:
                raise ValidationException(f"{where}: metadata keys must not be empty")
            _check_meta_value(value, f"{where}: metadata key {key!r}")
            size = len(key.encode("utf-8")) + _meta_size(value)
            total += size
            if key not in index.non_filterable:
                fsize += size
        # The service's own wording (seen in real PutVectors errors), then the sizes.
        if fsize > limits.max_filterable_bytes:
            raise ValidationException(
                f"{where}: Filterable metadata must have at most {limits.max_filterable_bytes} bytes "
                f"(it has {fsize}); declare large keys non-filterable at index creation"
            )
        if total > limits.max_total_metadata_bytes:
            raise ValidationException(
                f"{where}: Total metadata must have at most {limits.max_total_metadata_bytes} bytes "
                f"(it has {total})"
            )
        return meta

    def PutVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        items = inp["vectors"]
        keys: list[str] = []
        seen: set[str] = set()
        # All vectors checked and converted at once; when any of them fails (None), each is
        # checked in turn below, so the error names the first bad record as before.
        batch = _fast_float32([item["data"].get("float32") for item in items], index)
        vectors = np.empty((len(items), index.dimension), np.float32) if batch is None else batch
        metas: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            key = item["key"]
            where = f"Invalid record for key '{key}'"
            if key in seen:
                raise ValidationException(f"Duplicate vector key in the request: '{key}'")
            seen.add(key)
            if batch is None:
                vectors[i] = parse_vector(item["data"], index, where)
            metas.append(self._metadata(item.get("metadata"), index, where))
            keys.append(key)
        self._check_write_rate(index, len(keys))
        table = index.table
        with table.lock:
            if table.dropped:
                raise index_not_found(index.name)
            table.put(keys, vectors, metas)
        return {}

    def GetVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        want_data, want_meta = bool(inp.get("returnData")), bool(inp.get("returnMetadata"))
        table = index.table
        out: list[dict[str, Any]] = []
        with table.lock:
            done: set[str] = set()
            for key in inp["keys"]:
                row = table.rows.get(key)
                if row is None or key in done:
                    continue
                done.add(key)
                out.append(self._record(table, row, want_data, want_meta))
        return {"vectors": out}

    @staticmethod
    def _record(table: VectorTable, row: int, data: bool, meta: bool) -> dict[str, Any]:
        rec: dict[str, Any] = {"key": table.keys[row]}
        if data:
            rec["data"] = {"float32": table.vectors[row].tolist()}
        if meta:
            rec["metadata"] = table.metadatas[row]
        return rec

    def DeleteVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        keys = list(dict.fromkeys(inp["keys"]))
        self._check_write_rate(index, len(keys))
        with index.table.lock:
            if index.table.dropped:
                raise index_not_found(index.name)
            index.table.delete(keys)
        return {}

    def ListVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        count, seg = inp.get("segmentCount"), inp.get("segmentIndex")
        if (count is None) != (seg is None):
            raise ValidationException("segmentCount and segmentIndex must be specified together")
        count, seg = count or 1, seg or 0
        if seg >= count:
            raise ValidationException(f"segmentIndex ({seg}) must be less than segmentCount ({count})")
        limit = inp.get("maxResults") or 500
        after: str | None = None
        token = inp.get("nextToken")
        if token is not None:
            with self.lock:
                saved = self._list_states.get(token)
            state = saved if saved is not None else decode_token(token)
            if state.get("c") != count or state.get("i") != seg or "a" not in state:
                raise ValidationException("The nextToken does not match this request's segment parameters")
            after = state["a"]
        want_data, want_meta = bool(inp.get("returnData")), bool(inp.get("returnMetadata"))
        table = index.table
        with table.lock:
            keys, more = table.page(after, limit, seg, count)
            items: list[dict[str, Any]] = []
            size = 0
            for key in keys:
                rec = self._record(table, table.rows[key], want_data, want_meta)
                items.append(rec)
                size += len(key) + (12 * index.dimension if want_data else 0)
                if want_meta:
                    size += _meta_size(rec["metadata"])
                if size >= self.limits.max_list_bytes and len(items) < len(keys):
                    more = True
                    break
        out: dict[str, Any] = {"vectors": items}
        if more and items:
            out["nextToken"] = self._list_token({"a": items[-1]["key"], "c": count, "i": seg})
        return out

    def _list_token(self, state: dict[str, Any]) -> str:
        token = encode_token(state)
        if len(token) <= 2000:
            return token
        # A long multi-byte key does not fit the model's 2,048-character token: keep it here.
        ref = "~" + secrets.token_urlsafe(18)
        with self.lock:
            self._list_states[ref] = state
        return ref


def parse_vector(data: dict[str, Any], index: Index, where: str) -> np.ndarray[Any, Any]:
    """A request's ``VectorData`` as float32, checked against the index (``where`` opens
    each error message)."""
    values = data.get("float32")
    if not isinstance(values, list):
        raise ValidationException(f"{where}: vector data must be given as float32")
    if len(values) != index.dimension:
        raise ValidationException(
            f"{where}: vector dimension {len(values)} does not match index dimension {index.dimension}"
        )
    arr = _fast_float32([values], index)
    if arr is not None:
        return np.asarray(arr[0])
    for v in values:
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or abs(v) > _FLOAT32_MAX  # first: an int beyond float64 makes isfinite raise
            or not math.isfinite(v)
        ):
            raise ValidationException(
                f"{where}: vector data must contain only valid float32 values, got {v!r}"
            )
    arr = np.asarray(values, np.float32)
    if index.metric == "cosine" and not np.any(arr):
        raise ValidationException(f"{where}: zero vectors are not allowed for the cosine distance metric")
    return arr


def _fast_float32(rows: list[Any], index: Index) -> np.ndarray[Any, Any] | None:
    """``rows`` (each a ``float32`` member of a request) as one float32 matrix when every
    row is a list of the index's dimension holding only finite ``float`` values (or ``int``
    below 2**53) within float32's range, and, for cosine, not all zero: checked on the whole
    matrix at once. ``None`` sends the caller to :func:`parse_vector`'s per-value checks,
    which find the offending value and word the error."""
    dim = index.dimension
    if not rows or not all(type(row) is list and len(row) == dim for row in rows):
        return None
    kinds = set(map(type, itertools.chain.from_iterable(rows)))
    if not kinds <= {float, int}:
        return None
    try:
        wide = np.array(rows, np.float64).reshape(len(rows), dim)
    except OverflowError:  # an int beyond float64
        return None
    if wide.size and not np.isfinite(wide).all():
        return None
    top = float(np.abs(wide).max()) if wide.size else 0.0
    if top > _FLOAT32_MAX or (int in kinds and top >= _EXACT_INT):
        return None
    if index.metric == "cosine" and not wide.any(axis=1).all():
        return None
    # Python floats (and ints below 2**53) are exact as C doubles, so this is the same
    # rounding as np.asarray(values, np.float32).
    return wide.astype(np.float32)


def _check_meta_value(value: Any, where: str) -> None:
    if value is None:
        raise ValidationException(f"{where}: null values are not supported")
    if isinstance(value, bool | str):
        return
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationException(f"{where}: numbers must be finite")
        return
    if isinstance(value, list):
        for item in value:
            if item is None or isinstance(item, list | dict):
                raise ValidationException(f"{where}: lists may hold only strings, numbers and booleans")
            _check_meta_value(item, where)
        return
    raise ValidationException(f"{where}: metadata values must be strings, numbers, booleans or lists of them")
