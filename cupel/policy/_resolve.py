"""One resolver: a Pipeline, a Policy or a preset name → a Pipeline."""

from __future__ import annotations

from cupel._errors import ConfigurationError
from cupel._pipeline import Pipeline, set_policy_resolver
from cupel.policy._policy import Policy
from cupel.policy._presets import preset

__all__ = ["resolve_pipeline"]


def resolve_pipeline(
    source: Policy | Pipeline | str,
    *,
    owner: str = "",
    field: str = "policy",
    pipelines: bool = True,
) -> Pipeline:
    """The pipeline ``source`` stands for: a :class:`~cupel.Pipeline` as it is (unless
    ``pipelines=False``), a :class:`~cupel.policy.Policy` built, a preset name's policy
    built (an unknown name raises :class:`~cupel.PolicyError` listing the presets).
    Anything else raises :class:`~cupel.ConfigurationError` naming ``owner`` and
    ``field``. Analytics, the command line, :meth:`~cupel.Pipeline.from_policy` and the
    adapters resolve their ``policy`` / ``pipeline`` arguments here.

    >>> resolve_pipeline("rag").placer
    UShapedPlacer()
    >>> resolve_pipeline(3, owner="select")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cupel.ConfigurationError: select: policy must be a Policy, a Pipeline or a preset ...
    """
    if pipelines and isinstance(source, Pipeline):
        return source
    if isinstance(source, Policy):
        return source.build()
    if isinstance(source, str):
        return preset(source).build()
    accepted = "a Policy, a Pipeline or a preset name" if pipelines else "a Policy or a preset name"
    where = f"{owner}: {field}" if owner else field
    raise ConfigurationError(
        f"{where} must be {accepted}, got {type(source).__name__} {source!r}",
        field=field,
        value=source,
    )


def _from_policy(source: object) -> Pipeline:
    return resolve_pipeline(source, owner="Pipeline.from_policy", pipelines=False)  # type: ignore[arg-type]


set_policy_resolver(_from_policy)
