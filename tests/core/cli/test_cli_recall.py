"""``--policy recall`` on a chat transcript: the latest user message is the query, an old
turn comes back whole, and the text report says why."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_testkit import run, write_jsonl

from cupel import ContextBudget, ContextItem, Pipeline
from cupel.cli._format import format_report
from cupel.scorers.relevance import hashed_terms

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "My cat is called Miso and she loves boxes."},
    {"role": "assistant", "content": "What a nice name."},
]
for day in range(10):
    CHAT += [
        {"role": "user", "content": f"It rained again today, day {day}."},
        {"role": "assistant", "content": "Grey here too."},
    ]
CHAT.append({"role": "user", "content": "Thanks. What is my cat called again?"})


def test_a_transcript_recalls_the_old_turn_whole(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path, CHAT, "chat.jsonl")
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "70", "--policy", "recall")
    assert status == 0, err
    contents = [message["content"] for message in json.loads(out)]
    assert contents[:3] == [CHAT[0]["content"], CHAT[1]["content"], CHAT[2]["content"]]
    assert contents[-1] == CHAT[-1]["content"]
    assert "(the latest user message)" in err
    recalled = [line for line in err.splitlines() if "(Recalled: unit score 1.000" in line]
    assert len(recalled) == 2 and "matched: cat" in recalled[0]
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "70", "--policy", "chat")
    assert CHAT[1]["content"] not in [message["content"] for message in json.loads(out)]


def test_the_text_report_gives_the_words_as_asked_and_the_similarity() -> None:
    """The ``select`` text report of a pipeline with an embedding (the CLI takes none:
    a live model) says which of the question's words a recalled unit matched, as the
    question wrote them, and its similarity to the question."""
    start = datetime(2024, 5, 1, tzinfo=timezone.utc)
    texts = [message["content"] for message in CHAT[1:-1]] + ["So what are my CATS called?"]
    items = [
        ContextItem(content=text, tokens=8, timestamp=start + timedelta(minutes=i))
        for i, text in enumerate(texts)
    ]
    pipeline = Pipeline.from_policy("recall").with_query(texts[-1]).with_embedder(hashed_terms)
    budget = ContextBudget(max_tokens=48, target_tokens=48)
    result = pipeline.dry_run(items, budget)
    assert result.report is not None
    (unit,) = result.report.recalled
    assert unit.terms == ("cats", "called") and unit.similarity is not None
    (question,), (fact,) = hashed_terms([texts[-1]]), hashed_terms([texts[0]])
    cosine = float(np.dot(question, fact) / np.linalg.norm(question) / np.linalg.norm(fact))
    assert unit.similarity == pytest.approx(cosine, abs=1e-12)
    text = format_report(result.report, result, budget)
    line = next(line for line in text.splitlines() if texts[0][:40] in line)
    assert line.endswith(
        f"(Recalled: unit score {unit.score:.3f}, matched: cats, called, similarity {cosine:.3f})"
    )
