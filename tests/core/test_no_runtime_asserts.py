"""No ``assert`` statement in the distribution's packages (``cupel`` and the two adapters,
which sit beside it): asserts vanish under ``python -O``, so a runtime check written as one
is not a check at all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import cupel

PACKAGE = Path(cupel.__file__).resolve().parent
PACKAGES = [PACKAGE, PACKAGE.parent / "cupel_langchain", PACKAGE.parent / "cupel_llamaindex"]


@pytest.mark.parametrize("package", PACKAGES, ids=lambda path: path.name)
def test_the_package_has_no_assert_statements(package: Path) -> None:
    found = [
        f"{path.relative_to(package.parent)}:{node.lineno}"
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path)))
        if isinstance(node, ast.Assert)
    ]
    assert found == []


def test_the_scan_covers_the_core_modules_and_the_adapters() -> None:
    names = {path.name for path in PACKAGE.rglob("*.py")}
    assert {
        "pipeline.py",
        "classify.py",
        "_policy.py",
        "_derive.py",
        "analytics.py",
        "_model.py",
    } <= names
    assert (PACKAGES[1] / "_runnable.py").is_file() and (PACKAGES[2] / "_memory.py").is_file()
