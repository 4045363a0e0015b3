"""HTTP front end: rest-json routing by the botocore model, the Supabase route, auth,
injected throttling and error encoding."""

from __future__ import annotations

import logging
import random
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from .._json import fast_dumps, fast_loads
from ._errors import (
    AccessDeniedException,
    InternalServerException,
    ServiceError,
    ServiceUnavailableException,
    TooManyRequestsException,
    ValidationException,
)
from ._service import Service
from ._shapes import ServiceModel, load_model

__all__ = ["Handler", "Throttle", "VectorServer"]

log = logging.getLogger("vectorport.bucketserver")

SUPABASE_PREFIX = "/storage/v1/vector/"


@dataclass
class Throttle:
    """Injected failures: a ``fraction`` of requests and/or requests beyond ``rate`` per
    second get 429 ``TooManyRequestsException``; ``unavailable`` is a fraction of 503s."""

    fraction: float = 0.0
    rate: float | None = None
    unavailable: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self._tokens = self.rate or 0.0
        self._stamp = time.monotonic()
        self.throttled = 0

    def check(self) -> None:
        with self._lock:
            if self.rate is not None:
                now = time.monotonic()
                self._tokens = min(self.rate, self._tokens + (now - self._stamp) * self.rate)
                self._stamp = now
                if self._tokens < 1.0:
                    self.throttled += 1
                    raise TooManyRequestsException("Request rate exceeded (injected throttling)")
                self._tokens -= 1.0
            roll = self._rng.random()
            if roll < self.fraction:
                self.throttled += 1
                raise TooManyRequestsException("Too many requests (injected throttling); retry with backoff")
            if roll < self.fraction + self.unavailable:
                self.throttled += 1
                raise ServiceUnavailableException("Service unavailable (injected); retry with backoff")


MAX_DEPTH = 64
"""Deepest nesting of objects and arrays accepted in a request body (a filter's ``$and``/``$or``
levels count two each): deeper documents get a 400 ``ValidationException`` instead of exhausting
the recursion of the validators and the filter evaluator."""


def check_depth(doc: Any) -> None:
    """Raise :class:`ValidationException` when ``doc`` nests deeper than :data:`MAX_DEPTH`
    (iterative, so the check itself cannot exhaust the stack).

    A value counts one level deeper than its container, scalars included. Only containers
    are walked: a container of scalars alone (a vector's 384 floats) is settled by one
    C-level type scan instead of one stack entry per value.
    """
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValidationException(f"The request body nests deeper than {MAX_DEPTH} levels")
        if not isinstance(value, dict | list):
            continue
        children = value.values() if isinstance(value, dict) else value
        if not children:
            continue
        if depth == MAX_DEPTH:  # any member would sit one level too deep
            raise ValidationException(f"The request body nests deeper than {MAX_DEPTH} levels")
        if not any(issubclass(kind, dict | list) for kind in set(map(type, children))):
            continue
        stack.extend((v, depth + 1) for v in children if isinstance(v, dict | list))


def decode_body(body: bytes) -> Any:
    """The request body's JSON, as :func:`json.loads` reads it (:func:`fast_loads`: orjson
    where it gives the very same objects)."""
    try:
        return fast_loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ValidationException("The request body is not valid JSON") from None
    except RecursionError:
        raise ValidationException(f"The request body nests deeper than {MAX_DEPTH} levels") from None


class VectorServer(ThreadingHTTPServer):
    """A threading HTTP server holding the service, model, auth key and throttle."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        service: Service,
        *,
        supabase_key: str | None = None,
        throttle: Throttle | None = None,
        model: ServiceModel | None = None,
    ) -> None:
        self.service = service
        self.model = model or load_model()
        self.supabase_key = supabase_key
        self.throttle = throttle or Throttle()
        super().__init__(address, Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops its connection is logged in one line (at debug level), not with
        the traceback socketserver prints for any error escaping a handler."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            log.debug("%s: connection lost: %s", client_address, exc)
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One request: route, authenticate, throttle, validate, run, encode.

    Each response leaves in one ``send`` (status line, headers and body together) on a
    ``TCP_NODELAY`` socket. The stock handler writes the headers and the body separately on
    an unbuffered socket; Nagle then holds the body until the client ACKs the headers, and
    the client's delayed ACK makes that ~40 ms per request.
    """

    server: VectorServer
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    timeout = 300.0
    """Seconds an idle keep-alive connection is kept before its thread closes it."""

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _handle(self, method: str) -> None:
        request_id = uuid.uuid4().hex
        try:
            body = self._read_body()
            supabase = self.path.startswith(SUPABASE_PREFIX)
            operation, params = self._route(method)
            self.server.throttle.check()
            if body:
                doc = decode_body(body)
                if not isinstance(doc, dict):
                    raise ValidationException("The request body must be a JSON object")
                check_depth(doc)
                params = {**doc, **params}
            self.server.model.validate(operation, params)
            result = getattr(self.server.service, operation)(params)
            # AWS: "HTTP 200 response with an empty HTTP body" for operations without output
            # members. The Supabase route keeps "{}", which JSON-parsing clients expect.
            empty = not result and not supabase and not self.server.model.output_has_members(operation)
            self._send(200, None if empty else result, request_id)
        except ServiceError as exc:
            self._send(exc.status, exc.body(), request_id, exc.code)
        except (ConnectionError, TimeoutError) as exc:
            # the client went away (or stalled) mid-request: nobody to answer, nothing to debug
            self.close_connection = True
            log.debug("%s: connection lost: %s", self.address_string(), exc)
        except Exception as exc:
            log.exception("internal error")
            err = InternalServerException(f"Internal server error: {type(exc).__name__}")
            self._send(err.status, err.body(), request_id, err.code)

    def _read_body(self) -> bytes:
        limit = self.server.service.limits.max_payload_bytes
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked(limit)
        raw = self.headers.get("Content-Length")
        try:
            size = int(raw or 0)
        except ValueError:
            size = -1
        if size < 0:
            self.close_connection = True  # the body's end is unknown: this connection is unusable
            raise ValidationException(f"Invalid Content-Length header: {raw!r}")
        if size > limit:
            remaining = size  # read it past, not into memory, so the client gets the answer
            while remaining > 0 and (chunk := self.rfile.read(min(remaining, 1 << 16))):
                remaining -= len(chunk)
            raise ValidationException(f"Request payload is {size} bytes; the limit is {limit}")
        return self.rfile.read(size) if size else b""

    def _read_chunked(self, limit: int) -> bytes:
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise ValidationException("Malformed chunked request body") from None
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > limit:
                self.close_connection = True
                raise ValidationException(f"Request payload exceeds the limit of {limit} bytes")
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)  # the CRLF after each chunk

    def _route(self, method: str) -> tuple[str, dict[str, Any]]:
        parts = urlsplit(self.path)
        path = parts.path
        if path.startswith(SUPABASE_PREFIX):
            self._authenticate()
            name = path[len(SUPABASE_PREFIX) :].strip("/")
            found: tuple[str, dict[str, str]] | None = (
                (name, {})
                if method == "POST" and name in self.server.model.operations
                else self.server.model.route(method, "/" + name)
            )
        else:
            found = self.server.model.route(method, path)
        if found is None:
            raise ValidationException(f"Unknown operation {method} {path}")
        operation, labels = found
        params: dict[str, Any] = {k: unquote(v) for k, v in labels.items()}
        if parts.query:
            for pair in parts.query.split("&"):
                key, _, value = pair.partition("=")
                if key == "tagKeys":
                    params.setdefault("tagKeys", []).append(unquote(value))
        if not hasattr(self.server.service, operation):
            raise ValidationException(f"The operation {operation} is not supported by this local server")
        return operation, params

    def _authenticate(self) -> None:
        key = self.server.supabase_key
        if key is None:
            return
        auth = self.headers.get("Authorization") or ""
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else self.headers.get("apikey")
        if token != key:
            raise AccessDeniedException("Invalid or missing service key (Authorization: Bearer <key>)")

    def _send(
        self, status: int, doc: dict[str, Any] | None, request_id: str, code: str | None = None
    ) -> None:
        # the floats of vector data written by orjson where it writes what json writes
        payload = b"" if doc is None else fast_dumps(doc)
        self.log_request(status, len(payload))
        reason = self.responses.get(status, ("",))[0]
        lines = [
            f"{self.protocol_version} {status} {reason}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            "Content-Type: application/json",
            f"Content-Length: {len(payload)}",
            f"x-amzn-RequestId: {request_id}",
        ]
        if code is not None:
            lines.append(f"x-amzn-ErrorType: {code}")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head + payload)
