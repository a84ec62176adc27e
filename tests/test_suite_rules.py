"""The test suite's own rules (``tests/conftest.py``): property tests state CI's example
count through ``examples(n)`` so that the ``dev`` profile scales it, and ``.ci/run`` runs
every test, the slow ones included, at the ``ci`` profile's full counts."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import settings
from hypothesis_profiles import examples

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def test_property_tests_take_their_counts_from_the_profile() -> None:
    """A literal ``max_examples=400`` would run in full in the README's quick command."""
    literal = [
        f"{path.relative_to(ROOT)}:{node.value.lineno}"
        for path in sorted(TESTS.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.keyword)
        and node.arg == "max_examples"
        and isinstance(node.value, ast.Constant)
    ]
    assert literal == [], "use max_examples=examples(n) (tests/hypothesis_profiles.py)"


def test_ci_runs_the_full_counts_and_dev_a_tenth() -> None:
    loaded = settings.get_current_profile_name()
    try:
        settings.load_profile("ci")
        assert (settings.default.max_examples, examples(400), examples(15)) == (100, 400, 15)
        settings.load_profile("dev")
        assert (settings.default.max_examples, examples(400), examples(15)) == (10, 40, 2)
    finally:
        settings.load_profile(loaded)


def test_ci_runs_the_slow_tests_under_the_ci_profile() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    first_pytest = ci.index("python -m pytest")
    assert ci.index("export CUPEL_HYPOTHESIS_PROFILE=ci") < first_pytest
    assert '-m "slow and not packaging"' in ci
    assert "-m packaging tests/packaging" in ci
