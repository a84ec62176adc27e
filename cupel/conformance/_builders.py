"""Build cupel objects (items, budgets, scorers, slicers, placers) from parsed vector tables.

A vector's ``[config]`` is translated into the table a policy would hold for the same
component (the format chapter spells a few things its own way: ``[[weights]] kind,
weight`` arrays, composite children that carry their ``weight`` inline, a scaled
scorer's ``inner_scorer`` with its keys beside it, an inner slicer named by
``inner_slicer`` with its keys in the same table, ``scarcity_behavior``, ``blocks``), and
then built through the component's policy table (:mod:`cupel.policy`), which is derived
from its constructor: every constructor parameter is a vector key, under its policy
name. Values are validated by cupel itself (``expect_construction_error`` vectors rely on
that: a bad value is a :class:`~cupel.ConfigurationError`). A table that is malformed or
names a type the runner does not know raises :class:`~cupel.VectorError`, which the
runner reports as a failure, never a skip.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time, timezone
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from cupel._errors import VectorError
from cupel._model import ContextBudget, ContextItem, ScoredItem, ascii_fold
from cupel.conformance._keys import BUDGET_KEYS, ITEM_KEYS, SLICER_SPELLING
from cupel.placers import Placer
from cupel.policy._derive import ComponentSpec, spec_of
from cupel.policy._specs import CURVES, PLACERS, SCORERS, SLICERS, type_name
from cupel.scorers import Scorer
from cupel.slicers import ScarcityBehavior, Slicer

__all__ = [
    "ITEM_KEYS",
    "build_budget",
    "build_item",
    "build_placer",
    "build_scored_item",
    "build_scorer",
    "build_slicer",
    "number",
    "scorer_entries",
]

Table = Mapping[str, Any]

_SCORER_SPECS = {type_name(cls): spec_of(cls) for cls in SCORERS}
_SLICER_SPECS = {type_name(cls): spec_of(cls) for cls in SLICERS}
_CURVE_SPECS = {type_name(cls): spec_of(cls) for cls in CURVES}
_PLACER_TYPES = {type_name(cls): cls for cls in PLACERS}
_NESTED_SLICERS = ("quota", "count_quota")
"""Slicers whose inner slicer is named by ``inner_slicer`` (and cannot be one of them)."""


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


def number(value: Any, where: str) -> float:
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


def _fields(spec: type[BaseModel], table: Table, where: str) -> dict[str, Any]:
    """The keys of ``table`` that are fields of ``spec`` (the component's constructor
    parameters, as a policy names them; other keys are the key checker's business). A
    missing list is empty (the constructor decides whether that is allowed); another
    missing required key is a malformed vector. Entry tables (quotas, count entries,
    step windows) are read the same way."""
    found: dict[str, Any] = {}
    for key, field in spec.model_fields.items():
        if key == "type":
            continue
        entry = _entry_spec(field.annotation)
        if key in table:
            value = table[key]
            if entry is not None:
                here = f"{where}.{key}"
                value = [
                    _fields(entry, t, f"{here}[{i}]") for i, t in enumerate(_tables(value, here))
                ]
            found[key] = value
        elif entry is not None or get_origin(_bare(field.annotation)) is list:
            found[key] = []
        elif field.is_required():
            raise VectorError(f"{where} has no '{key}'")
    return found


def _bare(annotation: Any) -> Any:
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def _entry_spec(annotation: Any) -> type[BaseModel] | None:
    """``X`` for a ``list[X]`` field whose elements are plain tables (not a union)."""
    bare = _bare(annotation)
    if get_origin(bare) is list:
        (element,) = get_args(bare)
        if isinstance(element, type) and issubclass(element, BaseModel):
            return element
    return None


def _built(spec: type[ComponentSpec], data: dict[str, Any], where: str) -> Any:
    return spec(**data)._build(where)


# -- items and budgets ----------------------------------------------------------------------
def build_item(table: Table, *, where: str = "item") -> ContextItem:
    """A :class:`ContextItem` from a vector item table (unknown keys are ignored)."""
    data = {k: _utc(v) for k, v in _table(table, where).items() if k in ITEM_KEYS}
    return ContextItem.from_dict(data)


def build_scored_item(table: Table, *, where: str = "scored_item") -> ScoredItem:
    """A :class:`ScoredItem` from a table holding item keys plus ``score``."""
    score = number(_require(table, "score", where), f"{where}.score")
    if math.isnan(score):  # a vector would pass on it untested: stages rank NaN as 0 or last
        raise VectorError(f"{where}.score must be a number, not NaN")
    return ScoredItem(build_item(table, where=where), score)


def build_budget(table: Table, *, max_defaults_to_target: bool = False) -> ContextBudget:
    """A :class:`ContextBudget` from a ``[budget]`` table.

    Slicing vectors may omit ``max_tokens`` (``max_defaults_to_target=True``).
    """
    data = {k: v for k, v in table.items() if k in BUDGET_KEYS}
    if max_defaults_to_target and "max_tokens" not in data and "target_tokens" in data:
        data["max_tokens"] = data["target_tokens"]
    return ContextBudget.from_dict(data)


# -- scorers -------------------------------------------------------------------------------
def _weight_map(value: Any, key_name: str, where: str) -> dict[str, float]:
    """``[[x]] <key_name>, weight`` entries, or an inline ``{ name = weight }`` table."""
    if isinstance(value, Mapping):
        return {str(k): number(v, f"{where}.{k}") for k, v in value.items()}
    out: dict[str, float] = {}
    for i, entry in enumerate(_tables(value, where)):
        here = f"{where}[{i}]"
        name = _require(entry, key_name, here)
        out[str(name)] = number(_require(entry, "weight", here), f"{here}.weight")
    return out


def _curve_table(table: Table, where: str) -> dict[str, Any]:
    kind = _name(_require(table, "type", where), f"{where}.type")
    spec = _CURVE_SPECS.get(kind)
    if spec is None:
        raise VectorError(f"{where}.type: unknown decay curve {table['type']!r}")
    data = _fields(spec, table, where)
    for key in ("half_life_secs", "max_age_secs"):
        if key in data:
            number(data[key], f"{where}.{key}")
    for i, window in enumerate(data.get("windows", [])):
        number(window["max_age_secs"], f"{where}.windows[{i}].max_age_secs")
        number(window["score"], f"{where}.windows[{i}].score")
    return {"type": kind, **data}


def _scorer_table(table: Any, reference_time: datetime | None, where: str) -> dict[str, Any]:
    """The policy table of a vector's scorer table."""
    table = _table(table, where)
    kind = _name(_require(table, "type", where), f"{where}.type")
    spec = _SCORER_SPECS.get(kind)
    if spec is None:
        raise VectorError(f"{where}.type: unknown scorer type {table['type']!r}")
    if "reference_time" in table:
        reference_time = table["reference_time"]
    data: dict[str, Any] = dict(table)
    if kind == "kind" and "weights" in table:
        data["weights"] = _weight_map(table["weights"], "kind", f"{where}.weights")
    elif kind == "tag":
        data["tag_weights"] = _weight_map(table.get("tag_weights"), "tag", f"{where}.tag_weights")
    elif kind == "composite":
        key = "children" if "children" in table else "scorers"
        data["scorers"] = [
            {
                "weight": number(_require(child, "weight", here), f"{here}.weight"),
                "scorer": _scorer_table(child, reference_time, here),
            }
            for i, child in enumerate(_tables(table.get(key), f"{where}.{key}"))
            for here in [f"{where}.{key}[{i}]"]
        ]
    elif kind == "scaled":
        data["inner"] = _scaled_inner(table, reference_time, where)
    elif kind == "decay":
        if not isinstance(reference_time, datetime):
            raise VectorError(f"{where}: a decay scorer needs a datetime 'reference_time'")
        data["reference_time"] = _utc(reference_time)
        data["curve"] = _curve_table(
            _table(_require(table, "curve", where), f"{where}.curve"), f"{where}.curve"
        )
    return {"type": kind, **_fields(spec, data, where)}


def _scaled_inner(table: Table, reference_time: datetime | None, where: str) -> dict[str, Any]:
    if "inner" in table:
        return _scorer_table(table["inner"], reference_time, f"{where}.inner")
    if "inner_scorer" in table:
        # The inner scorer's own keys (weights, tag_weights, curve, ...) sit beside
        # inner_scorer in the same table.
        siblings = {k: v for k, v in table.items() if k not in ("type", "inner_scorer")}
        return _scorer_table(
            {**siblings, "type": table["inner_scorer"]}, reference_time, f"{where}.inner_scorer"
        )
    raise VectorError(f"{where}: a scaled scorer needs 'inner_scorer' or [inner]")


def build_scorer(
    table: Table, *, reference_time: datetime | None = None, where: str = "config"
) -> Scorer:
    """A scorer from a table holding ``type`` and that type's keys.

    ``reference_time`` is inherited by decay scorers whose table has none (pipeline
    vectors may put it in ``[config]``).
    """
    data = _scorer_table(table, reference_time, where)
    scorer: Scorer = _built(_SCORER_SPECS[data.pop("type")], data, where)
    return scorer


# -- slicers and placers -------------------------------------------------------------------
def _slicer_table(name: Any, config: Table, where: str) -> dict[str, Any]:
    """The policy table of slicer ``name``, whose keys sit in ``config``."""
    kind = _name(name, "slicer")
    spec = _SLICER_SPECS.get(kind)
    if spec is None:
        raise VectorError(f"unknown slicer type {name!r}")
    data: dict[str, Any] = {k: v for k, v in config.items() if k not in SLICER_SPELLING}
    if kind in _NESTED_SLICERS:
        inner_name = config.get("inner_slicer", "greedy")
        if _name(inner_name, f"{where}.inner_slicer") in _NESTED_SLICERS:
            raise VectorError(f"{where}.inner_slicer: {inner_name!r} cannot be an inner slicer")
        data["inner"] = _slicer_table(inner_name, config, where)
    if "scarcity_behavior" in config:
        raw = config["scarcity_behavior"]
        scarcity = ScarcityBehavior.lookup(_name(raw, f"{where}.scarcity_behavior"))
        if scarcity is None:
            raise VectorError(f"{where}.scarcity_behavior: unknown value {raw!r}")
        data["scarcity"] = scarcity
    if kind == "recency_window":
        data.update(_window_keys(config, where))
    return {"type": kind, **_fields(spec, data, where)}


def _window_keys(config: Table, where: str) -> dict[str, Any]:
    """The extension slicer: ``blocks = false`` turns blocks off, ``block_key`` names the
    metadata key (default ``cupel:turn``)."""
    blocks = config.get("blocks", True)
    if not isinstance(blocks, bool):
        raise VectorError(f"{where}.blocks must be true or false, got {blocks!r}")
    return {"block_key": config.get("block_key", "cupel:turn") if blocks else None}


def build_slicer(name: Any, config: Table, *, where: str = "config") -> Slicer:
    """A slicer of type ``name`` with its keys read from ``config``."""
    data = _slicer_table(name, config, where)
    slicer: Slicer = _built(_SLICER_SPECS[data.pop("type")], data, where)
    return slicer


def build_placer(name: Any) -> Placer:
    """``chronological`` or ``u-shaped`` (``u_shaped`` accepted)."""
    kind = _name(name, "placer")
    placer = _PLACER_TYPES.get("u_shaped" if kind == "ushaped" else kind)
    if placer is None:
        raise VectorError(f"unknown placer type {name!r}")
    built: Placer = placer()
    return built


def scorer_entries(entries: Sequence[Table], *, reference_time: datetime | None) -> Scorer:
    """Pipeline ``[[config.scorers]]``: one entry → that scorer, several → a composite."""
    if not entries:
        raise VectorError("pipeline vector has no [[config.scorers]]")
    if len(entries) == 1:
        return build_scorer(entries[0], reference_time=reference_time, where="config.scorers[0]")
    return build_scorer(
        {"type": "composite", "scorers": list(entries)}, reference_time=reference_time
    )
