"""Store URLs: parsing, and masking of secrets in everything printed.

A query parameter is secret when its *last* word names a secret: ``password``, ``key``,
``api_key``, ``sslkey``, ``aws_session_token``, ``credentials`` are masked; ``key_column`` (a
column), ``auth_provider`` (a class name) or ``token_url`` are not. The rule knows no backend's
option names, so a backend's plain options need no declaration. The password in the user info
is shown as ``user:***@host``, as SQLAlchemy's ``render_as_string(hide_password=True)`` does.

Here a URL is only split into scheme, parameters and what to mask: a backend reads its own form
with the library that defines it (pgvector: libpq for ``postgresql://``, SQLAlchemy's
``make_url`` for ``postgresql+DRIVER://``; see ``backends/pgvector/_dsn.py``), and nothing
rebuilds a URL from its parts. :meth:`StoreURL.parse` also takes a SQLAlchemy ``URL``,
``Engine`` or ``AsyncEngine`` (rendered by SQLAlchemy, credentials included); a mapped class
with ``bind=`` is read by the backend of the bound engine (:func:`vectorport.connect`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit

from .exceptions import ConfigurationError

__all__ = ["StoreURL", "is_mapped", "lent_engine", "mask_url"]

_SECRET_WORD = re.compile(r"(?i)pass|secret|token|key|auth|credential")
_WORD_BREAK = re.compile(r"[\W_]+")
MASK = "***"


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL. ``str()`` and ``repr()`` never show a password or secret parameter."""

    raw: str
    scheme: str
    username: str | None
    password: str | None
    host: str | None
    port: int | None
    path: str
    params: dict[str, str]

    @classmethod
    def parse(cls, url: Any) -> StoreURL:
        """Parse a URL string, or what a SQLAlchemy application holds: a ``URL``, an ``Engine`` or
        an ``AsyncEngine`` (its URL, credentials included, rendered by SQLAlchemy itself)."""
        url = _sqlalchemy_url(url)
        if not isinstance(url, str) or "://" not in url:
            raise ConfigurationError(
                f"not a store URL: {mask_url(str(url))!r}; expected SCHEME://…, e.g. memory://docs, "
                "chroma:///path/to/dir?collection=docs, postgresql://user@host/db?table=docs, "
                "s3vectors://bucket/index"
            )
        try:
            parts = _split(url)
        except ValueError as exc:  # an unclosed or invalid [IPv6] host
            raise ConfigurationError(
                f"bad host in {mask_url(url)!r}: {exc}; an IPv6 address is written in brackets, "
                "e.g. postgresql://user@[::1]:5432/db"
            ) from None
        try:
            port = parts.port
        except ValueError as exc:
            hint = (
                "; a '/', '@' or ':' in a password must be percent-encoded (%2F, %40, %3A)"
                if "@" in parts.path
                else ""
            )
            raise ConfigurationError(f"bad port in {mask_url(url)!r}: {exc}{hint}") from None
        return cls(
            raw=url,
            scheme=url.split("://", 1)[0].lower(),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
            host=parts.hostname,
            port=port,
            path=unquote(parts.path),
            params=dict(parse_qsl(parts.query, keep_blank_values=True)),
        )

    @property
    def masked(self) -> str:
        """The URL with its password and secret-looking query values replaced by ``***``."""
        return mask_url(self.raw)

    def param(self, name: str, default: str | None = None) -> str | None:
        return self.params.get(name, default)

    def __str__(self) -> str:
        return self.masked

    def __repr__(self) -> str:
        return f"StoreURL({self.masked!r})"


def _split(url: str) -> SplitResult:
    """``urlsplit`` of the part after the scheme: a scheme such as SQLAlchemy's
    ``postgresql+psycopg_async`` (``_`` is no URL scheme character) is then split all the same."""
    _, sep, rest = url.partition("://")
    return urlsplit("//" + rest if sep else url)


def lent_engine(target: Any, options: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """An engine's store borrows the engine's connections: it goes to the backend as the
    ``sqlalchemy_engine`` option (beside the URL rendered from it)."""
    engine = getattr(target, "sync_engine", target)  # AsyncEngine → its Engine
    if not isinstance(target, str) and hasattr(engine, "dialect") and hasattr(engine, "pool"):
        return target, {**options, "sqlalchemy_engine": target}
    return target, options


def is_mapped(target: Any) -> bool:
    """A SQLAlchemy mapped class or ``Table`` (duck-typed: SQLAlchemy is not imported)."""
    table = getattr(target, "__table__", target)
    return hasattr(table, "primary_key") and hasattr(table, "columns") and not isinstance(target, str)


def _sqlalchemy_url(obj: Any) -> Any:
    """The URL string of a SQLAlchemy ``URL``/``Engine``/``AsyncEngine`` (anything else as is);
    duck-typed so that importing vectorport never imports SQLAlchemy."""
    engine = getattr(obj, "sync_engine", obj)  # AsyncEngine → its Engine
    if not isinstance(engine, str) and hasattr(engine, "dialect") and hasattr(engine, "url"):
        obj = engine.url
    render = getattr(obj, "render_as_string", None)
    if callable(render) and not isinstance(obj, str):
        return render(hide_password=False)
    return obj


def _secret(param: str) -> bool:
    words = [w for w in _WORD_BREAK.split(param) if w]
    return bool(words) and bool(_SECRET_WORD.search(words[-1]))


_USERINFO = re.compile(r"(//[^/?#@:]*):[^/?#@]*@")
_SECRET_PARAM = re.compile(r"([?&][^=&#]*(?:pass|secret|token|key|auth|credential)[^=&#]*=)[^&#]*", re.I)


def _mask_crudely(url: str) -> str:
    """What :func:`mask_url` does, for a string ``urlsplit`` refuses (a bad IPv6 host): the
    ``user:password@`` of every URL in it and every secret-looking parameter's value."""
    return _SECRET_PARAM.sub(rf"\1{MASK}", _USERINFO.sub(rf"\1:{MASK}@", url))


def _mask_value(name: str, value: str) -> str:
    if _secret(name) and value:
        return MASK
    # a URL given as a parameter (endpoint_url=http://user:SECRET@host) hides its own password
    shown = mask_url(value) if "://" in value else value
    return quote(shown, safe="/:,*@")


def mask_url(url: str) -> str:
    """Hide the password and secret query values of a URL (safe on any string), and those of a
    URL given as a query value (``endpoint_url=``).

    >>> mask_url("s3vectors://b/i?endpoint_url=http://user:SECRET@host:9000&aws_secret_access_key=x")
    's3vectors://b/i?endpoint_url=http://user:***@host:9000&aws_secret_access_key=***'
    >>> mask_url("postgresql://u:SECRET@[zz::1]/db")
    'postgresql://u:***@[zz::1]/db'
    """
    try:
        parts = _split(url)
    except ValueError:
        return _mask_crudely(url)
    netloc, path = parts.netloc, parts.path
    # the last "@" before the query ends the user info: a password with an unencoded "/" (which
    # SQLAlchemy's make_url accepts) must not leak through what urlsplit took for the path
    authority = url.split("://", 1)[1].split("?", 1)[0].split("#", 1)[0] if "://" in url else ""
    if "@" in authority:
        userinfo, _, hostpath = authority.rpartition("@")
        if ":" in userinfo:
            hostport, slash, rest = hostpath.partition("/")
            netloc, path = f"{userinfo.split(':', 1)[0]}:{MASK}@{hostport}", f"{slash}{rest}"
    query = "&".join(f"{k}={_mask_value(k, v)}" for k, v in parse_qsl(parts.query, keep_blank_values=True))
    out = f"{url.split('://', 1)[0]}://{netloc}{path}" if "://" in url else f"{netloc}{path}"
    if query:
        out += f"?{query}"
    if parts.fragment:
        out += f"#{parts.fragment}"
    return out
