"""docs/policies.md stays true: its python blocks run in order, and its JSON and TOML
examples are valid policies describing the same configuration."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from cupel.policy import Policy

DOC = Path(__file__).resolve().parents[3] / "docs" / "policies.md"


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


def test_python_blocks_run_in_order_and_print_what_the_comments_say() -> None:
    blocks = fenced("python")
    assert len(blocks) >= 8
    namespace: dict[str, object] = {}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        for block in blocks:
            exec(compile(block, str(DOC), "exec"), namespace)
    printed = output.getvalue()
    assert "scorer.scorers[2].weight: must be > 0, got -1" in printed
    assert "item-a [('priority', 'Included'), ('reflexive', 'Excluded'), ('rag', 'Excluded')]" in (
        printed
    )
    assert "item-b [('priority', 'Excluded'), ('reflexive', 'Included'), ('rag', 'Included')]" in (
        printed
    )
    assert "count 2.0 1.0 2.0 True True" in printed
    assert "['note p2', 'note p1']" in printed
    assert "GetMarginalItems requires monotonic item inclusion." in printed


def test_json_and_toml_examples_are_the_same_policy_as_the_python_one() -> None:
    (json_text,) = fenced("json")
    (toml_text,) = fenced("toml")
    from_json = Policy.from_json(json_text)
    from_toml = Policy.from_toml(toml_text)
    assert from_json == from_toml
    namespace: dict[str, object] = {}
    exec(compile(fenced("python")[0], str(DOC), "exec"), namespace)
    assert namespace["support"] == from_json


def test_every_preset_is_in_the_table() -> None:
    from cupel.presets import PRESET_NAMES

    text = DOC.read_text(encoding="utf-8")
    for name in PRESET_NAMES:
        assert f"| `{name}`" in text
