"""Why an item was included or excluded.

Exclusion reasons carry data (the numbers behind the decision). Their JSON form is an
envelope ``{"reason": "<Variant>", ...fields}`` with absent fields omitted::

    >>> BudgetExceeded(item_tokens=2048, available_tokens=512).to_dict()
    {'reason': 'BudgetExceeded', 'item_tokens': 2048, 'available_tokens': 512}
    >>> exclusion_reason_from_dict({"reason": "Deduplicated", "deduplicated_against": "x"})
    Deduplicated(deduplicated_against='x')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, ClassVar

__all__ = [
    "BudgetExceeded",
    "CountCapExceeded",
    "CountRequireCandidatesExhausted",
    "Deduplicated",
    "ExclusionReason",
    "Filtered",
    "InclusionReason",
    "InvalidToolCall",
    "NegativeTokens",
    "OutsideWindow",
    "PackingChoice",
    "PinnedOverride",
    "QuotaCapExceeded",
    "QuotaRequireDisplaced",
    "ScoredTooLow",
    "UnknownExclusionReason",
    "exclusion_reason_from_dict",
]


class InclusionReason(str, Enum):
    """Why an item is in the window."""

    SCORED = "Scored"
    """Selected on its score within the budget."""
    PINNED = "Pinned"
    """Pinned: bypassed scoring and slicing."""
    ZERO_TOKEN = "ZeroToken"
    """Costs no tokens, so always selected."""

    def to_dict(self) -> dict[str, str]:
        """Wire form: ``{"reason": "Scored"}``."""
        return {"reason": self.value}


class ExclusionReason:
    """Base of the exclusion-reason variants; ``name`` is the wire discriminator."""

    name: ClassVar[str] = ""
    emitted: ClassVar[bool] = True
    """False for the spec's reserved variants, which built-in stages never emit."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """Wire form: the ``reason`` discriminator plus this variant's fields."""
        return {"reason": self.name, **{n: getattr(self, n) for n in _field_names(type(self))}}

    def describe(self) -> str:
        """A short human-readable account, e.g. ``BudgetExceeded (400 tokens, 50 available)``."""
        payload = ", ".join(f"{n}={getattr(self, n)!r}" for n in _field_names(type(self)))
        return f"{self.name} ({payload})" if payload else self.name


_FIELD_NAMES: dict[type[ExclusionReason], tuple[str, ...]] = {}


def _field_names(variant: type[ExclusionReason]) -> tuple[str, ...]:
    """A variant's field names, in order (read once per class)."""
    names = _FIELD_NAMES.get(variant)
    if names is None:
        names = _FIELD_NAMES[variant] = tuple(f.name for f in fields(variant))  # type: ignore[arg-type]
    return names


@dataclass(frozen=True, slots=True)
class BudgetExceeded(ExclusionReason):
    """The item did not fit: it needed ``item_tokens``, ``available_tokens`` were left."""

    name: ClassVar[str] = "BudgetExceeded"
    item_tokens: int
    available_tokens: int

    def describe(self) -> str:
        return f"BudgetExceeded: needs {self.item_tokens} tokens, {self.available_tokens} available"


@dataclass(frozen=True, slots=True)
class ScoredTooLow(ExclusionReason):
    """Reserved: scored below a threshold."""

    name: ClassVar[str] = "ScoredTooLow"
    emitted: ClassVar[bool] = False
    score: float
    threshold: float


@dataclass(frozen=True, slots=True)
class Deduplicated(ExclusionReason):
    """Byte-identical content to a surviving item (``deduplicated_against`` is its content)."""

    name: ClassVar[str] = "Deduplicated"
    deduplicated_against: str

    def describe(self) -> str:
        return f"Deduplicated: same content as kept item {_clip(self.deduplicated_against)!r}"


@dataclass(frozen=True, slots=True)
class QuotaCapExceeded(ExclusionReason):
    """Reserved: the kind exceeded its percentage cap."""

    name: ClassVar[str] = "QuotaCapExceeded"
    emitted: ClassVar[bool] = False
    kind: str
    cap: int
    actual: int


@dataclass(frozen=True, slots=True)
class QuotaRequireDisplaced(ExclusionReason):
    """Reserved: displaced to satisfy another kind's requirement."""

    name: ClassVar[str] = "QuotaRequireDisplaced"
    emitted: ClassVar[bool] = False
    displaced_by_kind: str


@dataclass(frozen=True, slots=True)
class NegativeTokens(ExclusionReason):
    """The item's token count is negative (excluded at Classify)."""

    name: ClassVar[str] = "NegativeTokens"
    tokens: int

    def describe(self) -> str:
        return f"NegativeTokens: tokens = {self.tokens}"


@dataclass(frozen=True, slots=True)
class PinnedOverride(ExclusionReason):
    """Pinned items took the room this item needed (``displaced_by``: a pinned item's content)."""

    name: ClassVar[str] = "PinnedOverride"
    displaced_by: str

    def describe(self) -> str:
        return f"PinnedOverride: displaced by pinned item {_clip(self.displaced_by)!r}"


@dataclass(frozen=True, slots=True)
class Filtered(ExclusionReason):
    """Reserved: removed by a user-defined filter."""

    name: ClassVar[str] = "Filtered"
    emitted: ClassVar[bool] = False
    filter_name: str


@dataclass(frozen=True, slots=True)
class CountCapExceeded(ExclusionReason):
    """A count quota's cap for ``kind`` was reached (``count`` items already selected)."""

    name: ClassVar[str] = "CountCapExceeded"
    kind: str
    cap: int
    count: int

    def describe(self) -> str:
        return f"CountCapExceeded: kind {self.kind!r} already has {self.count} of {self.cap}"


@dataclass(frozen=True, slots=True)
class CountRequireCandidatesExhausted(ExclusionReason):
    """Reserved for custom stages: a count requirement ran out of candidates of ``kind``.
    Built-in slicers report this situation as a shortfall on the report instead."""

    name: ClassVar[str] = "CountRequireCandidatesExhausted"
    emitted: ClassVar[bool] = False
    kind: str


@dataclass(frozen=True, slots=True)
class OutsideWindow(ExclusionReason):
    """Older than the recency window (a cupel extension: :class:`~cupel.RecencyWindowSlice`).
    The window stopped at a unit (an item, or a block such as a chat turn) that needed
    ``cut_tokens`` while ``available_tokens`` were left; everything older stays out so the
    window has no holes."""

    name: ClassVar[str] = "OutsideWindow"
    cut_tokens: int
    available_tokens: int

    def describe(self) -> str:
        return (
            f"OutsideWindow: not in the recency window, whose next unit needs "
            f"{self.cut_tokens} tokens, {self.available_tokens} available"
        )


@dataclass(frozen=True, slots=True)
class PackingChoice(ExclusionReason):
    """The item fits the ``available_tokens`` left (it needs ``item_tokens``), but the
    knapsack's best-scoring packing leaves it out: its score adds nothing to the total the
    knapsack maximizes (scores count in steps of 0.0001; zero, negative and smaller ones
    count as 0), so nothing was chosen in its place and the room stays unused. Emitted by
    :class:`~cupel.KnapsackSlice`; give the item a score, pin it, or use
    :class:`~cupel.GreedySlice`, which also takes items scoring 0."""

    name: ClassVar[str] = "PackingChoice"
    item_tokens: int
    available_tokens: int

    def describe(self) -> str:
        return (
            f"PackingChoice: needs {self.item_tokens} tokens, {self.available_tokens} "
            "available, but its score adds nothing to the knapsack's total (under 0.0001 "
            "counts as 0), so the best-scoring packing leaves it out"
        )


INVALID_TOOL_CALL_PROBLEMS: dict[str, str] = {
    "unanswered_calls": "an assistant message whose tool calls were not answered",
    "partial_answers": "an assistant message only some of whose tool calls were answered",
    "late_result": "a tool result that arrived after the conversation moved on",
    "duplicate_result": "a second tool result for a call already answered",
    "unknown_result": "a tool result answering no call that was made",
}
"""The problems :class:`InvalidToolCall` names, with what each means."""


@dataclass(frozen=True, slots=True)
class InvalidToolCall(ExclusionReason):
    """A unit chat-model providers would reject (a cupel extension: the conversation
    layer, :mod:`cupel.conversation`). ``problem`` is one of
    :data:`INVALID_TOOL_CALL_PROBLEMS`; ``tool_call_ids`` are the calls concerned (an
    id-less call shows as ``""``). Such units are left out before selection."""

    name: ClassVar[str] = "InvalidToolCall"
    problem: str
    tool_call_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tool_call_ids, tuple):  # read back from JSON: a list
            object.__setattr__(self, "tool_call_ids", tuple(self.tool_call_ids))

    def to_dict(self) -> dict[str, Any]:
        return {
            "reason": self.name,
            "problem": self.problem,
            "tool_call_ids": list(self.tool_call_ids),
        }

    def describe(self) -> str:
        meaning = INVALID_TOOL_CALL_PROBLEMS.get(self.problem, self.problem)
        ids = ", ".join(repr(i) for i in self.tool_call_ids)
        return f"InvalidToolCall ({self.problem}): {meaning}" + (f" [{ids}]" if ids else "")


@dataclass(frozen=True, slots=True)
class UnknownExclusionReason(ExclusionReason):
    """A variant this version does not know (read from another implementation's data)."""

    reason: str
    payload: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, **self.payload}

    def describe(self) -> str:
        return f"{self.reason} (unknown reason)"


_VARIANTS: dict[str, type[ExclusionReason]] = {
    cls.name: cls
    for cls in (
        BudgetExceeded,
        ScoredTooLow,
        Deduplicated,
        QuotaCapExceeded,
        QuotaRequireDisplaced,
        NegativeTokens,
        PinnedOverride,
        Filtered,
        CountCapExceeded,
        CountRequireCandidatesExhausted,
        OutsideWindow,
        InvalidToolCall,
        PackingChoice,
    )
}


def exclusion_reason_from_dict(data: Mapping[str, Any]) -> ExclusionReason:
    """Parse the wire form; unknown variants become :class:`UnknownExclusionReason`."""
    name = str(data.get("reason", ""))
    cls = _VARIANTS.get(name)
    payload = {k: v for k, v in data.items() if k != "reason"}
    if cls is None:
        return UnknownExclusionReason(reason=name, payload=payload)
    names = _field_names(cls)
    return cls(**{k: v for k, v in payload.items() if k in names})


def _clip(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
