"""A griffe extension for the API reference (``mkdocs.yml``): docstrings as Markdown.

cupel's docstrings are written for ``help()`` and doctest: examples are bare ``>>>``
blocks, tables are reST simple tables and cross-references are reST roles
(``:class:`~cupel.Pipeline```). Rendered as Markdown, a doctest's output such as
``['b', 'a']`` would read as a broken link and a table as one paragraph. This extension
fences every doctest block as ``pycon`` code, turns simple tables into Markdown tables
and roles into inline code (``~`` keeps the last name only); the docstrings themselves
stay as they are. :class:`ModelFields` gives the pydantic models their fields'
signature.
"""

from __future__ import annotations

import importlib
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):`(~?)([^`]+)`")
BORDER = re.compile(r"^(\s*)(=+)( +=+)+\s*$")


def _columns(border: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"=+", border)]


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    cells = []
    for i, (start, _) in enumerate(spans):
        end = spans[i + 1][0] if i + 1 < len(spans) else len(line)
        cells.append(line[start:end].strip())
    return cells


def simple_tables(lines: list[str]) -> list[str]:
    """reST simple tables (``=== ===`` borders, one header row) as Markdown tables; a row
    whose first cell is empty continues the row above."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = BORDER.match(lines[i])
        ends = [j for j in range(i + 1, len(lines)) if lines[j].strip() == lines[i].strip()]
        if match is None or len(ends) < 2:
            out.append(lines[i])
            i += 1
            continue
        header_end, table_end = ends[0], ends[1]
        spans = _columns(lines[i])
        rows: list[list[str]] = []
        for j in list(range(i + 1, header_end)) + list(range(header_end + 1, table_end)):
            if not lines[j].strip():
                continue
            cells = _cells(lines[j], spans)
            if rows and not cells[0] and j > header_end + 1:
                rows[-1] = [
                    f"{a}{b}" if a.endswith("_") else f"{a} {b}".strip()
                    for a, b in zip(rows[-1], cells, strict=True)
                ]
            else:
                rows.append(cells)
        indent = match.group(1)
        header_rows = sum(1 for j in range(i + 1, header_end) if lines[j].strip())
        for k, row in enumerate(rows):
            out.append(indent + "| " + " | ".join(row) + " |")  # pipes stay in code spans
            if k == header_rows - 1:
                out.append(indent + "|" + "---|" * len(spans))
        out.append("")
        i = table_end + 1
    return out


def _role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def fence_doctests(text: str) -> str:
    """``text`` with each run of doctest lines (from ``>>>`` to the next blank line)
    inside a ``pycon`` fence, and reST roles as inline code."""
    out: list[str] = []
    lines = simple_tables(text.split("\n"))
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if not in_fence and (stripped == ">>>" or stripped.startswith(">>> ")):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += [f"{indent}```pycon", *block, f"{indent}```"]
            continue
        out.append(line if in_fence else ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class DoctestFences(griffe.Extension):
    """Fence doctests and flatten reST roles in every docstring the reference renders."""

    def on_object(self, *, obj: griffe.Object, loader: Any, **kwargs: Any) -> None:
        _convert(obj)

    def on_package(self, *, pkg: griffe.Module, loader: Any, **kwargs: Any) -> None:
        _convert(pkg)  # a top-level package is not always passed to on_object


def _convert(obj: griffe.Object) -> None:
    docstring = obj.docstring
    if docstring is not None and not getattr(docstring, "_cupel_fenced", False):
        docstring.value = fence_doctests(docstring.value)
        docstring._cupel_fenced = True  # type: ignore[attr-defined]


class ModelFields(griffe.Extension):
    """Pydantic models whose ``__init__`` takes ``**data`` (``ContextItem``,
    ``ContextBudget``: they re-raise validation errors as cupel errors) get the signature
    their fields define, keyword-only with types and defaults, and each documented field
    shows its type and default instead of the ``Field(...)`` call of the source."""

    def on_class(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        init = cls.members.get("__init__")
        if not isinstance(init, griffe.Function) or [p.name for p in init.parameters] != [
            "self",
            "data",
        ]:
            return
        model = getattr(importlib.import_module(cls.module.path), cls.name, None)
        fields = getattr(model, "model_fields", None)
        if not fields:
            return
        params = [init.parameters["self"]]
        for name, info in fields.items():
            annotation = _type_name(info.annotation)
            default = None if info.is_required() else _default(info)
            params.append(
                griffe.Parameter(
                    name,
                    annotation=annotation,
                    kind=griffe.ParameterKind.keyword_only,
                    default=default,
                )
            )
            member = cls.members.get(name)
            if isinstance(member, griffe.Attribute):
                member.annotation = annotation
                member.value = default
        init.parameters = griffe.Parameters(*params)


def _type_name(annotation: Any) -> str:
    """The annotation as a reader writes it: ``int | None`` for
    ``Optional[Annotated[int, Strict()]]``, ``datetime`` for ``datetime.datetime``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if annotation is type(None):
        return "None"
    if annotation is Ellipsis:
        return "..."
    if annotation is Any:
        return "Any"
    if origin is not None:
        return f"{_type_name(origin)}[{', '.join(_type_name(arg) for arg in args)}]"
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _default(info: Any) -> str:
    factory = info.default_factory
    value = info.default if factory is None else factory()
    if isinstance(value, Mapping) and not value:
        return "{}"
    return repr(value)
