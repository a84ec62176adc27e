"""The examples in cupel_langchain's docstrings run and print what they claim."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import cupel_langchain

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(cupel_langchain.__path__, prefix="cupel_langchain.")
)


@pytest.mark.parametrize("name", ["cupel_langchain", *MODULES])
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}"


def test_the_public_components_have_examples() -> None:
    finder = doctest.DocTestFinder()
    for name in (
        "CupelMessageSelector",
        "CupelDocumentCompressor",
        "CupelRetriever",
        "select_messages_with_report",
        "tool_call_problems",
    ):
        tests = finder.find(getattr(cupel_langchain, name))
        assert any(t.examples for t in tests), name
