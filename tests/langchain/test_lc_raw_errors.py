"""Mistakes that reached LangChain users as raw Python errors (issue 30) are one-line
cupel errors naming what was wrong and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from cupel import ConfigurationError, ItemError
from cupel_langchain import CupelDocumentCompressor, select_messages


def _nested(depth: int) -> dict[str, Any]:
    args: dict[str, Any] = {}
    inner = args
    for _ in range(depth):
        inner["a"] = {}
        inner = inner["a"]
    return args


def test_tool_call_arguments_nested_too_deep_are_refused_in_one_line() -> None:
    def history(depth: int) -> list[Any]:
        call = {"name": "lookup", "args": _nested(depth), "id": "c1"}
        return [
            HumanMessage("hi"),
            AIMessage("", tool_calls=[call]),
            ToolMessage("ok", tool_call_id="c1"),
            HumanMessage("next"),
        ]

    assert len(select_messages(history(200), max_tokens=100_000)) == 4
    with pytest.raises(ConfigurationError) as caught:
        select_messages(history(2000), max_tokens=100_000)
    assert str(caught.value) == (
        "tool call 'lookup' (id 'c1'): args nest too deep to encode as JSON (keep them under "
        "a few hundred levels)"
    )


@pytest.mark.parametrize("score", [10**400, 10**5000], ids=["400-digits", "5000-digits"])
def test_a_huge_relevance_score_is_named_by_its_size(score: int) -> None:
    compressor = CupelDocumentCompressor(max_tokens=100)
    with pytest.raises(ItemError) as caught:
        compressor.compress_documents([Document("a b", metadata={"relevance_score": score})], "q")
    message = str(caught.value)
    assert message.startswith(
        "documents[0].metadata['relevance_score'] must be a finite number (the relevance "
        "score), got an int of about "
    )
    assert len(message) < 160
