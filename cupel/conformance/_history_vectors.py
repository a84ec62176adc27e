"""History vectors (private): ``stage = "history"`` selects the recency window of a
conversation — its messages with roles, tokens and tool-call links — through the
conversation layer, and checks the window of the whole history and of its prefixes
(cupel's cache-stable extension: the cut replayed from the history)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cupel._errors import VectorError
from cupel._model import ContextBudget
from cupel._pipeline import Pipeline
from cupel.conformance._builders import Table, build_budget
from cupel.conformance._vector import (
    config_of,
    expected_of,
    order_diff,
    require_str,
    tables,
    test_of,
    with_expect_error,
)
from cupel.conversation import Conversation, HistoryItems
from cupel.placers import ChronologicalPlacer
from cupel.scorers import RecencyScorer
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY, RecencyWindowSlice

__all__ = ["History", "run_history"]


class History:
    """A vector's conversation and settings."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        config = config_of(data)
        budget_table = data.get("budget")
        if not isinstance(budget_table, Mapping):
            raise VectorError("history vector has no [budget] table")
        self.budget: ContextBudget = build_budget(budget_table, max_defaults_to_target=True)
        blocks = _flag(config, "blocks", True)
        self.keeps = (
            _flag(config, "keep_system", True),
            _flag(config, "keep_latest_user", True),
            _count(config, "keep_last"),
        )
        self.pipeline = Pipeline(
            RecencyScorer(),
            RecencyWindowSlice(
                DEFAULT_BLOCK_KEY if blocks else None,
                low_water=config.get("low_water"),
                partial_blocks=_flag(config, "partial_blocks", False),
            ),
            ChronologicalPlacer(),
            deduplication=False,
        )
        self.roles: list[str] = []
        self.contents: list[str] = []
        self.tokens: list[int] = []
        self.calls: dict[int, list[str | None]] = {}
        self.answers: dict[int, str | None] = {}
        for i, message in enumerate(tables(data, "messages")):
            where = f"messages[{i}]"
            self.roles.append(require_str(message, "role", where))
            self.contents.append(
                require_str(message, "content", where) if "content" in message else f"m{i}"
            )
            tokens = message.get("tokens")
            if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
                raise VectorError(f"{where}.tokens must be an integer >= 0, got {tokens!r}")
            self.tokens.append(tokens)
            if "calls" in message:
                calls = message["calls"]
                if not isinstance(calls, list) or not all(isinstance(c, str) for c in calls):
                    raise VectorError(f"{where}.calls must be an array of call ids")
                self.calls[i] = list(calls)
            if "answers" in message:
                self.answers[i] = require_str(message, "answers", where)
        if len(set(self.contents)) != len(self.contents):
            raise VectorError("messages: every message needs its own content (or none)")

    def window(self, length: int) -> list[str]:
        """The window of the first ``length`` messages, as their contents in order."""
        conversation = Conversation(
            self.roles[:length],
            calls={i: c for i, c in self.calls.items() if i < length},
            answers={i: a for i, a in self.answers.items() if i < length},
        )
        keep_system, keep_latest_user, keep_last = self.keeps
        history = HistoryItems.from_conversation(
            conversation,
            self.contents[:length],
            self.tokens[:length],
            keep_system=keep_system,
            keep_latest_user=keep_latest_user,
            keep_last=keep_last,
        )
        window = history.select(self.pipeline, self.budget, with_report=False)
        return [self.contents[i] for i in window.messages]


def _flag(config: Table, key: str, default: bool) -> bool:
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise VectorError(f"config.{key} must be a boolean, got {value!r}")
    return value


def _count(config: Table, key: str) -> int:
    value = config.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise VectorError(f"config.{key} must be an integer >= 0, got {value!r}")
    return value


def _contents(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise VectorError(f"{where} must be an array of message contents")
    return value


def run_history(data: Mapping[str, Any]) -> list[str]:
    """``stage = "history"``: the window of the whole history (``expected.window``) and
    of each prefix (``[[expected.prefixes]] messages, window``)."""
    test, expected = test_of(data), expected_of(data)
    history = History(data)
    prefixes = expected.get("prefixes", [])
    if not isinstance(prefixes, list) or not all(isinstance(p, Mapping) for p in prefixes):
        raise VectorError("[[expected.prefixes]] must be an array of tables")
    if "window" not in expected and not prefixes and "expect_error" not in test:
        raise VectorError("history vector makes no assertion (no expected.window or prefixes)")

    def run() -> list[str]:
        messages: list[str] = []
        for i, prefix in enumerate(prefixes):
            where = f"expected.prefixes[{i}]"
            length = prefix.get("messages")
            if (
                isinstance(length, bool)
                or not isinstance(length, int)
                or not 1 <= length <= len(history.roles)
            ):
                raise VectorError(
                    f"{where}.messages must be a message count from 1 to "
                    f"{len(history.roles)}, got {length!r}"
                )
            want = _contents(prefix.get("window"), f"{where}.window")
            messages += order_diff(f"window of the first {length}", want, history.window(length))
        if "window" in expected:
            want = _contents(expected["window"], "expected.window")
            messages += order_diff("window", want, history.window(len(history.roles)))
        return messages

    return with_expect_error(data, run)
