"""CupelDocumentCompressor and CupelRetriever over real LangChain retrievers and chains."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from cupel import ConfigurationError, ItemError, SelectionReport
from cupel.counting import estimate_tokens
from cupel_langchain import CupelDocumentCompressor, CupelRetriever, report_from_event

FACTS = [
    "The Nile is about 6,650 km long and flows north into the Mediterranean.",
    "The Amazon carries more water than any other river on Earth.",
    "The Danube flows through ten countries, more than any other river.",
    "The Mississippi drains about 40% of the continental United States.",
    "The Yangtze is the longest river in Asia. " * 6,
    "The Thames flows through London.",
    "The Rhine is an important trade route in Europe. " * 3,
    "The Volga is the longest river in Europe.",
]


def store() -> InMemoryVectorStore:
    vectors = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    vectors.add_documents([Document(text, id=f"doc{i}") for i, text in enumerate(FACTS)])
    return vectors


def approx(doc: Document) -> int:
    """A document's tokens as the components count them by default (what the model
    receives: its ``page_content``)."""
    return estimate_tokens(doc.page_content)


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.model_inputs: list[list[BaseMessage]] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: Any = None,
        metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data))

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any
    ) -> None:
        self.model_inputs.extend(messages)


def scored(*pairs: tuple[str, float]) -> list[Document]:
    return [Document(text, metadata={"relevance_score": score}) for text, score in pairs]


# -- the compressor -------------------------------------------------------------------------
def test_the_compressor_keeps_the_most_relevant_documents_within_the_budget() -> None:
    docs = scored(("a" * 400, 0.9), ("b" * 40, 0.8), ("c" * 40, 0.1), ("d" * 40, 0.7))
    kept = CupelDocumentCompressor(max_tokens=40).compress_documents(docs, "q")
    assert [d.page_content[0] for d in kept] == ["b", "c", "d"]
    assert sum(approx(d) for d in kept) <= 40
    assert all(any(k is d for d in docs) for k in kept)


def test_the_best_documents_sit_at_both_edges() -> None:
    docs = scored(
        *[(f"{c}" * 8, s) for c, s in zip("abcde", (0.1, 0.9, 0.5, 0.7, 0.3), strict=True)]
    )
    kept = CupelDocumentCompressor(max_tokens=1000).compress_documents(docs, "q")
    assert [d.page_content[0] for d in kept] == ["b", "c", "a", "e", "d"]


def test_duplicate_page_content_is_dropped_keeping_the_best_copy() -> None:
    docs = scored(("same text", 0.2), ("same text", 0.9), ("other", 0.5))
    compressor = CupelDocumentCompressor(max_tokens=1000)
    kept = compressor.compress_documents(docs, "q")
    assert len(kept) == 2 and kept[0] is docs[1]
    assert compressor.last_report is not None
    assert [e.reason.name for e in compressor.last_report.excluded] == ["Deduplicated"]
    both = CupelDocumentCompressor(max_tokens=1000, deduplicate=False)
    assert len(both.compress_documents(docs, "q")) == 3


def test_k_keeps_the_best_scored_of_the_selection_and_reports_the_rest() -> None:
    docs = scored(
        *[(f"{c}" * 8, s) for c, s in zip("abcde", (0.1, 0.9, 0.5, 0.7, 0.3), strict=True)]
    )
    compressor = CupelDocumentCompressor(max_tokens=1000, k=3)
    kept = compressor.compress_documents(docs, "q")
    assert [d.page_content[0] for d in kept] == ["b", "c", "d"]  # U-shape of the top 3
    report = compressor.last_report
    assert report is not None
    assert sorted(e.reason.filter_name for e in report.excluded) == ["k=3", "k=3"]  # type: ignore[attr-defined]
    assert CupelDocumentCompressor(max_tokens=1000, k=0).compress_documents(docs, "q") == []


def test_the_compressor_sends_its_report_to_the_callbacks() -> None:
    events = Events()
    compressor = CupelDocumentCompressor(max_tokens=30)
    compressor.compress_documents(scored(("x" * 300, 0.5), ("y", 0.4)), "q", callbacks=[events])
    ((name, data),) = events.events
    assert name == "cupel_selection" and data["component"] == "CupelDocumentCompressor"
    assert data.selection_report is compressor.last_report
    assert data["report"] == compressor.last_report.to_dict()  # type: ignore[union-attr]
    assert (data["included"], data["excluded"]) == (1, 1)


def test_the_async_compressor_agrees_and_emits_too() -> None:
    docs = scored(("a" * 400, 0.9), ("b" * 40, 0.8), ("c" * 40, 0.1))
    events = Events()
    compressor = CupelDocumentCompressor(max_tokens=40)
    kept = asyncio.run(compressor.acompress_documents(docs, "q", callbacks=[events]))
    assert list(kept) == list(compressor.compress_documents(docs, "q"))
    assert [name for name, _ in events.events] == ["cupel_selection"]


def test_the_compressor_works_inside_contextual_compression_retriever() -> None:
    vectors = store()
    events = Events()
    retriever = ContextualCompressionRetriever(
        base_compressor=CupelDocumentCompressor(max_tokens=60),
        base_retriever=vectors.as_retriever(search_kwargs={"k": 8}),
    )
    docs = retriever.invoke("longest river", config={"callbacks": [events]})
    assert 0 < len(docs) < 8 and sum(approx(d) for d in docs) <= 60
    stored = {d.id for d in vectors.similarity_search("longest river", k=8)}
    assert {d.id for d in docs} <= stored
    assert [name for name, _ in events.events] == ["cupel_selection"]


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        (
            {"max_tokens": 10.5},
            "max_tokens",
            "CupelDocumentCompressor.max_tokens: must be an integer, or ('fraction', f) with "
            "0 < f <= 1 (a share of the chat model's input window), got 10.5",
        ),
        ({"max_tokens": 10, "k": -1}, "k", "k must be a non-negative int or None, got -1"),
        (
            {"max_tokens": 10, "relevance_key": ""},
            "relevance_key",
            "relevance_key must be a non-empty string or None, got ''",
        ),
        (
            {"max_tokens": 10, "token_counter": "words"},
            "token_counter",
            "token_counter: unknown counter name 'words'; use 'approximate', a tokenizer, a "
            "language model or a callable on text",
        ),
        (
            {"max_tokens": 10, "policy": "rag2"},
            "policy",
            "policy: unknown preset 'rag2'; allowed: a cupel.policy.Policy or one of chat, "
            "code_review, rag, document_qa, tool_use, long_running, recall, debugging",
        ),
        ({"max_tokens": 10, "kind": " "}, "kind", "kind must be a non-empty kind name, got ' '"),
        (
            {"max_tokens": 10, "top_k": 3},
            "top_k",
            "CupelDocumentCompressor: unknown option 'top_k'; allowed: max_tokens, "
            "target_tokens, output_reserve, policy, pipeline, token_counter, headroom, "
            "relevance_key, deduplicate, k, kind, report",
        ),
    ],
)
def test_bad_compressor_settings_name_the_field_the_value_and_what_is_allowed(
    kwargs: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelDocumentCompressor(**kwargs)
    assert raised.value.field == field
    assert str(raised.value) == message


def test_documents_are_not_modified() -> None:
    docs = [*scored(("a" * 400, 0.9), ("b" * 40, 0.8), ("b" * 40, 0.1)), Document("", id="x")]
    before = [d.model_dump() for d in docs]
    order = list(docs)
    CupelDocumentCompressor(max_tokens=40, k=1).compress_documents(docs, "q")
    CupelRetriever(base_retriever=RunnableLambda(lambda q: docs), max_tokens=40).invoke("q")
    assert [d.model_dump() for d in docs] == before
    assert all(a is b for a, b in zip(docs, order, strict=True))


# -- the retriever ---------------------------------------------------------------------------
def test_the_retriever_wraps_a_vector_store_retriever_and_fits_the_budget() -> None:
    vectors = store()
    inner = vectors.as_retriever(search_kwargs={"k": 8})
    retriever = CupelRetriever(base_retriever=inner, max_tokens=80)
    docs = retriever.invoke("Which river is the longest?")
    assert sum(approx(d) for d in docs) <= 80
    assert 1 < len(docs) < 8
    everything = inner.invoke("Which river is the longest?")
    assert {d.id for d in docs} <= {d.id for d in everything}
    report = retriever.last_report
    assert isinstance(report, SelectionReport) and report.total_candidates == 8


def test_the_retriever_prefers_higher_ranked_documents_when_it_must_choose() -> None:
    vectors = store()
    inner = vectors.as_retriever(search_kwargs={"k": 8})
    ranked = inner.invoke("Danube countries")
    retriever = CupelRetriever(base_retriever=inner, max_tokens=10_000, k=2)
    top_two = retriever.invoke("Danube countries")
    assert {d.id for d in top_two} == {d.id for d in ranked[:2]}


def test_k_can_be_given_per_call() -> None:
    retriever = CupelRetriever(
        base_retriever=store().as_retriever(search_kwargs={"k": 8}), max_tokens=10_000
    )
    assert len(retriever.invoke("river", k=3)) == 3
    assert len(retriever.invoke("river")) == 8
    assert len(asyncio.run(retriever.ainvoke("river", k=1))) == 1


def test_the_retriever_in_a_rag_chain_feeds_the_model_a_bounded_context() -> None:
    retriever = CupelRetriever(
        base_retriever=store().as_retriever(search_kwargs={"k": 8}), max_tokens=70
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from the context:\n{context}"), ("human", "{question}")]
    )

    def join(docs: list[Document]) -> str:
        return "\n\n".join(d.page_content for d in docs)

    chain = (
        {"context": retriever | RunnableLambda(join), "question": RunnablePassthrough()}
        | prompt
        | FakeListChatModel(responses=["The Nile."])
        | StrOutputParser()
    )
    events = Events()
    assert (
        chain.invoke("Which river is the longest?", config={"callbacks": [events]}) == "The Nile."
    )
    ((system, human),) = events.model_inputs
    assert retriever.last_report is None  # the chain ran it in its own context
    report = report_from_event(events.events[0][1])
    assert report.included_tokens <= 70
    placed = [FACTS[int(e.item.metadata["langchain.id"][3:])] for e in report.included]
    assert system.content == "Answer from the context:\n" + "\n\n".join(placed)
    assert human.content == "Which river is the longest?"
    assert [name for name, _ in events.events] == ["cupel_selection"]
    assert events.events[0][1]["component"] == "CupelRetriever"


def test_the_retriever_wraps_any_runnable_returning_documents() -> None:
    docs = [Document("x" * 40), Document("y" * 400), Document("z" * 40)]
    retriever = CupelRetriever(base_retriever=RunnableLambda(lambda q: docs), max_tokens=25)
    kept = retriever.invoke("anything")
    assert [d.page_content[0] for d in kept] == ["x", "z"]
    assert kept[0] is docs[0] and kept[1] is docs[2]


def test_bad_retriever_settings_name_the_field() -> None:
    with pytest.raises(ConfigurationError) as raised:
        CupelRetriever(base_retriever="not a retriever", max_tokens=10)
    assert raised.value.field == "base_retriever"
    assert str(raised.value) == (
        "CupelRetriever.base_retriever: Input should be an instance of Runnable, "
        "got 'not a retriever'"
    )
    with pytest.raises(ConfigurationError) as raised:
        CupelRetriever(base_retriever=store().as_retriever(), max_tokens=10, k="3")
    assert raised.value.field == "k"
    assert str(raised.value) == "CupelRetriever.k: Input should be a valid integer, got '3'"
    with pytest.raises(ConfigurationError) as raised:
        CupelRetriever(base_retriever=store().as_retriever(), max_tokens=10, top_k=3)
    assert raised.value.field == "top_k"
    assert "CupelRetriever: unknown option 'top_k'; allowed:" in str(raised.value)
    assert ", k," in str(raised.value) and "retriever" in str(raised.value)
    retriever = CupelRetriever(base_retriever=store().as_retriever(), max_tokens=10)
    with pytest.raises(ConfigurationError) as raised:
        retriever.invoke("q", k=-2)
    assert raised.value.field == "k"
    assert str(raised.value) == "k must be a non-negative int or None, got -2"


def test_a_non_numeric_relevance_score_names_the_document() -> None:
    docs = [Document("a"), Document("b", metadata={"relevance_score": "high"})]
    with pytest.raises(ItemError) as raised:
        CupelDocumentCompressor(max_tokens=100).compress_documents(docs, "q")
    assert raised.value.field == "documents[1].metadata['relevance_score']"
    assert str(raised.value) == (
        "documents[1].metadata['relevance_score'] must be a number (the relevance score), "
        "got str 'high'"
    )
