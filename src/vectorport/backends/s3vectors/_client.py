"""Reaching a bucket: an ``s3vectors://`` or ``supabase://`` URL and its options parsed
(:func:`resolve`), bucket and index names checked, and the boto3 ``s3vectors`` client built (AWS
or a local server, or Supabase's variant)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..._names import NameRule
from ..._url import StoreURL, mask_url
from ...exceptions import ConfigurationError
from ._layout import layout_option
from ._text import text_search_option
from .errors import map_errors

__all__ = [
    "BUCKET_NAMES",
    "INDEX_NAMES",
    "Target",
    "boto_client",
    "check_names",
    "resolve",
    "snake",
    "supabase_client",
]

SUPABASE_PATH = "/storage/v1/vector"
SUPABASE_KEY_ENV = ("SUPABASE_SERVICE_ROLE_KEY", "SUPABASE_SERVICE_KEY", "SUPABASE_KEY")

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0"}

# https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-buckets-naming.html
BUCKET_NAMES = NameRule(
    "vector bucket name",
    "3-63 lowercase letters, digits and hyphens, beginning and ending with a letter or digit",
    min_length=3,
    max_length=63,
    chars="a-z0-9-",
    edges="a-z0-9",
    lowercase=True,
)
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/s3-vectors-indexes.html
INDEX_NAMES = NameRule(
    "S3 Vectors index name",
    "3-63 lowercase letters, digits, hyphens and dots, beginning and ending with a letter or digit",
    min_length=3,
    max_length=63,
    chars="a-z0-9.-",
    edges="a-z0-9",
    lowercase=True,
)


def check_names(url: StoreURL, bucket: str, index: str) -> None:
    BUCKET_NAMES.check(bucket, url.masked)
    INDEX_NAMES.check(index, url.masked)


def snake(operation: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in operation).lstrip("_")


def _boto_config(max_attempts: int, workers: int, **extra: Any) -> Any:
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "total_max_attempts": max(1, max_attempts)},
        max_pool_connections=max(10, workers * 2),
        connect_timeout=10,
        read_timeout=120,
        **extra,
    )


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` when it is an ``http(s)://HOST[:PORT][/path]`` URL without a user or
    password, else a :class:`ConfigurationError` that shows it masked: botocore would raise a
    bare ``ValueError`` (or, for a port out of range, fail inside request signing), and would
    print a password in its "could not connect" message. S3 Vectors and the local server take
    AWS credentials (or Supabase's key), never a password in the URL."""
    shown = mask_url(endpoint)
    hint = "e.g. endpoint_url=http://127.0.0.1:8333 or https://s3vectors.us-east-1.api.aws"
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError as exc:
        raise ConfigurationError(
            f"s3vectors option endpoint_url={shown!r} is not a URL ({exc}); {hint}"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"s3vectors option endpoint_url={shown!r} is not an http:// or https:// URL with a host; {hint}"
        )
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(
            f"s3vectors option endpoint_url={shown!r} holds a user name or password: requests are signed "
            "with AWS credentials (the usual chain, or profile=), so leave them out of the URL"
        )
    del port  # read for its check only: a port out of range raises above
    return endpoint


def _hostname(endpoint: str) -> str:
    try:
        return urlsplit(endpoint).hostname or ""
    except ValueError:  # botocore says what is wrong with it
        return ""


def boto_client(
    endpoint: str | None, region: str | None, profile: str | None, max_attempts: int, workers: int
) -> Any:
    import boto3

    if endpoint:
        check_endpoint(endpoint)
    # the session reads the AWS config (an unknown AWS_PROFILE fails here): inside the mapping
    with map_errors("s3vectors", "client setup"):
        session = boto3.session.Session(profile_name=profile, region_name=region)
        kwargs: dict[str, Any] = {"config": _boto_config(max_attempts, workers)}
        if endpoint:
            kwargs["endpoint_url"] = endpoint
        # the URL's endpoint, or the one boto3 takes from the environment (the same server)
        reached = (
            endpoint or os.environ.get("AWS_ENDPOINT_URL_S3VECTORS") or os.environ.get("AWS_ENDPOINT_URL")
        )
        if reached and _hostname(reached) in _LOCAL_HOSTS and session.get_credentials() is None:
            # The local server does not check signatures; spare users inventing credentials.
            kwargs.update(aws_access_key_id="vectorport", aws_secret_access_key="vectorport")
        if session.region_name is None:
            kwargs["region_name"] = "us-east-1"
        try:
            return session.client("s3vectors", **kwargs)
        except ValueError as exc:  # botocore's "Invalid endpoint": one from the environment
            raise ConfigurationError(
                f"the s3vectors endpoint set by AWS_ENDPOINT_URL_S3VECTORS, AWS_ENDPOINT_URL or the AWS "
                f"config file is not a URL ({exc}); fix it, unset it, or pass endpoint_url= in the URL"
            ) from None


def supabase_client(endpoint: str, key: str, max_attempts: int, workers: int) -> Any:
    """A boto3 ``s3vectors`` client aimed at ``…/storage/v1/vector`` that sends the
    service-role key as a Bearer token instead of a SigV4 signature."""
    import boto3
    from botocore import UNSIGNED

    with map_errors("supabase", "client setup"):  # the AWS config is read (an unknown AWS_PROFILE)
        client = boto3.session.Session().client(
            "s3vectors",
            endpoint_url=endpoint,
            region_name="us-east-1",
            config=_boto_config(max_attempts, workers, signature_version=UNSIGNED),
        )

    def add_auth(request: Any, **_: Any) -> None:
        request.headers["Authorization"] = f"Bearer {key}"
        request.headers["apikey"] = key

    client.meta.events.register("before-sign.s3vectors", add_auth)
    return client


@dataclass(frozen=True)
class Target:
    """Where an ``s3vectors://`` or ``supabase://`` URL points, with a client reaching it, and the
    store's own options (``write_rate``, ``workers``, ``layout``, ``text_search`` …)."""

    bucket: str
    index: str
    client: Any
    endpoint: str
    """The endpoint for the write limiter's key (``aws`` for AWS's own)."""
    options: dict[str, Any]


def resolve(url: StoreURL, options: Mapping[str, Any]) -> Target:
    """Parse an ``s3vectors://BUCKET/INDEX`` or ``supabase://REF.supabase.co/BUCKET/INDEX`` URL
    and ``connect()`` options (these win over URL parameters) and make the boto3 client (unless
    ``client=`` gives one)."""
    opts: dict[str, Any] = {**url.params, **options}
    # collection= (connect()'s, or a migration's derived name) replaces the URL's index
    named = str(opts.pop("collection", None) or "")
    if url.scheme == "supabase":
        return _supabase(url, opts, named)
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
    store_opts = _store_options(opts)
    if client is None:
        client = boto_client(endpoint, region, profile, max_attempts, store_opts["workers"])
    return Target(bucket, index, client, endpoint or "aws", store_opts)


def _supabase(url: StoreURL, opts: dict[str, Any], named: str) -> Target:
    parts = url.path.strip("/").split("/")
    if named:
        parts = [parts[0], named]
    if not url.host or len(parts) > 2 or not parts[0]:
        raise ConfigurationError(
            f"expected supabase://PROJECT_REF.supabase.co/BUCKET/INDEX[?key=…], got {url.masked!r}"
        )
    if len(parts) == 1 or not parts[1]:
        raise INDEX_NAMES.missing(
            f"{url.masked}: name the index, e.g. supabase://{url.host}/{parts[0]}/docs (or pass collection=)"
        )
    bucket, index = parts
    check_names(url, bucket, index)
    key = opts.pop("key", None) or next((os.environ[v] for v in SUPABASE_KEY_ENV if os.environ.get(v)), None)
    if not key:
        raise ConfigurationError(
            f"{url.masked}: a Supabase service-role key is needed: add ?key=… or set {SUPABASE_KEY_ENV[0]}"
        )
    base = opts.pop("endpoint_url", None) or f"https://{url.host}" + (f":{url.port}" if url.port else "")
    endpoint = base.rstrip("/") + SUPABASE_PATH
    client = opts.pop("client", None)
    max_attempts = int(opts.pop("max_attempts", 2))
    opts.pop("region", None)
    store_opts = _store_options(opts)
    if client is None:
        client = supabase_client(endpoint, key, max_attempts, store_opts["workers"])
    return Target(bucket, index, client, endpoint, store_opts)


def _store_options(opts: dict[str, Any]) -> dict[str, Any]:
    """The store's keyword arguments from what is left of the options; refuses any other."""
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
