"""Make ``docs/images/report.png``: the HTML report of ``cupel demo``, in headless Chromium.

    python scripts/screenshot_report.py                      # writes docs/images/report.png
    python scripts/screenshot_report.py --out /tmp/report.png --browser /usr/bin/chromium

Runs ``cupel demo --html`` (the shipped conversation, default pipeline) into a temporary
file and photographs its top (the totals, the budget map and the first rows of the
window) at 1280 x 860 CSS pixels. Needs a Chromium (Debian: ``apt-get install
chromium``); the README shows the picture this writes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images" / "report.png"
WIDTH, HEIGHT = 1280, 860
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"PNG to write (default {OUT})")
    parser.add_argument("--browser", help="Chromium executable (default: found on PATH)")
    args = parser.parse_args(argv)
    browser = args.browser or find_browser()
    if browser is None:
        print("screenshot_report: no Chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="cupel-shot-") as tmp:
        page = Path(tmp) / "demo.html"
        subprocess.run(
            [sys.executable, "-m", "cupel", "demo", "--html", str(page)],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
        shot = Path(tmp) / "shot.png"
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--user-data-dir={Path(tmp) / 'profile'}",
                f"--window-size={WIDTH},{HEIGHT}",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
