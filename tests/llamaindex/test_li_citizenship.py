"""Framework citizenship (issue 11): CupelMemory on LlamaIndex's current Memory API,
agents reusing a workflow Context, the postprocessor's conventions, and the real engines
end to end (mock LLMs and embeddings, in-memory stores)."""

from __future__ import annotations

import asyncio
import copy
import pickle
import warnings
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples
from li_testkit import check_window, words
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.chat_engine import CondensePlusContextChatEngine, SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import (
    MockFunctionCallingLLMWithChatMemoryOfLastCall,
    MockLLMWithChatMemoryOfLastCall,
)
from llama_index.core.memory import Memory, StaticMemoryBlock
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from cupel import ConfigurationError, PinnedBudgetError, SelectionReport
from cupel_llamaindex import CupelChatMemory, CupelMemory, CupelNodePostprocessor

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _split(text: str) -> list[str]:
    return text.split()


def _history(turns: int, tool_every: int = 3) -> list[ChatMessage]:
    out = [ChatMessage(role="system", content="Be brief.")]
    for t in range(turns):
        out.append(ChatMessage(role="user", content=f"task {t} " + "w " * (t % 4)))
        if t % tool_every == 0:
            out.append(
                ChatMessage(
                    role="assistant",
                    blocks=[ToolCallBlock(tool_call_id=f"c{t}", tool_name="f", tool_kwargs={})],
                )
            )
            out.append(
                ChatMessage(
                    role="tool", content=f"r{t} " * 3, additional_kwargs={"tool_call_id": f"c{t}"}
                )
            )
        out.append(ChatMessage(role="assistant", content=f"done {t} " + "x " * (t % 3)))
    out.append(ChatMessage(role="user", content="next"))
    return out


# -- CupelMemory: the Memory API, cupel's selection ----------------------------------------------
def test_cupel_memory_is_a_memory_and_chooses_blocks_and_window_under_one_budget() -> None:
    blocks = [
        StaticMemoryBlock(name="profile", static_content="name Ada chemist", priority=0),
        StaticMemoryBlock(name="notes", static_content="note " * 8, priority=2),
        StaticMemoryBlock(name="trivia", static_content="trivia " * 45, priority=1),
    ]
    memory = CupelMemory.from_defaults(
        token_limit=60, tokenizer_fn=_split, memory_blocks=blocks, chat_history_token_ratio=0.6
    )
    assert isinstance(memory, Memory)
    memory.put_messages(_history(6))
    stored = memory.get_all()
    sent = memory.get()
    report = memory.last_report
    assert isinstance(report, SelectionReport)
    system = sent[0]
    assert system.role == MessageRole.SYSTEM
    text = system.content or ""
    assert "name Ada chemist" in text and "note note" in text and "trivia" not in text
    chosen = {e.item.metadata.get("llamaindex_memory_block") for e in report.included} - {None}
    assert chosen == {"profile", "notes"}
    left_out = {e.item.metadata.get("llamaindex_memory_block") for e in report.excluded}
    assert "trivia" in left_out
    total = sum(e.item.tokens for e in report.included)
    assert total <= 60  # history window + blocks, one budget
    # the history part follows the window rule (the memory goes into a copy of the system
    # message: the stored one is unchanged)
    check_window(_stored(sent, stored), stored, budget=60, count=memory._estimate_token_count)
    assert memory.get_all()[0].content == "Be brief."


def _stored(sent: Sequence[ChatMessage], active: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The stored messages behind the history part of a ``get()`` (system messages carry
    the memory blocks in a copy, so they are taken from the store)."""
    out = [m for m in active if m.role == MessageRole.SYSTEM]
    for message in sent:
        if message.role == MessageRole.SYSTEM:
            continue
        (match,) = [
            a
            for a in active
            if a.role == message.role
            and a.blocks == message.blocks
            and a.additional_kwargs == message.additional_kwargs
        ]
        out.append(match)
    return sorted(out, key=lambda m: [id(a) for a in active].index(id(m)))


def test_cupel_memory_pinned_messages_over_the_limit_name_its_budget_and_options() -> None:
    memory = CupelMemory.from_defaults(token_limit=20, tokenizer_fn=_split)
    memory.set(
        [ChatMessage(role="system", content="x " * 30), ChatMessage(role="user", content="q")]
    )
    with pytest.raises(PinnedBudgetError) as raised:
        memory.get()
    message = str(raised.value)
    assert (
        "(token_limit less the memory blocks, the reply's 3 tokens, headroom and agent_reserve)"
        in message
    ), message
    assert "pass pin_system=False or pass pin_last_user=False" in message, message
    assert "max_tokens" not in message


@settings(max_examples=examples(25), deadline=None)
@given(
    turns=st.integers(min_value=1, max_value=14),
    limit=st.integers(min_value=30, max_value=140),
    block=st.integers(min_value=0, max_value=20),
)
def test_cupel_memory_windows_keep_the_window_rule(turns: int, limit: int, block: int) -> None:
    blocks = [StaticMemoryBlock(name="b", static_content="k " * block, priority=1)]
    memory = CupelMemory.from_defaults(
        token_limit=limit, tokenizer_fn=_split, memory_blocks=blocks if block else []
    )
    memory.set(_history(turns))
    active = memory.get_all()
    sent = memory.get()
    report = memory.last_report
    assert report is not None
    assert sum(e.item.tokens for e in report.included) <= limit  # one budget for both
    window = _stored(sent, active)
    check_window(window, active, budget=limit, count=memory._estimate_token_count)
    assert sent[-1].content == "next"


def test_function_agent_runs_with_cupel_memory() -> None:
    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(
        response_generator=lambda messages, **kw: ChatMessage(role="assistant", content="ok")
    )
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(_lookup)], llm=llm)
    memory = CupelMemory.from_defaults(token_limit=200, tokenizer_fn=_split)

    async def run() -> None:
        for i in range(3):
            await agent.run(user_msg=f"question {i}", memory=memory)

    asyncio.run(run())
    assert [m.content for m in memory.get_all() if m.role == MessageRole.USER] == [
        "question 0",
        "question 1",
        "question 2",
    ]
    assert memory.last_report is not None


def _lookup(q: str = "x") -> str:
    """Look something up."""
    return f"found {q}"


# -- agents reusing a Context ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["chat_memory", "memory"])
def test_function_agent_with_a_reused_context_keeps_the_callers_memory(kind: str) -> None:
    counted: list[str] = []

    def counter(message: ChatMessage) -> int:
        counted.append(message.content or "")
        return words(message)

    def respond(messages: Sequence[ChatMessage], **kw: object) -> ChatMessage:
        return ChatMessage(role="assistant", content="answer " * 3)

    llm = MockFunctionCallingLLMWithChatMemoryOfLastCall(response_generator=respond)
    agent = FunctionAgent(tools=[FunctionTool.from_defaults(_lookup)], llm=llm)
    if kind == "chat_memory":
        memory: CupelChatMemory | CupelMemory = CupelChatMemory.from_defaults(
            token_limit=12, message_token_counter=counter
        )
    else:
        memory = CupelMemory.from_defaults(token_limit=12, tokenizer_fn=_split)
    ctx = Context(agent)

    async def run() -> None:
        for i in range(4):
            await agent.run(user_msg=f"question {i} please", memory=memory, ctx=ctx)
            assert await ctx.store.get("memory") is memory  # not a copy
            assert len(memory.get_all()) == 2 * (i + 1)  # the caller's memory is current
            sent = llm.last_chat_messages or []
            assert sent[-1].content == f"question {i} please"
            assert sum(words(m) for m in sent) <= 12  # the custom counter's budget

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(run())
    if kind == "chat_memory":
        assert counted  # the custom counter was used on every run, never reset


# -- the postprocessor's conventions ---------------------------------------------------------------
def test_postprocessor_deduplicates_the_same_text_from_two_files() -> None:
    nodes = [
        NodeWithScore(
            node=TextNode(text=f"passage {i} " * 4, metadata={"file_name": f"f{i}.md"}),
            score=1 - i / 20,
        )
        for i in range(10)
    ]
    nodes.insert(
        1,
        NodeWithScore(
            node=TextNode(text="passage 0 " * 4, metadata={"file_name": "copy-of-f0.md"}),
            score=0.99,
        ),
    )
    post = CupelNodePostprocessor(max_tokens=10_000, tokenizer_fn=_split)
    kept = post.postprocess_nodes(nodes)
    assert len(kept) == 10  # one of the two equal passages
    assert post.last_report is not None
    assert [e.reason.name for e in post.last_report.excluded] == ["Deduplicated"]
    both = CupelNodePostprocessor(max_tokens=10_000, tokenizer_fn=_split, dedup_on="content")
    assert len(both.postprocess_nodes(nodes)) == 11


def test_postprocessor_names_a_misspelt_field_and_refuses_bad_assignments() -> None:
    with pytest.raises(ConfigurationError, match="unknown field 'max_token'"):
        CupelNodePostprocessor(max_token=5)
    post = CupelNodePostprocessor(max_tokens=50)
    with pytest.raises(ConfigurationError, match="unknown preset 'nope'"):
        post.policy = "nope"
    with pytest.raises(ConfigurationError, match="policy"):
        post.policy = 42  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="dedup_on"):
        post.dedup_on = "meta"  # type: ignore[assignment]
    assert (post.policy, post.dedup_on) == ("rag", "text")


# -- the engines, end to end ----------------------------------------------------------------------
def _index() -> VectorStoreIndex:
    documents = [
        Document(text=f"Fact {i} about rivers. " * 6, metadata={"file_name": f"{i % 3}.md"})
        for i in range(9)
    ] + [Document(text="Fact 1 about rivers. " * 6, metadata={"file_name": "dup.md"})]
    return VectorStoreIndex.from_documents(documents, embed_model=MockEmbedding(embed_dim=8))


def test_vector_store_index_query_engine_with_the_postprocessor() -> None:
    post = CupelNodePostprocessor(max_tokens=60, tokenizer_fn=_split)
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None)
    engine = _index().as_query_engine(llm=llm, similarity_top_k=10, node_postprocessors=[post])
    response = engine.query("rivers")
    assert post.last_report is not None
    assert 0 < len(response.source_nodes) <= 10
    texts = [n.node.get_content() for n in response.source_nodes]
    assert len(set(texts)) == len(texts)  # the duplicate file did not take a second slot
    assert (
        sum(len(_split(n.node.get_content(metadata_mode="llm"))) for n in response.source_nodes)
        <= 60
    )


def test_simple_and_condense_plus_context_chat_engines_with_cupel_memory() -> None:
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None, is_chat_model=True)
    memory = CupelMemory.from_defaults(token_limit=80, tokenizer_fn=_split)
    simple = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    for i in range(6):
        simple.chat(f"turn {i} " * 3)
    assert len(memory.get_all()) == 12
    sent = llm.last_chat_messages or []
    assert sent[-1].content == "turn 5 " * 3
    chat_memory = CupelChatMemory.from_defaults(token_limit=120, tokenizer_fn=_split)
    engine = CondensePlusContextChatEngine.from_defaults(
        _index().as_retriever(similarity_top_k=4),
        llm=llm,
        memory=chat_memory,
        node_postprocessors=[CupelNodePostprocessor(max_tokens=40, tokenizer_fn=_split)],
    )
    for i in range(4):
        engine.chat(f"what about river {i}?")
    assert len(chat_memory.get_all()) == 8
    assert chat_memory.last_report is not None


# -- copies ----------------------------------------------------------------------------------
def test_every_llamaindex_component_deep_copies_and_pickles() -> None:
    memory = CupelMemory.from_defaults(
        token_limit=50,
        tokenizer_fn=_split,
        memory_blocks=[StaticMemoryBlock(name="p", static_content="x y", priority=0)],
    )
    memory.put(ChatMessage(role="user", content="hi there"))
    chat_memory = CupelChatMemory.from_defaults(
        token_limit=50, tokenizer_fn=_split, chat_history=[ChatMessage(role="user", content="hi")]
    )
    post = CupelNodePostprocessor(max_tokens=50, tokenizer_fn=_split, dedup_on="content")
    for copy_of in (copy.deepcopy, lambda value: pickle.loads(pickle.dumps(value))):
        mem = copy_of(memory)
        assert mem.tokenizer_fn is _split and mem.session_id == memory.session_id
        mem.put(ChatMessage(role="assistant", content="yo"))  # the copy has its own rows
        assert [m.content for m in mem.get_all()] == ["hi there", "yo"]
        assert [m.content for m in memory.get_all()] == ["hi there"]
        assert "x y" in (mem.get()[0].content or "")
        chat = copy_of(chat_memory)
        assert chat.tokenizer_fn is _split and [m.content for m in chat.get()] == ["hi"]
        assert copy_of(post).dedup_on == "content"


class _WatchingTokenizer:
    """A tokenizer that pickles as a fresh one and, when pickled, notes which private
    attributes the component it serves holds at that moment (what another thread
    using the component would find)."""

    def __init__(self) -> None:
        self.component: object = None
        self.seen: list[set[str]] = []

    def __call__(self, text: str) -> list[str]:
        return text.split()

    def __reduce__(self) -> tuple[type, tuple[()]]:
        private = getattr(self.component, "__pydantic_private__", None) or {}
        self.seen.append(set(private))
        return (_WatchingTokenizer, ())


def test_pickling_leaves_the_live_component_whole() -> None:
    """A ``tokenizer_fn`` that cannot be pickled is refused in one line naming the field
    (LlamaIndex would drop it with a logged warning and the copy would count with another
    tokenizer); the component is left as it was and keeps working. Its caches are never
    taken away from it, not even while it is being pickled (another thread may be using
    it)."""

    def local_split(text: str) -> list[str]:  # a local function: not picklable
        return text.split()

    post = CupelNodePostprocessor(max_tokens=5, tokenizer_fn=local_split)
    chat = CupelChatMemory.from_defaults(
        token_limit=50,
        tokenizer_fn=local_split,
        chat_history=[ChatMessage(role="user", content="hi")],
    )
    for component in (post, chat):
        fields = dict(component.__dict__)
        private = set(component.__pydantic_private__)
        owner = type(component).__name__
        with pytest.raises(ConfigurationError) as caught:
            pickle.dumps(component)
        message = str(caught.value)
        assert message.startswith(f"{owner}.tokenizer_fn: cannot be pickled (<function ")
        assert "pass a module-level function" in message and "\n" not in message
        assert component.__dict__ == fields and component.tokenizer_fn is local_split
        assert set(component.__pydantic_private__) == private
    nodes = [NodeWithScore(node=TextNode(text=t), score=s) for t, s in (("a b c", 0.9), ("d", 0.1))]
    assert [n.node.get_content() for n in post.postprocess_nodes(nodes)] == ["a b c", "d"]
    assert [m.content for m in chat.get()] == ["hi"]

    watching = _WatchingTokenizer()
    post = CupelNodePostprocessor(max_tokens=5, tokenizer_fn=watching)
    chat = CupelChatMemory.from_defaults(token_limit=50, tokenizer_fn=watching)
    for component, caches in (
        (post, {"_pipeline", "_built_from"}),
        (chat, {"_last"}),
    ):
        watching.component, watching.seen = component, []
        clone = pickle.loads(pickle.dumps(component))
        assert watching.seen and all(caches <= seen for seen in watching.seen)
        assert isinstance(clone.tokenizer_fn, _WatchingTokenizer)
