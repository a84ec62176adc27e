"""Calibration from the provider's own count: when a history records what the provider
billed for an earlier request (LangChain's ``AIMessage.usage_metadata["input_tokens"]``),
the ratio of that to cupel's count of the same messages corrects the current call.

It only ever tightens: a ratio above 1 (the provider counted more than cupel) shrinks
the room for the history by that ratio for this call; a ratio at or below 1 changes
nothing (the earlier request may have been a window of the messages before it, so a low
ratio proves nothing). It is capped at :data:`MAX_RATIO`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cupel._budget import ContextBudget
from cupel.diagnostics import TraceEvent

__all__ = ["CALIBRATION_STAGE", "MAX_RATIO", "Calibration"]

MAX_RATIO = 2.0
"""The largest correction applied (a ratio beyond it is taken as this)."""

CALIBRATION_STAGE = "Calibrate"
"""The stage name of the report event that says a call was calibrated."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """The provider's ``reported`` input tokens for the request made with the first
    ``messages`` messages, and what cupel ``counted`` for them (with the reply and
    whatever else the request sent).

    >>> from cupel import ContextBudget
    >>> calibration = Calibration(reported=1150, counted=1000, messages=12)
    >>> calibration.ratio
    1.15
    >>> calibration.budget(ContextBudget(max_tokens=1000, target_tokens=1000)).output_reserve
    131
    """

    reported: int
    counted: int
    messages: int

    @property
    def ratio(self) -> float:
        """``reported / counted``, capped at :data:`MAX_RATIO` (1.0 when nothing was
        counted)."""
        if self.counted <= 0:
            return 1.0
        return min(self.reported / self.counted, MAX_RATIO)

    @property
    def corrects(self) -> bool:
        """Whether the provider counted more than cupel (so the call is tightened)."""
        return self.ratio > 1.0

    def budget(self, budget: ContextBudget) -> ContextBudget:
        """``budget`` with the room for the history divided by :attr:`ratio` (the
        difference added to ``output_reserve``); unchanged unless :attr:`corrects`."""
        if not self.corrects:
            return budget
        room = budget.max_tokens - budget.output_reserve
        extra = math.ceil(room * (1.0 - 1.0 / self.ratio))
        reserve = min(budget.max_tokens, budget.output_reserve + extra)
        return budget.model_copy(update={"output_reserve": reserve})

    def event(self, before: ContextBudget, after: ContextBudget) -> TraceEvent:
        """The report event saying how this call was calibrated."""
        return TraceEvent(
            CALIBRATION_STAGE,
            0.0,
            self.messages,
            f"the provider reported {self.reported} input tokens for the request of the "
            f"first {self.messages} messages, which cupel counts as {self.counted} "
            f"(ratio {self.ratio:.3f}): the room for this call's history is "
            f"{after.max_tokens - after.output_reserve} tokens instead of "
            f"{before.max_tokens - before.output_reserve}",
        )
