"""LangChain's standard retriever tests (``langchain-tests``) run against CupelRetriever.

The suite's async test needs an asyncio runner: the class is marked for pytest-asyncio,
and the marker's harmless warning on the suite's synchronous tests is filtered.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests

from cupel_langchain import CupelRetriever


def _vector_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [Document(f"Fact {i}: rivers carry water, sediment and stories. " * 2) for i in range(10)]
    )
    return store


_STORE = _vector_store()


@pytest.mark.asyncio
@pytest.mark.filterwarnings("ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async")
class TestCupelRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[CupelRetriever]:
        return CupelRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"base_retriever": _STORE.as_retriever(search_kwargs={"k": 10}), "max_tokens": 4000}

    @property
    def retriever_query_example(self) -> str:
        return "What do rivers carry?"
