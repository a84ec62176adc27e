"""The python code blocks of the README and the user guide run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("doc", ["README.md", "docs/guide.md", "docs/counting.md"])
def test_code_blocks_run_in_order(doc: str) -> None:
    found = blocks(ROOT / doc)
    assert found, f"{doc} has no python blocks"
    namespace: dict[str, object] = {}
    for block in found:
        exec(compile(block, doc, "exec"), namespace)  # blocks build on each other, like a reader
