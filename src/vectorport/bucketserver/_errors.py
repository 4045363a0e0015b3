"""The service's error shapes, as botocore's ``s3vectors`` model declares them.

Each error is sent as HTTP status + ``x-amzn-ErrorType`` header + JSON body ``{"message": …}``
(``ValidationException`` adds ``fieldList``), which is how botocore's rest-json parser reads an
error code.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "AccessDeniedException",
    "ConflictException",
    "InternalServerException",
    "NotFoundException",
    "ServiceError",
    "ServiceQuotaExceededException",
    "ServiceUnavailableException",
    "TooManyRequestsException",
    "ValidationException",
]


class ServiceError(Exception):
    """An error the server answers with. ``code`` is the model's error shape name."""

    code: ClassVar[str] = "InternalServerException"
    status: ClassVar[int] = 500

    def __init__(self, message: str, field_list: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field_list = field_list

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message}
        if self.field_list:
            out["fieldList"] = self.field_list
        return out


class ValidationException(ServiceError):
    # The model gives ValidationException no httpStatusCode; rest-json then means 400.
    code = "ValidationException"
    status = 400


class AccessDeniedException(ServiceError):
    code = "AccessDeniedException"
    status = 403


class NotFoundException(ServiceError):
    code = "NotFoundException"
    status = 404


class ConflictException(ServiceError):
    code = "ConflictException"
    status = 409


class ServiceQuotaExceededException(ServiceError):
    code = "ServiceQuotaExceededException"
    status = 402


class TooManyRequestsException(ServiceError):
    code = "TooManyRequestsException"
    status = 429


class ServiceUnavailableException(ServiceError):
    code = "ServiceUnavailableException"
    status = 503


class InternalServerException(ServiceError):
    code = "InternalServerException"
    status = 500
