"""The documentation as users get it: a site that builds strictly, pages that stay inside
the repository, install lines that name the distribution, and a README whose two
quick-start commands are what CI runs."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
USER_FILES = [ROOT / "README.md", *DOCS, *sorted((ROOT / "docs" / "examples").glob("*.py"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.mark.slow
def test_site_builds_strictly(tmp_path: Path) -> None:
    """mkdocs build --strict: a broken link or anchor, a page missing from the nav or an
    API reference that does not resolve fails (``.ci/run`` runs the same build)."""
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    reference = (tmp_path / "reference" / "slicers" / "index.html").read_text(encoding="utf-8")
    assert "KnapsackSlice" in reference and "bucket_size" in reference
    # Doctest output is code, not a (broken) Markdown link.
    assert "language-pycon" in reference or "highlight" in reference
    assert (tmp_path / "conformance" / "index.html").exists()
    assert (tmp_path / "changelog" / "index.html").exists()
    assert (tmp_path / "images" / "report.png").exists()
    _assert_reference_pages(tmp_path)


def _page_text(path: Path) -> str:
    body = re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8"))
    return html.unescape(re.sub(r"\s+", " ", body))


def _assert_reference_pages(site: Path) -> None:
    """The models' fields with types and defaults, the version on every page, the
    adapters' component tables one row per component."""
    core = _page_text(site / "reference" / "core" / "index.html")
    assert "ContextItem(**data" not in core and "ContextBudget(**data" not in core
    for field in (
        "content: str",
        "tokens: int",
        "priority: int | None = None",
        "pinned: bool = False",
        "future_relevance_hint: float | None = None",
        "original_tokens: int | None = None",
        "metadata: dict[str, Any] = {}",
        "reserved_slots: dict[ContextKind, int] = {}",
        "estimation_safety_margin_percent: float = 0.0",
    ):
        assert field in core, field
    assert "Optional[" not in core and "Annotated[" not in core
    version = re.search(r'^version = "([^"]+)"', text(ROOT / "pyproject.toml"), re.MULTILINE)
    assert version is not None and f"cupel-context {version.group(1)}" in core
    langchain = (site / "reference" / "langchain" / "index.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr>\s*<td>(.*?)</td>", langchain, re.DOTALL)
    assert any("messages_to_items" in row for row in rows)
    assert not any(re.sub(r"<[^>]+>", "", row).strip() == "to_items" for row in rows)


@pytest.mark.parametrize("path", USER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_user_facing_files_stay_inside_the_repository(path: Path) -> None:
    body = text(path)
    assert "shared/" not in body and "WORKLOADS.md" not in body
    for target in LINK.findall(body):
        if target.startswith(("http://", "https://", "#", "mailto:")):
            continue
        resolved = (path.parent / target.split("#")[0]).resolve()
        assert resolved.is_relative_to(ROOT), (path, target)
        assert resolved.exists(), (path, target)


@pytest.mark.parametrize("path", USER_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_install_lines_name_the_distribution(path: Path) -> None:
    body = text(path)
    assert not re.search(r"pip install ['\"]?cupel(\[|\s|['\"]|$)", body, re.MULTILINE), path
    assert not re.search(r"['\"`]cupel\[", body), path


def test_readme_links_every_guide_page_and_shows_the_report() -> None:
    readme = text(ROOT / "README.md")
    for page in (
        "guide",
        "diagnostics",
        "policies",
        "cli",
        "langchain",
        "llamaindex",
        "performance",
    ):
        assert f"(docs/{page}.md)" in readme, page
    assert "![" in readme and "(docs/images/report.png)" in readme
    assert "pip install cupel-context" in readme


def test_cli_page_links_the_policy_format_to_the_policies_page() -> None:
    cli = text(ROOT / "docs" / "cli.md")
    (link,) = re.findall(r"\[policy format\]\(([^)]+)\)", cli)
    assert link.startswith("policies.md#")
    anchor = link.split("#", 1)[1]
    headings = re.findall(r"^#+ (.+)$", text(ROOT / "docs" / "policies.md"), re.MULTILINE)
    assert anchor in {
        re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-") for h in headings
    }


def test_cli_page_explains_undated_items_where_the_example_meets_them() -> None:
    cli = text(ROOT / "docs" / "cli.md")
    items = cli.split("```json file=items.jsonl", 1)[1].split("```", 1)[0]
    system = next(line for line in items.splitlines() if '"SystemPrompt"' in line)
    assert '"timestamp"' in system
    assert "without a timestamp last" in cli


def test_readme_quick_start_is_two_commands_and_ci_runs_the_second() -> None:
    readme = text(ROOT / "README.md")
    quick = readme.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = quick.strip().splitlines()
    assert len(commands) == 2
    assert commands[0].endswith("cupel demo")
    install, test = commands[1].split(" && ")[1:]
    ci = text(ROOT / ".ci" / "run")
    assert install.replace(".venv/bin/pip install", ".venv/bin/pip install -q") in ci
    assert test in ci
    assert "-c .ci/constraints.txt" in install
