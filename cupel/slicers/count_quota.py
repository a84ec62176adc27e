"""CountQuotaSlice: absolute per-kind item counts (require / cap) around an inner slicer.

Also holds what both count-quota slicers share: :class:`CountQuotaEntry`,
:class:`ScarcityBehavior`, and the Count-Satisfy (phase 1) and Cap-Enforcement (phase 3)
steps. :class:`~cupel.slicers.CountConstrainedKnapsackSlice` differs only in phase 2.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from cupel._errors import CountRequirementError, SlicerConfigError
from cupel._model import ChoiceEnum, ContextBudget, ContextItem, ContextKind, ScoredItem
from cupel._params import Configurable, Count
from cupel.diagnostics._outcomes import CapExclusion, CountRequirementShortfall, SliceOutcome
from cupel.slicers._base import (
    BaseSlicer,
    Slicer,
    check_inner,
    entry_kind,
    fail,
    index_by_kind,
    slice_detailed,
)
from cupel.slicers.knapsack import KnapsackSlice

__all__ = ["CountQuotaEntry", "CountQuotaSlice", "ScarcityBehavior"]


class ScarcityBehavior(ChoiceEnum):
    """What a count-quota slicer does when a kind has fewer candidates than required.

    >>> ScarcityBehavior.parse("throw")
    <ScarcityBehavior.THROW: 'Throw'>
    """

    DEGRADE = "Degrade"
    """Commit what there is and report a :class:`CountRequirementShortfall` (the default)."""
    THROW = "Throw"
    """Raise :class:`~cupel.CountRequirementError`."""

    @classmethod
    def parse(cls, value: str | ScarcityBehavior) -> ScarcityBehavior:
        """Parse a behaviour name case-insensitively, with a clear error."""
        result: ScarcityBehavior = cls._parse_as(value, field="scarcity", error=SlicerConfigError)
        return result


@dataclass(frozen=True, init=False, repr=False)
class CountQuotaEntry(Configurable):
    """Item counts for one kind: commit at least ``require_count``, keep at most ``cap_count``.

    ``cap_count=None`` means no cap. Both are integers >= 0 with ``require_count <=
    cap_count``; a cap of 0 (only allowed with ``require_count=0``) keeps the kind out
    entirely. Kinds without an entry are unconstrained.

    >>> CountQuotaEntry("ToolOutput", require_count=2, cap_count=4)
    CountQuotaEntry('ToolOutput', require_count=2, cap_count=4)
    >>> CountQuotaEntry("ToolOutput", require_count=1, cap_count=0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.SlicerConfigError: CountQuotaEntry: cap_count 0 with require_count 1 can ...
    """

    kind: ContextKind
    require_count: int
    cap_count: int | None

    def __init__(self, kind: str, require_count: Count = 0, cap_count: Count | None = None) -> None:
        object.__setattr__(self, "kind", entry_kind("CountQuotaEntry", kind))
        object.__setattr__(self, "require_count", _count("require_count", require_count))
        if cap_count is not None:
            _count("cap_count", cap_count)
            if cap_count == 0 and require_count > 0:
                raise SlicerConfigError(
                    f"CountQuotaEntry: cap_count 0 with require_count {require_count} can "
                    f"never be satisfied (kind '{self.kind}')",
                    field="cap_count",
                    value=cap_count,
                )
            if require_count > cap_count:
                raise SlicerConfigError(
                    f"CountQuotaEntry: require_count ({require_count}) must be <= cap_count "
                    f"({cap_count}) for kind '{self.kind}'",
                    field="require_count",
                    value=require_count,
                )
        object.__setattr__(self, "cap_count", cap_count)


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fail("CountQuotaEntry", name, "must be a non-negative integer", value)
    return value


class _CountQuotaSlicer(BaseSlicer):
    """The three phases shared by the count-quota slicers; subclasses supply phase 2."""

    _name: ClassVar[str]
    _uses_knapsack: ClassVar[bool] = False
    """Phase 2 is a knapsack, whose output order is not score-descending."""

    def __init__(
        self, entries: Sequence[CountQuotaEntry], scarcity: ScarcityBehavior | str
    ) -> None:
        self._entries = tuple(entries)
        self._by_key = index_by_kind(self._name, "entries", self._entries, CountQuotaEntry)
        self._scarcity = ScarcityBehavior.parse(scarcity)

    @property
    def entries(self) -> tuple[CountQuotaEntry, ...]:
        """The per-kind count constraints, in configuration order."""
        return self._entries

    @property
    def scarcity(self) -> ScarcityBehavior:
        """What happens when a kind cannot meet its ``require_count``."""
        return self._scarcity

    @property
    def is_count_quota(self) -> bool:
        return True

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        return self.slice_detailed(scored, budget).selected

    def slice_detailed(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        """Like :meth:`slice`; also reports the items removed by a cap and the unmet
        requirements (under ``ScarcityBehavior.DEGRADE``)."""
        if not scored or budget.target_tokens <= 0:
            return SliceOutcome([])

        # Phase 1: Count-Satisfy. Commit each required kind's best candidates.
        required = {e.kind.key for e in self._entries if e.require_count > 0}
        partitions: dict[str, list[ScoredItem]] = {}
        for entry in scored:
            key = entry.item.kind.key
            if key in required:
                partitions.setdefault(key, []).append(entry)
        committed: list[ContextItem] = []
        selected_count: dict[str, int] = {}
        shortfalls: list[CountRequirementShortfall] = []
        for quota in self._entries:
            if quota.require_count <= 0:
                continue
            # sorted() is stable: equal scores keep input order.
            candidates = sorted(partitions.get(quota.kind.key, ()), key=lambda entry: -entry.score)
            chosen = candidates[: quota.require_count]
            committed.extend(candidate.item for candidate in chosen)
            satisfied = len(chosen)
            selected_count[quota.kind.key] = satisfied
            if satisfied < quota.require_count:
                if self._scarcity is ScarcityBehavior.THROW:
                    raise CountRequirementError(
                        self._name, str(quota.kind), satisfied, quota.require_count
                    )
                shortfalls.append(
                    CountRequirementShortfall(str(quota.kind), quota.require_count, satisfied)
                )

        # Phase 2: distribute the remaining budget over the residual candidates.
        committed_ids = set(map(id, committed))
        residual = [s for s in scored if id(s.item) not in committed_ids]
        residual_target = max(0, budget.target_tokens - sum(item.tokens for item in committed))
        residual_budget = ContextBudget(
            max_tokens=budget.max_tokens,
            target_tokens=min(residual_target, budget.max_tokens),
        )
        phase2 = self._distribute(residual, residual_budget)

        # Phase 3: Cap Enforcement, with counts seeded from phase 1.
        result = committed
        exclusions = list(phase2.cap_exclusions)
        for item in phase2.selected:
            key = item.kind.key
            count = selected_count.get(key, 0)
            limit = self._by_key.get(key)
            if limit is not None and limit.cap_count is not None and count >= limit.cap_count:
                exclusions.append(CapExclusion(item, str(limit.kind), limit.cap_count, count))
            else:
                result.append(item)
                selected_count[key] = count + 1
        return SliceOutcome(result, tuple(exclusions), (*shortfalls, *phase2.shortfalls))

    @abstractmethod
    def _distribute(self, residual: list[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        """Phase 2: select from ``residual`` within ``budget``, in the order phase 3 uses."""


class CountQuotaSlice(_CountQuotaSlicer):
    """Guarantee at least ``require_count`` and at most ``cap_count`` items per kind.

    Phase 1 commits, for each entry in order, the kind's ``require_count`` best-scored
    candidates (scarce kinds, including kinds with no candidates at all, are reported as
    shortfalls or raise :class:`~cupel.CountRequirementError` under
    ``ScarcityBehavior.THROW``). Phase 2 runs ``inner`` on the rest with ``target_tokens``
    reduced by the committed tokens. Phase 3 drops inner picks of a kind already at its
    cap. The result is the committed items, then the kept inner picks in inner order.

    ``inner`` must not be a :class:`KnapsackSlice` (the spec's guard: its output is not
    score-ordered, so phase 3 could drop better items than it keeps) nor a
    :class:`~cupel.slicers.CountConstrainedKnapsackSlice` (same hazard; it is the
    knapsack-based alternative to this class, configure the entries there instead).

    >>> from cupel._model import ContextBudget, ContextItem, ScoredItem
    >>> from cupel.slicers import GreedySlice
    >>> scored = [ScoredItem(ContextItem(content=f"msg{i}", tokens=10), 0.9) for i in range(4)]
    >>> scored.append(ScoredItem(ContextItem(content="tool", tokens=10, kind="ToolOutput"), 0.1))
    >>> slicer = CountQuotaSlice(GreedySlice(), [CountQuotaEntry("ToolOutput", require_count=1)])
    >>> [i.content for i in slicer.slice(scored, ContextBudget(max_tokens=30, target_tokens=30))]
    ['tool', 'msg0', 'msg1']
    """

    _name = "CountQuotaSlice"

    def __init__(
        self,
        inner: Slicer,
        entries: Sequence[CountQuotaEntry],
        scarcity: ScarcityBehavior | str = ScarcityBehavior.DEGRADE,
    ) -> None:
        check_inner("CountQuotaSlice", inner)
        if isinstance(inner, KnapsackSlice) or (
            isinstance(inner, _CountQuotaSlicer) and inner._uses_knapsack
        ):
            rule = (
                f"must not be a {type(inner).__name__} (its output is not score-ordered, so "
                f"cap enforcement could drop better items); use GreedySlice, or "
                f"CountConstrainedKnapsackSlice for knapsack selection with count quotas"
            )
            raise fail("CountQuotaSlice", "inner", rule, inner)
        super().__init__(entries, scarcity)
        self._inner = inner

    @property
    def inner(self) -> Slicer:
        """The slicer that selects from the residual candidates in phase 2."""
        return self._inner

    def _distribute(self, residual: list[ScoredItem], budget: ContextBudget) -> SliceOutcome:
        return slice_detailed(self._inner, residual, budget)
