"""A headless Chromium driven through chromedriver's WebDriver HTTP API with urllib (no selenium):
what tests/test_web.py and bench/browser.py open the page of `microrl web` in. Debian: apt-get
install chromium chromium-driver."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

# flags that let Chromium run here: no sandbox (containers, root), no GPU, no network of its own
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


def find():
    """(chromium, chromedriver) paths, or None when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One headless Chromium with a fresh profile; a context manager that ends both processes."""

    def __init__(self, paths=None, timeout=30.0):
        browser, driver = paths or find()
        self.profile = tempfile.mkdtemp(prefix="microrl-chromium-")
        port = _free_port()
        self.base = "http://127.0.0.1:%d" % port
        self.driver = subprocess.Popen([driver, "--port=%d" % port], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.session = None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    self._call("GET", "/status")
                    break
                except (urllib.error.URLError, ConnectionError):
                    if time.monotonic() > deadline or self.driver.poll() is not None:
                        raise RuntimeError("chromedriver did not start")
                    time.sleep(0.1)
            caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
                "binary": browser, "args": list(FLAGS) + ["--user-data-dir=" + self.profile]}}}}
            self.session = self._call("POST", "/session", caps)["sessionId"]
        except Exception:
            self.close()
            raise

    def _call(self, method, path, body=None, timeout=600):
        data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
        req = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read().decode() or "{}").get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError("WebDriver %s %s: %s" % (method, path, e.read().decode(errors="replace")[:500])) from None

    def open(self, url):
        self._call("POST", "/session/%s/url" % self.session, {"url": url})

    def run(self, script, *args):
        """The value of a JavaScript function body (`return ...`) in the page."""
        return self._call("POST", "/session/%s/execute/sync" % self.session, {"script": script, "args": list(args)})

    def wait(self, expression, timeout, poll=0.5):
        """Poll until the JavaScript expression is truthy; returns its value. TimeoutError with the
        page's state otherwise."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.run("return (%s);" % expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("%s not true within %.0f s; page state: %s" % (expression, timeout, self.run(
                    "return JSON.stringify(window.microrlState && {error: microrlState.error, ready: microrlState.ready, stdout: microrlState.stdout.slice(-5)})")))
            time.sleep(poll)

    def cpu_seconds(self):
        """CPU time (user and system) used so far by chromedriver and every process under it, the
        browser's included (Linux /proc; None elsewhere): a figure the machine's load does not
        stretch, unlike wall time."""
        tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        parent, used = {}, {}
        try:
            names = [n for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            return None
        for name in names:
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid = int(name)
            parent[pid] = int(fields[1])
            used[pid] = sum(int(v) for v in fields[11:15])  # utime, stime, and those of waited-for children
        total, todo = 0, [self.driver.pid]
        while todo:
            pid = todo.pop()
            total += used.get(pid, 0)
            todo += [p for p, pp in parent.items() if pp == pid]
        return total / tick

    def close(self):
        if self.session:
            try:
                self._call("DELETE", "/session/%s" % self.session, timeout=30)
            except Exception:
                pass
            self.session = None
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
