"""``--policy recall`` on a chat transcript: the latest user message is the query, an old
turn comes back whole, and the text report says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import run, write_jsonl

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
