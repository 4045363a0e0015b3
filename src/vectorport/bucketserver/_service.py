"""The S3 Vectors operations over in-memory state, persisted under an optional directory.

Each public method takes the operation's input (already checked against the botocore model)
and returns its output dict, or raises a :class:`~._errors.ServiceError`. Limits and rules
come from AWS's "Limitations and restrictions", "Vector bucket naming rules", "Creating a
vector index" and "Metadata filtering" pages.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import secrets
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ._errors import (
    ConflictException,
    NotFoundException,
    ServiceQuotaExceededException,
    TooManyRequestsException,
    ValidationException,
)
from ._filter import FilterNode, parse_filter
from ._table import VectorTable, fsync_dir
from ._text import bm25_scores, rrf

__all__ = ["Limits", "Service"]

_BUCKET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_BUCKET_ARN = re.compile(
    r"arn:aws[-a-z0-9]*:s3vectors:[a-z0-9-]+:[0-9]{12}:bucket/([a-z0-9][a-z0-9-.]{1,61}[a-z0-9])"
)
_INDEX_ARN = re.compile(
    r"arn:aws[-a-z0-9]*:s3vectors:[a-z0-9-]+:[0-9]{12}:bucket/([a-z0-9][a-z0-9-.]{1,61}[a-z0-9])"
    r"/index/([a-z0-9][a-z0-9-.]{1,61}[a-z0-9])"
)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_ENHANCED_SINCE = 1790726400.0  # 2026-09-30T00:00:00Z
_EXACT_INT = float(2**53)
_MAX_TEXT_SEARCH_KEYS = 10  # the model's textSearchConfigurations list: at most 10
_QUERY_TOKEN_SECONDS = 900.0
"""How long a QueryVectors page token stays valid after its query."""
_MAX_QUERY_RESULT_SETS = 256
"""Query result sets kept for their later pages (the oldest is dropped beyond this)."""


@dataclass(frozen=True)
class Limits:
    """AWS's documented limits (defaults), adjustable for experiments."""

    max_top_k: int = 10_000
    """AWS documented 100 until June 2026, then 10,000 with paginated results (pages of
    ``query_page_size``); ``Limits(max_top_k=100)`` / ``--max-top-k 100`` emulates the old limit."""
    query_page_size: int = 100
    """Results per QueryVectors page when ``topK`` exceeds it."""
    max_filterable_bytes: int = 2048
    max_total_metadata_bytes: int = 40 * 1024
    max_metadata_keys: int = 50
    max_list_bytes: int = 1 << 20
    """ListVectors stops a page once this much data was processed (AWS: 1 MB)."""
    write_rate: float | None = None
    """Vectors inserted + deleted per second per index; above it: 429 (AWS: 2,500). None: off."""
    max_payload_bytes: int = 20 << 20
    max_buckets: int = 10_000
    """Vector buckets per Region (above it: ``ServiceQuotaExceededException``)."""
    max_indexes_per_bucket: int = 10_000
    max_tags: int = 50
    """Tags per bucket or index (TagResource: "up to 50 tags for each resource")."""
    max_filter_constraints: int = 100
    """Filter constraints per query on an ENHANCED index."""
    enhanced_since: float = _ENHANCED_SINCE
    """Buckets created from this time (epoch seconds) default to ENHANCED indexes and their
    indexes cannot be set to CLASSIC; older buckets default to CLASSIC (AWS: 2026-09-30)."""


@dataclass
class _Bucket:
    name: str
    arn: str
    created: float
    encryption: dict[str, Any]
    default_index_mode: str | None = None
    policy: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    indexes: dict[str, _Index] = field(default_factory=dict)


@dataclass
class _Index:
    bucket: str
    name: str
    arn: str
    created: float
    dimension: int
    metric: str
    data_type: str
    non_filterable: list[str]
    encryption: dict[str, Any] | None
    directory: str
    table: VectorTable
    index_mode: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    bucket_obj: _Bucket | None = None
    text_search: list[dict[str, str]] = field(default_factory=list)
    """Full-text search configurations: ``{"metadataKey": …, "language"?: …}``."""
    rate_tokens: float = 0.0
    rate_stamp: float = 0.0


def _meta_size(value: Any) -> int:
    """Bytes a metadata value takes: UTF-8 of strings, JSON text of numbers and booleans."""
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, list):
        return sum(_meta_size(v) for v in value)
    if isinstance(value, dict):
        return sum(len(k.encode("utf-8")) + _meta_size(v) for k, v in value.items())
    return len(json.dumps(value))


class Service:
    """All buckets and indexes of one server. Thread-safe."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        region: str = "us-east-1",
        account: str = "123456789012",
        limits: Limits | None = None,
        snapshot_bytes: int = 64 << 20,
    ) -> None:
        self.region = region
        self.account = account
        self.limits = limits or Limits()
        self.snapshot_bytes = snapshot_bytes
        self.lock = threading.RLock()
        self.buckets: dict[str, _Bucket] = {}
        self.data_dir = None if data_dir is None else Path(data_dir)
        self._query_pages: dict[str, tuple[float, list[dict[str, Any]], str]] = {}
        self._list_states: dict[str, dict[str, Any]] = {}
        if self.data_dir is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            (self.data_dir / "indexes").mkdir(exist_ok=True)
            self._load_catalog()

    # ------------------------------------------------------------------ catalog persistence
    def _catalog_path(self) -> Path:
        assert self.data_dir is not None
        return self.data_dir / "catalog.json"

    def _save_catalog(self) -> None:
        if self.data_dir is None:
            return
        doc = {
            "version": 1,
            "buckets": [
                {
                    "name": b.name,
                    "created": b.created,
                    "encryption": b.encryption,
                    "default_index_mode": b.default_index_mode,
                    "policy": b.policy,
                    "tags": b.tags,
                    "indexes": [
                        {
                            "name": i.name,
                            "created": i.created,
                            "dimension": i.dimension,
                            "metric": i.metric,
                            "data_type": i.data_type,
                            "non_filterable": i.non_filterable,
                            "encryption": i.encryption,
                            "directory": i.directory,
                            "index_mode": i.index_mode,
                            "tags": i.tags,
                            "text_search": i.text_search,
                        }
                        for i in b.indexes.values()
                    ],
                }
                for b in self.buckets.values()
            ],
        }
        path = self._catalog_path()
        tmp = path.with_suffix(".json.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)

    def _load_catalog(self) -> None:
        assert self.data_dir is not None
        path = self._catalog_path()
        doc = json.loads(path.read_text("utf-8")) if path.exists() else {"buckets": []}
        used: set[str] = set()
        for b in doc["buckets"]:
            bucket = _Bucket(
                b["name"],
                self._bucket_arn(b["name"]),
                b["created"],
                b["encryption"],
                b.get("default_index_mode"),
                b.get("policy"),
                b.get("tags", {}),
            )
            self.buckets[bucket.name] = bucket
            for i in b["indexes"]:
                used.add(i["directory"])
                table = VectorTable(
                    i["dimension"],
                    i["metric"],
                    self.data_dir / "indexes" / i["directory"],
                    self.snapshot_bytes,
                )
                index = _Index(
                    bucket.name,
                    i["name"],
                    self._index_arn(bucket.name, i["name"]),
                    i["created"],
                    i["dimension"],
                    i["metric"],
                    i["data_type"],
                    i["non_filterable"],
                    i["encryption"],
                    i["directory"],
                    table,
                    i.get("index_mode"),
                    i.get("tags", {}),
                    bucket,
                    i.get("text_search", []),
                )
                bucket.indexes[index.name] = index
        # Directories of indexes deleted just before a crash.
        for child in (self.data_dir / "indexes").iterdir():
            if child.name not in used:
                shutil.rmtree(child, ignore_errors=True)

    def close(self) -> None:
        """Snapshot every index and close its log."""
        with self.lock:
            for bucket in self.buckets.values():
                for index in bucket.indexes.values():
                    index.table.close()

    # ------------------------------------------------------------------ naming helpers
    def _bucket_arn(self, name: str) -> str:
        return f"arn:aws:s3vectors:{self.region}:{self.account}:bucket/{name}"

    def _index_arn(self, bucket: str, name: str) -> str:
        return f"{self._bucket_arn(bucket)}/index/{name}"

    def _bucket_ref(self, inp: dict[str, Any]) -> str:
        name, arn = inp.get("vectorBucketName"), inp.get("vectorBucketArn")
        if name is not None and arn is not None:
            raise ValidationException("Specify either vectorBucketName or vectorBucketArn, not both")
        if arn is not None:
            m = _BUCKET_ARN.fullmatch(arn)
            if m is None:
                raise ValidationException(f"Invalid vector bucket ARN: {arn}")
            return m.group(1)
        if name is None:
            raise ValidationException("Either vectorBucketName or vectorBucketArn must be specified")
        return str(name)

    def _index_ref(self, inp: dict[str, Any]) -> tuple[str, str]:
        arn = inp.get("indexArn")
        if arn is not None:
            if inp.get("vectorBucketName") is not None or inp.get("indexName") is not None:
                raise ValidationException(
                    "Specify either indexArn or vectorBucketName and indexName, not both"
                )
            m = _INDEX_ARN.fullmatch(arn)
            if m is None:
                raise ValidationException(f"Invalid vector index ARN: {arn}")
            return m.group(1), m.group(2)
        bucket, index = inp.get("vectorBucketName"), inp.get("indexName")
        if bucket is None or index is None:
            raise ValidationException(
                "Either indexArn or both vectorBucketName and indexName must be specified"
            )
        return str(bucket), str(index)

    def _default_mode(self, bucket: _Bucket) -> str:
        if bucket.default_index_mode:
            return bucket.default_index_mode
        return "ENHANCED" if bucket.created >= self.limits.enhanced_since else "CLASSIC"

    def _mode(self, index: _Index) -> str:
        if index.index_mode:
            return index.index_mode
        assert index.bucket_obj is not None
        return "ENHANCED" if index.bucket_obj.created >= self.limits.enhanced_since else "CLASSIC"

    def _check_tags(self, tags: dict[str, str], what: str, added: dict[str, str] | None = None) -> None:
        """``tags``: all the resource would have; ``added``: the ones this request sets."""
        # "Adding a tag to a vector bucket": a tag key that starts with the AWS reserved
        # prefix aws: is refused.
        reserved = sorted(k for k in (tags if added is None else added) if k.lower().startswith("aws:"))
        if reserved:
            raise ValidationException(
                f"Tag keys beginning with the reserved prefix 'aws:' cannot be added: {', '.join(reserved)}"
            )
        if len(tags) > self.limits.max_tags:
            raise ValidationException(
                f"{what} would have {len(tags)} tags; at most {self.limits.max_tags} are allowed"
            )

    def _bucket(self, name: str) -> _Bucket:
        bucket = self.buckets.get(name)
        if bucket is None:
            raise NotFoundException(f"The specified vector bucket could not be found: {name}")
        return bucket

    def _index(self, inp: dict[str, Any]) -> _Index:
        bucket_name, index_name = self._index_ref(inp)
        with self.lock:
            index = self._bucket(bucket_name).indexes.get(index_name)
        if index is None:
            raise NotFoundException(f"The specified index could not be found: {index_name}")
        return index

    # ------------------------------------------------------------------ buckets
    def CreateVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        name = inp["vectorBucketName"]
        if not _BUCKET_NAME.fullmatch(name):
            raise ValidationException(
                f"Invalid vector bucket name {name!r}: use 3-63 lowercase letters, numbers and hyphens, "
                "beginning and ending with a letter or number"
            )
        encryption = _encryption(inp.get("encryptionConfiguration")) or {"sseType": "AES256"}
        self._check_tags(dict(inp.get("tags") or {}), "The vector bucket")
        with self.lock:
            if name in self.buckets:
                raise ConflictException(f"A vector bucket with the name {name} already exists")
            if len(self.buckets) >= self.limits.max_buckets:
                raise ServiceQuotaExceededException(
                    f"The account already has {len(self.buckets)} vector buckets in this Region, "
                    f"the maximum ({self.limits.max_buckets})"
                )
            bucket = _Bucket(
                name, self._bucket_arn(name), time.time(), encryption, tags=dict(inp.get("tags") or {})
            )
            self.buckets[name] = bucket
            self._save_catalog()
        return {"vectorBucketArn": bucket.arn}

    def GetVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            b = self._bucket(self._bucket_ref(inp))
            out: dict[str, Any] = {
                "vectorBucketName": b.name,
                "vectorBucketArn": b.arn,
                "creationTime": b.created,
                "encryptionConfiguration": b.encryption,
            }
            out["defaultIndexMode"] = self._default_mode(b)
        return {"vectorBucket": out}

    def ListVectorBuckets(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            names = sorted(n for n in self.buckets if n.startswith(inp.get("prefix") or ""))
            chosen, token = _page_names(names, inp.get("maxResults") or 500, inp.get("nextToken"))
            items = [
                {
                    "vectorBucketName": n,
                    "vectorBucketArn": self.buckets[n].arn,
                    "creationTime": self.buckets[n].created,
                }
                for n in chosen
            ]
        out: dict[str, Any] = {"vectorBuckets": items}
        if token:
            out["nextToken"] = token
        return out

    def DeleteVectorBucket(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            bucket = self._bucket(self._bucket_ref(inp))
            if bucket.indexes:
                raise ConflictException(
                    f"The vector bucket {bucket.name} is not empty: delete its {len(bucket.indexes)} "
                    "vector index(es) first"
                )
            del self.buckets[bucket.name]
            self._save_catalog()
        return {}

    def PutVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        try:
            json.loads(inp["policy"])
        except (TypeError, ValueError):
            raise ValidationException("The bucket policy is not valid JSON") from None
        with self.lock:
            self._bucket(self._bucket_ref(inp)).policy = inp["policy"]
            self._save_catalog()
        return {}

    def GetVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            policy = self._bucket(self._bucket_ref(inp)).policy
        return {} if policy is None else {"policy": policy}

    def DeleteVectorBucketPolicy(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._bucket(self._bucket_ref(inp)).policy = None
            self._save_catalog()
        return {}

    def PutVectorBucketDefaultIndexMode(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            self._bucket(self._bucket_ref(inp)).default_index_mode = inp["defaultIndexMode"]
            self._save_catalog()
        return {}

    # ------------------------------------------------------------------ indexes
    def CreateIndex(self, inp: dict[str, Any]) -> dict[str, Any]:
        bucket_name = self._bucket_ref(inp)
        name = inp["indexName"]
        if not _INDEX_NAME.fullmatch(name):
            raise ValidationException(
                f"Invalid index name {name!r}: use 3-63 lowercase letters, numbers, hyphens and dots, "
                "beginning and ending with a letter or number"
            )
        config = inp.get("metadataConfiguration") or {}
        non_filterable = list(config.get("nonFilterableMetadataKeys") or [])
        if len(set(non_filterable)) != len(non_filterable):
            raise ValidationException("Non-filterable metadata keys must be unique within the vector index")
        text_search = _text_configs(config.get("textSearchConfigurations") or [], [])
        encryption = _encryption(inp.get("encryptionConfiguration"))
        self._check_tags(dict(inp.get("tags") or {}), "The vector index")
        with self.lock:
            bucket = self._bucket(bucket_name)
            if name in bucket.indexes:
                raise ConflictException(f"An index with the name {name} already exists in {bucket_name}")
            if len(bucket.indexes) >= self.limits.max_indexes_per_bucket:
                raise ServiceQuotaExceededException(
                    f"The vector bucket {bucket_name} already has {len(bucket.indexes)} vector indexes, "
                    f"the maximum ({self.limits.max_indexes_per_bucket})"
                )
            mode = self._default_mode(bucket)
            if text_search and mode != "ENHANCED":
                raise ValidationException(
                    "Full-text search requires a vector index in ENHANCED mode; the vector bucket "
                    f"{bucket_name} creates CLASSIC indexes (PutVectorBucketDefaultIndexMode)"
                )
            directory = uuid.uuid4().hex
            path = None if self.data_dir is None else self.data_dir / "indexes" / directory
            table = VectorTable(inp["dimension"], inp["distanceMetric"], path, self.snapshot_bytes)
            index = _Index(
                bucket_name,
                name,
                self._index_arn(bucket_name, name),
                time.time(),
                inp["dimension"],
                inp["distanceMetric"],
                inp["dataType"],
                non_filterable,
                encryption,
                directory,
                table,
                mode,
                dict(inp.get("tags") or {}),
                bucket,
                text_search,
            )
            bucket.indexes[name] = index
            self._save_catalog()
        return {"indexArn": index.arn}

    def GetIndex(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        out: dict[str, Any] = {
            "vectorBucketName": index.bucket,
            "indexName": index.name,
            "indexArn": index.arn,
            "creationTime": index.created,
            "dataType": index.data_type,
            "dimension": index.dimension,
            "distanceMetric": index.metric,
        }
        config: dict[str, Any] = {}
        if index.non_filterable:
            config["nonFilterableMetadataKeys"] = list(index.non_filterable)
        if index.text_search:
            # Backfill is immediate here, so every analyzer is ACTIVE.
            config["textSearchConfigurations"] = [{**c, "status": "ACTIVE"} for c in index.text_search]
        if config:
            out["metadataConfiguration"] = config
        if index.encryption:
            out["encryptionConfiguration"] = index.encryption
        out["indexMode"] = self._mode(index)
        return {"index": out}

    def ListIndexes(self, inp: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            bucket = self._bucket(self._bucket_ref(inp))
            names = sorted(n for n in bucket.indexes if n.startswith(inp.get("prefix") or ""))
            chosen, token = _page_names(names, inp.get("maxResults") or 500, inp.get("nextToken"))
            items = [
                {
                    "vectorBucketName": bucket.name,
                    "indexName": n,
                    "indexArn": bucket.indexes[n].arn,
                    "creationTime": bucket.indexes[n].created,
                }
                for n in chosen
            ]
        out: dict[str, Any] = {"indexes": items}
        if token:
            out["nextToken"] = token
        return out

    def DeleteIndex(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        with self.lock:
            bucket = self._bucket(index.bucket)
            if bucket.indexes.get(index.name) is not index:
                raise NotFoundException(f"The specified index could not be found: {index.name}")
            del bucket.indexes[index.name]
            self._save_catalog()
        with index.table.lock:
            index.table.dropped = True
            index.table.close(snapshot=False)
        if self.data_dir is not None:
            shutil.rmtree(self.data_dir / "indexes" / index.directory, ignore_errors=True)
        return {}

    def UpdateIndexMode(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        with self.lock:
            assert index.bucket_obj is not None
            if inp["indexMode"] == "CLASSIC" and index.bucket_obj.created >= self.limits.enhanced_since:
                raise ValidationException(
                    "The index mode can be set to CLASSIC only for a vector index in a vector bucket "
                    "created before September 30, 2026"
                )
            if inp["indexMode"] == "CLASSIC" and index.text_search:
                raise ValidationException(
                    f"The vector index {index.name} has full-text search configurations, which need "
                    "ENHANCED mode; delete them (UpdateMetadataConfiguration) first"
                )
            index.index_mode = inp["indexMode"]
            self._save_catalog()
        return {}

    def UpdateMetadataConfiguration(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        add, delete = inp.get("add"), inp.get("delete")
        if (add is None) == (delete is None):
            raise ValidationException("Specify either add or delete, but not both")
        with self.lock:
            if self._mode(index) != "ENHANCED":
                raise ValidationException(
                    f"The vector index {index.name} must be in ENHANCED mode (UpdateIndexMode) to "
                    "configure full-text search"
                )
            if add is not None:
                configs = _text_configs(add.get("textSearchConfigurations") or [], index.text_search)
            else:
                assert delete is not None
                gone = [c["metadataKey"] for c in delete.get("textSearchConfigurations") or []]
                have = {c["metadataKey"] for c in index.text_search}
                missing = sorted(set(gone) - have)
                if missing:
                    raise ValidationException(
                        f"No full-text search configuration for metadata key(s) {', '.join(missing)} "
                        f"on the vector index {index.name}"
                    )
                configs = [c for c in index.text_search if c["metadataKey"] not in gone]
            index.text_search = configs
            self._save_catalog()
        return {"indexArn": index.arn}

    # ------------------------------------------------------------------ tags
    def _tagged(self, arn: str) -> _Bucket | _Index:
        arn = arn.strip()
        with self.lock:
            m = _INDEX_ARN.fullmatch(arn)
            if m is not None:
                index = self._bucket(m.group(1)).indexes.get(m.group(2))
                if index is None:
                    raise NotFoundException(f"The specified index could not be found: {m.group(2)}")
                return index
            m = _BUCKET_ARN.fullmatch(arn)
            if m is not None:
                return self._bucket(m.group(1))
        raise ValidationException(f"Invalid resource ARN: {arn}")

    def TagResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            self._check_tags({**res.tags, **inp["tags"]}, "The resource", inp["tags"])
            res.tags.update(inp["tags"])
            self._save_catalog()
        return {}

    def UntagResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            for key in inp["tagKeys"]:
                res.tags.pop(key, None)
            self._save_catalog()
        return {}

    def ListTagsForResource(self, inp: dict[str, Any]) -> dict[str, Any]:
        res = self._tagged(inp["resourceArn"])
        with self.lock:
            return {"tags": dict(res.tags)}

    # ------------------------------------------------------------------ vectors
    def _check_write_rate(self, index: _Index, count: int) -> None:
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

    def _vector(self, data: dict[str, Any], index: _Index, where: str) -> np.ndarray[Any, Any]:
        values = data.get("float32")
        if not isinstance(values, list):
            raise ValidationException(f"{where}: vector data must be given as float32")
        if len(values) != index.dimension:
            raise ValidationException(
                f"{where}: vector dimension {len(values)} does not match index dimension {index.dimension}"
            )
        arr = _fast_float32(values)
        if arr is not None:
            if index.metric == "cosine" and not np.any(arr):
                raise ValidationException(
                    f"{where}: zero vectors are not allowed for the cosine distance metric"
                )
            return arr
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

    def _metadata(self, meta: Any, index: _Index, where: str) -> dict[str, Any]:
        limits = self.limits
        if meta is None:
            return {}
        if not isinstance(meta, dict):
            raise ValidationException(f"{where}: metadata must be a JSON object")
        if len(meta) > limits.max_metadata_keys:
            raise ValidationException(
                f"{where}: metadata has {len(meta)} keys; at most {limits.max_metadata_keys} are allowed"
            )
        for key, value in meta.items():
            if not key:
                raise ValidationException(f"{where}: metadata keys must not be empty")
            _check_meta_value(value, f"{where}: metadata key {key!r}")
        filterable = {k: v for k, v in meta.items() if k not in index.non_filterable}
        fsize = _meta_size(filterable)
        # The service's own wording (seen in real PutVectors errors), then the sizes.
        if fsize > limits.max_filterable_bytes:
            raise ValidationException(
                f"{where}: Filterable metadata must have at most {limits.max_filterable_bytes} bytes "
                f"(it has {fsize}); declare large keys non-filterable at index creation"
            )
        total = _meta_size(meta)
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
        vectors = np.empty((len(items), index.dimension), np.float32)
        metas: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            key = item["key"]
            where = f"Invalid record for key '{key}'"
            if key in seen:
                raise ValidationException(f"Duplicate vector key in the request: '{key}'")
            seen.add(key)
            vectors[i] = self._vector(item["data"], index, where)
            metas.append(self._metadata(item.get("metadata"), index, where))
            keys.append(key)
        self._check_write_rate(index, len(keys))
        table = index.table
        with table.lock:
            if table.dropped:
                raise NotFoundException(f"The specified index could not be found: {index.name}")
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
                raise NotFoundException(f"The specified index could not be found: {index.name}")
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
            state = saved if saved is not None else _decode_token(token)
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
        token = _encode_token(state)
        if len(token) <= 2000:
            return token
        # A long multi-byte key does not fit the model's 2,048-character token: keep it here.
        ref = "~" + secrets.token_urlsafe(18)
        with self.lock:
            self._list_states[ref] = state
        return ref

    def QueryVectors(self, inp: dict[str, Any]) -> dict[str, Any]:
        index = self._index(inp)
        token = inp.get("nextToken")
        if token is not None:
            return self._query_page(token, index)
        texts: list[dict[str, str]] = inp.get("queryTexts") or []
        if inp.get("queryVector") is None and not texts:
            raise ValidationException("A request must include queryVector, queryTexts, or both")
        top_k = inp["topK"]
        if top_k > self.limits.max_top_k:
            raise ValidationException(f"topK must be between 1 and {self.limits.max_top_k}, got {top_k}")
        query = (
            None
            if inp.get("queryVector") is None
            else self._vector(inp["queryVector"], index, "Invalid query vector")
        )
        if texts:
            self._check_query_texts(index, texts)
        doc = inp.get("filter")
        mode = self._mode(index)
        query_mode = inp.get("queryMode")
        if query_mode == "CLASSIC" and mode == "ENHANCED":
            raise ValidationException("You can't specify queryMode CLASSIC for an ENHANCED index")
        node = (
            None
            if doc is None
            else parse_filter(
                doc,
                index.non_filterable,
                enhanced="ENHANCED" in (mode, query_mode),
                max_constraints=self.limits.max_filter_constraints if mode == "ENHANCED" else None,
            )
        )
        want_meta, want_dist = bool(inp.get("returnMetadata")), bool(inp.get("returnDistance"))
        # "This setting doesn't add scores to vector-only requests."
        want_scores = bool(inp.get("returnScores")) and bool(texts)
        table = index.table
        with table.lock:
            if texts:
                hits = _text_search(table, query, texts, top_k, node)
            else:
                assert query is not None
                hits = [(row, dist, {}) for row, dist in table.search(query, top_k, node)]
            results: list[dict[str, Any]] = []
            for row, dist, scores in hits:
                rec: dict[str, Any] = {"key": table.keys[row]}
                if want_meta:
                    rec["metadata"] = table.metadatas[row]
                if want_dist and dist is not None:
                    rec["distance"] = dist
                if want_scores:
                    rec["scores"] = scores
                results.append(rec)
        if len(results) <= self.limits.query_page_size:
            return {"vectors": results, "distanceMetric": index.metric}
        return self._query_result_page(self._remember_query(results, index.arn), 0, index)

    def _check_query_texts(self, index: _Index, texts: list[dict[str, str]]) -> None:
        if self._mode(index) != "ENHANCED":
            raise ValidationException(
                f"Full-text and hybrid searches require a vector index in ENHANCED mode; {index.name} "
                "is CLASSIC (UpdateIndexMode)"
            )
        searchable = {c["metadataKey"] for c in index.text_search}
        seen: set[str] = set()
        for text in texts:
            key = text["metadataKey"]
            if key in seen:
                raise ValidationException(f"queryTexts targets metadata key {key} more than once")
            seen.add(key)
            if key not in searchable:
                raise ValidationException(
                    f"Metadata key {key} is not full-text searchable on the vector index {index.name}; "
                    "add it with UpdateMetadataConfiguration"
                )

    def _remember_query(self, results: list[dict[str, Any]], arn: str) -> str:
        """Keep a query's ranked results for their later pages; returns the result set's id.

        A page token names the result set and an offset, and stays valid until the set
        expires, so a token can be sent again: botocore's paginator resumes a
        ``MaxItems``-truncated run (``StartingToken``, the CLI's ``--starting-token``) by
        re-sending the token of the page it cut, and a retried request re-sends its token.
        """
        ident = secrets.token_urlsafe(18)
        with self.lock:
            now = time.monotonic()
            for old in [i for i, (exp, _, _) in self._query_pages.items() if exp < now]:
                del self._query_pages[old]
            while len(self._query_pages) >= _MAX_QUERY_RESULT_SETS:
                del self._query_pages[next(iter(self._query_pages))]  # the oldest
            self._query_pages[ident] = (now + _QUERY_TOKEN_SECONDS, results, arn)
        return ident

    def _query_result_page(self, ident: str, offset: int, index: _Index) -> dict[str, Any]:
        with self.lock:
            state = self._query_pages.get(ident)
        if state is None or state[2] != index.arn or state[0] < time.monotonic() or offset > len(state[1]):
            raise ValidationException("The nextToken is invalid or has expired; re-issue the query")
        results = state[1]
        page = self.limits.query_page_size
        out: dict[str, Any] = {"vectors": results[offset : offset + page], "distanceMetric": index.metric}
        if offset + page < len(results):
            out["nextToken"] = f"{ident}.{offset + page}"
        return out

    def _query_page(self, token: str, index: _Index) -> dict[str, Any]:
        ident, _, raw = token.rpartition(".")
        if not ident or not raw.isdigit():
            raise ValidationException("The nextToken is invalid or has expired; re-issue the query")
        return self._query_result_page(ident, int(raw), index)


def _text_search(
    table: VectorTable,
    query: np.ndarray[Any, Any] | None,
    texts: list[dict[str, str]],
    top_k: int,
    node: FilterNode | None,
) -> list[tuple[int, float | None, dict[str, Any]]]:
    """Full-text-only (``query`` None) or hybrid ranking: ``(row, distance, scores)`` best
    first. The filter applies to every ranking (see :mod:`._text`)."""
    n = len(table)
    if n == 0:
        return []
    mask = table.mask(node)
    bm25: list[tuple[str, npt.NDArray[np.float64]]] = []
    for text in texts:
        scores = bm25_scores(table.text_field(text["metadataKey"]), text["text"], n)
        if mask is not None:
            scores[~mask[:n]] = 0.0
        bm25.append((text["metadataKey"], scores))
    names = np.asarray(table.keys, dtype=object)
    distances: dict[int, float] = {}
    if query is None:
        rank = np.sum([s for _, s in bm25], axis=0)
    else:
        vector_hits = table.search(query, top_k, node)
        distances = dict(vector_hits)
        rankings = [[row for row, _ in vector_hits]]
        for _, scores in bm25:
            hit = np.flatnonzero(scores > 0)
            rankings.append(hit[np.lexsort((names[hit], -scores[hit]))][:top_k].tolist())
        rank = rrf(rankings, n)
    rows = np.flatnonzero(rank > 0)
    rows = rows[np.lexsort((names[rows], -rank[rows]))][:top_k]
    out: list[tuple[int, float | None, dict[str, Any]]] = []
    for row in (int(r) for r in rows):
        detail: dict[str, Any] = {}
        if query is not None:
            detail["fused"] = float(rank[row])
        detail["bm25Scores"] = [
            {"metadataKey": key, "score": float(scores[row])} for key, scores in bm25 if scores[row] > 0
        ]
        if row in distances:
            detail["vectorDistance"] = distances[row]
        out.append((row, distances.get(row), detail))
    return out


def _fast_float32(values: list[Any]) -> np.ndarray[Any, Any] | None:
    """``values`` as float32 when every one is a finite ``float`` (or an ``int`` below
    2**53) within float32's range, checked on the whole array at once; ``None`` sends the
    caller to the per-value checks, which find the offending value and word the error."""
    kinds = set(map(type, values))
    if not values or not kinds <= {float, int}:
        return None
    try:
        wide = np.array(values, np.float64)
    except OverflowError:  # an int beyond float64
        return None
    if not np.isfinite(wide).all():
        return None
    top = float(np.abs(wide).max())
    if top > _FLOAT32_MAX or (int in kinds and top >= _EXACT_INT):
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


def _text_configs(new: list[dict[str, Any]], have: list[dict[str, str]]) -> list[dict[str, str]]:
    """``have`` plus the text search configurations ``new`` (each key at most once)."""
    keys = [c["metadataKey"] for c in have]
    out = list(have)
    for config in new:
        key = config["metadataKey"]
        if key in keys:
            if any(c["metadataKey"] == key for c in have):
                raise ConflictException(f"Metadata key {key} already has a full-text search configuration")
            raise ValidationException(f"Specify no more than one text search configuration for key {key}")
        keys.append(key)
        out.append({k: v for k, v in (("metadataKey", key), ("language", config.get("language"))) if v})
    if len(out) > _MAX_TEXT_SEARCH_KEYS:
        raise ValidationException(
            f"A vector index can have at most {_MAX_TEXT_SEARCH_KEYS} full-text search configurations"
        )
    return out


def _encryption(config: dict[str, Any] | None) -> dict[str, Any] | None:
    if not config:
        return None
    sse = config.get("sseType", "AES256")
    if config.get("kmsKeyArn") is not None and sse != "aws:kms":
        raise ValidationException("kmsKeyArn may only be specified when sseType is aws:kms")
    if sse == "aws:kms" and config.get("kmsKeyArn") is None:
        raise ValidationException("kmsKeyArn must be specified when sseType is aws:kms")
    return {k: v for k, v in (("sseType", sse), ("kmsKeyArn", config.get("kmsKeyArn"))) if v is not None}


def _encode_token(state: dict[str, Any]) -> str:
    raw = json.dumps(state, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii")


def _decode_token(token: str) -> dict[str, Any]:
    try:
        state = json.loads(base64.urlsafe_b64decode(token.encode("ascii")).decode("utf-8"))
    except (ValueError, UnicodeError):
        raise ValidationException("The nextToken is invalid") from None
    if not isinstance(state, dict):
        raise ValidationException("The nextToken is invalid")
    return state


def _page_names(names: list[str], limit: int, token: str | None) -> tuple[list[str], str | None]:
    start = 0
    if token is not None:
        after = _decode_token(token).get("a")
        if not isinstance(after, str):
            raise ValidationException("The nextToken is invalid")
        start = next((i for i, n in enumerate(names) if n > after), len(names))
    chosen = names[start : start + limit]
    more = start + limit < len(names)
    return chosen, (_encode_token({"a": chosen[-1]}) if more and chosen else None)
