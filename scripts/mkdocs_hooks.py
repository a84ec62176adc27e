"""MkDocs hooks for the documentation site (``hooks:`` in ``mkdocs.yml``).

Two pages of the repository live outside ``docs/`` because they belong next to what they
describe: ``conformance/README.md`` and ``CHANGELOG.md``. The site publishes them as
``conformance.md`` and ``changelog.md`` (generated here, not copied into ``docs/``), and
guide links to them (``../conformance/README.md``, written so they also work when the
Markdown is read in the repository) are pointed at those pages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
PAGES = {
    "conformance.md": ROOT / "conformance" / "README.md",
    "changelog.md": ROOT / "CHANGELOG.md",
}
LINKS = {
    "../conformance/README.md": "conformance.md",
    "../CHANGELOG.md": "changelog.md",
}


def on_files(files: Files, config: Any) -> Files:
    for uri, source in PAGES.items():
        files.append(File.generated(config, uri, content=source.read_text(encoding="utf-8")))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    for outside, inside in LINKS.items():
        markdown = markdown.replace(f"]({outside})", f"]({inside})").replace(
            f"]({outside}#", f"]({inside}#"
        )
    return markdown
