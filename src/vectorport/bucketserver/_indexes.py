"""Vector index operations: Create/Get/List/DeleteIndex, UpdateIndexMode and
UpdateMetadataConfiguration (full-text search configurations)."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from typing import Any

from ._core import Index, ServiceCore, check_encryption, index_not_found
from ._errors import (
    ConflictException,
    ServiceQuotaExceededException,
    ValidationException,
)
from ._paging import page_names
from ._table import VectorTable

__all__ = ["IndexOperations"]

_INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_MAX_TEXT_SEARCH_KEYS = 10  # the model's textSearchConfigurations list: at most 10


class IndexOperations(ServiceCore):
    """The vector index operations."""

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
        encryption = check_encryption(inp.get("encryptionConfiguration"))
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
            index = Index(
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
            chosen, token = page_names(names, inp.get("maxResults") or 500, inp.get("nextToken"))
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
                raise index_not_found(index.name)
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
