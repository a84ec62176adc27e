"""``embeddings=`` in the LangChain history components: a question worded unlike the fact
finds it by meaning (a real ``Embeddings`` subclass with concepts), end to end in an LCEL
chain and an agent; LangChain's fake embeddings; the model embeds each text once across
calls over a growing history; errors at construction; serialization and copies."""

from __future__ import annotations

import copy
import json
import pickle

import numpy as np
import pytest
from embedding_testkit import concept_vectors
from langchain.agents import create_agent
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings, FakeEmbeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.load import dumpd, dumps, loads
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from test_lc_middleware import Recorder, river_length, scripted_model
from test_lc_recall import BUDGET, conversation, tokens

from cupel import ConfigurationError, SelectionReport
from cupel.scorers.embedding import Embedder
from cupel.scorers.relevance import hashed_terms
from cupel_langchain import (
    CupelContextMiddleware,
    CupelMessageSelector,
    report_from_event,
    select_messages,
    select_messages_with_report,
    tool_call_problems,
)

QUESTION = "Where does my sibling reside?"  # no word of the conversation


class ConceptEmbeddings(Embeddings):
    """A deterministic LangChain embedding with meaning (see ``embedding_testkit``), which
    records what it is asked to embed."""

    def __init__(self) -> None:
        self.documents: list[list[str]] = []
        self.queries: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(list(texts))
        return concept_vectors(texts)

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return concept_vectors([text])[0]


def asking(question: str = QUESTION, rounds: int = 12) -> list[BaseMessage]:
    history = conversation(rounds)
    history[-1] = HumanMessage(question, id="question")
    return history


def test_a_question_worded_unlike_the_fact_finds_it_by_meaning() -> None:
    history = asking()
    lexical = select_messages(history, max_tokens=BUDGET, policy="recall")
    assert "fact" not in [m.id for m in lexical]  # no shared word: lexical recall misses it
    kept, report = select_messages_with_report(
        history, max_tokens=BUDGET, policy="recall", embeddings=ConceptEmbeddings()
    )
    ids = [m.id for m in kept]
    assert ids[:5] == ["s", "fact", "call", "result", "answer"]  # the whole unit, in place
    assert ids[-1] == "question" and tool_call_problems(kept) == []
    assert tokens(kept) <= BUDGET
    (unit,) = report.recalled
    assert unit.score > 0 and unit.terms == ()  # by meaning alone: no matched term


def test_an_lcel_chain_with_the_selector_sends_the_recalled_turn() -> None:
    selector = CupelMessageSelector(
        max_tokens=BUDGET, policy="recall", embeddings=ConceptEmbeddings()
    )
    model = GenericFakeChatModel(messages=iter([AIMessage("In Lisbon.")]))
    recorder = Recorder()
    reply = (selector | model).invoke(asking(), config={"callbacks": [recorder]})
    assert reply.content == "In Lisbon."
    sent = recorder.model_inputs[0]
    assert [m.id for m in sent][1:3] == ["fact", "call"]
    (name, data) = recorder.events[-1]
    assert name == "cupel_selection" and data["report"]["recalled"]


def test_the_middleware_recalls_by_meaning_in_an_agent() -> None:
    earlier: list[BaseMessage] = conversation()[1:-1]
    middleware = CupelContextMiddleware(
        max_tokens=260, policy="recall", embeddings=ConceptEmbeddings()
    )
    agent = create_agent(
        scripted_model(), [river_length], system_prompt="Be brief.", middleware=[middleware]
    )
    recorder = Recorder()
    task = HumanMessage("How long is the river by my sibling's home?", id="task")
    agent.invoke({"messages": [*earlier, task]}, config={"callbacks": [recorder]})
    first = recorder.model_inputs[0]
    assert [m.id for m in first[1:3]] == ["fact", "call"]
    assert tool_call_problems(first) == []
    assert report_from_event(recorder.events[0][1]).recalled


def test_each_text_is_embedded_once_across_calls_over_a_growing_history() -> None:
    model = ConceptEmbeddings()
    selector = CupelMessageSelector(
        max_tokens=BUDGET, policy="recall", embeddings=model, report=False
    )
    history = asking(rounds=4)
    selector.invoke(history)
    first = sum(map(len, model.documents))
    for turn in range(5):
        history = [
            *history,
            AIMessage(f"Reply {turn}.", id=f"r{turn}"),
            HumanMessage(f"Next question {turn}?", id=f"n{turn}"),
        ]
        before = len(model.documents)
        select_messages(history, max_tokens=BUDGET, policy="recall", embeddings=model)
        new = [text for call in model.documents[before:] for text in call]
        assert len(new) <= 2  # at most the two new units' texts, each once
    sent = [text for call in model.documents for text in call]
    assert len(sent) == len(set(sent)) and len(sent) <= first + 10
    assert model.queries == [QUESTION, *(f"Next question {t}?" for t in range(5))]


@pytest.mark.parametrize("fake", [DeterministicFakeEmbedding(size=32), FakeEmbeddings(size=32)])
def test_langchains_fake_embeddings_give_valid_windows(fake: Embeddings) -> None:
    history = asking(rounds=20)
    kept = select_messages(history, max_tokens=BUDGET, policy="recall", embeddings=fake)
    assert kept[-1].id == "question" and tool_call_problems(kept) == []
    assert tokens(kept) <= BUDGET


def cosine(left: list[float], right: list[float]) -> float:
    return float(np.dot(left, right) / np.linalg.norm(left) / np.linalg.norm(right))


def test_the_report_gives_the_words_as_asked_and_the_similarity() -> None:
    """A unit recalled with an embedding: the question's words it matched as the question
    wrote them (``sisters``, not the term ``sister``), and its best cosine with the
    question by the model's own vectors, in the report, its wire form and the selector's
    event (through JSON)."""
    fake = DeterministicFakeEmbedding(size=32)
    history = asking("Which city do my SISTERS live in now?")
    kept, report = select_messages_with_report(
        history, max_tokens=BUDGET, policy="recall", embeddings=fake
    )
    assert [m.id for m in kept][1] == "fact"
    unit = next(unit for unit in report.recalled if unit.items[-1].content == history[1].content)
    assert unit.terms == ("sisters",)
    question = fake.embed_query(history[-1].text)
    best = max(cosine(question, v) for v in fake.embed_documents([i.content for i in unit.items]))
    assert unit.similarity == pytest.approx(best, abs=1e-12)
    assert SelectionReport.from_dict(report.to_dict()).recalled == report.recalled
    recorder = Recorder()
    CupelMessageSelector(max_tokens=BUDGET, policy="recall", embeddings=fake).invoke(
        history, config={"callbacks": [recorder]}
    )
    data = json.loads(json.dumps(recorder.events[-1][1]))
    why = [(u.terms, u.similarity) for u in report.recalled]
    sent = data["report"]["recalled"]
    assert [(tuple(u["terms"]), u["similarity"]) for u in sent] == why
    assert [(u.terms, u.similarity) for u in report_from_event(data).recalled] == why


@pytest.mark.parametrize("fake", [DeterministicFakeEmbedding(size=32), FakeEmbeddings(size=32)])
def test_the_similarity_is_a_cosine_and_none_without_an_embedding(fake: Embeddings) -> None:
    history = conversation(rounds=20)
    with_model = select_messages_with_report(
        history, max_tokens=BUDGET, policy="recall", embeddings=fake
    )[1]
    assert with_model.recalled
    assert all(-1.0 <= (u.similarity or 2.0) <= 1.0 for u in with_model.recalled)
    lexical = select_messages_with_report(history, max_tokens=BUDGET, policy="recall")[1]
    assert lexical.recalled and all(u.similarity is None for u in lexical.recalled)
    assert lexical.to_dict()["recalled"][0]["similarity"] is None


def test_deterministic_fake_embeddings_give_the_same_window_every_time() -> None:
    history = asking(rounds=20)
    windows = {
        tuple(
            m.id
            for m in select_messages(
                history,
                max_tokens=BUDGET,
                policy="recall",
                embeddings=DeterministicFakeEmbedding(size=32),
            )
        )
        for _ in range(3)
    }
    assert len(windows) == 1


def test_a_cupel_embedder_is_taken_as_it_is() -> None:
    embedder = Embedder(concept_vectors, name="concepts")
    kept = select_messages(asking(), max_tokens=BUDGET, policy="recall", embeddings=embedder)
    assert "fact" in [m.id for m in kept] and embedder.calls == 2


def test_embeddings_without_relevance_fail_at_construction() -> None:
    model = ConceptEmbeddings()
    needs = "embeddings= needs a policy with relevance, e.g. policy='recall'"
    with pytest.raises(ConfigurationError, match=needs):
        CupelMessageSelector(max_tokens=100, embeddings=model)
    with pytest.raises(ConfigurationError, match=needs):
        CupelContextMiddleware(max_tokens=100, policy="rag", embeddings=model)
    with pytest.raises(ConfigurationError, match=needs):
        select_messages(asking(), max_tokens=100, embeddings=model)
    selector = CupelMessageSelector(max_tokens=100, policy="recall", embeddings=model)
    with pytest.raises(ConfigurationError, match=needs):
        selector.policy = "chat"
    assert selector.policy == "recall"  # left as it was
    with pytest.raises(ConfigurationError, match="must be a LangChain Embeddings"):
        CupelMessageSelector(max_tokens=100, policy="recall", embeddings=hashed_terms)
    middleware = CupelContextMiddleware(max_tokens=100, policy="recall")
    with pytest.raises(ConfigurationError, match="must be a LangChain Embeddings"):
        middleware.embeddings = "text-embedding-3-small"
    assert middleware.embeddings is None


def test_a_selector_with_embeddings_is_not_serializable_but_copies() -> None:
    fake = DeterministicFakeEmbedding(size=16)
    selector = CupelMessageSelector(max_tokens=BUDGET, policy="recall", embeddings=fake)
    data = dumpd(selector)
    assert data["type"] == "not_implemented"
    assert "its embeddings (DeterministicFakeEmbedding) is a live embedding model" in data["repr"]
    with pytest.raises(NotImplementedError):
        loads(dumps(selector), valid_namespaces=["cupel_langchain"])
    history = asking(rounds=20)
    window = [m.id for m in selector.invoke(history)]
    for copied in (pickle.loads(pickle.dumps(selector)), copy.deepcopy(selector)):
        assert copied.embeddings == fake
        assert [m.id for m in copied.invoke(history)] == window
    middleware = CupelContextMiddleware(max_tokens=BUDGET, policy="recall", embeddings=fake)
    assert copy.deepcopy(middleware).embeddings == fake
    assert pickle.loads(pickle.dumps(middleware)).embeddings == fake
