"""LlamaIndex chat messages ⇄ cupel items through cupel's conversation layer (one item per
unit: :func:`messages_to_items`); mapping back returns the very same, unmodified objects."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock  # noqa: F401 (doctest)

from cupel import ConfigurationError, ContextItem, InvalidToolCall
from cupel.conversation import Conversation, HistoryItems
from cupel.counting import ImageTokens
from cupel_llamaindex._reading import (
    ROLE_NAMES,
    Counting,
    MessageCounter,
    MessageRead,
    TextKey,
    read_messages,
)

__all__ = ["MessageMapping", "MessageUnit", "map_read", "messages_to_items"]


@dataclass(frozen=True, slots=True)
class MessageUnit:
    """One selectable unit: a single message, or a tool-calling assistant message with its
    tool results (``indices`` are positions in the history, ascending)."""

    indices: tuple[int, ...]
    item: ContextItem


class MessageMapping:
    """A chat history mapped to cupel's conversation layer: one item per unit.

    ``items`` are the units that can be sent, in history order; ``members[k]`` are the
    message positions behind ``items[k]``. ``invalid`` pairs each unit providers would
    reject (unanswered or partly answered tool calls; late, duplicate or unknown tool
    results) with its :class:`~cupel.InvalidToolCall` reason; it is never selected.
    ``texts`` and ``counts`` hold each message's counted text (its text parts joined,
    :func:`~cupel_llamaindex.message_text`) and tokens.
    """

    __slots__ = ("counts", "history", "messages", "read")

    def __init__(self, read: MessageRead, counts: list[int], history: HistoryItems) -> None:
        self.read = read
        self.messages = read.messages
        self.counts = counts
        self.history = history

    @property
    def texts(self) -> list[str]:
        """Each message's counted text (its text parts joined)."""
        return self.read.texts

    def __repr__(self) -> str:
        return (
            f"MessageMapping({len(self.messages)} messages, {len(self.items)} units, "
            f"{len(self.invalid)} invalid)"
        )

    @property
    def items(self) -> list[ContextItem]:
        """The selectable units' items, in history order."""
        return self.history.items

    @property
    def invalid(self) -> list[tuple[ContextItem, InvalidToolCall]]:
        """The units providers would reject, with why."""
        return self.history.invalid

    @property
    def members(self) -> list[tuple[int, ...]]:
        """The message positions behind each of ``items``."""
        conversation = self.history.conversation
        return [conversation.messages_of(k) for k in self.history.units]

    @property
    def units(self) -> list[MessageUnit]:
        """The selectable units, in history order."""
        return [MessageUnit(m, i) for m, i in zip(self.members, self.items, strict=True)]

    def positions(self, items: Iterable[ContextItem]) -> list[int]:
        """The unit positions of ``items``, ascending (history order).

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        return self.history.positions(list(items))

    def messages_at(self, positions: Iterable[int]) -> list[ChatMessage]:
        """Every message of the units at ``positions``, in history order."""
        messages = self.messages
        return [messages[i] for i in self.history.messages_at(list(positions))]

    def to_messages(self, items: Iterable[ContextItem]) -> list[ChatMessage]:
        """The messages behind ``items``, in history order (every message of a unit).

        Raises :class:`~cupel.ConfigurationError` for an item this mapping did not build.
        """
        return self.messages_at(self.positions(items))


def messages_to_items(
    messages: Sequence[ChatMessage],
    *,
    tokenizer_fn: object = None,
    message_token_counter: MessageCounter | None = None,
    image_tokens: ImageTokens = "max",
    pin_system: bool = True,
    pin_last_user: bool = True,
) -> MessageMapping:
    """Map a chat history to one item per unit with cupel's conversation layer.

    * Roles: ``system`` / ``developer`` → system (pinned when ``pin_system``); ``user``
      (the latest one pinned when ``pin_last_user``: the question being answered, or an
      agent's task); ``assistant`` (``model``, ``chatbot``); ``tool`` / ``function``.
    * An assistant message that makes tool calls (``ToolCallBlock`` s,
      ``additional_kwargs["tool_calls"]`` or a legacy ``function_call``) and the tool
      messages answering it (``additional_kwargs["tool_call_id"]``) are one unit of kind
      ``ToolOutput``. Units providers would reject are set aside as ``invalid``.
    * Each message is counted once, as a provider bills it: 3 tokens
      (:data:`~cupel.counting.MESSAGE_TOKENS`) + its text parts by ``tokenizer_fn`` (any
      form :func:`~cupel.counting.text_counter` accepts: LlamaIndex's list-returning
      tokenizers, an int-returning counter, a ``tiktoken`` encoding, a HuggingFace
      tokenizer) — text blocks, each tool call's name, JSON arguments and id, a tool
      result's call id — + its images and other media by ``image_tokens``
      (:data:`~cupel.counting.ImageTokens`). A ``message_token_counter(message)``, if
      given, counts whole messages instead (nothing is added). A unit's tokens are the
      sum.
    * Content is ``"[position] role: text"`` (so distinct turns never deduplicate);
      ``metadata`` holds ``{"role": ...}`` of the unit's first message, plus
      ``cupel:turn`` for units of earlier turns (a recency window keeps them whole).
      Timestamps are synthetic and follow history order.

    >>> history = [
    ...     ChatMessage(role="system", content="Be brief."),
    ...     ChatMessage(role="user", content="What is 2 + 2?"),
    ...     ChatMessage(role="assistant", blocks=[
    ...         ToolCallBlock(tool_call_id="c1", tool_name="add", tool_kwargs={"a": 2})]),
    ...     ChatMessage(role="tool", content="4", additional_kwargs={"tool_call_id": "c1"}),
    ...     ChatMessage(role="assistant", content="4."),
    ... ]
    >>> mapping = messages_to_items(history, tokenizer_fn=str.split)
    >>> for unit in mapping.units:  # words + 3 per message; the call: add, {"a": 2}, c1
    ...     print(unit.indices, unit.item.kind, unit.item.tokens, unit.item.pinned)
    (0,) SystemPrompt 5 True
    (1,) Message 8 True
    (2, 3) ToolOutput 12 False
    (4,) Message 4 False
    >>> mapping.to_messages([mapping.items[2]])[1] is history[3]
    True
    """
    if tokenizer_fn is None and message_token_counter is None:
        raise ConfigurationError(
            "messages_to_items needs tokenizer_fn or message_token_counter, got neither",
            field="tokenizer_fn",
            value=None,
        )
    return map_read(
        read_messages(messages),
        counting=Counting(tokenizer_fn, image_tokens, message_token_counter),
        pin_system=pin_system,
        pin_last_user=pin_last_user,
    )


def map_read(
    read: MessageRead,
    *,
    counting: Counting,
    pin_system: bool,
    pin_last_user: bool,
    counts: list[int] | None = None,
    cuts: Mapping[int, int] | None = None,
) -> MessageMapping:
    """:func:`messages_to_items` of messages already read (:func:`read_messages`);
    ``counts``: their tokens if already counted (:meth:`Counting.counts`); ``cuts``: the
    tokens cut from the unit whose first message is at that index
    (``metadata["cupel:cut_tokens"]``, :mod:`cupel_llamaindex._oversized`)."""
    raw_roles = [str.__str__(role) for role in read.roles]
    roles = [ROLE_NAMES.get(role, role) for role in raw_roles]
    if counts is None:
        counts = counting.counts(read)
    conversation = Conversation(roles, calls=read.calls, answers=read.answers)
    labelled = _Labelled(raw_roles, read.keys)

    def metadata(k: int) -> dict[str, Any]:
        first = conversation.first_message(k)
        if cuts and first in cuts:
            return {"role": raw_roles[first], "cupel:cut_tokens": cuts[first]}
        return {"role": raw_roles[first]}

    latest = conversation.latest_user
    history = HistoryItems.from_conversation(
        conversation,
        labelled,
        counts,
        metadata=metadata,
        keep_system=pin_system,
        keep_latest_user=pin_last_user,
        query=labelled.text(conversation.first_message(latest)) if latest >= 0 else "",
    )
    return MessageMapping(read, counts, history)


class _Labelled(Sequence[str]):
    """Each message's ``"[position] role: text"``, made when read (the items are built
    only when a report or a pipeline needs them)."""

    __slots__ = ("_keys", "_roles")

    def __init__(self, roles: list[str], keys: list[TextKey]) -> None:
        self._roles = roles
        self._keys = keys

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._keys)
        return f"[{index}] {self._roles[index]}: {self.text(index)}"

    def text(self, index: int) -> str:
        """The text of the message at ``index``, without its label."""
        key = self._keys[index]
        return key if type(key) is str else " ".join(key)
