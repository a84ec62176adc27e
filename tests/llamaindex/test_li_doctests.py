"""The examples in cupel_llamaindex's docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cupel_llamaindex

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(cupel_llamaindex.__path__, "cupel_llamaindex.")
)


@pytest.mark.parametrize("name", ["cupel_llamaindex", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


def test_the_public_components_have_examples() -> None:
    finder = doctest.DocTestFinder()
    for obj in (
        cupel_llamaindex.CupelNodePostprocessor,
        cupel_llamaindex.CupelChatMemory,
        cupel_llamaindex.nodes_to_items,
        cupel_llamaindex.messages_to_items,
    ):
        assert any(test.examples for test in finder.find(obj)), obj
