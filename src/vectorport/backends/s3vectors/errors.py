"""botocore errors → vectorport exceptions, through one table, inside one context manager."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConfigParseError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    InvalidConfigError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ProfileNotFound,
    ReadTimeoutError,
)

from ...exceptions import (
    BackendError,
    BackendUnavailableError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    Problem,
    TransientError,
    ValidationError,
    VectorportError,
)

__all__ = ["map_errors"]

# Error codes of botocore's s3vectors model (and generic AWS throttling codes), sorted.
_CODES: dict[str, type[VectorportError]] = {
    "AccessDeniedException": ConfigurationError,
    "ConflictException": ConflictError,
    "InternalServerException": TransientError,
    "KmsDisabledException": ConfigurationError,
    "KmsInvalidKeyUsageException": ConfigurationError,
    "KmsInvalidStateException": ConfigurationError,
    "KmsNotFoundException": ConfigurationError,
    "NotFoundException": NotFoundError,
    "RequestTimeoutException": TransientError,
    "ServiceQuotaExceededException": BackendError,
    "ServiceUnavailableException": TransientError,
    "SlowDown": TransientError,
    "ThrottlingException": TransientError,
    "TooManyRequestsException": TransientError,
    "ValidationException": ValidationError,
}
# When a proxy (e.g. Supabase's gateway) answers with a code the model does not know.
_STATUS: dict[int, type[VectorportError]] = {
    400: ValidationError,
    401: ConfigurationError,
    403: ConfigurationError,
    404: NotFoundError,
    409: ConflictError,
    429: TransientError,
    500: TransientError,
    502: TransientError,
    503: TransientError,
    504: TransientError,
}
_HINTS: dict[type[VectorportError], str] = {
    ConfigurationError: "check the credentials (AWS chain, or the Supabase service-role key) and permissions",
    TransientError: "the call is retried with backoff",
}


def _retry_after(exc: ClientError) -> float | None:
    headers = exc.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    try:
        return float(headers["retry-after"])
    except (KeyError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def map_errors(where: str, operation: str) -> Iterator[None]:
    """Re-raise botocore errors of ``operation`` as vectorport errors (``from`` the original).

    ``where`` names the backend and the bucket/index, e.g. ``"s3vectors docs/chunks"``.
    """
    try:
        yield
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        message = str(error.get("Message") or exc)
        cls = _CODES.get(code) or _STATUS.get(status) or BackendError
        text = f"{where}: {operation} failed: {code or status}: {message}"
        hint = _HINTS.get(cls)
        if cls is ValidationError:
            raise ValidationError(
                [Problem(None, "", f"{operation} rejected by the service: {message}")], backend=where
            ) from exc
        if cls is TransientError:
            raise TransientError(text, retry_after=_retry_after(exc)) from exc
        raise cls(f"{text}; {hint}" if hint else text) from exc
    except (NoCredentialsError, PartialCredentialsError) as exc:
        raise ConfigurationError(
            f"{where}: {operation}: no AWS credentials ({exc}); configure the AWS credential chain "
            "(env vars, ~/.aws, profile=…) or use a supabase:// URL with a service-role key"
        ) from exc
    except ParamValidationError as exc:
        raise ConfigurationError(f"{where}: {operation}: invalid request parameters: {exc}") from exc
    except ProfileNotFound as exc:
        raise ConfigurationError(
            f"{where}: {operation}: {exc} (AWS_PROFILE or profile=); name a profile of ~/.aws/config "
            "(`aws configure list-profiles`), or unset AWS_PROFILE"
        ) from exc
    except (InvalidConfigError, ConfigParseError, NoRegionError) as exc:
        raise ConfigurationError(f"{where}: {operation}: the AWS configuration: {exc}") from exc
    except (EndpointConnectionError, ConnectTimeoutError) as exc:
        raise BackendUnavailableError(f"{where}: {operation}: cannot reach the endpoint ({exc})") from exc
    except (ReadTimeoutError, ConnectionClosedError) as exc:
        raise TransientError(f"{where}: {operation}: {exc}") from exc
    except BotoCoreError as exc:
        raise BackendError(f"{where}: {operation}: {exc}") from exc
