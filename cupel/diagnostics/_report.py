"""The SelectionReport: every decision of one run, with reasons and totals."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from cupel._checks import json_object
from cupel._errors import ConfigurationError, InvalidOperationError
from cupel._model import ContextItem
from cupel.diagnostics._assertions import ReportAssertions
from cupel.diagnostics._entries import ExcludedItem, IncludedItem, by_score
from cupel.diagnostics._events import OverflowEvent, TraceEvent
from cupel.diagnostics._outcomes import BucketRounding, CountRequirementShortfall, Recalled
from cupel.diagnostics._reasons import (
    ExclusionReason,
    InclusionReason,
    exclusion_reason_from_dict,
)

__all__ = ["Deferred", "SelectionReport", "require_report"]

Entry = TypeVar("Entry", IncludedItem, ExcludedItem)


@dataclass(frozen=True, slots=True)
class SelectionReport(ReportAssertions):
    """Why each candidate was included or excluded.

    ``included`` is in placed order; ``excluded`` is sorted by score descending, ties in
    the order the pipeline excluded them. ``total_candidates`` counts every input item and
    ``total_tokens_considered`` sums all their tokens (negative ones included).
    ``overflow`` is set when ``OverflowStrategy.PROCEED`` let the window exceed its target;
    ``bucket_rounding`` when a knapsack's rounding to whole buckets left out an item that
    fits the tokens left (:class:`~cupel.BucketRounding`); ``recalled`` the units a
    recency window's scored share brought back from before the window, each with its score
    and the query terms it matched (:class:`~cupel.Recalled`).
    """

    events: tuple[TraceEvent, ...]
    included: tuple[IncludedItem, ...]
    excluded: tuple[ExcludedItem, ...]
    total_candidates: int
    total_tokens_considered: int
    count_requirement_shortfalls: tuple[CountRequirementShortfall, ...] = field(default=())
    overflow: OverflowEvent | None = None
    bucket_rounding: BucketRounding | None = None
    recalled: tuple[Recalled, ...] = ()

    @classmethod
    def deferred(
        cls,
        events: tuple[TraceEvent, ...],
        included: Deferred[IncludedItem],
        excluded: Deferred[ExcludedItem],
        total_candidates: int,
        total_tokens_considered: int,
        count_requirement_shortfalls: tuple[CountRequirementShortfall, ...] = (),
        overflow: OverflowEvent | None = None,
    ) -> SelectionReport:
        """A report whose ``included`` and ``excluded`` are built on their first read
        (private: how a :class:`~cupel.DiagnosticTraceCollector` builds its report). Once
        built, the report is indistinguishable from one constructed with the tuples."""
        return cls(
            events,
            cast("tuple[IncludedItem, ...]", included),
            cast("tuple[ExcludedItem, ...]", excluded),
            total_candidates,
            total_tokens_considered,
            count_requirement_shortfalls,
            overflow,
        )

    @property
    def included_tokens(self) -> int:
        """Tokens of the window (sum over ``included``)."""
        return sum(entry.item.tokens for entry in self.included)

    def excluded_by(self, reason: str | type[ExclusionReason]) -> list[ExcludedItem]:
        """The exclusions with a given reason (variant class or its name)."""
        name = reason if isinstance(reason, str) else reason.name
        return [e for e in self.excluded if e.reason.name == name]

    def with_excluded(
        self,
        *,
        moved: Sequence[tuple[ContextItem, ExclusionReason]] = (),
        added: Sequence[tuple[ContextItem, ExclusionReason]] = (),
    ) -> SelectionReport:
        """This report with decisions made outside the pipeline: ``moved`` items (now in
        ``included``) move to ``excluded`` keeping their score; ``added`` items, which
        never reached the pipeline, join ``excluded`` (score 0.0) and the totals.
        ``excluded`` stays sorted by score, descending (ties keep their order, the new
        ones after the pipeline's).

        >>> from cupel import ContextItem, Filtered
        >>> report = SelectionReport((), (), (), 0, 0)
        >>> stray = ContextItem(content="stray", tokens=4)
        >>> amended = report.with_excluded(added=[(stray, Filtered("orphan"))])
        >>> amended.total_candidates, amended.excluded[0].reason
        (1, Filtered(filter_name='orphan'))
        """
        if not moved and not added:
            return self
        reasons = {id(item): reason for item, reason in moved}
        included = tuple(entry for entry in self.included if id(entry.item) not in reasons)
        excluded = by_score(
            [
                *self.excluded,
                *(
                    ExcludedItem(entry.item, entry.score, reasons[id(entry.item)])
                    for entry in self.included
                    if id(entry.item) in reasons
                ),
                *(ExcludedItem(item, 0.0, reason) for item, reason in added),
            ]
        )
        return replace(
            self,
            included=included,
            excluded=tuple(excluded),
            total_candidates=self.total_candidates + len(added),
            total_tokens_considered=self.total_tokens_considered
            + sum(item.tokens for item, _ in added),
        )

    def to_dict(self) -> dict[str, Any]:
        """The spec's JSON wire form (plus ``count_requirement_shortfalls``, ``overflow``,
        ``bucket_rounding`` and ``recalled`` when present)."""
        out: dict[str, Any] = {
            "events": [e.to_dict() for e in self.events],
            "included": [i.to_dict() for i in self.included],
            "excluded": [e.to_dict() for e in self.excluded],
            "total_candidates": self.total_candidates,
            "total_tokens_considered": self.total_tokens_considered,
        }
        if self.count_requirement_shortfalls:
            out["count_requirement_shortfalls"] = [
                s.to_dict() for s in self.count_requirement_shortfalls
            ]
        if self.overflow is not None:
            out["overflow"] = self.overflow.to_dict()
        if self.bucket_rounding is not None:
            out["bucket_rounding"] = self.bucket_rounding.to_dict()
        if self.recalled:
            out["recalled"] = [unit.to_dict() for unit in self.recalled]
        return out

    def to_json(self, *, indent: int | None = None) -> str:
        """The wire form as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SelectionReport:
        """Parse the wire form (unknown stages and reasons are kept, not rejected)."""

        def items(key: str) -> Sequence[Mapping[str, Any]]:
            value = data.get(key, [])
            return value if isinstance(value, list) else []

        included = tuple(
            IncludedItem(
                item=ContextItem.from_dict(e["item"]),
                score=float(e["score"]),
                reason=InclusionReason(e["reason"]["reason"]),
            )
            for e in items("included")
        )
        excluded = tuple(
            ExcludedItem(
                item=ContextItem.from_dict(e["item"]),
                score=float(e["score"]),
                reason=exclusion_reason_from_dict(e["reason"]),
            )
            for e in items("excluded")
        )
        shortfalls = tuple(
            CountRequirementShortfall(
                kind=str(s["kind"]),
                required_count=int(s["required_count"]),
                satisfied_count=int(s["satisfied_count"]),
            )
            for s in items("count_requirement_shortfalls")
        )
        rounding = data.get("bucket_rounding")
        return cls(
            events=tuple(TraceEvent.from_dict(e) for e in items("events")),
            included=included,
            excluded=excluded,
            total_candidates=int(data.get("total_candidates", len(included) + len(excluded))),
            total_tokens_considered=int(data.get("total_tokens_considered", 0)),
            count_requirement_shortfalls=shortfalls,
            overflow=(
                OverflowEvent.from_dict(data["overflow"])
                if isinstance(data.get("overflow"), Mapping)
                else None
            ),
            bucket_rounding=(
                BucketRounding(
                    bucket_size=int(rounding["bucket_size"]),
                    unused_tokens=int(rounding["unused_tokens"]),
                    items_left_out=int(rounding["items_left_out"]),
                )
                if isinstance(rounding, Mapping)
                else None
            ),
            recalled=tuple(
                Recalled.from_dict(unit) for unit in items("recalled") if isinstance(unit, Mapping)
            ),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> SelectionReport:
        """Parse JSON text (invalid JSON, bytes that are not UTF-8 and documents nested too
        deeply to parse raise :class:`~cupel.ConfigurationError`)."""
        return cls.from_dict(json_object(text, "SelectionReport", ConfigurationError))


class Deferred(Generic[Entry]):
    """Report entries not built yet: ``build()`` makes them, once, on the first read of
    the report field that holds this (thread-safe; every reader gets the same tuple)."""

    __slots__ = ("_build", "_entries", "_lock")

    def __init__(self, build: Callable[[], Sequence[Entry]]) -> None:
        self._build: Callable[[], Sequence[Entry]] = build
        self._entries: tuple[Entry, ...] | None = None
        self._lock = threading.Lock()

    def entries(self) -> tuple[Entry, ...]:
        """The entries (built on the first call)."""
        entries = self._entries
        if entries is None:
            with self._lock:
                entries = self._entries
                if entries is None:
                    entries = self._entries = tuple(self._build())
                    self._build = tuple  # let go of the builder and what it holds
        return entries


class _EntriesField:
    """The descriptor of ``SelectionReport.included`` / ``.excluded``: the dataclass slot,
    read through so that a :class:`Deferred` value is built on its first read and the
    slot then holds the tuple. Writes go to the slot unchanged."""

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, report: object, owner: type | None = None) -> Any:
        if report is None:
            return self._slot
        value = self._slot.__get__(report, owner)
        if type(value) is Deferred:
            value = value.entries()
            self._slot.__set__(report, value)
        return value

    def __set__(self, report: object, value: Any) -> None:
        self._slot.__set__(report, value)


for _name in ("included", "excluded"):
    setattr(SelectionReport, _name, _EntriesField(SelectionReport.__dict__[_name]))


def require_report(report: SelectionReport | None) -> SelectionReport:
    """``report``, which a ``dry_run`` always sets (a runtime check that, unlike ``assert``,
    survives ``python -O``)."""
    if report is None:
        raise InvalidOperationError("dry_run returned no SelectionReport")
    return report
