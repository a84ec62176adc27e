"""Declarative policies: a whole pipeline configuration as data (JSON, TOML or Python).

A :class:`Policy` names a scorer, a slicer, a placer, deduplication and the overflow
strategy. It can express **every** built-in scorer (nested composites and scaled scorers
included) and every slicer (quota and count-quota slicers included), plus custom scorers
registered with :func:`register_scorer`. Policies are validated when they are created or
loaded — the components are built eagerly — and every error names the path of the
offending value::

    scorer.scorers[2].weight: must be > 0, got -1

>>> policy = Policy.from_dict({
...     "scorer": {"type": "composite", "scorers": [
...         {"weight": 3, "scorer": {"type": "recency"}},
...         {"weight": 1, "scorer": "kind"}]},
...     "slicer": {"type": "knapsack", "bucket_size": 50},
...     "placer": "u-shaped"})
>>> policy.placer, policy.slicer
('u_shaped', KnapsackSpec(type='knapsack', bucket_size=50, max_cells=None))
>>> Policy.from_toml(policy.to_toml()) == policy
True
>>> pipeline = policy.build()
>>> pipeline.slicer, pipeline.placer
(KnapsackSlice(bucket_size=50), UShapedPlacer())
>>> Policy.from_dict({"scorer": {"type": "composite", "scorers": [
...     {"weight": -1, "scorer": "kind"}]}})
Traceback (most recent call last):
...
cupel.PolicyError: scorer.scorers[0].weight: must be > 0, got -1
"""

from __future__ import annotations

import json
import math
import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timezone
from enum import Enum
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    NoReturn,
    Union,
    get_args,
    get_origin,
)

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from cupel._errors import ConfigurationError, PolicyError
from cupel._model import (
    ContextBudget,
    ContextItem,
    OverflowStrategy,
    ascii_fold,
)
from cupel._pipeline import set_policy_resolver
from cupel.diagnostics._events import TraceDetailLevel
from cupel.diagnostics._report import SelectionReport, require_report
from cupel.placers import ChronologicalPlacer, Placer, UShapedPlacer
from cupel.scorers import (
    CompositeScorer,
    DecayCurve,
    DecayScorer,
    ExponentialDecay,
    FixedTimeProvider,
    FrequencyScorer,
    KindScorer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    Scorer,
    StepDecay,
    SystemTimeProvider,
    TagScorer,
    WindowDecay,
)
from cupel.scorers.decay import MAX_DURATION_SECONDS, duration_from_seconds
from cupel.slicers import (
    CountConstrainedKnapsackSlice,
    CountQuotaEntry,
    CountQuotaSlice,
    GreedySlice,
    KnapsackSlice,
    QuotaEntry,
    QuotaSlice,
    RecencyWindowSlice,
    ScarcityBehavior,
    Slicer,
)
from cupel.slicers.knapsack import DEFAULT_MAX_CELLS
from cupel.slicers.recency_window import DEFAULT_BLOCK_KEY

if TYPE_CHECKING:
    from cupel._pipeline import ContextResult, Pipeline

__all__ = [
    "MAX_POLICY_DEPTH",
    "CompositeEntrySpec",
    "CompositeSpec",
    "CountConstrainedKnapsackSpec",
    "CountQuotaEntrySpec",
    "CountQuotaSpec",
    "CurveSpec",
    "CustomScorerSpec",
    "DecaySpec",
    "ExponentialCurveSpec",
    "FrequencySpec",
    "GreedySpec",
    "ItemStatus",
    "KindSpec",
    "KnapsackSpec",
    "MetadataKeySpec",
    "MetadataTrustSpec",
    "Policy",
    "PolicyError",
    "PolicySensitivityDiffEntry",
    "PolicySensitivityReport",
    "PrioritySpec",
    "QuotaEntrySpec",
    "QuotaSpec",
    "RecencySpec",
    "RecencyWindowSpec",
    "ReflexiveSpec",
    "ScaledSpec",
    "ScorerSpec",
    "SlicerSpec",
    "StepCurveSpec",
    "StepWindowSpec",
    "TagSpec",
    "WindowCurveSpec",
    "dry_run_with_policy",
    "policy_sensitivity",
    "register_scorer",
    "registered_scorers",
    "unregister_scorer",
]


def _fail(path: str, rule: str, value: Any) -> PolicyError:
    """One problem at ``path``: ``"<path>: <rule>"``."""
    return PolicyError.of([(path, rule, value)])


def _join(outer: str, inner: str) -> str:
    if not outer:
        return inner
    if not inner:
        return outer
    return outer + inner if inner.startswith("[") else f"{outer}.{inner}"


# ---------------------------------------------------------------------------------------
# The custom scorer registry
# ---------------------------------------------------------------------------------------
ScorerFactory = Callable[..., Scorer]
_REGISTRY: dict[str, ScorerFactory] = {}


def register_scorer(name: str, factory: ScorerFactory, *, replace: bool = False) -> None:
    """Make ``{"type": "custom", "name": name, "params": {...}}`` build ``factory(**params)``.

    Names are exact (case-sensitive). Registering a taken name raises
    :class:`~cupel.ConfigurationError` unless ``replace=True``. The factory is called
    when a policy is validated and again by each :meth:`Policy.build`, so it should be
    cheap and free of side effects.

    >>> from cupel import KindScorer
    >>> register_scorer("doc-first", lambda boost=2.0: KindScorer({"Document": boost}))
    >>> Policy.from_dict({"scorer": {"type": "custom", "name": "doc-first",
    ...                              "params": {"boost": 5}}}).build().scorer
    KindScorer(weights={'Document': 5.0})
    >>> unregister_scorer("doc-first")
    """
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError(
            f"register_scorer: name must be a non-empty string, got {name!r}",
            field="name",
            value=name,
        )
    if not callable(factory):
        raise ConfigurationError(
            f"register_scorer: factory must be callable (returning a scorer), got {factory!r}",
            field="factory",
            value=factory,
        )
    if name in _REGISTRY and not replace:
        raise ConfigurationError(
            f"register_scorer: a custom scorer named {name!r} is already registered; "
            f"pass replace=True to replace it",
            field="name",
            value=name,
        )
    _REGISTRY[name] = factory


def unregister_scorer(name: str) -> None:
    """Remove a custom scorer; unknown names raise :class:`~cupel.ConfigurationError`."""
    if name not in _REGISTRY:
        raise ConfigurationError(
            f"unregister_scorer: no custom scorer named {name!r} is registered "
            f"({_registered_text()})",
            field="name",
            value=name,
        )
    del _REGISTRY[name]


def registered_scorers() -> tuple[str, ...]:
    """The registered custom scorer names, sorted."""
    return tuple(sorted(_REGISTRY))


def _registered_text() -> str:
    names = registered_scorers()
    if not names:
        return "none are registered; use cupel.policy.register_scorer"
    return "registered: " + ", ".join(repr(n) for n in names)


# ---------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------
PositiveFloat = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Seconds = Annotated[float, Strict(), Field(gt=0, le=MAX_DURATION_SECONDS, allow_inf_nan=False)]
"""A duration in seconds: > 0 and at most ``datetime.timedelta.max`` (about 2.7 million
years), so it always converts to a ``timedelta``."""
NonNegativeFloat = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
UnitFloat = Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]
Percent = Annotated[float, Strict(), Field(ge=0, le=100, allow_inf_nan=False)]
PositiveInt = Annotated[int, Strict(), Field(gt=0)]
Share = Annotated[float, Strict(), Field(ge=0, lt=1, allow_inf_nan=False)]
LowWater = Annotated[float, Strict(), Field(gt=0, le=1, allow_inf_nan=False)]


def _bucket_size(value: Any) -> Any:
    """A knapsack ``bucket_size``: a positive integer or ``"auto"`` (one message for both)."""
    if value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a positive integer or 'auto', got {value!r}")
    if value <= 0:
        raise ValueError(f"must be > 0, got {value!r}")
    return value


BucketSize = Annotated[PositiveInt | Literal["auto"], BeforeValidator(_bucket_size)]
NonNegativeInt = Annotated[int, Strict(), Field(ge=0)]
StrictBool = Annotated[bool, Strict()]
StrictStr = Annotated[str, Strict()]

_OWNER_PREFIX = re.compile(r"^[A-Z][A-Za-z]*: ")


def _type_shorthand(value: Any) -> Any:
    """``"recency"`` means ``{"type": "recency"}``; type names are matched ignoring case
    and ``-``/``_``. Anything else but a mapping or a spec is refused here."""
    if isinstance(value, str):
        return {"type": _normalize_name(value)}
    if isinstance(value, Mapping):
        tag = value.get("type")
        if isinstance(tag, str):
            return {**value, "type": _normalize_name(tag)}
        return value
    if isinstance(value, BaseModel):
        return value
    raise ValueError(
        f"must be a table/object with a 'type' key (or a type name string), "
        f"got {type(value).__name__} {value!r}"
    )


def _normalize_name(name: str) -> str:
    return ascii_fold(name.strip()).replace("-", "_").replace(" ", "_")


MAX_POLICY_DEPTH = 100
"""How deeply tables and arrays may nest in a policy (the policy itself is level 1).
Deeper data is refused with a :class:`PolicyError` naming the path, before it can
exhaust Python's stack."""


def _check_depth(data: Any, limit: int = MAX_POLICY_DEPTH) -> None:
    """Raise a :class:`PolicyError` at the first table or array nested deeper than
    ``limit`` in ``data`` (mappings, lists and tuples; already built specs are not
    entered). Iterative, so it cannot exhaust the stack itself."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, Mapping):
            children: Iterator[tuple[str, Any]] = (
                (_join(path, str(key)), inner) for key, inner in value.items()
            )
        elif isinstance(value, (list, tuple)):
            children = ((f"{path}[{i}]", inner) for i, inner in enumerate(value))
        else:
            continue
        if depth > limit:
            shown = path if len(path) <= 200 else f"{path[:90]}...{path[-90:]}"
            raise _fail(
                shown,
                f"nested deeper than {limit} tables/arrays (the limit for policies, "
                f"cupel.policy.MAX_POLICY_DEPTH)",
                None,
            )
        stack.extend((inner, where, depth + 1) for where, inner in children)


class _Spec(BaseModel):
    """Base of the policy's component specs: frozen, no unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        _check_depth(data)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            _raise_policy_error(exc, type(self))

    def _guard(self, path: str, build: Callable[[], Any]) -> Any:
        """Run a component constructor, re-raising its error with ``path`` in front."""
        try:
            return build()
        except PolicyError:
            raise
        except ConfigurationError as exc:
            where = path
            if exc.field is not None and exc.field in type(self).model_fields:
                where = f"{path}.{exc.field}"
            raise _fail(where, _OWNER_PREFIX.sub("", str(exc)), exc.value) from exc


# ---------------------------------------------------------------------------------------
# Scorer specs
# ---------------------------------------------------------------------------------------
class RecencySpec(_Spec):
    """:class:`~cupel.RecencyScorer`: rank by timestamp."""

    type: Literal["recency"] = "recency"

    def _build(self, path: str) -> Scorer:
        return RecencyScorer()


class PrioritySpec(_Spec):
    """:class:`~cupel.PriorityScorer`: rank by priority."""

    type: Literal["priority"] = "priority"

    def _build(self, path: str) -> Scorer:
        return PriorityScorer()


class FrequencySpec(_Spec):
    """:class:`~cupel.FrequencyScorer`: share of items sharing a tag."""

    type: Literal["frequency"] = "frequency"

    def _build(self, path: str) -> Scorer:
        return FrequencyScorer()


class ReflexiveSpec(_Spec):
    """:class:`~cupel.ReflexiveScorer`: the item's ``future_relevance_hint``."""

    type: Literal["reflexive"] = "reflexive"

    def _build(self, path: str) -> Scorer:
        return ReflexiveScorer()


class KindSpec(_Spec):
    """:class:`~cupel.KindScorer`; ``weights=None`` uses the default table."""

    type: Literal["kind"] = "kind"
    weights: dict[StrictStr, NonNegativeFloat] | None = None

    def _build(self, path: str) -> Scorer:
        return self._guard(path, lambda: KindScorer(self.weights))  # type: ignore[no-any-return]


class TagSpec(_Spec):
    """:class:`~cupel.TagScorer`."""

    type: Literal["tag"] = "tag"
    tag_weights: dict[StrictStr, NonNegativeFloat]
    case_insensitive: StrictBool = False

    def _build(self, path: str) -> Scorer:
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: TagScorer(self.tag_weights, case_insensitive=self.case_insensitive)
        )


class MetadataTrustSpec(_Spec):
    """:class:`~cupel.MetadataTrustScorer`."""

    type: Literal["metadata_trust"] = "metadata_trust"
    default_score: UnitFloat = 0.5

    def _build(self, path: str) -> Scorer:
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: MetadataTrustScorer(self.default_score)
        )


class MetadataKeySpec(_Spec):
    """:class:`~cupel.MetadataKeyScorer`: ``boost`` when ``metadata[key] == value``."""

    type: Literal["metadata_key"] = "metadata_key"
    key: StrictStr
    value: StrictStr
    boost: PositiveFloat

    def _build(self, path: str) -> Scorer:
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: MetadataKeyScorer(self.key, self.value, self.boost)
        )


class ExponentialCurveSpec(_Spec):
    """:class:`~cupel.ExponentialDecay` with a half-life in seconds."""

    type: Literal["exponential"] = "exponential"
    half_life_secs: Seconds

    def _curve(self, path: str) -> DecayCurve:
        return self._guard(  # type: ignore[no-any-return]
            path,
            lambda: ExponentialDecay(
                duration_from_seconds("ExponentialDecay", "half_life_secs", self.half_life_secs)
            ),
        )


class StepWindowSpec(_Spec):
    """One step of a :class:`StepCurveSpec`: ``score`` while the age is < ``max_age_secs``."""

    max_age_secs: Seconds
    score: UnitFloat


class StepCurveSpec(_Spec):
    """:class:`~cupel.StepDecay`: windows strictly ascending by ``max_age_secs``."""

    type: Literal["step"] = "step"
    windows: list[StepWindowSpec] = Field(min_length=1)

    def _curve(self, path: str) -> DecayCurve:
        for index in range(1, len(self.windows)):
            if self.windows[index].max_age_secs <= self.windows[index - 1].max_age_secs:
                value = self.windows[index].max_age_secs
                raise _fail(
                    f"{path}.windows[{index}].max_age_secs",
                    f"must be greater than windows[{index - 1}].max_age_secs "
                    f"({self.windows[index - 1].max_age_secs}) (windows ascend), got {value!r}",
                    value,
                )
        return self._guard(  # type: ignore[no-any-return]
            path,
            lambda: StepDecay(
                [
                    (duration_from_seconds("StepDecay", "max_age_secs", w.max_age_secs), w.score)
                    for w in self.windows
                ]
            ),
        )


class WindowCurveSpec(_Spec):
    """:class:`~cupel.WindowDecay`: 1.0 while the age is < ``max_age_secs``, then 0.0."""

    type: Literal["window"] = "window"
    max_age_secs: Seconds

    def _curve(self, path: str) -> DecayCurve:
        return self._guard(  # type: ignore[no-any-return]
            path,
            lambda: WindowDecay(
                duration_from_seconds("WindowDecay", "max_age_secs", self.max_age_secs)
            ),
        )


CurveSpec = Annotated[
    Union[ExponentialCurveSpec, StepCurveSpec, WindowCurveSpec],  # noqa: UP007
    Field(discriminator="type"),
    BeforeValidator(_type_shorthand),
]


class DecaySpec(_Spec):
    """:class:`~cupel.DecayScorer`.

    ``reference_time`` is the fixed "now" (a :class:`~cupel.FixedTimeProvider`; naive
    values are UTC). Left out (``None``), the built scorer reads the system clock
    (:class:`~cupel.SystemTimeProvider`) at every run.
    """

    type: Literal["decay"] = "decay"
    curve: CurveSpec
    null_timestamp_score: UnitFloat = 0.5
    reference_time: datetime | None = None

    @field_validator("reference_time")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None or (value.tzinfo is not None and value.utcoffset() is not None):
            return value
        return value.replace(tzinfo=timezone.utc)

    @field_serializer("reference_time", when_used="json")
    def _iso(self, value: datetime | None) -> str | None:
        return None if value is None else value.isoformat()

    def _build(self, path: str) -> Scorer:
        curve = self.curve._curve(f"{path}.curve")
        provider = (
            SystemTimeProvider()
            if self.reference_time is None
            else FixedTimeProvider(self.reference_time)
        )
        return self._guard(  # type: ignore[no-any-return]
            path,
            lambda: DecayScorer(provider, curve, null_timestamp_score=self.null_timestamp_score),
        )


class CompositeEntrySpec(_Spec):
    """One child of a :class:`CompositeSpec`: a scorer and its (relative) weight."""

    weight: PositiveFloat
    scorer: ScorerSpec


class CompositeSpec(_Spec):
    """:class:`~cupel.CompositeScorer`: the normalized weighted average of ``scorers``."""

    type: Literal["composite"] = "composite"
    scorers: list[CompositeEntrySpec] = Field(min_length=1)

    def _build(self, path: str) -> Scorer:
        entries = [
            (entry.scorer._build(f"{path}.scorers[{i}].scorer"), entry.weight)
            for i, entry in enumerate(self.scorers)
        ]
        return self._guard(path, lambda: CompositeScorer(entries))  # type: ignore[no-any-return]


class ScaledSpec(_Spec):
    """:class:`~cupel.ScaledScorer`: min-max normalization of ``inner``."""

    type: Literal["scaled"] = "scaled"
    inner: ScorerSpec

    def _build(self, path: str) -> Scorer:
        inner = self.inner._build(f"{path}.inner")
        return self._guard(path, lambda: ScaledScorer(inner))  # type: ignore[no-any-return]


class CustomScorerSpec(_Spec):
    """A scorer registered with :func:`register_scorer`, built as ``factory(**params)``."""

    type: Literal["custom"] = "custom"
    name: StrictStr
    params: dict[StrictStr, Any] = Field(default_factory=dict)

    def _build(self, path: str) -> Scorer:
        factory = _REGISTRY.get(self.name)
        if factory is None:
            raise _fail(
                f"{path}.name",
                f"unknown custom scorer {self.name!r} ({_registered_text()})",
                self.name,
            )
        try:
            scorer = factory(**self.params)
        except Exception as exc:
            raise _fail(
                f"{path}.params",
                f"custom scorer {self.name!r} could not be built from params "
                f"{self.params!r}: {type(exc).__name__}: {exc}",
                self.params,
            ) from exc
        if not callable(getattr(scorer, "score", None)):
            raise _fail(
                f"{path}.name",
                f"the factory of custom scorer {self.name!r} returned {scorer!r}, which is "
                f"not a scorer (no callable 'score' method)",
                self.name,
            )
        return scorer


ScorerSpec = Annotated[
    Union[  # noqa: UP007
        RecencySpec,
        PrioritySpec,
        KindSpec,
        TagSpec,
        FrequencySpec,
        ReflexiveSpec,
        CompositeSpec,
        ScaledSpec,
        MetadataTrustSpec,
        MetadataKeySpec,
        DecaySpec,
        CustomScorerSpec,
    ],
    Field(discriminator="type"),
    BeforeValidator(_type_shorthand),
]
"""Any scorer spec, chosen by its ``type`` key."""


# ---------------------------------------------------------------------------------------
# Slicer specs
# ---------------------------------------------------------------------------------------
def _scarcity(value: Any) -> Any:
    if isinstance(value, ScarcityBehavior):
        return value
    if isinstance(value, str):
        for member in ScarcityBehavior:
            if ascii_fold(member.value) == ascii_fold(value):
                return member
    raise ValueError(f"must be 'degrade' or 'throw', got {value!r}")


Scarcity = Annotated[ScarcityBehavior, BeforeValidator(_scarcity)]


class GreedySpec(_Spec):
    """:class:`~cupel.GreedySlice`."""

    type: Literal["greedy"] = "greedy"

    def _build(self, path: str) -> Slicer:
        return GreedySlice()


class KnapsackSpec(_Spec):
    """:class:`~cupel.KnapsackSlice`; ``max_cells=None`` keeps the default limit;
    ``bucket_size="auto"`` scales the bucket with the budget."""

    type: Literal["knapsack"] = "knapsack"
    bucket_size: BucketSize = 100
    max_cells: PositiveInt | None = None

    def _knapsack(self, path: str) -> KnapsackSlice:
        cells = DEFAULT_MAX_CELLS if self.max_cells is None else self.max_cells
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: KnapsackSlice(self.bucket_size, max_cells=cells)
        )

    def _build(self, path: str) -> Slicer:
        return self._knapsack(path)


class QuotaEntrySpec(_Spec):
    """A :class:`~cupel.QuotaEntry`: percentages of the budget for one kind."""

    kind: StrictStr
    require: Percent = 0.0
    cap: Percent = 100.0

    def _entry(self, path: str) -> QuotaEntry:
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: QuotaEntry(self.kind, self.require, self.cap)
        )


class QuotaSpec(_Spec):
    """:class:`~cupel.QuotaSlice` around ``inner`` (default greedy)."""

    type: Literal["quota"] = "quota"
    inner: SlicerSpec = Field(default_factory=lambda: GreedySpec())
    quotas: list[QuotaEntrySpec]

    def _build(self, path: str) -> Slicer:
        inner = self.inner._build(f"{path}.inner")
        quotas = [q._entry(f"{path}.quotas[{i}]") for i, q in enumerate(self.quotas)]
        return self._guard(path, lambda: QuotaSlice(inner, quotas))  # type: ignore[no-any-return]


class CountQuotaEntrySpec(_Spec):
    """A :class:`~cupel.CountQuotaEntry`: item counts for one kind (``cap_count=None``:
    no cap)."""

    kind: StrictStr
    require_count: NonNegativeInt = 0
    cap_count: NonNegativeInt | None = None

    def _entry(self, path: str) -> CountQuotaEntry:
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: CountQuotaEntry(self.kind, self.require_count, self.cap_count)
        )


class CountQuotaSpec(_Spec):
    """:class:`~cupel.CountQuotaSlice` around ``inner`` (default greedy)."""

    type: Literal["count_quota"] = "count_quota"
    inner: SlicerSpec = Field(default_factory=lambda: GreedySpec())
    entries: list[CountQuotaEntrySpec]
    scarcity: Scarcity = ScarcityBehavior.DEGRADE

    @field_serializer("scarcity")
    def _scarcity_name(self, value: ScarcityBehavior) -> str:
        return ascii_fold(value.value)

    def _build(self, path: str) -> Slicer:
        inner = self.inner._build(f"{path}.inner")
        entries = [e._entry(f"{path}.entries[{i}]") for i, e in enumerate(self.entries)]
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: CountQuotaSlice(inner, entries, self.scarcity)
        )


class CountConstrainedKnapsackSpec(_Spec):
    """:class:`~cupel.CountConstrainedKnapsackSlice` (its knapsack uses ``bucket_size``)."""

    type: Literal["count_constrained_knapsack"] = "count_constrained_knapsack"
    bucket_size: PositiveInt = 100
    max_cells: PositiveInt | None = None
    entries: list[CountQuotaEntrySpec]
    scarcity: Scarcity = ScarcityBehavior.DEGRADE

    @field_serializer("scarcity")
    def _scarcity_name(self, value: ScarcityBehavior) -> str:
        return ascii_fold(value.value)

    def _build(self, path: str) -> Slicer:
        cells = DEFAULT_MAX_CELLS if self.max_cells is None else self.max_cells
        knapsack = self._guard(path, lambda: KnapsackSlice(self.bucket_size, max_cells=cells))
        entries = [e._entry(f"{path}.entries[{i}]") for i, e in enumerate(self.entries)]
        return self._guard(  # type: ignore[no-any-return]
            path, lambda: CountConstrainedKnapsackSlice(entries, knapsack, self.scarcity)
        )


class RecencyWindowSpec(_Spec):
    """:class:`~cupel.RecencyWindowSlice` (a cupel extension): the newest items that fit,
    without holes; items sharing ``metadata[block_key]`` (chat turns) are kept whole, up to
    ``scored_share`` of the target may go to the best-scored older items, and with
    ``low_water`` an overflowing window is refilled only to that share (cache-stable)."""

    type: Literal["recency_window"] = "recency_window"
    block_key: StrictStr | None = DEFAULT_BLOCK_KEY
    scored_share: Share = 0.0
    low_water: LowWater | None = None

    def _build(self, path: str) -> Slicer:
        return self._guard(  # type: ignore[no-any-return]
            path,
            lambda: RecencyWindowSlice(
                self.block_key, scored_share=self.scored_share, low_water=self.low_water
            ),
        )


SlicerSpec = Annotated[
    Union[  # noqa: UP007
        GreedySpec,
        KnapsackSpec,
        QuotaSpec,
        CountQuotaSpec,
        CountConstrainedKnapsackSpec,
        RecencyWindowSpec,
    ],
    Field(discriminator="type"),
    BeforeValidator(_type_shorthand),
]
"""Any slicer spec, chosen by its ``type`` key."""

for _model in (CompositeEntrySpec, CompositeSpec, ScaledSpec, QuotaSpec, CountQuotaSpec):
    _model.model_rebuild()


# ---------------------------------------------------------------------------------------
# The policy
# ---------------------------------------------------------------------------------------
_PLACERS = ("chronological", "u_shaped")


def _placer(value: Any) -> Any:
    if isinstance(value, str):
        name = _normalize_name(value)
        if name == "ushaped":
            name = "u_shaped"
        if name in _PLACERS:
            return name
    raise ValueError(f"must be 'chronological' or 'u_shaped' (or 'u-shaped'), got {value!r}")


def _overflow(value: Any) -> Any:
    if isinstance(value, OverflowStrategy):
        return value
    if isinstance(value, str):
        for member in OverflowStrategy:
            if ascii_fold(member.value) == ascii_fold(value.strip()):
                return member
    raise ValueError(f"must be 'throw', 'truncate' or 'proceed', got {value!r}")


class Policy(_Spec):
    """A declarative pipeline configuration; :meth:`build` turns it into a
    :class:`~cupel.Pipeline`.

    Fields: ``scorer`` (required; any :data:`ScorerSpec`), ``slicer`` (default greedy),
    ``placer`` (``"chronological"`` or ``"u_shaped"``; ``"u-shaped"`` is accepted),
    ``deduplication`` (default true), ``overflow_strategy`` (``"throw"`` — the default —,
    ``"truncate"`` or ``"proceed"``) and optional ``name`` / ``description``. Component
    specs may be given as a type name alone (``"scorer": "recency"``). Unknown keys are
    errors. Every component is built once during validation, so constructor errors
    surface at load time as a :class:`PolicyError` naming the path.

    >>> p = Policy(scorer=RecencySpec(), placer="U-Shaped", overflow_strategy="Truncate")
    >>> p.to_dict()
    {'scorer': {'type': 'recency'}, 'slicer': {'type': 'greedy'}, 'placer': 'u_shaped', \
'deduplication': True, 'overflow_strategy': 'truncate'}
    """

    name: StrictStr | None = None
    description: StrictStr | None = None
    scorer: ScorerSpec
    slicer: SlicerSpec = Field(default_factory=lambda: GreedySpec())
    placer: Annotated[Literal["chronological", "u_shaped"], BeforeValidator(_placer)] = (
        "chronological"
    )
    deduplication: StrictBool = True
    overflow_strategy: Annotated[OverflowStrategy, BeforeValidator(_overflow)] = (
        OverflowStrategy.THROW
    )

    @field_serializer("overflow_strategy")
    def _overflow_name(self, value: OverflowStrategy) -> str:
        return ascii_fold(value.value)

    @model_validator(mode="after")
    def _build_eagerly(self) -> Policy:
        self.scorer._build("scorer")
        self.slicer._build("slicer")
        return self

    def replace(self, **changes: Any) -> Policy:
        """A validated copy with some fields replaced (``model_copy(update=...)`` would
        skip validation).

        >>> Policy(scorer="recency").replace(placer="u-shaped", scorer="priority").to_dict()
        {'scorer': {'type': 'priority'}, 'slicer': {'type': 'greedy'}, 'placer': 'u_shaped', \
'deduplication': True, 'overflow_strategy': 'throw'}
        """
        for key in changes:
            if key not in type(self).model_fields:
                raise _fail(
                    key,
                    f"unknown key; allowed keys here: {', '.join(type(self).model_fields)}",
                    changes[key],
                )
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**current, **changes})

    # -- building ---------------------------------------------------------------------
    def build_scorer(self) -> Scorer:
        """A fresh scorer as configured."""
        return self.scorer._build("scorer")

    def build_slicer(self) -> Slicer:
        """A fresh slicer as configured."""
        return self.slicer._build("slicer")

    def build_placer(self) -> Placer:
        """A fresh placer as configured."""
        return UShapedPlacer() if self.placer == "u_shaped" else ChronologicalPlacer()

    def build(self) -> Pipeline:
        """A new :class:`~cupel.Pipeline` with freshly built components."""
        from cupel._pipeline import Pipeline

        return Pipeline(
            self.build_scorer(),
            self.build_slicer(),
            self.build_placer(),
            deduplication=self.deduplication,
            overflow_strategy=self.overflow_strategy,
        )

    # -- serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible form: every field, ``None`` values left out."""
        data: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        return data

    def to_json(self, *, indent: int | None = 2) -> str:
        """The policy as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_toml(self) -> str:
        """The policy as TOML text. Custom scorer ``params`` must be TOML-expressible (no
        ``None``, which TOML cannot write); otherwise a :class:`PolicyError` names the
        offending value's path (``scorer.params['boost']``)."""
        data = self.model_dump(mode="python", exclude_none=True)
        _check_toml(data, "", free=False)
        return _toml_document(data)

    def save(self, path: str | Path) -> None:
        """Write the policy to ``path`` as ``.json`` or ``.toml`` (chosen by the suffix)."""
        target = Path(path)
        suffix = _suffix(target)
        text = self.to_json() + "\n" if suffix == ".json" else self.to_toml()
        target.write_text(text, encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Validate a policy from its dict form; errors name the path."""
        if not isinstance(data, Mapping):
            raise _fail("", f"expected a table/object, got {type(data).__name__} {data!r}", data)
        for key in data:
            if not isinstance(key, str):
                raise _fail("", f"keys must be strings, got {key!r}", key)
        return cls(**data)

    @classmethod
    def from_json(cls, text: str | bytes) -> Policy:
        """Parse a policy from JSON text."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail("", f"invalid JSON: {exc}", text) from None
        except RecursionError:
            raise _fail("", _TOO_DEEP_TO_PARSE, None) from None
        return cls.from_dict(data)

    @classmethod
    def from_toml(cls, text: str) -> Policy:
        """Parse a policy from TOML text."""
        import tomli

        try:
            data = tomli.loads(text)
        except tomli.TOMLDecodeError as exc:
            raise _fail("", f"invalid TOML: {exc}", text) from None
        except RecursionError:
            raise _fail("", _TOO_DEEP_TO_PARSE, None) from None
        return cls.from_dict(data)

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a ``.json`` or ``.toml`` policy file."""
        source = Path(path)
        suffix = _suffix(source)
        text = source.read_text(encoding="utf-8")
        return cls.from_json(text) if suffix == ".json" else cls.from_toml(text)


_TOO_DEEP_TO_PARSE = (
    f"nested too deeply to parse (policies may nest at most {MAX_POLICY_DEPTH} tables/arrays)"
)


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise _fail(
            "",
            f"policy file {str(path)!r}: the suffix must be .json or .toml, got {path.suffix!r}",
            str(path),
        )
    return suffix


# ---------------------------------------------------------------------------------------
# Validation errors → PolicyError with a path
# ---------------------------------------------------------------------------------------
def _unwrap(annotation: Any) -> Any:
    """Strip ``Annotated`` and ``Optional`` from an annotation."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
            continue
        if origin is Union or origin is types.UnionType:
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) == 1:
                annotation = members[0]
                continue
        return annotation


def _tags(annotation: Any) -> dict[str, type[_Spec]] | None:
    """The ``type`` tag → spec class map of a discriminated union annotation, else None."""
    origin = get_origin(annotation)
    if origin is not Union and origin is not types.UnionType:
        return None
    tags: dict[str, type[_Spec]] = {}
    for member in get_args(annotation):
        if isinstance(member, type) and issubclass(member, _Spec) and "type" in member.model_fields:
            tags[str(member.model_fields["type"].default)] = member
    return tags or None


def _walk(root: type[_Spec], loc: Sequence[int | str]) -> tuple[str, Any]:
    """Turn pydantic's ``loc`` into ``a.b[2].c`` (union tags dropped); also return the
    annotation found at the end (a spec class, a union, ...)."""
    path = ""
    current: Any = root
    for element in loc:
        tags = _tags(current)
        if tags is not None and isinstance(element, str) and element in tags:
            current = tags[element]
            continue
        origin = get_origin(current)
        if (
            isinstance(current, type)
            and issubclass(current, BaseModel)
            and isinstance(element, str)
        ):
            field = current.model_fields.get(element)
            path = f"{path}.{element}" if path else element
            current = _unwrap(field.annotation) if field is not None else None
        elif origin is list and isinstance(element, int):
            path += f"[{element}]"
            current = _unwrap(get_args(current)[0])
        elif origin is dict:
            if element == "[key]":
                continue
            path += f"[{element!r}]"
            current = _unwrap(get_args(current)[1])
        elif isinstance(element, int):
            path += f"[{element}]"
            current = None
        elif element != "[key]":
            path = f"{path}.{element}" if path else element
            current = None
    return path, current


_RULES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "finite_number": "must be a finite number",
}


def _describe(err: Mapping[str, Any], root: type[_Spec]) -> list[tuple[str, str, Any]]:
    """``(path, message, value)`` problems for one pydantic error."""
    loc = tuple(err.get("loc", ()))
    path, at = _walk(root, loc)
    kind = err.get("type", "")
    ctx = err.get("ctx") or {}
    value = err.get("input")
    if kind == "value_error":
        original = ctx.get("error")
        if isinstance(original, PolicyError):  # from a nested spec: its paths are relative
            return [(_join(path, inner), rule, v) for inner, rule, v in original.problems]
        text = _OWNER_PREFIX.sub("", str(original)) if original is not None else err["msg"]
        return [(path, text, value)]
    if kind in _RULES:
        limits = {k: _number_text(v) for k, v in ctx.items()}
        return [(path, f"{_RULES[kind].format(**limits)}, got {value!r}", value)]
    if kind == "missing":
        return [(path, "is required", None)]
    if kind == "extra_forbidden":
        _, owner = _walk(root, loc[:-1])
        allowed = (
            ", ".join(owner.model_fields)
            if isinstance(owner, type) and issubclass(owner, BaseModel)
            else "see the policy schema"
        )
        return [(path, f"unknown key; allowed keys here: {allowed}", value)]
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = _tags(at)
        allowed = ", ".join(repr(t) for t in tags) if tags else str(ctx.get("expected_tags"))
        if kind == "union_tag_not_found":
            return [(path, f"missing the 'type' key; allowed types: {allowed}", value)]
        tag = ctx.get("tag")
        return [(_join(path, "type"), f"unknown type {tag!r}; allowed types: {allowed}", tag)]
    if kind == "too_short":
        minimum = ctx.get("min_length", 1)
        entries = "entry" if minimum == 1 else "entries"
        return [(path, f"must hold at least {minimum} {entries}, got {value!r}", value)]
    message = str(err.get("msg", "invalid"))
    if message.startswith("Input should be "):
        message = "must be " + message[len("Input should be ") :]
    return [(path, f"{message}, got {value!r}", value)]


def _number_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _raise_policy_error(exc: ValidationError, root: type[_Spec]) -> NoReturn:
    problems: list[tuple[str, str, Any]] = []
    for err in exc.errors(include_url=False):
        problems.extend(_describe(err, root))
    raise PolicyError.of(problems) from None


# ---------------------------------------------------------------------------------------
# A small TOML writer for the policy schema
# ---------------------------------------------------------------------------------------
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


_FREE_TABLES = ("params",)
"""Keys whose tables hold user data, whose keys are shown as ``['key']`` in paths."""


def _check_toml(value: Any, path: str, *, free: bool) -> None:
    """Raise a :class:`PolicyError` at the first value TOML cannot express."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            step = f"[{key!r}]" if free else f".{key}" if path else str(key)
            _check_toml(inner, path + step, free=free or key in _FREE_TABLES)
    elif isinstance(value, (list, tuple)):
        for index, inner in enumerate(value):
            _check_toml(inner, f"{path}[{index}]", free=free)
    elif not isinstance(value, (bool, Enum, int, float, str, datetime, date, time)):
        raise _fail(
            path,
            f"{type(value).__name__} {value!r} cannot be written as TOML"
            + (" (TOML has no null; leave the key out)" if value is None else ""),
            value,
        )


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return _toml_string(ascii_fold(str(value.value)))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_toml_key(str(k))} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise _fail("", f"{type(value).__name__} {value!r} cannot be written as TOML", value)


def _is_table(value: Any) -> bool:
    return isinstance(value, Mapping)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(map(_is_table, value))


def _flat(value: Mapping[str, Any]) -> bool:
    """A table without nested tables (written inline when it is short)."""
    return not any(_is_table(v) or _is_table_array(v) for v in value.values())


def _toml_tables(prefix: str, table: Mapping[str, Any], top: bool) -> Iterator[str]:
    """Lines for the body of ``table`` at dotted ``prefix``, then its sub-tables."""
    nested: list[tuple[str, Any]] = []
    for key, value in table.items():
        inline = (
            not top
            and _is_table(value)
            and _flat(value)
            and len(_toml_value(value)) <= 60
            and key not in ("weights", "tag_weights", "params")
        )
        if (_is_table(value) and not inline) or _is_table_array(value):
            nested.append((key, value))
        else:
            yield f"{_toml_key(key)} = {_toml_value(value)}"
    for key, value in nested:
        name = f"{prefix}.{_toml_key(key)}" if prefix else _toml_key(key)
        if _is_table(value):
            yield ""
            yield f"[{name}]"
            yield from _toml_tables(name, value, False)
        else:
            for element in value:
                yield ""
                yield f"[[{name}]]"
                yield from _toml_tables(name, element, False)


def _toml_document(data: Mapping[str, Any]) -> str:
    return "\n".join(_toml_tables("", data, True)).lstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------
# Running policies and comparing them
# ---------------------------------------------------------------------------------------
def _as_pipeline(policy: Any, what: str) -> Pipeline:
    from cupel._pipeline import Pipeline

    if isinstance(policy, Pipeline):
        return policy
    if isinstance(policy, Policy):
        return policy.build()
    if isinstance(policy, str):
        from cupel.presets import preset

        return preset(policy).build()
    raise ConfigurationError(
        f"{what} must be a Policy, a Pipeline or a preset name, "
        f"got {type(policy).__name__} {policy!r}",
        field=what,
        value=policy,
    )


def _pipeline_from_policy(policy: Policy | str) -> Pipeline:
    """``Pipeline.from_policy``: a Policy or a preset name."""
    if isinstance(policy, (Policy, str)):
        return _as_pipeline(policy, "policy")
    raise ConfigurationError(
        f"Pipeline.from_policy: policy must be a Policy or a preset name, "
        f"got {type(policy).__name__} {policy!r}",
        field="policy",
        value=policy,
    )


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
    >>> items = [ContextItem(content="a", tokens=40, priority=1),
    ...          ContextItem(content="b", tokens=40, priority=9)]
    >>> result = dry_run_with_policy(items, ContextBudget(max_tokens=50, target_tokens=40),
    ...                              Policy(scorer=PrioritySpec()))
    >>> [e.item.content for e in result.report.included]
    ['b']
    """
    return _pipeline_from_policy(policy).dry_run(items, budget, detail_level=detail_level)


class ItemStatus(str, Enum):
    """Whether a variant included an item (by content)."""

    INCLUDED = "Included"
    EXCLUDED = "Excluded"


@dataclass(frozen=True, slots=True)
class PolicySensitivityDiffEntry:
    """An item (identified by ``content``) that at least two variants disagree on;
    ``statuses`` has one ``(label, status)`` pair per variant, in variant order."""

    content: str
    statuses: tuple[tuple[str, ItemStatus], ...]

    def status(self, label: str) -> ItemStatus:
        """The status under the variant labelled ``label``."""
        for name, status in self.statuses:
            if name == label:
                return status
        raise KeyError(label)

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
        for name, report in self.variants:
            if name == label:
                return report
        raise KeyError(label)

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
    seen: set[str] = set()
    for index, variant in enumerate(variants):
        if not isinstance(variant, tuple) or len(variant) != 2:
            raise ConfigurationError(
                f"policy_sensitivity: variants[{index}] must be a (label, policy) pair, "
                f"got {variant!r}",
                field=f"variants[{index}]",
                value=variant,
            )
        label, policy = variant
        if not isinstance(label, str):
            raise ConfigurationError(
                f"policy_sensitivity: variants[{index}] label must be a string, got {label!r}",
                field=f"variants[{index}]",
                value=label,
            )
        if label in seen:
            raise ConfigurationError(
                f"policy_sensitivity: variants[{index}] repeats the label {label!r}; "
                f"labels must be distinct",
                field=f"variants[{index}]",
                value=label,
            )
        seen.add(label)
        pipelines.append((label, _as_pipeline(policy, f"variants[{index}] policy")))

    reports: list[tuple[str, SelectionReport]] = []
    included: list[set[str]] = []
    for label, pipeline in pipelines:
        report = require_report(pipeline.dry_run(items, budget).report)
        reports.append((label, report))
        included.append({entry.item.content for entry in report.included})

    diffs: list[PolicySensitivityDiffEntry] = []
    for content in dict.fromkeys(item.content for item in items):
        flags = [content in chosen for chosen in included]
        if any(flags) and not all(flags):
            diffs.append(
                PolicySensitivityDiffEntry(
                    content,
                    tuple(
                        (label, ItemStatus.INCLUDED if flag else ItemStatus.EXCLUDED)
                        for (label, _), flag in zip(reports, flags, strict=True)
                    ),
                )
            )
    return PolicySensitivityReport(tuple(reports), tuple(diffs))


set_policy_resolver(_pipeline_from_policy)
