"""Token counters: what the adapters accept, resolved once at construction.

A message counter is applied once per *unit* (a single message, or a tool-call group: an
``AIMessage`` with ``tool_calls`` plus the ``ToolMessage`` s answering it), never to
growing windows. Accepted forms:

====================================  ===================================================
``token_counter=``                    how a unit is counted
====================================  ===================================================
``"approximate"`` (default)           ``count_tokens_approximately`` (additive per message)
a chat model                          ``model.get_num_tokens_from_messages(unit)``, once
a callable on a list of messages      ``counter(unit)`` once (``trim_messages``' contract)
a callable on one message             sum of ``counter(message)``
a callable on text                    sum of ``counter(text)`` (content + tool-call JSON)
====================================  ===================================================

Callables are told apart like ``trim_messages`` does it (a first parameter annotated
``BaseMessage`` takes one message; ``str`` takes text; anything else takes a list), or
explicitly with ``token_counter_input="messages" | "message" | "text"``.

>>> from langchain_core.messages import AIMessage, HumanMessage
>>> count = resolve_message_counter("approximate", "auto")
>>> count([HumanMessage("How long is the Nile?")])
10
>>> resolve_message_counter(lambda text: len(text.split()), "text")([HumanMessage("a b c")])
3
"""

from __future__ import annotations

import inspect
import json
import numbers
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from cupel import ConfigurationError

__all__ = [
    "CounterInput",
    "DocumentTokenCounter",
    "MessageTokenCounter",
    "approximate_message_tokens",
    "approximate_text_tokens",
    "check_count",
    "is_additive",
    "is_approximate",
    "message_text",
    "resolve_document_counter",
    "resolve_message_counter",
]

CounterInput = Literal["auto", "messages", "message", "text"]
"""How a callable ``token_counter`` is called (``"auto"``: from its annotation)."""

MessageTokenCounter = str | Callable[..., int] | Any
"""``"approximate"``, a chat model, or a callable (see the module table)."""

DocumentTokenCounter = str | Callable[[str], int] | Any
"""``"approximate"`` (4 characters per token), a language model (``get_num_tokens``) or a
callable on text."""

_COUNTER_INPUTS = ("auto", "messages", "message", "text")

# The role strings count_tokens_approximately adds for the four common message classes.
_ROLE_CHARS: dict[type, int] = {
    HumanMessage: len("user"),
    AIMessage: len("assistant"),
    ToolMessage: len("tool"),
    SystemMessage: len("system"),
}


def approximate_message_tokens(message: BaseMessage) -> int:
    """``count_tokens_approximately([message])``, with a fast path for plain-text messages.

    For the four common message classes with string content this computes the same
    formula inline: ``ceil((len(content) + len(role) + len(name) [+ len(repr(tool_calls))
    for an AIMessage] [+ len(tool_call_id) for a ToolMessage]) / 4) + 3``. Everything
    else (content blocks, other classes, subclasses, a system message with an
    ``__openai_role__``) goes through ``count_tokens_approximately`` itself. The values
    are identical (a property test checks it on random messages), and because that
    function is additive per message, the sum over a unit equals counting the unit once.

    >>> approximate_message_tokens(HumanMessage("How long is the Nile?"))
    10
    >>> count_tokens_approximately([HumanMessage("How long is the Nile?")])
    10
    """
    cls = type(message)
    content = message.content
    role = _ROLE_CHARS.get(cls)
    if role is None or type(content) is not str:
        return count_tokens_approximately([message])
    chars = len(content) + role
    name = message.name
    if name:
        chars += len(name)
    if cls is AIMessage:
        calls = message.tool_calls  # type: ignore[attr-defined]
        if calls:
            chars += len(repr(calls))
    elif cls is ToolMessage:
        chars += len(message.tool_call_id)  # type: ignore[attr-defined]
    elif cls is SystemMessage and "__openai_role__" in message.additional_kwargs:
        return count_tokens_approximately([message])
    return -(-chars // 4) + 3


def approximate_text_tokens(text: str) -> int:
    """Four characters per token, rounded up (the document counterpart of
    ``count_tokens_approximately``).

    >>> approximate_text_tokens("x" * 9)
    3
    """
    return -(-len(text) // 4)


def message_text(message: BaseMessage) -> str:
    """The text a text counter sees: the message's text content, plus the JSON of an
    ``AIMessage``'s tool calls (name and arguments).

    >>> message_text(AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "1"}]))
    '\\n[{"name": "f", "args": {"x": 1}}]'
    """
    content = message.content
    text = content if type(content) is str else str(message.text)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = [{"name": call["name"], "args": call["args"]} for call in message.tool_calls]
        text = f"{text}\n{json.dumps(calls, ensure_ascii=False, default=str)}"
    return text


def check_count(value: object, what: str) -> int:
    """A counter's result as an ``int`` >= 0, or a :class:`~cupel.ConfigurationError`."""
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    raise ConfigurationError(
        f"token_counter returned {value!r} for {what}; it must return a non-negative int",
        field="token_counter",
        value=value,
    )


def _first_parameter_annotation(func: Callable[..., Any]) -> Any:
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None
    if not parameters:
        return None
    annotation = parameters[0].annotation
    if isinstance(annotation, str):
        return {"BaseMessage": BaseMessage, "str": str}.get(annotation.rsplit(".", 1)[-1])
    return annotation


def _detect_input(func: Callable[..., Any]) -> str:
    annotation = _first_parameter_annotation(func)
    if annotation is str:
        return "text"
    if isinstance(annotation, type) and issubclass(annotation, BaseMessage):
        return "message"
    return "messages"


def _check_counter_input(counter_input: object) -> str:
    if counter_input not in _COUNTER_INPUTS:
        raise ConfigurationError(
            f"token_counter_input must be one of {', '.join(map(repr, _COUNTER_INPUTS))}, "
            f"got {counter_input!r}",
            field="token_counter_input",
            value=counter_input,
        )
    return str(counter_input)


def is_approximate(token_counter: object) -> bool:
    """Whether ``token_counter`` is the approximate counter (by name or the function)."""
    return token_counter == "approximate" or token_counter is count_tokens_approximately


def resolve_message_counter(
    token_counter: MessageTokenCounter, counter_input: CounterInput | str = "auto"
) -> Callable[[Sequence[BaseMessage]], int]:
    """A function counting one unit (a list of messages), validated once.

    Raises :class:`~cupel.ConfigurationError` naming ``token_counter`` for anything that
    is not ``"approximate"``, a model with ``get_num_tokens_from_messages`` or a callable.
    """
    mode = _check_counter_input(counter_input)
    if is_approximate(token_counter) and mode in ("auto", "messages"):
        return _approximate_unit
    if isinstance(token_counter, str):
        _unknown_name(token_counter, "a chat model or a callable")
    model_count = getattr(token_counter, "get_num_tokens_from_messages", None)
    if callable(model_count) and mode in ("auto", "messages"):
        return _model_unit(model_count)
    if not callable(token_counter):
        raise ConfigurationError(
            f"token_counter must be 'approximate', a chat model (with "
            f"get_num_tokens_from_messages) or a callable, got {type(token_counter).__name__} "
            f"{token_counter!r}",
            field="token_counter",
            value=token_counter,
        )
    if mode == "auto":
        mode = _detect_input(token_counter)
    counter: Callable[..., Any] = token_counter
    if mode == "message":

        def per_message(unit: Sequence[BaseMessage]) -> int:
            return sum(check_count(counter(m), f"a {m.type} message") for m in unit)

        return per_message
    if mode == "text":

        def per_text(unit: Sequence[BaseMessage]) -> int:
            return sum(check_count(counter(message_text(m)), f"a {m.type} message") for m in unit)

        return per_text

    def per_list(unit: Sequence[BaseMessage]) -> int:
        return check_count(counter(list(unit)), f"a unit of {len(unit)} message(s)")

    return per_list


def _unknown_name(name: str, alternatives: str) -> NoReturn:
    raise ConfigurationError(
        f"token_counter: unknown counter name {name!r}; use 'approximate', {alternatives}",
        field="token_counter",
        value=name,
    )


def _approximate_unit(unit: Sequence[BaseMessage]) -> int:
    return sum(map(approximate_message_tokens, unit))


def is_additive(count: Callable[[Sequence[BaseMessage]], int]) -> bool:
    """Whether ``count`` (from :func:`resolve_message_counter`) is the approximate counter,
    whose count of a unit is the sum of its messages' counts (then each message is
    counted on its own, inline)."""
    return count is _approximate_unit


def _model_unit(model_count: Callable[..., Any]) -> Callable[[Sequence[BaseMessage]], int]:
    def count(unit: Sequence[BaseMessage]) -> int:
        return check_count(model_count(list(unit)), f"a unit of {len(unit)} message(s)")

    return count


def resolve_document_counter(token_counter: DocumentTokenCounter) -> Callable[[str], int]:
    """A function counting one document's ``page_content``, validated once.

    >>> resolve_document_counter("approximate")("x" * 10)
    3
    """
    if token_counter == "approximate":
        return approximate_text_tokens
    if isinstance(token_counter, str):
        _unknown_name(token_counter, "a language model or a callable on text")
    model_count = getattr(token_counter, "get_num_tokens", None)
    if callable(model_count) and hasattr(token_counter, "get_num_tokens_from_messages"):
        counter: Callable[..., Any] = model_count
    elif callable(token_counter):
        counter = token_counter
    else:
        raise ConfigurationError(
            f"token_counter must be 'approximate', a language model (with get_num_tokens) or "
            f"a callable on text, got {type(token_counter).__name__} {token_counter!r}",
            field="token_counter",
            value=token_counter,
        )

    def count(text: str) -> int:
        return check_count(counter(text), "a document")

    return count
