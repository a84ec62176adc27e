"""Framework citizenship: live settings, copies and serialization, reports as data, no
shared mutable results, LangChain's conventions (issue 11)."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumpd, dumps, loads
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import ConfigurableField, RunnableLambda

from cupel import ConfigurationError, Pipeline, RecencyScorer, SelectionReport
from cupel.counting import REPLY_TOKENS, estimate_tokens
from cupel.policy import Policy
from cupel.presets import preset
from cupel_langchain import (
    CupelContextMiddleware,
    CupelDocumentCompressor,
    CupelMessageSelector,
    CupelRetriever,
    approximate_message_tokens,
    report_from_event,
    select_messages,
)

LOAD = {"valid_namespaces": ["cupel_langchain"]}


def history(turns: int = 12) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("Be brief.")]
    for i in range(turns):
        out.append(HumanMessage(f"question {i} " * 6))
        out.append(AIMessage(f"answer {i} " * 6))
    out.append(HumanMessage("last question"))
    return out


def docs(n: int = 8) -> list[Document]:
    return [
        Document(f"passage {i} " * (5 + i), metadata={"relevance_score": 1 - i / n})
        for i in range(n)
    ]


def kept_tokens(messages: list[BaseMessage]) -> int:
    """What a request sending ``messages`` costs by cupel's default count: the messages
    and the reply's tokens (within budget: at most ``max_tokens``)."""
    return sum(approximate_message_tokens(m) for m in messages) + REPLY_TOKENS


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.data: list[Any] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.data.append(data)


# -- live settings ---------------------------------------------------------------------------
def test_selector_honours_assignment_model_copy_and_configurable_fields() -> None:
    selector = CupelMessageSelector(max_tokens=400)
    wide = kept_tokens(selector.invoke(history()))
    assert wide > 100
    narrow = selector.model_copy(update={"max_tokens": 60})
    assert kept_tokens(narrow.invoke(history())) <= 60
    assert kept_tokens(selector.invoke(history())) == wide  # the original is unchanged
    selector.max_tokens = 60
    assert kept_tokens(selector.invoke(history())) <= 60
    selector.keep_system = False
    assert all(m.type != "system" for m in selector.invoke(history()))
    configurable = CupelMessageSelector(max_tokens=400).configurable_fields(
        max_tokens=ConfigurableField(id="history_tokens")
    )
    bound = configurable.with_config(configurable={"history_tokens": 50})
    assert kept_tokens(bound.invoke(history())) <= 50


def test_bad_assignments_are_refused_and_leave_the_setting_unchanged() -> None:
    selector = CupelMessageSelector(max_tokens=100)
    with pytest.raises(ConfigurationError, match="max_tokens"):
        selector.max_tokens = "many"  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="unknown preset 'nope'"):
        selector.policy = "nope"
    assert (selector.max_tokens, selector.policy) == (100, "chat")
    middleware = CupelContextMiddleware(max_tokens=100)
    with pytest.raises(ConfigurationError, match="unknown preset"):
        middleware.policy = "nope"
    assert middleware.policy == "chat"
    compressor = CupelDocumentCompressor(max_tokens=100)
    with pytest.raises(ConfigurationError, match="unknown preset 'nope'"):
        compressor.policy = "nope"
    with pytest.raises(ConfigurationError, match="needs a chat model"):
        compressor.max_tokens = ("fraction", 0.5)
    assert (compressor.max_tokens, compressor.policy) == (100, "rag")


def test_documents_components_honour_current_fields() -> None:
    compressor = CupelDocumentCompressor(max_tokens=500)
    assert len(compressor.compress_documents(docs(), "q")) == 8
    compressor.k = 2
    assert len(compressor.compress_documents(docs(), "q")) == 2
    small = compressor.model_copy(update={"max_tokens": 10, "k": None})
    assert sum(-(-len(d.page_content) // 4) for d in small.compress_documents(docs(), "q")) <= 10
    retriever = CupelRetriever(base_retriever=RunnableLambda(lambda q: docs()), max_tokens=500)
    assert len(retriever.invoke("q")) == 8
    retriever.max_tokens = 20
    assert sum(-(-len(d.page_content) // 4) for d in retriever.invoke("q")) <= 20


class ServableRetriever(BaseRetriever):
    """A retriever that opts in to LangChain serialization (as some integrations do)."""

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        return cls.__module__.split(".")

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return docs()


def test_retriever_honours_copies_and_configurable_fields_and_round_trips() -> None:
    def tokens(found: list[Document]) -> int:
        return sum(estimate_tokens(d.page_content) for d in found)

    retriever = CupelRetriever(base_retriever=ServableRetriever(), max_tokens=500)
    assert len(retriever.invoke("q")) == 8
    narrow = retriever.model_copy(update={"max_tokens": 20})
    assert 0 < tokens(narrow.invoke("q")) <= 20 and len(retriever.invoke("q")) == 8
    configurable = retriever.configurable_fields(max_tokens=ConfigurableField(id="doc_tokens"))
    assert 0 < tokens(configurable.with_config(configurable={"doc_tokens": 20}).invoke("q")) <= 20
    for copied in (copy.deepcopy(narrow), pickle.loads(pickle.dumps(narrow))):
        assert copied is not narrow and copied.invoke("q") == narrow.invoke("q")
    namespaces = ["cupel_langchain", ServableRetriever.get_lc_namespace()[0]]
    allowed = [CupelRetriever, ServableRetriever]
    restored = loads(dumps(narrow), allowed_objects=allowed, valid_namespaces=namespaces)
    assert type(restored.base_retriever) is ServableRetriever and restored.max_tokens == 20
    assert dumpd(restored) == dumpd(narrow) and restored.invoke("q") == narrow.invoke("q")


def test_middleware_settings_are_live_attributes() -> None:
    middleware = CupelContextMiddleware(max_tokens=400)
    middleware.max_tokens = 40
    assert middleware._selection(None).budget.max_tokens == 40


# -- copies and serialization ------------------------------------------------------------------
COMPONENTS: dict[str, Callable[[], Any]] = {
    "selector": lambda: CupelMessageSelector(max_tokens=90, policy=preset("tool_use")),
    "compressor": lambda: CupelDocumentCompressor(max_tokens=60, k=3),
    "retriever": lambda: CupelRetriever(
        base_retriever=RunnableLambda(lambda q: docs()), max_tokens=60
    ),
    "middleware": lambda: CupelContextMiddleware(max_tokens=70, policy="long_running"),
}


@pytest.mark.parametrize("name", COMPONENTS)
def test_components_deepcopy_and_the_copy_selects_the_same(name: str) -> None:
    component = COMPONENTS[name]()
    copied = copy.deepcopy(component)
    assert copied is not component
    if name == "middleware":
        assert copied._selection(None).budget == component._selection(None).budget
        assert copied.policy == "long_running"
    elif name == "selector":
        assert copied.invoke(history()) == component.invoke(history())
    elif name == "compressor":
        assert copied.compress_documents(docs(), "q") == component.compress_documents(docs(), "q")
    else:
        assert copied.invoke("q") == component.invoke("q")


@pytest.mark.parametrize("name", ["selector", "compressor", "middleware"])
def test_components_pickle(name: str) -> None:
    component = COMPONENTS[name]()
    restored = pickle.loads(pickle.dumps(component))
    assert type(restored) is type(component)
    assert restored.max_tokens == component.max_tokens
    if name == "selector":
        assert restored.invoke(history()) == component.invoke(history())


@pytest.mark.parametrize(
    "make",
    [
        lambda: CupelMessageSelector(max_tokens=90),
        lambda: CupelMessageSelector(max_tokens=90, policy=preset("tool_use"), start_on="human"),
        lambda: CupelMessageSelector(
            max_tokens=90, policy=preset("chat").replace(name="mine", deduplication=True)
        ),
        lambda: CupelDocumentCompressor(max_tokens=60, k=3, policy="document_qa"),
        lambda: CupelDocumentCompressor(max_tokens=60, policy=preset("rag")),
    ],
)
def test_configuration_round_trips_through_langchain_core_load(make: Callable[[], Any]) -> None:
    component = make()
    text = dumps(component)
    restored = loads(text, allowed_objects=[type(component)], **LOAD)
    assert type(restored) is type(component)
    assert dumpd(restored) == dumpd(component)
    if isinstance(component.policy, Policy):
        assert restored.policy == component.policy
    if isinstance(component, CupelMessageSelector):
        assert restored.invoke(history()) == component.invoke(history())
    else:
        assert restored.compress_documents(docs(), "q") == component.compress_documents(docs(), "q")


@pytest.mark.parametrize(
    ("component", "says"),
    [
        (CupelMessageSelector(max_tokens=90, pipeline=Pipeline(RecencyScorer())), "Pipeline"),
        (CupelMessageSelector(max_tokens=90, token_counter=lambda ms: len(ms)), "token_counter"),
        (CupelDocumentCompressor(max_tokens=90, pipeline=Pipeline(RecencyScorer())), "Pipeline"),
        (
            CupelRetriever(base_retriever=RunnableLambda(lambda q: []), max_tokens=9),
            "base_retriever (RunnableLambda) is not serializable",
        ),
    ],
)
def test_components_that_cannot_be_serialized_say_so(component: Any, says: str) -> None:
    data = dumpd(component)
    assert data["type"] == "not_implemented"
    assert "is not serializable" in data["repr"] and says in data["repr"]
    with pytest.raises(NotImplementedError, match=re.escape(says)):
        loads(dumps(component), allowed_objects=[type(component)], **LOAD)


# -- reports travel as data ----------------------------------------------------------------------
def test_report_events_are_json_ready_and_keep_the_object_in_process() -> None:
    events = Events()
    selector = CupelMessageSelector(max_tokens=60)
    selector.invoke(history(), config={"callbacks": [events]})
    compressor = CupelDocumentCompressor(max_tokens=40)
    compressor.compress_documents(docs(), "q", callbacks=[events])
    for data in events.data:
        wire = json.loads(json.dumps(data))
        report = report_from_event(data)
        assert isinstance(report, SelectionReport)
        assert (
            report_from_event(wire).to_dict() == SelectionReport.from_dict(data["report"]).to_dict()
        )
        assert wire["included"] == len(report.included)


# -- no shared mutable results ---------------------------------------------------------------------
def test_last_report_is_per_thread() -> None:
    selector = CupelMessageSelector(max_tokens=2000)
    barrier = threading.Barrier(4)
    seen: dict[int, tuple[int, int]] = {}

    def work(turns: int) -> None:
        for _ in range(20):
            barrier.wait()
            selector.invoke(history(turns))
            report = selector.last_report
            assert report is not None
            seen[turns] = (report.total_candidates, 2 * turns + 2)
            assert report.total_candidates == 2 * turns + 2

    threads = [threading.Thread(target=work, args=(t,)) for t in (3, 5, 7, 9)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and all(a == b for a, b in seen.values())
    assert selector.last_report is None  # this thread ran nothing


def test_last_report_is_per_task_under_concurrent_ainvoke() -> None:
    selector = CupelMessageSelector(max_tokens=2000)

    async def one(turns: int) -> int:
        await asyncio.sleep(0)
        await selector.ainvoke(history(turns))
        await asyncio.sleep(0.001 * (10 - turns))
        report = selector.last_report
        assert report is not None
        return report.total_candidates

    async def main() -> list[int]:
        return list(await asyncio.gather(*(one(t) for t in (1, 4, 6, 9))))

    assert asyncio.run(main()) == [4, 10, 14, 20]


# -- conventions ---------------------------------------------------------------------------------
def test_retriever_takes_base_retriever_and_passes_other_kwargs_on() -> None:
    seen: list[dict[str, Any]] = []

    class Inner(RunnableLambda):  # type: ignore[type-arg]
        def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            seen.append(kwargs)
            return docs()

    retriever = CupelRetriever(base_retriever=Inner(lambda q: docs()), max_tokens=500)
    assert len(retriever.invoke("q", k=2, filter={"lang": "en"})) == 2
    assert seen == [{"filter": {"lang": "en"}}]
    with pytest.raises(ConfigurationError, match="renamed base_retriever"):
        CupelRetriever(retriever=Inner(lambda q: docs()), max_tokens=10)


def test_numpy_scalar_scores_are_relevance() -> None:
    reranked = [
        Document("low " * 10, metadata={"relevance_score": np.float32(0.1)}),
        Document("high " * 10, metadata={"relevance_score": np.float64(0.9)}),
        Document("mid " * 10, metadata={"relevance_score": np.float16(0.5)}),
    ]
    kept = CupelDocumentCompressor(max_tokens=30, k=2).compress_documents(reranked, "q")
    assert [d.page_content.split()[0] for d in kept] == ["high", "mid"]
    with pytest.raises(ConfigurationError, match="finite"):
        CupelDocumentCompressor(max_tokens=30).compress_documents(
            [Document("x", metadata={"relevance_score": np.float32("nan")})], "q"
        )


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("strategy", "last", "policy="),
        ("include_system", True, "keep_system"),
        ("allow_partial", False, "never cuts a message"),
        ("end_on", "ai", "start_on="),
        ("text_splitter", str.split, "never splits"),
    ],
)
def test_trim_messages_parameters_name_the_cupel_equivalent(
    name: str, value: Any, says: str
) -> None:
    for build in (
        lambda: select_messages(history(), max_tokens=50, **{name: value}),
        lambda: CupelMessageSelector(max_tokens=50, **{name: value}),
        lambda: CupelContextMiddleware(max_tokens=50, **{name: value}),
    ):
        with pytest.raises(ConfigurationError) as raised:
            build()
        assert raised.value.field == name
        assert "trim_messages" in str(raised.value) or name == "include_system"
        assert says in str(raised.value) or "system prompt is always kept" in str(raised.value)


class CountingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model with a token counter (real chat models have their own)."""

    def get_num_tokens_from_messages(self, messages: Any, tools: Any = None) -> int:
        return count_tokens_approximately(messages)


def test_a_budget_can_be_a_fraction_of_the_models_input_window() -> None:
    model = CountingFakeModel(messages=iter([]), profile={"max_input_tokens": 400})
    selector = CupelMessageSelector(max_tokens=("fraction", 0.25), token_counter=model)
    assert selector._selection().budget.max_tokens == 100
    window = selector.invoke(history())
    assert model.get_num_tokens_from_messages(window) + REPLY_TOKENS <= 100
    assert select_messages(history(), max_tokens=("fraction", 0.1), token_counter=model)
    with pytest.raises(ConfigurationError, match="profile"):
        CupelMessageSelector(max_tokens=("fraction", 0.5))  # the approximate counter has none
    with pytest.raises(ConfigurationError, match="0 < f <= 1"):
        CupelMessageSelector(max_tokens=("fraction", 1.5), token_counter=model)
    middleware = CupelContextMiddleware(max_tokens=("fraction", 0.5))  # resolved per call
    assert middleware._selection(model).budget.max_tokens == 200
    with pytest.raises(ConfigurationError, match="profile"):
        middleware._selection(GenericFakeChatModel(messages=iter([])))
