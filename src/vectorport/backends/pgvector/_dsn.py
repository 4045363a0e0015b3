"""Where a pgvector store connects: libpq's connection parameters, read by the libraries that
define each URL form, kept apart from vectorport's own options (``table=``, ``layout=`` …).

* ``postgresql://…`` / ``postgres://…`` is a libpq connection URI: libpq parses it
  (:func:`psycopg.conninfo.conninfo_to_dict`), so an empty host (``postgresql:///db``: the local
  socket or ``PGHOST``), a socket directory (``?host=/var/run/postgresql``, or percent-encoded as
  the host), ``service=``, several hosts and percent-encoded passwords mean what they mean to
  ``psql``. vectorport only takes its own options out of the query before handing it over.
* ``postgresql+DRIVER://…`` is a SQLAlchemy URL: :func:`sqlalchemy.engine.make_url` parses it and
  SQLAlchemy's psycopg dialect turns it into connection parameters, whatever the driver named
  (``psycopg``, ``psycopg2``, ``asyncpg``): vectorport connects with psycopg 3. asyncpg's
  ``ssl=`` becomes libpq's ``sslmode=``.

What is left unset (host, port, user, password, database) libpq takes from its ``PG*``
environment variables, the service file and ``~/.pgpass`` when connecting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..._url import StoreURL
from ...exceptions import ConfigurationError, NotInstalledError
from ._options import OWN_OPTIONS, libpq_keywords
from ._schemes import LIBPQ_SCHEMES, SQLALCHEMY_SCHEMES

__all__ = ["LIBPQ_SCHEMES", "SQLALCHEMY_SCHEMES", "connection_params", "conninfo", "url_parameters"]


# asyncpg's ssl= takes libpq's sslmode words, and true/false
_ASYNCPG_SSL = {"true": "require", "false": "disable", "1": "require", "0": "disable"}


def _hint() -> str:
    return (
        f"the pgvector options {', '.join(sorted(OWN_OPTIONS))} and libpq's connection parameters "
        "(sslmode, connect_timeout, application_name, options, host, service …)"
    )


def url_parameters(url: StoreURL) -> tuple[frozenset[str], str]:
    """The parameters a ``postgresql://`` or ``postgresql+DRIVER://`` URL may carry (vectorport's
    options and libpq's; asyncpg's ``ssl``, read as ``sslmode``), and how an error lists them."""
    known = OWN_OPTIONS | libpq_keywords()
    return (known | {"ssl"} if url.scheme.endswith("+asyncpg") else known), _hint()


def connection_params(url: StoreURL) -> tuple[dict[str, str], dict[str, str]]:
    """``(libpq connection parameters, vectorport options)`` of a ``postgresql://`` or
    ``postgresql+DRIVER://`` URL whose parameters are all :func:`url_parameters`."""
    if url.scheme in LIBPQ_SCHEMES:
        return _from_libpq_uri(url)
    if url.scheme in SQLALCHEMY_SCHEMES:
        return _from_sqlalchemy_url(url)
    raise ConfigurationError(f"pgvector does not serve the URL scheme {url.scheme!r}")


def conninfo(params: Mapping[str, str]) -> str:
    """The ``key=value`` connection string of ``params`` (libpq's quoting, by psycopg)."""
    from psycopg.conninfo import make_conninfo

    return make_conninfo("", **params)


def _check_userinfo(url: StoreURL, host: str | None = None) -> None:
    # An "@" after the host part means an unencoded "@" or "/" in the password: libpq would
    # take part of the password for the host or the database and show it in errors.
    parts = urlsplit(url.raw.partition("?")[0])
    if "@" in parts.path or parts.netloc.count("@") > 1 or "@" in (host or ""):
        raise ConfigurationError(
            f"{url.scheme}://…: the password (or user name) holds a '/' or '@' that is not "
            "percent-encoded; write '@' as %40, '/' as %2F and ':' as %3A in the URL (or set PGPASSWORD "
            "or ~/.pgpass instead)"
        )


def _from_libpq_uri(url: StoreURL) -> tuple[dict[str, str], dict[str, str]]:
    from psycopg import ProgrammingError
    from psycopg.conninfo import conninfo_to_dict

    _check_userinfo(url)
    base, _, query = url.raw.partition("?")
    query = query.partition("#")[0]
    own: list[str] = []
    rest: list[str] = []
    for pair in query.split("&"):
        if pair:
            # the raw pair goes to libpq unchanged: it decodes %XX itself and leaves "+" alone
            (own if unquote(pair.partition("=")[0]) in OWN_OPTIONS else rest).append(pair)
    try:
        params = conninfo_to_dict(base + ("?" + "&".join(rest) if rest else ""))
    except ProgrammingError as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigurationError(f"{url.masked}: libpq cannot read this URL: {detail}") from None
    options = dict(parse_qsl("&".join(own), keep_blank_values=True))
    return {k: str(v) for k, v in params.items() if v is not None}, options


def _from_sqlalchemy_url(url: StoreURL) -> tuple[dict[str, str], dict[str, str]]:
    try:
        from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError
    except ImportError:
        raise NotInstalledError("pgvector", "pgvector", "sqlalchemy") from None
    try:
        parsed = make_url(url.raw)
    except (ArgumentError, ValueError) as exc:
        raise ConfigurationError(f"{url.masked}: SQLAlchemy cannot read this URL: {exc}") from None
    if parsed.host and "@" in parsed.host:
        _check_userinfo(url, parsed.host)
    own = [k for k in parsed.query if k in OWN_OPTIONS]
    options: dict[str, str] = {}
    for name in own:
        value = parsed.query[name]
        options[name] = value if isinstance(value, str) else value[-1]
    rest = parsed.difference_update_query(own)
    ssl = rest.query.get("ssl")
    if parsed.get_driver_name() == "asyncpg" and isinstance(ssl, str):
        rest = rest.difference_update_query(["ssl"]).update_query_dict(
            {"sslmode": _ASYNCPG_SSL.get(ssl.lower(), ssl.lower())}
        )
    # what SQLAlchemy's psycopg dialect hands psycopg.connect() for this URL
    _, kwargs = PGDialect_psycopg().create_connect_args(rest)  # type: ignore[no-untyped-call]
    params: dict[str, str] = {}
    for key, value in kwargs.items():
        params[key] = _one(key, value, url)
    return params, options


def _one(key: str, value: Any, url: StoreURL) -> str:
    if isinstance(value, (tuple, list)):
        raise ConfigurationError(f"{url.masked}: the URL parameter {key} is given more than once")
    return str(value)
