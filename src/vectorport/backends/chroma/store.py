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
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

from ..._base import BaseStore
from ..._capabilities import Capabilities, MetadataRules
from ..._features import Feature
from ..._lifecycle import made_concurrently
from ..._models import CollectionSpec, Metric
from ..._url import StoreURL
from ...exceptions import Action, Advised, ConfigurationError, ConflictError, NotFoundError, Step
from ...filters import FilterNode
from .._parts import Forward
from ._client import COLLECTION_NAMES, HNSW_KEYS, MAX_BATCH, ChromaConnection, resolve
from ._layout import ChromaLayout, layout_option
from ._mapping import RecordMapping
from ._reader import Reader
from ._write import NO_TEXT, Writer
from .filters import ChromaFilterCompiler, Where

__all__ = ["ChromaStore"]

_SPACES: dict[Metric, str] = {
    Metric.COSINE: "cosine",
    Metric.DOT: "ip",
    Metric.EUCLIDEAN: "l2",
}
_METRICS: dict[str, Metric] = {space: metric for metric, space in _SPACES.items()}

META_DIMENSION = "vectorport:dimension"
META_METRIC = "vectorport:metric"
META_MODEL = "vectorport:embedding_model"

# Chroma 1.5 writes one record's scalar metadata (the document is one more key) and, apart,
# its list elements, each as one SQLite INSERT of 6 parameters per row: past 32,766 // 6 the
# write is logged, then fails to apply, and so does every later read and write.
_MAX_LIST_ITEMS = 5_461
_MAX_KEYS = 5_461 - 2  # one is kept for the document, one for the no-text marker
_F64_EXACT = 2**53


# Chroma records its default embedding function (all-MiniLM-L6-v2, 384 dimensions) on every
# collection created without one, also when the caller then adds vectors of their own.
_DEFAULT_EF_DIMENSION = 384


def _foreign_model(config: Mapping[str, Any], dimension: int) -> str | None:
    """The model of the collection's embedding-function configuration:
    ``sentence-transformers:<model>`` for Chroma's ``SentenceTransformerEmbeddingFunction``
    (a model vectorport runs, by name or folder), ``chroma:<model>`` for any other. Chroma's
    default one is recorded even on collections whose vectors came from elsewhere, so it
    counts only when the dimension is its own (384).

    >>> _foreign_model({"embedding_function": {"type": "known", "name": "sentence_transformer",
    ...     "config": {"model_name": "/models/bge-small"}}}, 384)
    'sentence-transformers:/models/bge-small'
    """
    ef = config.get("embedding_function") or {}
    if ef.get("type") != "known":
        return None
    inner = ef.get("config") or {}
    name = inner.get("model_name") or inner.get("model") or ef.get("name")
    if ef.get("name") == "default" and dimension != _DEFAULT_EF_DIMENSION:
        return None
    if ef.get("name") == "sentence_transformer" and name:
        return f"sentence-transformers:{name}"
    return f"chroma:{name}" if name else None


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

    Composed of collaborators (``vectorport.backends._parts``): ``connection``
    (:class:`._client.ChromaConnection`: the client, made on first use for an embedded
    directory, and the open collection), ``mapping`` (:class:`._mapping.RecordMapping`: the
    layout and records to and from Chroma's fields), ``reader`` (:class:`._reader.Reader`: get,
    query, scan pages, count) and ``writer`` (:class:`._write.Writer`: full replaces).
    """

    name: ClassVar[str] = "chroma"
    url_params = frozenset({"collection", "layout", *HNSW_KEYS})
    """An embedded store's; a server's also take ``tenant`` and ``database``."""
    capabilities: ClassVar[Capabilities] = Capabilities(
        metrics=frozenset(Metric),
        max_dimension=65_536,
        max_write_batch=MAX_BATCH,
        max_read_batch=MAX_BATCH,
        max_delete_batch=MAX_BATCH,
        max_scan_page=MAX_BATCH - 1,  # one more row is read to check the cursor
        max_top_k=MAX_BATCH,
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
        self._hnsw = dict(hnsw or {})
        self._dimension_hint: int | None = None
        self._compiler = ChromaFilterCompiler()
        where = f"chroma collection {collection!r} at {url.masked}"
        self.connection = ChromaConnection(collection, where, client, path)
        self.mapping = RecordMapping(layout)
        self.reader = Reader(self)
        self.writer = Writer(self)

    # ----------------------------------------------------------------- construction
    @classmethod
    def processes(cls, url: StoreURL, *, writes: bool = False) -> str:
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
        return self.mapping.layout

    def _collection_capabilities(self, declared: Capabilities) -> Capabilities:
        return self.mapping.capabilities(declared)

    def bind(
        self,
        dimension: int | None = None,
        metric: str | Metric | None = None,
        embedding_model: str | None = None,
    ) -> CollectionSpec:
        # An empty collection made by another tool has no dimension yet: adopt the caller's.
        self._dimension_hint = dimension
        if dimension is None:
            self.connection.check_database()
        return super().bind(dimension, metric, embedding_model)

    def info(self) -> dict[str, Any]:
        """The base description plus where Chroma runs, its version and the index settings."""
        out = super().info()
        conn = self.connection
        coll = conn.collection()
        with conn.op("info"):
            version = str(conn.api().get_version())
            config = dict(coll.configuration_json or {})
        out["layout"] = self.layout.to_dict()
        out["chroma"] = {
            "mode": "embedded" if conn.path is not None else "http",
            "path": conn.path,
            "chroma_version": version,
            "index": {
                name: dict(value) for name, value in config.items() if name in ("hnsw", "spann") and value
            },
        }
        return out

    close = Forward("connection", ChromaConnection.close)

    # ----------------------------------------------------------------- collections
    def _describe_collection(self) -> CollectionSpec | None:
        conn = self.connection
        conn.coll = None
        try:
            coll = conn.collection()
        except NotFoundError:
            return None
        meta: dict[str, Any] = dict(coll.metadata or {})
        config: dict[str, Any] = dict(coll.configuration_json or {})
        space = (config.get("hnsw") or {}).get("space") or (config.get("spann") or {}).get("space")
        space = space or meta.get("hnsw:space") or "l2"
        metric = _METRICS.get(str(space))
        if metric is None:
            raise ConfigurationError(f"{conn.where}: unknown Chroma space {space!r}")
        recorded = meta.get(META_METRIC)
        if recorded is not None and Metric.parse(recorded) is not metric:
            raise ConflictError(f"{conn.where}: metadata says {recorded} but the index space is {space!r}")
        dimension = meta.get(META_DIMENSION)
        actual = coll.get_model().dimension
        if actual is None:
            # Chroma sets the dimension on the first write; a collection migrated from an older
            # Chroma may hold records without it: read it off one vector.
            with conn.op("describe"):
                peek = coll.get(limit=1, include=["embeddings"])["embeddings"]
            if peek is not None and len(peek):
                actual = len(peek[0])
        if dimension is not None and actual is not None and int(dimension) != int(actual):
            raise ConflictError(
                f"{conn.where}: metadata says {dimension} dimensions but it holds {actual}-dim vectors"
            )
        dimension = dimension or actual or self._dimension_hint
        if dimension is None:
            raise ConfigurationError(
                Advised.of("{} is empty and records no dimension; {}", conn.where, Step(Action.ADOPT))
            )
        model = meta.get(META_MODEL) or _foreign_model(config, int(dimension))
        with conn.op("describe"):
            self.mapping.open(coll)
        return CollectionSpec(self.collection, int(dimension), metric, model)

    def _create_collection(self, spec: CollectionSpec) -> None:
        meta: dict[str, Any] = {META_DIMENSION: spec.dimension, META_METRIC: spec.metric.value}
        if spec.embedding_model:
            meta[META_MODEL] = spec.embedding_model
        config = {"hnsw": {"space": _SPACES[spec.metric], **self._hnsw}}
        conn = self.connection
        conn.claim_writes()
        try:
            with conn.op("create"):
                conn.coll = conn.api().create_collection(
                    self.collection, configuration=config, metadata=meta, embedding_function=None
                )
        except ConflictError:
            if not made_concurrently(self, spec):
                raise

    def _drop_collection(self) -> None:
        conn = self.connection
        try:
            coll = conn.collection()
        except NotFoundError:
            return
        conn.claim_writes()
        # Delete the records first: delete_collection leaves list-valued metadata behind,
        # which reappears on the next records written anywhere (chroma-core/chroma#7594).
        with conn.op("drop"):
            while ids := coll.get(limit=conn.batch, include=[])["ids"]:
                coll.delete(ids=ids)
        try:
            with conn.op("drop"):
                conn.api().delete_collection(self.collection)
        except NotFoundError:
            pass
        conn.coll = None

    def list_collections(self) -> list[str]:
        conn = self.connection
        if conn.client is None and not conn.has_database():
            return []  # no database here: do not create one by looking
        with conn.op("list collections"):
            return sorted(c.name for c in conn.api().list_collections())

    # ----------------------------------------------------------------- records
    _write = Forward("writer", Writer.write)
    split_replace = Forward("writer", Writer.split_replace)
    _read = Forward("reader", Reader.read)

    def _remove(self, keys: Sequence[str]) -> None:
        conn = self.connection
        coll = conn.collection()
        conn.claim_writes()
        with conn.op("delete"):
            coll.delete(ids=list(keys))

    def _compile_filter(self, where: FilterNode) -> Where:
        return self._compiler.where(where)

    _search = Forward("reader", Reader.search)
    _scan_page = Forward("reader", Reader.scan_page)
    _count = Forward("reader", Reader.count)
