"""The examples in cupel's docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cupel

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(cupel.__path__, prefix="cupel.")
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", ["cupel", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


def test_every_public_module_has_examples() -> None:
    with_examples = [
        name
        for name in MODULES
        if doctest.DocTestFinder().find(importlib.import_module(name))
        and any(t.examples for t in doctest.DocTestFinder().find(importlib.import_module(name)))
    ]
    assert len(with_examples) >= 15
