"""The options of the message-history components, declared once, and their checks.

:class:`HistoryOptions` lists every selection option with its type; the functions take
them as keyword arguments (``**options: Unpack[FunctionOptions]``), the agent middleware
as its constructor's keywords (:class:`MiddlewareOptions`: no ``keep_system``, its system
prompt is always kept), the Runnable as its fields. :data:`DEFAULTS` holds every default.
Unknown names are refused by :func:`check_options`, with the cupel equivalent of a
``trim_messages`` parameter when one was meant.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypedDict

from langchain_core.messages import BaseMessage
from typing_extensions import Required

from cupel import ConfigurationError, ContextKind, ItemError, Pipeline
from cupel.conversation import ASSISTANT, SYSTEM, TOOL, USER
from cupel.counting import ImageTokens
from cupel.policy import Policy
from cupel_langchain._tokens import CounterInput, MessageTokenCounter

__all__ = [
    "CHAT_ROLES",
    "CHUNK_TYPES",
    "DEFAULTS",
    "DEFAULT_MESSAGE_KINDS",
    "ROLE_BY_TYPE",
    "SELECTION_NAMES",
    "TRIM_HINTS",
    "TRIM_MESSAGES_EQUIVALENTS",
    "FunctionOptions",
    "HistoryOptions",
    "MaxTokens",
    "MiddlewareOptions",
    "PolicyLike",
    "SelectionOptions",
    "StartOn",
    "check_keep_last",
    "check_kind",
    "check_kinds",
    "check_max_tokens",
    "check_name",
    "check_options",
    "check_start_on",
    "option_names",
    "refused",
]

StartOn = str | type[BaseMessage] | Sequence[str | type[BaseMessage]] | None
"""Message types (``"human"``, ``HumanMessage``, ...) the selection may start on."""

DEFAULT_MESSAGE_KINDS: Mapping[str, str] = {
    "system": "SystemPrompt",
    "human": "Message",
    "ai": "Message",
    "tool_group": "ToolOutput",
    "tool": "ToolOutput",
    "chat": "Message",
}
"""The kind of each unit type (``tool_group``: an AI tool call with its results;
``tool``: a stray tool result, never selected; ``chat``: a ``ChatMessage`` of another
role)."""

_UNIT_TYPES = {  # LangChain's unit type -> the conversation layer's
    "system": "system",
    "human": "user",
    "ai": "assistant",
    "tool_group": "exchange",
    "tool": "tool",
    "chat": "other",
}
_MESSAGE_TYPES = ("human", "ai", "system", "tool", "function", "chat")
ROLE_BY_TYPE = {
    "human": USER,
    "ai": ASSISTANT,
    "system": SYSTEM,
    "tool": TOOL,
    "function": TOOL,
}
CHUNK_TYPES = {
    "HumanMessageChunk": "human",
    "AIMessageChunk": "ai",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "FunctionMessageChunk": "function",
    "ChatMessageChunk": "chat",
}
"""The type of the message each streamed chunk type stands for."""
CHAT_ROLES = {
    "user": USER,
    "human": USER,
    "assistant": ASSISTANT,
    "ai": ASSISTANT,
    "system": SYSTEM,
    "developer": SYSTEM,
    "tool": TOOL,
}


def refused(field: str, rule: str, value: object, *, typed: bool = False) -> ConfigurationError:
    """``<field> <rule>, got <value!r>`` (``typed``: ``got <type> <value!r>``) as a
    ConfigurationError for ``field``."""
    shown = f"{type(value).__name__} {value!r}" if typed else repr(value)
    return ConfigurationError(f"{field} {rule}, got {shown}", field=field, value=value)


def check_kind(field: str, value: object) -> ContextKind:
    """``value`` as a :class:`~cupel.ContextKind` (a non-empty kind name)."""
    try:
        return ContextKind(value)  # type: ignore[arg-type]
    except ItemError:
        raise refused(field, "must be a non-empty kind name", value) from None


def check_name(field: str, value: object) -> str | None:
    """``value`` if it is a non-empty string or ``None``."""
    if value is None or (isinstance(value, str) and value):
        return value
    raise refused(field, "must be a non-empty string or None", value)


def check_kinds(kinds: Mapping[str, str] | None) -> dict[str, ContextKind]:
    """The kind per conversation-layer unit type, with ``kinds`` (keyed by LangChain unit
    type) overriding :data:`DEFAULT_MESSAGE_KINDS`."""
    table = dict(DEFAULT_MESSAGE_KINDS)
    if kinds is not None:
        if not isinstance(kinds, Mapping):
            raise refused("kinds", "must be a mapping of unit type to kind", kinds, typed=True)
        for key, value in kinds.items():
            if key not in DEFAULT_MESSAGE_KINDS:
                raise ConfigurationError(
                    f"kinds: unknown unit type {key!r}; allowed: "
                    f"{', '.join(DEFAULT_MESSAGE_KINDS)}",
                    field=f"kinds[{key!r}]",
                    value=value,
                )
            table[key] = value
    return {_UNIT_TYPES[key]: check_kind(f"kinds[{key!r}]", value) for key, value in table.items()}


def check_start_on(start_on: StartOn) -> tuple[str, ...]:
    """``start_on`` as a tuple of message type strings (empty: no constraint)."""
    if start_on is None:
        return ()
    rule = (
        f"must be a message type ({', '.join(_MESSAGE_TYPES)}), a message class or a "
        f"sequence of them"
    )
    if isinstance(start_on, (str, type)):
        entries: list[Any] = [start_on]
    elif isinstance(start_on, Iterable) and not isinstance(start_on, (bytes, Mapping)):
        entries = list(start_on)
    else:
        raise refused("start_on", rule, start_on, typed=True)
    types: list[str] = []
    for entry in entries:
        if isinstance(entry, str) and entry in _MESSAGE_TYPES:
            types.append(entry)
        elif isinstance(entry, type) and issubclass(entry, BaseMessage):
            kind = str(entry.model_fields["type"].default)
            types.append(CHUNK_TYPES.get(kind, kind))
        else:
            raise ConfigurationError(
                f"start_on {rule}, got {entry!r}", field="start_on", value=start_on
            )
    return tuple(types)


def check_keep_last(keep_last: object) -> int:
    """``keep_last`` as a count of trailing units to pin (an int >= 0)."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        rule = "must be a non-negative int (the number of latest message units always kept)"
        raise refused("keep_last", rule, keep_last)
    return keep_last


PolicyLike = Policy | str
"""A :class:`~cupel.policy.Policy` or a preset name (``"chat"``, ``"rag"``, ...)."""

MaxTokens = int | tuple[str, float]
"""A token budget: an int, or ``("fraction", f)`` of the chat model's input window (its
``profile["max_input_tokens"]``, as ``SummarizationMiddleware`` reads it)."""


class HistoryOptions(TypedDict, total=False):
    """The selection options every message-history component takes (see
    :func:`~cupel_langchain.select_messages` for what each does)."""

    max_tokens: Required[MaxTokens]
    target_tokens: int | None
    output_reserve: int
    policy: PolicyLike
    pipeline: Pipeline | None
    token_counter: MessageTokenCounter
    token_counter_input: CounterInput | str
    image_tokens: ImageTokens
    headroom: float
    truncate_oversized: bool
    keep_last_human: bool
    keep_last: int
    start_on: StartOn
    deduplicate: bool
    kinds: Mapping[str, str] | None
    timestamp_key: str | None
    cache_stable: bool | float
    embeddings: Any


class SelectionOptions(HistoryOptions, total=False):
    """:class:`HistoryOptions` plus ``keep_system`` (the functions and the Runnable)."""

    keep_system: bool


class FunctionOptions(SelectionOptions, total=False):
    """The keywords of :func:`~cupel_langchain.select_messages` (``previous`` is deprecated
    and ignored: cache-stable windows are replayed from the history)."""

    previous: Sequence[BaseMessage] | None
    cache_breakpoint: bool


class MiddlewareOptions(HistoryOptions, total=False):
    """The keywords of :class:`~cupel_langchain.CupelContextMiddleware`
    (``max_conversations`` is deprecated and ignored: the middleware keeps no state per
    conversation)."""

    persistent: bool
    report: bool
    cache_breakpoint: bool
    max_conversations: int | None


DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "target_tokens": None,
        "output_reserve": 0,
        "policy": "chat",
        "pipeline": None,
        "token_counter": "approximate",
        "token_counter_input": "auto",
        "image_tokens": "max",
        "headroom": 0.0,
        "truncate_oversized": False,
        "keep_system": True,
        "keep_last_human": True,
        "keep_last": 0,
        "start_on": None,
        "deduplicate": False,
        "kinds": None,
        "timestamp_key": None,
        "cache_stable": False,
        "embeddings": None,
        "previous": None,
        "cache_breakpoint": False,
        "persistent": False,
        "report": True,
        "max_conversations": None,
    }
)
"""The default of every option (``max_tokens`` has none)."""


def option_names(options: type) -> tuple[str, ...]:
    """The names a TypedDict of options declares, in declaration order (bases first)."""
    return tuple(options.__annotations__)


SELECTION_NAMES = option_names(SelectionOptions)
"""What a :class:`~cupel_langchain._selection.MessageSelection` is built from."""

TRIM_MESSAGES_EQUIVALENTS: Mapping[str, str] = {
    "strategy": (
        "cupel keeps the newest whole turns that fit (policy='chat', the counterpart of "
        "strategy='last'); pass policy= (a preset name or a cupel Policy) for another selection"
    ),
    "include_system": "use keep_system= (system messages are pinned by default)",
    "allow_partial": (
        "cupel never cuts a message: a message, or a tool call with its results, is kept or "
        "dropped whole"
    ),
    "end_on": (
        "the window always ends at the newest message; start_on= sets the type it starts on"
    ),
    "text_splitter": "cupel never splits a message's text",
    "max_messages": "cupel budgets tokens: use max_tokens=",
}
"""``trim_messages`` parameters cupel has no option for, and what to use instead."""


TRIM_HINTS: Mapping[str, str] = MappingProxyType(
    {
        name: f" (a trim_messages parameter: {hint})"
        for name, hint in TRIM_MESSAGES_EQUIVALENTS.items()
    }
)
"""What an unknown option's error adds for a ``trim_messages`` parameter."""


def check_options(
    owner: str, given: Mapping[str, Any], allowed: Collection[str], hints: Mapping[str, str]
) -> None:
    """Refuse a name not in ``allowed`` with a :class:`~cupel.ConfigurationError` naming
    it, what it may have meant (``hints``, then ``trim_messages``' equivalents) and the
    allowed names; refuse a missing ``max_tokens``."""
    unknown = [name for name in given if name not in allowed]
    if unknown:
        name = min(unknown)
        hint = hints.get(name) or TRIM_HINTS.get(name, "")
        raise ConfigurationError(
            f"{owner}: unknown option {name!r}{hint}; allowed: {', '.join(allowed)}",
            field=name,
            value=given[name],
        )
    if "max_tokens" not in given:
        raise ConfigurationError(
            f"{owner}: max_tokens is required (the token budget, or ('fraction', f) of the "
            f"chat model's input window)",
            field="max_tokens",
            value=None,
        )


def check_max_tokens(value: object, owner: str = "") -> MaxTokens:
    """An int budget or a valid ``("fraction", f)`` with ``0 < f <= 1``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and value[0] == "fraction"
        and isinstance(value[1], (int, float))
        and not isinstance(value[1], bool)
        and 0 < value[1] <= 1
    ):
        return ("fraction", float(value[1]))
    where = f"{owner}.max_tokens" if owner else "max_tokens"
    raise ConfigurationError(
        f"{where}: must be an integer, or ('fraction', f) with 0 < f <= 1 (a share of the "
        f"chat model's input window), got {value!r}",
        field="max_tokens",
        value=value,
    )
