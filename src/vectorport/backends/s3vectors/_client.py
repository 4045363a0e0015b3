"""Building the boto3 ``s3vectors`` client (AWS or a local server) and Supabase's variant, and
checking bucket and index names."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..._names import NameRule
from ..._url import StoreURL, mask_url
from ...exceptions import ConfigurationError
from .errors import map_errors

__all__ = ["BUCKET_NAMES", "INDEX_NAMES", "boto_client", "check_names", "snake", "supabase_client"]

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
            if (urlsplit(endpoint).hostname or "") in _LOCAL_HOSTS and session.get_credentials() is None:
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
