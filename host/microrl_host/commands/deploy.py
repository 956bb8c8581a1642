"""microrl deploy: copy microrl (and a policy) to a MicroPython board."""
import json
import sys

from . import CommandError
from .options import number


def register(sub):
    p = sub.add_parser(
        "deploy",
        help="copy microrl and a policy to a MicroPython board (only what changed, verified)",
        description="Copy the device core (to /lib/microrl) and optionally a policy (to /policy.mrlp) to a MicroPython board "
        "with mpremote, and the native C kernels that fit the board (to /lib/microrl_kernels.mpy). Only changed files "
        "are copied; each is verified by SHA-256 on the board and swapped in only when "
        "all arrived (an interrupted copy leaves the previous version usable). Then microrl is imported on the board and "
        "the policy's actions are checked against the host's.",
    )
    p.add_argument("--port", required=True, help="the board's serial port, e.g. /dev/ttyUSB0, /dev/ttyACM0, or a virtual board's /dev/pts/N")
    p.add_argument("--policy", help="a policy file (.mrlp) to copy and check")
    p.add_argument("--mpy", action="store_true", help="compile to .mpy with mpy-cross for the board's MicroPython version and architecture (faster import, less RAM)")
    p.add_argument("--no-native", action="store_true", help="leave the native C kernels (lib/microrl_kernels.mpy) out, and remove them if deployed before: the board runs plain Python")
    p.add_argument("--timeout", type=number(above=0), default=10.0, help="seconds to wait for the board's REPL (default 10)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def run(args):
    from ..board.deploy import DeployError, deploy

    log = None if args.json else (lambda m: print("  " + m, file=sys.stderr))
    try:
        report = deploy(args.port, args.policy, args.mpy, log=log, timeout=args.timeout, use_native=not args.no_native)
    except DeployError as e:
        raise CommandError(str(e)) from None
    if args.json:
        report = dict(report)
        report["info"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in report["info"].items()}
        print(json.dumps(report))
        return 0
    print("board: %s" % report["board"])
    print("microrl %s (%s files): %d copied (%d bytes), %d unchanged"
          % (report["microrl"], report["format"], len(report["copied"]), report["bytes"], report["unchanged"]))
    if report["native"]:
        print("native kernels: /lib/microrl_kernels.mpy for %s" % report["native"])
    if report["native_note"]:
        print(report["native_note"])
    print("backend on the board: %s" % report["backend"])
    if "policy" in report:
        print("policy: %s; actions on the board match the host's (largest difference %.2g)" % (report["policy"], report["policy_max_diff"]))
    return 0
