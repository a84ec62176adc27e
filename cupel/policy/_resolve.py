"""One resolver: a Pipeline, a Policy or a preset name → a Pipeline; one check of a
``policy`` setting. Analytics, the command line, :meth:`~cupel.Pipeline.from_policy` and
both adapters use them."""

from __future__ import annotations

from collections.abc import Mapping

from cupel._errors import ConfigurationError, PolicyError
from cupel._pipeline import Pipeline, set_policy_resolver
from cupel.policy._policy import Policy
from cupel.policy._presets import PRESET_NAMES, preset

__all__ = ["check_policy", "resolve_pipeline"]


def _where(owner: str, field: str) -> str:
    return f"{owner}.{field}" if owner else field


def _refused(
    owner: str, field: str, rule: str, value: object, *, typed: bool = False
) -> ConfigurationError:
    """``<owner>.<field>: <rule>, got <value!r>`` (``typed``: ``got <type> <value!r>``)."""
    shown = f"{type(value).__name__} {value!r}" if typed else repr(value)
    return ConfigurationError(
        f"{_where(owner, field)}: {rule}, got {shown}", field=field, value=value
    )


def _not_a_source(owner: str, field: str, value: object, pipelines: bool) -> ConfigurationError:
    accepted = "a Policy, a Pipeline or a preset name" if pipelines else "a Policy or a preset name"
    rule = f"must be {accepted} ({', '.join(PRESET_NAMES)})"
    return _refused(owner, field, rule, value, typed=True)


def check_policy(value: object, owner: str = "", field: str = "policy") -> str | Policy:
    """A ``policy`` setting as a component stores it: a preset name or a
    :class:`~cupel.policy.Policy` as it is, a policy's dict form (what serialization
    writes) as the ``Policy`` it describes; anything else raises
    :class:`~cupel.ConfigurationError` naming ``owner.field`` and what is allowed.

    >>> check_policy(preset("rag").to_dict()) == preset("rag")
    True
    >>> check_policy(3, "Memory")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ConfigurationError: Memory.policy: must be a Policy or a preset name (...), got int 3
    """
    if isinstance(value, (str, Policy)):
        return value
    if isinstance(value, Mapping):
        return Policy.from_dict(value)
    raise _not_a_source(owner, field, value, pipelines=False)


def resolve_pipeline(
    source: Policy | Pipeline | str,
    *,
    owner: str = "",
    field: str = "policy",
    pipelines: bool = True,
    pipeline: Pipeline | None = None,
    deduplicate: bool | None = None,
) -> Pipeline:
    """The pipeline ``source`` stands for: a :class:`~cupel.Pipeline` as it is (unless
    ``pipelines=False``), a :class:`~cupel.policy.Policy` built, a preset name's policy
    built. ``pipeline``, when given, is used instead of ``source`` (a component's explicit
    ``pipeline`` beside its ``policy``); ``deduplicate``, when not ``None``, overrides the
    result's deduplication. Anything else raises :class:`~cupel.ConfigurationError` (an
    unknown preset name :class:`~cupel.PolicyError`) naming ``owner.field``, the value and
    what is allowed.

    >>> resolve_pipeline("rag").placer
    UShapedPlacer()
    >>> resolve_pipeline("chat", deduplicate=True).deduplication
    True
    >>> resolve_pipeline(3, owner="select")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ConfigurationError: select.policy: must be a Policy, a Pipeline or a preset name ...
    >>> resolve_pipeline("summary")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.PolicyError: policy: unknown preset 'summary'; allowed: a cupel.policy.Policy or one ...
    """
    if not isinstance(deduplicate, (bool, type(None))):
        raise _refused(owner, "deduplicate", "must be a bool or None", deduplicate)
    if pipeline is not None:
        if not isinstance(pipeline, Pipeline):
            raise _refused(owner, "pipeline", "must be a cupel.Pipeline", pipeline, typed=True)
        built = pipeline
    elif pipelines and isinstance(source, Pipeline):
        built = source
    elif isinstance(source, Policy):
        built = source.build()
    elif isinstance(source, str):
        try:
            named = preset(source)
        except PolicyError:
            raise PolicyError(
                f"{_where(owner, field)}: unknown preset {source!r}; allowed: a "
                f"cupel.policy.Policy or one of {', '.join(PRESET_NAMES)}",
                field=field,
                value=source,
            ) from None
        built = named.build()
    else:
        raise _not_a_source(owner, field, source, pipelines)
    if deduplicate is None or built.deduplication == deduplicate:
        return built
    return Pipeline(
        built.scorer,
        built.slicer,
        built.placer,
        deduplication=deduplicate,
        overflow_strategy=built.overflow_strategy,
        on_overflow=built.on_overflow,
    )


def _from_policy(source: object) -> Pipeline:
    return resolve_pipeline(source, owner="Pipeline.from_policy", pipelines=False)  # type: ignore[arg-type]


set_policy_resolver(_from_policy)
