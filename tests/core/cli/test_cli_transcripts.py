"""Chat transcripts on the command line: OpenAI-style messages in, the conversation window
by default, the messages as given out; items files as before."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import ITEMS, assert_one_line_error, run, write_items, write_jsonl

from cupel.cli._transcript import parse_transcript
from cupel.counting import Media, media_pricer


def chat(turns: int = 20) -> list[dict[str, Any]]:
    """A system prompt, then ``turns`` question/answer pairs; turn 3 calls a tool."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful bot."}]
    for n in range(1, turns + 1):
        messages.append({"role": "user", "content": f"Question {n}: what about topic {n}?"})
        if n == 3:
            call = {"name": "lookup", "arguments": json.dumps({"topic": n})}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
                }
            )
            messages.append({"role": "tool", "tool_call_id": "call_1", "content": "found it"})
        words = " ".join(["detail"] * (3 if n % 2 else 30))  # long and short answers
        messages.append({"role": "assistant", "content": f"Answer {n}: {words}."})
    return messages


def select(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> tuple[list[Any], str]:
    status, out, err = run(capsys, "select", str(path), *flags)
    assert status == 0, err
    return json.loads(out), err


def test_a_transcript_gets_the_conversation_window_without_holes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages = chat()
    window, err = select(
        capsys, write_jsonl(tmp_path, messages, "chat.jsonl"), "--max-tokens", "300"
    )
    # The messages exactly as given: the system prompt, then a contiguous stretch of whole
    # turns ending with the latest answer (greedy by score per token left holes here).
    assert window[0] == messages[0]
    start = messages.index(window[1])
    assert window[1:] == messages[start:] and window[1]["role"] == "user"
    assert 3 < len(window) < len(messages)
    assert "chosen by: policy chat (the default for chat transcripts)" in err
    assert "OutsideWindow" in err


def test_array_request_body_and_jsonl_read_the_same(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages = chat(8)
    jsonl, _ = select(capsys, write_jsonl(tmp_path, messages, "chat.jsonl"), "--max-tokens", "200")
    array = tmp_path / "chat.json"
    array.write_text(json.dumps(messages, indent=2), encoding="utf-8")
    body = tmp_path / "request.json"
    body.write_text(json.dumps({"model": "gpt-4o", "messages": messages}), encoding="utf-8")
    assert select(capsys, array, "--max-tokens", "200")[0] == jsonl
    assert select(capsys, body, "--max-tokens", "200")[0] == jsonl


def test_a_tool_call_and_its_result_stay_together(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    messages = chat(3)
    path = write_jsonl(tmp_path, messages, "chat.jsonl")
    for budget in range(40, 200, 7):
        window, _ = select(capsys, path, "--max-tokens", str(budget), "--slicer", "greedy")
        roles = [m["role"] for m in window]
        calls = [m for m in window if m.get("tool_calls")]
        assert roles.count("tool") == len(calls)  # never one without the other
        for call in calls:
            assert window[window.index(call) + 1]["role"] == "tool"


def test_flags_and_policies_apply_to_transcripts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_jsonl(tmp_path, chat(), "chat.jsonl")
    _, err = select(capsys, path, "--max-tokens", "300", "--policy", "rag")
    assert "chosen by: policy rag: Retriever relevance first" in err
    _, err = select(capsys, path, "--max-tokens", "300", "--slicer", "greedy")
    assert "chosen by: scored by recency ×3 + kind ×1; the best score per token first" in err


def test_explain_and_compare_read_transcripts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = str(write_jsonl(tmp_path, chat(), "chat.jsonl"))
    status, out, err = run(capsys, "explain", path, "--max-tokens", "300")
    assert status == 0, err
    assert out.startswith("cupel explain: 42 candidates") and "policy chat" in out
    assert "RecencyWindowSlice" in out
    status, out, err = run(
        capsys, "compare", path, "--max-tokens", "300", "--policy", "chat", "--policy", "rag"
    )
    assert status == 0, err
    assert "cupel compare: 42 candidates" in out


def test_content_parts_and_images_are_counted(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + struct.pack(">II", 1024, 1024) + b"\x08\x02"
    url = "data:image/png;base64," + base64.b64encode(png + b"\x00" * 16).decode()
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    transcript = parse_transcript(
        [
            ("line 1", {"role": "user", "content": parts}),
            ("line 2", {"role": "user", "content": "What is this?"}),
        ]
    )
    assert transcript.texts[0] == "What is this?\n[image]"
    # by its size, read from the data URL's header (not the 1,600 of an unknown size)
    assert (
        transcript.tokens[0] - transcript.tokens[1]
        == media_pricer()(Media("image", width=1024, height=1024))
        != 1600
    )


@pytest.mark.parametrize(
    ("message", "needle"),
    [
        (
            {"role": "bot", "content": "hi"},
            "chat.jsonl, line 2: role: 'bot' is not a chat role (system, developer, user, "
            "assistant, tool, function)",
        ),
        (
            {"role": "user", "content": 3},
            "line 2: content: must be a string, null or a list of parts, got int",
        ),
        (
            {"role": "user", "content": [{"type": "video"}]},
            "line 2: content[0].type: 'video' is not a content part type (text, ",
        ),
        (
            {"role": "assistant", "tool_calls": {"id": "x"}},
            "line 2: tool_calls: must be a list of calls, got dict",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "x", "function": {"name": 1}}]},
            "line 2: tool_calls[0].function.name: must be a string, got int",
        ),
        (
            {"role": "tool", "tool_call_id": 5, "content": "x"},
            "line 2: tool_call_id: must be a string or null, got int",
        ),
        ({"content": "no role", "kind": "Message"}, "line 2: role: missing is not a chat role"),
    ],
)
def test_a_bad_message_is_one_line_naming_the_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, message: dict[str, Any], needle: str
) -> None:
    path = write_jsonl(
        tmp_path, [{"role": "system", "content": "Be brief."}, message], "chat.jsonl"
    )
    assert_one_line_error(*run(capsys, "select", str(path), "--max-tokens", "100"), needle)


@pytest.mark.parametrize("key", ["items", "data"])
def test_wrapped_items_get_one_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, key: str
) -> None:
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({key: ITEMS}, indent=2), encoding="utf-8")
    status, out, err = run(capsys, "select", str(path), "--max-tokens", "100")
    assert (status, out) == (2, "")
    assert err == (
        f'cupel: error: {path}: the items are wrapped in an object ({{"{key}": [...]}}): give '
        f"the array itself, a JSON array or one item per line (e.g. jq -c '.{key}[]' {path})\n"
    )


def test_kinds_that_are_roles_get_a_warning_naming_the_kind(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rows = [
        {"content": "Be brief.", "tokens": 3, "kind": "system"},
        {"content": "Hi", "tokens": 1, "kind": "user"},
        {"content": "Hello", "tokens": 1, "kind": "User"},
        {"content": "Doc", "tokens": 1, "kind": "Document"},
    ]
    status, _, err = run(capsys, "select", str(write_items(tmp_path, rows)), "--max-tokens", "50")
    assert status == 0
    warnings = [line for line in err.splitlines() if line.startswith("cupel: warning:")]
    assert warnings == [
        f'cupel: warning: {tmp_path / "items.json"}: 1 item with kind "system", a chat role '
        'rather than a kind: use kind "SystemPrompt" with "pinned": true, or give the messages '
        'as a chat transcript ({"role": ..., "content": ...} a line)',
        f'cupel: warning: {tmp_path / "items.json"}: 2 items with kind "user", a chat role '
        'rather than a kind: use kind "Message", or give the messages as a chat transcript '
        '({"role": ..., "content": ...} a line)',
    ]


def test_items_files_keep_their_behaviour(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    window, err = select(capsys, write_items(tmp_path, ITEMS), "--max-tokens", "150")
    assert all("content" in item and "tokens" in item for item in window)
    assert "chosen by: scored by recency ×3 + kind ×1" in err and "warning" not in err
