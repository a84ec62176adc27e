"""Shared plumbing: policy resolution, error translation, report edits, instrumentation."""

from __future__ import annotations

import copy
import math
import pickle
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.instrumentation import (  # type: ignore[attr-defined]  # re-export
    get_dispatcher,
)
from llama_index.core.instrumentation.event_handlers import NullEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span_handlers import NullSpanHandler
from llama_index.core.utils import get_tokenizer
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    InstanceOf,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from cupel import ConfigurationError, CupelError, Pipeline, SelectionReport
from cupel.conversation import HistoryWindow, check_cache_stable
from cupel.counting import REPLY_TOKENS, check_headroom, media_pricer, text_counter
from cupel.policy import Policy, check_policy

__all__ = [
    "MAX_TOKEN_LIMIT",
    "CupelFields",
    "CupelSelectionEvent",
    "PolicyLike",
    "WindowFields",
    "built_report",
    "check_fraction",
    "check_int",
    "checked_message",
    "checked_messages",
    "context_window",
    "dispatcher",
    "handlers_reached",
    "refused",
    "request_reserve",
    "stable_fields",
    "tokenizer_field",
]

PolicyLike = str | Policy
"""A :class:`~cupel.policy.Policy` or a preset name (``"chat"``, ``"rag"``, ...)."""

dispatcher = get_dispatcher(__name__)
"""The LlamaIndex instrumentation dispatcher the adapters emit through."""


class CupelSelectionEvent(BaseEvent):
    """A LlamaIndex instrumentation event carrying one cupel selection, emitted by the cupel
    components after every selection; any event handler added to the root dispatcher
    (``llama_index.core.instrumentation.get_dispatcher()``) receives it.

    Fields: ``component`` (the emitting class), ``report`` (the
    :class:`~cupel.SelectionReport`), ``max_tokens`` / ``target_tokens`` (the budget
    used), ``candidates`` (objects offered: nodes or messages), ``selected`` (objects
    returned), ``selected_tokens`` and ``query`` (the query string or memory input, if
    any); for a memory with ``cache_stable`` on, ``stable_prefix`` (how many leading
    history messages equal the previous window's), ``cut_moved`` (this call moved the
    cut) and ``cut`` (where the window's stretch of the history starts), else ``None``.
    ``model_dump()`` is JSON-ready: the report in cupel's JSON wire form, the event's
    ``timestamp`` as an ISO 8601 string.
    """

    component: str
    report: InstanceOf[SelectionReport]
    max_tokens: int
    target_tokens: int
    candidates: int
    selected: int
    selected_tokens: int
    query: str | None = None
    stable_prefix: int | None = None
    cut_moved: bool | None = None
    cut: int | None = None

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "CupelSelectionEvent"

    @field_serializer("report")
    def _report_wire(self, report: SelectionReport) -> dict[str, Any]:
        return report.to_dict()

    @field_serializer("timestamp")
    def _timestamp_text(self, timestamp: datetime) -> str:
        return timestamp.isoformat()


def handlers_reached() -> tuple[bool, bool]:
    """Whether an event dispatched through :data:`dispatcher` reaches any handler other
    than LlamaIndex's default ``NullEventHandler``, and whether a span of it reaches one
    other than the default ``NullSpanHandler`` (then a selection runs inside a span): one
    walk up the propagation chain, the way ``Dispatcher.event`` does."""
    events = spans = False
    current: Any = dispatcher
    while current is not None:
        if not events:
            for handler in current.event_handlers:
                if type(handler) is not NullEventHandler:
                    events = True
                    break
        if not spans:
            for handler in current.span_handlers:
                if type(handler) is not NullSpanHandler:
                    spans = True
                    break
        if (events and spans) or (
            not current.propagate or current.manager is None or not current.parent_name
        ):
            break
        current = current.manager.dispatchers.get(current.parent_name)
    return events, spans


def stable_fields(window: HistoryWindow | None) -> dict[str, Any] | None:
    """``{"stable_prefix", "cut_moved", "cut"}`` of a cache-stable window (``None``:
    the option is off)."""
    return None if window is None else window.stable_fields()


class CupelFields(BaseModel):
    """The field checks the LlamaIndex components share (each applies to the fields a
    component has): a bad value raises :class:`~cupel.ConfigurationError` naming the
    component, the field, the value and what is allowed."""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise self._refusal(exc) from None

    @classmethod
    def _refusal(cls, exc: ValidationError) -> ConfigurationError:
        """``exc`` as the ConfigurationError naming the component (its ``class_name()``)."""
        owner: str = getattr(cls, "class_name")()  # noqa: B009  (every component has one)
        return ConfigurationError.from_validation(exc, owner, cls.model_fields)

    def _assign(self, name: str, value: Any, check: Callable[[], object] | None = None) -> None:
        """``__setattr__`` of a component validating assignments: a bad value (or one
        ``check()`` then refuses) raises here, not at query time, and leaves the field
        unchanged."""
        previous = self.__dict__.get(name)
        try:
            super().__setattr__(name, value)
            if check is not None:
                check()
        except (ValidationError, ConfigurationError) as exc:
            if name in type(self).model_fields:  # a whole-model check ran after the write
                self.__dict__[name] = previous
            if isinstance(exc, ValidationError):
                raise self._refusal(exc) from None
            raise

    @field_validator("tokenizer_fn", mode="before", check_fields=False)
    @classmethod
    def _check_tokenizer(cls, value: Any) -> Any:
        if value is None:
            return get_tokenizer()
        try:
            text_counter(value, "tokenizer_fn")
        except ConfigurationError as exc:
            raise owned(cls.__name__, exc) from None
        return value

    @field_validator("headroom", mode="before", check_fields=False)
    @classmethod
    def _check_headroom(cls, value: Any) -> float:
        try:
            return check_headroom(value)
        except ConfigurationError as exc:
            raise owned(cls.__name__, exc) from None

    @field_validator("token_counter", "message_token_counter", mode="before", check_fields=False)
    @classmethod
    def _check_counter(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None and not callable(value):
            field = str(info.field_name)
            raise refused(cls.__name__, field, "must be callable", value, typed=True)
        return value

    @field_validator("policy", mode="before", check_fields=False)
    @classmethod
    def _check_policy(cls, value: Any) -> Any:
        return check_policy(value, cls.__name__)

    @field_validator("cache_stable", mode="before", check_fields=False)
    @classmethod
    def _check_cache_stable(cls, value: Any) -> Any:
        check_cache_stable(value, cls.__name__)  # False, True or a low-water mark
        return value

    @field_validator(
        "pin_system",
        "pin_last_user",
        "start_on_user",
        "truncate_oversized",
        mode="before",
        check_fields=False,
    )
    @classmethod
    def _check_flag(cls, value: Any, info: ValidationInfo) -> bool:
        if not isinstance(value, bool):
            raise refused(cls.__name__, str(info.field_name), "must be a bool", value)
        return value


class WindowFields(CupelFields):
    """The history-window and counting options both memories share."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    image_tokens: Any = Field(
        default="max",
        description=(
            "How an image is priced: 'max' (the larger of OpenAI's and Anthropic's rules), "
            "'openai', 'anthropic', a flat int or a callable (width, height, detail) -> int."
        ),
    )
    headroom: float = Field(
        default=0.0,
        description="A share of token_limit kept free (0 <= headroom < 1), e.g. 0.1.",
    )
    agent_reserve: int = Field(
        default=0,
        description=(
            "Tokens kept free in the window for what an agent sends besides the memory: "
            "its system prompt and the current run's tool rounds."
        ),
    )
    truncate_oversized: bool = Field(
        default=False,
        description=(
            "Return a cut copy of a message too large for any window (the newest unit, the "
            "latest user message) instead of raising PinnedBudgetError or leaving it out."
        ),
    )

    policy: str | Policy = Field(
        default="chat",
        description="A cupel preset name or Policy for the history window (ignored with pipeline).",
    )
    pipeline: Pipeline | None = Field(
        default=None, exclude=True, description="An explicit cupel Pipeline (overrides policy)."
    )
    embeddings: Any = Field(
        default=None,
        exclude=True,
        description=(
            "A LlamaIndex BaseEmbedding for a policy with relevance (e.g. 'recall'): older "
            "turns are also scored by meaning against the latest user message."
        ),
    )
    pin_system: bool = Field(default=True, description="Always keep system messages.")
    pin_last_user: bool = Field(default=True, description="Always keep the latest user message.")
    start_on_user: bool = Field(
        default=True, description="The first non-system message returned is a user message."
    )
    cache_stable: bool | float = Field(
        default=False,
        description=(
            "Cache-stable windows: True (low-water mark 0.5) or a mark 0 < m <= 1; the window "
            "only grows by appending until it overflows, then is cut back to m of the budget."
        ),
    )

    @field_validator("image_tokens", mode="before")
    @classmethod
    def _check_image_tokens(cls, value: Any) -> Any:
        try:
            media_pricer(value)
        except ConfigurationError as exc:
            raise owned(cls.__name__, exc) from None
        return value

    @field_validator("agent_reserve", mode="before")
    @classmethod
    def _check_agent_reserve(cls, value: Any) -> int:
        return check_int(cls.__name__, "agent_reserve", value, minimum=0)

    @field_serializer("image_tokens")
    def _image_tokens_data(self, value: Any) -> Any:
        """A rule's name or a flat price; a callable is not serialized (``None``)."""
        return value if isinstance(value, (str, int)) else None

    @model_validator(mode="after")
    def _check_reserve(self) -> Any:
        limit: int = getattr(self, "token_limit")  # noqa: B009  (every memory has one)
        reserve = request_reserve(limit, self.headroom, self.agent_reserve)
        if reserve >= limit:
            named = [name for name in ("agent_reserve", "headroom") if getattr(self, name)]
            field = named[0] if named else "token_limit"
            raise ConfigurationError(
                f"{type(self).__name__}.{field}: token_limit ({limit}) must exceed what is "
                f"reserved besides the history: the reply's {REPLY_TOKENS} tokens + "
                f"agent_reserve ({self.agent_reserve}) + headroom ({self.headroom:g} of "
                f"token_limit) = {reserve}; raise token_limit or lower "
                f"{'agent_reserve or headroom' if field == 'token_limit' else field}",
                field=field,
                value=getattr(self, field),
            )
        return self


def request_reserve(token_limit: int, headroom: float, agent_reserve: int) -> int:
    """What a memory keeps free of ``token_limit`` besides the history: the reply's
    :data:`~cupel.counting.REPLY_TOKENS`, ``agent_reserve`` and ``headroom``'s share
    (rounded up).

    >>> request_reserve(1000, 0.1, 200)
    303
    """
    return REPLY_TOKENS + agent_reserve + math.ceil(headroom * token_limit)


def owned(owner: str, error: ConfigurationError) -> ConfigurationError:
    """``error`` with its message prefixed by ``owner.`` (the component it configures)."""
    return ConfigurationError(f"{owner}.{error}", field=error.field, value=error.value)


def built_report(owner: str, report: SelectionReport | None) -> SelectionReport:
    """The report of a dry run, which always builds one (a check that, unlike
    ``assert``, survives ``python -O``)."""
    if report is None:
        raise CupelError(f"{owner}: a dry run built no SelectionReport")
    return report


MAX_TOKEN_LIMIT = 2**53
"""The largest ``token_limit`` the memories take: beyond it token arithmetic in floats
(ratios, headroom) is no longer exact."""


def refused(
    owner: str, field: str, rule: str, value: Any, *, typed: bool = False, shown: str = ""
) -> ConfigurationError:
    """``<owner>.<field>: <rule>, got <value!r>`` (``typed``: ``got <type> <value!r>``;
    ``shown``: ``got <shown>``) as a ConfigurationError for ``field``."""
    if not shown:
        shown = f"{type(value).__name__} {value!r}" if typed else repr(value)
    return ConfigurationError(f"{owner}.{field}: {rule}, got {shown}", field=field, value=value)


def check_int(
    owner: str, field: str, value: Any, *, minimum: int, maximum: int | None = None
) -> int:
    """An ``int`` (not ``bool``) of at least ``minimum`` (and at most ``maximum``), or a
    ConfigurationError."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        allowed = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum:,}"
        raise refused(owner, field, f"must be an int {allowed}", value, shown=_short(value))
    return value


def check_fraction(owner: str, field: str, value: Any) -> float:
    """A real number from 0 to 1 (not ``bool``, not NaN), or a ConfigurationError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise refused(owner, field, "must be a number from 0 to 1", value, shown=_short(value))
    return float(value)


def _short(value: Any) -> str:
    """``repr(value)`` on one short line (a 400-digit int shows as its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**18:
        return f"an int of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def state_without_caches(component: Any, owner: type[Any], caches: Sequence[str]) -> dict[str, Any]:
    """The ``__getstate__`` of ``owner``'s base class for a shallow copy of ``component``
    whose private ``caches`` are cleared (``__setstate__`` re-runs ``__init__``, which
    rebuilds them); ``component`` itself is never touched (that method deletes the fields
    it cannot pickle from the ``__dict__`` it is given). A ``tokenizer_fn`` that cannot be
    pickled is refused: LlamaIndex would drop it with a warning, and the copy would count
    with another tokenizer.
    """
    counter = getattr(component, "tokenizer_fn", None)
    try:
        pickle.dumps(counter)
    except Exception:  # LlamaIndex would drop it with a warning: the copy would count otherwise
        raise ConfigurationError(
            f"{owner.__name__}.tokenizer_fn: cannot be pickled ({_short(counter)}); to pickle "
            "the component, pass a module-level function, a tiktoken Encoding or a "
            "HuggingFace tokenizer",
            field="tokenizer_fn",
            value=counter,
        ) from None
    clone = copy.copy(component)  # BaseModel.__copy__: its own __dict__ and private dict
    for name in caches:
        setattr(clone, name, None)
    state: dict[str, Any] = super(owner, clone).__getstate__()
    return state


def checked_message(owner: str, method: str, message: object) -> ChatMessage:
    """``message`` if it is a ``ChatMessage``, else a ConfigurationError naming ``owner.method``."""
    if not isinstance(message, ChatMessage):
        raise ConfigurationError(
            f"{owner}.{method}: message must be a LlamaIndex ChatMessage, "
            f"got {type(message).__name__} {message!r}",
            field="message",
            value=message,
        )
    return message


def checked_messages(owner: str, where: str, messages: object) -> list[ChatMessage]:
    """A new list of the given ChatMessages, or a ConfigurationError naming the culprit."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        rule = "must be a list of LlamaIndex ChatMessages"
        raise refused(owner, where, rule, messages, typed=True)
    out = list(messages)
    for index, message in enumerate(out):
        if not isinstance(message, ChatMessage):
            rule = "must be a LlamaIndex ChatMessage"
            raise refused(owner, f"{where}[{index}]", rule, message, typed=True)
    return out


def context_window(owner: str, llm: object) -> int:
    """``llm.metadata.context_window``, or a ConfigurationError saying what was expected."""
    window = getattr(getattr(llm, "metadata", None), "context_window", None)
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigurationError(
            f"{owner}.from_defaults: llm must be a LlamaIndex LLM whose "
            f"metadata.context_window is a positive int, got {type(llm).__name__} {llm!r}",
            field="llm",
            value=llm,
        )
    return window


def tokenizer_field() -> Any:
    """The ``tokenizer_fn`` field every LlamaIndex component declares: LlamaIndex's own
    tokenizer by default, left out of serialisation (a callable)."""
    return Field(
        default_factory=get_tokenizer,
        exclude=True,
        description=(
            "The text counter: LlamaIndex's text -> tokens convention, a text -> int "
            "callable, a tiktoken Encoding or a HuggingFace tokenizer."
        ),
    )
