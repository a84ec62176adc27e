"""A chat history's structure: units, turns and the providers' tool-call rule."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import MappingProxyType
from typing import Any

from cupel._errors import ConfigurationError

__all__ = ["ASSISTANT", "ROLES", "SYSTEM", "TOOL", "USER", "Conversation", "Unit", "WindowCheck"]

SYSTEM = "system"
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"
ROLES = (SYSTEM, USER, ASSISTANT, TOOL)
"""The roles the conversation layer understands; any other role is an ordinary message."""

_UNANSWERED = "unanswered_calls"
_PARTIAL = "partial_answers"
_LATE = "late_result"
_DUPLICATE = "duplicate_result"
_UNKNOWN = "unknown_result"


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit of a conversation: a message, or an assistant message that calls tools
    together with the tool results answering it (an *exchange*).

    ``messages`` are message indices (ascending); ``turn`` numbers the user turn the unit
    belongs to (0 before the first user message); ``problem`` names why providers would
    reject the unit (``None``: valid) and ``tool_call_ids`` the calls concerned.
    """

    messages: tuple[int, ...]
    role: str
    exchange: bool
    turn: int
    problem: str | None = None
    tool_call_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WindowCheck:
    """How a window (a subset of a conversation's messages) reads: see
    :meth:`Conversation.check_window`."""

    problems: tuple[str, ...]
    """Tool-call problems of the window on its own (what a provider would reject)."""
    holes: tuple[str, ...]
    """Where the window is not one stretch of the conversation (see ``check_window``)."""
    task_kept: bool
    """The latest user message is in the window (``True`` when there is none)."""
    has_reply: bool
    """The window holds an assistant message."""
    empty: bool
    """The window holds no message besides system messages."""

    @property
    def ok(self) -> bool:
        """Valid for the provider, without holes, with the task."""
        return not self.problems and not self.holes and self.task_kept


class Conversation:
    """The structure of a chat history, from each message's role and tool-call links.

    Parameters:
        roles: one role per message: ``"system"``, ``"user"``, ``"assistant"``,
            ``"tool"``, or anything else (an ordinary message).
        calls: message index → the ids of the tool calls that assistant message makes,
            valid and invalid ones alike (``None`` or ``""``: a call without an id).
        answers: message index → the id of the call that tool message answers
            (``None`` or missing: no id).

    The providers' rule (OpenAI, Anthropic, ...): the tool results right after an
    assistant message answer exactly its calls, each once, before any other message; no
    tool result stands anywhere else. The units that break it are marked with a
    ``problem``, and a selection leaves them out:

    =================  ============================================================
    problem            unit
    =================  ============================================================
    unanswered_calls   an assistant message none of whose calls were answered in time
    partial_answers    an assistant message (with the answers it got) missing others
    late_result        a tool result arriving after another message came between
    duplicate_result   a second result for a call already answered
    unknown_result     a result answering no call that was made
    =================  ============================================================

    A result that is late, duplicate or unknown does not end its run: the valid results
    around it still answer their calls.

    >>> conversation = Conversation(
    ...     ["system", "user", "assistant", "tool", "tool", "user", "tool"],
    ...     calls={2: ["c1", "c2"]}, answers={3: "c1", 4: "c1", 6: "c2"})
    >>> for unit in conversation.units:
    ...     print(unit.messages, unit.role, unit.problem, unit.tool_call_ids)
    (0,) system None ()
    (1,) user None ()
    (2, 3) assistant partial_answers ('c2',)
    (4,) tool duplicate_result ('c1',)
    (5,) user None ()
    (6,) tool late_result ('c2',)
    >>> conversation.latest_user
    4
    """

    __slots__ = (
        "_answers",
        "_calls",
        "_message_roles",
        "latest_user",
        "n_messages",
        "unit_firsts",
        "unit_members",
        "unit_problems",
        "unit_roles",
        "unit_turns",
    )

    def __init__(
        self,
        roles: Sequence[str],
        *,
        calls: Mapping[int, Sequence[str | None]] | None = None,
        answers: Mapping[int, str | None] | None = None,
    ) -> None:
        if isinstance(roles, str) or not isinstance(roles, Sequence):
            raise ConfigurationError(
                f"Conversation: roles must be a sequence of role strings, got "
                f"{type(roles).__name__} {roles!r:.80}",
                field="roles",
                value=roles,
            )
        calls = {} if calls is None else calls
        answers = {} if answers is None else answers
        n = len(roles)
        firsts: list[int] = []  # each unit's first message
        unit_roles: list[str] = []
        turns: list[int] = []
        members: dict[int, list[int]] = {}  # exchanges: unit -> its messages
        problems: dict[int, tuple[str, tuple[str, ...]]] = {}
        made_by: dict[str, int] = {}  # call id -> the exchange that made it
        answered: set[str] = set()  # call ids answered so far
        open_unit = -1  # the exchange whose results may still arrive
        pending: dict[str, int] = {}  # its unanswered call ids (with multiplicity)
        turn = 0
        latest_user = -1
        for index in range(n):
            role = roles[index]
            if role == TOOL:
                call_id = answers.get(index) or ""
                if open_unit >= 0 and pending.get(call_id, 0) > 0:
                    left = pending[call_id] - 1
                    if left:
                        pending[call_id] = left
                    else:
                        del pending[call_id]
                    answered.add(call_id)
                    members[open_unit].append(index)
                    continue
                if call_id in answered:
                    problem = _DUPLICATE
                elif call_id in made_by:
                    problem = _LATE
                else:
                    problem = _UNKNOWN
                problems[len(firsts)] = (problem, (call_id,))
                firsts.append(index)
                unit_roles.append(TOOL)
                turns.append(turn)
                continue
            if open_unit >= 0:
                _close(open_unit, pending, members, problems)
                open_unit = -1
            if role == USER:
                turn += 1
                latest_user = len(firsts)
            elif role == ASSISTANT:
                made = calls.get(index)
                if made:
                    open_unit = len(firsts)
                    pending = {}
                    for made_id in made:
                        key = made_id or ""
                        pending[key] = pending.get(key, 0) + 1
                        made_by[key] = open_unit
                    members[open_unit] = [index]
            firsts.append(index)
            unit_roles.append(role if role in ROLES else str(role))
            turns.append(turn)
        if open_unit >= 0:
            _close(open_unit, pending, members, problems)
        self.n_messages = n
        self.latest_user = latest_user
        """The unit of the latest user message (``-1``: there is none)."""
        # the unit columns, read-only: the conversation layer reads them whole
        self.unit_firsts: tuple[int, ...] = tuple(firsts)
        """The index of each unit's first message."""
        self.unit_roles: tuple[str, ...] = tuple(unit_roles)
        """The role of each unit's first message."""
        self.unit_turns: tuple[int, ...] = tuple(turns)
        """The user turn of each unit (0 before the first user message)."""
        self.unit_members: Mapping[int, tuple[int, ...]] = MappingProxyType(
            {k: tuple(v) for k, v in members.items()}
        )
        """The messages of each exchange unit (a tool call with its results)."""
        self.unit_problems: Mapping[int, tuple[str, tuple[str, ...]]] = MappingProxyType(problems)
        """Why providers would reject a unit, and the call ids concerned, by unit."""
        self._message_roles = roles
        self._calls = calls
        self._answers = answers

    def __reduce__(self) -> tuple[Any, ...]:
        """Copies and pickles rebuild the structure from the roles and tool-call links
        (its read-only columns are not themselves copyable)."""
        return (_rebuilt, (tuple(self._message_roles), dict(self._calls), dict(self._answers)))

    def __copy__(self) -> Conversation:
        return self  # read-only: a shallow copy is the object itself

    def __repr__(self) -> str:
        return (
            f"Conversation({self.n_messages} messages, {len(self.unit_firsts)} units, "
            f"{len(self.unit_problems)} invalid)"
        )

    def __len__(self) -> int:
        """The number of units."""
        return len(self.unit_firsts)

    @property
    def units(self) -> list[Unit]:
        """Every unit, valid or not, in history order."""
        return [self.unit(k) for k in range(len(self.unit_firsts))]

    def unit(self, k: int) -> Unit:
        """Unit ``k``."""
        problem, ids = self.unit_problems.get(k, (None, ()))
        return Unit(
            self.messages_of(k),
            self.unit_roles[k],
            k in self.unit_members,
            self.unit_turns[k],
            problem,
            ids,
        )

    def messages_of(self, k: int) -> tuple[int, ...]:
        """The message indices of unit ``k`` (ascending)."""
        group = self.unit_members.get(k)
        return (self.unit_firsts[k],) if group is None else group

    def first_message(self, k: int) -> int:
        """The index of unit ``k``'s first message."""
        return self.unit_firsts[k]

    def role(self, k: int) -> str:
        """The role of unit ``k``'s first message."""
        return self.unit_roles[k]

    def turn(self, k: int) -> int:
        """The user turn unit ``k`` belongs to (0 before the first user message)."""
        return self.unit_turns[k]

    def is_exchange(self, k: int) -> bool:
        """Whether unit ``k`` is an assistant message that calls tools, with its results."""
        return k in self.unit_members

    def problem(self, k: int) -> tuple[str, tuple[str, ...]] | None:
        """Why providers would reject unit ``k`` and the call ids concerned, or ``None``."""
        return self.unit_problems.get(k)

    @property
    def invalid_units(self) -> list[int]:
        """The units providers would reject, ascending."""
        return sorted(self.unit_problems)

    @property
    def has_exchanges(self) -> bool:
        """Whether any message calls tools."""
        return bool(self.unit_members)

    def check_window(self, kept: Collection[int]) -> WindowCheck:
        """How the window made of the messages at indices ``kept`` reads.

        A window has no *holes* when its sendable non-system messages (those of valid
        units) are one stretch ending at the newest sendable message and starting on a
        turn (a user message, or the very first message) or anywhere in the latest turn
        (whose units stand alone) — the first kept message may also be a turn's start (the
        latest user message: the task; or the oldest kept turn's question — or the very
        first message — when that turn did not fit whole) followed by a stretch that starts
        in its own turn: the one gap a window may have. Anything else
        is a hole: an answer kept without its question, a question without its answer, a
        turn missing in the middle. Invalid units (see :attr:`invalid_units`) must be
        left out and never count as holes.

        >>> c = Conversation(["system", "user", "assistant", "user", "assistant", "user"])
        >>> c.check_window({0, 3, 4, 5}).holes
        ()
        >>> c.check_window({0, 2, 3, 4, 5}).holes
        ('message 2 (assistant) is kept without the start of its turn (message 1)',)
        >>> c.check_window({0, 1, 2, 5}).holes
        ('messages 3-4 are left out between kept messages',)
        """
        kept_set = set(kept)
        sendable: list[int] = []
        roles_at: dict[int, str] = {}  # message -> the role of its unit
        turn_of: dict[int, int] = {}  # message -> the turn of its unit
        unit_from: dict[int, tuple[int, ...]] = {}  # a unit's first message -> its messages
        for k, role in enumerate(self.unit_roles):
            members = unit_from[self.unit_firsts[k]] = self.messages_of(k)
            for index in members:
                roles_at[index] = role
                turn_of[index] = self.unit_turns[k]
            if k not in self.unit_problems and role != SYSTEM:
                sendable.extend(members)
        sendable.sort()
        window = [i for i in sendable if i in kept_set]
        task = self.unit_firsts[self.latest_user] if self.latest_user >= 0 else -1
        holes: list[str] = []
        if window:
            rest = window
            start = window[0]
            if task >= 0 and start == task:
                rest = window[1:]  # the task, then a stretch after it: the allowed gap
            elif (roles_at.get(start) == USER or start == sendable[0]) and (  # a turn's start
                (tail := [i for i in window if i not in unit_from.get(start, ())])
                and turn_of[tail[0]] == turn_of[start]
                and tail[0] in unit_from  # the stretch starts on a whole unit
            ):
                # the oldest kept turn's question (or task), then a stretch of that turn's
                # newest messages after it: the same gap, for a turn that did not fit whole
                rest = tail
            elif start < task and not (start == sendable[0] or roles_at.get(start) == USER):
                # (after the task: a stretch of the latest turn, whose units stand alone)
                turn_start = max(
                    (i for i in sendable if i < start and roles_at.get(i) == USER),
                    default=sendable[0],
                )
                holes.append(
                    f"message {start} ({roles_at.get(start)}) is kept without the start "
                    f"of its turn (message {turn_start})"
                )
            position = {index: p for p, index in enumerate(sendable)}
            for before, after in pairwise(rest):
                if position[after] - position[before] > 1:
                    missing = sendable[position[before] + 1 : position[after]]
                    holes.append(
                        f"messages {missing[0]}-{missing[-1]} are left out between kept messages"
                        if len(missing) > 1
                        else f"message {missing[0]} is left out between kept messages"
                    )
            if rest and rest[-1] != sendable[-1]:
                holes.append(
                    f"the newest messages ({rest[-1] + 1}-{sendable[-1]}) are left out "
                    f"while older ones are kept"
                )
        problems = tuple(Conversation.of_window(self, sorted(kept_set)).problems())
        return WindowCheck(
            problems=problems,
            holes=tuple(holes),
            task_kept=task < 0 or task in kept_set,
            has_reply=any(roles_at.get(i) == ASSISTANT for i in kept_set),
            empty=not any(roles_at.get(i, SYSTEM) != SYSTEM for i in kept_set),
        )

    @staticmethod
    def of_window(conversation: Conversation, kept: Sequence[int]) -> Conversation:
        """The conversation made of the messages at ``kept`` alone (ascending)."""
        roles: list[str] = []
        calls: dict[int, Sequence[str | None]] = {}
        answers: dict[int, str | None] = {}
        for position, index in enumerate(kept):
            role = conversation._message_roles[index]
            roles.append(role)
            made = conversation._calls.get(index)
            if made:
                calls[position] = made
            if index in conversation._answers:
                answers[position] = conversation._answers[index]
        return Conversation(roles, calls=calls, answers=answers)

    def problems(self) -> list[str]:
        """Each tool-call problem as a sentence naming the message (empty: the history
        is valid as it is).

        >>> Conversation(["assistant", "user"], calls={0: ["c1"]}).problems()
        ["message 0: tool call(s) ['c1'] are unanswered (unanswered_calls)"]
        >>> Conversation(["tool"], answers={0: "c1"}).problems()
        ["message 0: tool result for 'c1' answers no call made just before it \
(unknown_result)"]
        """
        out: list[str] = []
        for k in sorted(self.unit_problems):
            problem, ids = self.unit_problems[k]
            first = self.unit_firsts[k]
            if problem in (_UNANSWERED, _PARTIAL):
                out.append(f"message {first}: tool call(s) {list(ids)} are unanswered ({problem})")
            else:
                what = {
                    _LATE: "arrives after another message came between it and its call",
                    _DUPLICATE: "answers a call that was already answered",
                    _UNKNOWN: "answers no call made just before it",
                }[problem]
                out.append(f"message {first}: tool result for {ids[0]!r} {what} ({problem})")
        return out


def _rebuilt(
    roles: Sequence[str],
    calls: Mapping[int, Sequence[str | None]],
    answers: Mapping[int, str | None],
) -> Conversation:
    """A :class:`Conversation` rebuilt by ``pickle`` / ``copy.deepcopy``."""
    return Conversation(roles, calls=calls, answers=answers)


def _close(
    unit: int,
    pending: dict[str, int],
    members: Mapping[int, list[int]],
    problems: dict[int, tuple[str, tuple[str, ...]]],
) -> None:
    """Mark ``unit`` invalid if calls are still pending when its run of results ends."""
    if not pending:
        return
    ids = tuple(call_id for call_id, count in pending.items() for _ in range(count))
    problems[unit] = (_PARTIAL if len(members[unit]) > 1 else _UNANSWERED, ids)
