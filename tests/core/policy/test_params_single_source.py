"""A component's parameters live in its constructor signature alone: ``repr``,
``get_params()``, the policy table, the conformance key checker and builders and the
command line's vocabulary are derived from it. So adding a scorer parameter touches the
scorer class plus its tests, which the first test shows with a parameter added in a
subclass and nowhere else."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

import pytest

from cupel import KindScorer, PolicyError, RecencyWindowSlice
from cupel._params import Configurable, NonNegative, describe, params
from cupel.cli import _config
from cupel.conformance import _builders, _keys
from cupel.policy import _derive
from cupel.policy._specs import CURVES, PLACERS, SCORERS, SLICERS, type_name
from cupel.scorers import DecayCurve


class EmphasisedKindScorer(KindScorer):
    """A scorer with one parameter more than :class:`KindScorer`, added in the
    constructor only."""

    def __init__(
        self, weights: Mapping[str, NonNegative] | None = None, *, emphasis: NonNegative = 1.0
    ) -> None:
        super().__init__(weights)
        self.emphasis = emphasis


@pytest.fixture
def emphasised_spec() -> Iterator[type[_derive.ComponentSpec]]:
    spec = _derive.spec_of(EmphasisedKindScorer, tag="emphasised_kind")
    yield spec
    _derive._SPECS.pop(EmphasisedKindScorer)  # the policy layer's cache: leave it as it was


def test_a_new_constructor_parameter_reaches_every_vocabulary(
    emphasised_spec: type[_derive.ComponentSpec],
) -> None:
    assert [p.name for p in params(EmphasisedKindScorer)] == ["weights", "emphasis"]
    scorer = EmphasisedKindScorer({"memory": 1.0}, emphasis=2.5)
    assert repr(scorer) == "EmphasisedKindScorer(weights={'memory': 1.0}, emphasis=2.5)"
    assert repr(EmphasisedKindScorer(emphasis=1.0)) == "EmphasisedKindScorer()"
    assert scorer.get_params()["emphasis"] == 2.5
    # The policy table: a key with the annotation's bounds, passed to the constructor.
    assert set(emphasised_spec.model_fields) == {"type", "weights", "emphasis"}
    built = emphasised_spec(type="emphasised_kind", emphasis=2.5)._build("scorer")
    assert type(built) is EmphasisedKindScorer and built.emphasis == 2.5
    with pytest.raises(PolicyError, match=r"emphasis: must be >= 0, got -1"):
        emphasised_spec(type="emphasised_kind", emphasis=-1)
    # The conformance key checker allows it and the builders read it from a vector table.
    assert "emphasis" in _keys.scorer_keys((EmphasisedKindScorer,))
    assert "emphasis" not in _keys.scorer_keys()
    assert _builders._fields(emphasised_spec, {"type": "x", "emphasis": 2.5}, "scorer") == {
        "emphasis": 2.5
    }
    # The command line offers it (its parameters all have defaults, so no flag is needed).
    assert _config._offered((EmphasisedKindScorer,)) == ("emphasised-kind",)


SPELLED_OUT = {
    RecencyWindowSlice: (
        RecencyWindowSlice(block_key=None),
        RecencyWindowSlice(block_key="x", scored_share=0.5, low_water=0.2),
    )
}
"""Instances besides the default of the classes that still spell out their ``repr``."""


@pytest.mark.parametrize("cls", [*SCORERS, *SLICERS, *PLACERS], ids=type_name)
def test_every_builtin_derives_repr_and_params_from_its_constructor(cls: type) -> None:
    assert issubclass(cls, Configurable)
    assert cls.get_params is Configurable.get_params
    if cls.__repr__ is not Configurable.__repr__:  # one spelled out says what is derived
        for instance in (cls(), *SPELLED_OUT.get(cls, ())):
            assert repr(instance) == describe(instance)


@pytest.mark.parametrize("cls", CURVES, ids=type_name)
def test_every_decay_curve_is_a_dataclass_of_its_parameters(cls: type) -> None:
    assert dataclasses.is_dataclass(cls) and "__repr__" not in vars(DecayCurve)
    assert [f.name for f in dataclasses.fields(cls)] == [p.name for p in params(cls)]


@pytest.mark.parametrize("cls", [*SCORERS, *SLICERS, *CURVES], ids=type_name)
def test_every_builtin_policy_table_is_its_constructor(cls: type) -> None:
    spec = _derive.spec_of(cls)
    assert _derive.specs()[cls] is spec and spec.component is cls
    assert [rule.param for rule in spec.rules] == [p.name for p in params(cls)]
    keys = [key for rule in spec.rules for key, _, _ in rule.fields]
    assert [key for key in spec.model_fields if key != "type"] == keys


@pytest.mark.parametrize("cls", SCORERS, ids=type_name)
def test_conformance_reads_every_scorer_parameter(cls: type) -> None:
    spec = _derive.spec_of(cls)
    assert _builders._SCORER_SPECS[type_name(cls)] is spec
    assert set(spec.model_fields) <= _keys.scorer_keys()


@pytest.mark.parametrize("cls", SLICERS, ids=type_name)
def test_conformance_reads_every_slicer_parameter(cls: type) -> None:
    spec = _derive.spec_of(cls)
    assert _builders._SLICER_SPECS[type_name(cls)] is spec
    spelled = {_keys.SLICER_SPELLING.get(key, key) for key in spec.model_fields} - {"type"}
    assert spelled <= _keys.slicer_keys()


def test_the_command_line_offers_the_components_its_flags_can_configure() -> None:
    def configurable(cls: type) -> bool:
        return all(
            key in _config.FLAGS
            for rule in _derive.spec_of(cls).rules
            for key, _, _ in rule.fields
            if _derive.spec_of(cls).model_fields[key].is_required()
        )

    expected = tuple(type_name(c).replace("_", "-") for c in SCORERS if configurable(c))
    assert _config.scorer_names() == expected and "decay" in expected and "tag" in expected
    assert "scaled" not in expected  # its inner scorer has no flag
    assert _config.slicer_names() == tuple(
        type_name(c).replace("_", "-") for c in SLICERS if configurable(c)
    )
    assert _config.placer_names() == tuple(type_name(c).replace("_", "-") for c in PLACERS)
    # Each flag sets a parameter some offered component has.
    keys = {key for cls in (*SCORERS, *SLICERS) for key in _derive.spec_of(cls).model_fields}
    assert set(_config.FLAGS) <= keys
