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
from typing import Any, Literal, NamedTuple

from llama_index.core.base.llms.types import (
    ChatMessage,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.schema import MetadataMode, NodeWithScore

from cupel import ConfigurationError, ContextItem, ContextKind, ContextSource
from cupel_llamaindex._items import chat_fields, new_items, synthetic_timestamps

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

_MESSAGE = ContextKind.MESSAGE
_SYSTEM_PROMPT = ContextKind.SYSTEM_PROMPT
_TOOL_OUTPUT = ContextKind.TOOL_OUTPUT
_CHAT = ContextSource.CHAT
_TOOL = ContextSource.TOOL


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
    tokenizer_fn: TokenizerFn | None = None,
    token_counter: Callable[[str], int] | None = None,
    metadata_mode: MetadataMode = MetadataMode.LLM,
    relevance: Relevance = "auto",
) -> NodeMapping:
    """Map nodes to ``Document`` items (source ``Rag``).

    * ``content``: ``node.get_content(metadata_mode=metadata_mode)`` — the text the LLM
      sees — and ``tokens`` counted on it: ``token_counter(text)`` if given, else
      ``len(tokenizer_fn(text))``. A node with empty content becomes a 0-token item whose
      content is a placeholder naming its id.
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
    if tokenizer_fn is None and token_counter is None:
        raise ConfigurationError(
            "nodes_to_items needs tokenizer_fn or token_counter, got neither",
            field="tokenizer_fn",
            value=None,
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
        if not text:
            content, tokens = f"<empty node {node_id}>", 0
        elif token_counter is not None:
            content, tokens = text, _checked_count(token_counter(text), index, "token_counter")
        else:
            content, tokens = text, count_tokens(tokenizer_fn, text)  # type: ignore[arg-type]
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


class _Progress(NamedTuple):
    """What :func:`messages_to_items` needs to continue a mapping where it stopped."""

    config: tuple[object, object, bool, bool]  # tokenizer_fn, counter, pin flags
    roles: list[str]  # each message's role as a plain string
    links: dict[int, object]  # message index -> what links it (non-plain messages only)
    makes_calls: list[bool]  # per unit: its first message makes tool calls
    calls_unit: dict[str, int]  # tool call id -> unit
    attach: int  # the unit an id-less tool message would join next (-1: none)
    last_user: int  # the latest user message (-1: none), whatever pin_last_user says
    last_user_unit: int


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
        "_progress",
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
        self._progress: _Progress | None = None

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

    Counting is one batched ``map`` over the texts when nothing is reused and there is
    no ``message_token_counter``; otherwise one call per message. Both give the same
    counts (``tests/llamaindex/test_li_fast_paths.py``).

    ``previous``: the mapping of an earlier version of the same history (ignored unless
    built with the same ``tokenizer_fn`` / ``message_token_counter`` objects and pin
    settings). A fast path: when ``messages`` still starts with every message of
    ``previous`` — the same objects at the same positions, each with the same role, text
    and tool linkage — mapping continues where ``previous`` stopped. Only the new
    messages are read and counted, units are extended (a late tool result joins its
    call) and only the units that changed get new items (one that gained a message; the
    former latest user message, which loses its pin). Otherwise every message is mapped
    again, and a message that is the same object with the same text (at any position)
    keeps its count. Either way the result equals a mapping built from scratch
    (property-tested), and a growing conversation is counted once per message, not once
    per call.

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
    config = (tokenizer_fn, message_token_counter, pin_system, pin_last_user)
    progress = previous._progress if previous is not None else None
    if progress is not None and not (
        progress.config[0] is tokenizer_fn
        and progress.config[1] is message_token_counter
        and progress.config[2:] == config[2:]
    ):
        previous = progress = None  # built differently: nothing carries over
    start = 0  # messages before `start` are resumed from `previous` as they are
    counted: dict[int, int] = {}  # id(message) -> its index in `previous` (fallback reuse)
    if previous is not None and progress is not None:
        if _continues(messages, previous, progress):
            start = len(previous.messages)
        else:
            counted = {id(message): j for j, message in enumerate(previous.messages)}
    if start:
        assert previous is not None and progress is not None
        extra_slots = n - start
        texts = previous.texts + [""] * extra_slots
        counts = previous.counts + [0] * extra_slots
        roles = progress.roles + [""] * extra_slots
        links = dict(progress.links)
        members = list(previous.members)
        makes_calls = list(progress.makes_calls)
        calls_unit = dict(progress.calls_unit)
        orphans = [m[0] for m in previous.orphan_members]
        attach = progress.attach
        last_user = progress.last_user
        last_user_unit = progress.last_user_unit
    else:
        texts = [""] * n
        counts = [0] * n
        roles = [""] * n  # plain strings: hashing/comparing enum members is slow
        links = {}
        members = []
        makes_calls = []
        calls_unit = {}
        orphans = []
        attach = -1  # the unit an id-less tool message joins: the previous message's
        last_user = last_user_unit = -1
    old_units = len(members)
    joined: set[int] = set()  # resumed units that gained a tool message
    old_texts = previous.texts if previous is not None else []
    old_counts = previous.counts if previous is not None else []
    # Pass 1: assign every message to a unit and count each message once (in one batch
    # after the loop, unless counts are reused or come from message_token_counter).
    one_by_one = bool(counted) or message_token_counter is not None
    for i in range(start, n):
        message = messages[i]
        if type(message) is not ChatMessage and not isinstance(message, ChatMessage):
            raise ConfigurationError(
                f"messages[{i}] must be a ChatMessage, got {type(message).__name__}",
                field=f"messages[{i}]",
                value=message,
            )
        blocks = message.blocks
        extra = message.additional_kwargs
        plain = not extra and len(blocks) == 1 and type(blocks[0]) is TextBlock
        # message_text's common case, inlined
        text = blocks[0].text if plain else message_text(message)  # type: ignore[union-attr]
        texts[i] = text
        role = roles[i] = str.__str__(message.role)
        if one_by_one:
            j = counted.get(id(message), -1)
            if j >= 0 and old_texts[j] == text:
                counts[i] = old_counts[j]
            elif message_token_counter is not None:
                counts[i] = _checked_count(message_token_counter(message), i)
            else:
                counts[i] = count_tokens(tokenizer_fn, text)  # type: ignore[arg-type]
        if role == "tool" or role == "function":
            call_id = None
            if not plain:
                call_id = links[i] = extra.get("tool_call_id")
            target = attach
            if isinstance(call_id, str):
                target = calls_unit.get(call_id, attach)
            if target < 0:
                orphans.append(i)
            else:
                members[target] = (*members[target], i)
                if target < old_units:
                    joined.add(target)
            attach = target
            continue
        k = len(members)
        members.append((i,))
        calls = False
        if role == "user":
            last_user = i
            last_user_unit = attach = k
            if not plain:
                links[i] = None
        elif role == "system" or role == "developer":
            attach = -1
            if not plain:
                links[i] = None
        else:
            attach = k
            if not plain:  # a plain message (one text block, no extras) makes no calls
                ids, calls = tool_call_ids(message)
                links[i] = (tuple(ids), calls)
                for call_id in ids:
                    calls_unit[call_id] = k
        makes_calls.append(calls)
    if not one_by_one and start < n:
        counts[start:] = _count_all(tokenizer_fn, texts[start:])  # type: ignore[arg-type]
    pinned_user = last_user if pin_last_user else -1
    # Pass 2: one item per new unit, and per resumed unit that changed (it gained a tool
    # result, or the latest user message moved on). Items are built from complete field
    # dicts by `new_items` (see cupel_llamaindex._items).
    if start:
        assert previous is not None and progress is not None
        todo = joined
        if pin_last_user and progress.last_user_unit != last_user_unit:
            todo.add(progress.last_user_unit)  # no longer the latest user message
        todo.discard(-1)
        todo_units: Iterable[int] = [*sorted(todo), *range(old_units, len(members))]
    else:
        todo_units = range(len(members))
    stamps = synthetic_timestamps(n)
    fresh: list[dict[str, Any]] = []
    add = fresh.append
    blank = chat_fields("", 0, "", 0).copy  # Message / Chat / not pinned, filled in below
    for k in todo_units:
        unit = members[k]
        head = unit[0]
        role = roles[head]
        fields = blank()
        if len(unit) == 1:
            fields["content"] = f"[{head}] {role}: {texts[head]}"
            fields["tokens"] = counts[head]
            calls = makes_calls[k]
        else:
            fields["content"] = " | ".join(f"[{j}] {roles[j]}: {texts[j]}" for j in unit)
            fields["tokens"] = sum(counts[j] for j in unit)
            calls = True
        if role == "system" or role == "developer":
            fields["kind"] = _SYSTEM_PROMPT
            fields["pinned"] = pin_system
        elif calls:
            fields["kind"] = _TOOL_OUTPUT
            fields["source"] = _TOOL
        if head == pinned_user:
            fields["pinned"] = True
        fields["metadata"] = {"role": role}
        fields["timestamp"] = stamps[head]
        add(fields)
    built = new_items(fresh)
    items: list[ContextItem]
    if start:
        assert previous is not None
        items = [*previous.items, *built[len(built) - (len(members) - old_units) :]]
        for k, item in zip(todo_units, built, strict=False):
            if k >= old_units:
                break
            items[k] = item
    else:
        items = built
    old_orphans = len(previous.orphan_items) if start and previous is not None else 0
    new_orphans = orphans[old_orphans:]
    orphan_items = new_items(
        [
            chat_fields(
                f"[{i}] {roles[i]}: {texts[i]}",
                counts[i],
                roles[i],
                i,
                kind=_TOOL_OUTPUT,
                source=_TOOL,
            )
            for i in new_orphans
        ]
    )
    if old_orphans:
        assert previous is not None
        orphan_items = [*previous.orphan_items, *orphan_items]
    mapping = MessageMapping(
        messages, texts, counts, members, items, [(i,) for i in orphans], orphan_items
    )
    mapping._progress = _Progress(
        config, roles, links, makes_calls, calls_unit, attach, last_user, last_user_unit
    )
    return mapping


def _count_all(tokenizer_fn: TokenizerFn, texts: list[str]) -> list[int]:
    """``len(tokenizer_fn(text))`` for each text, in one C-level pass; on a ``TypeError``
    :func:`count_tokens` explains a tokenizer that breaks the sized-result convention."""
    try:
        return list(map(len, map(tokenizer_fn, texts)))
    except TypeError:
        return [count_tokens(tokenizer_fn, text) for text in texts]


def _continues(
    messages: tuple[ChatMessage, ...], previous: MessageMapping, progress: _Progress
) -> bool:
    """Whether ``messages`` starts with every message of ``previous``, each unchanged: the
    same object at the same position, with the same role, text and tool linkage."""
    old = previous.messages
    if len(old) > len(messages):
        return False
    texts = previous.texts
    roles = progress.roles
    links = progress.links
    for i, (message, before) in enumerate(zip(messages, old, strict=False)):  # may be longer
        if message is not before:
            return False
        blocks = message.blocks
        extra = message.additional_kwargs
        if not extra and len(blocks) == 1 and type(blocks[0]) is TextBlock:
            if blocks[0].text != texts[i] or i in links:
                return False
        elif i not in links or message_text(message) != texts[i]:
            return False
        role = str.__str__(message.role)
        if role != roles[i]:
            return False
        if i in links and _link(message, role) != links[i]:
            return False
    return True


def _link(message: ChatMessage, role: str) -> object:
    """What ties a (non-plain) message to others, as pass 1 of
    :func:`messages_to_items` records it."""
    if role == "tool" or role == "function":
        return message.additional_kwargs.get("tool_call_id")
    if role in ("user", "system", "developer"):
        return None
    ids, calls = tool_call_ids(message)
    return (tuple(ids), calls)


def _checked_count(value: Any, index: int, counter: str = "message_token_counter") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        what = "messages" if counter == "message_token_counter" else "nodes"
        raise ConfigurationError(
            f"{counter} must return a non-negative int, got {value!r} for {what}[{index}]",
            field=counter,
            value=value,
        )
    return int(value)  # an exact int (not a subclass), as ContextItem stores it
