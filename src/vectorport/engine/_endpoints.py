"""Opening the two ends of a migration from URLs or stores, without creating anything early."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._capabilities import Capabilities
from .._models import CollectionSpec
from .._protocol import VectorStore
from .._registry import connect, open_url, resolve
from .._url import StoreURL
from ..exceptions import ConfigurationError, InvalidNameError, NotFoundError
from ._names import TargetName, target_name

__all__ = ["Endpoint", "StoreLike", "count_or_none", "open_pair", "open_source", "probe_target"]

StoreLike = str | VectorStore
"""A store URL, or a store (bound, or for a target possibly not yet bound)."""


@dataclass
class Endpoint:
    """One end of a migration: the store, whether it exists yet, and who closes it."""

    store: VectorStore
    owned: bool
    """vectorport opened it from a URL, so vectorport closes it."""
    exists: bool
    """The collection exists (for a target: before this migration)."""
    url_string: str | None = None
    """The URL it was opened from (unmasked: needed to open more connections)."""
    naming: TargetName | None = None
    """For a target whose URL names no collection, or an invalid one: the name planned with."""

    @property
    def label(self) -> str:
        """The masked URL plus collection, for reports and checkpoints."""
        url = self.store.url.masked
        coll = getattr(self.store, "collection", None)
        return url if coll is None or coll in url else f"{url} (collection {coll})"

    @property
    def identity(self) -> tuple[str, str, int | None, str, str]:
        """Where the collection lives, normalised enough to tell two URLs for one collection
        (``pgvector://./pg`` and ``pgvector:///abs/pg``; ``postgres://`` and ``postgresql://``)."""
        url = self.store.url
        host, path = (url.host or "").lower(), url.path
        if host in (".", "~", ".."):  # a relative local path: pgvector://./data, chroma://./dir
            path, host = os.path.abspath(os.path.expanduser(host + path)), ""
        elif not host and path:
            path = os.path.abspath(path)
        coll = str(getattr(self.store, "collection", "") or "")
        return (self.store.name, host, url.port, path, coll)

    @property
    def capabilities(self) -> Capabilities:
        return self.store.capabilities

    @property
    def spec(self) -> CollectionSpec | None:
        return self.store.spec if self.exists else None

    def ensure(self, spec: CollectionSpec) -> CollectionSpec:
        """Create the collection when it does not exist (this is the migration's first write)."""
        if self.exists:
            return self.store.spec
        created = self.store.ensure(spec)
        self.exists = True
        return created

    def close(self) -> None:
        if self.owned:
            self.store.close()


def _bound(store: VectorStore) -> bool:
    try:
        _ = store.spec
    except NotFoundError:
        return False
    return True


def open_source(source: StoreLike, **options: Any) -> Endpoint:
    """Open the source collection; it must exist."""
    if isinstance(source, str):
        return Endpoint(connect(source, **options), owned=True, exists=True, url_string=source)
    if not _bound(source):
        raise ConfigurationError(f"the source store {source!r} is not bound to a collection")
    return Endpoint(source, owned=False, exists=True)


def probe_target(target: StoreLike, source_name: str | None = None, **options: Any) -> Endpoint:
    """Open the target if it exists; otherwise an unbound store to create it with later.

    Nothing is created here, so ``--plan`` writes nothing. With ``source_name``, a target URL
    that names no collection gets the source's name made valid for the target backend, and one
    that names an invalid collection is opened under a valid proposal; :attr:`Endpoint.naming`
    says so (and the plan refuses the invalid one).
    """
    if isinstance(target, str) and source_name is not None and "collection" not in options:
        try:
            return probe_target(target, **options)
        except InvalidNameError as exc:
            rule = resolve(StoreURL.parse(target).scheme).load().capabilities.collection_names
            if exc.rule != rule:  # another name in the URL (a bucket's): not the collection's
                raise
            naming = target_name(exc, source_name)
        endpoint = probe_target(target, **options, collection=naming.name)
        endpoint.naming = naming
        return endpoint
    if not isinstance(target, str):
        exists = _bound(target)
        if not exists:
            try:
                target.bind()  # an unbound store object: open its collection if it exists
                exists = True
            except NotFoundError:
                pass
        return Endpoint(target, owned=False, exists=exists)
    parsed = StoreURL.parse(target)
    store = open_url(parsed, options)
    try:
        store.bind()
    except NotFoundError:
        return Endpoint(store, owned=True, exists=False, url_string=target)
    except BaseException:
        store.close()
        raise
    return Endpoint(store, owned=True, exists=True, url_string=target)


def open_pair(
    source: StoreLike,
    target: StoreLike,
    source_options: Mapping[str, Any] | None,
    target_options: Mapping[str, Any] | None,
) -> tuple[Endpoint, Endpoint]:
    """The source (which must exist) and the target (probed: it may not exist yet)."""
    src = open_source(source, **dict(source_options or {}))
    try:
        dst = probe_target(target, src.store.spec.name, **dict(target_options or {}))
    except BaseException:
        src.close()
        raise
    return src, dst


def count_or_none(store: Any, shard: tuple[int, int] = (0, 1)) -> int | None:
    """The store's count (a shard's share of it), or ``None`` when the store cannot count."""
    try:
        n = int(store.count())
    except Exception:  # a count is only for progress, sizing and the "source changed" hint
        return None
    return n if shard[1] == 1 else -(-n // shard[1])
