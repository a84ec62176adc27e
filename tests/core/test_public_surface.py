"""The public surface: every class a public module exports shows its public path
(``cupel.ItemError``, not ``cupel._errors.ItemError``), and the error tree drawn in
``cupel``'s errors docstring is the real hierarchy, every error included."""

from __future__ import annotations

import importlib
import pkgutil
import re
import traceback

import pytest

import cupel
from cupel import _errors


def _public_modules() -> list[str]:
    names = ["cupel"]
    for info in pkgutil.walk_packages(cupel.__path__, "cupel."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


@pytest.mark.parametrize("module_name", _public_modules())
def test_exported_classes_show_a_public_module(module_name: str) -> None:
    module = importlib.import_module(module_name)
    private = {
        name: obj.__module__
        for name in getattr(module, "__all__", ())
        if isinstance(obj := getattr(module, name), type)
        and obj.__module__.startswith("cupel")
        and any(part.startswith("_") for part in obj.__module__.split("."))
    }
    assert private == {}


def _drawn_tree() -> dict[str, str]:
    """Error name → its parent's name, as the docstring's tree draws them."""
    doc = _errors.__doc__ or ""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^(\s*(?:[│ ]   )*(?:[├└]── )?)([A-Z]\w*Error)\b", line)
        if match is None:
            continue
        depth, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            parents[name] = stack[-1][1]
        stack.append((depth, name))
    return parents


def _error_classes() -> list[type[BaseException]]:
    found, todo = [], [cupel.CupelError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return [c for c in found if c.__module__ == "cupel"]  # leave out test-made subclasses


def test_the_error_tree_in_the_docstring_is_the_hierarchy() -> None:
    drawn = _drawn_tree()
    errors = _error_classes()
    assert len(errors) >= 15
    for cls in errors:
        assert cls.__name__ in cupel.__all__ and getattr(cupel, cls.__name__) is cls
        if cls is not cupel.CupelError:
            cupel_bases = [b for b in cls.__bases__ if issubclass(b, cupel.CupelError)]
            assert drawn.get(cls.__name__) == cupel_bases[0].__name__, cls
    assert set(drawn) == {c.__name__ for c in errors} - {"CupelError"}


def test_a_traceback_names_the_public_path() -> None:
    with pytest.raises(cupel.ItemError) as info:
        cupel.ContextItem(content="x", tokens="many")  # type: ignore[arg-type]
    (line,) = traceback.format_exception_only(type(info.value), info.value)
    assert line.startswith("cupel.ItemError: ")
