"""KnapsackSlice: 0/1 knapsack dynamic programming over bucketed token weights."""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Sequence
from typing import ClassVar, Literal

import numpy as np
import numpy.typing as npt

from cupel._errors import TableTooLargeError
from cupel._model import ContextBudget, ContextItem, ScoredItem
from cupel._params import BucketSize, PositiveInt
from cupel.diagnostics._outcomes import BucketRounding
from cupel.diagnostics._reasons import ExclusionReason, PackingChoice
from cupel.slicers._base import BaseSlicer, fail

__all__ = ["AUTO_BUCKETS", "DEFAULT_MAX_CELLS", "MAX_CELLS_LIMIT", "KnapsackSlice"]

DEFAULT_MAX_CELLS = 50_000_000
"""The largest DP table (``candidates x (capacity + 1)`` cells) KnapsackSlice builds."""

AUTO_BUCKETS = 1000
"""With ``bucket_size="auto"``, the budget is cut into at most this many buckets."""
MAX_CELLS_LIMIT = 1_000_000_000
"""The highest ``max_cells`` a KnapsackSlice accepts: the DP's keep table takes one byte
per cell, so this is a gigabyte."""

_SCORE_SCALE = 10_000
_INT64_MAX = int(np.iinfo(np.int64).max)
_LIMB_BITS = 62
_LIMB_MASK = (1 << _LIMB_BITS) - 1


class KnapsackSlice(BaseSlicer):
    """Choose the subset with the highest total score that fits ``target_tokens``.

    Scores become integers ``max(0, floor(score * 10000))``; weights are bucketed with
    ``ceil(tokens / bucket_size)`` and the capacity with ``floor(target_tokens /
    bucket_size)``, so every discretized solution also fits the real budget (it may
    under-fill it). Zero-token items skip the DP and are always included. The output is
    the zero-token items, then the DP selection in reconstruction order (last candidate
    first). Ties are resolved exactly as the specification's pseudocode.

    ``bucket_size="auto"`` scales the bucket with the budget: ``ceil(target_tokens /
    1000)`` (1 token up to a 1,000-token target), so small budgets are packed exactly and
    rounding never costs an item more than 0.1% of the budget.

    A DP table of more than ``max_cells`` cells (``candidates x (capacity + 1)``; ``None``
    means :attr:`DEFAULT_MAX_CELLS`; at most :data:`MAX_CELLS_LIMIT`) is refused with
    :class:`~cupel.TableTooLargeError` before anything is allocated; raise ``bucket_size``
    to shrink it. When rounding left out an item that fits the tokens left, the report's
    ``bucket_rounding`` says so (:class:`~cupel.BucketRounding`); an item that fits but
    scores under 0.0001 (adding nothing) is reported as :class:`~cupel.PackingChoice`.
    The DP is exact integer arithmetic on int64 arrays whatever the scores (1e12 and
    more, infinities included).

    >>> from cupel._model import ContextBudget, ContextItem, ScoredItem
    >>> scored = [ScoredItem(ContextItem(content="big", tokens=60), 0.9),
    ...           ScoredItem(ContextItem(content="a", tokens=50), 0.6),
    ...           ScoredItem(ContextItem(content="b", tokens=50), 0.6)]
    >>> budget = ContextBudget(max_tokens=100, target_tokens=100)
    >>> [i.content for i in KnapsackSlice(bucket_size=10).slice(scored, budget)]
    ['b', 'a']
    >>> KnapsackSlice(bucket_size="auto").bucket_for(budget)
    1
    """

    DEFAULT_MAX_CELLS: ClassVar[int] = DEFAULT_MAX_CELLS
    """The DP table limit when ``max_cells`` is left out (50,000,000 cells)."""

    def __init__(
        self, bucket_size: BucketSize = 100, *, max_cells: PositiveInt | None = None
    ) -> None:
        self._bucket_size: int | Literal["auto"] = (
            "auto" if bucket_size == "auto" else _positive_int("bucket_size", bucket_size)
        )
        self._max_cells = (
            DEFAULT_MAX_CELLS if max_cells is None else _positive_int("max_cells", max_cells)
        )
        if self._max_cells > MAX_CELLS_LIMIT:
            rule = (
                f"must be at most {MAX_CELLS_LIMIT:,} (the DP keep table takes one byte per cell)"
            )
            raise fail("KnapsackSlice", "max_cells", rule, max_cells)

    @property
    def bucket_size(self) -> int | Literal["auto"]:
        """Tokens per DP weight unit, or ``"auto"`` (see :meth:`bucket_for`)."""
        return self._bucket_size

    def bucket_for(self, budget: ContextBudget) -> int:
        """The bucket size used for ``budget``: ``bucket_size``, or with ``"auto"``
        ``ceil(target_tokens / AUTO_BUCKETS)`` (at least 1)."""
        if self._bucket_size == "auto":
            return max(1, -(-budget.target_tokens // AUTO_BUCKETS))
        return self._bucket_size

    @property
    def max_cells(self) -> int:
        """The largest DP table this slicer builds."""
        return self._max_cells

    def slice(self, scored: Sequence[ScoredItem], budget: ContextBudget) -> list[ContextItem]:
        if not scored or budget.target_tokens <= 0:
            return []
        zero_token: list[ContextItem] = []
        candidates: list[ScoredItem] = []
        for entry in scored:
            tokens = entry.item.tokens
            if tokens == 0:
                zero_token.append(entry.item)
            elif tokens > 0:
                candidates.append(entry)
        if not candidates:
            return zero_token
        bucket = self.bucket_for(budget)
        capacity = budget.target_tokens // bucket
        if capacity == 0:
            return zero_token
        n = len(candidates)
        cells = n * (capacity + 1)
        if cells > self._max_cells:
            raise TableTooLargeError(n, capacity, cells, self._max_cells)

        weights = [-(-c.item.tokens // bucket) for c in candidates]  # ceil division
        values = [_scaled_value(c.score) for c in candidates]
        keep = _fill_keep_table(weights, values, capacity)

        result = zero_token
        remaining = capacity
        for i in range(n - 1, -1, -1):
            if keep[i, remaining]:
                result.append(candidates[i].item)
                remaining -= weights[i]
        return result

    def exclusion_reasons(
        self,
        scored: Sequence[ScoredItem],
        selected: Sequence[ContextItem],
        budget: ContextBudget,
    ) -> dict[int, ExclusionReason]:
        """Why candidates that fit the tokens left were left out, keyed by ``id(item)``:
        :class:`~cupel.PackingChoice` for each whose score adds nothing to the packing's
        total. (Used by the pipeline's report; the others keep its ``BudgetExceeded``.)"""
        available = budget.target_tokens - sum(item.tokens for item in selected)
        chosen = set(map(id, selected))
        return {
            id(entry.item): PackingChoice(entry.item.tokens, available)
            for entry in scored
            if 0 < entry.item.tokens <= available
            and _scaled_value(entry.score) == 0
            and id(entry.item) not in chosen
        }

    def bucket_rounding(
        self,
        scored: Sequence[ScoredItem],
        selected: Sequence[ContextItem],
        budget: ContextBudget,
    ) -> BucketRounding | None:
        """What rounding to whole buckets cost this selection, or ``None`` when no
        candidate that fits the tokens left was left out for it (the pipeline puts it in
        the report as ``bucket_rounding``)."""
        if budget.target_tokens <= 0:
            return None
        bucket = self.bucket_for(budget)
        used = sum(item.tokens for item in selected)
        unused = budget.target_tokens - used
        left = budget.target_tokens // bucket - sum(
            -(-item.tokens // bucket) for item in selected if item.tokens > 0
        )
        chosen = set(map(id, selected))
        missed = sum(
            1
            for entry in scored
            if id(entry.item) not in chosen
            and 0 < entry.item.tokens <= unused
            and -(-entry.item.tokens // bucket) > left
            and _scaled_value(entry.score) > 0  # else PackingChoice: left out at any bucket
        )
        return BucketRounding(bucket, unused, missed) if missed else None


def _fill_keep_table(weights: list[int], values: list[int], capacity: int) -> npt.NDArray[np.bool_]:
    """The spec's 1-D DP, one vectorized step per item; returns the ``keep`` table.

    ``dp[:capacity + 1 - dw] + dv``, a new array, still holds the previous item's row as
    the pseudocode's downward walk does, and ``>`` (strict) keeps its ties. Only
    comparisons of sums decide the table, so the values may be any integers whose subset
    sums compare the same (:func:`_compress_values`); past int64, the sums are kept in
    several int64 words (:func:`_fill_keep_table_wide`).
    """
    compressed = _compress_values(values)
    if sum(compressed) > _INT64_MAX:
        return _fill_keep_table_wide(weights, compressed, capacity)
    dp = np.zeros(capacity + 1, dtype=np.int64)
    keep = np.zeros((len(weights), capacity + 1), dtype=np.bool_)
    for i, (dw, dv) in enumerate(zip(weights, compressed, strict=True)):
        if dw > capacity:
            continue
        with_item = dp[: capacity + 1 - dw] + dv
        better = with_item > dp[dw:]
        keep[i, dw:] = better
        np.maximum(dp[dw:], with_item, out=dp[dw:])
    return keep


def _compress_values(values: list[int]) -> list[int]:
    """Non-negative integers whose subset sums compare exactly like those of ``values``
    (``values`` itself when its total already fits int64).

    The distinct values, ascending, are cut into blocks: a block may start at a value
    when the gcd ``g`` of it and every larger value exceeds the total of all smaller
    values (counted with multiplicity). Then any two subsets that differ inside a block
    differ there by a multiple of ``g``, more than everything below can make up: sums
    compare block by block, highest first. Each value becomes ``(value / g_block) *
    scale_block``, where ``scale_block`` is one more than the encoded total of the lower
    blocks, which keeps that order (``inf`` next to ordinary scores: one small top block).
    """
    if sum(values) <= _INT64_MAX:
        return values
    counts = Counter(values)
    distinct = sorted(v for v in counts if v > 0)
    suffix_gcd = [0] * (len(distinct) + 1)
    for i in range(len(distinct) - 1, -1, -1):
        suffix_gcd[i] = math.gcd(distinct[i], suffix_gcd[i + 1])
    blocks: list[list[int]] = []
    below = 0  # total of all values smaller than distinct[i]
    for i, value in enumerate(distinct):
        if not blocks or suffix_gcd[i] > below:
            blocks.append([])
        blocks[-1].append(value)
        below += value * counts[value]
    encoded: dict[int, int] = {0: 0}
    encoded_below = 0
    for block in blocks:
        gcd = math.gcd(*block)
        scale = encoded_below + 1
        for value in block:
            encoded[value] = value // gcd * scale
            encoded_below += encoded[value] * counts[value]
    return [encoded[value] for value in values]


def _fill_keep_table_wide(
    weights: list[int], values: list[int], capacity: int
) -> npt.NDArray[np.bool_]:
    """:func:`_fill_keep_table` with each DP value held in ``limbs`` int64 words of 62
    bits (least significant first): exact for any total, a few times slower than one
    word."""
    limbs = max(1, -(-sum(values).bit_length() // _LIMB_BITS))
    dp = np.zeros((limbs, capacity + 1), dtype=np.int64)
    keep = np.zeros((len(weights), capacity + 1), dtype=np.bool_)
    for i, (dw, dv) in enumerate(zip(weights, values, strict=True)):
        if dw > capacity:
            continue
        words = np.array(
            [(dv >> (_LIMB_BITS * k)) & _LIMB_MASK for k in range(limbs)], dtype=np.int64
        )
        with_item = dp[:, : capacity + 1 - dw] + words[:, None]
        for k in range(limbs - 1):  # carry, lowest word first
            carry = with_item[k] >> _LIMB_BITS
            with_item[k] &= _LIMB_MASK
            with_item[k + 1] += carry
        current = dp[:, dw:]
        better = with_item[-1] > current[-1]
        equal = with_item[-1] == current[-1]
        for k in range(limbs - 2, -1, -1):  # compare, highest word first
            better |= equal & (with_item[k] > current[k])
            equal &= with_item[k] == current[k]
        keep[i, dw:] = better
        current[:, better] = with_item[:, better]
    return keep


def _scaled_value(score: float) -> int:
    """``max(0, floor(score * 10000))``; NaN counts as 0 and infinity as the largest double."""
    if not score > 0:
        return 0
    scaled = score * _SCORE_SCALE
    return int(sys.float_info.max) if math.isinf(scaled) else math.floor(scaled)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise fail("KnapsackSlice", name, "must be a positive integer", value)
    return value
