"""Public paths for what private modules define (private).

:func:`publish` gives each exported class the public module it is documented under as its
``__module__`` (tracebacks, reprs and doctests show ``cupel.ItemError``, not
``cupel._errors.ItemError``); the first, most specific, package to publish a name wins.
The functions its body defines move with it, so a doctest finder looking at the public
module finds the class and its methods together; plain functions keep their module.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import FunctionType
from typing import Any

__all__ = ["publish"]


def publish(module: str, namespace: Mapping[str, Any], names: Iterable[str]) -> None:
    """Set ``__module__`` to ``module`` on the classes ``names`` picks from ``namespace``
    that a private cupel module defines."""
    for name in names:
        obj = namespace[name]
        if not isinstance(obj, type):
            continue
        defined_in = getattr(obj, "__module__", "") or ""
        parts = defined_in.split(".")
        if parts[0] == "cupel" and any(part.startswith("_") for part in parts):
            obj.__module__ = module
            for member in vars(obj).values():
                for function in _functions(member):
                    if function.__module__ == defined_in:
                        function.__module__ = module


def _functions(member: Any) -> Iterator[Any]:
    """The plain functions behind a class attribute (a method, a property's accessors, a
    class or static method)."""
    if isinstance(member, property):
        candidates: tuple[Any, ...] = (member.fget, member.fset, member.fdel)
    elif isinstance(member, (classmethod, staticmethod)):
        candidates = (member.__func__,)
    else:
        candidates = (member,)
    for candidate in candidates:
        if isinstance(candidate, FunctionType):
            yield candidate
