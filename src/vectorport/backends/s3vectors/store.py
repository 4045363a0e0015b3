"""``s3vectors://BUCKET/INDEX`` and ``supabase://REF.supabase.co/BUCKET/INDEX``: Amazon S3
Vectors (or Supabase Vector Buckets, the same operations behind a proxy) through boto3.

See ``docs/backends/s3vectors.md`` for URLs, options, limits and the filter mapping.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, ClassVar, Self

import numpy as np

from ..._capabilities import Capabilities, MetadataRules
from ..._cursor import Position, position_field
from ..._features import Feature
from ..._models import (
    CollectionSpec,
    Include,
    Match,
    Metric,
    Record,
    Vector,
    score_from_distance,
)
from ..._retry import RetryPolicy
from ..._segments import segment_of
from ..._suggest import what_exists
from ..._url import StoreURL
from ..._validate import Batch, validate_records
from ...exceptions import (
    ConfigurationError,
    ConflictError,
    NotFoundError,
    Problem,
    UnsupportedFeatureError,
    ValidationError,
    VectorportError,
)
from ...filters import FilterNode
from ._client import INDEX_NAMES, boto_client, check_names, snake, supabase_client
from ._layout import BucketLayout, detect, layout_option, preset
from ._ratelimit import WriteRateLimiter, limiter_for
from ._text import TextSearchMixin, searchable_keys, text_search_option
from ._wire import EncodedVectors, encode_put_body, install
from .errors import map_errors
from .filters import S3FilterCompiler

__all__ = ["TEXT_KEY", "S3VectorsStore"]

log = logging.getLogger("vectorport")

TEXT_KEY = "vectorport_text"
"""Metadata key holding the chunk text in vectorport's own layout, declared non-filterable when
vectorport creates an index."""
EMBEDDING_TAG = "vectorport:embedding-model"
SUPABASE_PATH = "/storage/v1/vector"
SUPABASE_KEY_ENV = ("SUPABASE_SERVICE_ROLE_KEY", "SUPABASE_SERVICE_KEY", "SUPABASE_KEY")
_NATIVE_SEGMENTS = 16  # ListVectors segmentCount maximum
# AWS counts filterable (2 KB) and total (40 KB) metadata per vector. vectorport measures
# JSON bytes, which is never less than the service's count, except for the text key's own
# name; 64 bytes of the total are kept back for it.
_TEXT_KEY_RESERVE = 64
# LlamaIndex's layout holds the metadata twice (beside the node and inside it) plus the node's
# fields: 2 KB (filterable metadata at most) and 1 KB are kept back for the copy and the fields.
_NODE_RESERVE = 2 * 1024 + 1024
_SAMPLE = 20  # vectors read to detect an index's layout


def _flag(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("1", "true", "yes", "on")


class S3VectorsStore(TextSearchMixin):
    """Amazon S3 Vectors / Supabase Vector Buckets. One vectorport collection is one index.

    The chunk text is stored in the metadata as the index's layout says (``layout=``:
    ``vectorport``, ``langchain``, ``llamaindex``, ``s3vectors-embed-cli``, or ``text_key=KEY``;
    detected from the index when not given, see ``_layout``), its text field declared
    non-filterable at index creation. Writes are paced per index (2,500 vectors/s by
    default), throttling (429/503) is retried with exponential backoff and jitter, ``scan``
    segments map to ``ListVectors`` segments and ``count`` lists keys over 16 segments in
    parallel. Only ``cosine`` and ``euclidean`` exist; S3's ``euclidean`` distance is plain L2.
    Text and hybrid search where the index's text key is full-text searchable (``_text``).

    Options (keyword or URL query): ``region``, ``endpoint_url``, ``profile``, ``write_rate``
    (vectors/s, 0 = unpaced), ``workers`` (threads for count), ``max_attempts`` (botocore
    attempts per call before vectorport's own retry), ``key`` (Supabase service-role key),
    ``client`` (a ready boto3 ``s3vectors`` client), ``layout``, ``text_key``, ``text_search``
    (``true`` or an analyzer language: the text key full-text searchable at index creation).
    """

    name: ClassVar[str] = "s3vectors"
    url_params = frozenset(
        {"collection", "endpoint_url", "layout", "max_attempts", "region", "text_key", "text_search"}
        | {"workers", "write_rate"}
    )
    """Of every scheme; ``s3vectors://`` also takes ``profile``, ``supabase://`` its ``key``."""
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset({Metric.COSINE, Metric.EUCLIDEAN}),
        max_dimension=4096,
        max_write_batch=500,
        max_read_batch=100,
        max_delete_batch=500,
        max_scan_page=1000,
        max_top_k=10_000,  # AWS since June 2026, returned in pages of 100 (followed by _search)
        max_key_bytes=1024,
        exact=False,  # AWS runs approximate search; the local server is exact
        recall_tolerance=0.9,
        metadata=MetadataRules(
            nested_objects=False,
            null=False,
            empty_lists=True,
            mixed_lists=False,
            max_keys=49,  # 50 per vector, one of them the text key
            max_total_bytes=40 * 1024 - _TEXT_KEY_RESERVE,
            max_filterable_bytes=2 * 1024,
            text_in_metadata=True,
            max_int=2**53,
            reserved_keys=frozenset({TEXT_KEY}),
        ),
        filter_operators=S3FilterCompiler.supported_operators(),
        features=frozenset({Feature.NATIVE_SEGMENTS, Feature.PARALLEL_SEGMENTS, Feature.WRITE}),
        collection_names=INDEX_NAMES,
        text_ranking="BM25, the service's analyzer",
    )

    def __init__(
        self,
        url: StoreURL,
        bucket: str,
        index: str,
        client: Any,
        *,
        endpoint: str,
        write_rate: float = 2500.0,
        workers: int = 8,
        retry: RetryPolicy | None = None,
        layout: BucketLayout | None = None,
        text_search: str | None = None,
        text_search_said: bool = False,
    ) -> None:
        super().__init__(url, index, retry=retry)
        self.bucket = bucket
        self.index = index
        self.client = client
        self.workers = max(1, workers)
        self._requested = layout
        self._layout: BucketLayout | None = None
        self._text_search = text_search
        self._text_search_said = text_search_said or text_search is not None
        self._check_text_search_option()
        self._non_filterable: frozenset[str] = frozenset()
        self.limiter: WriteRateLimiter | None = (
            limiter_for(endpoint, bucket, index, write_rate) if write_rate > 0 else None
        )
        self._where = f"{self.name} {bucket}/{index}"
        # The batch is validated already: send it pre-encoded instead of through botocore's
        # per-number validation and serialization (see _wire).
        self._fast_puts = install(client)

    # ----------------------------------------------------------------- construction
    @classmethod
    def url_parameters(cls, url: StoreURL) -> tuple[frozenset[str], str]:
        return cls.url_params | {"key" if url.scheme == "supabase" else "profile"}, ""

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        opts: dict[str, Any] = {**url.params, **options}
        # collection= (connect()'s, or a migration's derived name) replaces the URL's index
        named = str(opts.pop("collection", None) or "")
        if url.scheme == "supabase":
            return cls._from_supabase(url, opts, named)
        bucket = url.host or ""
        index = named or url.path.strip("/")
        if not bucket or "/" in index:
            raise ConfigurationError(
                f"expected s3vectors://BUCKET/INDEX[?region=…&endpoint_url=…], got {url.masked!r}"
            )
        if not index:
            raise INDEX_NAMES.missing(
                f"{url.masked}: name the index, e.g. s3vectors://{bucket}/docs (or pass collection=)"
            )
        check_names(url, bucket, index)
        endpoint = opts.pop("endpoint_url", None)
        region = opts.pop("region", None)
        profile = opts.pop("profile", None)
        client = opts.pop("client", None)
        max_attempts = int(opts.pop("max_attempts", 2))
        store_opts = cls._store_options(opts)
        if client is None:
            client = boto_client(endpoint, region, profile, max_attempts, store_opts["workers"])
        return cls(url, bucket, index, client, endpoint=endpoint or "aws", **store_opts)

    @classmethod
    def _from_supabase(cls, url: StoreURL, opts: dict[str, Any], named: str) -> Self:
        parts = url.path.strip("/").split("/")
        if named:
            parts = [parts[0], named]
        if not url.host or len(parts) > 2 or not parts[0]:
            raise ConfigurationError(
                f"expected supabase://PROJECT_REF.supabase.co/BUCKET/INDEX[?key=…], got {url.masked!r}"
            )
        if len(parts) == 1 or not parts[1]:
            raise INDEX_NAMES.missing(
                f"{url.masked}: name the index, e.g. supabase://{url.host}/{parts[0]}/docs "
                "(or pass collection=)"
            )
        bucket, index = parts
        check_names(url, bucket, index)
        key = opts.pop("key", None) or next(
            (os.environ[v] for v in SUPABASE_KEY_ENV if os.environ.get(v)), None
        )
        if not key:
            raise ConfigurationError(
                f"{url.masked}: a Supabase service-role key is needed: add ?key=… or set "
                f"{SUPABASE_KEY_ENV[0]}"
            )
        base = opts.pop("endpoint_url", None) or f"https://{url.host}" + (f":{url.port}" if url.port else "")
        endpoint = base.rstrip("/") + SUPABASE_PATH
        client = opts.pop("client", None)
        max_attempts = int(opts.pop("max_attempts", 2))
        opts.pop("region", None)
        store_opts = cls._store_options(opts)
        if client is None:
            client = supabase_client(endpoint, key, max_attempts, store_opts["workers"])
        return cls(url, bucket, index, client, endpoint=endpoint, **store_opts)

    @staticmethod
    def _store_options(opts: dict[str, Any]) -> dict[str, Any]:
        said = opts.get("text_search") is not None
        out: dict[str, Any] = {
            "write_rate": float(opts.pop("write_rate", 2500.0)),
            "workers": int(opts.pop("workers", 8)),
            "layout": layout_option(opts.pop("layout", None), opts.pop("text_key", None)),
            "text_search": text_search_option(opts.pop("text_search", None)),
            "text_search_said": said,
        }
        retry = opts.pop("retry", None)
        if retry is not None:
            out["retry"] = retry
        if opts:
            raise ConfigurationError(f"unknown s3vectors option(s): {', '.join(sorted(opts))}")
        return out

    def _check_spec_supported(self, spec: CollectionSpec) -> None:
        if spec.metric is Metric.DOT:
            raise UnsupportedFeatureError(
                "S3 Vectors (and Supabase Vector Buckets) have no dot-product metric, only cosine and "
                "euclidean; for unit-length embeddings use metric='cosine', which ranks identically"
            )
        super()._check_spec_supported(spec)

    # ----------------------------------------------------------------- helpers
    def _call(self, operation: str, **params: Any) -> Any:
        method = getattr(self.client, snake(operation))
        with map_errors(self._where, operation):
            return method(**params)

    def _ids(self) -> dict[str, str]:
        return {"vectorBucketName": self.bucket, "indexName": self.index}

    @property
    def layout(self) -> BucketLayout:
        """Where the index keeps the text: as opened (named or detected), as asked, or vectorport's."""
        return self._layout or self._requested or preset("vectorport")

    @property
    def text_key(self) -> str:
        """The metadata key of the text (for ``llamaindex``, of the node that holds it)."""
        return self.layout.text_key

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        layout = self.layout
        rules = declared.metadata
        rules = replace(
            rules,
            reserved_keys=layout.reserved_keys,
            max_keys=50 - layout.added_keys,
            max_total_bytes=(rules.max_total_bytes or 0) - (_NODE_RESERVE if layout.node else 0),
        )
        rate = self.limiter.rate if self.limiter is not None else None
        return self._text_capabilities(replace(declared, metadata=rules, write_rate=rate))

    def _split(
        self, meta: dict[str, Any] | None, include: frozenset[Include]
    ) -> tuple[dict[str, Any], str | None]:
        text, user = self.layout.decode(meta or {})
        return (user if Include.METADATA in include else {}), (text if Include.TEXT in include else None)

    # ----------------------------------------------------------------- collections
    def _describe_collection(self) -> CollectionSpec | None:
        try:
            index = self._call("GetIndex", **self._ids())["index"]
        except NotFoundError:
            return None
        keys = list((index.get("metadataConfiguration") or {}).get("nonFilterableMetadataKeys") or [])
        self._non_filterable = frozenset(keys)
        self._searchable = searchable_keys(index)
        self._layout = self._requested or self._detect(keys)
        self._opened_searchable(self._where)
        if self._layout.text_key not in self._non_filterable:
            log.info(
                "%s: %r is not a non-filterable key of this index; texts over 2 KB cannot be written",
                self._where,
                self._layout.text_key,
            )
        return CollectionSpec(
            self.index,
            int(index["dimension"]),
            Metric.parse(index["distanceMetric"]),
            self._embedding_model(index.get("indexArn")),
        )

    def _detect(self, non_filterable: list[str]) -> BucketLayout:
        page = self.retry.call(
            functools.partial(
                self._call, "ListVectors", **self._ids(), maxResults=_SAMPLE, returnMetadata=True
            ),
            "detect layout",
        )
        samples = [item.get("metadata") or {} for item in page.get("vectors", [])]
        layout, warning = detect(non_filterable, samples)
        if warning:
            log.warning("%s: %s", self._where, warning)
        return layout

    def _embedding_model(self, arn: str | None) -> str | None:
        if not arn:
            return None
        try:
            tags = self._call("ListTagsForResource", resourceArn=arn).get("tags") or {}
        except Exception:  # tags are optional (permissions, Supabase); never fail an open for them
            return None
        model = tags.get(EMBEDDING_TAG)
        return str(model) if model else None

    def _create_collection(self, spec: CollectionSpec) -> None:
        with contextlib.suppress(ConflictError):
            self._call("CreateVectorBucket", vectorBucketName=self.bucket)
        params: dict[str, Any] = {
            **self._ids(),
            "dataType": "float32",
            "dimension": spec.dimension,
            "distanceMetric": spec.metric.value,
            "metadataConfiguration": {"nonFilterableMetadataKeys": list(self.layout.non_filterable)},
        }
        if self._text_search is not None:
            params["metadataConfiguration"]["textSearchConfigurations"] = self._text_search_configurations()
        if spec.embedding_model:
            params["tags"] = {EMBEDDING_TAG: spec.embedding_model}
        try:
            self._call("CreateIndex", **params)
        except ConflictError:
            existing = self._describe_collection()
            if existing is None or (existing.dimension, existing.metric) != (spec.dimension, spec.metric):
                raise
            return
        self._layout = self.layout
        self._non_filterable = frozenset(self._layout.non_filterable)
        self._created_searchable()

    def _not_found(self) -> NotFoundError:
        """A missing bucket is named as such (not as a missing index), with the buckets there."""
        try:
            self._call("GetVectorBucket", vectorBucketName=self.bucket)
        except NotFoundError:
            buckets = self._names("ListVectorBuckets", "vectorBuckets", "vectorBucketName", {})
            return NotFoundError(
                f"{self.name}: the vector bucket {self.bucket!r} does not exist at {self.url.masked}"
                f"{what_exists('buckets', self.bucket, buckets)}; pass dimension= (and metric=) to create "
                "it with the index"
            )
        except VectorportError:  # may not read the bucket (permissions): say what is known
            pass
        indexes = self._names("ListIndexes", "indexes", "indexName", {"vectorBucketName": self.bucket})
        return NotFoundError(
            f"{self.name}: the index {self.index!r} does not exist in the vector bucket {self.bucket!r}"
            f"{what_exists('indexes', self.index, indexes, 'in it')}; pass dimension= (and metric=) to "
            "create it"
        )

    def _names(self, operation: str, field: str, name: str, params: dict[str, Any]) -> list[str] | None:
        """Every name a List operation pages through (``None`` when it cannot be listed)."""
        names: list[str] = []
        token: str | None = None
        while True:
            page_params = {**params, "maxResults": 500, **({"nextToken": token} if token else {})}
            try:
                page = self.retry.call(functools.partial(self._call, operation, **page_params), "list")
            except VectorportError:
                return None
            names.extend(str(item[name]) for item in page.get(field, []))
            token = page.get("nextToken")
            if not token:
                return sorted(names)

    def _drop_collection(self) -> None:
        with contextlib.suppress(NotFoundError):
            self._call("DeleteIndex", **self._ids())

    def list_collections(self) -> list[str]:
        names: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"vectorBucketName": self.bucket, "maxResults": 500}
            if token:
                params["nextToken"] = token
            try:
                page = self.retry.call(functools.partial(self._call, "ListIndexes", **params), "list")
            except NotFoundError:
                return []
            names.extend(i["indexName"] for i in page.get("indexes", []))
            token = page.get("nextToken")
            if not token:
                return sorted(names)

    # ----------------------------------------------------------------- records
    def upsert(self, records: Any, *, batch_size: int | None = None) -> int:
        # Overridden because what the layout writes (LlamaIndex's node JSON, a text key the
        # index declares filterable) is only measurable encoded: every record is encoded and
        # checked before the first write, so a bad record never leaves half an upsert behind.
        batch = validate_records(records, self.spec, self.capabilities, self.name)
        metas = self._encode(batch)
        size = self._batch_size(batch_size, self.capabilities.max_write_batch)
        for start in range(0, len(batch), size):
            chunk, encoded = batch[start : start + size], metas[start : start + size]
            self.retry.call(lambda c=chunk, m=encoded: self._put(c, m), f"{self.name}: upsert")  # type: ignore[misc]
        return len(batch)

    def _encode(self, batch: Batch) -> list[dict[str, Any]]:
        layout, problems = self.layout, []
        metas = []
        for i, (key, meta, text) in enumerate(zip(batch.keys, batch.metadatas, batch.texts, strict=True)):
            encoded = layout.encode(key, text, meta)
            for path, message in layout.size_problems(encoded, self._non_filterable):
                problems.append(Problem(key, path, message, i))
            metas.append(encoded)
        if problems:
            raise ValidationError(problems, backend=self.name, hint=f"the index's layout is {layout}")
        return metas

    def layout_problems(self, key: str, metadata: dict[str, Any], text: str | None) -> list[tuple[str, str]]:
        """What keeps one record from being written in this index's layout, as ``(path,
        message)`` (what the migration plan reports beside the capabilities' checks)."""
        # an index not created yet will declare its layout's text keys non-filterable
        declared = self._non_filterable if self._spec is not None else frozenset(self.layout.non_filterable)
        return self.layout.size_problems(self.layout.encode(key, text, metadata), declared)

    def _write(self, batch: Batch) -> None:
        self._put(batch, self._encode(batch))

    def _put(self, batch: Batch, metas: Sequence[dict[str, Any]]) -> None:
        vectors: list[dict[str, Any]] = []
        for key, row, full in zip(batch.keys, batch.vectors.tolist(), metas, strict=True):
            item: dict[str, Any] = {"key": key, "data": {"float32": row}}
            if full:
                item["metadata"] = full
            vectors.append(item)
        if self._fast_puts:
            body = encode_put_body(self._ids(), batch.keys, batch.vectors, metas)
            vectors = EncodedVectors(vectors, body)
        if self.limiter is not None:
            self.limiter.acquire(len(vectors))
        self._call("PutVectors", **self._ids(), vectors=vectors)

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        want_meta = bool(include & {Include.METADATA, Include.TEXT})
        resp = self._call(
            "GetVectors",
            **self._ids(),
            keys=list(keys),
            returnData=Include.VECTOR in include,
            returnMetadata=want_meta,
        )
        out = []
        for item in resp.get("vectors", []):
            meta, text = self._split(item.get("metadata"), include)
            vec = np.asarray(item["data"]["float32"], np.float32) if Include.VECTOR in include else None
            out.append(Record(item["key"], vec, meta, text))
        return out

    def _remove(self, keys: Sequence[str]) -> None:
        if self.limiter is not None:
            self.limiter.acquire(len(keys))
        self._call("DeleteVectors", **self._ids(), keys=list(keys))

    def _compile_filter(self, where: FilterNode) -> dict[str, Any]:
        return S3FilterCompiler(self._non_filterable | self.layout.reserved_keys).compile_query(where)

    def _query_vectors(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        """Every result of one QueryVectors request (its ``topK``), following its pages."""
        resp = self._call("QueryVectors", **request)
        found: list[dict[str, Any]] = list(resp.get("vectors", []))
        while resp.get("nextToken") and len(found) < request["topK"]:
            # topK beyond one page (100) comes back in pages; a page request carries the token
            # with the same query, as the SDK paginator does.
            resp = self._call("QueryVectors", **{**request, "nextToken": resp["nextToken"]})
            found.extend(resp.get("vectors", []))
        return found

    def _search(
        self,
        vector: Vector,
        k: int,
        where: dict[str, Any] | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        request: dict[str, Any] = {
            **self._ids(),
            "topK": k,
            "queryVector": {"float32": vector.tolist()},
            "returnDistance": True,
            "returnMetadata": bool(include & {Include.METADATA, Include.TEXT}),
        }
        if where is not None:
            request["filter"] = where
        request.update(params)
        metric = self.spec.metric
        hits = sorted(self._query_vectors(request), key=lambda h: (float(h.get("distance", 0.0)), h["key"]))
        vectors: dict[str, Vector | None] = {}
        if Include.VECTOR in include and hits:
            for rec in self._read([h["key"] for h in hits], frozenset({Include.VECTOR})):
                vectors[rec.key] = None if rec.vector is None else np.asarray(rec.vector, np.float32)
        out = []
        for hit in hits:
            # S3 cosine distance is 1 - cos and euclidean is plain L2: both already canonical.
            distance = float(hit.get("distance", 0.0))
            meta, text = self._split(hit.get("metadata"), include)
            out.append(
                Match(
                    hit["key"],
                    distance,
                    score_from_distance(metric, distance),
                    meta if Include.METADATA in include else None,
                    text,
                    vectors.get(hit["key"]),
                )
            )
        return out

    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        index, parts = segment
        request: dict[str, Any] = {
            **self._ids(),
            "maxResults": limit,
            "returnData": Include.VECTOR in include,
            "returnMetadata": bool(include & {Include.METADATA, Include.TEXT}),
        }
        if 1 < parts <= _NATIVE_SEGMENTS:
            request.update(segmentCount=parts, segmentIndex=index)
        if position is not None:
            request["nextToken"] = position_field(position, "token", str, self.name)
        resp = self._call("ListVectors", **request)
        records = []
        for item in resp.get("vectors", []):
            if parts > _NATIVE_SEGMENTS and segment_of(item["key"], parts) != index:
                continue  # more segments than the service offers: split client-side
            meta, text = self._split(item.get("metadata"), include)
            vec = np.asarray(item["data"]["float32"], np.float32) if Include.VECTOR in include else None
            records.append(Record(item["key"], vec, meta, text))
        token = resp.get("nextToken")
        return records, {"token": token} if token else None

    def _count(self) -> int:
        # No count API: list keys only, 16 segments in parallel.
        segments = _NATIVE_SEGMENTS if self.workers > 1 else 1

        def count_segment(seg: int) -> int:
            total, token = 0, None
            while True:
                request: dict[str, Any] = {**self._ids(), "maxResults": 1000}
                if segments > 1:
                    request.update(segmentCount=segments, segmentIndex=seg)
                if token:
                    request["nextToken"] = token
                page = self.retry.call(functools.partial(self._call, "ListVectors", **request), "count")
                total += len(page.get("vectors", []))
                token = page.get("nextToken")
                if not token:
                    return total

        with ThreadPoolExecutor(max_workers=min(self.workers, segments)) as pool:
            return sum(pool.map(count_segment, range(segments)))

    def info(self) -> dict[str, Any]:
        """The base description plus the index's layout and non-filterable keys."""
        out = super().info()
        out["layout"] = self.layout.to_dict()
        out["s3vectors"] = {
            "non_filterable_keys": sorted(self._non_filterable),
            "text_search_keys": sorted(self._searchable),
            "text_search_language": self.text_language,
        }
        return out

    def close(self) -> None:
        closer = getattr(self.client, "close", None)
        if callable(closer):
            closer()
