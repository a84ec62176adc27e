"""Chat transcripts on the command line (private): OpenAI-style messages read into the
conversation layer.

A transcript is what chat stores and agent logs hold: one ``{"role": ..., "content":
...}`` object per message (JSON Lines, a JSON array, or a request body ``{"messages":
[...]}``). Roles are ``system`` (``developer`` is read as one), ``user``, ``assistant``
and ``tool`` (the legacy ``function`` result is a ``tool`` result). ``content`` is a
string, ``null`` or a list of parts (``text``, ``refusal``, ``image_url``,
``input_audio``, ``file``); an assistant message may carry ``tool_calls`` (and the
legacy ``function_call``), a tool message answers one with ``tool_call_id``.

Each message is counted as providers bill it (:class:`~cupel.counting.MessageCost` over the
offline estimate: its texts, 3 tokens a message, tool calls with their names, arguments
and ids, images by their size), and :class:`~cupel.conversation.HistoryItems` makes one
item per unit: a message, or an assistant message calling tools with its results.

>>> transcript = parse_transcript([
...     ("line 1", {"role": "system", "content": "Be brief."}),
...     ("line 2", {"role": "user", "content": [{"type": "text", "text": "Weather?"}]}),
...     ("line 3", {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
...                 "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}),
...     ("line 4", {"role": "tool", "tool_call_id": "c1", "content": "Rain"}),
... ])
>>> [unit.messages for unit in transcript.conversation.units]
[(0,), (1,), (2, 3)]
>>> transcript.texts[2]
'→ weather({})'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cupel._errors import CliError
from cupel.conversation import Conversation, HistoryItems
from cupel.counting import Media, MessageCost, base64_image_size

__all__ = ["ROLE_KINDS", "Transcript", "is_message", "parse_transcript"]

_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_PARTS = ("text", "input_text", "output_text", "refusal", "image_url", "input_audio", "file")

ROLE_KINDS = {
    "system": 'kind "SystemPrompt" with "pinned": true',
    "developer": 'kind "SystemPrompt" with "pinned": true',
    "user": 'kind "Message"',
    "human": 'kind "Message"',
    "assistant": 'kind "Message"',
    "ai": 'kind "Message"',
    "tool": 'kind "ToolOutput"',
    "function": 'kind "ToolOutput"',
}
"""Item kinds that are chat roles (ASCII lower case), and the kind an item should have."""


def is_message(entry: object) -> bool:
    """Whether a decoded entry is a chat message (it has a ``role`` and no ``tokens``)
    rather than a context item."""
    return isinstance(entry, Mapping) and "role" in entry and "tokens" not in entry


@dataclass(frozen=True)
class Transcript:
    """A transcript read: the messages as given, their structure, display texts and token
    counts."""

    messages: list[Mapping[str, Any]]
    conversation: Conversation
    texts: list[str]
    tokens: list[int]

    @property
    def latest_user_text(self) -> str | None:
        """The text of the latest user message (``None`` when there is none): the query
        of a relevance scorer that has none of its own."""
        unit = self.conversation.latest_user
        if unit < 0:
            return None
        return self.texts[self.conversation.messages_of(unit)[0]]

    def history(self) -> HistoryItems:
        """One item per unit (the system prompt and the latest user message pinned)."""
        return HistoryItems.from_conversation(self.conversation, self.texts, self.tokens)


class _Reader:
    """Reads one message's texts (what is counted), display text and media."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.counted: list[str] = []
        self.shown: list[str] = []
        self.media: list[Media] = []

    def fail(self, field: str, message: str) -> CliError:
        return CliError(f"{self.where}: {field}: {message}")

    def string(self, value: object, field: str, *, optional: bool = True) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str):
            allowed = "a string or null" if optional else "a string"
            raise self.fail(field, f"must be {allowed}, got {_type(value)}")
        return value

    def content(self, value: object) -> None:
        if value is None:
            return
        if isinstance(value, str):
            self.counted.append(value)
            self.shown.append(value)
            return
        if not isinstance(value, list):
            raise self.fail(
                "content", f"must be a string, null or a list of parts, got {_type(value)}"
            )
        for index, part in enumerate(value):
            self.part(part, f"content[{index}]")

    def part(self, part: object, field: str) -> None:
        if not isinstance(part, Mapping):
            raise self.fail(field, f'must be an object with a "type", got {_type(part)}')
        kind = part.get("type")
        if kind not in _PARTS:
            raise self.fail(
                f"{field}.type", f"{kind!r} is not a content part type ({', '.join(_PARTS)})"
            )
        if kind in ("text", "input_text", "output_text", "refusal"):
            key = "refusal" if kind == "refusal" else "text"
            text = self.string(part.get(key), f"{field}.{key}", optional=False) or ""
            self.counted.append(text)
            self.shown.append(text)
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, Mapping) else image
            url = self.string(url, f"{field}.image_url.url", optional=False) or ""
            detail = image.get("detail") if isinstance(image, Mapping) else None
            size = base64_image_size(url) if url.startswith("data:") else None
            width, height = size if size is not None else (None, None)
            detail = detail if isinstance(detail, str) else None
            self.media.append(Media("image", width=width, height=height, detail=detail))
            self.shown.append("[image]")
        else:  # input_audio, file
            medium = "audio" if kind == "input_audio" else "file"
            self.media.append(Media(medium))
            self.shown.append(f"[{medium}]")

    def tool_calls(self, value: object) -> list[str | None]:
        if not isinstance(value, list):
            raise self.fail("tool_calls", f"must be a list of calls, got {_type(value)}")
        ids: list[str | None] = []
        for index, call in enumerate(value):
            field = f"tool_calls[{index}]"
            if not isinstance(call, Mapping):
                raise self.fail(
                    field, f'must be an object with "id" and "function", got {_type(call)}'
                )
            call_id = self.string(call.get("id"), f"{field}.id")
            self.call(call.get("function"), f"{field}.function")
            if call_id:
                self.counted.append(call_id)
            ids.append(call_id)
        return ids

    def call(self, function: object, field: str) -> None:
        if not isinstance(function, Mapping):
            raise self.fail(
                field, f'must be an object with "name" and "arguments", got {_type(function)}'
            )
        name = self.string(function.get("name"), f"{field}.name", optional=False) or ""
        arguments = function.get("arguments")
        if isinstance(arguments, (dict, list)):  # some stores keep them decoded
            arguments = json.dumps(arguments, ensure_ascii=False)
        arguments = self.string(arguments, f"{field}.arguments") or ""
        self.counted += [name, arguments]
        self.shown.append(f"→ {name}({arguments})")


def _type(value: object) -> str:
    return "null" if value is None else type(value).__name__


def parse_transcript(entries: Iterable[tuple[str, Any]]) -> Transcript:
    """A transcript from decoded messages, each with where it was read (``"line 3"``);
    a message that is not one names the place, the field and what is allowed."""
    cost = MessageCost()
    messages: list[Mapping[str, Any]] = []
    roles: list[str] = []
    calls: dict[int, Sequence[str | None]] = {}
    answers: dict[int, str | None] = {}
    texts: list[str] = []
    tokens: list[int] = []
    for where, entry in entries:
        if not isinstance(entry, Mapping):
            raise CliError(
                f'{where}: expected a chat message {{"role": ..., "content": ...}}, got '
                f"{_type(entry)}"
            )
        reader = _Reader(where)
        role = entry.get("role")
        if role not in _ROLES:
            got = "missing" if role is None else repr(role)
            raise reader.fail(
                "role",
                f"{got} is not a chat role ({', '.join(_ROLES)}); the file is read as a "
                "transcript because its first entry has a role",
            )
        index = len(messages)
        role = _ROLES[role]
        reader.content(entry.get("content"))
        name = reader.string(entry.get("name"), "name")
        if name:
            reader.counted.append(name)
        if role == "assistant":
            made = reader.tool_calls(entry["tool_calls"]) if entry.get("tool_calls") else []
            function_call = entry.get("function_call")
            if function_call is not None:
                reader.call(function_call, "function_call")
                made.append(reader.string(function_call.get("name"), "function_call.name"))
            if made:
                calls[index] = made
        elif role == "tool":
            key = "tool_call_id" if "tool_call_id" in entry else "name"
            answered = reader.string(entry.get(key), key)
            if key == "tool_call_id" and answered:
                reader.counted.append(answered)
            answers[index] = answered
        messages.append(entry)
        roles.append(role)
        texts.append("\n".join(t for t in reader.shown if t))
        tokens.append(cost(reader.counted, reader.media))
    return Transcript(messages, Conversation(roles, calls=calls, answers=answers), texts, tokens)
