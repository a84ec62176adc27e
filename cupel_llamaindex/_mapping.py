"""LlamaIndex objects ⇄ cupel items.

Nodes: each :class:`~llama_index.core.schema.NodeWithScore` becomes one ``Document`` item
whose tokens are counted on what a synthesizer sends to the LLM
(``node.get_content(metadata_mode=...)``, ``MetadataMode.LLM`` by default) and whose
``future_relevance_hint`` is the retriever's score (see :func:`nodes_to_items`).

Chat messages: each :class:`~llama_index.core.llms.ChatMessage` belongs to exactly one
*unit*, and each unit becomes one item (see :func:`messages_to_items`). An assistant
message that calls tools and every tool message answering it form one atomic unit, so a
selection can never split a tool call from its results.

Mapping back always returns the very same LlamaIndex objects, never copies, and never
modifies them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence, Sized
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from llama_index.core.base.llms.types import (
    ChatMessage,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.schema import MetadataMode, NodeWithScore

from cupel import ConfigurationError, ContextItem, ContextKind, ContextSource

__all__ = [
    "MessageMapping",
    "MessageUnit",
    "NodeMapping",
    "Relevance",
    "TokenizerFn",
    "count_tokens",
    "message_text",
    "messages_to_items",
    "nodes_to_items",
    "tool_call_ids",
]

TokenizerFn = Callable[[str], Sized]
"""LlamaIndex's tokenizer convention: text → a sized sequence of tokens."""

Relevance = Literal["auto", "score", "rank"]
"""How a node's ``future_relevance_hint`` is derived (see :func:`nodes_to_items`)."""

NODE_ID_KEY = "llamaindex_node_id"
"""Item metadata key holding the node id (the node's own metadata is copied alongside)."""

_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


def count_tokens(tokenizer_fn: TokenizerFn, text: str) -> int:
    """``len(tokenizer_fn(text))`` with a clear error when the result has no length.

    >>> count_tokens(lambda s: s.split(), "three little words")
    3
    """
    tokens = tokenizer_fn(text)
    try:
        return len(tokens)
    except TypeError:
        raise ConfigurationError(
            f"tokenizer_fn must return a sized sequence of tokens (LlamaIndex's convention, "
            f"e.g. a list), got {type(tokens).__name__} {tokens!r}",
            field="tokenizer_fn",
            value=tokenizer_fn,
        ) from None


# ---------------------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeMapping:
    """Items built from nodes, position for position, and the way back.

    ``items[i]`` stands for ``nodes[i]``; :meth:`to_nodes` maps selected items back to the
    same :class:`NodeWithScore` objects by identity.
    """

    nodes: tuple[NodeWithScore, ...]
    items: tuple[ContextItem, ...]

    def to_nodes(self, items: Iterable[ContextItem]) -> list[NodeWithScore]:
        """The nodes behind ``items``, in the order given.

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        position = {id(item): i for i, item in enumerate(self.items)}
        out: list[NodeWithScore] = []
        for item in items:
            index = position.get(id(item))
            if index is None:
                raise ConfigurationError(
                    f"item {item.content[:60]!r} was not built by this mapping",
                    field="items",
                    value=item,
                )
            out.append(self.nodes[index])
        return out


def nodes_to_items(
    nodes: Sequence[NodeWithScore],
    *,
    tokenizer_fn: TokenizerFn,
    metadata_mode: MetadataMode = MetadataMode.LLM,
    relevance: Relevance = "auto",
) -> NodeMapping:
    """Map nodes to ``Document`` items (source ``Rag``).

    * ``content``: ``node.get_content(metadata_mode=metadata_mode)`` — the text the LLM
      sees — and ``tokens`` counted on it. A node with empty content becomes a 0-token
      item whose content is a placeholder naming its id.
    * ``metadata``: a copy of the node's metadata plus ``"llamaindex_node_id"``.
    * ``future_relevance_hint`` from ``relevance``:

      - ``"score"``: the node's score as it is (a missing score → the rank rule below);
      - ``"rank"``: ignore scores; the input order is the ranking, ``1 - i / n``;
      - ``"auto"`` (default): like ``"score"`` when every present score lies in [0, 1];
        otherwise (BM25, logits, distances...) the present scores are min-max scaled to
        [0, 1] over this batch, keeping their order. Missing scores (``None``) use the
        rank rule ``1 - i / n`` in every mode.

    >>> from llama_index.core.schema import TextNode
    >>> nodes = [NodeWithScore(node=TextNode(text="alpha beta", id_="a"), score=0.25),
    ...          NodeWithScore(node=TextNode(text="gamma", id_="b"), score=None)]
    >>> mapping = nodes_to_items(nodes, tokenizer_fn=str.split)
    >>> [(i.tokens, i.future_relevance_hint, i.metadata["llamaindex_node_id"])
    ...  for i in mapping.items]
    [(2, 0.25, 'a'), (1, 0.5, 'b')]
    >>> mapping.to_nodes(reversed(mapping.items))[0] is nodes[1]
    True
    """
    if relevance not in ("auto", "score", "rank"):
        raise ConfigurationError(
            f"relevance must be one of 'auto', 'score', 'rank', got {relevance!r}",
            field="relevance",
            value=relevance,
        )
    nodes = tuple(nodes)
    hints = _relevance_hints(nodes, relevance)
    items: list[ContextItem] = []
    for index, (node, hint) in enumerate(zip(nodes, hints, strict=True)):
        if not isinstance(node, NodeWithScore):
            raise ConfigurationError(
                f"nodes[{index}] must be a NodeWithScore, got {type(node).__name__}",
                field=f"nodes[{index}]",
                value=node,
            )
        text = node.node.get_content(metadata_mode=metadata_mode)
        node_id = node.node.node_id
        metadata = dict(node.node.metadata)
        metadata[NODE_ID_KEY] = node_id
        if text:
            content, tokens = text, count_tokens(tokenizer_fn, text)
        else:
            content, tokens = f"<empty node {node_id}>", 0
        items.append(
            ContextItem(
                content=content,
                tokens=tokens,
                kind=ContextKind.DOCUMENT,
                source=ContextSource.RAG,
                metadata=metadata,
                future_relevance_hint=hint,
            )
        )
    return NodeMapping(nodes, tuple(items))


def _relevance_hints(nodes: Sequence[NodeWithScore], relevance: Relevance) -> list[float]:
    n = len(nodes)
    ranks = [1.0 - i / n for i in range(n)]
    if relevance == "rank":
        return ranks
    scores = [
        node.score
        if isinstance(node, NodeWithScore) and node.score is not None and math.isfinite(node.score)
        else None
        for node in nodes
    ]
    present = [s for s in scores if s is not None]
    low = min(present, default=0.0)
    high = max(present, default=1.0)
    if relevance == "score" or (low >= 0.0 and high <= 1.0):
        return [rank if s is None else s for s, rank in zip(scores, ranks, strict=True)]
    span = high - low
    return [
        rank if s is None else (1.0 if span == 0.0 else (s - low) / span)
        for s, rank in zip(scores, ranks, strict=True)
    ]


# ---------------------------------------------------------------------------------------
# Chat messages
# ---------------------------------------------------------------------------------------
def tool_call_ids(message: ChatMessage) -> tuple[list[str], bool]:
    """The ids of the tool calls ``message`` makes, and whether it makes any call at all.

    Calls are read from ``ToolCallBlock`` s and from ``additional_kwargs["tool_calls"]``
    (OpenAI-style dicts or objects with ``id`` / ``tool_id`` / ``tool_call_id``); a legacy
    ``additional_kwargs["function_call"]`` counts as a call without an id.

    >>> msg = ChatMessage(role="assistant", blocks=[
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})])
    >>> tool_call_ids(msg)
    (['c1'], True)
    >>> tool_call_ids(ChatMessage(role="assistant", content="plain"))
    ([], False)
    """
    ids: list[str] = []
    calls = False
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            calls = True
            if block.tool_call_id:
                ids.append(block.tool_call_id)
    extra = message.additional_kwargs
    if extra:
        raw_calls = extra.get("tool_calls")
        if raw_calls:
            calls = True
            for call in raw_calls:
                call_id = _call_id(call)
                if call_id:
                    ids.append(call_id)
        if extra.get("function_call"):
            calls = True
    return ids, calls


def _call_id(call: Any) -> str | None:
    if isinstance(call, dict):
        value = call.get("id") or call.get("tool_call_id") or call.get("tool_id")
    else:
        value = (
            getattr(call, "id", None)
            or getattr(call, "tool_call_id", None)
            or getattr(call, "tool_id", None)
        )
    return value if isinstance(value, str) and value else None


def _dump(value: Any) -> str:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump()
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)


def message_text(message: ChatMessage) -> str:
    """The text a message costs: its text blocks plus its tool calls (name and arguments).

    Tool calls are counted, unlike ``ChatMemoryBuffer`` (which counts ``str(content)``,
    i.e. ``"None"`` for a call-only message). Non-text blocks (images, audio) cost nothing
    here; pass ``message_token_counter`` to the memory to price them.

    >>> message_text(ChatMessage(role="assistant", blocks=[
    ...     TextBlock(text="Let me add."),
    ...     ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 1})]))
    'Let me add. add {"a": 1}'
    """
    blocks = message.blocks
    extra = message.additional_kwargs
    if not extra and len(blocks) == 1 and type(blocks[0]) is TextBlock:
        return blocks[0].text  # the common case, without building a new string
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            parts.append(f"{block.tool_name} {_dump(block.tool_kwargs)}")
    if extra:
        raw_calls = extra.get("tool_calls")
        if raw_calls:
            parts.extend(_dump(call) for call in raw_calls)
        function_call = extra.get("function_call")
        if function_call:
            parts.append(_dump(function_call))
    return parts[0] if len(parts) == 1 else " ".join(parts)


@dataclass(frozen=True, slots=True)
class MessageUnit:
    """One selectable unit: a single message, or a tool-calling assistant message with its
    tool results (``indices`` are positions in the history, ascending)."""

    indices: tuple[int, ...]
    item: ContextItem


class MessageMapping:
    """Units built from a chat history and the way back to its messages.

    ``items[k]`` stands for the messages at ``members[k]`` (positions in ``messages``,
    ascending); units are in history order of their first message. ``texts`` and
    ``counts`` hold each message's counted text and tokens. ``orphans`` are tool messages
    that answer no call and have no earlier non-system message to travel with, as
    one-message units (items of kind ``ToolOutput``). They are not offered for selection
    (a history may not start with a tool result);
    :class:`~cupel_llamaindex.CupelChatMemory` reports them as
    ``Filtered("orphan_tool_result")``.
    """

    __slots__ = (
        "_position",
        "counts",
        "items",
        "members",
        "messages",
        "orphan_items",
        "orphan_members",
        "texts",
    )

    def __init__(
        self,
        messages: tuple[ChatMessage, ...],
        texts: list[str],
        counts: list[int],
        members: list[tuple[int, ...]],
        items: list[ContextItem],
        orphan_members: list[tuple[int, ...]],
        orphan_items: list[ContextItem],
    ) -> None:
        self.messages = messages
        self.texts = texts
        self.counts = counts
        self.members = members
        self.items = items
        self.orphan_members = orphan_members
        self.orphan_items = orphan_items
        self._position: dict[int, int] | None = None

    def __repr__(self) -> str:
        return (
            f"MessageMapping({len(self.messages)} messages, {len(self.items)} units, "
            f"{len(self.orphan_items)} orphans)"
        )

    @property
    def units(self) -> list[MessageUnit]:
        """The units, in history order."""
        return [MessageUnit(m, i) for m, i in zip(self.members, self.items, strict=True)]

    @property
    def orphans(self) -> list[MessageUnit]:
        """The orphan tool messages, as units."""
        return [
            MessageUnit(m, i) for m, i in zip(self.orphan_members, self.orphan_items, strict=True)
        ]

    def positions(self, items: Iterable[ContextItem]) -> list[int]:
        """The unit positions of ``items``, ascending (history order).

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        if self._position is None:
            self._position = {id(item): k for k, item in enumerate(self.items)}
        position = self._position
        out: list[int] = []
        for item in items:
            k = position.get(id(item))
            if k is None:
                raise ConfigurationError(
                    f"item {item.content[:60]!r} was not built by this mapping",
                    field="items",
                    value=item,
                )
            out.append(k)
        out.sort()
        return out

    def messages_at(self, positions: Iterable[int]) -> list[ChatMessage]:
        """Every message of the units at ``positions``, in history order."""
        members = self.members
        indices = [i for k in positions for i in members[k]]
        indices.sort()
        messages = self.messages
        return [messages[i] for i in indices]

    def to_messages(self, items: Iterable[ContextItem]) -> list[ChatMessage]:
        """The messages behind ``items``, in history order (every message of a unit).

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        return self.messages_at(self.positions(items))


def messages_to_items(
    messages: Sequence[ChatMessage],
    *,
    tokenizer_fn: TokenizerFn | None = None,
    message_token_counter: Callable[[ChatMessage], int] | None = None,
    pin_system: bool = True,
    pin_last_user: bool = True,
    previous: MessageMapping | None = None,
) -> MessageMapping:
    """Group a chat history into atomic units and map each unit to one item.

    Units:

    * an assistant message that makes tool calls (``ToolCallBlock`` s or
      ``additional_kwargs["tool_calls"]``) and every tool message answering it (matched
      by ``additional_kwargs["tool_call_id"]``; a tool message without an id answers the
      calls of the assistant message right before it) → kind ``ToolOutput``;
    * any other message alone: system/developer → ``SystemPrompt`` (pinned when
      ``pin_system``), everything else → ``Message``;
    * a tool message that answers no call travels with the unit of the message right
      before it; with no such (non-system) message it is an orphan (see
      :class:`MessageMapping`).

    Each message is counted once: ``message_token_counter(message)`` if given, else
    ``len(tokenizer_fn(message_text(message)))``; a unit's tokens are the sum. Timestamps
    are synthetic and follow history order (only their order is meaningful). Content is
    ``"[position] role: text"`` so that distinct turns never deduplicate; ``metadata``
    holds ``{"role": ...}`` of the unit's first message. With ``pin_last_user`` the most
    recent user message is pinned, so the question being answered is never dropped.

    ``previous``: a mapping of an earlier version of the same history, built with the
    same counter and pin settings. A message that is the same object at the same
    position with the same text keeps its count (it is not tokenized again), and a unit
    whose messages, position and pinning are all unchanged keeps its item. A growing
    conversation is thus counted once per message, not once per call.

    >>> history = [
    ...     ChatMessage(role="system", content="Be brief."),
    ...     ChatMessage(role="user", content="What is 2 + 2?"),
    ...     ChatMessage(role="assistant", blocks=[
    ...         ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 2})]),
    ...     ChatMessage(role="tool", content="4", additional_kwargs={"tool_call_id": "c1"}),
    ...     ChatMessage(role="assistant", content="4."),
    ... ]
    >>> mapping = messages_to_items(history, tokenizer_fn=str.split)
    >>> for unit in mapping.units:
    ...     print(unit.indices, unit.item.kind, unit.item.tokens, unit.item.pinned)
    (0,) SystemPrompt 2 True
    (1,) Message 5 True
    (2, 3) ToolOutput 4 False
    (4,) Message 1 False
    >>> mapping.to_messages([mapping.items[2]])[1] is history[3]
    True
    >>> longer = messages_to_items([*history, ChatMessage(role="user", content="Thanks")],
    ...                            tokenizer_fn=str.split, previous=mapping)
    >>> longer.items[2] is mapping.items[2], longer.items[1] is mapping.items[1]
    (True, False)
    """
    if tokenizer_fn is None and message_token_counter is None:
        raise ConfigurationError(
            "messages_to_items needs tokenizer_fn or message_token_counter, got neither",
            field="tokenizer_fn",
            value=None,
        )
    messages = tuple(messages)
    n = len(messages)
    old_messages: Sequence[ChatMessage] = previous.messages if previous is not None else ()
    old_texts = previous.texts if previous is not None else []
    old_counts = previous.counts if previous is not None else []
    reusable = min(n, len(old_messages))
    same = [False] * n  # message i is unchanged since `previous`
    # Pass 1: assign every message to a unit, count each message once. Roles compare as
    # plain strings (MessageRole is a str enum; hashing an enum member is slow).
    unit_of = [0] * n
    members: list[list[int]] = []
    head_roles: list[str] = []
    makes_calls: list[bool] = []
    calls_unit: dict[str, int] = {}
    orphans: list[int] = []
    counts = [0] * n
    texts: list[str] = [""] * n
    last_user = -1
    for i, message in enumerate(messages):
        if type(message) is not ChatMessage and not isinstance(message, ChatMessage):
            raise ConfigurationError(
                f"messages[{i}] must be a ChatMessage, got {type(message).__name__}",
                field=f"messages[{i}]",
                value=message,
            )
        blocks = message.blocks
        extra = message.additional_kwargs
        if not extra and len(blocks) == 1 and type(blocks[0]) is TextBlock:
            text = blocks[0].text  # message_text's common case, inlined
        else:
            text = message_text(message)
        texts[i] = text
        if i < reusable and old_messages[i] is message and old_texts[i] == text:
            same[i] = True
            counts[i] = old_counts[i]
        elif message_token_counter is not None:
            counts[i] = _checked_count(message_token_counter(message), i)
        elif text:
            counts[i] = count_tokens(tokenizer_fn, text)  # type: ignore[arg-type]
        role = message.role
        if role == "tool" or role == "function":
            call_id = extra.get("tool_call_id")
            target = -1
            if isinstance(call_id, str) and call_id in calls_unit:
                target = calls_unit[call_id]
            elif i > 0:
                previous_unit = unit_of[i - 1]
                if previous_unit >= 0 and not _is_system(head_roles[previous_unit]):
                    # No (known) id: answer the calls right before it, or travel with the
                    # previous message's unit.
                    target = previous_unit
            unit_of[i] = target
            if target < 0:
                orphans.append(i)
            else:
                members[target].append(i)
            continue
        k = len(members)
        unit_of[i] = k
        members.append([i])
        head_roles.append(role)
        calls = False
        if role == "user":
            last_user = i
        elif not _is_system(role):
            ids, calls = tool_call_ids(message)
            for call_id in ids:
                calls_unit[call_id] = k
        makes_calls.append(calls)
    if not pin_last_user:
        last_user = -1
    # Units of `previous`, by the position of their first message.
    old_unit_at: dict[int, int] = {}
    if previous is not None:
        old_unit_at = {m[0]: k for k, m in enumerate(previous.members) if m[0] < reusable}
    # Pass 2: one item per unit (reused when nothing about the unit changed).
    second = timedelta(seconds=1)
    items: list[ContextItem] = []
    frozen_members: list[tuple[int, ...]] = []
    for indices, head_role, calls in zip(members, head_roles, makes_calls, strict=True):
        head = indices[0]
        is_system = _is_system(head_role)
        pinned = (is_system and pin_system) or head == last_user
        unit = tuple(indices)
        frozen_members.append(unit)
        role_name = _role_name(head_role)
        old = old_unit_at.get(head)
        if old is not None and previous is not None:
            old_item = previous.items[old]
            if (
                previous.members[old] == unit
                and old_item.pinned == pinned
                and old_item.metadata["role"] == role_name
                and (same[head] if len(unit) == 1 else all(same[j] for j in unit))
            ):
                items.append(old_item)
                continue
        has_calls = calls or len(unit) > 1
        if is_system:
            kind = ContextKind.SYSTEM_PROMPT
        elif has_calls:
            kind = ContextKind.TOOL_OUTPUT
        else:
            kind = ContextKind.MESSAGE
        if len(unit) == 1:
            content = f"[{head}] {role_name}: {texts[head]}"
            tokens = counts[head]
        else:
            content = " | ".join(f"[{j}] {_role_name(messages[j].role)}: {texts[j]}" for j in unit)
            tokens = sum(counts[j] for j in unit)
        if kind is ContextKind.MESSAGE:
            # Message / Chat are ContextItem's defaults: not passing them skips their
            # validation (a measurable share of a 10,000-message history).
            item = ContextItem(
                content=content,
                tokens=tokens,
                metadata={"role": role_name},
                timestamp=_EPOCH + second * head,
                pinned=pinned,
            )
        else:
            item = ContextItem(
                content=content,
                tokens=tokens,
                kind=kind,
                source=ContextSource.TOOL if has_calls else ContextSource.CHAT,
                metadata={"role": role_name},
                timestamp=_EPOCH + second * head,
                pinned=pinned,
            )
        items.append(item)
    orphan_items = [
        ContextItem(
            content=f"[{i}] {_role_name(messages[i].role)}: {texts[i]}",
            tokens=counts[i],
            kind=ContextKind.TOOL_OUTPUT,
            source=ContextSource.TOOL,
            metadata={"role": _role_name(messages[i].role)},
            timestamp=_EPOCH + second * i,
        )
        for i in orphans
    ]
    return MessageMapping(
        messages, texts, counts, frozen_members, items, [(i,) for i in orphans], orphan_items
    )


def _is_system(role: str) -> bool:
    return role == "system" or role == "developer"


def _role_name(role: str) -> str:
    """``"user"`` for ``MessageRole.USER`` (the plain string value of a str enum)."""
    return str.__str__(role)


def _checked_count(value: Any, index: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(
            f"message_token_counter must return a non-negative int, got {value!r} "
            f"for messages[{index}]",
            field="message_token_counter",
            value=value,
        )
    return value
