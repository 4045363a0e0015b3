"""The state every operation works on, and what the operation groups share.

:class:`ServiceCore` holds all buckets and indexes of one server (with their catalog on disk)
and the helpers every group of operations uses: ARNs, resolving a request's bucket or index
reference, index modes, tag checks. The operations themselves are grouped as the S3 Vectors
API groups them, one mixin per module (:mod:`._buckets`, :mod:`._indexes`, :mod:`._vectors`,
:mod:`._query`, :mod:`._tags`), and :class:`~._service.Service` composes them. Limits and
rules come from AWS's "Limitations and restrictions", "Vector bucket naming rules",
"Creating a vector index" and "Metadata filtering" pages.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._errors import NotFoundException, ValidationException
from ._table import VectorTable, fsync_dir

__all__ = [
    "BUCKET_ARN",
    "INDEX_ARN",
    "Bucket",
    "Index",
    "Limits",
    "ServiceCore",
    "check_encryption",
    "index_not_found",
]

BUCKET_ARN = re.compile(
    r"arn:aws[-a-z0-9]*:s3vectors:[a-z0-9-]+:[0-9]{12}:bucket/([a-z0-9][a-z0-9-.]{1,61}[a-z0-9])"
)
INDEX_ARN = re.compile(BUCKET_ARN.pattern + r"/index/([a-z0-9][a-z0-9-.]{1,61}[a-z0-9])")
_ENHANCED_SINCE = 1790726400.0  # 2026-09-30T00:00:00Z


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
class Bucket:
    """A vector bucket, as ``catalog.json`` records it (plus its ARN)."""

    name: str
    arn: str
    created: float
    encryption: dict[str, Any]
    default_index_mode: str | None = None
    policy: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    indexes: dict[str, Index] = field(default_factory=dict)


@dataclass
class Index:
    """A vector index: its catalog entry, its :class:`VectorTable` and its write-rate bucket."""

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
    bucket_obj: Bucket | None = None
    text_search: list[dict[str, str]] = field(default_factory=list)
    """Full-text search configurations: ``{"metadataKey": …, "language"?: …}``."""
    rate_tokens: float = 0.0
    rate_stamp: float = 0.0


class ServiceCore:
    """All buckets and indexes of one server, and the helpers shared by every operation."""

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
        self.buckets: dict[str, Bucket] = {}
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
            bucket = Bucket(
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
                index = Index(
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

    # ------------------------------------------------------------------ names, references, lookups
    def _bucket_arn(self, name: str) -> str:
        return f"arn:aws:s3vectors:{self.region}:{self.account}:bucket/{name}"

    def _index_arn(self, bucket: str, name: str) -> str:
        return f"{self._bucket_arn(bucket)}/index/{name}"

    def _bucket_ref(self, inp: dict[str, Any]) -> str:
        name, arn = inp.get("vectorBucketName"), inp.get("vectorBucketArn")
        if name is not None and arn is not None:
            raise ValidationException("Specify either vectorBucketName or vectorBucketArn, not both")
        if arn is not None:
            m = BUCKET_ARN.fullmatch(arn)
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
            m = INDEX_ARN.fullmatch(arn)
            if m is None:
                raise ValidationException(f"Invalid vector index ARN: {arn}")
            return m.group(1), m.group(2)
        bucket, index = inp.get("vectorBucketName"), inp.get("indexName")
        if bucket is None or index is None:
            raise ValidationException(
                "Either indexArn or both vectorBucketName and indexName must be specified"
            )
        return str(bucket), str(index)

    def _default_mode(self, bucket: Bucket) -> str:
        if bucket.default_index_mode:
            return bucket.default_index_mode
        return "ENHANCED" if bucket.created >= self.limits.enhanced_since else "CLASSIC"

    def _mode(self, index: Index) -> str:
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

    def _bucket(self, name: str) -> Bucket:
        bucket = self.buckets.get(name)
        if bucket is None:
            raise NotFoundException(f"The specified vector bucket could not be found: {name}")
        return bucket

    def _index(self, inp: dict[str, Any]) -> Index:
        return self._index_named(*self._index_ref(inp))

    def _index_named(self, bucket: str, name: str) -> Index:
        with self.lock:
            index = self._bucket(bucket).indexes.get(name)
        if index is None:
            raise index_not_found(name)
        return index


def index_not_found(name: str) -> NotFoundException:
    """The error for a vector index that does not exist (or was deleted meanwhile)."""
    return NotFoundException(f"The specified index could not be found: {name}")


def check_encryption(config: dict[str, Any] | None) -> dict[str, Any] | None:
    """A bucket's or index's ``encryptionConfiguration``, checked and normalized (None: not given)."""
    if not config:
        return None
    sse = config.get("sseType", "AES256")
    if config.get("kmsKeyArn") is not None and sse != "aws:kms":
        raise ValidationException("kmsKeyArn may only be specified when sseType is aws:kms")
    if sse == "aws:kms" and config.get("kmsKeyArn") is None:
        raise ValidationException("kmsKeyArn must be specified when sseType is aws:kms")
    return {k: v for k, v in (("sseType", sse), ("kmsKeyArn", config.get("kmsKeyArn"))) if v is not None}
