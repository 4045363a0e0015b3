"""Backends found by URL scheme: a registry of *strings* imported lazily (as in fsspec), plus
third-party backends registered under the ``vectorport.backends`` entry-point group."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from ._base import BaseStore
from ._models import Metric
from ._url import StoreURL
from .exceptions import ConfigurationError, NotInstalledError

__all__ = ["BackendInfo", "available_backends", "connect", "resolve"]


@dataclass(frozen=True)
class BackendInfo:
    """A backend the registry knows: its name, URL schemes, class path and pip extra."""

    name: str
    schemes: tuple[str, ...]
    target: str
    extra: str
    requires: tuple[str, ...]

    @property
    def installed(self) -> bool:
        """Are the driver modules importable (checked without importing them)?"""
        return all(importlib.util.find_spec(mod) is not None for mod in self.requires)

    def missing(self) -> str | None:
        return next((m for m in self.requires if importlib.util.find_spec(m) is None), None)

    def load(self) -> type[BaseStore[Any]]:
        missing = self.missing()
        if missing:
            raise NotInstalledError(self.name, self.extra, missing)
        module, _, attr = self.target.partition(":")
        cls = getattr(importlib.import_module(module), attr)
        if not (isinstance(cls, type) and issubclass(cls, BaseStore)):
            raise ConfigurationError(f"{self.target} is not a vectorport BaseStore subclass")
        return cls


BUILTIN: tuple[BackendInfo, ...] = (
    BackendInfo("memory", ("memory",), "vectorport.backends.memory:MemoryStore", "", ()),
    BackendInfo(
        "pgvector",
        (
            "pgvector",
            "postgresql",
            "postgres",
            # SQLAlchemy URLs: every driver's runs on psycopg (backends/pgvector/_dsn.py)
            "postgresql+asyncpg",
            "postgresql+pg8000",
            "postgresql+psycopg",
            "postgresql+psycopg2",
            "postgresql+psycopg2cffi",
            "postgresql+psycopg_async",
        ),
        "vectorport.backends.pgvector:PgVectorStore",
        "pgvector",
        ("psycopg",),
    ),
    BackendInfo(
        "chroma",
        ("chroma", "chroma+http", "chroma+https"),
        "vectorport.backends.chroma:ChromaStore",
        "chroma",
        ("chromadb",),
    ),
    BackendInfo(
        "s3vectors",
        ("s3vectors", "supabase"),
        "vectorport.backends.s3vectors:S3VectorsStore",
        "s3vectors",
        ("boto3",),
    ),
    BackendInfo("parquet", ("parquet",), "vectorport.backends.parquet:ParquetStore", "parquet", ("pyarrow",)),
)


def available_backends() -> list[BackendInfo]:
    """Built-in backends and those registered by other packages' entry points."""
    known = {b.name: b for b in BUILTIN}
    targets = {b.target for b in BUILTIN}
    extra: dict[str, list[str]] = {}
    for ep in entry_points(group="vectorport.backends"):
        if ep.value in targets:
            continue
        extra.setdefault(ep.value, []).append(ep.name)
    for target, schemes in sorted(extra.items()):
        name = schemes[0]
        known.setdefault(name, BackendInfo(name, tuple(schemes), target, "", ()))
    return list(known.values())


def resolve(scheme: str) -> BackendInfo:
    """The backend serving a URL scheme."""
    for info in available_backends():
        if scheme in info.schemes:
            return info
    schemes = sorted(s for b in available_backends() for s in b.schemes)
    raise ConfigurationError(f"no backend for the URL scheme {scheme!r}; known schemes: {', '.join(schemes)}")


def connect(
    url: str,
    *,
    dimension: int | None = None,
    metric: str | Metric | None = None,
    embedding_model: str | None = None,
    **options: Any,
) -> BaseStore[Any]:
    """Open the collection a URL names, creating it when ``dimension`` is given and it is missing.

    With ``dimension`` (and ``metric``, default cosine) an existing collection is checked
    against them and a :class:`~vectorport.exceptions.ConfigurationError` says what differs.
    Backend-specific ``options`` go to the backend (see ``docs/backends/``).

    >>> import vectorport
    >>> store = vectorport.connect("memory://doctest-connect", dimension=3, metric="cosine")
    >>> store.spec.dimension
    3
    >>> store.drop()
    """
    parsed = StoreURL.parse(url)
    cls = resolve(parsed.scheme).load()
    store = cls.from_url(parsed, **options)
    try:
        store.bind(dimension, metric, embedding_model)
    except BaseException:
        store.close()
        raise
    return store
