"""``embeddings=`` in the LlamaIndex memories: a question worded unlike the fact finds it
by meaning (a real ``BaseEmbedding`` subclass with concepts), through a SimpleChatEngine
with a mock LLM; LlamaIndex's ``MockEmbedding``; each text embedded once across calls;
errors at construction; serialization and copies."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from embedding_testkit import concept_vectors
from li_testkit import provider_problems as tool_call_problems
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.llms.mock import MockLLMWithChatMemoryOfLastCall
from pydantic import PrivateAttr
from test_li_recall import FACT, LIMIT, conversation, positions

from cupel import ConfigurationError
from cupel_llamaindex import CupelChatMemory, CupelMemory

QUESTION = "Where does my sibling reside?"  # no word of the conversation


class ConceptEmbedding(BaseEmbedding):
    """A deterministic LlamaIndex embedding with meaning (see ``embedding_testkit``), which
    records the texts it embeds."""

    _texts: list[str] = PrivateAttr(default_factory=list)
    _queries: list[str] = PrivateAttr(default_factory=list)

    def _get_query_embedding(self, query: str) -> list[float]:
        self._queries.append(query)
        return concept_vectors([query])[0]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        self._texts.append(text)
        return concept_vectors([text])[0]


def asking(rounds: int = 12) -> list[ChatMessage]:
    history = conversation(rounds)
    history[-1] = ChatMessage(role=MessageRole.USER, content=QUESTION)
    return history


def test_chat_memory_recalls_by_meaning() -> None:
    history = asking()
    lexical = CupelChatMemory.from_defaults(
        chat_history=list(history), token_limit=LIMIT, policy="recall"
    ).get()
    assert history[1] not in lexical
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history),
        token_limit=LIMIT,
        policy="recall",
        embeddings=ConceptEmbedding(),
    )
    window = memory.get()
    kept = positions(window, history)
    assert kept[:5] == [0, 1, 2, 3, 4] and kept[-1] == len(history) - 1
    assert tool_call_problems(window) == []
    assert memory.last_report is not None
    (unit,) = memory.last_report.recalled
    assert unit.terms == () and FACT in unit.items[-1].content


def test_the_report_gives_the_words_as_asked_and_the_similarity() -> None:
    """``MockEmbedding`` gives every text the same vector: each recalled unit's similarity
    is 1.0 (None without an embedding), and its words are the question's as written."""
    history = conversation()
    history[-1] = ChatMessage(role=MessageRole.USER, content="Which city do my SISTERS live in?")
    reports = []
    for embeddings in (MockEmbedding(embed_dim=8), None):
        memory = CupelChatMemory.from_defaults(
            chat_history=list(history), token_limit=LIMIT, policy="recall", embeddings=embeddings
        )
        assert history[1] in memory.get()
        assert memory.last_report is not None
        reports.append(memory.last_report)
    mocked, lexical = reports
    unit = next(unit for unit in mocked.recalled if FACT in unit.items[-1].content)
    assert unit.terms == ("sisters",) and unit.similarity == pytest.approx(1.0, abs=1e-12)
    assert mocked.to_dict()["recalled"][0]["similarity"] == pytest.approx(1.0, abs=1e-12)
    assert [u.terms for u in lexical.recalled] == [("sisters",)]
    assert lexical.recalled[0].similarity is None


def test_cupel_memory_recalls_by_meaning() -> None:
    memory = CupelMemory.from_defaults(
        token_limit=LIMIT, policy="recall", embeddings=ConceptEmbedding()
    )
    memory.put_messages(asking())
    contents = [m.content for m in memory.get()]
    assert FACT in contents and contents[-1] == QUESTION


def test_a_simple_chat_engine_sends_the_recalled_turn_and_embeds_each_text_once() -> None:
    model = ConceptEmbedding()
    memory = CupelChatMemory.from_defaults(
        chat_history=asking()[:-1], token_limit=LIMIT, policy="recall", embeddings=model
    )
    llm = MockLLMWithChatMemoryOfLastCall(max_tokens=None, is_chat_model=True)
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)
    engine.chat(QUESTION)
    sent = [m.content for m in llm.last_chat_messages or []]
    assert FACT in sent and sent[-1] == QUESTION
    for turn in range(4):
        engine.chat(f"Anything new about the weather {turn}?")
    embedded: list[str] = model._texts
    assert len(embedded) == len(set(embedded))  # each text once, across five chats
    assert model._queries[0] == QUESTION and len(model._queries) == 5


def test_llamaindex_mock_embedding_gives_valid_windows() -> None:
    history = asking(rounds=20)
    memory = CupelChatMemory.from_defaults(
        chat_history=list(history),
        token_limit=LIMIT,
        policy="recall",
        embeddings=MockEmbedding(embed_dim=8),
    )
    window = memory.get()
    assert window[-1] is history[-1] and tool_call_problems(window) == []


def test_embeddings_without_relevance_fail_at_construction() -> None:
    needs = "embeddings= needs a policy with relevance, e.g. policy='recall'"
    with pytest.raises(ConfigurationError, match=needs):
        CupelChatMemory.from_defaults(token_limit=100, embeddings=ConceptEmbedding())
    with pytest.raises(ConfigurationError, match=needs):
        CupelMemory.from_defaults(token_limit=100, embeddings=ConceptEmbedding())
    memory = CupelMemory.from_defaults(token_limit=100, policy="recall")
    with pytest.raises(ConfigurationError, match="must be a LlamaIndex BaseEmbedding"):
        memory.embeddings = "text-embedding-3-small"
    assert memory.embeddings is None
    with pytest.raises(ConfigurationError, match="must be a LlamaIndex BaseEmbedding"):
        CupelChatMemory.from_defaults(token_limit=100, policy="recall", embeddings=3)


def test_serialization_names_the_embeddings_and_copies_keep_them() -> None:
    fake = MockEmbedding(embed_dim=8)
    memory = CupelChatMemory.from_defaults(
        chat_history=asking(), token_limit=LIMIT, policy="recall", embeddings=fake
    )
    text = memory.to_string()
    with pytest.raises(ConfigurationError, match="custom embeddings"):
        CupelChatMemory.from_string(text)
    again = CupelChatMemory.from_string(text, embeddings=fake)
    assert again.get() == memory.get()
    fresh = CupelChatMemory.from_defaults(
        chat_history=asking(), token_limit=LIMIT, policy="recall", embeddings=fake
    )
    memory.get()  # a used memory (its last selection held) copies too
    copies: list[Any] = [
        pickle.loads(pickle.dumps(memory)),
        copy.deepcopy(memory),
        copy.deepcopy(fresh),
    ]
    for copied in copies:
        assert isinstance(copied.embeddings, MockEmbedding)
        assert copied.embeddings.embed_dim == 8 and copied.get() == memory.get()
    blocks = CupelMemory.from_defaults(token_limit=LIMIT, policy="recall", embeddings=fake)
    assert isinstance(copy.deepcopy(blocks).embeddings, MockEmbedding)
