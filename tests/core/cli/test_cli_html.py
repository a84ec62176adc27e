"""``--html FILE``: a self-contained page of the selection, checked by parsing it."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from cli_testkit import ITEMS, assert_one_line_error, run, run_process, write_items

HOSTILE = "<script>alert('pwned')</script> & \"quotes\""


@dataclass
class Row:
    """One ``li.item`` row as parsed from the page."""

    section: str
    group: str | None
    attrs: dict[str, str]
    token_width: float | None = None
    score_width: float | None = None
    text: list[str] = field(default_factory=list)


class Page(HTMLParser):
    """Collects the item rows (by section and excluded group), tags and attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.rows: list[Row] = []
        self.groups: dict[str, str] = {}  # reason -> heading text
        self.section = ""
        self.group: str | None = None
        self.bar: str | None = None
        self.row: Row | None = None
        self.in_h3 = False
        self.title = ""
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        classes = a.get("class", "").split()
        if tag == "title":
            self.in_title = True
        if tag == "section" and a.get("id"):
            self.section = a["id"]
        if tag == "section" and "group" in classes:
            self.group = a["data-reason"]
            self.groups[self.group] = ""
        if tag == "h3":
            self.in_h3 = True
        if tag == "li" and "item" in classes:
            self.row = Row(self.section, self.group, a)
            self.rows.append(self.row)
        if tag == "div" and "bar" in classes:
            self.bar = "tokens" if "tokens" in classes else "score"
        if tag == "span" and self.bar is not None and self.row is not None:
            match = re.fullmatch(r"width:([0-9.]+)%", a.get("style", ""))
            assert match, a
            width = float(match.group(1))
            if self.bar == "tokens":
                self.row.token_width = width
            else:
                self.row.score_width = width
            self.bar = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "li":
            self.row = None
        if tag == "h3":
            self.in_h3 = False
        if tag == "title":
            self.in_title = False

    def handle_data(self, data: str) -> None:
        if self.row is not None:
            self.row.text.append(data)
        if self.in_h3 and self.group is not None:
            self.groups[self.group] += data
        if self.in_title:
            self.title += data

    def window(self) -> list[Row]:
        return [r for r in self.rows if r.section == "window"]

    def excluded(self) -> list[Row]:
        return [r for r in self.rows if r.section == "excluded"]


def parse(path: Path) -> tuple[str, Page]:
    text = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(text)
    page.close()
    return text, page


def content_of(row: Row) -> str:
    return row.text[-1]


def test_select_html_shows_the_window_in_placed_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    page_path = tmp_path / "selection.html"
    status, out, err = run(
        capsys, "select", str(path), "--max-tokens", "1000", "--html", str(page_path)
    )
    assert status == 0 and f"cupel: wrote {page_path}" in err
    window = [i["content"] for i in json.loads(out)]
    _, page = parse(page_path)
    assert [content_of(r) for r in page.window()] == window
    assert [int(r.attrs["data-tokens"]) for r in page.window()] == [30, 40, 50, 25, 10]
    assert page.title == f"cupel select: {path}"


def test_token_bars_are_proportional_to_tokens(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    page_path = tmp_path / "p.html"
    run(capsys, "select", str(path), "--max-tokens", "100", "--html", str(page_path))
    _, page = parse(page_path)
    rows = page.rows
    largest = max(int(r.attrs["data-tokens"]) for r in rows)
    assert largest == 50
    for row in rows:
        assert row.token_width == pytest.approx(100.0 * int(row.attrs["data-tokens"]) / largest)
    # Score bars span 0..1.
    for row in rows:
        assert row.score_width == pytest.approx(100.0 * float(row.attrs["data-score"]))


def test_excluded_items_are_grouped_by_reason_with_their_numbers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, [*ITEMS, {"content": "miscounted", "tokens": -3}])
    page_path = tmp_path / "p.html"
    run(capsys, "explain", str(path), "--max-tokens", "100", "--html", str(page_path))
    _, page = parse(page_path)
    by_group: dict[str | None, list[Row]] = {}
    for row in page.excluded():
        by_group.setdefault(row.group, []).append(row)
        assert row.attrs["data-reason"] == row.group
    assert {k: len(v) for k, v in by_group.items()} == {
        "BudgetExceeded": 2,
        "Deduplicated": 1,
        "NegativeTokens": 1,
    }
    assert "2 items · 70 tokens" in page.groups["BudgetExceeded"]
    assert "1 item · -3 tokens" in page.groups["NegativeTokens"]
    budget_text = ["".join(r.text) for r in by_group["BudgetExceeded"]]
    assert any("needs 40 tokens, 15 available" in t for t in budget_text)
    # explain adds the stage that excluded each item.
    assert all("at Slice" in t for t in budget_text)
    assert "at Deduplicate" in "".join(by_group["Deduplicated"][0].text)
    assert "at Classify" in "".join(by_group["NegativeTokens"][0].text)
    negative = by_group["NegativeTokens"][0]
    assert negative.token_width == 0.0


def test_content_is_escaped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = [
        {"content": HOSTILE, "tokens": 20, "kind": "<img src=x onerror=alert(1)>"},
        {"content": "x" * 200 + HOSTILE, "tokens": 500},
    ]
    path = write_items(tmp_path, rows)
    page_path = tmp_path / "p.html"
    status, _, _ = run(capsys, "select", str(path), "--max-tokens", "100", "--html", str(page_path))
    assert status == 0
    text, page = parse(page_path)
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in text
    assert [tag for tag, _ in page.tags].count("script") == 0
    assert content_of(page.window()[0]) == HOSTILE  # round-trips as text
    assert page.window()[0].attrs["data-kind"] == "<img src=x onerror=alert(1)>"
    # Long content folds into <details>, still escaped.
    long_row = page.excluded()[0]
    assert "".join(long_row.text).endswith(HOSTILE)
    assert "details" in [tag for tag, _ in page.tags]


def test_page_is_self_contained(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    page_path = tmp_path / "demo.html"
    status, out, _ = run(capsys, "demo", "--html", str(page_path))
    assert status == 0 and out.startswith("cupel demo: ")
    text, page = parse(page_path)
    tags = [tag for tag, _ in page.tags]
    assert tags.count("style") == 1
    assert not {"script", "link", "img", "iframe", "object"} & set(tags)
    assert not any("src" in attrs or "href" in attrs for _, attrs in page.tags)
    head = text[: text.index("</head>")]  # the content itself may mention URLs
    assert "url(" not in head and "@import" not in head and "http" not in head
    assert text.startswith("<!DOCTYPE html>")
    assert len(page.window()) > 40 and page.excluded()


def test_demo_page_matches_the_demo_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page_path = tmp_path / "demo.html"
    run(capsys, "demo", "--html", str(page_path))
    _, out, _ = run(capsys, "demo", "--report", "json")
    report = json.loads(out)["report"]
    _, page = parse(page_path)
    assert [content_of(r) for r in page.window()][:5] == [
        e["item"]["content"] for e in report["included"][:5]
    ]
    assert len(page.window()) == len(report["included"])
    assert len(page.excluded()) == len(report["excluded"])


def test_output_reserve_and_target_appear_on_the_map(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write_items(tmp_path, ITEMS)
    page_path = tmp_path / "p.html"
    run(
        capsys,
        "select",
        str(path),
        "--max-tokens",
        "200",
        "--target-tokens",
        "100",
        "--output-reserve",
        "50",
        "--html",
        str(page_path),
    )
    _, page = parse(page_path)
    spans = {a.get("class"): a.get("style") for tag, a in page.tags if tag == "span"}
    assert spans["reserve"] == "width:25.0000%"
    assert spans["target"] == "left:50.0000%"
    segments = [a for tag, a in page.tags if tag == "span" and "seg" in a.get("class", "")]
    widths = [float(a["style"][len("width:") : -1]) for a in segments]
    tokens = [int(r.attrs["data-tokens"]) for r in page.window()]
    assert widths == pytest.approx([100.0 * t / 200 for t in tokens])  # the bar is max_tokens
    assert sum(tokens) == 85


@pytest.mark.slow
def test_html_in_a_real_process(tmp_path: Path) -> None:
    path = write_items(tmp_path, ITEMS)
    page_path = tmp_path / "p.html"
    proc = run_process("explain", str(path), "--max-tokens", "100", "--html", str(page_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"cupel: wrote {page_path}\n"
    assert len(parse(page_path)[1].window()) == 3


@pytest.mark.parametrize("command", ["select", "explain", "demo"])
def test_unwritable_html_target_fails_before_running(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    path = write_items(tmp_path, ITEMS)
    args = [] if command == "demo" else [str(path), "--max-tokens", "100"]
    missing = tmp_path / "no-such-dir" / "p.html"
    assert_one_line_error(
        *run(capsys, command, *args, "--html", str(missing)), "--html", "no such directory"
    )
    assert_one_line_error(*run(capsys, command, *args, "--html", str(tmp_path)), "is a directory")


@pytest.mark.parametrize(
    "argv",
    [
        ["compare", "--max-tokens", "100", "--policy", "chat", "--policy", "rag"],
        ["min-budget", "--item", "It failed"],
    ],
)
def test_html_is_not_offered_where_there_is_no_single_selection(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]
) -> None:
    path = write_items(tmp_path, ITEMS)
    page = tmp_path / "x.html"
    assert_one_line_error(
        *run(capsys, argv[0], str(path), *argv[1:], "--html", str(page)),
        "unrecognized arguments: --html",
    )
    assert not page.exists()
