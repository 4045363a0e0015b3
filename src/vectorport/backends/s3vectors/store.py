"""``s3vectors://BUCKET/INDEX`` and ``supabase://REF.supabase.co/BUCKET/INDEX``: Amazon S3
Vectors (or Supabase Vector Buckets, the same operations behind a proxy) through boto3.

See ``docs/backends/s3vectors.md`` for URLs, options, limits and the filter mapping.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any, ClassVar, Self

from ..._base import BaseStore
from ..._capabilities import Capabilities, MetadataRules
from ..._features import Feature
from ..._lifecycle import made_concurrently
from ..._models import CollectionSpec, Metric
from ..._retry import RetryPolicy
from ..._suggest import what_exists
from ..._url import StoreURL
from ..._validate import Batch, check_batch_size, validate_records
from ...exceptions import (
    Action,
    Advised,
    ConflictError,
    NotFoundError,
    Step,
    UnsupportedFeatureError,
    VectorportError,
)
from .._parts import Forward
from ._bucket import BucketClient
from ._client import INDEX_NAMES, resolve
from ._layout import BucketLayout
from ._mapping import MetadataMapping
from ._ratelimit import limiter_for
from ._reader import Reader
from ._text import TextSearch
from .filters import S3FilterCompiler

__all__ = ["TEXT_KEY", "S3VectorsStore"]

TEXT_KEY = "vectorport_text"
"""Metadata key holding the chunk text in vectorport's own layout, declared non-filterable when
vectorport creates an index."""
EMBEDDING_TAG = "vectorport:embedding-model"
# AWS counts filterable (2 KB) and total (40 KB) metadata per vector. vectorport measures
# JSON bytes, which is never less than the service's count, except for the text key's own
# name; 64 bytes of the total are kept back for it.
_TEXT_KEY_RESERVE = 64


def _names(calls: BucketClient, operation: str, field: str, name: str, **params: Any) -> list[str] | None:
    """Every name a List operation pages through (``None`` when it cannot be listed)."""
    try:
        return calls.names(operation, field, name, **params)
    except VectorportError:
        return None


class S3VectorsStore(BaseStore[dict[str, Any]]):
    """Amazon S3 Vectors / Supabase Vector Buckets. One vectorport collection is one index.

    The chunk text is stored in the metadata as the index's layout says (``layout=``:
    ``vectorport``, ``langchain``, ``llamaindex``, ``s3vectors-embed-cli``, or ``text_key=KEY``;
    detected from the index when not given, see ``_layout``), its text field declared
    non-filterable at index creation. Writes are paced per index (2,500 vectors/s by
    default), throttling (429/503) is retried with exponential backoff and jitter, ``scan``
    segments map to ``ListVectors`` segments and ``count`` lists keys over 16 segments in
    parallel. Only ``cosine`` and ``euclidean`` exist; S3's ``euclidean`` distance is plain L2.
    Text and hybrid search where the index's text key is full-text searchable (``_text``).

    Composed of collaborators (``vectorport.backends._parts``): ``calls`` (:class:`._bucket.
    BucketClient`: the boto3 calls, error mapping, pacing, paging), ``mapping``
    (:class:`._mapping.MetadataMapping`: the layout and non-filterable keys), ``reader``
    (:class:`._reader.Reader`: get, query, scan pages) and ``text`` (:class:`._text.TextSearch`).

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
        limiter = limiter_for(endpoint, bucket, index, write_rate) if write_rate > 0 else None
        where = f"{self.name} {bucket}/{index}"
        self.calls = BucketClient(client, bucket, index, where=where, retry=self.retry, limiter=limiter)
        self.mapping = MetadataMapping(layout)
        self.reader = Reader(self)
        self.text = TextSearch(self, text_search, text_search_said)

    @classmethod
    def url_parameters(cls, url: StoreURL) -> tuple[frozenset[str], str]:
        return cls.url_params | {"key" if url.scheme == "supabase" else "profile"}, ""

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        got = resolve(url, options)
        return cls(url, got.bucket, got.index, got.client, endpoint=got.endpoint, **got.options)

    def _check_spec_supported(self, spec: CollectionSpec) -> None:
        if spec.metric is Metric.DOT:
            raise UnsupportedFeatureError(
                "S3 Vectors (and Supabase Vector Buckets) have no dot-product metric, only cosine and "
                "euclidean; for unit-length embeddings use metric='cosine', which ranks identically"
            )
        super()._check_spec_supported(spec)

    @property
    def layout(self) -> BucketLayout:
        """Where the index keeps the text: as opened (named or detected), as asked, or vectorport's."""
        return self.mapping.layout

    @property
    def text_key(self) -> str:
        """The metadata key of the text (for ``llamaindex``, of the node that holds it)."""
        return self.layout.text_key

    @property
    def text_language(self) -> str | None:
        return self.text.text_language

    text_query = Forward("text", TextSearch.text_query)
    hybrid_query = Forward("text", TextSearch.hybrid_query)
    follow_text_language = Forward("text", TextSearch.follow_text_language)

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        limiter = self.calls.limiter
        rate = limiter.rate if limiter is not None else None
        narrowed = replace(declared, metadata=self.mapping.rules(declared.metadata), write_rate=rate)
        return self.text.capabilities(narrowed)

    # ----------------------------------------------------------------- collections
    def _describe_collection(self) -> CollectionSpec | None:
        try:
            index = self.calls.call("GetIndex", **self.calls.ids)["index"]
        except NotFoundError:
            return None
        config = index.get("metadataConfiguration") or {}
        self.mapping.open(self.calls, list(config.get("nonFilterableMetadataKeys") or []))
        self.text.opened(index)
        return CollectionSpec(
            self.index,
            int(index["dimension"]),
            Metric.parse(index["distanceMetric"]),
            self.calls.tag(index.get("indexArn"), EMBEDDING_TAG),
        )

    def _create_collection(self, spec: CollectionSpec) -> None:
        with contextlib.suppress(ConflictError):
            self.calls.call("CreateVectorBucket", vectorBucketName=self.bucket)
        config: dict[str, Any] = {"nonFilterableMetadataKeys": list(self.layout.non_filterable)}
        if self.text.option is not None:
            config["textSearchConfigurations"] = self.text.configurations()
        params: dict[str, Any] = {
            **self.calls.ids,
            "dataType": "float32",
            "dimension": spec.dimension,
            "distanceMetric": spec.metric.value,
            "metadataConfiguration": config,
        }
        if spec.embedding_model:
            params["tags"] = {EMBEDDING_TAG: spec.embedding_model}
        try:
            self.calls.call("CreateIndex", **params)
        except ConflictError:
            if not made_concurrently(self, spec):
                raise
            return
        self.mapping.created()
        self.text.created()

    def _not_found(self) -> NotFoundError:
        """A missing bucket is named as such (not as a missing index), with the buckets there."""
        try:
            self.calls.call("GetVectorBucket", vectorBucketName=self.bucket)
        except NotFoundError:
            buckets = _names(self.calls, "ListVectorBuckets", "vectorBuckets", "vectorBucketName")
            return NotFoundError(
                Advised.of(
                    "{}: the vector bucket {!r} does not exist at {}{}; {}",
                    self.name,
                    self.bucket,
                    self.url.masked,
                    what_exists("buckets", self.bucket, buckets),
                    Step(Action.CREATE_WITH_INDEX),
                )
            )
        except VectorportError:  # may not read the bucket (permissions): say what is known
            pass
        indexes = _names(self.calls, "ListIndexes", "indexes", "indexName", vectorBucketName=self.bucket)
        return NotFoundError(
            Advised.of(
                "{}: the index {!r} does not exist in the vector bucket {!r}{}; {}",
                self.name,
                self.index,
                self.bucket,
                what_exists("indexes", self.index, indexes, "in it"),
                Step(Action.CREATE),
            )
        )

    def _drop_collection(self) -> None:
        with contextlib.suppress(NotFoundError):
            self.calls.call("DeleteIndex", **self.calls.ids)

    def list_collections(self) -> list[str]:
        try:
            return self.calls.names("ListIndexes", "indexes", "indexName", vectorBucketName=self.bucket)
        except NotFoundError:
            return []

    # ----------------------------------------------------------------- records
    def upsert(self, records: Any, *, batch_size: int | None = None) -> int:
        # Overridden because what the layout writes (LlamaIndex's node JSON, a text key the
        # index declares filterable) is only measurable encoded: every record is encoded and
        # checked before the first write, so a bad record never leaves half an upsert behind.
        batch = validate_records(records, self.spec, self.capabilities, self.name)
        metas = self.mapping.encode(batch, self.name)
        size = check_batch_size(batch_size, self.capabilities.max_write_batch)
        for start in range(0, len(batch), size):
            chunk, encoded = batch[start : start + size], metas[start : start + size]
            self.retry.call(
                lambda c=chunk, m=encoded: self.calls.put(c.keys, c.vectors, m),  # type: ignore[misc]
                f"{self.name}: upsert",
            )
        return len(batch)

    def layout_problems(self, key: str, metadata: dict[str, Any], text: str | None) -> list[tuple[str, str]]:
        """What keeps one record from being written in this index's layout, as ``(path,
        message)`` (what the migration plan reports beside the capabilities' checks)."""
        return self.mapping.problems(key, metadata, text, opened=self._spec is not None)

    def _write(self, batch: Batch) -> None:
        self.calls.put(batch.keys, batch.vectors, self.mapping.encode(batch, self.name))

    _read = Forward("reader", Reader.read)
    _remove = Forward("calls", BucketClient.delete)
    _compile_filter = Forward("mapping", MetadataMapping.compile_filter)
    _search = Forward("reader", Reader.search)
    _scan_page = Forward("reader", Reader.scan_page)

    def _count(self) -> int:
        return self.calls.count(self.workers)

    def info(self) -> dict[str, Any]:
        """The base description plus the index's layout and non-filterable keys."""
        out = super().info()
        out["layout"] = self.layout.to_dict()
        out["s3vectors"] = {
            "non_filterable_keys": sorted(self.mapping.non_filterable),
            "text_search_keys": sorted(self.text.searchable),
            "text_search_language": self.text_language,
        }
        return out

    def close(self) -> None:
        self.calls.close()
