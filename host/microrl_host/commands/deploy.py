"""microrl deploy: copy microrl (and a policy) to a MicroPython board."""
import json
import sys

from . import CommandError


def register(sub):
    p = sub.add_parser(
        "deploy",
        help="copy microrl and a policy to a MicroPython board (only what changed, verified)",
        description="Copy the device core (to /lib/microrl) and optionally a policy (to /policy.mrlp) to a MicroPython board "
        "with mpremote. Only changed files are copied; each is verified by SHA-256 on the board and swapped in only when "
        "all arrived (an interrupted copy leaves the previous version usable). Then microrl is imported on the board and "
        "the policy's actions are checked against the host's.",
    )
    p.add_argument("--port", required=True, help="the board's serial port, e.g. /dev/ttyUSB0, /dev/ttyACM0, or a virtual board's /dev/pts/N")
    p.add_argument("--policy", help="a policy file (.mrlp) to copy and check")
    p.add_argument("--mpy", action="store_true", help="compile to .mpy with mpy-cross for the board's MicroPython version and architecture (faster import, less RAM)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the board's REPL (default 10)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def run(args):
    from ..board.deploy import DeployError, deploy

    log = None if args.json else (lambda m: print("  " + m, file=sys.stderr))
    try:
        report = deploy(args.port, args.policy, args.mpy, log=log, timeout=args.timeout)
    except DeployError as e:
        raise CommandError(str(e)) from None
    if args.json:
        report = dict(report)
        report["info"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in report["info"].items()}
        print(json.dumps(report))
        return 0
    print("board: %s" % report["board"])
    print("microrl %s (%s backend, %s files): %d copied (%d bytes), %d unchanged"
          % (report["microrl"], report["backend"], report["format"], len(report["copied"]), report["bytes"], report["unchanged"]))
    if "policy" in report:
        print("policy: %s; actions on the board match the host's (largest difference %.2g)" % (report["policy"], report["policy_max_diff"]))
    return 0
