"""How a selected chat window reads: the window-quality metrics, on cupel's conversation layer.

One definition, shared by the window-quality benchmark (``benchmarks/window_quality.py``)
and the adapters' property tests (``tests/langchain/test_lc_properties.py``,
``tests/llamaindex/test_li_properties.py``). A window is given as the indices of the
history messages it holds; the history's structure (units, turns, the providers'
tool-call rule) is a :class:`cupel.conversation.Conversation`.

- :func:`last_complete_exchange` / :func:`newest_unit`: what a window should hold when
  it fits (a reply; anything at all);
- :func:`expectations`: whether they fit next to the system prompt and the task;
- :func:`score_window`: every metric of one window;
- :func:`align`: a window returned as copies, mapped back to history positions.

>>> from cupel.conversation import Conversation
>>> conversation = Conversation(["system", "user", "assistant", "user"])
>>> last_complete_exchange(conversation), newest_unit(conversation)
([1, 2], [3])
>>> score = score_window(conversation, [0, 3], tokens=len, budget=4)
>>> score.holes, score.task_lost, score.reply_due, score.no_reply, score.use
(False, False, True, True, 0.5)
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from cupel.conversation import ASSISTANT, SYSTEM, USER, Conversation

__all__ = [
    "Expectations",
    "WindowScore",
    "align",
    "expectations",
    "last_complete_exchange",
    "newest_unit",
    "score_window",
    "system_messages",
    "task_message",
]

T = TypeVar("T")


def _sendable(conversation: Conversation) -> list[int]:
    """The units that can be sent (valid, not system), in history order."""
    return [
        k
        for k in range(len(conversation))
        if conversation.problem(k) is None and conversation.role(k) != SYSTEM
    ]


def last_complete_exchange(conversation: Conversation) -> list[int]:
    """The sendable messages of the latest complete exchange: the task's turn after the
    task when it has any (an agent's tool rounds, or the answer), else the turn before
    it when that turn asks and answers (a chat's previous question and its answer).

    >>> last_complete_exchange(Conversation(["user", "assistant", "tool", "user"]))
    [0, 1]
    >>> last_complete_exchange(Conversation(["user", "assistant", "tool"],
    ...                                     calls={1: ["c1"]}, answers={2: "c1"}))
    [1, 2]
    """
    units = _sendable(conversation)
    latest = conversation.latest_user
    turn = conversation.turn(latest) if latest >= 0 else 0
    after = [k for k in units if k > latest and conversation.turn(k) == turn]
    if latest >= 0 and after:
        return [i for k in after for i in conversation.messages_of(k)]
    before = [k for k in units if conversation.turn(k) == turn - 1]
    asked = any(conversation.role(k) == USER for k in before)  # turn 0 has no question
    if asked and any(conversation.role(k) == ASSISTANT for k in before):
        return [i for k in before for i in conversation.messages_of(k)]
    return []


def newest_unit(conversation: Conversation) -> list[int]:
    """The messages of the newest sendable non-system unit (empty: there is none).

    >>> newest_unit(Conversation(["user", "tool"], answers={1: "ghost"}))
    [0]
    """
    units = _sendable(conversation)
    return list(conversation.messages_of(units[-1])) if units else []


def system_messages(conversation: Conversation) -> list[int]:
    """The indices of the system messages."""
    return [
        i
        for k in range(len(conversation))
        if conversation.role(k) == SYSTEM
        for i in conversation.messages_of(k)
    ]


def task_message(conversation: Conversation) -> list[int]:
    """The index of the latest user message (the question, or an agent's task), if any."""
    latest = conversation.latest_user
    return [conversation.first_message(latest)] if latest >= 0 else []


@dataclass(frozen=True, slots=True)
class Expectations:
    """What a window must hold when it fits, next to the system prompt and the task."""

    reply: bool
    """The system prompt, the task and the last complete exchange fit: a reply is due."""
    content: bool
    """The system prompt, the task and the newest unit fit: the window cannot be empty."""


def expectations(conversation: Conversation, fits: Callable[[list[int]], bool]) -> Expectations:
    """What is due, given ``fits(indices)``: whether those messages fit the budget.

    >>> c = Conversation(["system", "user", "assistant", "user"])
    >>> expectations(c, lambda indices: len(indices) <= 3)
    Expectations(reply=False, content=True)
    """
    base = system_messages(conversation) + task_message(conversation)
    exchange = last_complete_exchange(conversation)
    newest = newest_unit(conversation)
    return Expectations(
        reply=bool(exchange) and fits(sorted({*base, *exchange})),
        content=bool(newest) and fits(sorted({*base, *newest})),
    )


@dataclass(frozen=True, slots=True)
class WindowScore:
    """Every metric of one window (see :func:`score_window`)."""

    holes: bool
    """The window is not one stretch of the conversation (``check_window().holes``)."""
    task_lost: bool
    """The latest user message is not in the window."""
    reply_due: bool
    no_reply: bool
    """A reply was due (:attr:`Expectations.reply`) and the window holds none."""
    content_due: bool
    empty: bool
    """Content was due (:attr:`Expectations.content`) and the window holds only system
    messages (or nothing)."""
    invalid: bool
    """A provider would reject the window's tool calls (``check_window().problems``)."""
    system_lost: bool
    """A system message of the history is not in the window."""
    over_budget: bool
    """The window's tokens exceed the budget."""
    tokens: int
    budget: int

    @property
    def use(self) -> float:
        """The window's tokens / the budget."""
        return self.tokens / self.budget


def score_window(
    conversation: Conversation,
    kept: Collection[int],
    *,
    tokens: Callable[[list[int]], int],
    budget: int,
) -> WindowScore:
    """Score the window made of the messages at ``kept`` (indices into the history of
    ``conversation``); ``tokens(indices)`` counts messages, the same counter for every
    component, and also decides what fits (:func:`expectations`)."""
    indices = sorted(set(kept))
    check = conversation.check_window(indices)
    due = expectations(conversation, lambda members: tokens(members) <= budget)
    used = tokens(indices)
    return WindowScore(
        holes=bool(check.holes),
        task_lost=not check.task_kept,
        reply_due=due.reply,
        no_reply=due.reply and not check.has_reply,
        content_due=due.content,
        empty=due.content and check.empty,
        invalid=bool(check.problems),
        system_lost=not set(system_messages(conversation)) <= set(indices),
        over_budget=used > budget,
        tokens=used,
        budget=budget,
    )


def align(window: Sequence[T], history: Sequence[T]) -> tuple[list[int], str]:
    """The history positions of ``window`` (in window order) and how they were found:
    ``"identity"`` when every message is one of the history's objects, else
    ``"equality"``: matched from the newest backwards, each window message to the latest
    equal history message before the previous match (a window is a subsequence of the
    history, in order). Raises ``ValueError`` when a message cannot be matched.

    >>> history = [["a"], ["b"], ["a"], ["c"]]
    >>> align([history[2], history[3]], history)
    ([2, 3], 'identity')
    >>> align([["a"], ["c"]], history)  # equal copies
    ([2, 3], 'equality')
    >>> align([["x"]], history)
    Traceback (most recent call last):
    ...
    ValueError: window message 0 (['x']) matches no history message at or before position 3
    """
    by_id = {id(message): i for i, message in enumerate(history)}
    if all(id(message) in by_id for message in window):
        return [by_id[id(message)] for message in window], "identity"
    out: list[int] = []
    j = len(history) - 1
    for w in range(len(window) - 1, -1, -1):
        message = window[w]
        start = j
        while j >= 0 and history[j] != message:
            j -= 1
        if j < 0:
            raise ValueError(
                f"window message {w} ({message!r:.60}) matches no history message at or "
                f"before position {start}"
            )
        out.append(j)
        j -= 1
    out.reverse()
    return out, "equality"
