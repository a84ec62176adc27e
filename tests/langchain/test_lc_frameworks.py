"""The adapters inside LangChain's own machinery, end to end: RunnableWithMessageHistory
over 30 turns, create_agent with the middleware over 30+ rounds of parallel tool calls,
ContextualCompressionRetriever (fake models, in-memory stores)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_core.vectorstores import InMemoryVectorStore

from cupel.counting import MESSAGE_TOKENS, REPLY_TOKENS, estimate_tokens
from cupel_langchain import (
    CupelContextMiddleware,
    CupelDocumentCompressor,
    CupelMessageSelector,
    approximate_message_tokens,
    report_from_event,
    tool_call_problems,
)


def request_tokens(sent: list[BaseMessage], tools: Sequence[BaseTool] = ()) -> int:
    """What a model call costs by cupel's default count: its messages, the reply's tokens
    and the definitions of the tools bound to it (their JSON schema, as OpenAI gets it)."""
    definitions = sum(
        estimate_tokens(json.dumps(convert_to_openai_tool(t))) + MESSAGE_TOKENS for t in tools
    )
    return sum(approximate_message_tokens(m) for m in sent) + REPLY_TOKENS + definitions


class Inputs(BaseCallbackHandler):
    def __init__(self) -> None:
        self.sent: list[list[BaseMessage]] = []
        self.reports: list[Any] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.sent.extend(messages)

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.reports.append(report_from_event(data))


def test_runnable_with_message_history_over_30_turns() -> None:
    store: dict[str, InMemoryChatMessageHistory] = {}
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are terse."), MessagesPlaceholder("history"), ("human", "{q}")]
    )
    model = GenericFakeChatModel(messages=iter(AIMessage(f"reply {i} " * 8) for i in range(30)))
    chain = RunnableWithMessageHistory(
        prompt | CupelMessageSelector(max_tokens=150) | model,
        lambda session: store.setdefault(session, InMemoryChatMessageHistory()),
        input_messages_key="q",
        history_messages_key="history",
    )
    inputs = Inputs()
    for turn in range(30):
        chain.invoke(
            {"q": f"question {turn} " * 5},
            config={"configurable": {"session_id": "s"}, "callbacks": [inputs]},
        )
    assert len(store["s"].messages) == 60  # the history keeps everything
    assert len(inputs.sent) == 30 and len(inputs.reports) == 30
    for turn, sent in enumerate(inputs.sent):
        assert request_tokens(sent) <= 150
        assert sent[0].type == "system" and sent[-1].content == f"question {turn} " * 5
        # whole turns, newest first, contiguous: each kept answer follows its question
        body = sent[1:-1]
        assert [m.type for m in body] == ["human", "ai"] * (len(body) // 2)
        if turn >= 4:
            assert len(body) >= 2  # a 150-token window holds at least the previous turn
            assert body[-1].content == f"reply {turn - 1} " * 8


@tool
def lookup(city: str) -> str:
    """Look up a city's weather."""
    return f"{city}: mild, 14 degrees. " * 3


class ParallelToolModel(GenericFakeChatModel):
    def bind_tools(self, tools: Any, **kwargs: Any) -> ParallelToolModel:
        return self


def test_create_agent_with_the_middleware_over_30_rounds_of_parallel_calls() -> None:
    rounds = 32
    script = [
        AIMessage(
            "",
            tool_calls=[
                {"name": "lookup", "args": {"city": f"city{r}a"}, "id": f"r{r}a"},
                {"name": "lookup", "args": {"city": f"city{r}b"}, "id": f"r{r}b"},
            ],
        )
        for r in range(rounds)
    ] + [AIMessage("All looked up.")]
    middleware = CupelContextMiddleware(max_tokens=300, persistent=False)
    agent = create_agent(
        ParallelToolModel(messages=iter(script)),
        [lookup],
        system_prompt="You look things up.",
        middleware=[middleware],
    )
    inputs = Inputs()
    custom = []
    for mode, chunk in agent.stream(
        {"messages": [HumanMessage("Look up 64 cities.")]},
        config={"callbacks": [inputs], "recursion_limit": 200},
        stream_mode=["custom", "values"],
    ):
        if mode == "custom":
            custom.append(chunk)
        else:
            state = chunk
    assert state["messages"][-1].content == "All looked up."
    assert len(state["messages"]) == 1 + rounds * 3 + 1  # the state keeps every round
    assert len(inputs.sent) == rounds + 1 == len(custom)
    for sent in inputs.sent:
        assert request_tokens(sent, tools=[lookup]) <= 300  # the tool definition is sent too
        assert tool_call_problems(sent) == []  # both parallel results with their call
        assert sent[0].type == "system" and sent[1].content == "Look up 64 cities."
    last = inputs.sent[-1]
    # the newest rounds, contiguous: the last call is there with both results
    assert [m.type for m in last[-3:]] == ["ai", "tool", "tool"]
    assert last[-1].tool_call_id == f"r{rounds - 1}b"
    assert all(c["type"] == "cupel_selection" for c in custom)
    assert custom[-1]["included"] == len(inputs.reports[-1].included)


def test_contextual_compression_retriever_with_the_compressor() -> None:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    store.add_documents(
        [Document(f"Fact {i} about rivers. " * (2 + i % 5), id=f"d{i}") for i in range(12)]
        + [Document("Fact 3 about rivers. " * 5, id="dup")]  # the same text twice
    )
    compressor = CupelDocumentCompressor(max_tokens=80)
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=store.as_retriever(search_kwargs={"k": 13})
    )
    inputs = Inputs()
    kept = retriever.invoke("rivers", config={"callbacks": [inputs]})
    assert 0 < sum(-(-len(d.page_content) // 4) for d in kept) <= 80
    assert len({d.page_content for d in kept}) == len(kept)
    (report,) = inputs.reports
    assert len(report.included) == len(kept)
    assert report.total_candidates == 13
