"""Token counters: what the adapters accept, resolved once at construction.

Every message is priced by one model (:class:`cupel.counting.MessageCost`: text parts by a
text counter, media by rule, 3 tokens of overhead, every tool call by its name, JSON
arguments and id). Accepted ``token_counter=`` forms:

=======================================  ==================================================
``token_counter=``                       how a message is counted
=======================================  ==================================================
``"approximate"`` (default)              the model above, text by
                                         :func:`cupel.counting.estimate_tokens`
a ``tiktoken`` encoding, a HuggingFace   the model above, text by that tokenizer
``tokenizers``/``transformers``
tokenizer
a callable on text (``str`` annotated,   the model above, text by ``counter(text)`` (an int,
``token_counter_input="text"``)          or a list of tokens: LlamaIndex's ``tokenizer_fn``)
a chat model                             ``model.get_num_tokens_from_messages(unit)``, once
                                         per unit: it sees the whole messages
a callable on a list of messages         ``counter(unit)`` once (``trim_messages``'
                                         contract)
a callable on one message                sum of ``counter(message)``
=======================================  ==================================================

Callables are told apart by their first parameter's annotation (``BaseMessage``: one
message; ``str``: text; a list type: a list), or explicitly with
``token_counter_input="messages" | "message" | "text"``; an unannotated callable is
called once, at construction, with a one-message list (``trim_messages``' contract) and,
if that fails, taken as a counter of text. ``count_tokens_approximately`` itself is read
as ``"approximate"``.

>>> from langchain_core.messages import AIMessage, HumanMessage
>>> count = resolve_message_counter("approximate", "auto")
>>> count([HumanMessage("How long is the Nile?")])   # 7 of text + 3 per message
10
>>> resolve_message_counter(lambda text: text.split())([HumanMessage("a b c")])
6
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from cupel import ConfigurationError
from cupel.counting import (
    ImageTokens,
    MessageCost,
    checked_count,
    estimate_tokens,
    is_tokenizer,
    text_counter,
)
from cupel_langchain._content import read_content

__all__ = [
    "CounterInput",
    "DocumentTokenCounter",
    "MessageTokenCounter",
    "UnitCounter",
    "approximate_message_tokens",
    "message_parts",
    "resolve_document_counter",
    "resolve_message_counter",
]

CounterInput = Literal["auto", "messages", "message", "text"]
"""How a callable ``token_counter`` is called (``"auto"``: from its annotation)."""

MessageTokenCounter = str | Callable[..., int] | Any
"""``"approximate"``, a tokenizer, a chat model, or a callable (see the module table)."""

DocumentTokenCounter = str | Callable[[str], Any] | Any
"""``"approximate"``, a tokenizer, a language model (``get_num_tokens``) or a callable on
text."""

_COUNTER_INPUTS = ("auto", "messages", "message", "text")

_WHAT_TO_PASS = (
    "pass token_counter='approximate', a tiktoken encoding, a HuggingFace tokenizer, or a "
    "callable on text with token_counter_input='text'"
)


def _tool_call_texts(message: BaseMessage, texts: list[str]) -> None:
    """Append what a message's tool calls and links cost as text: every call's name,
    JSON arguments and id (``tool_calls``, ``invalid_tool_calls`` and a legacy
    ``function_call``), a tool result's call id, the message's ``name``."""
    if message.name:
        texts.append(message.name)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            texts.extend((call["name"], _arguments_json(call), call.get("id") or ""))
        for bad in message.invalid_tool_calls:
            texts.extend((bad.get("name") or "", bad.get("args") or "", bad.get("id") or ""))
        function_call = message.additional_kwargs.get("function_call")
        if isinstance(function_call, dict):
            texts.append(str(function_call.get("name") or ""))
            texts.append(str(function_call.get("arguments") or ""))
    elif isinstance(message, ToolMessage):
        texts.append(message.tool_call_id)


_JSON = json.JSONEncoder(ensure_ascii=False, default=str).encode  # one encoder, not one per call


def _arguments_json(call: Any) -> str:
    """A tool call's arguments as the provider gets them (JSON), or a one-line
    ConfigurationError when they nest too deep for any JSON encoder."""
    try:
        return _JSON(call["args"])
    except RecursionError:
        raise ConfigurationError(
            f"tool call {call.get('name')!r} (id {call.get('id')!r}): args nest too deep to "
            "encode as JSON (keep them under a few hundred levels)",
            field="tool_calls.args",
            value=call.get("id"),
        ) from None


def message_parts(message: BaseMessage) -> tuple[list[str], list[Any]]:
    """A message's text parts (content text, tool-call names, arguments and ids, call
    id, name) and its media (:class:`cupel.counting.Media`), as
    :class:`~cupel.counting.MessageCost` prices them.

    >>> message_parts(AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}]))
    (['f', '{"x": 1}', 'c1'], [])
    """
    texts, media = read_content(message)
    _tool_call_texts(message, texts)
    return texts, media


@dataclass(frozen=True, slots=True, eq=False)
class UnitCounter:
    """Counts one unit (a list of messages). ``message``: the per-message counter when a
    unit costs the sum of its messages (else ``unit`` counts it); ``text``: counts text
    sent besides the messages (tool definitions); ``plain``: in the text-counter modes,
    the text counter pricing a message of one text part (its count plus
    :data:`~cupel.counting.MESSAGE_TOKENS`)."""

    message: Callable[[BaseMessage], int] | None
    unit: Callable[[Sequence[BaseMessage]], int] | None = None
    text: Callable[[str], int] = estimate_tokens
    plain: Callable[[str], int] | None = None

    def __call__(self, messages: Sequence[BaseMessage]) -> int:
        if self.unit is None:
            return sum(map(self.message, messages))  # type: ignore[arg-type]
        return self.unit(messages)


class _Unkeyed(Exception):
    """A value with no exact key (see :func:`_exact`)."""


def _exact(value: object) -> Hashable:
    """``value`` as a key equal only for values encoded alike (floats by ``repr``: ``-0.0``
    is not ``0.0`` in JSON; dicts by their items in order); anything but plain JSON
    types raises :class:`_Unkeyed`."""
    cls = type(value)
    if cls is str:
        return value
    if cls is dict:  # strings inline: most keys and values are
        return (
            dict,
            *[
                (k if type(k) is str else _exact(k), v if type(v) is str else _exact(v))
                for k, v in value.items()  # type: ignore[attr-defined]
            ],
        )
    if cls is list or cls is tuple:
        return (cls, *[v if type(v) is str else _exact(v) for v in value])  # type: ignore[attr-defined]
    if cls is int or cls is bool or value is None:
        return (cls, value)
    if cls is float:
        return (float, repr(value))
    raise _Unkeyed


def _message_key(message: BaseMessage) -> Hashable:
    """Everything :func:`message_parts` reads of ``message``, as an exact key."""
    head = (type(message), _exact(message.content), _exact(message.name))
    if isinstance(message, AIMessage):
        return (
            *head,
            _exact(message.tool_calls),
            _exact(message.invalid_tool_calls),
            _exact(message.additional_kwargs.get("function_call")),
        )
    if isinstance(message, ToolMessage):
        return (*head, _exact(message.tool_call_id))
    return head


def _characters(key: object) -> int:
    """The characters of the strings a key holds."""
    if type(key) is str:
        return len(key)
    if type(key) is tuple:
        return sum(map(_characters, key))
    return 1


_KEPT = 1 << 23
"""Characters of message keys :class:`_Prices` holds before it starts afresh."""


class _Prices(dict[Hashable, int]):
    """Prices of messages read before, by everything priced (:func:`_message_key`, so a
    kept price never differs from a fresh one); emptied once the keys hold
    :data:`_KEPT` characters."""

    __slots__ = ("cost", "held")

    def __init__(self, cost: MessageCost) -> None:
        super().__init__()
        self.cost = cost
        self.held = 0

    def __call__(self, message: BaseMessage) -> int:
        try:
            key = _message_key(message)
        except (_Unkeyed, RecursionError):
            return self.cost(*message_parts(message))
        price = self.get(key)
        if price is None:
            price = self.cost(*message_parts(message))
            size = _characters(key)
            self.held += size
            if self.held > _KEPT:
                self.clear()
                self.held = size
            self[key] = price
        return price


def approximate_message_tokens(message: BaseMessage) -> int:
    """One message's tokens by the default model: text by
    :func:`cupel.counting.estimate_tokens`, media by rule, 3 tokens of overhead, tool
    calls and ids (see the module docstring).

    >>> approximate_message_tokens(HumanMessage("How long is the Nile?"))
    10
    """
    return _APPROXIMATE(message)


_APPROXIMATE = _Prices(MessageCost("approximate"))


def _probe(func: Callable[..., Any]) -> str:
    """How an unannotated callable counts: called once with a one-message list
    (``trim_messages``' contract), else with a text; neither working is a
    :class:`~cupel.ConfigurationError` saying what each call returned or raised."""
    sample = "Hello, how are you?"
    outcomes: list[str] = []
    error: Exception | None = None
    for argument, what in (([HumanMessage(sample)], "a list of messages"), (sample, "a text")):
        try:
            value = func(argument)
        except Exception as exc:
            error = exc
            outcomes.append(f"raised {type(exc).__name__} on {what}")
            continue
        try:
            checked_count(value)
        except ConfigurationError:
            outcomes.append(f"returned {value!r:.80} for {what}")
            continue
        return "messages" if isinstance(argument, list) else "text"
    retry = (
        f"{_WHAT_TO_PASS}, or say what it takes with "
        f"token_counter_input='messages' | 'message' | 'text'"
    )
    if all(outcome.startswith("raised") for outcome in outcomes) and error is not None:
        message = (
            f"token_counter {func!r:.60} failed on a list of messages and on a text "
            f"({type(error).__name__}: {error}); {retry}"
        )
    else:
        message = (
            f"token_counter {' and '.join(outcomes)}; it must return a non-negative int or a "
            f"list of tokens: {retry}"
        )
    raise ConfigurationError(message, field="token_counter", value=func)


def _detect_input(func: Callable[..., Any]) -> str:
    """How ``func`` is called, from its first parameter's annotation (else :func:`_probe`)."""
    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    if not parameters or parameters[0].annotation is inspect.Parameter.empty:
        return _probe(func)
    annotation = parameters[0].annotation
    if isinstance(annotation, str):
        name = annotation.rsplit(".", 1)[-1]
        annotation = {"BaseMessage": BaseMessage, "str": str}.get(name, list)
    if annotation is str:
        return "text"
    if isinstance(annotation, type) and issubclass(annotation, BaseMessage):
        return "message"
    return "messages"


def _is_approximate(token_counter: object) -> bool:
    return token_counter == "approximate" or token_counter is count_tokens_approximately


def resolve_message_counter(
    token_counter: MessageTokenCounter,
    counter_input: CounterInput | str = "auto",
    image_tokens: ImageTokens = "max",
) -> UnitCounter:
    """A function counting one unit (a list of messages), validated once (see the
    module table). ``image_tokens`` prices images in the text-counter modes.

    Raises :class:`~cupel.ConfigurationError` naming ``token_counter`` and what to pass
    for anything else.
    """
    if counter_input not in _COUNTER_INPUTS:
        raise ConfigurationError(
            f"token_counter_input must be one of {', '.join(map(repr, _COUNTER_INPUTS))}, "
            f"got {counter_input!r}",
            field="token_counter_input",
            value=counter_input,
        )
    mode = str(counter_input)
    if _is_approximate(token_counter):
        return _text_mode(MessageCost("approximate", image_tokens))
    if is_tokenizer(token_counter):
        return _text_mode(MessageCost(token_counter, image_tokens))
    if isinstance(token_counter, str):
        _unknown_name(token_counter, "a chat model, a tokenizer or a callable")
    model_count = getattr(token_counter, "get_num_tokens_from_messages", None)
    if callable(model_count) and mode in ("auto", "messages"):
        _check_model_counter(token_counter, model_count)
        return UnitCounter(None, _per_list(model_count))
    if not callable(token_counter):
        raise ConfigurationError(
            f"token_counter must be 'approximate', a tokenizer, a chat model (with "
            f"get_num_tokens_from_messages) or a callable, got {type(token_counter).__name__} "
            f"{token_counter!r:.80}",
            field="token_counter",
            value=token_counter,
        )
    if mode == "auto":
        mode = _detect_input(token_counter)
    counter: Callable[..., Any] = token_counter
    if mode == "text":
        return _text_mode(MessageCost(counter, image_tokens))
    if mode == "message":
        return UnitCounter(lambda message: _checked(counter(message), f"a {message.type} message"))
    return UnitCounter(None, _per_list(counter))


def _text_mode(cost: MessageCost) -> UnitCounter:
    return UnitCounter(_Prices(cost), text=cost.count_text, plain=cost.count_text)


def _checked(value: object, what: str) -> int:
    try:
        return checked_count(value)
    except ConfigurationError:
        raise ConfigurationError(
            f"token_counter returned {value!r:.80} for {what}; it must return a non-negative int",
            field="token_counter",
            value=value,
        ) from None


def _check_model_counter(model: object, model_count: Callable[..., Any]) -> None:
    """A chat model's counter, tried once on a short message: a model whose counting
    needs a package or a download (LangChain's default falls back to ``transformers``'
    GPT-2 tokenizer) is refused here, with what to pass instead."""
    try:
        probe = checked_count(model_count([HumanMessage("Hello, how are you?")]))
        if probe == 0:
            raise ValueError("it counted a non-empty message as 0 tokens")
    except Exception as exc:
        raise ConfigurationError(
            f"token_counter: {type(model).__name__}.get_num_tokens_from_messages failed "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
            f"{_WHAT_TO_PASS}",
            field="token_counter",
            value=model,
        ) from None


def _unknown_name(name: str, alternatives: str) -> NoReturn:
    raise ConfigurationError(
        f"token_counter: unknown counter name {name!r}; use 'approximate', {alternatives}",
        field="token_counter",
        value=name,
    )


def _per_list(counter: Callable[..., Any]) -> Callable[[Sequence[BaseMessage]], int]:
    """A unit's count by ``counter`` on the list of its messages, checked."""
    return lambda unit: _checked(counter(list(unit)), f"a unit of {len(unit)} message(s)")


def resolve_document_counter(token_counter: DocumentTokenCounter) -> Callable[[str], int]:
    """A function counting one document's ``page_content``, validated once:
    ``"approximate"`` (:func:`cupel.counting.estimate_tokens`), a tokenizer, a language
    model (``get_num_tokens``) or a callable on text.

    >>> resolve_document_counter("approximate")("How long is the Nile?")
    7
    """
    if _is_approximate(token_counter):
        return estimate_tokens
    if isinstance(token_counter, str):
        _unknown_name(token_counter, "a tokenizer, a language model or a callable on text")
    model_count = getattr(token_counter, "get_num_tokens", None)
    if (
        callable(model_count)
        and hasattr(token_counter, "get_num_tokens_from_messages")
        and not is_tokenizer(token_counter)
    ):
        try:
            if not checked_count(model_count("Hello, how are you?")):
                raise ValueError("it counted a non-empty text as 0 tokens")
        except Exception as exc:
            raise ConfigurationError(
                f"token_counter: {type(token_counter).__name__}.get_num_tokens failed "
                f"({type(exc).__name__}); pass token_counter='approximate', a tiktoken "
                f"encoding, a HuggingFace tokenizer, or a callable on text",
                field="token_counter",
                value=token_counter,
            ) from None
        return text_counter(model_count)
    return text_counter(token_counter)
