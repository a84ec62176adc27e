"""The keys a vector may hold, and what happens to the others (private).

The runner must accept vectors from newer suites, which may carry keys it does not know
(DESIGN.md: "ignore unknown keys"); but a misspelt key silently ignored turns an
assertion or an input into a no-op (``pined = true`` would leave an item unpinned and the
vector could still pass). So, in every table whose keys the runner knows:

- a key that is a *near miss* of a known key (the same name up to case, ``-`` and ``_``,
  or a close spelling such as ``pined`` for ``pinned``) makes the vector **fail**, naming
  the key it probably meant;
- any other unknown key is ignored with a **warning** (``WARN <path>: ...``), so new keys
  from a newer suite are visible without failing the run.

Tables of user data (``metadata``, ``reserved_slots``, inline weight maps) may hold any
key. The component keys are derived from the components' constructors (through their
policy tables, :mod:`cupel.policy`): a new constructor parameter is a known key at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any

from cupel._model import ascii_fold
from cupel.policy._derive import spec_of, tuple_spec
from cupel.policy._specs import CURVES, SCORERS, SLICERS
from cupel.slicers import CountQuotaEntry, QuotaEntry

__all__ = [
    "BUDGET_KEYS",
    "ITEM_KEYS",
    "MAX_VECTOR_DEPTH",
    "PAYLOAD_KEYS",
    "SLICER_SPELLING",
    "KeyProblem",
    "check_depth",
    "check_keys",
    "near_miss",
    "scorer_keys",
    "slicer_keys",
]

MAX_VECTOR_DEPTH = 100
"""How deeply tables and arrays may nest in a vector (the file itself is level 1)."""

_NEAR_MISS_RATIO = 0.8

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

BUDGET_KEYS = frozenset(
    {
        "max_tokens",
        "target_tokens",
        "output_reserve",
        "reserved_slots",
        "estimation_safety_margin_percent",
    }
)
"""Vector budget keys (the :class:`~cupel.ContextBudget` fields)."""

SLICER_SPELLING = {"inner": "inner_slicer", "scarcity": "scarcity_behavior"}
"""Slicer parameters the vector format spells its own way (the inner slicer by name,
with its keys beside it)."""


def _keys(classes: tuple[type, ...]) -> frozenset[str]:
    """Every policy key of ``classes`` (their constructor parameters as policies name them)."""
    return frozenset(key for cls in classes for key in spec_of(cls).model_fields if key != "type")


def scorer_keys(classes: tuple[type, ...] = SCORERS) -> frozenset[str]:
    """The keys a scorer table may hold: its parameters, plus the format's own."""
    return _keys(classes) | {
        "type",
        "weight",
        "use_default_weights",
        "children",
        "inner_scorer",
        "reference_time",
    }


def slicer_keys(classes: tuple[type, ...] = SLICERS) -> frozenset[str]:
    """The keys a slicer may read from ``[config]``: its parameters (some spelled the
    format's way), plus ``blocks`` (the recency window's switch)."""
    return frozenset(SLICER_SPELLING.get(key, key) for key in _keys(classes)) | {"blocks"}


_SLICER = slicer_keys()
PAYLOAD_KEYS = frozenset(
    {
        "item_tokens",
        "available_tokens",
        "deduplicated_against",
        "tokens",
        "displaced_by",
        "kind",
        "cap",
        "count",
        "actual",
        "score",
        "threshold",
        "displaced_by_kind",
        "filter_name",
        # cupel's extension reasons: OutsideWindow, InvalidToolCall
        "cut_tokens",
        "problem",
    }
)
"""The payload keys of every exclusion-reason variant (what a diagnostics entry may assert)."""

# role -> (known keys, {key: role of its value}); "*" marks free-form user data.
_ROLES: dict[str, tuple[frozenset[str], dict[str, str]]] = {
    "vector": (
        frozenset(
            {
                "test",
                "config",
                "budget",
                "items",
                "scored_items",
                "expected",
                "expected_output",
                "tolerance",
                "messages",
            }
        ),
        {
            "test": "test",
            "messages": "message",
            "budget": "budget",
            "items": "item",
            "scored_items": "item",
            "expected_output": "content_only",
            "tolerance": "tolerance",
        },
    ),
    "test": (
        frozenset(
            {
                "name",
                "stage",
                "scorer",
                "slicer",
                "placer",
                "expect_error",
                "expect_construction_error",
            }
        ),
        {},
    ),
    "item": (ITEM_KEYS | {"score"}, {"metadata": "*"}),
    "budget": (BUDGET_KEYS, {"reserved_slots": "*"}),
    "tolerance": (frozenset({"score_epsilon"}), {}),
    "message": (frozenset({"role", "content", "tokens", "calls", "answers"}), {}),
    "history_config": (
        frozenset(
            {
                "low_water",
                "blocks",
                "partial_blocks",
                "keep_system",
                "keep_latest_user",
                "keep_last",
            }
        ),
        {},
    ),
    "prefix": (frozenset({"messages", "window"}), {}),
    "content_only": (frozenset({"content"}), {}),
    "scored": (frozenset({"content", "score_approx"}), {}),
    "scorer": (
        scorer_keys(),
        {
            "scorers": "scorer",
            "children": "scorer",
            "inner": "scorer",
            "curve": "curve",
            "weights": "weight_entry",
            "tag_weights": "tag_weight_entry",
        },
    ),
    "slicer_config": (
        _SLICER,
        {"quotas": "quota", "entries": "count_entry"},
    ),
    "pipeline_config": (
        frozenset({"slicer", "placer", "deduplication", "overflow_strategy", "scorers"})
        | {"reference_time"}
        | _SLICER,
        {"scorers": "scorer", "quotas": "quota", "entries": "count_entry"},
    ),
    "curve": (_keys(CURVES) | {"type"}, {"windows": "window"}),
    "window": (frozenset(tuple_spec("StepWindowSpec").model_fields), {}),
    "weight_entry": (frozenset({"kind", "weight"}), {}),
    "tag_weight_entry": (frozenset({"tag", "weight"}), {}),
    "quota": (frozenset(spec_of(QuotaEntry).model_fields), {}),
    "count_entry": (frozenset(spec_of(CountQuotaEntry).model_fields), {}),
    "expected": (
        frozenset(
            {
                "selected_contents",
                "shortfall_count",
                "cap_excluded_count",
                "ordered_contents",
                "diagnostics",
                "overflow_tokens_over_budget",
                "window",
                "prefixes",
            }
        ),
        {"diagnostics": "diagnostics", "prefixes": "prefix"},
    ),
    "diagnostics": (
        frozenset({"included", "excluded", "summary"}),
        {"included": "included", "excluded": "excluded", "summary": "summary"},
    ),
    "included": (frozenset({"content", "score_approx", "inclusion_reason"}), {}),
    "excluded": (frozenset({"content", "score_approx", "exclusion_reason"}) | PAYLOAD_KEYS, {}),
    "summary": (frozenset({"total_candidates", "total_tokens_considered"}), {}),
}

_CONFIG_ROLE = {
    "scoring": "scorer",
    "slicing": "slicer_config",
    "pipeline": "pipeline_config",
    "history": "history_config",
}


@dataclass(frozen=True)
class KeyProblem:
    """An unknown key at ``path``; ``suggestion`` is the known key it nearly matches
    (then the vector fails) or ``None`` (then it is a warning)."""

    path: str
    key: str
    suggestion: str | None

    @property
    def fatal(self) -> bool:
        """A near miss of a known key: the vector fails."""
        return self.suggestion is not None

    def message(self) -> str:
        """The failure or warning text."""
        where = f"{self.path}: " if self.path else ""
        if self.suggestion is not None:
            return f"{where}unknown key {self.key!r} (did you mean {self.suggestion!r}?)"
        return f"{where}unknown key {self.key!r} ignored"


def _normal(key: str) -> str:
    return ascii_fold(key).replace("_", "").replace("-", "")


def near_miss(key: str, known: frozenset[str]) -> str | None:
    """The known key ``key`` is probably a misspelling of, or ``None``.

    >>> near_miss("pined", frozenset({"pinned", "priority"}))
    'pinned'
    >>> near_miss("Max-Tokens", frozenset({"max_tokens"}))
    'max_tokens'
    >>> near_miss("notes", frozenset({"tokens"})) is None
    True
    """
    normal = _normal(key)
    best: tuple[float, str] | None = None
    for candidate in sorted(known):
        if _normal(candidate) == normal:
            return candidate
        ratio = SequenceMatcher(None, normal, _normal(candidate)).ratio()
        if ratio >= _NEAR_MISS_RATIO and (best is None or ratio > best[0]):
            best = (ratio, candidate)
    return None if best is None else best[1]


def check_keys(data: Mapping[str, Any]) -> list[KeyProblem]:
    """Every unknown key of a parsed vector, in document order. (Recursive: run it on
    data whose depth :func:`check_depth` has accepted.)"""
    test = data.get("test")
    stage = test.get("stage") if isinstance(test, Mapping) else None
    problems: list[KeyProblem] = []

    def visit(value: Any, role: str, path: str) -> None:
        if isinstance(value, list):
            for index, inner in enumerate(value):
                visit(inner, role, f"{path}[{index}]")
            return
        if not isinstance(value, Mapping) or role == "*":
            return
        known, children = _ROLES[role]
        if role == "vector":
            children = {
                **children,
                "config": _CONFIG_ROLE.get(stage, "") if isinstance(stage, str) else "",
                "expected": "scored" if isinstance(value.get("expected"), list) else "expected",
            }
        elif role in ("weight_entry", "tag_weight_entry") and not _is_entry(value, role):
            return  # an inline { name = weight } map: user data
        for key, inner in value.items():
            if key not in known:
                problems.append(KeyProblem(path, str(key), near_miss(str(key), known)))
            elif children.get(key):
                visit(inner, children[key], f"{path}.{key}" if path else str(key))

    visit(data, "vector", "")
    return problems


def _is_entry(value: Mapping[str, Any], role: str) -> bool:
    """``[[config.weights]] kind, weight`` entries (vs an inline ``{ name = weight }``)."""
    name = "kind" if role == "weight_entry" else "tag"
    return name in value or "weight" in value


def check_depth(data: Any, limit: int = MAX_VECTOR_DEPTH) -> str | None:
    """The path of the first table or array nested deeper than ``limit``, or ``None``.
    Iterative, so it cannot exhaust the stack itself."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, Mapping):
            entries = [
                (f"{path}.{key}" if path else str(key), inner) for key, inner in value.items()
            ]
        elif isinstance(value, list):
            entries = [(f"{path}[{i}]", inner) for i, inner in enumerate(value)]
        else:
            continue
        if depth > limit:
            return path if len(path) <= 200 else f"{path[:90]}...{path[-90:]}"
        stack.extend((inner, where, depth + 1) for where, inner in entries)
    return None
