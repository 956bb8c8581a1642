"""microrl web: the page where TD3 learns Pendulum in the browser (docs/browser.md)."""
import sys
import time

from . import CommandError
from .options import whole


def register(sub):
    p = sub.add_parser("web", help="serve the page that trains TD3 on Pendulum in your browser",
                       description="Serve, on 127.0.0.1 only, a page where the device core (the Python that trains on a board) trains TD3 "
                       "on Pendulum inside the browser: MicroPython compiled to WebAssembly with microrl's C kernels compiled to "
                       "WebAssembly. The pendulum is drawn as it learns, with the learning curve and steps per second; a .mrlp "
                       "dropped on the page flies there. Prints the address and opens a browser where there is one. The page's "
                       "MicroPython runtime comes from npm once (--install-runtime) into ~/.cache/microrl/web-runtime "
                       "($MICRORL_WEB_RUNTIME); after that the page works offline.")
    p.add_argument("--port", type=whole(0, 65535), default=8642, help="TCP port on 127.0.0.1, 0 for any free one (default 8642)")
    p.add_argument("--no-browser", action="store_true", help="only print the address; open no browser")
    p.add_argument("--install-runtime", action="store_true", help="first npm install the page's MicroPython runtime (once; needs npm)")
    p.set_defaults(func=run)


def run(args):
    from .. import webpage

    try:
        if args.install_runtime:
            runtime = webpage.install_runtime()
        else:
            runtime = webpage.runtime_dir()
    except webpage.RuntimeMissing as e:
        raise CommandError(str(e)) from None
    try:
        server = webpage.serve(args.port, runtime)
    except OSError as e:
        raise CommandError("--port %d: cannot listen on 127.0.0.1:%d (%s); choose another port, or 0 for any free one" % (args.port, args.port, e.strerror or e)) from None
    url = "http://127.0.0.1:%d/" % server.server_address[1]
    print("microrl web: serving %s (Ctrl-C stops it)" % url, flush=True)
    if not args.no_browser:
        _open_browser(url)
    try:
        while True:
            time.sleep(3600)
    finally:
        server.shutdown()


def _open_browser(url):
    import webbrowser

    try:
        opened = webbrowser.get().open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        print("no browser found here: open %s in one" % url, file=sys.stderr)
