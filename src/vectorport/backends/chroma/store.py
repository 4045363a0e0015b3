"""``chroma://DIR?collection=NAME`` (embedded) and ``chroma+http(s)://HOST:PORT?collection=NAME``.

What vectorport writes is a plain Chroma collection: ``ids`` are the record keys,
``embeddings`` the vectors, ``metadatas`` the metadata and ``documents`` the chunk text. The
collection's metric is its HNSW ``space`` and its spec is also recorded in the collection
metadata (``vectorport:dimension``, ``vectorport:metric``, ``vectorport:embedding_model``).

Facts about chromadb 1.5 this module is built around (each checked by a test in
``tests/chroma/``):

* ``upsert`` merges: a metadata key absent from the new record survives, and a ``None``
  document or metadata keeps the old one; a key sent as ``None`` is deleted. One call is one
  transaction of Chroma's log, replayed after a crash. A full replace is one ``upsert`` that
  sends every stored key the new record lacks as ``None`` (``_write.replace``).
* A record's list elements, and its scalar keys plus the document, are each written in one
  SQLite statement of 6 parameters per row: past 5,461 rows the logged write cannot be
  applied and every later operation on the collection fails (``max_list_items``,
  ``max_keys``). ``chroma run`` refuses request bodies over 40 MiB.
* ``l2`` distances are squared and ``ip`` distances are ``1 - dot``.
* The ``cosine`` space stores unit vectors and the norm, so vectors read back may differ by
  up to 2 float32 ulps (``capabilities.vector_ulps``).
* A read whose bind parameters exceed SQLite's 32,766 fails, so reads are batched to
  ``get_max_batch_size()`` (5,461).
* ``delete_collection`` leaves list-valued metadata behind, which reappears on records of the
  next collection (chroma-core/chroma#7594); :meth:`ChromaStore.drop` deletes the records
  first.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, Self

import numpy as np

from ..._base import BaseStore
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
from ..._segments import segment_of
from ..._suggest import what_exists
from ..._url import StoreURL
from ..._validate import Batch
from ...exceptions import ConfigurationError, ConflictError, NotFoundError
from ...filters import FilterNode
from ._client import (
    COLLECTION_NAMES,
    DATABASE_FILE,
    HNSW_KEYS,
    close_client,
    databases_in,
    embedded_client,
    resolve,
)
from ._layout import ChromaLayout, detect, layout_option
from ._write import NO_TEXT, REQUEST_BYTES, replace, split_text
from .errors import map_errors
from .filters import ChromaFilterCompiler, Where

__all__ = ["ChromaStore"]

_SPACES: dict[Metric, str] = {
    Metric.COSINE: "cosine",
    Metric.DOT: "ip",
    Metric.EUCLIDEAN: "l2",
}
_METRICS: dict[str, Metric] = {space: metric for metric, space in _SPACES.items()}

# Chroma raw distance → canonical distance (see vectorport.Metric).
_TO_CANONICAL: dict[Metric, Any] = {
    Metric.COSINE: lambda d: d,
    Metric.DOT: lambda d: d - 1.0,  # ip is 1 - dot; canonical is -dot
    Metric.EUCLIDEAN: lambda d: math.sqrt(max(d, 0.0)),  # l2 is squared
}

_INCLUDES: dict[Include, str] = {
    Include.METADATA: "metadatas",
    Include.TEXT: "documents",
    Include.VECTOR: "embeddings",
}

META_DIMENSION = "vectorport:dimension"
META_METRIC = "vectorport:metric"
META_MODEL = "vectorport:embedding_model"

_MAX_BATCH = 5_461  # get_max_batch_size() of a local/`chroma run` Chroma 1.5: 32766 // 6
# Chroma 1.5 writes one record's scalar metadata (the document is one more key) and, apart,
# its list elements, each as one SQLite INSERT of 6 parameters per row: past 32,766 // 6 the
# write is logged, then fails to apply, and so does every later read and write.
_MAX_LIST_ITEMS = 5_461
_MAX_KEYS = 5_461 - 2  # one is kept for the document, one for the no-text marker
_F64_EXACT = 2**53


# Chroma records its default embedding function (all-MiniLM-L6-v2, 384 dimensions) on every
# collection created without one, also when the caller then adds vectors of their own.
_DEFAULT_EF_DIMENSION = 384


def _offset_and_key(position: Position) -> tuple[int, str]:
    offset = position_field(position, "o", int, "chroma")
    if offset < 1:
        raise ConfigurationError("not a chroma scan cursor: its offset is not positive")
    return offset, position_field(position, "k", str, "chroma")


def _fields(include: frozenset[Include]) -> list[str]:
    """What to ask Chroma for: the text needs the metadata too (the no-text marker)."""
    wanted = {_INCLUDES[i] for i in include}
    if Include.TEXT in include:
        wanted.add("metadatas")
    return sorted(wanted)


class ChromaStore(BaseStore[Where]):
    """A Chroma collection, embedded (``PersistentClient``) or on a server (``HttpClient``).

    URLs::

        chroma:///abs/path/to/dir?collection=docs      embedded, absolute directory
        chroma://./relative/dir?collection=docs        embedded, relative to the cwd
        chroma+http://localhost:8000?collection=docs   server (also .../docs as the path)
        chroma+https://host:443?collection=docs&tenant=t&database=d

    Creation options (URL parameters or keyword arguments): the HNSW settings
    ``ef_construction``, ``max_neighbors``, ``ef_search``, ``num_threads``, ``batch_size``,
    ``sync_threshold``, ``resize_factor`` (also as ``hnsw={...}``); for servers ``tenant``,
    ``database`` and ``headers={...}`` (e.g. an auth token).

    >>> import tempfile, vectorport
    >>> d = tempfile.mkdtemp()
    >>> s = vectorport.connect(f"chroma://{d}?collection=docs", dimension=2, metric="euclidean")
    >>> _ = s.upsert([vectorport.Record("a", [0, 0], {"lang": "en"}, "hi"),
    ...               vectorport.Record("b", [3, 4], {"lang": "fr"})])
    >>> [(m.key, round(m.distance, 4)) for m in s.query([0, 0], k=2, filter={"lang": "fr"})]
    [('b', 5.0)]
    >>> s.drop(); s.close()
    """

    name: ClassVar[str] = "chroma"
    url_params = frozenset({"collection", "layout", *HNSW_KEYS})
    """An embedded store's; a server's also take ``tenant`` and ``database``."""
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=65_536,
        max_write_batch=_MAX_BATCH,
        max_read_batch=_MAX_BATCH,
        max_delete_batch=_MAX_BATCH,
        max_scan_page=_MAX_BATCH - 1,  # one more row is read to check the cursor
        max_top_k=_MAX_BATCH,
        exact=False,
        recall_tolerance=0.9,
        vector_ulps=2,
        metadata=MetadataRules(
            nested_objects=False,
            null=False,
            empty_lists=False,
            mixed_lists=False,
            max_keys=_MAX_KEYS,
            max_list_items=_MAX_LIST_ITEMS,
            max_int=2**63 - 1,
            float_list_max_int=_F64_EXACT,
            # a chroma run server re-parses floats in JSON and may move them by a few ulps
            # (9.009593520380085e-153 came back 3 ulps lower through HttpClient)
            float_ulps=4,
            reserved_keys=frozenset({"chroma:document", NO_TEXT}),
            reserved_prefixes=("#", "$"),
        ),
        filter_operators=ChromaFilterCompiler.supported_operators(),
        features=frozenset({Feature.NATIVE_COUNT, Feature.WRITE}),
        collection_names=COLLECTION_NAMES,
    )

    def __init__(
        self,
        url: StoreURL,
        collection: str,
        client: Any,
        *,
        hnsw: Mapping[str, int | float] | None = None,
        path: str | None = None,
        layout: ChromaLayout | None = None,
    ) -> None:
        super().__init__(url, collection)
        self._requested = layout
        self._layout: ChromaLayout | None = None
        self._client: Any = None
        self._closed = False
        self._path = path
        self._hnsw = dict(hnsw or {})
        self._coll: Any = None
        self._dimension_hint: int | None = None
        self._compiler = ChromaFilterCompiler()
        self._where = f"chroma collection {collection!r} at {url.masked}"
        self._batch = _MAX_BATCH
        self._split = 0
        if client is not None:
            self._attach(client)

    def _attach(self, client: Any) -> None:
        self._client = client
        with map_errors(f"{self._where}: max batch size"):
            self._batch = max(1, min(_MAX_BATCH, int(client.get_max_batch_size())))

    def _api(self) -> Any:
        """The chromadb client; an embedded one is made on first use (see :meth:`bind`)."""
        if self._closed:
            raise ConfigurationError(f"{self!r} is closed")
        if self._client is None:
            assert self._path is not None
            with map_errors(f"chroma at {self._path}: open"):
                client = embedded_client(self._path)
            self._attach(client)
        return self._client

    # ----------------------------------------------------------------- construction
    @classmethod
    def processes(cls, url: StoreURL) -> str:
        # PersistentClient keeps the HNSW segments in memory and flushes them to the directory:
        # two processes writing one directory corrupt each other ("Error executing plan")
        return "one" if url.scheme == "chroma" else "any"

    @classmethod
    def url_parameters(cls, url: StoreURL) -> tuple[frozenset[str], str]:
        server = frozenset({"tenant", "database"}) if url.scheme != "chroma" else frozenset()
        return cls.url_params | server, ""

    @classmethod
    def from_url(cls, url: StoreURL, **options: Any) -> Self:
        opts = dict(options)
        layout = layout_option(opts.pop("layout", None) or url.params.get("layout"))
        plain = dataclasses.replace(url, params={k: v for k, v in url.params.items() if k != "layout"})
        target = resolve(plain, opts)
        # An embedded client is made on first use: opening a collection that is not there must
        # not leave a new database behind (a mistyped path, `vectorport migrate --plan`).
        return cls(url, target.collection, target.client, hnsw=target.hnsw, path=target.path, layout=layout)

    @property
    def layout(self) -> ChromaLayout:
        """Where the collection keeps text and metadata: as opened (named or detected), as
        asked, or vectorport's."""
        return self._layout or self._requested or ChromaLayout("vectorport")

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        layout = self.layout
        if not layout.node:
            return declared
        rules = declared.metadata
        rules = dataclasses.replace(
            rules,
            reserved_keys=rules.reserved_keys | layout.reserved_keys,
            max_keys=(rules.max_keys or 0) - layout.added_keys,
        )
        return dataclasses.replace(declared, metadata=rules)

    def _decode(self, meta: dict[str, Any] | None, doc: str | None) -> tuple[dict[str, Any], str | None]:
        user, text = split_text(meta, doc)
        return self.layout.decode(user), text

    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        # An empty collection made by another tool has no dimension yet: adopt the caller's.
        self._dimension_hint = dimension
        if self._client is None and self._path is not None and dimension is None and not self._has_database():
            parent, name = os.path.split(os.path.abspath(self._path))
            raise NotFoundError(
                f"{self._where}: there is no Chroma database in {self._path} (no {DATABASE_FILE})"
                f"{what_exists('Chroma databases', name, databases_in(parent), f'in {parent}')}; "
                "check the path, or pass dimension= (and metric=) to create the collection there"
            )
        return super().bind(dimension, metric, embedding_model)

    def _has_database(self) -> bool:
        return self._path is None or os.path.isfile(os.path.join(self._path, DATABASE_FILE))

    def info(self) -> dict[str, Any]:
        """The base description plus where Chroma runs, its version and the index settings."""
        out = super().info()
        coll = self._collection()
        with self._op("info"):
            version = str(self._api().get_version())
            config = dict(coll.configuration_json or {})
        out["layout"] = self.layout.to_dict()
        out["chroma"] = {
            "mode": "embedded" if self._path is not None else "http",
            "path": self._path,
            "chroma_version": version,
            "index": {
                name: dict(value) for name, value in config.items() if name in ("hnsw", "spann") and value
            },
        }
        return out

    def close(self) -> None:
        self._closed = True
        client, self._client, self._coll = self._client, None, None
        if client is None:
            return
        close_client(client)

    # ----------------------------------------------------------------- collections
    def _op(self, what: str) -> Any:
        return map_errors(f"{self._where}: {what}")

    def _collection(self) -> Any:
        client = self._api()
        if self._coll is None:
            with self._op("open"):
                self._coll = client.get_collection(self.collection, embedding_function=None)
        return self._coll

    def _describe_collection(self) -> CollectionSpec | None:
        self._coll = None
        try:
            coll = self._collection()
        except NotFoundError:
            return None
        meta: dict[str, Any] = dict(coll.metadata or {})
        config: dict[str, Any] = dict(coll.configuration_json or {})
        space = (config.get("hnsw") or {}).get("space") or (config.get("spann") or {}).get("space")
        space = space or meta.get("hnsw:space") or "l2"
        metric = _METRICS.get(str(space))
        if metric is None:
            raise ConfigurationError(f"{self._where}: unknown Chroma space {space!r}")
        recorded = meta.get(META_METRIC)
        if recorded is not None and Metric.parse(recorded) is not metric:
            raise ConflictError(f"{self._where}: metadata says {recorded} but the index space is {space!r}")
        dimension = meta.get(META_DIMENSION)
        actual = coll.get_model().dimension
        if actual is None:
            # Chroma sets the dimension on the first write; a collection migrated from an older
            # Chroma may hold records without it: read it off one vector.
            with self._op("describe"):
                peek = coll.get(limit=1, include=["embeddings"])["embeddings"]
            if peek is not None and len(peek):
                actual = len(peek[0])
        if dimension is not None and actual is not None and int(dimension) != int(actual):
            raise ConflictError(
                f"{self._where}: metadata says {dimension} dimensions but it holds {actual}-dim vectors"
            )
        dimension = dimension or actual or self._dimension_hint
        if dimension is None:
            raise ConfigurationError(
                f"{self._where} is empty and records no dimension; pass dimension= to adopt it"
            )
        model = meta.get(META_MODEL) or self._foreign_model(config, int(dimension))
        if self._requested is None:
            with self._op("describe"):
                sample = coll.get(limit=20, include=["metadatas"])["metadatas"] or []
            self._layout = detect(sample)
        return CollectionSpec(self.collection, int(dimension), metric, model)

    @staticmethod
    def _foreign_model(config: Mapping[str, Any], dimension: int) -> str | None:
        """``chroma:<model>`` from the collection's embedding-function configuration. Chroma's
        default one is recorded even on collections whose vectors came from elsewhere, so it
        counts only when the dimension is its own (384)."""
        ef = config.get("embedding_function") or {}
        if ef.get("type") != "known":
            return None
        inner = ef.get("config") or {}
        name = inner.get("model_name") or inner.get("model") or ef.get("name")
        if ef.get("name") == "default" and dimension != _DEFAULT_EF_DIMENSION:
            return None
        return f"chroma:{name}" if name else None

    def _create_collection(self, spec: CollectionSpec) -> None:
        meta: dict[str, Any] = {META_DIMENSION: spec.dimension, META_METRIC: spec.metric.value}
        if spec.embedding_model:
            meta[META_MODEL] = spec.embedding_model
        config = {"hnsw": {"space": _SPACES[spec.metric], **self._hnsw}}
        try:
            with self._op("create"):
                self._coll = self._api().create_collection(
                    self.collection, configuration=config, metadata=meta, embedding_function=None
                )
        except ConflictError:
            # A concurrent creator won: fine when it made the same collection.
            existing = self._describe_collection()
            if existing is None or (existing.dimension, existing.metric) != (spec.dimension, spec.metric):
                raise

    def _drop_collection(self) -> None:
        try:
            coll = self._collection()
        except NotFoundError:
            return
        # Delete the records first: delete_collection leaves list-valued metadata behind,
        # which reappears on the next records written anywhere (chroma-core/chroma#7594).
        with self._op("drop"):
            while ids := coll.get(limit=self._batch, include=[])["ids"]:
                coll.delete(ids=ids)
        try:
            with self._op("drop"):
                self._api().delete_collection(self.collection)
        except NotFoundError:
            pass
        self._coll = None

    def list_collections(self) -> list[str]:
        if self._client is None and not self._has_database():
            return []  # no database here: do not create one by looking
        with self._op("list collections"):
            return sorted(c.name for c in self._api().list_collections())

    # ----------------------------------------------------------------- records
    def _write(self, batch: Batch) -> None:
        if self.layout.node:
            rows = zip(batch.keys, batch.texts, batch.metadatas, strict=True)
            metas = [self.layout.encode(key, text, meta) for key, text, meta in rows]
            batch = dataclasses.replace(batch, metadatas=metas)
        coll = self._collection()
        # A remote server may accept fewer records per call than the local default, and takes
        # request bodies up to a size (replace() cuts requests below it).
        request_bytes = None if self._path is not None else REQUEST_BYTES
        for part in batch.chunks(self._batch):
            replace(
                coll,
                part,
                self._op,
                request_bytes,
                split=self._split > 0,
                vector_ulps=self.capabilities.vector_ulps,
            )

    @contextmanager
    def split_replace(self) -> Iterator[None]:
        """Inside the block, a replace deletes the stored records and writes them anew (3-4x
        faster than Chroma's upsert of stored ids; see :mod:`._write`). A crash between the two
        leaves them missing until written again: for callers that do (``sync``)."""
        self._split += 1
        try:
            yield
        finally:
            self._split -= 1

    def _read(self, keys: Sequence[str], include: frozenset[Include]) -> list[Record]:
        coll = self._collection()
        with self._op("get"):
            res = coll.get(ids=list(keys), include=_fields(include))
        return self._records(res, include)

    def _records(self, res: Mapping[str, Any], include: frozenset[Include]) -> list[Record]:
        ids: list[str] = res["ids"]
        vectors = res.get("embeddings") if Include.VECTOR in include else None
        if vectors is not None and ids:
            vectors = np.asarray(vectors, dtype=np.float32).reshape(len(ids), -1)
        metas = res.get("metadatas") or [None] * len(ids)
        docs = res.get("documents") or [None] * len(ids)
        out = []
        for i, key in enumerate(ids):
            meta, text = self._decode(metas[i], docs[i])
            out.append(
                Record(
                    key,
                    None if vectors is None else vectors[i],
                    meta if Include.METADATA in include else {},
                    text if Include.TEXT in include else None,
                )
            )
        return out

    def _remove(self, keys: Sequence[str]) -> None:
        coll = self._collection()
        with self._op("delete"):
            coll.delete(ids=list(keys))

    def _compile_filter(self, where: FilterNode) -> Where:
        return self._compiler.where(where)

    def _search(
        self,
        vector: Vector,
        k: int,
        where: Where | None,
        include: frozenset[Include],
        params: Mapping[str, Any],
    ) -> list[Match]:
        if params:
            raise ConfigurationError(
                f"chroma takes no per-query params (got {sorted(params)}); set ef_search on the "
                "collection (chroma URL parameter ef_search=) instead"
            )
        coll = self._collection()
        wanted = ["distances", *_fields(include)]
        with self._op("query"):
            res = coll.query(query_embeddings=vector.reshape(1, -1), n_results=k, where=where, include=wanted)
        metric = self.spec.metric
        convert = _TO_CANONICAL[metric]
        ids: list[str] = res["ids"][0]
        dists = res["distances"][0]
        metas = (res.get("metadatas") or [None])[0] or [None] * len(ids)
        docs = (res.get("documents") or [None])[0] or [None] * len(ids)
        vecs = res["embeddings"][0] if Include.VECTOR in include else None
        out = []
        for i, key in enumerate(ids):
            d = float(convert(float(dists[i])))
            meta, text = self._decode(metas[i], docs[i])
            out.append(
                Match(
                    key,
                    d,
                    score_from_distance(metric, d),
                    meta if Include.METADATA in include else None,
                    text if Include.TEXT in include else None,
                    np.asarray(vecs[i], dtype=np.float32) if vecs is not None else None,
                )
            )
        out.sort(key=lambda m: (m.distance, m.key))
        return out

    # ----------------------------------------------------------------- scan
    def _scan_page(
        self, limit: int, include: frozenset[Include], segment: tuple[int, int], position: Position | None
    ) -> tuple[Sequence[Record], Position | None]:
        """Pages by position in Chroma's stable (insertion) order. The cursor keeps the offset
        and the key just before it, checked on resume: if records before the cursor were
        deleted (or lost their text, which deletes and adds them) the offsets moved, and
        resuming could skip records, so the scan stops with ConflictError instead. Segments
        hash keys (``segment_of``): their pages read ids only, then fetch the chosen records
        by id."""
        coll = self._collection()
        index, parts = segment
        offset, last = (0, None) if position is None else _offset_and_key(position)
        inc = _fields(include) if parts == 1 else []
        step = limit if parts == 1 else self._batch - 1
        chosen: list[str] = []
        found: list[Record] = []
        done = False
        while len(chosen) < limit:
            with self._op("scan"):
                if last is None:
                    res = coll.get(limit=step, offset=offset, include=inc)
                    ids: list[str] = res["ids"]
                    skip = 0
                else:
                    res = coll.get(limit=step + 1, offset=offset - 1, include=inc)
                    ids = res["ids"]
                    if not ids or ids[0] != last:
                        raise ConflictError(
                            f"{self._where}: records before the scan cursor were deleted or "
                            "replaced, so positions moved; restart the scan"
                        )
                    skip = 1
            taken = 0
            page = self._records(res, include) if parts == 1 else None
            for pos in range(skip, len(ids)):
                taken = pos - skip + 1
                if parts == 1 or segment_of(ids[pos], parts) == index:
                    chosen.append(ids[pos])
                    if page is not None:
                        found.append(page[pos])
                    if len(chosen) == limit:
                        break
            offset += taken
            if taken:
                last = ids[skip + taken - 1]
            if len(ids) - skip < step and taken == len(ids) - skip:
                done = True
                break
        if parts > 1 and chosen and include:
            found = self._fetch(chosen, include)
        elif parts > 1:
            found = [Record(k, None, {}, None) for k in chosen]
        return found, None if done or last is None else {"o": offset, "k": last}

    def _fetch(self, keys: list[str], include: frozenset[Include]) -> list[Record]:
        by_key = {r.key: r for r in self._read(keys, include)}
        # A record deleted between the two reads is simply gone.
        return [by_key[k] for k in keys if k in by_key]

    def _count(self) -> int:
        coll = self._collection()
        with self._op("count"):
            return int(coll.count())
