"""No ``assert`` statement in the ``cupel`` package: asserts vanish under ``python -O``, so
a runtime check written as one is not a check at all."""

from __future__ import annotations

import ast
from pathlib import Path

import cupel

PACKAGE = Path(cupel.__file__).resolve().parent


def test_the_package_has_no_assert_statements() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path)))
        if isinstance(node, ast.Assert)
    ]
    assert found == []


def test_the_scan_covers_the_core_modules() -> None:
    names = {path.name for path in PACKAGE.rglob("*.py")}
    assert {
        "pipeline.py",
        "classify.py",
        "_policy.py",
        "_derive.py",
        "analytics.py",
        "_model.py",
    } <= names
