"""Reaching Chroma: the embedded ``PersistentClient`` or a ``chroma run`` server's
``HttpClient``, from a URL and options; one store's connection (:class:`ChromaConnection`);
closing what chromadb leaves open."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import chromadb
from chromadb.api import ClientAPI
from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT, Settings

from ..._names import NameRule
from ..._suggest import what_exists
from ..._url import StoreURL
from ...exceptions import Action, Advised, ConfigurationError, NotFoundError, Step
from . import _writers as writers
from .errors import map_errors

__all__ = [
    "COLLECTION_NAMES",
    "DATABASE_FILE",
    "HNSW_KEYS",
    "MAX_BATCH",
    "ChromaConnection",
    "Target",
    "close_client",
    "databases_in",
    "embedded_client",
    "resolve",
]

DATABASE_FILE = "chroma.sqlite3"  # what PersistentClient creates in its directory
MAX_BATCH = 5_461  # get_max_batch_size() of a local/`chroma run` Chroma 1.5: 32766 // 6


def databases_in(folder: str) -> list[str] | None:
    """Names of the subfolders of ``folder`` that hold a Chroma database (``None``: unreadable)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    return sorted(n for n in names if os.path.isfile(os.path.join(folder, n, DATABASE_FILE)))


HNSW_KEYS = (
    "batch_size",
    "ef_construction",
    "ef_search",
    "max_neighbors",
    "num_threads",
    "resize_factor",
    "sync_threshold",
)
_HNSW_FLOATS = frozenset({"resize_factor"})

# chromadb 1.x validates names in its Rust core (chroma_types' validate_name), as its errors say:
# "3-512 characters from [a-zA-Z0-9._-], starting and ending with a character in [a-zA-Z0-9]",
# "does not contain two consecutive periods", "not a valid ip address".
COLLECTION_NAMES = NameRule(
    "Chroma collection name",
    "3-512 characters (ASCII letters, digits, dots, underscores, hyphens), beginning and ending "
    "with a letter or digit, without '..' and not an IP address",
    min_length=3,
    max_length=512,
    chars="a-zA-Z0-9._-",
    edges="a-zA-Z0-9",
    no_double_dots=True,
    no_ip_address=True,
)


@dataclass(frozen=True)
class Target:
    """Where a chroma URL points: the collection, HNSW settings, and either the embedded
    directory (``path``; the client is made on first use) or a connected ``client``."""

    collection: str
    hnsw: dict[str, int | float]
    path: str | None = None
    client: Any = None


def resolve(url: StoreURL, options: Mapping[str, Any]) -> Target:
    """Parse a ``chroma://`` / ``chroma+http(s)://`` URL and ``connect()`` options; connect to a
    server (not to an embedded directory)."""
    params = dict(url.params)
    opts = dict(options)
    # collection= in the options (connect()'s, or a migration's derived name) replaces the URL's
    named, in_url = opts.pop("collection", None), params.pop("collection", None)
    collection = named or in_url
    hnsw = _hnsw(params, opts)
    if url.scheme == "chroma":
        if opts or params:
            raise ConfigurationError(
                f"chroma: unknown options for an embedded store: {sorted({*opts, *params})}"
            )
        path = local_path(url)
        if not collection:
            raise COLLECTION_NAMES.missing(
                f"{url.masked}: name the collection, e.g. chroma://{path}?collection=docs"
            )
        check_name(collection)
        return Target(collection, hnsw, path=path)
    if url.scheme not in ("chroma+http", "chroma+https"):
        raise ConfigurationError(f"chroma: unsupported URL scheme {url.scheme!r}")
    collection = collection or url.path.strip("/")
    if not collection:
        raise COLLECTION_NAMES.missing(
            f"{url.masked}: name the collection, e.g. {url.scheme}://host:8000?collection=docs"
        )
    check_name(collection)
    tenant = params.pop("tenant", None) or opts.pop("tenant", DEFAULT_TENANT)
    database = params.pop("database", None) or opts.pop("database", DEFAULT_DATABASE)
    headers = opts.pop("headers", None)
    if opts or params:
        raise ConfigurationError(f"chroma: unknown options {sorted({*opts, *params})}")
    https = url.scheme == "chroma+https"
    with map_errors(f"chroma server {url.masked}: connect"):
        try:
            client = chromadb.HttpClient(
                host=url.host or "localhost",
                port=url.port or (443 if https else 8000),
                ssl=https,
                headers=headers,
                settings=_settings(),
                tenant=tenant,
                database=database,
            )
        except BaseException as exc:
            _close_failed_client(exc)
            raise
    return Target(collection, hnsw, client=client)


def _hnsw(params: dict[str, Any], options: dict[str, Any]) -> dict[str, int | float]:
    """HNSW settings from URL parameters and options (both consumed)."""
    hnsw: dict[str, int | float] = dict(options.pop("hnsw", None) or {})
    for key in HNSW_KEYS:
        raw = params.pop(key, None)
        if key in options:
            raw = options.pop(key)
        if raw is not None:
            try:
                hnsw[key] = float(raw) if key in _HNSW_FLOATS else int(raw)
            except (TypeError, ValueError):
                raise ConfigurationError(f"chroma: {key} must be a number, got {raw!r}") from None
    unknown_hnsw = set(hnsw) - set(HNSW_KEYS)
    if unknown_hnsw:
        raise ConfigurationError(f"chroma: unknown HNSW settings {sorted(unknown_hnsw)}")
    return hnsw


def local_path(url: StoreURL) -> str:
    """The absolute directory of an embedded ``chroma://`` URL."""
    # Taken from the raw URL: urlsplit would lower-case a relative path's first part.
    rest = url.raw.split("://", 1)[1]
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    path = unquote(rest)
    if not path:
        raise ConfigurationError(f"{url.masked}: name a directory, e.g. chroma:///abs/dir or chroma://./dir")
    return os.path.abspath(os.path.expanduser(path))


def check_name(name: str) -> None:
    """Refuse a name Chroma would refuse, before any I/O."""
    COLLECTION_NAMES.check(name, "chroma")


def embedded_client(path: str) -> Any:
    """A ``PersistentClient`` on ``path`` (creates the database when missing).

    Two processes creating the same new directory at once (two migrations into one new
    target) each initialised the database and lost each other's collections; the first
    initialisation is serialised by a lock file inside the new directory, removed once the
    database exists (it was once left beside the directory, in the user's working directory).
    A process that waited on it finds the database made; one that comes later takes no lock.
    Within a process, clients are made one at a time: chromadb shares one system per path, and
    two threads making the first client of a path at once broke each other's ("could not connect
    to tenant default_tenant").
    """
    with _MAKING:
        return _made_client(path)


_MAKING = threading.Lock()


def _made_client(path: str) -> Any:
    if os.path.exists(os.path.join(path, _DATABASE)):
        return chromadb.PersistentClient(path=path, settings=_settings())
    lock_path = os.path.join(path, ".vectorport-init.lock")
    try:
        os.makedirs(path, exist_ok=True)
        lock = open(lock_path, "a+b")  # noqa: SIM115 - held across the initialisation below
    except OSError:  # a read-only parent: nobody can be creating a database there
        return chromadb.PersistentClient(path=path, settings=_settings())
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            client = chromadb.PersistentClient(path=path, settings=_settings())
            client.heartbeat()  # the database file and its schema exist before the lock is let go
            with contextlib.suppress(OSError):
                os.unlink(lock_path)
            return client
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


_DATABASE = "chroma.sqlite3"
"""The file a ``PersistentClient`` keeps its catalog in: there once the database is made."""


def close_client(client: Any) -> None:
    """Close a client and the HTTP sessions chromadb leaves open."""
    sessions = _sessions(client)
    client.close()
    for session in sessions:
        session.close()


def _settings() -> Settings:
    # A new one per client: HttpClient writes its host and port into the object it is given.
    return Settings(anonymized_telemetry=False)


def _sessions(client: Any) -> list[Any]:
    """The httpx sessions of an HttpClient and its internal admin client. chromadb gives each
    a System of its own but never closes their sessions, leaking sockets (ResourceWarning);
    PersistentClient's API object has none."""
    admin = getattr(client, "_admin_client", None)
    servers = [getattr(client, "_server", None), getattr(admin, "_server", None)]
    return [s for s in (getattr(server, "_session", None) for server in servers) if s is not None]


def _close_failed_client(exc: BaseException) -> None:
    """Close the sessions of an HttpClient whose constructor raised (no server, no tenant):
    chromadb releases its Systems then, but not their sessions, and the caller never gets the
    object. It is the ``self`` of a frame in the traceback."""
    tb = exc.__traceback__
    while tb is not None:
        obj = tb.tb_frame.f_locals.get("self")
        if isinstance(obj, ClientAPI):
            for session in _sessions(obj):
                session.close()
        tb = tb.tb_next


class ChromaConnection:
    """The chromadb client of one store and its open collection.

    An embedded ``PersistentClient`` (``path``) is made on first use, so opening a collection
    that is not there leaves no new database behind (a mistyped path, ``vectorport migrate
    --plan``); a server's ``HttpClient`` comes connected. ``where`` names the collection in
    error messages. After :meth:`close` every use raises."""

    def __init__(self, name: str, where: str, client: Any = None, path: str | None = None) -> None:
        self.name = name
        self.where = where
        self.path = path
        self.client: Any = None
        self.coll: Any = None
        """The open collection (``None``: opened on next use)."""
        self.batch = MAX_BATCH
        """Records per call: the client's ``get_max_batch_size()``, at most :data:`MAX_BATCH`."""
        self._closed = False
        self._claimed: str | None = None
        """This connection's claim on its collection for its process's writes (embedded)."""
        if client is not None:
            self._attach(client)

    def _attach(self, client: Any) -> None:
        self.client = client
        with map_errors(f"{self.where}: max batch size"):
            self.batch = max(1, min(MAX_BATCH, int(client.get_max_batch_size())))

    def api(self) -> Any:
        """The chromadb client; an embedded one is made now if it is not yet."""
        if self._closed:
            raise ConfigurationError(f"{self.where} is closed")
        if self.client is None:
            assert self.path is not None
            with map_errors(f"chroma at {self.path}: open"):
                client = embedded_client(self.path)
            self._attach(client)
        return self.client

    def claim_writes(self) -> None:
        """Before the first write of an embedded connection: claim the directory for this
        process (:mod:`._writers`; a server takes writers from any process)."""
        if self.path is None or self._claimed is not None:
            return
        self._claimed = writers.claim(self.path, self.name, self.where)

    def op(self, what: str) -> AbstractContextManager[None]:
        """Chroma's errors inside the block mapped, naming the collection and ``what``."""
        return map_errors(f"{self.where}: {what}")

    def collection(self) -> Any:
        """The collection, opened on first use (:class:`NotFoundError` when missing)."""
        client = self.api()
        if self.coll is None:
            with self.op("open"):
                self.coll = client.get_collection(self.name, embedding_function=None)
        return self.coll

    def has_database(self) -> bool:
        """Whether there is a database to open (always for a server)."""
        return self.path is None or os.path.isfile(os.path.join(self.path, DATABASE_FILE))

    def check_database(self) -> None:
        """Before an embedded client is made to open (not create) a collection: refuse a
        directory that holds no database, naming the databases beside it."""
        if self.client is not None or self.path is None or self.has_database():
            return
        parent, name = os.path.split(os.path.abspath(self.path))
        raise NotFoundError(
            Advised.of(
                "{}: there is no Chroma database in {} (no {}){}; check the path, or {}",
                self.where,
                self.path,
                DATABASE_FILE,
                what_exists("Chroma databases", name, databases_in(parent), f"in {parent}"),
                Step(Action.CREATE_THERE),
            )
        )

    def close(self) -> None:
        self._closed = True
        client, self.client, self.coll = self.client, None, None
        if client is not None:
            close_client(client)
        claimed, self._claimed = self._claimed, None
        if claimed is not None:
            writers.release(claimed)
