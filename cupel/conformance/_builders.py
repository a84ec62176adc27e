"""Build cupel objects (items, budgets, scorers, slicers, placers) from parsed vector tables.

Builders pass values through untouched so that cupel's own constructors do the validating
(``expect_construction_error`` vectors rely on that). A table that is malformed or names a
type the runner does not know raises :class:`VectorError`, which the runner reports as a
failure, never a skip.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timedelta, timezone
from typing import Any

from cupel._errors import VectorError
from cupel._model import ContextBudget, ContextItem, ScoredItem, ascii_fold
from cupel.placers import ChronologicalPlacer, Placer, UShapedPlacer
from cupel.scorers import (
    CompositeScorer,
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
    TagScorer,
    WindowDecay,
)
from cupel.scorers.decay import duration_from_seconds
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

__all__ = [
    "ITEM_KEYS",
    "VectorError",
    "build_budget",
    "build_item",
    "build_placer",
    "build_scored_item",
    "build_scorer",
    "build_slicer",
    "scorer_entries",
]

Table = Mapping[str, Any]

ITEM_KEYS = frozenset(
    {
        "content",
        "tokens",
        "kind",
        "source",
        "timestamp",
        "priority",
        "tags",
        "metadata",
        "pinned",
        "future_relevance_hint",
        "futureRelevanceHint",
        "original_tokens",
        "originalTokens",
    }
)
"""Vector item keys that map onto :class:`~cupel.ContextItem` fields (others are ignored)."""

_BUDGET_KEYS = (
    "max_tokens",
    "target_tokens",
    "output_reserve",
    "reserved_slots",
    "estimation_safety_margin_percent",
)


# -- small helpers ------------------------------------------------------------------------
def _table(value: Any, where: str) -> Table:
    if not isinstance(value, Mapping):
        raise VectorError(f"{where} must be a table, got {type(value).__name__}")
    return value


def _tables(value: Any, where: str) -> list[Table]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise VectorError(f"{where} must be an array of tables, got {type(value).__name__}")
    return [_table(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _require(table: Table, key: str, where: str) -> Any:
    if key not in table:
        raise VectorError(f"{where} has no '{key}'")
    return table[key]


def _number(value: Any, where: str) -> float:
    """Integers and floats as float (TOML ``1`` and ``1.0`` mean the same weight)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise VectorError(f"{where} must be a number, got {value!r}")
    return float(value)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise VectorError(f"{where} must be a string, got {value!r}")
    return ascii_fold(value).replace("-", "_")


def _utc(value: Any) -> Any:
    """TOML dates become UTC midnight; TOML datetimes stay datetimes (naive means UTC)."""
    if isinstance(value, date) and not isinstance(value, datetime):
        return datetime.combine(value, time(0), tzinfo=timezone.utc)
    return value


def _seconds(value: Any, where: str, owner: str, field: str) -> timedelta:
    """A curve duration: checked by cupel's own rule (finite, > 0, within ``timedelta``),
    so an out-of-range value is a construction error like any other."""
    return duration_from_seconds(owner, field, _number(value, where))


# -- items and budgets ----------------------------------------------------------------------
def build_item(table: Table, *, where: str = "item") -> ContextItem:
    """A :class:`ContextItem` from a vector item table (unknown keys are ignored)."""
    data = {k: _utc(v) for k, v in _table(table, where).items() if k in ITEM_KEYS}
    return ContextItem.from_dict(data)


def build_scored_item(table: Table, *, where: str = "scored_item") -> ScoredItem:
    """A :class:`ScoredItem` from a table holding item keys plus ``score``."""
    score = _number(_require(table, "score", where), f"{where}.score")
    return ScoredItem(build_item(table, where=where), score)


def build_budget(table: Table, *, max_defaults_to_target: bool = False) -> ContextBudget:
    """A :class:`ContextBudget` from a ``[budget]`` table.

    Slicing vectors may omit ``max_tokens`` (``max_defaults_to_target=True``).
    """
    data = {k: table[k] for k in _BUDGET_KEYS if k in table}
    if max_defaults_to_target and "max_tokens" not in data and "target_tokens" in data:
        data["max_tokens"] = data["target_tokens"]
    return ContextBudget.from_dict(data)


# -- scorers -------------------------------------------------------------------------------
def _weight_map(value: Any, key_name: str, where: str) -> dict[str, float]:
    """``[[x]] <key_name>, weight`` entries, or an inline ``{ name = weight }`` table."""
    if isinstance(value, Mapping):
        return {str(k): _number(v, f"{where}.{k}") for k, v in value.items()}
    out: dict[str, float] = {}
    for i, entry in enumerate(_tables(value, where)):
        here = f"{where}[{i}]"
        name = _require(entry, key_name, here)
        out[str(name)] = _number(_require(entry, "weight", here), f"{here}.weight")
    return out


def _curve(table: Table, where: str) -> ExponentialDecay | WindowDecay | StepDecay:
    kind = _name(_require(table, "type", where), f"{where}.type")
    if kind == "exponential":
        return ExponentialDecay(
            _seconds(
                _require(table, "half_life_secs", where),
                f"{where}.half_life_secs",
                "ExponentialDecay",
                "half_life",
            )
        )
    if kind == "window":
        return WindowDecay(
            _seconds(
                _require(table, "max_age_secs", where),
                f"{where}.max_age_secs",
                "WindowDecay",
                "max_age",
            )
        )
    if kind == "step":
        windows = []
        for i, w in enumerate(_tables(table.get("windows"), f"{where}.windows")):
            here = f"{where}.windows[{i}]"
            windows.append(
                (
                    _seconds(
                        _require(w, "max_age_secs", here),
                        f"{here}.max_age_secs",
                        "StepDecay",
                        f"windows[{i}] max_age",
                    ),
                    _number(_require(w, "score", here), f"{here}.score"),
                )
            )
        return StepDecay(windows)
    raise VectorError(f"{where}.type: unknown decay curve {table['type']!r}")


def build_scorer(
    table: Table, *, reference_time: datetime | None = None, where: str = "config"
) -> Scorer:
    """A scorer from a table holding ``type`` and that type's keys.

    ``reference_time`` is inherited by decay scorers whose table has none (pipeline
    vectors may put it in ``[config]``).
    """
    table = _table(table, where)
    kind = _name(_require(table, "type", where), f"{where}.type")
    if "reference_time" in table:
        reference_time = table["reference_time"]
    if kind == "recency":
        return RecencyScorer()
    if kind == "priority":
        return PriorityScorer()
    if kind == "frequency":
        return FrequencyScorer()
    if kind == "reflexive":
        return ReflexiveScorer()
    if kind == "kind":
        if "weights" in table:
            return KindScorer(_weight_map(table["weights"], "kind", f"{where}.weights"))
        return KindScorer(None)
    if kind == "tag":
        weights = _weight_map(table.get("tag_weights"), "tag", f"{where}.tag_weights")
        return TagScorer(weights, case_insensitive=bool(table.get("case_insensitive", False)))
    if kind == "composite":
        key = "children" if "children" in table else "scorers"
        entries: list[tuple[Scorer, float]] = []
        for i, child in enumerate(_tables(table.get(key), f"{where}.{key}")):
            here = f"{where}.{key}[{i}]"
            scorer = build_scorer(child, reference_time=reference_time, where=here)
            entries.append((scorer, _number(_require(child, "weight", here), f"{here}.weight")))
        return CompositeScorer(entries)
    if kind == "scaled":
        if "inner" in table:
            inner = build_scorer(
                table["inner"], reference_time=reference_time, where=f"{where}.inner"
            )
        elif "inner_scorer" in table:
            # The inner scorer's own keys (weights, tag_weights, curve, ...) sit beside
            # inner_scorer in the same table.
            siblings = {k: v for k, v in table.items() if k not in ("type", "inner_scorer")}
            inner = build_scorer(
                {**siblings, "type": table["inner_scorer"]},
                reference_time=reference_time,
                where=f"{where}.inner_scorer",
            )
        else:
            raise VectorError(f"{where}: a scaled scorer needs 'inner_scorer' or [inner]")
        return ScaledScorer(inner)
    if kind == "decay":
        if not isinstance(reference_time, datetime):
            raise VectorError(f"{where}: a decay scorer needs a datetime 'reference_time'")
        curve = _curve(_table(_require(table, "curve", where), f"{where}.curve"), f"{where}.curve")
        extra: dict[str, Any] = {}
        if "null_timestamp_score" in table:
            extra["null_timestamp_score"] = table["null_timestamp_score"]
        return DecayScorer(FixedTimeProvider(_utc(reference_time)), curve, **extra)
    if kind == "metadata_trust":
        if "default_score" in table:
            return MetadataTrustScorer(default_score=table["default_score"])
        return MetadataTrustScorer()
    if kind == "metadata_key":
        return MetadataKeyScorer(
            _require(table, "key", where),
            _require(table, "value", where),
            _require(table, "boost", where),
        )
    raise VectorError(f"{where}.type: unknown scorer type {table['type']!r}")


# -- slicers and placers -------------------------------------------------------------------
def _knapsack(config: Table) -> KnapsackSlice:
    if "bucket_size" in config:
        return KnapsackSlice(bucket_size=config["bucket_size"])
    return KnapsackSlice()


def _scarcity(config: Table, where: str) -> ScarcityBehavior:
    raw = config.get("scarcity_behavior", "degrade")
    folded = _name(raw, f"{where}.scarcity_behavior")
    for member in ScarcityBehavior:
        if ascii_fold(member.value) == folded:
            return member
    raise VectorError(f"{where}.scarcity_behavior: unknown value {raw!r}")


def _count_entries(config: Table, where: str) -> list[CountQuotaEntry]:
    entries = []
    for i, e in enumerate(_tables(config.get("entries"), f"{where}.entries")):
        here = f"{where}.entries[{i}]"
        entries.append(
            CountQuotaEntry(
                _require(e, "kind", here),
                require_count=e.get("require_count", 0),
                cap_count=e.get("cap_count"),
            )
        )
    return entries


def build_slicer(name: Any, config: Table, *, where: str = "config") -> Slicer:
    """A slicer of type ``name`` with its keys read from ``config``."""
    kind = _name(name, "slicer")
    if kind == "greedy":
        return GreedySlice()
    if kind == "knapsack":
        return _knapsack(config)
    if kind in ("quota", "count_quota"):
        inner_name = config.get("inner_slicer", "greedy")
        if _name(inner_name, f"{where}.inner_slicer") in ("quota", "count_quota"):
            raise VectorError(f"{where}.inner_slicer: {inner_name!r} cannot be an inner slicer")
        inner = build_slicer(inner_name, config, where=where)
        if kind == "count_quota":
            return CountQuotaSlice(
                inner, _count_entries(config, where), scarcity=_scarcity(config, where)
            )
        quotas = []
        for i, q in enumerate(_tables(config.get("quotas"), f"{where}.quotas")):
            here = f"{where}.quotas[{i}]"
            limits = {k: q[k] for k in ("require", "cap") if k in q}
            quotas.append(QuotaEntry(_require(q, "kind", here), **limits))
        return QuotaSlice(inner, quotas)
    if kind == "recency_window":
        return _recency_window(config, where)
    if kind == "count_constrained_knapsack":
        return CountConstrainedKnapsackSlice(
            _count_entries(config, where),
            knapsack=_knapsack(config) if "bucket_size" in config else None,
            scarcity=_scarcity(config, where),
        )
    raise VectorError(f"unknown slicer type {name!r}")


def _recency_window(config: Table, where: str) -> RecencyWindowSlice:
    """The extension slicer: ``blocks = false`` turns blocks off, ``block_key`` names the
    metadata key (default ``cupel:turn``), ``scored_share`` the older items' share,
    ``low_water`` the refill share of a cache-stable window."""
    blocks = config.get("blocks", True)
    if not isinstance(blocks, bool):
        raise VectorError(f"{where}.blocks must be true or false, got {blocks!r}")
    key = config.get("block_key", "cupel:turn") if blocks else None
    share = config.get("scored_share", 0.0)
    return RecencyWindowSlice(key, scored_share=share, low_water=config.get("low_water"))


def build_placer(name: Any) -> Placer:
    """``chronological`` or ``u-shaped`` (``u_shaped`` accepted)."""
    kind = _name(name, "placer")
    if kind == "chronological":
        return ChronologicalPlacer()
    if kind in ("u_shaped", "ushaped"):
        return UShapedPlacer()
    raise VectorError(f"unknown placer type {name!r}")


def scorer_entries(entries: Sequence[Table], *, reference_time: datetime | None) -> Scorer:
    """Pipeline ``[[config.scorers]]``: one entry → that scorer, several → a composite."""
    if not entries:
        raise VectorError("pipeline vector has no [[config.scorers]]")
    if len(entries) == 1:
        return build_scorer(entries[0], reference_time=reference_time, where="config.scorers[0]")
    return build_scorer(
        {"type": "composite", "scorers": list(entries)}, reference_time=reference_time
    )
