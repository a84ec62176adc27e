"""The built-in components as policy tables: one derived spec per scorer, slicer and
decay curve, the ``type``-keyed unions that choose among them, and the placers by name.

The ``type`` key is the class name without its family suffix, in snake case
(``MetadataTrustScorer`` → ``metadata_trust``, ``RecencyWindowSlice`` →
``recency_window``, ``ExponentialDecay`` → ``exponential``); the fields are the
constructor's parameters (see :mod:`cupel.policy._derive`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias, Union

from pydantic import BeforeValidator, Field

from cupel.placers import ChronologicalPlacer, UShapedPlacer
from cupel.policy._base import fail, type_shorthand
from cupel.policy._custom import CustomScorerSpec
from cupel.policy._derive import ComponentSpec, rebuild, spec_of, stem, tuple_spec
from cupel.scorers import (
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    FrequencyScorer,
    KindScorer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    RelevanceScorer,
    ScaledScorer,
    StepDecay,
    TagScorer,
    WindowDecay,
)
from cupel.slicers import (
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KnapsackSlice,
    QuotaEntry,
    QuotaSlice,
    RecencyWindowSlice,
)

__all__ = [  # cupel.policy exports exactly these
    "CompositeEntrySpec",
    "CompositeSpec",
    "CountConstrainedKnapsackSpec",
    "CountQuotaEntrySpec",
    "CountQuotaSpec",
    "CurveSpec",
    "DecaySpec",
    "ExponentialCurveSpec",
    "FrequencySpec",
    "GreedySpec",
    "KindSpec",
    "KnapsackSpec",
    "MetadataKeySpec",
    "MetadataTrustSpec",
    "PrioritySpec",
    "QuotaEntrySpec",
    "QuotaSpec",
    "RecencySpec",
    "RecencyWindowSpec",
    "ReflexiveSpec",
    "RelevanceSpec",
    "ScaledSpec",
    "ScorerSpec",
    "SlicerSpec",
    "StepCurveSpec",
    "StepWindowSpec",
    "TagSpec",
    "WindowCurveSpec",
]

SCORERS: tuple[type, ...] = (
    RecencyScorer,
    PriorityScorer,
    KindScorer,
    TagScorer,
    FrequencyScorer,
    ReflexiveScorer,
    CompositeScorer,
    ScaledScorer,
    MetadataTrustScorer,
    MetadataKeyScorer,
    DecayScorer,
    RelevanceScorer,
)
"""The built-in scorers a policy names, in the order error messages list them."""
SLICERS: tuple[type, ...] = (
    GreedySlice,
    KnapsackSlice,
    QuotaSlice,
    CountQuotaSlice,
    CountConstrainedKnapsackSlice,
    RecencyWindowSlice,
)
CURVES: tuple[type, ...] = (ExponentialDecay, StepDecay, WindowDecay)
PLACERS: tuple[type, ...] = (ChronologicalPlacer, UShapedPlacer)


def type_name(cls: type) -> str:
    """A component's ``type`` in policies: ``MetadataTrustScorer`` → ``metadata_trust``.

    >>> type_name(CountConstrainedKnapsackSlice), type_name(UShapedPlacer)
    ('count_constrained_knapsack', 'u_shaped')
    """
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", stem(cls)).lower()


def _derive(classes: tuple[type, ...], suffix: str = "Spec") -> list[type[ComponentSpec]]:
    return [spec_of(cls, tag=type_name(cls), name=f"{stem(cls)}{suffix}") for cls in classes]


def _union(members: list[Any]) -> Any:
    return Annotated[
        Union[tuple(members)],  # noqa: UP007
        Field(discriminator="type"),
        BeforeValidator(type_shorthand),
    ]


_SCORER_SPECS = _derive(SCORERS)
_SLICER_SPECS = _derive(SLICERS)
_CURVE_SPECS = _derive(CURVES, "CurveSpec")

if TYPE_CHECKING:  # what a type checker sees; pydantic validates the unions below
    ScorerSpec: TypeAlias = ComponentSpec | CustomScorerSpec
    SlicerSpec: TypeAlias = ComponentSpec
    CurveSpec: TypeAlias = ComponentSpec
else:
    ScorerSpec = _union([*_SCORER_SPECS, CustomScorerSpec])
    """Any scorer table, chosen by its ``type`` key."""
    SlicerSpec = _union(_SLICER_SPECS)
    """Any slicer table, chosen by its ``type`` key."""
    CurveSpec = _union(_CURVE_SPECS)
    """Any decay curve table, chosen by its ``type`` key."""

rebuild({"ScorerSpec": ScorerSpec, "SlicerSpec": SlicerSpec, "CurveSpec": CurveSpec})


def _windows_ascend(spec: Any, path: str) -> None:
    """A step curve's windows ascend (said in the policy's terms: seconds, by index)."""
    windows = spec.windows
    for index in range(1, len(windows)):
        if windows[index].max_age_secs <= windows[index - 1].max_age_secs:
            value = windows[index].max_age_secs
            raise fail(
                f"{path}.windows[{index}].max_age_secs",
                f"must be greater than windows[{index - 1}].max_age_secs "
                f"({windows[index - 1].max_age_secs}) (windows ascend), got {value!r}",
                value,
            )


spec_of(StepDecay).checks = (_windows_ascend,)


# The tables by name (cupel.policy exports them).
RecencySpec: type[Any] = spec_of(RecencyScorer)
PrioritySpec: type[Any] = spec_of(PriorityScorer)
KindSpec: type[Any] = spec_of(KindScorer)
TagSpec: type[Any] = spec_of(TagScorer)
FrequencySpec: type[Any] = spec_of(FrequencyScorer)
ReflexiveSpec: type[Any] = spec_of(ReflexiveScorer)
RelevanceSpec: type[Any] = spec_of(RelevanceScorer)
CompositeSpec: type[Any] = spec_of(CompositeScorer)
CompositeEntrySpec: type[Any] = tuple_spec("CompositeEntrySpec")
ScaledSpec: type[Any] = spec_of(ScaledScorer)
MetadataTrustSpec: type[Any] = spec_of(MetadataTrustScorer)
MetadataKeySpec: type[Any] = spec_of(MetadataKeyScorer)
DecaySpec: type[Any] = spec_of(DecayScorer)
ExponentialCurveSpec: type[Any] = spec_of(ExponentialDecay)
StepCurveSpec: type[Any] = spec_of(StepDecay)
StepWindowSpec: type[Any] = tuple_spec("StepWindowSpec")
WindowCurveSpec: type[Any] = spec_of(WindowDecay)
GreedySpec: type[Any] = spec_of(GreedySlice)
KnapsackSpec: type[Any] = spec_of(KnapsackSlice)
QuotaSpec: type[Any] = spec_of(QuotaSlice)
QuotaEntrySpec: type[Any] = spec_of(QuotaEntry)
CountQuotaSpec: type[Any] = spec_of(CountQuotaSlice)
CountQuotaEntrySpec: type[Any] = spec_of(CountQuotaEntry)
CountConstrainedKnapsackSpec: type[Any] = spec_of(CountConstrainedKnapsackSlice)
RecencyWindowSpec: type[Any] = spec_of(RecencyWindowSlice)
