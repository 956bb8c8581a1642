"""microrl mip: a mip package index of microrl, one package per board architecture."""
import os

from . import CommandError
from .options import FOLDER_HELP, check_output


def register(sub):
    p = sub.add_parser(
        "mip",
        help="write a mip package index of microrl (one package per board architecture) for mpremote mip install",
        description="Write a package index of microrl in micropython-lib's layout into --out: the package microrl (the "
        "device core and its built-in tasks, plain Python kernels: any board) and microrl-ARCH for each architecture "
        "with shipped native kernels (the core and microrl_kernels.mpy of that architecture), each as bytecode .mpy "
        "(compiled here with mpy-cross) and as .py. Serve the folder over HTTP and install with `mpremote mip install "
        "--index URL microrl-ARCH` (docs/boards.md). One package per architecture, because mip asks the board its .mpy "
        "version but not its architecture.",
    )
    p.add_argument("--out", required=True, help="the index's folder" + FOLDER_HELP + "; a folder holding other files than a former index is refused")
    p.add_argument("--arch", action="append", metavar="ARCH", help="an architecture to package (repeat; default: every one with shipped kernels)")
    p.add_argument("--json", action="store_true", help="print the index's description (index.json) as one JSON object")
    p.set_defaults(func=run)


def run(args):
    import json

    from ..board.mip import MipError, build

    check_output(args.out, "--out", folder=True)
    if os.path.isdir(args.out) and os.listdir(args.out) and not os.path.isfile(os.path.join(args.out, "index.json")):
        raise CommandError("--out %s holds files but no index.json of a former index: give an empty or new folder" % args.out)
    try:
        index = build(args.out, args.arch)
    except MipError as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps(index))
        return 0
    print("mip index of microrl %s (.mpy v%s) in %s:" % (index["packages"][0]["version"], index["mpy"], args.out))
    for p in index["packages"]:
        print("  %-20s %7d bytes as .mpy, %7d as .py   %s" % (p["name"], p["bytes"][index["mpy"].split(".")[0]], p["bytes"]["py"], p["boards"]))
    print("serve it (e.g. python -m http.server -d %s 8000) and install: mpremote mip install --index http://HOST:8000 microrl-ARCH "
          "(`microrl deploy --plan --port PORT` names the board's package)" % args.out)
    return 0
