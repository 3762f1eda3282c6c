"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON messages
ended by a NUL byte on file descriptors 3 and 4), with the standard library only: open a page, evaluate
JavaScript in it, take a screenshot. For the tests that look at a rendered page as a person would."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

# the flags this machine's headless Chromium needs (no sandbox as root, no network, a fresh profile)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Browser:
    def __init__(self, executable: str):
        self.profile = tempfile.mkdtemp(prefix="rerank-study-chromium-")
        to_child, self._send = os.pipe()
        self._recv, from_child = os.pipe()

        def fds():  # the child's fd 3 reads our commands, its fd 4 writes the answers (moved above 9 first)
            a, b = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([executable, *FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-pipe", "about:blank"], preexec_fn=fds,
                                     pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buffer, self._id, self.session = b"", 0, None

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            while b"\0" not in self._buffer:
                chunk = os.read(self._recv, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe during {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def open(self, url: str) -> None:
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def viewport(self, width: int, height: int) -> None:
        """The open page's viewport, in CSS pixels (device scale 1, not a mobile device)."""
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, self.session)

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, self.session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def evaluate_in_frame(self, expression: str, index: int = 0):
        """Evaluate ``expression`` in the page's ``index``-th child frame (an iframe of another origin, such
        as a data: URI, which the page's own script cannot read)."""
        tree = self.call("Page.getFrameTree", {}, self.session)["frameTree"]
        frame = tree.get("childFrames", [])[index]["frame"]["id"]
        context = self.call("Page.createIsolatedWorld", {"frameId": frame},
                            self.session)["executionContextId"]
        result = self.call("Runtime.evaluate", {"expression": expression, "contextId": context,
                                                "returnByValue": True}, self.session)
        return result["result"].get("value")

    def wait_for(self, expression: str, seconds: float = 30.0):
        """Evaluate ``expression`` until it is truthy (the page has rendered what it names)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                value = self.evaluate(expression)
            except RuntimeError:  # the page is still loading (no body yet)
                value = None
            if value:
                return value
            time.sleep(0.2)
        raise TimeoutError(f"not rendered within {seconds} s: {expression}")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", {"format": "png"}, self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._send)
        os.close(self._recv)
        shutil.rmtree(self.profile, ignore_errors=True)
