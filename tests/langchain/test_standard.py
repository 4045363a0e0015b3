"""LangChain's own standard tests for vector stores (``langchain-tests``, unmodified) against
:class:`vectorport.langchain.LangChainStore` on every backend, sync and async.

The fixture yields a store on a fresh, not yet created collection (the first write creates it
with the embedding's dimension, as an application's first ``add_documents`` does) and drops it
afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import pytest

from tests._frameworks import each_target

pytest.importorskip("langchain_core")
integration = pytest.importorskip("langchain_tests.integration_tests")

from vectorport.exceptions import NotFoundError  # noqa: E402
from vectorport.langchain import LangChainStore  # noqa: E402

pytestmark = pytest.mark.langchain


class TestLangChainStore(integration.VectorStoreIntegrationTests):  # type: ignore[misc]
    @pytest.fixture(params=each_target())
    def vectorstore(
        self, request: pytest.FixtureRequest, url_for: Callable[..., str]
    ) -> Iterator[LangChainStore]:
        store = LangChainStore(url_for(request.param), embedding=self.get_embeddings())
        try:
            yield store
        finally:
            with contextlib.suppress(NotFoundError):  # nothing was written
                store.store.drop()
            store.close()
