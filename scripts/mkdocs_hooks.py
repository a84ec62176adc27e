"""MkDocs hooks for the documentation site (``hooks:`` in ``mkdocs.yml``).

Two pages of the repository live outside ``docs/`` because they belong next to what they
describe: ``conformance/README.md`` and ``CHANGELOG.md``. The site publishes them as
``conformance.md`` and ``changelog.md`` (generated here, not copied into ``docs/``), and
guide links to them (``../conformance/README.md``, written so they also work when the
Markdown is read in the repository) are pointed at those pages.

Every page shows the distribution's version (``pyproject.toml``) in its footer, and links
the repository named by ``[project.urls] Repository`` there when ``mkdocs.yml`` sets no
``repo_url`` of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomli
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


def on_config(config: Any) -> Any:
    with (ROOT / "pyproject.toml").open("rb") as f:
        project = tomli.load(f)["project"]
    version = project["version"]
    config["copyright"] = f"{project['name']} {version} · {project['license']['text']} license"
    repository = project.get("urls", {}).get("Repository")
    if repository and not config.get("repo_url"):
        config["repo_url"] = repository
        config["repo_name"] = "/".join(repository.rstrip("/").split("/")[-2:])
    return config


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
