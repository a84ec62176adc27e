"""Custom scorers in policies: :func:`register_scorer` and the ``custom`` table."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, Strict

from cupel._errors import ConfigurationError, refusal
from cupel.policy._base import Spec, fail
from cupel.scorers._base import Scorer

__all__ = [
    "CustomScorerSpec",
    "ScorerFactory",
    "register_scorer",
    "registered_scorers",
    "unregister_scorer",
]

ScorerFactory = Callable[..., Scorer]
_REGISTRY: dict[str, ScorerFactory] = {}


def register_scorer(name: str, factory: ScorerFactory, *, replace: bool = False) -> None:
    """Make ``{"type": "custom", "name": name, "params": {...}}`` build ``factory(**params)``.

    Names are exact (case-sensitive). Registering a taken name raises
    :class:`~cupel.ConfigurationError` unless ``replace=True``. The factory is called
    when a policy is validated and again by each :meth:`Policy.build`, so it should be
    cheap and free of side effects.

    >>> from cupel import KindScorer, Policy
    >>> register_scorer("doc-first", lambda boost=2.0: KindScorer({"Document": boost}))
    >>> Policy.from_dict({"scorer": {"type": "custom", "name": "doc-first",
    ...                              "params": {"boost": 5}}}).build().scorer
    KindScorer(weights={'Document': 5.0})
    >>> unregister_scorer("doc-first")
    """
    if not isinstance(name, str) or not name.strip():
        raise refusal("register_scorer", "name", "must be a non-empty string", name)
    if not callable(factory):
        rule = "must be callable (returning a scorer)"
        raise refusal("register_scorer", "factory", rule, factory)
    if name in _REGISTRY and not replace:
        raise ConfigurationError(
            f"register_scorer: a custom scorer named {name!r} is already registered; "
            f"pass replace=True to replace it",
            field="name",
            value=name,
        )
    _REGISTRY[name] = factory


def unregister_scorer(name: str) -> None:
    """Remove a custom scorer; unknown names raise :class:`~cupel.ConfigurationError`."""
    if name not in _REGISTRY:
        raise ConfigurationError(
            f"unregister_scorer: no custom scorer named {name!r} is registered "
            f"({_registered_text()})",
            field="name",
            value=name,
        )
    del _REGISTRY[name]


def registered_scorers() -> tuple[str, ...]:
    """The registered custom scorer names, sorted."""
    return tuple(sorted(_REGISTRY))


def _registered_text() -> str:
    names = registered_scorers()
    if not names:
        return "none are registered; use cupel.policy.register_scorer"
    return "registered: " + ", ".join(repr(n) for n in names)


class CustomScorerSpec(Spec):
    """A scorer registered with :func:`register_scorer`, built as ``factory(**params)``."""

    type: Literal["custom"] = "custom"
    name: Annotated[str, Strict()]
    params: dict[Annotated[str, Strict()], Any] = Field(default_factory=dict)

    def _build(self, path: str) -> Scorer:
        factory = _REGISTRY.get(self.name)
        if factory is None:
            rule = f"unknown custom scorer {self.name!r} ({_registered_text()})"
            raise fail(f"{path}.name", rule, self.name)
        try:
            scorer = factory(**self.params)
        except Exception as exc:
            rule = (
                f"custom scorer {self.name!r} could not be built from params "
                f"{self.params!r}: {type(exc).__name__}: {exc}"
            )
            raise fail(f"{path}.params", rule, self.params) from exc
        if not callable(getattr(scorer, "score", None)):
            rule = (
                f"the factory of custom scorer {self.name!r} returned {scorer!r}, which is "
                f"not a scorer (no callable 'score' method)"
            )
            raise fail(f"{path}.name", rule, self.name)
        return scorer
