"""ContextBudget: the token budget, validated at construction."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Annotated, Any, NoReturn

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from cupel._checks import Number, json_object, raise_as
from cupel._errors import BudgetError, ItemError
from cupel._labels import ContextKind, KindMap
from cupel._text import ascii_fold

__all__ = ["ContextBudget"]


def _kind_map(value: dict[ContextKind, int]) -> dict[ContextKind, int]:
    """The validated reserved slots as a :class:`KindMap`."""
    return KindMap(value)


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BudgetError(
            f"ContextBudget.{name}: must be an integer, got {value!r}", field=name, value=value
        )
    return value


class ContextBudget(BaseModel):
    """The token budget, validated at construction (the spec's seven rules).

    >>> ContextBudget(max_tokens=8000, target_tokens=6000).output_reserve
    0
    >>> ContextBudget(max_tokens=100, target_tokens=200)
    Traceback (most recent call last):
    ...
    cupel.BudgetError: ContextBudget.target_tokens: must be <= max_tokens (100), got 200
    """

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    max_tokens: int = Field(validation_alias=AliasChoices("max_tokens", "maxTokens"))
    """The model's context window (>= 0)."""
    target_tokens: int = Field(validation_alias=AliasChoices("target_tokens", "targetTokens"))
    """The tokens the selection aims for (0 to ``max_tokens``)."""
    output_reserve: int = Field(
        default=0, validation_alias=AliasChoices("output_reserve", "outputReserve")
    )
    """Tokens kept free for the model's answer (0 to ``max_tokens``)."""
    reserved_slots: Annotated[dict[ContextKind, int], AfterValidator(_kind_map)] = Field(
        default_factory=KindMap,
        validation_alias=AliasChoices("reserved_slots", "reservedSlots"),
    )
    """Tokens set aside per kind (each >= 0), taken off the effective target."""
    estimation_safety_margin_percent: Number = Field(
        default=0.0,
        validation_alias=AliasChoices(
            "estimation_safety_margin_percent", "estimationSafetyMarginPercent"
        ),
    )
    """A margin in percent (0 to 100) taken off the effective budget for counting error."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise_as(exc, "ContextBudget", BudgetError)

    @model_validator(mode="before")
    @classmethod
    def _check_raw(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for name in ("max_tokens", "target_tokens", "output_reserve"):
                camel = {"max_tokens": "maxTokens", "target_tokens": "targetTokens"}.get(
                    name, "outputReserve"
                )
                for key in (name, camel):
                    if key in data:
                        _check_int(name, data[key])
            slots = data.get("reserved_slots", data.get("reservedSlots"))
            if isinstance(slots, Mapping):
                seen: dict[str, str] = {}
                for kind, count in slots.items():
                    try:
                        ContextKind(kind)
                    except ItemError as exc:
                        raise BudgetError(
                            f"ContextBudget.reserved_slots: {exc}",
                            field="reserved_slots",
                            value=kind,
                        ) from None
                    folded = ascii_fold(str(kind))
                    if folded in seen:
                        raise BudgetError(
                            f"ContextBudget.reserved_slots: kinds {seen[folded]!r} and {kind!r} "
                            f"are the same kind (kinds compare case-insensitively)",
                            field="reserved_slots",
                            value=dict(slots),
                        )
                    seen[folded] = str(kind)
                    _check_int(f"reserved_slots[{kind!r}]", count)
        return data

    @model_validator(mode="after")
    def _check_rules(self) -> ContextBudget:
        def fail(field: str, rule: str, value: Any) -> NoReturn:
            raise BudgetError(
                f"ContextBudget.{field}: {rule}, got {value!r}", field=field, value=value
            )

        if self.max_tokens < 0:
            fail("max_tokens", "must be >= 0", self.max_tokens)
        for name in ("target_tokens", "output_reserve"):
            value = getattr(self, name)
            if value < 0:
                fail(name, "must be >= 0", value)
            if value > self.max_tokens:
                fail(name, f"must be <= max_tokens ({self.max_tokens})", value)
        margin = self.estimation_safety_margin_percent
        if not (math.isfinite(margin) and 0.0 <= margin <= 100.0):
            fail("estimation_safety_margin_percent", "must be between 0.0 and 100.0", margin)
        for kind, count in self.reserved_slots.items():
            if count < 0:
                fail(f"reserved_slots[{str(kind)!r}]", "must be >= 0", count)
        return self

    def __hash__(self) -> int:
        return hash(
            (
                self.max_tokens,
                self.target_tokens,
                self.output_reserve,
                tuple(sorted((k.key, v) for k, v in self.reserved_slots.items())),
                self.estimation_safety_margin_percent,
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON wire form (snake_case keys)."""
        out: dict[str, Any] = {"max_tokens": self.max_tokens, "target_tokens": self.target_tokens}
        if self.output_reserve:
            out["output_reserve"] = self.output_reserve
        if self.reserved_slots:
            out["reserved_slots"] = {str(k): v for k, v in self.reserved_slots.items()}
        if self.estimation_safety_margin_percent:
            out["estimation_safety_margin_percent"] = self.estimation_safety_margin_percent
        return out

    def to_json(self) -> str:
        """The wire form as a JSON string."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextBudget:
        """Build a budget from its wire form (snake_case or camelCase keys)."""
        if not isinstance(data, Mapping):
            raise BudgetError(
                f"ContextBudget: expected a JSON object, got {type(data).__name__}", value=data
            )
        return cls(**dict(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> ContextBudget:
        """Parse a budget from a JSON object string."""
        return cls.from_dict(json_object(text, "ContextBudget", BudgetError))
