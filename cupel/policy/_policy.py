"""Policy: a whole pipeline configuration as data, read from and written to JSON and TOML."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import BeforeValidator, Field, Strict, model_validator

from cupel._model import OverflowStrategy
from cupel._pipeline import Pipeline
from cupel.placers._base import Placer
from cupel.policy._base import MAX_POLICY_DEPTH, Spec, fail, normalize_name
from cupel.policy._derive import choice, spec_of
from cupel.policy._specs import PLACERS, ScorerSpec, SlicerSpec, type_name
from cupel.policy._toml import check_toml, toml_document
from cupel.scorers._base import Scorer
from cupel.slicers import GreedySlice
from cupel.slicers._base import Slicer

__all__ = ["Policy"]

if TYPE_CHECKING:
    Overflow: TypeAlias = OverflowStrategy
else:
    Overflow = choice(OverflowStrategy)

_PLACERS: dict[str, type] = {type_name(cls): cls for cls in PLACERS}


def _placer(value: Any) -> Any:
    if isinstance(value, str):
        name = normalize_name(value)
        if name == "ushaped":
            name = "u_shaped"
        if name in _PLACERS:
            return name
    raise ValueError(f"must be 'chronological' or 'u_shaped' (or 'u-shaped'), got {value!r}")


class Policy(Spec):
    """A declarative pipeline configuration; :meth:`build` turns it into a
    :class:`~cupel.Pipeline`.

    Fields: ``scorer`` (required; any :data:`ScorerSpec`), ``slicer`` (default greedy),
    ``placer`` (``"chronological"`` or ``"u_shaped"``; ``"u-shaped"`` is accepted),
    ``deduplication`` (default true), ``overflow_strategy`` (``"throw"`` — the default —,
    ``"truncate"`` or ``"proceed"``) and optional ``name`` / ``description``. Component
    specs may be given as a type name alone (``"scorer": "recency"``). Unknown keys are
    errors. Every component is built once during validation, so constructor errors
    surface at load time as a :class:`PolicyError` naming the path.

    >>> p = Policy(scorer=RecencySpec(), placer="U-Shaped", overflow_strategy="Truncate")
    >>> p.to_dict()
    {'scorer': {'type': 'recency'}, 'slicer': {'type': 'greedy'}, 'placer': 'u_shaped', \
'deduplication': True, 'overflow_strategy': 'truncate'}
    """

    name: Annotated[str, Strict()] | None = None
    description: Annotated[str, Strict()] | None = None
    scorer: ScorerSpec
    slicer: SlicerSpec = Field(default_factory=lambda: spec_of(GreedySlice)())
    placer: Annotated[Literal["chronological", "u_shaped"], BeforeValidator(_placer)] = (
        "chronological"
    )
    deduplication: Annotated[bool, Strict()] = True
    overflow_strategy: Overflow = OverflowStrategy.THROW

    @model_validator(mode="after")
    def _build_eagerly(self) -> Policy:
        self.scorer._build("scorer")
        self.slicer._build("slicer")
        return self

    def replace(self, **changes: Any) -> Policy:
        """A validated copy with some fields replaced (``model_copy(update=...)`` would
        skip validation).

        >>> Policy(scorer="recency").replace(placer="u-shaped", scorer="priority").to_dict()
        {'scorer': {'type': 'priority'}, 'slicer': {'type': 'greedy'}, 'placer': 'u_shaped', \
'deduplication': True, 'overflow_strategy': 'throw'}
        """
        for key in changes:
            if key not in type(self).model_fields:
                allowed = ", ".join(type(self).model_fields)
                raise fail(key, f"unknown key; allowed keys here: {allowed}", changes[key])
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**current, **changes})

    # -- building ---------------------------------------------------------------------
    def build_scorer(self) -> Scorer:
        """A fresh scorer as configured."""
        return self.scorer._build("scorer")

    def build_slicer(self) -> Slicer:
        """A fresh slicer as configured."""
        slicer: Slicer = self.slicer._build("slicer")
        return slicer

    def build_placer(self) -> Placer:
        """A fresh placer as configured."""
        placer: Placer = _PLACERS[self.placer]()
        return placer

    def build(self) -> Pipeline:
        """A new :class:`~cupel.Pipeline` with freshly built components."""
        return Pipeline(
            self.build_scorer(),
            self.build_slicer(),
            self.build_placer(),
            deduplication=self.deduplication,
            overflow_strategy=self.overflow_strategy,
        )

    # -- serialization ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON-compatible form: every field, ``None`` values left out."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The policy as JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def to_toml(self) -> str:
        """The policy as TOML text. Custom scorer ``params`` must be TOML-expressible (no
        ``None``, which TOML cannot write); otherwise a :class:`PolicyError` names the
        offending value's path (``scorer.params['boost']``)."""
        data = self.model_dump(mode="python", exclude_none=True)
        check_toml(data, "", free=False)
        return toml_document(data)

    def save(self, path: str | Path) -> None:
        """Write the policy to ``path`` as ``.json`` or ``.toml`` (chosen by the suffix)."""
        target = Path(path)
        suffix = _suffix(target)
        text = self.to_json() + "\n" if suffix == ".json" else self.to_toml()
        target.write_text(text, encoding="utf-8")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Validate a policy from its dict form; errors name the path."""
        if not isinstance(data, Mapping):
            raise fail("", f"expected a table/object, got {type(data).__name__} {data!r}", data)
        for key in data:
            if not isinstance(key, str):
                raise fail("", f"keys must be strings, got {key!r}", key)
        return cls(**data)

    @classmethod
    def from_json(cls, text: str | bytes) -> Policy:
        """Parse a policy from JSON text."""
        return cls.from_dict(_parsed(json.loads, json.JSONDecodeError, "JSON", text))

    @classmethod
    def from_toml(cls, text: str | bytes) -> Policy:
        """Parse a policy from TOML text (or UTF-8 bytes)."""
        import tomli

        if isinstance(text, (bytes, bytearray)):
            text = _utf8(bytes(text), "TOML")
        if not isinstance(text, str):
            raise fail("", f"TOML must be given as str or bytes, got {type(text).__name__}", text)
        return cls.from_dict(_parsed(tomli.loads, tomli.TOMLDecodeError, "TOML", text))

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        """Read a ``.json`` or ``.toml`` policy file."""
        source = Path(path)
        suffix = _suffix(source)
        try:
            data = source.read_bytes()
        except IsADirectoryError:
            raise fail("", f"policy file {str(source)!r} is a directory", str(source)) from None
        text = _utf8(data, f"policy file {str(source)!r}")
        return cls.from_json(text) if suffix == ".json" else cls.from_toml(text)


def _parsed(
    loads: Callable[[Any], Any], error: type[Exception], language: str, text: str | bytes
) -> Any:
    """``loads(text)``, its syntax ``error`` and a recursion overflow as policy errors."""
    try:
        return loads(text)
    except error as exc:
        raise fail("", f"invalid {language}: {exc}", text) from None
    except RecursionError:
        limit = f"policies may nest at most {MAX_POLICY_DEPTH} tables/arrays"
        raise fail("", f"nested too deeply to parse ({limit})", None) from None


def _utf8(data: bytes, what: str) -> str:
    """``data`` decoded as UTF-8, or a policy error saying where it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        rule = f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise fail("", rule, None) from None


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        rule = f"policy file {str(path)!r}: the suffix must be .json or .toml, got {path.suffix!r}"
        raise fail("", rule, str(path))
    return suffix
