"""The recall benchmark (issue 29): its generator, its reference ranking, its checks and
its quick run.

The generator must be deterministic, its evidence indices must point at the planted
statements, and its questions must be worded apart from them; the reference BM25 must
rank a verbatim statement's message first; every recall figure is a share in [0, 1]; the
run is deterministic; cupel's components return windows without holes, valid and within
budget.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from benchmarks import recall
from benchmarks.recall import (
    BM25,
    SELECTORS,
    History,
    Outcome,
    Window,
    buffer_tail,
    histories,
    locate,
    run,
    summarize,
    terms,
)
from benchmarks.recall_data import (
    KINDS,
    Dialogue,
    Kind,
    generate_dialogue,
    generate_dialogues,
    kind,
)

ROOT = Path(__file__).resolve().parents[2]
SEED = recall.SEED
FAST = [s for s in SELECTORS if s.name != "Memory + VectorMemoryBlock"]
"""Every component but the slow one (``Memory`` puts the whole history through SQL)."""


@pytest.fixture(scope="module")
def dialogues() -> list[Dialogue]:
    return generate_dialogues(4, seed=SEED)


@pytest.mark.parametrize("name", ["benchmarks.recall_data", "benchmarks.recall"])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


# -- the generator -----------------------------------------------------------------------------
def test_generation_is_deterministic_and_depends_on_seed_and_number_alone() -> None:
    first = generate_dialogues(3, seed=5)
    assert first == generate_dialogues(3, seed=5)
    assert first[2] == generate_dialogue(2, seed=5)
    assert first[0] != generate_dialogue(0, seed=6)
    assert first[0].messages != first[1].messages


def test_the_dialogues_are_long_multi_session_conversations(dialogues: list[Dialogue]) -> None:
    for d in dialogues:
        messages = d.messages
        assert messages[0].role == "system"
        assert 250 <= len(messages) <= 700 and 16 <= len(d.sessions) <= 28
        assert 8_000 <= d.tokens() <= 26_000
        for number, first in enumerate(d.sessions):
            assert messages[first].role == "user"
            assert messages[first].text.startswith(f"[Session {number + 1} · ")
        texts = [m.text for m in messages]
        assert len(set(texts)) == len(texts)  # every text unique
        assert any(m.calls for m in messages) and any(m.role == "tool" for m in messages)
        vocabulary = {t for m in messages for t in terms(m.text)}
        assert len(vocabulary) >= 500, len(vocabulary)


def test_the_evidence_indices_point_at_the_planted_statements(dialogues: list[Dialogue]) -> None:
    kinds = {k.name for k in KINDS}
    for d in dialogues:
        texts = [m.text for m in d.messages]
        assert 10 <= len(d.questions) <= 13
        for q in d.questions:
            assert q.kind in kinds and q.owner in ("user", "assistant")
            assert len(q.evidence) == len(q.statements) >= 1
            assert list(q.evidence) == sorted(q.evidence)
            for index, statement in zip(q.evidence, q.statements, strict=True):
                assert d.messages[index].role == q.owner  # said by the fact's owner
                assert statement in texts[index]
                # the evidence is found by text as well: in no other message
                assert [i for i, t in enumerate(texts) if texts[index] in t] == [index]
            if q.updated:
                (stale,) = q.stale
                assert stale < min(q.evidence) and stale not in q.evidence
            else:
                assert q.stale == ()


def test_the_distractors_and_updates_are_there() -> None:
    many = generate_dialogues(8, seed=SEED)
    questions = [q for d in many for q in d.questions]
    assert sum(q.updated for q in questions) >= 5
    assert sum(len(q.evidence) == 2 for q in questions) >= 3  # the two-part trip
    assert {q.owner for q in questions} == {"user", "assistant"}
    # the same kind of fact about the other speaker: a statement of the same template
    # family by the other role, in some dialogues
    mimics = 0
    for d in many:
        for q in d.questions:
            kind = recall_kind(q.kind)
            other = "assistant" if q.owner == "user" else "user"
            heads = {t.split("{")[0] for t in kind.statements if not t.startswith("{")}
            mimics += any(
                m.role == other and any(h and h in m.text for h in heads) for m in d.messages
            )
    assert mimics >= 10


def recall_kind(name: str) -> Kind:
    return kind(name)


def test_the_questions_are_worded_apart_from_their_evidence(dialogues: list[Dialogue]) -> None:
    overlaps = [
        len(set(terms(q.text)) & {t for s in q.statements for t in terms(s)})
        for d in dialogues
        for q in d.questions
    ]
    assert max(overlaps) <= 4
    assert sum(o == 0 for o in overlaps) >= 0.5 * len(overlaps)  # most: no shared term
    assert any(o > 0 for o in overlaps)  # some: a word in common (not the answer)
    for d in dialogues:
        for q in d.questions:
            assert q.text not in {m.text for m in d.messages}


# -- the reference ranking --------------------------------------------------------------------
_TERM = st.sampled_from("abcdef")


@settings(max_examples=examples(100), deadline=None)
@given(
    docs=st.lists(st.lists(_TERM, max_size=8), min_size=1, max_size=6),
    query=st.lists(st.sampled_from("abcdefz"), max_size=4),
)
def test_bm25_matches_the_formula_term_by_term(docs: list[list[str]], query: list[str]) -> None:
    """Okapi BM25 written out per document and term: k1 = 1.5, b = 0.75, the idf of
    Lucene (always positive), a query term counted once per occurrence."""
    n = len(docs)
    average = sum(len(d) for d in docs) / n or 1.0
    expected = []
    for doc in docs:
        score = 0.0
        for term in query:
            tf = doc.count(term)
            if not tf:
                continue
            df = sum(term in d for d in docs)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * 2.5 / (tf + 1.5 * (0.25 + 0.75 * len(doc) / average))
        expected.append(score)
    assert BM25(docs).scores(query) == pytest.approx(expected)


def test_bm25_ranks_a_verbatim_statements_evidence_first(dialogues: list[Dialogue]) -> None:
    for d in dialogues:
        (build,) = histories(d, ["langchain"]).values()
        index = build(d.questions[0]).index
        for q in d.questions:
            for evidence in q.evidence:
                text = d.messages[evidence].text
                scores = index.turn_ranking.scores(terms(text))
                best = max(range(len(scores)), key=lambda k: scores[k])
                assert index.turns[best] == evidence, (q.text, text)
                # and the window of the reference baseline keeps it at the smallest budget
                verbatim = dataclasses.replace(q, text=text)
                history = build(verbatim)
                window = recall.bm25_turns(history, 600)
                positions, _ = locate(window.messages, history)
                assert evidence in positions


# -- examining windows ------------------------------------------------------------------------
def _history(d: Dialogue, framework: str, q: int = 0) -> History:
    return histories(d, [framework])[framework](d.questions[q])


def test_locate_finds_messages_by_identity_text_and_an_injected_block(
    dialogues: list[Dialogue],
) -> None:
    from llama_index.core.base.llms.types import ChatMessage, TextBlock

    history = _history(dialogues[0], "llamaindex")
    system = history.messages[0]
    injected = ChatMessage(
        role="system", blocks=[TextBlock(text="<memory>recalled words</memory>"), *system.blocks]
    )
    copy = history.messages[5].model_copy(deep=True)
    positions, extra = locate([injected, copy, history.messages[-1]], history)
    assert positions == [0, 5, history.task]
    assert "recalled words" in extra and system.content not in extra


@pytest.mark.parametrize("framework", ["langchain", "llamaindex"])
def test_locate_maps_copies_of_every_message_to_its_own_position(
    dialogues: list[Dialogue], framework: str
) -> None:
    history = _history(dialogues[0], framework)
    assert any(m.role == "tool" for m in dialogues[0].messages)
    copies = [m.model_copy(deep=True) for m in history.messages]
    assert locate(copies, history) == (list(range(len(history.messages))), "")


@pytest.mark.slow
def test_chat_memory_buffer_reads_the_same_window_from_the_tail(dialogues: list[Dialogue]) -> None:
    from llama_index.core.memory import ChatMemoryBuffer

    for d in dialogues[:1]:
        for q in (0, len(d.questions) - 1):
            history = _history(d, "llamaindex", q)
            for budget in (600, 4000):
                tail = buffer_tail(history, budget)
                assert len(tail) < len(history.messages)
                whole = ChatMemoryBuffer.from_defaults(
                    chat_history=list(history.messages), token_limit=budget
                ).get()
                short = ChatMemoryBuffer.from_defaults(chat_history=tail, token_limit=budget).get()
                assert [m.content for m in whole] == [m.content for m in short]


def test_no_component_modifies_the_history(dialogues: list[Dialogue]) -> None:
    d = dialogues[1]
    for selector in SELECTORS:
        history = _history(d, selector.framework, 2)
        before = [m.model_dump() for m in history.messages]
        selector.select(history, 2000)
        assert [m.model_dump() for m in history.messages] == before, selector.name


def _fields(outcomes: list[Outcome]) -> list[dict[str, object]]:
    return [{k: v for k, v in dataclasses.asdict(o).items() if k != "seconds"} for o in outcomes]


def test_a_small_run_is_deterministic_with_shares_in_range_and_sound_cupel_windows(
    dialogues: list[Dialogue],
) -> None:
    d = dataclasses.replace(dialogues[0], questions=dialogues[0].questions[:4])
    first = run([d], (2000,), FAST)
    assert _fields(first) == _fields(run([d], (2000,), FAST))
    assert len(first) == 4 * len(FAST)
    assert all(o.error is None and 0 <= o.found <= o.evidence for o in first)
    assert all(("shares a word" in o.groups) != ("paraphrase only" in o.groups) for o in first)
    assert len(recall.breakdown(first, FAST).splitlines()) == 2 + len(FAST)
    for s in summarize(first, FAST):
        assert 0 <= s.recall <= 1 and 0 <= s.complete <= 1 and s.questions == 4
        if s.group == "cupel":
            assert (s.holes, s.invalid, s.over_budget, s.task_lost) == (0, 0, 0, 0), s


@pytest.mark.slow
def test_the_vector_memory_window_is_the_same_on_every_run(dialogues: list[Dialogue]) -> None:
    """``MockEmbedding`` ties every similarity: the store breaks the ties by node ids, which
    the benchmark's store numbers in insertion order (LlamaIndex's are random)."""
    selector = next(s for s in SELECTORS if s.name == "Memory + VectorMemoryBlock")
    history = _history(dialogues[0], "llamaindex", 1)
    first, second = (selector.select(history, 2000) for _ in range(2))
    texts = [[recall._text(m) for m in w.messages] for w in (first, second)]
    assert texts[0] == texts[1]
    assert locate(first.messages, history)[1]  # a retrieved block is there


def test_an_evidence_turn_inside_a_memory_block_counts(dialogues: list[Dialogue]) -> None:
    d = dialogues[0]
    q = d.questions[0]
    history = _history(d, "langchain")
    from langchain_core.messages import SystemMessage

    block = SystemMessage("<memory>" + history.texts[q.evidence[0]] + "</memory>")
    selector = next(s for s in SELECTORS if s.name == "trim_messages")
    found, *_ = recall.examine(selector, history, q, Window([block, history.messages[-1]]), 4000)
    assert found == 1


# -- the quick run and the command --------------------------------------------------------------
@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    path = tmp_path_factory.mktemp("recall") / "quick.json"
    assert recall.main(["--quick", "--json", str(path)]) == 0
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.slow
def test_the_quick_run_covers_every_component_and_budget(quick: dict[str, object]) -> None:
    summary = quick["summary"]
    outcomes = quick["outcomes"]
    assert isinstance(summary, list) and isinstance(outcomes, list)
    questions = sum(
        len(d.questions) for d in generate_dialogues(recall.QUICK_CONVERSATIONS, seed=SEED)
    )
    assert len(outcomes) == questions * len(recall.BUDGETS) * len(SELECTORS)
    assert {(r["selector"], r["budget"]) for r in summary} == {
        (s.name, b) for s in SELECTORS for b in recall.BUDGETS
    }
    for row in summary:
        assert 0 <= row["recall"] <= 1 and 0 <= row["complete"] <= 1
        if row["group"] == "cupel":
            assert row["errors"] == row["holes"] == row["invalid"] == 0, row
            assert row["over_budget"] == row["task_lost"] == 0, row
    recall_of = {(r["selector"], r["budget"]): r["recall"] for r in summary}
    for budget in recall.BUDGETS:  # the reference ranking beats the recency windows
        assert recall_of[("BM25 turns (reference)", budget)] > recall_of[("trim_messages", budget)]
        # and so does the recall policy, in both frameworks
        assert (
            recall_of[("select_messages recall", budget)] > recall_of[("select_messages", budget)]
        )
        assert (
            recall_of[("CupelChatMemory recall", budget)] > recall_of[("CupelChatMemory", budget)]
        )


def test_the_cost_run_times_both_policies_on_long_histories() -> None:
    history = recall.long_history(300)
    assert len(history) <= 300 and history[-1].role == "user"
    ids = [c.id for m in history for c in m.calls]
    assert len(ids) == len(set(ids))  # tool-call ids made unique across conversations
    rows = recall.cost(sizes=(300,), budget=500, repeats=1)
    assert [r["component"] for r in rows] == ["select_messages", "CupelChatMemory"]
    assert all(r["chat_ms"] > 0 and r["recall_ms"] > 0 and r["embeddings_ms"] > 0 for r in rows)
    assert recall.cost_table(rows).count("\n") == 3
    # the embedding embeds the history once (the first call), then nothing
    assert all(r["first_texts"] > 0 and r["later_texts"] == 0 for r in rows)


def test_the_embedding_row_selects_valid_windows_and_embeds_each_text_once(
    dialogues: list[Dialogue],
) -> None:
    d = dataclasses.replace(dialogues[0], questions=dialogues[0].questions[:3])
    before = recall.EMBEDDINGS.texts
    first = run([d], (2000,), recall.EMBEDDING_SELECTORS)
    embedded = recall.EMBEDDINGS.texts - before
    assert all(o.error is None and 0 <= o.found <= o.evidence for o in first)
    (summary,) = summarize(first, recall.EMBEDDING_SELECTORS)
    assert (summary.holes, summary.invalid, summary.over_budget) == (0, 0, 0)
    again = run([d], (2000,), recall.EMBEDDING_SELECTORS)
    assert _fields(again) == _fields(first)
    assert recall.EMBEDDINGS.texts - before == embedded  # nothing new the second time


@pytest.mark.slow
def test_the_command_prints_the_table_and_rewrites_the_docs_block(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{recall.TABLE_START}\nold\n{recall.TABLE_END}\nend\n", encoding="utf-8")
    argv = ["--conversations", "1", "--budgets", "1500", "--seed", "3", "--docs", str(doc)]
    assert recall.main(argv) == 0
    out = capsys.readouterr().out
    assert "reproduce: python -m benchmarks.recall --conversations 1 --seed 3 --budgets 1500" in out
    assert "| framework | component | recall @ 1,500 |" in out
    text = doc.read_text(encoding="utf-8")
    assert text.startswith("intro\n") and text.endswith("end\n") and "old" not in text
    assert "ms / call" not in text  # the docs block depends on the seed alone
    assert "| component | budget | shares a word (" in text


def test_the_docs_hold_a_table_block_and_are_in_the_nav() -> None:
    doc = (ROOT / "docs" / "recall.md").read_text(encoding="utf-8")
    assert recall.TABLE_START in doc and recall.TABLE_END in doc
    assert "python -m benchmarks.recall" in doc
    for selector in SELECTORS:
        assert f"| {selector.name} |" in doc or f"| **{selector.name}** |" in doc
    assert "recall.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
