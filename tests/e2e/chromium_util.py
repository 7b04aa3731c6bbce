"""Headless Chromium for the end-to-end tests, driven over the DevTools
protocol on a pipe (``--remote-debugging-pipe``: NUL-terminated JSON
messages, commands on the browser's fd 3, answers and events on its fd 4),
so that no websocket library is needed.  Standard library only.

``Browser`` starts Chromium (Debian's ``chromium``; ``INFERD_CHROMIUM``
names another binary) with a throwaway profile in a temporary directory, in
its own process group; ``close()`` asks it to quit, kills the group if it
does not, and removes the profile.  Every wait is bounded.

``Page`` is one tab: navigate, evaluate JavaScript, wait for a condition,
read the DOM (``outer_html``), press keys, take a PNG screenshot, emulate a
viewport.  ``DomTree`` parses serialized HTML into a small element tree for
assertions.
"""

import base64
import html.parser
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

START_TIMEOUT_S = 90.0  # Chromium's first start on two busy cores is slow
CALL_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 10.0


def find_chromium():
    """The Chromium binary, or None."""
    named = os.environ.get("INFERD_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, binary, window=(1280, 800)):
        self.binary = binary
        self.window = window
        self.proc = None
        self.profile = None
        self._next_id = 0
        self._buf = b""
        self._to_browser = None
        self._from_browser = None
        self._log = None

    def start(self):
        self.profile = tempfile.mkdtemp(prefix="inferd-chromium-")
        self._log = open(os.path.join(self.profile, "chromium.log"), "w+b")
        cmd_r, cmd_w = os.pipe()  # we write commands; Chromium reads fd 3
        out_r, out_w = os.pipe()  # Chromium writes fd 4; we read
        args = [self.binary, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-dev-shm-usage", "--mute-audio",
                "--window-size=%d,%d" % self.window, "about:blank"]

        def child_fds():
            # High numbers first, so that the two dup2s cannot clobber each other.
            os.dup2(os.dup2(cmd_r, 100), 3)
            os.dup2(os.dup2(out_w, 101), 4)

        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._log,
                                         stderr=self._log, pass_fds=(3, 4),
                                         preexec_fn=child_fds, start_new_session=True)
        finally:
            os.close(cmd_r)
            os.close(out_w)
        self._to_browser, self._from_browser = cmd_w, out_r
        self.call("Browser.getVersion", timeout=START_TIMEOUT_S)
        return self

    def log_tail(self, n=30):
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        return "\n".join(self._log.read().decode("utf-8", "replace").splitlines()[-n:])

    def call(self, method, params=None, session=None, timeout=CALL_TIMEOUT_S):
        """Sends one command and returns its result; events in between are dropped."""
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") != self._next_id:
                    continue
                if "error" in reply:
                    raise BrowserError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("%s: no answer within %.0f s\n%s" % (method, timeout,
                                                                       self.log_tail()))
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium exited\n" + self.log_tail())
                self._buf += chunk

    def new_page(self):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget",
                            {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        # Headless windows are never focused: without this, :focus-visible
        # and key events would not behave as in a real window.
        page.call("Emulation.setFocusEmulationEnabled", {"enabled": True})
        page.call("Runtime.enable")
        return page

    def close(self):
        try:
            if self.proc is not None and self.proc.poll() is None:
                try:
                    self.call("Browser.close", timeout=CLOSE_TIMEOUT_S)
                except (BrowserError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=CLOSE_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    pass
            if self.proc is not None:
                # Chromium's helpers (zygote, renderers) are in its group.
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self.proc.wait(timeout=CLOSE_TIMEOUT_S)
        finally:
            for fd in (self._to_browser, self._from_browser):
                if fd is not None:
                    os.close(fd)
            self._to_browser = self._from_browser = None
            if self._log is not None:
                self._log.close()
                self._log = None
            if self.profile:
                shutil.rmtree(self.profile, ignore_errors=True)
                self.profile = None


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def call(self, method, params=None, timeout=CALL_TIMEOUT_S):
        return self.browser.call(method, params, self.session, timeout)

    def viewport(self, width, height, mobile=False):
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})

    def navigate(self, url, timeout=CALL_TIMEOUT_S):
        result = self.call("Page.navigate", {"url": url}, timeout)
        if result.get("errorText"):
            raise BrowserError("navigating to %s: %s" % (url, result["errorText"]))
        self.wait_for("document.readyState === 'complete'", timeout)

    def evaluate(self, expression, timeout=CALL_TIMEOUT_S):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout)
        if "exceptionDetails" in result:
            raise BrowserError("%s: %s" % (expression, result["exceptionDetails"]))
        return result["result"].get("value")

    def wait_for(self, expression, timeout=CALL_TIMEOUT_S, interval=0.2):
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError("still false after %.0f s: %s" % (timeout, expression))
            time.sleep(interval)

    def outer_html(self):
        return self.evaluate("document.documentElement.outerHTML")

    def screenshot(self):
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"})["data"])

    KEYS = {"Tab": 9, "Enter": 13, "Space": 32}

    def press(self, key, shift=False):
        code = self.KEYS[key]
        event = {"key": " " if key == "Space" else key, "code": key,
                 "windowsVirtualKeyCode": code, "nativeVirtualKeyCode": code,
                 "modifiers": 8 if shift else 0}
        down = dict(event, type="keyDown")
        if key == "Enter":
            down["text"] = "\r"
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", dict(event, type="keyUp"))


# ---- DOM assertions ------------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Element:
    def __init__(self, tag, attrs, parent):
        self.tag = tag
        self.attrs = dict(attrs)
        self.parent = parent
        self.children = []
        self.texts = []

    def text(self):
        parts = list(self.texts)
        for c in self.children:
            parts.append(c.text())
        return " ".join(p.strip() for p in parts if p.strip())

    def iter(self):
        yield self
        for c in self.children:
            yield from c.iter()

    def find_all(self, pred):
        return [e for e in self.iter() if pred(e)]

    def by_id(self, id_):
        found = self.find_all(lambda e: e.attrs.get("id") == id_)
        return found[0] if found else None


class DomTree(html.parser.HTMLParser):
    """Serialized HTML to an Element tree (text kept per element, in order)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {}, None)
        self._cur = self.root
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        e = Element(tag, attrs, self._cur)
        self._cur.children.append(e)
        if tag not in VOID:
            self._cur = e

    def handle_startendtag(self, tag, attrs):
        self._cur.children.append(Element(tag, attrs, self._cur))

    def handle_endtag(self, tag):
        e = self._cur
        while e is not None and e.tag != tag:
            e = e.parent
        if e is not None and e.parent is not None:
            self._cur = e.parent

    def handle_data(self, data):
        self._cur.texts.append(data)
