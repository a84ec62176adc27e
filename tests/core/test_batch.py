"""cupel.trusted_items builds exactly what ContextItem(...) builds, without validating."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_profiles import examples

from cupel import ContextItem, ContextKind, ContextSource, _batch, item_row, trusted_items

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1)


@settings(max_examples=examples(300), deadline=None)
@given(
    content=TEXT,
    tokens=st.integers(-5, 10**9),
    kind=st.sampled_from(["Message", "ToolOutput", "SystemPrompt", "Document", "custom"]),
    source=st.sampled_from(["Chat", "Tool", "Rag"]),
    priority=st.one_of(st.none(), st.integers(-3, 3)),
    tags=st.lists(TEXT, max_size=2).map(tuple),
    metadata=st.dictionaries(TEXT, st.one_of(st.integers(), TEXT, st.none()), max_size=3),
    timestamp=st.one_of(
        st.none(), st.datetimes(timezones=st.just(timezone.utc), min_value=datetime(1971, 1, 1))
    ),
    hint=st.one_of(st.none(), st.floats(allow_nan=False)),
    pinned=st.booleans(),
    original=st.one_of(st.none(), st.integers(0, 10)),
)
def test_a_trusted_item_equals_the_validated_one(
    content: str,
    tokens: int,
    kind: str,
    source: str,
    priority: int | None,
    tags: tuple[str, ...],
    metadata: dict[str, Any],
    timestamp: datetime | None,
    hint: float | None,
    pinned: bool,
    original: int | None,
) -> None:
    row = item_row(
        content,
        tokens,
        kind=ContextKind(kind),
        source=ContextSource(source),
        priority=priority,
        tags=tags,
        metadata=metadata,
        timestamp=timestamp,
        future_relevance_hint=hint,
        pinned=pinned,
        original_tokens=original,
    )
    (fast,) = trusted_items([dict(row)])
    slow = ContextItem(**row)
    assert fast == slow and hash(fast) == hash(slow)
    assert fast.to_dict() == slow.to_dict() and fast.model_dump() == slow.model_dump()
    assert type(fast.metadata) is type(slow.metadata)
    assert ContextItem.from_dict(fast.to_dict()) == slow
    copied = fast.model_copy(update={"tokens": tokens + 1})
    assert copied.tokens == tokens + 1 and fast.tokens == tokens


def test_trusted_items_are_frozen_and_their_metadata_read_only() -> None:
    caller = {"k": 1}
    first, second = trusted_items([item_row("a", 1, metadata=caller), item_row("b", 2)])
    with pytest.raises(Exception, match="frozen"):
        first.tokens = 5  # type: ignore[misc]
    with pytest.raises(TypeError, match="read-only"):
        first.metadata["k"] = 2  # type: ignore[index]
    caller["k"] = 3
    assert first.metadata == {"k": 1}  # the caller's dict was copied
    assert second.metadata == {} and first.metadata is not second.metadata


def test_the_trusted_path_is_in_use_with_this_pydantic() -> None:
    # the import-time self-check passed: a silent fallback to validation would still be
    # correct, but several times slower
    assert _batch._TRUSTED
