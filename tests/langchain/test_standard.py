"""LangChain's own standard tests for vector stores (``langchain-tests``, unmodified) against
:class:`vectorport.langchain.LangChainStore` on every backend, sync and async.

The fixture yields a store on a fresh, not yet created collection (the first write creates it
with the embedding's dimension, as an application's first ``add_documents`` does) and drops it
afterwards; ``pgvector+aconnect`` runs the async tests on psycopg's async pool.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from tests._frameworks import each_target, opened_target

pytest.importorskip("langchain_core")
integration = pytest.importorskip("langchain_tests.integration_tests")

from vectorport.exceptions import NotFoundError  # noqa: E402
from vectorport.langchain import LangChainStore  # noqa: E402

pytestmark = pytest.mark.langchain


class TestLangChainStore(integration.VectorStoreIntegrationTests):  # type: ignore[misc]
    @pytest.fixture(params=each_target(aconnect=True))
    async def vectorstore(
        self, request: pytest.FixtureRequest, url_for: Callable[..., str]
    ) -> AsyncIterator[LangChainStore]:
        """A store on a URL whose collection the first write creates, or (``pgvector+aconnect``)
        on a store from ``vectorport.aconnect``, whose pool serves the async tests."""
        dimension = len(self.get_embeddings().embed_query("probe"))
        async with opened_target(request.param, url_for, dimension) as target:
            store = LangChainStore(target, embedding=self.get_embeddings())
            try:
                yield store
            finally:
                if isinstance(target, str):
                    with contextlib.suppress(NotFoundError):  # nothing was written
                        store.store.drop()
                await store.aclose()
