"""``python -m benchmarks.recall --locomo PATH`` on a small file in LoCoMo's format
(``locomo10.json``: samples of sessions of turns and annotated questions): the turns become
messages (the first speaker the user's), the adversarial category and questions without a
known evidence turn are left out, and the command prints the recall of each component."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import recall
from benchmarks.recall_data import load_locomo

RAIN = "the rain kept falling on the grey roofs while the buses crawled past the market stalls"


def filler(session: int, count: int, start: int = 1) -> list[dict[str, Any]]:
    return [
        {
            "speaker": "Ada" if n % 2 else "Bo",
            "dia_id": f"D{session}:{n}",
            "text": f"Day {n}: {RAIN}.",
        }
        for n in range(start, start + count)
    ]


def sample() -> dict[str, Any]:
    """Three sessions: two facts early, a hundred turns of rain in each, a third fact at
    the very end; six questions, of which four count."""
    first = [
        {"speaker": "Ada", "dia_id": "D1:1", "text": "My sister Mara moved to Lisbon in March."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "Lisbon is lovely!"},
        {
            "speaker": "Ada",
            "dia_id": "D1:3",
            "text": "I adopted a kitten called Mochi.",
            "img_url": ["https://example.com/kitten.jpg"],
            "blip_caption": "a photo of a small grey kitten",
        },
        {"speaker": "Bo", "dia_id": "D1:4", "text": "Lisbon is lovely!"},  # said twice
    ]
    last = {"speaker": "Bo", "dia_id": "D3:101", "text": "I started pottery classes last week."}
    return {
        "sample_id": "conv-test",
        "conversation": {
            "speaker_a": "Ada",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": first + filler(1, 100, start=5),
            "session_2_date_time": "1:14 pm on 25 May, 2023",
            "session_2": filler(2, 100),
            "session_3_date_time": "7:55 pm on 9 June, 2023",
            "session_3": [*filler(3, 100), last],
        },
        "qa": [
            {
                "question": "Which city did Ada's sister move to?",
                "answer": "Lisbon",
                "evidence": ["D1:1"],
                "category": 1,
            },
            {
                "question": "What pet did Ada adopt?",
                "answer": "a kitten",
                "evidence": ["D1:3"],
                "category": 4,
            },
            {
                "question": "When did Bo start pottery?",
                "answer": "June 2023",
                "evidence": ["D3:101"],
                "category": 2,
            },
            {
                "question": "Where does Ada's sister live?",
                "answer": "Lisbon",
                "evidence": ["(D1:01; D9:99)"],  # as some ids are written
                "category": 1,
            },
            {
                "question": "Which city did Bo move to?",
                "evidence": ["D1:2"],
                "category": 5,
                "adversarial_answer": "Lisbon",
            },
            {
                "question": "Would Ada enjoy Lisbon?",
                "answer": "Likely yes",
                "evidence": [],
                "category": 3,
            },
        ],
    }


@pytest.fixture
def locomo(tmp_path: Path) -> Path:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([sample()]), encoding="utf-8")
    return path


def test_the_turns_become_messages_and_the_questions_that_count_are_kept(locomo: Path) -> None:
    (dialogue,) = load_locomo(locomo)
    messages = dialogue.messages
    assert messages[0].role == "system" and "Bo" in messages[0].text
    assert len(messages) == 1 + 104 + 100 + 101
    assert (
        messages[1].text
        == "[Session 1 · 1:56 pm on 8 May, 2023] My sister Mara moved to Lisbon in March."
    )
    assert [m.role for m in messages[1:5]] == ["user", "assistant", "user", "assistant"]
    assert messages[3].text.endswith("Mochi. [shares a photo of a small grey kitten]")
    assert messages[4].text == "Lisbon is lovely! [D1:4]"  # a repeated text made unique
    assert len({m.text for m in messages}) == len(messages)
    assert dialogue.sessions == (1, 105, 205)
    assert messages[105].text.startswith("[Session 2 · 1:14 pm on 25 May, 2023] Day 1:")
    questions = dialogue.questions
    assert [q.text for q in questions] == [
        "Which city did Ada's sister move to?",
        "What pet did Ada adopt?",
        "When did Bo start pottery?",
        "Where does Ada's sister live?",
    ]
    assert [q.evidence for q in questions] == [
        (1,),
        (3,),
        (305,),
        (1,),
    ]  # D1:01 is D1:1; D9:99 names no turn
    assert [q.kind for q in questions] == ["category 1", "category 4", "category 2", "category 1"]
    assert messages[305].role == "assistant" and "pottery" in messages[305].text


@pytest.mark.parametrize(
    ("payload", "message"),
    [({"qa": []}, "a list of samples"), ([{"qa": []}], "'conversation'")],
)
def test_a_file_of_another_shape_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: object, message: str
) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(SystemExit):
        recall.main(["--locomo", str(path)])
    err = capsys.readouterr().err
    assert "is not a LoCoMo file" in err and message in err


def test_the_command_prints_each_components_recall(
    locomo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert recall.main(["--locomo", str(locomo)]) == 0
    out = capsys.readouterr().out
    assert "1 dialogues of 306-306 messages" in out and "4 questions, 4 evidence turns" in out
    assert f"reproduce: python -m benchmarks.recall --locomo {locomo}" in out
    rows = {
        line.split(" | ")[1].strip("*"): line.split(" | ")[2:9]
        for line in out.splitlines()
        if line.startswith(("| langchain |", "| llamaindex |"))
    }
    # recall @ 2,000 and @ 4,000, all evidence @ 2,000 and @ 4,000, windows, holes, invalid:
    # the recency windows keep the one recent evidence turn, the recall policy all four;
    # the references' BM25 (no stemming) misses "adopt" for "adopted" but at 4,000 tokens
    # in the recent half; the per-turn ranking leaves holes
    recency = ["25.0%", "25.0%", "25.0%", "25.0%", "8", "0", "0"]
    everything = ["100.0%", "100.0%", "100.0%", "100.0%", "8", "0", "0"]
    assert rows == {
        "select_messages": recency,
        "select_messages recall": everything,
        "trim_messages": recency,
        "CupelChatMemory": recency,
        "CupelChatMemory recall": everything,
        "BM25 turns (reference)": ["75.0%", "75.0%", "75.0%", "75.0%", "8", "6", "0"],
        "BM25 exchanges + recent (reference)": [
            "75.0%",
            "100.0%",
            "75.0%",
            "100.0%",
            "8",
            "0",
            "0",
        ],
    }
    assert (
        "| component | budget | shares a word (3) | paraphrase only (1) | category 1 (2) "
        "| category 2 (1) | category 4 (1) |"
    ) in out
    assert "| select_messages recall | 2,000 | 100.0% | 100.0% | 100.0% | 100.0% | 100.0% |" in out
