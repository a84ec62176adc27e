"""A real headless Chromium driven over the DevTools protocol on a pipe (no extra package).

``chromium --remote-debugging-pipe`` reads protocol commands on file descriptor 3 and
writes replies and events on 4, each a JSON object ended by a NUL byte. :class:`Browser`
opens a page, waits for its load event and collects everything the browser reports as a
problem: uncaught exceptions, ``console.error`` calls and error-level log entries (failed
resource loads, blocked requests, rendering errors).

Which browser: ``$CUPEL_BROWSER``, else ``chromium`` / ``chromium-browser`` /
``google-chrome`` on the PATH. With ``CUPEL_REQUIRE_BROWSER=1`` (set by ``.ci/run``) a
missing browser fails the tests that need it instead of skipping them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    """The browser executable to use, or ``None``."""
    chosen = os.environ.get("CUPEL_BROWSER")
    if chosen:
        return chosen if shutil.which(chosen) else None
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def require_browser() -> str:
    """The browser, or skip (fail under ``CUPEL_REQUIRE_BROWSER=1``) when there is none."""
    browser = find_browser()
    if browser is None:
        message = (
            "no headless Chromium found (install the distribution's chromium package, or "
            "set CUPEL_BROWSER)"
        )
        if os.environ.get("CUPEL_REQUIRE_BROWSER") == "1":
            pytest.fail(message + "; CUPEL_REQUIRE_BROWSER=1 requires it")
        pytest.skip(message)
    return browser


@dataclass
class PageLoad:
    """What the browser reported while loading and rendering one page."""

    problems: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


class Browser:
    """One headless Chromium process; use as a context manager."""

    def __init__(self, executable: str, *, width: int = 1280, height: int = 900) -> None:
        self._profile = tempfile.TemporaryDirectory(prefix="cupel-chromium-")
        to_browser_read, to_browser_write = os.pipe()
        from_browser_read, from_browser_write = os.pipe()

        # The child sees our pipe ends as its fds 3 (commands in) and 4 (replies out).
        def child_fds() -> None:
            commands, replies = os.dup(to_browser_read), os.dup(from_browser_write)
            os.dup2(commands, 3)
            os.dup2(replies, 4)

        self._proc = subprocess.Popen(
            [
                executable,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--hide-scrollbars",
                f"--window-size={width},{height}",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # runs before the child closes every fd but 0-4
            pass_fds=(3, 4),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._out = os.fdopen(to_browser_write, "wb", buffering=0)
        self._in = os.fdopen(from_browser_read, "rb", buffering=0)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # -- protocol ----------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("the browser did not answer in time")
            chunk = self._in.read(65536)
            if not chunk:
                raise RuntimeError("the browser closed the protocol pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        """Send a command and return its result (events that arrive meanwhile are kept)."""
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        self._out.write(json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._events.append(message)

    def wait_for(self, method: str, *, timeout: float = 30.0) -> dict[str, Any]:
        """The first event named ``method`` (already received or still to come)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method:
                    found: dict[str, Any] = self._events.pop(i)
                    return found
            self._events.append(self._read_message(deadline))

    # -- pages -------------------------------------------------------------------------------
    def open(self, path: Path) -> tuple[str, PageLoad]:
        """Open ``path`` in a new tab and wait until it has loaded; (session id, report)."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self._events.clear()
        self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired")
        # Let late reports (layout, console) arrive: one more round trip after a pause.
        time.sleep(0.3)
        self.send("Runtime.evaluate", {"expression": "1"}, session=session)
        report = PageLoad()
        for event in self._events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                report.problems.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                report.problems.append(f"console.{params['type']}: {params.get('args')}")
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                report.problems.append(f"log: {params['entry'].get('text')}")
            elif method == "Network.loadingFailed":
                report.problems.append(f"request failed: {params.get('errorText')}")
            elif method == "Network.requestWillBeSent":
                report.requests.append(params["request"]["url"])
        self._events.clear()
        return session, report

    def evaluate(self, session: str, expression: str) -> Any:
        """The JSON value of ``expression`` in the page."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=session,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str) -> bytes:
        """A PNG of the page's full length."""
        data = self.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True},
            session=session,
        )["data"]
        return base64.b64decode(data)

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.send("Browser.close", timeout=10.0)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._out.close()
        self._in.close()
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
