"""A local HTTP server speaking Voyage AI's embeddings API (``POST /v1/embeddings``), for tests.

Request: JSON ``{"input": str | [str], "model": str, "input_type": null|"query"|"document",
"truncation": bool, "output_dimension": int|null, "output_dtype": ..., "encoding_format":
null|"base64"}`` with ``Authorization: Bearer KEY``. Response: ``{"object": "list", "data":
[{"object": "embedding", "embedding": [...] | base64 float32, "index": i}], "model": ...,
"usage": {"total_tokens": n}}``. Errors: JSON ``{"detail": "..."}`` with 400/401/429.
Vectors are deterministic per (model, input_type, text), so results are checkable.

Limits, as the service enforces them: at most ``max_texts`` texts and ``max_tokens`` tokens (whitespace
words, which never exceed the embedder's own estimate) per request, else 400; ``throttle_every``: every
Nth request is answered 429 with ``Retry-After: 0``. ``embedded`` counts, per text, the vectors the
server answered with (the embedder's calls, counted where they are paid for). ``hold_after(n)`` answers
``n`` more texts, then holds every request (:attr:`held` says how many wait) until :meth:`release`, which
answers them 503 without embedding: a client killed while its requests are held received nothing.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

MODEL_DIMS = {"voyage-3.5": 1024, "voyage-3.5-lite": 1024, "voyage-3-lite": 512, "voyage-test": 32}


def fake_vector(model: str, text: str, dim: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(f"{model}\x00{text}".encode()).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


class VoyageServer:
    """Start with ``with VoyageServer(key) as srv``; ``srv.base_url`` is what the client needs."""

    def __init__(self, api_key: str = "test-key") -> None:
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.rate_limit_next = 0
        """How many of the next requests get 429 (with ``Retry-After: 0``)."""
        self.unavailable_next = 0
        self.max_texts = 1000
        self.max_tokens: int | None = None
        self.throttle_every = 0
        self.throttled = 0
        self.embedded: Counter[str] = Counter()
        self.held = 0
        self._budget: int | None = None
        self._gate = threading.Event()
        self._gate.set()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # a killed client
                    self.wfile.write(raw)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.rstrip("/") != "/v1/embeddings":
                    self._send(404, {"detail": f"no route {self.path}"})
                    return
                if self.headers.get("Authorization") != f"Bearer {outer.api_key}":
                    self._send(401, {"detail": "Provided API key is invalid."})
                    return
                with outer._lock:
                    outer.requests.append(body)
                    throttle = outer.throttle_every and len(outer.requests) % outer.throttle_every == 0
                    outer.throttled += bool(throttle)
                if throttle:
                    self._send(429, {"detail": "You have exceeded the rate limit."}, {"Retry-After": "0"})
                    return
                if outer.rate_limit_next > 0:
                    outer.rate_limit_next -= 1
                    self._send(429, {"detail": "You have exceeded the rate limit."}, {"Retry-After": "0"})
                    return
                if outer.unavailable_next > 0:
                    outer.unavailable_next -= 1
                    self._send(503, {"detail": "overloaded"})
                    return
                texts = body.get("input")
                if isinstance(texts, str):
                    texts = [texts]
                model = body.get("model")
                if model not in MODEL_DIMS:
                    self._send(400, {"detail": f"Model {model} is not supported."})
                    return
                if not isinstance(texts, list) or not texts or len(texts) > outer.max_texts:
                    detail = f"input must be a non-empty list of at most {outer.max_texts} texts"
                    self._send(400, {"detail": detail})
                    return
                tokens = sum(len(t.split()) for t in texts)
                if outer.max_tokens is not None and tokens > outer.max_tokens:
                    detail = f"Request to model '{model}' failed. The max allowed tokens per submitted "
                    detail += f"batch is {outer.max_tokens}. Your batch has {tokens} tokens."
                    self._send(400, {"detail": detail})
                    return
                if not outer._admit(len(texts)):
                    self._send(503, {"detail": "held, then released: nothing embedded"})
                    return
                dim = body.get("output_dimension") or MODEL_DIMS[model]
                prefix = {
                    "query": "Represent the query for retrieving supporting documents: ",
                    "document": "Represent the document for retrieval: ",
                }.get(body.get("input_type") or "", "")
                data = []
                for i, text in enumerate(texts):
                    outer.count(text)
                    vec = fake_vector(model, prefix + text, dim)
                    emb: Any = (
                        base64.b64encode(vec.astype("<f4").tobytes()).decode()
                        if body.get("encoding_format") == "base64"
                        else [float(x) for x in vec]
                    )
                    data.append({"object": "embedding", "embedding": emb, "index": i})
                self._send(
                    200, {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _admit(self, texts: int) -> bool:
        """Whether to embed a request of ``texts`` texts (counted now), or hold it and refuse it."""
        with self._lock:
            if self._budget is None or self._budget >= texts:
                if self._budget is not None:
                    self._budget -= texts
                return True
            self._budget = 0
            self.held += 1
        self._gate.wait()
        with self._lock:
            self.held -= 1
        return False

    def count(self, text: str) -> None:
        with self._lock:
            self.embedded[text] += 1

    def hold_after(self, texts: int) -> None:
        """Answer ``texts`` more texts (whole requests only), then hold every request."""
        with self._lock:
            self._gate.clear()
            self._budget = texts

    def release(self) -> None:
        """Stop holding: the held requests are answered 503 (before this returns, so a next
        :meth:`hold_after` holds only new ones), later ones normally."""
        with self._lock:
            self._budget = None
            self._gate.set()
        while self.held:
            time.sleep(0.005)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> VoyageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
