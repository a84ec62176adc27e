"""The ``--html`` report opened in a real headless Chromium: it loads without a single
error, requests nothing but itself, and lays out as intended. Also the script that makes
the README's screenshot. Without a browser these tests skip, except under
``CUPEL_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they fail."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from cli_testkit import ITEMS, cupel, write_items
from headless_browser import Browser, require_browser

pytestmark = pytest.mark.slow  # a headless browser

ROOT = Path(__file__).resolve().parents[3]
HOSTILE = "<script>alert('pwned')</script> <img src=x onerror=alert(1)> & \"quotes\""

LAYOUT = """(() => {
  const rows = [...document.querySelectorAll('li.row.item')];
  const box = (el) => el.getBoundingClientRect();
  const stats = [...document.querySelectorAll('.stat')].map((el) => Math.round(box(el).top));
  const map = box(document.querySelector('.map'));
  const segments = [...document.querySelectorAll('.map .seg')].map((el) => box(el).width);
  return {
    title: document.title,
    rows: rows.length,
    windowRows: document.querySelectorAll('#window li.row.item').length,
    excludedRows: document.querySelectorAll('#excluded li.row.item').length,
    invisible: rows.filter((r) => box(r).width === 0 || box(r).height === 0).length,
    zeroTokenBars: rows.filter((r) => Number(r.dataset.tokens) > 0
        && box(r.querySelector('.bar.tokens > span')).width === 0).length,
    overflowX: document.documentElement.scrollWidth - window.innerWidth,
    statsOnOneLine: new Set(stats).size === 1 && stats.length === 4,
    mapWidth: map.width,
    segmentsWidth: segments.reduce((a, b) => a + b, 0),
    scripts: document.scripts.length,
    images: document.images.length,
    text: document.body.innerText,
  };
})()"""


def png_size_and_colours(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct byte values of the pixel data) of a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            chunks.append(data[pos + 8 : pos + 8 + length])
        pos += 12 + length
    pixels = zlib.decompress(b"".join(chunks))
    return width, height, len(set(pixels))


@pytest.fixture(scope="module")
def browser_path() -> str:
    return require_browser()


def test_demo_report_renders_without_errors(browser_path: str, tmp_path: Path) -> None:
    page = tmp_path / "demo.html"
    proc = cupel("demo", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    with Browser(browser_path) as browser:
        session, load = browser.open(page)
        assert load.problems == []
        assert load.requests == [page.resolve().as_uri()]  # self-contained: nothing else
        layout = browser.evaluate(session, LAYOUT)
        shot = browser.screenshot(session)
    assert layout["title"] == "cupel demo: demo_chat.jsonl"
    assert layout["rows"] == 273  # every candidate unit: 57 in the window, 216 excluded
    assert (layout["windowRows"], layout["excludedRows"]) == (57, 216)
    assert layout["invisible"] == 0 and layout["zeroTokenBars"] == 0
    assert layout["overflowX"] <= 0, "the page scrolls sideways"
    assert layout["statsOnOneLine"]
    assert 0 < layout["segmentsWidth"] <= layout["mapWidth"] + 1
    assert layout["scripts"] == 0 and layout["images"] == 0
    assert "OutsideWindow" in layout["text"] and "needs " in layout["text"]
    width, height, colours = png_size_and_colours(shot)
    assert width == 1280 and height > 900 and colours > 50


def test_hostile_content_renders_as_text(browser_path: str, tmp_path: Path) -> None:
    rows = [
        *ITEMS,
        {
            "content": HOSTILE,
            "tokens": 7,
            "kind": "<b>Kind</b>",
            "timestamp": "2025-01-01T11:00:00Z",
        },
    ]
    path = write_items(tmp_path, rows)
    page = tmp_path / "explain.html"
    proc = cupel("explain", str(path), "--max-tokens", "100", "--html", str(page))
    assert proc.returncode == 0, proc.stderr
    with Browser(browser_path, width=800) as browser:  # a narrow window too
        session, load = browser.open(page)
        assert load.problems == []
        assert load.requests == [page.resolve().as_uri()]
        layout = browser.evaluate(session, LAYOUT)
    assert layout["scripts"] == 0 and layout["images"] == 0  # nothing injected ran or loaded
    assert HOSTILE in layout["text"] and "<b>Kind</b>" in layout["text"]
    assert layout["rows"] == len(rows) and layout["invisible"] == 0
    assert layout["overflowX"] <= 0


def test_screenshot_script_makes_the_readme_picture(browser_path: str, tmp_path: Path) -> None:
    out = tmp_path / "report.png"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "screenshot_report.py"),
            "--out",
            str(out),
            "--browser",
            browser_path,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    width, height, colours = png_size_and_colours(out.read_bytes())
    assert (width, height) == (1280, 860) and colours > 50
    # The README shows the committed picture, made by this script.
    assert "docs/images/report.png" in (ROOT / "README.md").read_text(encoding="utf-8")
    committed = ROOT / "docs" / "images" / "report.png"
    assert png_size_and_colours(committed.read_bytes())[:2] == (1280, 860)
