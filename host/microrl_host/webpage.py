"""The browser page of `microrl web` (web/: the page, the worker, the Python it runs and our wasm
kernels) and the MicroPython-webassembly runtime it needs, which comes from npm at install time
into a cache folder (never shipped in this package: docs/browser.md). serve() answers on
127.0.0.1 only, from a fixed set of files: the page's, the device core's, the runtime's."""
import functools
import json
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import microrl

WEB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web")
RUNTIME_PACKAGE = "@micropython/micropython-webassembly-pyscript"
RUNTIME_VERSION = "1.27.0"
RUNTIME_FILES = ("micropython.mjs", "micropython.wasm")
PAGE_FILES = ("index.html", "app.js", "worker.js", "engine.js", "microrl_kernels.wasm", "microrl_kernels.json")
# Python the worker writes into MicroPython's file system beside the device core
PAGE_PYTHON = ("microrl_kernels.py", "webtrain.py")
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm",
         ".json": "application/json"}


class RuntimeMissing(Exception):
    pass


def cache_dir():
    """Where the runtime is installed: $MICRORL_WEB_RUNTIME, else ~/.cache/microrl/web-runtime."""
    return os.environ.get("MICRORL_WEB_RUNTIME") or os.path.join(os.path.expanduser("~"), ".cache", "microrl", "web-runtime")


def runtime_dir(root=None):
    """The npm package's folder (micropython.mjs and .wasm), or RuntimeMissing saying how to get it."""
    root = root or cache_dir()
    folder = os.path.join(root, "node_modules", *RUNTIME_PACKAGE.split("/"))
    missing = [f for f in RUNTIME_FILES if not os.path.isfile(os.path.join(folder, f))]
    if missing:
        raise RuntimeMissing("the page's MicroPython runtime (npm %s %s) is not installed in %s: run `microrl web --install-runtime` "
                             "(a one-time npm install; needs npm)" % (RUNTIME_PACKAGE, RUNTIME_VERSION, root))
    return folder


def install_runtime(root=None, say=print):
    """npm install the runtime into root (default cache_dir()); returns its folder. RuntimeMissing
    when npm is not there or fails."""
    root = root or cache_dir()
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeMissing("npm not found: install Node.js's npm (Debian: apt-get install npm), then run `microrl web --install-runtime`")
    os.makedirs(root, exist_ok=True)
    say("installing %s@%s into %s (once, about 550 kB)" % (RUNTIME_PACKAGE, RUNTIME_VERSION, root))
    cmd = [npm, "install", "--prefix", root, "--no-audit", "--no-fund", "--no-save", "%s@%s" % (RUNTIME_PACKAGE, RUNTIME_VERSION)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeMissing("npm install failed (%s): %s" % (" ".join(cmd), tail[0]))
    return runtime_dir(root)


def python_files():
    """{path under MicroPython's /lib: source} of what the worker runs: the device core and the
    page's own Python."""
    core = os.path.dirname(os.path.abspath(microrl.__file__))
    out = {}
    for folder, dirs, files in os.walk(core):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    out["microrl/" + os.path.relpath(path, core).replace(os.sep, "/")] = f.read()
    for name in PAGE_PYTHON:
        with open(os.path.join(WEB_DIR, name), encoding="utf-8") as f:
            out[name] = f.read()
    return out


def routes(runtime):
    """{URL path: file path or bytes} of everything the page loads."""
    table = {"/" + name: os.path.join(WEB_DIR, name) for name in PAGE_FILES}
    table["/"] = table["/index.html"]
    for name in RUNTIME_FILES:
        table["/runtime/" + name] = os.path.join(runtime, name)
    table["/files.json"] = json.dumps(python_files()).encode()
    return table


class _Handler(BaseHTTPRequestHandler):
    def __init__(self, table, *args, **kwargs):
        self.table = table
        super().__init__(*args, **kwargs)

    def do_GET(self):
        path = self.path.split("?", 1)[0]
        item = self.table.get(path)
        if item is None:
            self.send_error(404)
            return
        if isinstance(item, bytes):
            data = item
        else:
            with open(item, "rb") as f:
                data = f.read()
        self.send_response(200)
        self.send_header("Content-Type", TYPES.get(os.path.splitext(path)[1], "text/html; charset=utf-8"))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):  # quiet: the command prints its address, not every request
        pass


def serve(port=0, runtime=None):
    """A started server on 127.0.0.1:port (0: a free one), in a daemon thread; returns it
    (server.server_address[1] is the port; server.shutdown() stops it)."""
    table = routes(runtime or runtime_dir())
    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(_Handler, table))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
