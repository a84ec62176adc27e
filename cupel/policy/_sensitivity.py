"""Running policies and comparing them: :func:`dry_run_with_policy` and
:func:`policy_sensitivity` (which items swing between configurations)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from cupel._errors import ConfigurationError, refusal
from cupel._model import ContextBudget, ContextItem
from cupel._pipeline import ContextResult, Pipeline
from cupel.diagnostics._events import TraceDetailLevel
from cupel.diagnostics._report import SelectionReport, require_report
from cupel.policy._policy import Policy
from cupel.policy._resolve import resolve_pipeline

__all__ = [
    "ItemStatus",
    "PolicySensitivityDiffEntry",
    "PolicySensitivityReport",
    "dry_run_with_policy",
    "policy_sensitivity",
]


def dry_run_with_policy(
    items: Sequence[ContextItem],
    budget: ContextBudget,
    policy: Policy | str,
    *,
    detail_level: TraceDetailLevel = TraceDetailLevel.STAGE,
) -> ContextResult:
    """Dry-run ``items`` through a pipeline built from ``policy`` (or a preset name);
    the returned result's ``report`` is always set. The budget is explicit: a policy
    carries none.

    >>> from cupel import ContextBudget, ContextItem
    >>> from cupel.policy import Policy, PrioritySpec
    >>> items = [ContextItem(content="a", tokens=40, priority=1),
    ...          ContextItem(content="b", tokens=40, priority=9)]
    >>> result = dry_run_with_policy(items, ContextBudget(max_tokens=50, target_tokens=40),
    ...                              Policy(scorer=PrioritySpec()))
    >>> [e.item.content for e in result.report.included]
    ['b']
    """
    pipeline = resolve_pipeline(policy, owner="dry_run_with_policy", pipelines=False)
    return pipeline.dry_run(items, budget, detail_level=detail_level)


class ItemStatus(str, Enum):
    """Whether a variant included an item (by content)."""

    INCLUDED = "Included"
    EXCLUDED = "Excluded"


_V = TypeVar("_V")


def _labelled(pairs: tuple[tuple[str, _V], ...], label: str) -> _V:
    """The value paired with ``label`` (the first such pair); ``KeyError`` if none is."""
    for name, value in pairs:
        if name == label:
            return value
    raise KeyError(label)


@dataclass(frozen=True, slots=True)
class PolicySensitivityDiffEntry:
    """An item (identified by ``content``) that at least two variants disagree on;
    ``statuses`` has one ``(label, status)`` pair per variant, in variant order."""

    content: str
    statuses: tuple[tuple[str, ItemStatus], ...]

    def status(self, label: str) -> ItemStatus:
        """The status under the variant labelled ``label``."""
        return _labelled(self.statuses, label)

    def to_dict(self) -> dict[str, Any]:
        """Wire form."""
        return {
            "content": self.content,
            "statuses": [{"label": n, "status": s.value} for n, s in self.statuses],
        }


@dataclass(frozen=True, slots=True)
class PolicySensitivityReport:
    """The per-variant reports (in input order) and the swinging items (``diffs``, in
    first-seen input order of the items)."""

    variants: tuple[tuple[str, SelectionReport], ...]
    diffs: tuple[PolicySensitivityDiffEntry, ...]

    def report(self, label: str) -> SelectionReport:
        """The report of the variant labelled ``label``."""
        return _labelled(self.variants, label)

    def to_dict(self) -> dict[str, Any]:
        """Wire form (each variant's report in the SelectionReport wire form)."""
        return {
            "variants": [{"label": n, "report": r.to_dict()} for n, r in self.variants],
            "diffs": [d.to_dict() for d in self.diffs],
        }


def policy_sensitivity(
    items: Sequence[ContextItem],
    budget: ContextBudget,
    variants: Sequence[tuple[str, Policy | Pipeline | str]],
) -> PolicySensitivityReport:
    """Dry-run ``items`` under each ``(label, policy)`` variant and list the items whose
    inclusion differs between variants.

    A variant is a :class:`Policy`, a :class:`~cupel.Pipeline` or a preset name. At least
    two variants with distinct labels are required (:class:`~cupel.ConfigurationError`
    ``"policy_sensitivity requires at least 2 variants"`` otherwise). Items are matched by
    content (ordinal equality): an item is included under a variant when an included
    item has its content. Only items on which variants disagree appear in ``diffs``, in
    the order their content first appears in ``items``.

    >>> from cupel import ContextBudget, ContextItem
    >>> from cupel.policy import Policy, PrioritySpec, ReflexiveSpec
    >>> items = [ContextItem(content="a", tokens=40, priority=10, future_relevance_hint=0.1),
    ...          ContextItem(content="b", tokens=40, priority=1, future_relevance_hint=0.9)]
    >>> report = policy_sensitivity(items, ContextBudget(max_tokens=50, target_tokens=40),
    ...     [("priority", Policy(scorer=PrioritySpec())),
    ...      ("reflexive", Policy(scorer=ReflexiveSpec()))])
    >>> [(d.content, [s.value for _, s in d.statuses]) for d in report.diffs]
    [('a', ['Included', 'Excluded']), ('b', ['Excluded', 'Included'])]
    """
    if isinstance(variants, (str, bytes)) or not isinstance(variants, Sequence):
        raise ConfigurationError(
            f"policy_sensitivity: variants must be a sequence of (label, policy) pairs, "
            f"got {type(variants).__name__}",
            field="variants",
            value=variants,
        )
    if len(variants) < 2:
        raise ConfigurationError(
            "policy_sensitivity requires at least 2 variants", field="variants", value=variants
        )
    pipelines: list[tuple[str, Pipeline]] = []
    for index, variant in enumerate(variants):
        where = f"variants[{index}]"
        if not isinstance(variant, tuple) or len(variant) != 2:
            raise refusal("policy_sensitivity", where, "must be a (label, policy) pair", variant)
        label, policy = variant
        if not isinstance(label, str):
            raise refusal("policy_sensitivity", where, "label must be a string", label)
        if any(label == known for known, _ in pipelines):
            raise ConfigurationError(
                f"policy_sensitivity: {where} repeats the label {label!r}; labels must be distinct",
                field=where,
                value=label,
            )
        pipelines.append((label, resolve_pipeline(policy, field=f"{where} policy")))

    reports = [
        (label, require_report(pipeline.dry_run(items, budget).report))
        for label, pipeline in pipelines
    ]
    included = [{entry.item.content for entry in report.included} for _, report in reports]

    diffs: list[PolicySensitivityDiffEntry] = []
    for content in dict.fromkeys(item.content for item in items):
        statuses = tuple(
            (label, ItemStatus.INCLUDED if content in chosen else ItemStatus.EXCLUDED)
            for (label, _), chosen in zip(reports, included, strict=True)
        )
        if len({status for _, status in statuses}) > 1:
            diffs.append(PolicySensitivityDiffEntry(content, statuses))
    return PolicySensitivityReport(tuple(reports), tuple(diffs))
