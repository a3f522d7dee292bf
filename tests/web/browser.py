"""Headless Chromium driven as a person drives a browser: open an address, press keys, click,
read what the page shows and take its picture.

Through the DevTools protocol over a pipe (`--remote-debugging-pipe`: JSON messages ending
in NUL on file descriptors 3 and 4), so no WebSocket client and no driver package is needed.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from PIL import Image

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH, HEIGHT = 1200, 1600


class Browser:
    """One headless Chromium with one tab; stop it with `close` (by its PID)."""

    def __init__(self, profile: Path) -> None:
        assert CHROMIUM is not None
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def fds() -> None:  # in the child: our pipes become its fds 3 and 4
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)  # above 4: no clobbering
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        argv = [CHROMIUM, "--headless", "--remote-debugging-pipe", "--disable-gpu",
                "--no-first-run", "--disable-background-networking", "--disable-sync",
                "--disable-component-update", "--hide-scrollbars", "--disable-quic",
                f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}"]
        if os.geteuid() == 0:
            argv.insert(1, "--no-sandbox")
        self.proc = subprocess.Popen(argv, preexec_fn=fds, pass_fds=(3, 4),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._events: list[dict[str, Any]] = []
        self._id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget", {
            "targetId": target["targetId"], "flatten": True}, session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride", {
            "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium said nothing")
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True,
             timeout: float = 60) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._read(timeout)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self._events.append(m)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for k, e in enumerate(self._events):
                if e.get("method") == method:
                    return self._events.pop(k)
            self._events.append(self._read(max(0.1, deadline - time.monotonic())))

    def _loaded(self, action: Any) -> None:
        self._events = [e for e in self._events if e.get("method") != "Page.loadEventFired"]
        action()
        self.wait_event("Page.loadEventFired")

    def open(self, url: str) -> None:
        self._loaded(lambda: self.call("Page.navigate", {"url": url}))

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def key(self, key: str, code: str, keycode: int, text: str = "") -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {
                "type": kind if text or kind == "keyUp" else "rawKeyDown", "key": key,
                "code": code, "windowsVirtualKeyCode": keycode, "text": text if kind ==
                "keyDown" else ""})

    def press_enter_on(self, selector: str) -> None:
        """Focus an element and press Enter on it, as a keyboard user does (then the load)."""
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self._loaded(lambda: self.key("Enter", "Enter", 13, "\r"))

    def type_into(self, selector: str, text: str) -> None:
        self.js(f"document.querySelector({json.dumps(selector)}).focus()")
        self.js(f"document.querySelector({json.dumps(selector)}).select()")
        self.call("Input.insertText", {"text": text})

    def screenshot(self, path: Path | None = None) -> Image.Image:
        data = base64.b64decode(self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True})["data"])
        if path is not None:
            path.write_bytes(data)
        return Image.open(io.BytesIO(data)).convert("RGB")

    def rect(self, selector: str) -> tuple[int, int, int, int]:
        """The page box (left, top, right, bottom) of an element, for cropping screenshots."""
        r = self.js(f"(() => {{ const b = document.querySelector({json.dumps(selector)})"
                    ".getBoundingClientRect(); return [b.left + scrollX, b.top + scrollY, "
                    "b.right + scrollX, b.bottom + scrollY]; })()")
        return tuple(round(v) for v in r)  # type: ignore[return-value]

    def close(self) -> None:
        with contextlib.suppress(RuntimeError, TimeoutError, OSError):
            self.call("Browser.close", session=False, timeout=10)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
