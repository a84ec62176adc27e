"""How the command line words things (private): one wording per reason, everywhere.

:class:`ReasonWording` is what ``select``, ``demo``, ``explain``, ``min-budget`` and the
HTML page print for a decision; :func:`clip` fits content on one terminal line.
"""

from __future__ import annotations

from collections import Counter

from cupel._pipeline import Pipeline
from cupel.cli._io import terminal_safe
from cupel.diagnostics import (
    BudgetExceeded,
    CountRequirementShortfall,
    ExcludedItem,
    IncludedItem,
    InclusionReason,
    NegativeTokens,
    SelectionReport,
)
from cupel.placers import ChronologicalPlacer
from cupel.slicers import KnapsackSlice, QuotaSlice

__all__ = [
    "ReasonWording",
    "clip",
    "considered",
    "count",
    "reason_detail",
    "shortfall_text",
    "undated_note",
]

_INCLUSION_DETAIL = {
    InclusionReason.PINNED: "Pinned: bypasses scoring and slicing",
    InclusionReason.SCORED: "Scored: selected within the budget",
    InclusionReason.ZERO_TOKEN: "ZeroToken: costs no tokens",
}


def clip(text: str, width: int) -> str:
    """``text`` on one line, at most ``width`` characters (``…`` marks a cut); control
    characters are shown escaped (``\\x1b``), never sent to the terminal."""
    flat = terminal_safe(" ".join(text.split()))
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


class ReasonWording:
    """The one wording of every reason, for every text the CLI writes (``select``,
    ``demo``, ``explain``, ``min-budget``, the HTML page): the reason's
    :meth:`~cupel.diagnostics.ExclusionReason.describe`, plus why a
    ``BudgetExceeded`` item that would fit in the tokens left was still left out — by
    knapsack bucket rounding (item sizes round up, the budget down, to whole buckets),
    by a quota share, or by the slicer's choice. (A knapsack's packing choice has a
    reason of its own, :class:`~cupel.diagnostics.PackingChoice`.)

    ``bucket_flag`` names the bucket size where the user set it (``--bucket-size`` from
    the command line, ``bucket_size`` in a policy).

    >>> from cupel import ContextItem, ContextBudget, Pipeline, ReflexiveScorer, KnapsackSlice
    >>> items = [ContextItem(content="a", tokens=100, future_relevance_hint=0.9),
    ...          ContextItem(content="b", tokens=52, future_relevance_hint=0.5)]
    >>> pipeline = Pipeline(ReflexiveScorer(), KnapsackSlice(bucket_size=100))
    >>> report = pipeline.dry_run(items, ContextBudget(max_tokens=199, target_tokens=199)).report
    >>> wording = ReasonWording(report, pipeline)
    >>> print(wording(report.excluded[0]))  # doctest: +NORMALIZE_WHITESPACE
    BudgetExceeded: needs 52 tokens, 99 available; only knapsack bucket rounding excludes
    it: with --bucket-size 100 it takes 1 bucket and 0 of 1 are left
    """

    def __init__(
        self,
        report: SelectionReport,
        pipeline: Pipeline,
        *,
        bucket_flag: str = "--bucket-size",
    ) -> None:
        slicer = pipeline.slicer
        self._slicer_name = type(slicer).__name__
        self._bucket_flag = bucket_flag
        size = slicer.bucket_size if type(slicer) is KnapsackSlice else None
        if size == "auto":  # the size this run used, known when rounding cost something
            rounding = report.bucket_rounding
            size = None if rounding is None else rounding.bucket_size
        self._bucket_size: int | None = size
        self._quota = isinstance(slicer, QuotaSlice) or bool(
            getattr(slicer, "is_count_quota", False)
        )
        self._selected = [
            e.item.tokens for e in report.included if e.reason is InclusionReason.SCORED
        ]
        self._memo: dict[tuple[int, int], str] = {}

    def __call__(self, entry: IncludedItem | ExcludedItem) -> str:
        """``entry``'s reason in words, with its numbers."""
        if isinstance(entry, IncludedItem):
            return _INCLUSION_DETAIL.get(entry.reason, entry.reason.value)
        reason = entry.reason
        text = reason.describe()
        if isinstance(reason, BudgetExceeded) and reason.item_tokens <= reason.available_tokens:
            key = (reason.item_tokens, reason.available_tokens)
            why = self._memo.get(key)
            if why is None:
                why = self._memo[key] = self._fits_but_excluded(*key)
            text = f"{text}; {why}"
        return terminal_safe(text)

    def _fits_but_excluded(self, tokens: int, available: int) -> str:
        size = self._bucket_size
        if size is not None:
            capacity = (available + sum(self._selected)) // size
            left = capacity - sum(-(-t // size) for t in self._selected if t > 0)
            needs = -(-tokens // size)
            if needs > left:
                return (
                    f"only knapsack bucket rounding excludes it: with {self._bucket_flag} "
                    f"{size} it takes {count(needs, 'bucket')} and {left:,} of "
                    f"{capacity:,} are left"
                )
        if self._quota:
            return f"it fits the tokens left, but not its kind's share under {self._slicer_name}"
        return f"it fits the tokens left, but {self._slicer_name} left it out"


def undated_note(pipeline: Pipeline, report: SelectionReport) -> str | None:
    """Under the chronological placer, why some window items come after the newest ones:
    items without a timestamp go last (the specification's rule). ``None`` when no
    such item is placed after dated ones."""
    if type(pipeline.placer) is not ChronologicalPlacer:
        return None
    window = [entry.item for entry in report.included]
    undated = [item for item in window if item.timestamp is None]
    if not undated or len(undated) == len(window):
        return None
    kinds = Counter(str(item.kind) for item in undated).most_common()
    listed = ", ".join(f"{kind} {n}" for kind, n in kinds)
    return (
        f"{count(len(undated), 'item')} without a timestamp ({listed}) placed after the "
        "dated ones: the chronological placer puts undated items last (give them a "
        "timestamp, or use --placer u-shaped)"
    )


def reason_detail(entry: IncludedItem | ExcludedItem) -> str:
    """The reason with its numbers, e.g. ``BudgetExceeded: needs 400 tokens, 50 available``
    (without a pipeline's context: see :class:`ReasonWording`)."""
    if isinstance(entry, IncludedItem):
        return _INCLUSION_DETAIL.get(entry.reason, entry.reason.value)
    return terminal_safe(entry.reason.describe())


def considered(report: SelectionReport) -> str:
    """The tokens the candidates hold, ``1,234 tokens``: negative counts (left out at
    Classify) are not added in, as the report's ``total_tokens_considered`` adds them (a
    spec ruling), which reads as ``2 of -1 tokens``; they are named instead.

    >>> from cupel import ContextBudget, ContextItem, Pipeline, RecencyScorer
    >>> items = [ContextItem(content="a", tokens=2), ContextItem(content="b", tokens=-3)]
    >>> report = Pipeline(RecencyScorer()).dry_run(items, ContextBudget(max_tokens=9,
    ...                                            target_tokens=9)).report
    >>> report.total_tokens_considered, considered(report)
    (-1, '2 tokens, 1 item with a negative token count left out')
    """
    negative = [e.item.tokens for e in report.excluded if isinstance(e.reason, NegativeTokens)]
    total = f"{report.total_tokens_considered - sum(negative):,} tokens"
    if not negative:
        return total
    return f"{total}, {count(len(negative), 'item')} with a negative token count left out"


def count(n: int, noun: str) -> str:
    """``1 item``, ``2 items``."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def shortfall_text(shortfall: CountRequirementShortfall) -> str:
    """``shortfall: kind <kind> has <satisfied> of <required> required items``."""
    return (
        f"shortfall: kind {shortfall.kind} has {shortfall.satisfied_count} of "
        f"{shortfall.required_count} required items"
    )
