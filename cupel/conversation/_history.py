"""A conversation as context items: :class:`HistoryItems` builds the selection columns
(:class:`~cupel.conversation._columns.HistoryColumns`) and selects a window."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from cupel._errors import ConfigurationError
from cupel._model import ContextBudget, ContextKind
from cupel._pipeline import Pipeline
from cupel.conversation._columns import HistoryColumns, ItemSource, PinnedOptions
from cupel.conversation._structure import SYSTEM, Conversation
from cupel.conversation._window import HistoryWindow, select_window
from cupel.diagnostics._events import OverflowEvent
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY

__all__ = ["DEFAULT_UNIT_KINDS", "UNIT_TYPES", "HistoryItems"]

UNIT_TYPES = ("system", "user", "assistant", "exchange", "tool", "other")
"""The unit types a kind is chosen for (``exchange``: an assistant message calling tools
with its results; ``tool``: a stray tool result, never selected)."""

DEFAULT_UNIT_KINDS: Mapping[str, ContextKind] = {
    "system": ContextKind.SYSTEM_PROMPT,
    "user": ContextKind.MESSAGE,
    "assistant": ContextKind.MESSAGE,
    "exchange": ContextKind.TOOL_OUTPUT,
    "tool": ContextKind.TOOL_OUTPUT,
    "other": ContextKind.MESSAGE,
}
"""The kind of each unit type's item."""


class HistoryItems(HistoryColumns):
    """A :class:`Conversation` mapped to context items: one item per unit (build it with
    :meth:`from_conversation`).

    The selection columns are computed up front — ``units`` (the units that can be sent,
    in history order), ``tokens``, ``blocks`` (each unit's turn as its block, ``None``: a
    block of its own) and the ``pinned`` positions — and the :class:`~cupel.ContextItem` s
    on first use: :attr:`items` and :attr:`invalid` (each unit providers would reject,
    with its :class:`~cupel.InvalidToolCall`). :meth:`select` maps a window back to
    message indices.
    """

    __slots__ = ()

    @classmethod
    def from_conversation(
        cls,
        conversation: Conversation,
        texts: Sequence[str],
        tokens: Sequence[int] | None = None,
        *,
        unit_tokens: Callable[[tuple[int, ...]], int] | None = None,
        timestamps: Sequence[datetime | None] | None = None,
        kinds: Mapping[str, ContextKind] | None = None,
        metadata: Callable[[int], Mapping[str, Any]] | None = None,
        keep_system: bool = True,
        keep_latest_user: bool = True,
        keep_last: int = 0,
        block_key: str | None = DEFAULT_BLOCK_KEY,
        query: str | None = None,
    ) -> HistoryItems:
        """One item per unit of ``conversation``.

        - ``texts`` (one per message) make the content, joined by newlines for an exchange;
          an empty text reads ``[<role> message]``.
        - ``tokens`` (one per message) are summed per unit; ``unit_tokens`` instead counts
          a unit from its message indices (for counters that are not additive).
        - ``timestamps`` (one per message, ``None`` where unknown, aware UTC) are made to
          follow message order (a timestamp not after its predecessor's becomes that plus
          a microsecond); without them the timestamps are synthetic, a microsecond apart.
          A unit takes its first message's.
        - ``kinds`` override :data:`DEFAULT_UNIT_KINDS` per unit type (:data:`UNIT_TYPES`).
        - ``metadata(k)`` gives unit ``k``'s metadata (copied); ``block_key`` in it is
          the layer's own: units of earlier turns than the latest user message's get
          their turn number there, so a :class:`~cupel.RecencyWindowSlice` keeps each
          earlier turn whole, and the latest turn's units stand alone (an agent's tool
          rounds are taken newest first) — a ``block_key`` entry from ``metadata`` is
          dropped.
        - Pinned: system units (``keep_system``), the latest user message
          (``keep_latest_user``: the question, or an agent's task) and the latest
          ``keep_last`` valid units.
        - ``query``: what a pipeline's unbound :class:`~cupel.RelevanceScorer` is bound to
          when it selects (:attr:`~HistoryColumns.query`); default: the latest user
          message's text (pass the message's own text when ``texts`` label it).

        Texts, timestamps, kinds and metadata are read when the items are first built
        (:attr:`items`); pass values that do not change until then.

        >>> from cupel.conversation import Conversation
        >>> conversation = Conversation(["system", "user", "assistant", "user"])
        >>> mapped = HistoryItems.from_conversation(
        ...     conversation, ["Be brief.", "Hi", "Hello!", "Bye"], [3, 1, 2, 1])
        >>> [(i.content, i.pinned, dict(i.metadata)) for i in mapped.items]
        [('Be brief.', True, {'cupel:turn': 0}), ('Hi', False, {'cupel:turn': 1}), \
('Hello!', False, {'cupel:turn': 1}), ('Bye', True, {})]
        >>> mapped.tokens, mapped.blocks, mapped.pinned
        ([3, 1, 2, 1], [0, 1, 1, None], [0, 3])
        """
        n = conversation.n_messages
        if len(texts) != n:
            raise ConfigurationError(
                f"texts: expected one per message ({n}), got {len(texts)}",
                field="texts",
                value=len(texts),
            )
        if tokens is None and unit_tokens is None:
            raise ConfigurationError(
                "to_items needs tokens (one count per message) or unit_tokens (a counter of "
                "a unit's message indices), got neither",
                field="tokens",
                value=None,
            )
        if tokens is not None and len(tokens) != n:
            raise ConfigurationError(
                f"tokens: expected one per message ({n}), got {len(tokens)}",
                field="tokens",
                value=len(tokens),
            )
        if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
            raise ConfigurationError(
                f"keep_last must be an int >= 0 (the number of latest units always kept), "
                f"got {keep_last!r}",
                field="keep_last",
                value=keep_last,
            )
        table = DEFAULT_UNIT_KINDS if kinds is None else {**DEFAULT_UNIT_KINDS, **kinds}
        latest_user = conversation.latest_user
        latest_turn = conversation.turn(latest_user) if latest_user >= 0 else 0
        pins = dict.fromkeys(_last_units(conversation, keep_last), "last")  # unit -> why
        if keep_latest_user and latest_user >= 0:
            pins[latest_user] = "latest_user"
        # The structure's columns, read whole: a pass per column, not a loop per unit.
        firsts = conversation.unit_firsts
        groups = conversation.unit_members
        roles = conversation.unit_roles
        turns = conversation.unit_turns
        problems = conversation.unit_problems
        if unit_tokens is None:
            per_message: Sequence[int] = tokens  # type: ignore[assignment]
            needs = [per_message[first] for first in firsts]
            for k, group in groups.items():
                needs[k] = sum([per_message[i] for i in group])
        else:
            needs = [unit_tokens(groups.get(k) or (first,)) for k, first in enumerate(firsts)]
        if problems:
            bad = [(k, needs[k]) for k in sorted(problems)]
            units = [k for k in range(len(firsts)) if k not in problems]
            unit_counts = [needs[k] for k in units]
            unit_turns: Sequence[int] = [turns[k] for k in units]
        else:
            bad = []
            units = list(range(len(firsts)))
            unit_counts = needs
            unit_turns = turns
        blocks: list[int | None] = (
            [None] * len(units)
            if block_key is None
            else [turn if turn < latest_turn else None for turn in unit_turns]
        )
        causes = (  # pinned unit -> why
            {k: "system" for k in units if roles[k] == SYSTEM}
            if keep_system and SYSTEM in roles
            else {}
        )
        for k, why in pins.items():
            if k not in causes and k not in problems:
                causes[k] = why
        pinned_tokens = {"system": 0, "latest_user": 0, "last": 0}
        for k, why in causes.items():
            pinned_tokens[why] += needs[k]
        pinned = sorted(causes if not problems else [bisect_left(units, k) for k in causes])
        source = ItemSource(texts, timestamps, table, metadata, block_key, query)
        return cls(
            conversation,
            units,
            unit_counts,
            blocks,
            pinned,
            pinned_tokens,
            bad,
            source,
            (keep_system, keep_latest_user, keep_last),
        )

    def select(
        self,
        pipeline: Pipeline,
        budget: ContextBudget,
        *,
        with_report: bool,
        start_on: Collection[str] = (),
        options: PinnedOptions | None = None,
        on_overflow: Callable[[OverflowEvent], Any] | None = None,
        earlier: Sequence[tuple[int, ContextBudget]] = (),
    ) -> HistoryWindow:
        """Run ``pipeline`` on the items within ``budget`` and map the window back.

        ``start_on``: roles the window may start on after system messages (e.g.
        ``{"user"}``); selected units before the first such unit are dropped (reported
        as ``Filtered("start_on")``) — unless the window holds no such unit, then it is
        kept as it is. The report (``with_report``) also lists every invalid unit with
        its :class:`~cupel.InvalidToolCall` reason; without it,
        :meth:`HistoryWindow.explain` builds the same report when first asked.
        ``on_overflow`` is passed to the pipeline's run.

        *Cache-stable* (a :class:`~cupel.RecencyWindowSlice` with a ``low_water`` mark):
        the window's cut is replayed from the history itself
        (:func:`~cupel.conversation.stable_cut`), so the same history gives the same window
        in any process and between cuts each window is the previous one plus the new
        messages. Only the pinned units and the units from the cut on are offered (the
        others reported as ``Filtered("before_stable_cut")``). ``earlier``: budgets of
        earlier requests, as ``(message index, budget)`` pairs (see ``stable_cut``).

        A plain recency window (:func:`~cupel.conversation.plain_pipeline`) selected
        without a report is the pipeline's window computed from the token and block
        columns alone: the items are never built.
        """
        return select_window(
            self,
            pipeline,
            budget,
            with_report=with_report,
            start_on=start_on,
            options=options if options is not None else PinnedOptions(),
            on_overflow=on_overflow,
            earlier=earlier,
        )


def _last_units(conversation: Conversation, count: int) -> set[int]:
    """The latest ``count`` valid non-system units."""
    out: set[int] = set()
    k = len(conversation) - 1
    while len(out) < count and k >= 0:
        if conversation.problem(k) is None and conversation.role(k) != SYSTEM:
            out.add(k)
        k -= 1
    return out
