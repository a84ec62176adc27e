"""The data model: items, budgets, kinds, sources, scored items and the overflow strategy.

>>> from cupel import ContextItem, ContextKind
>>> item = ContextItem(content="Use UTC everywhere.", tokens=5, kind="memory")
>>> item.kind == ContextKind.MEMORY          # ASCII case-insensitive
True
>>> str(item.kind)                            # spelling is preserved
'memory'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, NamedTuple

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
)

from cupel._budget import ContextBudget
from cupel._checks import Number, StrictBool, StrictInt, utc_timestamp
from cupel._checks import json_object as _json_object
from cupel._checks import raise_as as _raise_as
from cupel._errors import ItemError
from cupel._frozen import EMPTY as _EMPTY
from cupel._frozen import MAX_METADATA_DEPTH, FrozenDict, FrozenList, freeze_metadata
from cupel._frozen import thaw as _thaw
from cupel._labels import ChoiceEnum, ContextKind, ContextSource, KindMap, OverflowStrategy
from cupel._text import ascii_fold, is_unicode_text

__all__ = [
    "MAX_METADATA_DEPTH",
    "ChoiceEnum",
    "ContextBudget",
    "ContextItem",
    "ContextKind",
    "ContextSource",
    "FrozenDict",
    "FrozenList",
    "KindMap",
    "OverflowStrategy",
    "ScoredItem",
    "ascii_fold",
    "freeze_metadata",
    "is_unicode_text",
    "utc_timestamp",
]


def _unicode_tags(value: tuple[str, ...]) -> tuple[str, ...]:
    """The ``tags`` field's check: each tag valid Unicode text."""
    for index, tag in enumerate(value):
        if not is_unicode_text(tag):
            raise ItemError(
                f"ContextItem.tags[{index}]: text must be valid Unicode (it holds a lone "
                f"surrogate), got {tag!r}",
                field=f"tags[{index}]",
                value=tag,
            )
    return value


def _item_metadata(value: Any) -> FrozenDict[str, Any]:
    """The ``metadata`` field's check: :func:`freeze_metadata`."""
    return freeze_metadata(value, where="ContextItem.metadata")


_validate = BaseModel.__init__


class ScoredItem(NamedTuple):
    """An item paired with its relevance score (``score`` is an IEEE 754 double)."""

    item: ContextItem
    score: float


class ContextItem(BaseModel):
    """One immutable piece of context: a message, document, tool output, memory, ...

    Only ``content`` (non-empty) and ``tokens`` (caller-counted; negative items are
    excluded by the pipeline) are required. ``metadata`` is opaque to the pipeline
    (only the metadata scorers read it) and preserved untouched; like ``tags`` (a tuple)
    it is read-only (a :class:`FrozenDict`), so an item never changes once built. Naive
    timestamps are taken as UTC; aware ones are converted to UTC.

    JSON uses snake_case names; the spec's camelCase (``futureRelevanceHint``,
    ``originalTokens``) is accepted on input.

    >>> ContextItem(content="hi", tokens=1).kind
    ContextKind('Message')
    >>> ContextItem(content="", tokens=1)
    Traceback (most recent call last):
    ...
    cupel.ItemError: ContextItem.content: String should have at least 1 character, got ''
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=False)

    content: str = Field(min_length=1)
    """The text (non-empty)."""
    tokens: StrictInt
    """Its token count, as the caller counted it (negative: excluded at Classify)."""
    kind: ContextKind = ContextKind.MESSAGE
    """What it is: ``Message``, ``Document``, ``ToolOutput``, ``Memory``, ``SystemPrompt``
    or any other name (compared ASCII case-insensitively)."""
    source: ContextSource = ContextSource.CHAT
    """Where it came from: ``Chat``, ``Tool``, ``Rag`` or any other name."""
    priority: StrictInt | None = None
    """A caller-given rank (higher is more important), read by ``PriorityScorer``."""
    tags: Annotated[tuple[str, ...], AfterValidator(_unicode_tags)] = ()
    """Labels, read by ``TagScorer`` and ``FrequencyScorer``."""
    metadata: Annotated[dict[str, Any], PlainValidator(_item_metadata)] = Field(
        default_factory=lambda: _EMPTY
    )
    """String keys to JSON values, kept read-only; only the metadata scorers read it."""
    timestamp: Annotated[datetime, AfterValidator(utc_timestamp)] | None = None
    """When it was written (UTC), read by ``RecencyScorer``, ``DecayScorer`` and the
    chronological placer."""
    future_relevance_hint: Number | None = Field(
        default=None,
        validation_alias=AliasChoices("future_relevance_hint", "futureRelevanceHint"),
    )
    """The caller's own relevance estimate in [0, 1], read by ``ReflexiveScorer``."""
    pinned: StrictBool = False
    """Always in the window: bypasses scoring and slicing."""
    original_tokens: StrictInt | None = Field(
        default=None, validation_alias=AliasChoices("original_tokens", "originalTokens")
    )
    """The token count before the caller shortened the content (informational)."""

    def __init__(self, /, **data: Any) -> None:
        try:
            _validate(self, **data)
        except ValidationError as exc:
            _raise_as(exc, "ContextItem", ItemError)

    def __hash__(self) -> int:
        return hash((self.content, self.tokens, self.kind, self.pinned, self.timestamp))

    # -- wire format -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON wire form: snake_case keys, unset optional fields omitted.

        >>> ContextItem(content="x", tokens=2, tags=("a",)).to_dict()
        {'content': 'x', 'tokens': 2, 'kind': 'Message', 'source': 'Chat', 'tags': ['a']}
        """
        out: dict[str, Any] = {
            "content": self.content,
            "tokens": self.tokens,
            "kind": str(self.kind),
            "source": str(self.source),
        }
        if self.priority is not None:
            out["priority"] = self.priority
        if self.tags:
            out["tags"] = list(self.tags)
        if self.metadata:
            out["metadata"] = _thaw(self.metadata)
        if self.timestamp is not None:
            out["timestamp"] = self.timestamp.isoformat().replace("+00:00", "Z")
        if self.future_relevance_hint is not None:
            out["future_relevance_hint"] = self.future_relevance_hint
        if self.pinned:
            out["pinned"] = True
        if self.original_tokens is not None:
            out["original_tokens"] = self.original_tokens
        return out

    def to_json(self) -> str:
        """The wire form as a JSON string. Metadata that JSON cannot carry (a set, bytes, a
        datetime, ...) is an :class:`~cupel.ItemError` naming the key."""
        data = self.to_dict()
        try:
            return json.dumps(data, ensure_ascii=False)
        except (TypeError, ValueError):
            where, value = _unjsonable(data.get("metadata", {}), "metadata")
            raise ItemError(
                f"ContextItem.to_json: {where} is {type(value).__name__} {value!r:.60}, which "
                f"JSON cannot carry; metadata values must be str, int, float, bool, None, or "
                f"lists and objects of those (convert it before serialising)",
                field=where,
                value=value,
            ) from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextItem:
        """Build an item from its wire form (snake_case or the spec's camelCase keys)."""
        if not isinstance(data, Mapping):
            raise ItemError(
                f"ContextItem: expected a JSON object, got {type(data).__name__}", value=data
            )
        return cls(**dict(data))

    @classmethod
    def from_json(cls, text: str | bytes) -> ContextItem:
        """Parse one item from a JSON object string (metadata may nest up to
        :data:`MAX_METADATA_DEPTH` levels)."""
        return cls.from_dict(_json_object(text, "ContextItem", ItemError))


def _unjsonable(value: Any, where: str) -> tuple[str, Any]:
    """The path and value of the first part of ``value`` JSON cannot carry (iterative: deep
    metadata cannot exhaust the stack); ``(where, value)`` when none is found."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key, inner in reversed(list(item.items())):
                if not isinstance(key, str):
                    return path, key
                stack.append((inner, f"{path}[{key!r}]"))
        elif isinstance(item, list):
            stack.extend((item[i], f"{path}[{i}]") for i in reversed(range(len(item))))
        elif item is not None and not isinstance(item, (str, int, float, bool)):
            return path, item
    return where, value
