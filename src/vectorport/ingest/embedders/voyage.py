"""``voyage:MODEL``: Voyage AI embeddings through the ``voyageai`` client.

The key comes from ``api_key=`` or ``VOYAGE_API_KEY``; ``base_url`` (or ``VOYAGE_BASE_URL``)
points the client at another endpoint speaking the same API (tests use a local server).
Rate limits (HTTP 429) and unavailability (502/503/504, timeouts) are retried with jittered
exponential backoff, honouring ``Retry-After``; other API errors are raised at once.
Voyage's tokenizers are fetched from the Hub by the client, so offline token counts use
:func:`~vectorport.ingest.embedders.base.approx_token_counts`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..._retry import RetryPolicy
from ...exceptions import BackendUnavailableError, ConfigurationError, NotInstalledError, TransientError
from .base import BaseEmbedder, EmbeddingError, InputType, Matrix

__all__ = [
    "DEFAULT_VOYAGE_MODEL",
    "KNOWN_DIMENSIONS",
    "PRICES_PER_MILLION_TOKENS",
    "REQUEST_TOKENS",
    "VoyageEmbedder",
]

DEFAULT_VOYAGE_MODEL = "voyage-3.5"
PROVIDER = "voyage"

KNOWN_DIMENSIONS: dict[str, int] = {
    "voyage-2": 1024,
    "voyage-3": 1024,
    "voyage-3-large": 1024,
    "voyage-3-lite": 512,
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-4": 1024,
    "voyage-4-large": 1024,
    "voyage-4-lite": 1024,
    "voyage-code-2": 1536,
    "voyage-code-3": 1024,
    "voyage-finance-2": 1024,
    "voyage-large-2": 1536,
    "voyage-law-2": 1024,
}
"""Default output dimension per model (docs.voyageai.com); unknown models are probed once."""

_CONTEXT: dict[str, int] = {"voyage-2": 4000, "voyage-large-2": 16000, "voyage-code-2": 16000}
_DEFAULT_CONTEXT = 32000

MAX_TEXTS = 1000
"""Texts per request the API accepts (docs.voyageai.com, "Text embedding models")."""

REQUEST_TOKENS: dict[str, int] = {
    "voyage-3-lite": 1_000_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4-lite": 1_000_000,
    "voyage-2": 320_000,
    "voyage-3": 320_000,
    "voyage-3.5": 320_000,
    "voyage-4": 320_000,
}
"""Tokens per request the API accepts, per model (docs.voyageai.com, "Text embedding models",
read 2025); every other model: :data:`DEFAULT_REQUEST_TOKENS`, the smallest limit listed
(voyage-3-large, voyage-code-3, voyage-law-2, ...)."""
DEFAULT_REQUEST_TOKENS = 120_000

PRICES_PER_MILLION_TOKENS: dict[str, float] = {
    "voyage-3": 0.06,
    "voyage-3-large": 0.18,
    "voyage-3-lite": 0.02,
    "voyage-3.5": 0.06,
    "voyage-3.5-lite": 0.02,
    "voyage-4": 0.06,
    "voyage-4-large": 0.12,
    "voyage-4-lite": 0.02,
    "voyage-code-2": 0.12,
    "voyage-code-3": 0.18,
    "voyage-context-3": 0.18,
    "voyage-finance-2": 0.12,
    "voyage-law-2": 0.12,
    "voyage-multilingual-2": 0.12,
}
"""US dollars per million tokens: list prices, for an *estimate* before a re-embedding starts
(``migrate --reembed --plan``). Without the free tokens every account gets (200M, 50M for the
domain models) or the Batch API's discount; the bill is what Voyage counts."""
PRICES_SOURCE = "Voyage AI list prices, docs.voyageai.com/docs/pricing, as of May 2026"


class VoyageEmbedder(BaseEmbedder):
    """Voyage AI text embeddings (``input_type`` ``document`` for chunks, ``query`` for queries).

    Parameters
    ----------
    model
        A Voyage model name, default ``voyage-3.5``.
    output_dimension
        Shorter vectors for models that support it; recorded in the ``model_id`` (``@256``).
    batch_size
        Texts per request, at most 1,000 (the API's limit).
    request_tokens
        Tokens per request (default: the model's limit, :data:`REQUEST_TOKENS`): a request is
        cut shorter than ``batch_size`` texts when their token count (the documented estimate,
        which over-counts) would pass it.
    retry
        Backoff for rate limits and unavailability.
    """

    def __init__(
        self,
        model: str = DEFAULT_VOYAGE_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        output_dimension: int | None = None,
        batch_size: int = 128,
        request_tokens: int | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if batch_size > MAX_TEXTS:
            raise ConfigurationError(f"voyage: batch_size {batch_size} is above the API's {MAX_TEXTS} texts")
        super().__init__(batch_size)
        self.request_tokens = request_tokens or REQUEST_TOKENS.get(model, DEFAULT_REQUEST_TOKENS)
        self.model = model
        self.api_key = api_key or os.environ.get("VOYAGE_API_KEY")
        self.base_url = base_url or os.environ.get("VOYAGE_BASE_URL")
        self.output_dimension = output_dimension
        self.timeout = timeout
        self.retry = retry or RetryPolicy(attempts=8, base=0.5, cap=30.0)
        self._dimension = output_dimension or KNOWN_DIMENSIONS.get(model)
        self._client: Any = None

    @property
    def model_id(self) -> str:
        suffix = f"@{self.output_dimension}" if self.output_dimension else ""
        return f"{PROVIDER}:{self.model}{suffix}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._embed(["dimension probe"], "query").shape[1])
        return self._dimension

    def _expected_dimension(self) -> int | None:
        return self._dimension

    @property
    def max_tokens(self) -> int | None:
        return _CONTEXT.get(self.model, _DEFAULT_CONTEXT)

    def _requests(self, texts: list[str]) -> Iterator[tuple[int, int]]:
        """At most ``batch_size`` texts and ``request_tokens`` tokens per request (a text longer
        than that alone: the API truncates it to the model's context)."""
        start, tokens = 0, 0
        for i, n in enumerate(self.count_tokens(texts)):
            if i > start and (i - start >= self.batch_size or tokens + n > self.request_tokens):
                yield start, i
                start, tokens = i, 0
            tokens += n
        if start < len(texts):
            yield start, len(texts)

    @property
    def price(self) -> tuple[float, str] | None:
        """The model's list price, US dollars per million tokens, and where it was read."""
        usd = PRICES_PER_MILLION_TOKENS.get(self.model)
        return None if usd is None else (usd, PRICES_SOURCE)

    def _get_client(self) -> Any:
        if self._client is None:
            if not self.api_key:
                raise ConfigurationError(
                    "the Voyage embedder needs an API key: set VOYAGE_API_KEY or pass api_key="
                )
            if importlib.util.find_spec("voyageai") is None:
                raise NotInstalledError(PROVIDER, "voyage", "voyageai")
            import voyageai.client

            # The client's own retries are off: vectorport's policy retries (and logs) instead.
            self._client = voyageai.client.Client(
                api_key=self.api_key, max_retries=0, timeout=self.timeout, base_url=self.base_url
            )
        return self._client

    def _request(self, texts: list[str], input_type: InputType) -> Any:
        import voyageai.error as verr

        client = self._get_client()
        try:
            return client.embed(
                texts,
                model=self.model,
                input_type=input_type,
                truncation=True,
                output_dimension=self.output_dimension,
            )
        except verr.RateLimitError as exc:
            raise TransientError(f"voyage: rate limited: {exc}", _retry_after(exc)) from exc
        except (verr.ServiceUnavailableError, verr.Timeout, verr.TryAgain) as exc:
            raise TransientError(f"voyage: unavailable: {exc}", _retry_after(exc)) from exc
        except verr.AuthenticationError as exc:
            raise ConfigurationError(f"voyage: the API key was refused: {exc}") from exc
        except verr.APIConnectionError as exc:
            raise BackendUnavailableError(
                f"voyage: cannot reach {self.base_url or 'the API'}: {exc}"
            ) from exc
        except verr.VoyageError as exc:
            raise EmbeddingError(f"voyage: {type(exc).__name__}: {exc}") from exc

    def check_ready(self) -> None:
        """The key is set and accepted and the endpoint answers: one small request, not retried
        and not counted in :attr:`calls` (a missing or refused key is a ``ConfigurationError``,
        an unreachable endpoint a ``BackendUnavailableError``)."""
        result = self._request(["vectorport: key check"], "query")
        got = int(np.asarray(result.embeddings, dtype=np.float32).shape[1])
        if self._dimension is None:
            self._dimension = got
        elif got != self._dimension:
            raise ConfigurationError(
                f"voyage: {self.model_id} returned {got} dimensions, expected {self._dimension}"
            )

    def _embed_batch(self, texts: list[str], input_type: InputType) -> Matrix:
        result = self.retry.call(
            lambda: self._request(texts, input_type), f"voyage: embed {len(texts)} texts"
        )
        vectors = np.asarray(result.embeddings, dtype=np.float32)
        if self._dimension is None and vectors.ndim == 2:
            self._dimension = int(vectors.shape[1])
        return vectors


def _retry_after(exc: Any) -> float | None:
    headers = getattr(exc, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
