"""docs/diagnostics.md: every python block runs, in order, in one namespace; test functions
the blocks define are called; printed output matches the text block that follows."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "diagnostics.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.DOTALL | re.MULTILINE)


def blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def test_the_page_has_python_examples() -> None:
    languages = [language for language, _ in blocks()]
    assert languages.count("python") >= 8


def test_every_python_block_runs_and_prints_what_the_page_shows() -> None:
    namespace: dict[str, object] = {"__name__": "docs_diagnostics"}
    found = blocks()
    called: list[str] = []
    for index, (language, source) in enumerate(found):
        if language != "python":
            continue
        before = set(namespace)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(source, f"{DOC.name}[block {index}]", "exec"), namespace)
            for name in sorted(set(namespace) - before):
                if name.startswith("test_") and callable(namespace[name]):
                    namespace[name]()  # type: ignore[operator]
                    called.append(name)
        printed = out.getvalue()
        if printed:
            following = found[index + 1] if index + 1 < len(found) else ("", "")
            assert following[0] == "text", f"block {index} prints but no output block follows"
            assert printed == following[1], f"block {index} printed:\n{printed}"
    assert called == [
        "test_failures_read_like_the_spec",
        "test_rag_window_keeps_sources_and_drops_the_log",
    ]
