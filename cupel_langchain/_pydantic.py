"""Turning pydantic validation errors of the adapters' fields into cupel errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from langchain_core.load.serializable import (
    Serializable,
    SerializedConstructor,
    SerializedNotImplemented,
)
from pydantic import (
    BaseModel,
    ConfigDict,
    Strict,
    ValidationError,
    field_validator,
    model_validator,
)

from cupel import ConfigurationError
from cupel.policy import Policy, check_policy
from cupel_langchain._options import TRIM_HINTS, check_max_tokens

__all__ = [
    "Fraction",
    "LiveComponent",
    "StrictBool",
    "StrictInt",
    "configuration_error",
    "serialized",
    "unserializable_reason",
]

StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
Fraction = tuple[Literal["fraction"], float]


def configuration_error(exc: ValidationError, component: type[BaseModel]) -> ConfigurationError:
    """The :class:`~cupel.ConfigurationError` for a failed validation of ``component``'s
    options (:meth:`cupel.ConfigurationError.from_validation`; an unknown option lists
    the allowed ones and names the cupel equivalent of a ``trim_messages`` parameter).

    >>> from pydantic import BaseModel, ConfigDict
    >>> class Options(BaseModel):
    ...     model_config = ConfigDict(extra="forbid")
    ...     max_tokens: int
    >>> try:
    ...     Options(max_tokens=1, max_messages=2)
    ... except ValidationError as exc:
    ...     print(configuration_error(exc, Options))
    Options: unknown option 'max_messages' (a trim_messages parameter: cupel budgets tokens: \
use max_tokens=); allowed: max_tokens
    """
    return ConfigurationError.from_validation(
        exc, component.__name__, component.model_fields, noun="option", hints=TRIM_HINTS
    )


class LiveComponent(BaseModel):
    """The base of the components whose fields are live settings: checked at construction
    and at assignment (a bad value raises :class:`~cupel.ConfigurationError` and leaves
    the field as it was), read on every call through :meth:`_selection` (which checks the
    whole configuration), and serializable with ``langchain_core.load`` under the
    ``cupel_langchain`` namespace when their policy is a preset name or a ``Policy``."""

    model_config = ConfigDict(
        arbitrary_types_allowed=True, extra="forbid", validate_assignment=True
    )

    @field_validator("max_tokens", mode="before", check_fields=False)
    @classmethod
    def _check_max_tokens(cls, value: Any) -> Any:
        return check_max_tokens(value, cls.__name__)

    @field_validator("policy", mode="before", check_fields=False)
    @classmethod
    def _check_policy(cls, value: Any) -> Any:
        return check_policy(value, cls.__name__)

    def __init__(self, **kwargs: Any) -> None:
        try:
            super().__init__(**kwargs)
        except ValidationError as exc:
            raise configuration_error(exc, type(self)) from None

    @model_validator(mode="after")
    def _check_configuration(self) -> LiveComponent:
        self._selection()  # every setting checked at construction, not at the first call
        return self

    def _selection(self) -> object:
        """The selection built from the current fields (checks them all)."""
        raise NotImplementedError

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in type(self).model_fields:
            super().__setattr__(name, value)
            return
        previous = getattr(self, name)
        try:  # the field, then the whole configuration (:meth:`_check_configuration`)
            super().__setattr__(name, value)
        except ValidationError as exc:
            super().__setattr__(name, previous)  # valid: the field stays as it was
            raise configuration_error(exc, type(self)) from None

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Serializable with ``langchain_core.load`` when its policy is a preset name or a
        :class:`~cupel.policy.Policy` (see ``to_json``)."""
        return True

    @classmethod
    def get_lc_namespace(cls) -> list[str]:
        """``["cupel_langchain"]``: load with ``valid_namespaces=["cupel_langchain"]``."""
        return ["cupel_langchain"]


def unserializable_reason(component: Any) -> str | None:
    """Why ``component`` (a cupel LangChain component) has no ``langchain_core.load``
    form, or ``None``: an explicit pipeline, a callable counter, an embedding model, a
    wrapped retriever that is not serializable."""
    if getattr(component, "pipeline", None) is not None:
        return (
            "it holds an explicit cupel Pipeline (pipeline=), which has no serialized form; "
            "give policy= a preset name or a cupel Policy instead"
        )
    counter = getattr(component, "token_counter", "approximate")
    if not isinstance(counter, str) and not (
        isinstance(counter, Serializable) and counter.is_lc_serializable()
    ):
        return (
            f"its token_counter ({type(counter).__name__}) is a callable, which has no "
            f"serialized form; use 'approximate' or a serializable chat model"
        )
    embeddings = getattr(component, "embeddings", None)
    if embeddings is not None:
        return (
            f"its embeddings ({type(embeddings).__name__}) is a live embedding model, which "
            f"has no serialized form; pass embeddings= again when you rebuild it"
        )
    base = getattr(component, "base_retriever", None)
    if base is not None and not (isinstance(base, Serializable) and base.is_lc_serializable()):
        return f"its base_retriever ({type(base).__name__}) is not serializable"
    return None


def serialized(
    component: Serializable,
    base: Callable[[], SerializedConstructor | SerializedNotImplemented],
    overrides: Mapping[str, Any],
) -> SerializedConstructor | SerializedNotImplemented:
    """``component.to_json()``: its policy as the policy's dict form and ``overrides``
    for fields given; with :func:`unserializable_reason` the "not implemented" form whose
    ``repr`` says why (``langchain_core.load.loads`` then refuses it, quoting it)."""
    problem = unserializable_reason(component)
    if problem is not None:
        refused = component.to_json_not_implemented()
        refused["repr"] = f"{type(component).__name__} is not serializable: {problem}"
        return refused
    data = base()
    if data.get("type") == "constructor":
        kwargs = data["kwargs"]  # type: ignore[typeddict-item]
        policy = getattr(component, "policy", None)
        if isinstance(policy, Policy) and "policy" in kwargs:
            kwargs["policy"] = policy.to_dict()
        for key, value in overrides.items():
            if key in kwargs:
                kwargs[key] = value
    return data
