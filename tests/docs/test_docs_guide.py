"""Every python block of the README and of docs/ runs as written, page by page, and the
outputs the page claims are what it prints.

A page's blocks run in order in one namespace, as a reader runs them in a notebook
(top-level ``await`` allowed, one event loop per page). A claimed output is a comment on a
``print(...)`` line (``print(x)  # 42``) or the comment lines right below it; the claims of a
block must appear, in order, among the lines it prints (``...`` in a claim stands for any
text; `` — `` starts commentary that is not output).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


ALL_PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
PAGES = [page for page in ALL_PAGES if blocks(ROOT / page)]  # pages with python blocks


def test_the_guide_pages_have_runnable_examples() -> None:
    """The README and the guide's main pages each carry python blocks (checked below);
    reference pages of tables only may have none."""
    assert {"README.md", "docs/index.md"} <= set(PAGES), PAGES
    assert len(PAGES) >= len(ALL_PAGES) // 2, (PAGES, ALL_PAGES)


def claims(block: str) -> list[str]:
    """The outputs ``block`` claims, in order."""
    out: list[str] = []
    after_print = False
    for line in block.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            if after_print:
                out.append(stripped[1:].strip())
            continue
        after_print = stripped.startswith("print(")
        if after_print and "  # " in line:
            out.append(line.split("  # ", 1)[1].strip())
    return [claim.split(" — ")[0].strip() for claim in out]


def claim_pattern(claim: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in claim.split("...")))


def unmatched(expected: list[str], printed: list[str]) -> str | None:
    """The first claim not found, in order, among the printed lines (``None``: all are)."""
    position = 0
    for claim in expected:
        pattern = claim_pattern(claim)
        while position < len(printed) and not pattern.fullmatch(printed[position].strip()):
            position += 1
        if position == len(printed):
            return claim
        position += 1
    return None


def test_claims_are_read_from_print_lines() -> None:
    block = 'x = 1  # not a claim\nprint(x)  # 1\nprint("a\\nb")\n# a\n# b — commentary\n'
    assert claims(block) == ["1", "a", "b"]
    assert unmatched(["a", "b"], ["a", "b"]) is None
    assert unmatched(["b", "a"], ["a", "b"]) == "a"
    assert unmatched(["x ... z"], ["x y z"]) is None


@pytest.mark.parametrize("doc", PAGES)
def test_code_blocks_run_as_written(doc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    found = blocks(ROOT / doc)
    monkeypatch.chdir(ROOT)
    keep_handlers = _llamaindex_handlers()
    namespace: dict[str, object] = {"__name__": "__docs__"}
    loop = asyncio.new_event_loop()
    try:
        for number, block in enumerate(found, start=1):
            name = f"{doc} block {number}"
            code = compile(block, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                outcome = eval(code, namespace)  # blocks build on each other, like a reader
                if inspect.iscoroutine(outcome):
                    loop.run_until_complete(outcome)
            missing = unmatched(claims(block), printed.getvalue().splitlines())
            assert missing is None, f"{name} claims {missing!r}; printed:\n{printed.getvalue()}"
    finally:
        loop.close()
        if keep_handlers is not None:  # a page may add an event handler: not to other tests
            from llama_index.core.instrumentation import get_dispatcher

            get_dispatcher().event_handlers[:] = keep_handlers


def _llamaindex_handlers() -> list[object] | None:
    try:
        from llama_index.core.instrumentation import get_dispatcher
    except ImportError:
        return None
    return list(get_dispatcher().event_handlers)
