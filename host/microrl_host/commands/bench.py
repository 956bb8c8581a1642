"""microrl bench: speed measurements. `microrl bench serial`: policy inference over the serial
line of a board (round trip, on-board compute time), beside the same policy on the host."""
import json
import sys

from . import CommandError
from .options import number


def register(sub):
    p = sub.add_parser("bench", help="speed measurements (serial: inference round trips to a board)",
                       description="Speed measurements. See 'microrl bench serial --help'.")
    bsub = p.add_subparsers(dest="bench_command", metavar="WHAT")
    s = bsub.add_parser(
        "serial",
        help="round-trip latency and on-board compute time of a policy on a board",
        description="Deploy the policy (only what changed), start microrl.serve on the board and time N inference "
        "requests: round trip p50/p90/p99/max, the board's compute time per inference, and inferences per second, "
        "beside the same policy on the host. A board that resets or stops answering ends the run with a clear error; "
        "the results so far are reported.",
    )
    s.add_argument("--port", required=True, help="the board's serial port (a virtual board's too: see 'microrl board sim')")
    s.add_argument("--policy", required=True, help="policy file (.mrlp) to run")
    s.add_argument("-n", type=int, default=1000, help="number of inference requests (default 1000)")
    s.add_argument("--warmup", type=int, default=20, help="untimed requests first (default 20)")
    s.add_argument("--seed", type=int, default=0, help="seed of the random observations")
    s.add_argument("--timeout", type=number(above=0), default=5.0, help="seconds to wait for each reply (default 5)")
    s.add_argument("--no-deploy", action="store_true", help="use the microrl and policy already on the board")
    s.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=run_serial)
    p.set_defaults(func=lambda args: (p.print_help(), 0)[1])


def print_table(rows, out=sys.stdout):
    """rows: [(name, value, unit)] as aligned text."""
    width = max(len(r[0]) for r in rows)
    for name, value, unit in rows:
        text = ("%.1f" % value) if isinstance(value, float) else str(value)
        print("  %-*s %12s %s" % (width, name, text, unit), file=out)


def latency_rows(r):
    rows = [
        ("round trip p50", r["p50_us"], "us"),
        ("round trip p90", r["p90_us"], "us"),
        ("round trip p99", r["p99_us"], "us"),
        ("round trip max", r["max_us"], "us"),
        ("board compute (median)", r["board_compute_us"], "us"),
        ("inferences per second", r["per_second"], "/s"),
    ]
    if "host_p50_us" in r:
        rows.append(("same policy on the host (median)", r["host_p50_us"], "us"))
    return rows


def run_serial(args):
    from ..board import deploy as dep
    from .progress import Progress
    from ..board.serial_bench import bench_serial, host_latency

    if args.n < 1:
        raise CommandError("-n must be at least 1")
    try:
        policy = dep.load_policy(args.policy)
        if not args.no_deploy:
            dep.deploy(args.port, args.policy)
    except dep.DeployError as e:
        raise CommandError(str(e)) from None
    from ..board.serial_link import LinkError

    with Progress(args.n, desc="serial requests", unit="req", quiet=args.quiet or args.json) as bar:
        try:
            result = bench_serial(args.port, dep.BOARD_POLICY, args.n, seed=args.seed, warmup=args.warmup, progress=bar.update, timeout=args.timeout,
                                  started=bar.restart, finished=bar.close)  # the bar's rate: the timed requests', as the table's
        except LinkError as e:
            raise CommandError(str(e)) from None
    result.update(host_latency(policy, max(args.n, 200), args.seed))
    import microrl

    result["host_backend"] = microrl.backend_name()
    if args.json:
        print(json.dumps(result))
    else:
        print("%s on %s (%s), %d of %d requests" % (result["policy"], result["board"], args.port, result["completed"], result["requested"]))
        print_table(latency_rows(result))
    if result["error"]:
        print("microrl bench serial: error: %s (partial results above: %d of %d requests)" % (result["error"], result["completed"], result["requested"]), file=sys.stderr)
        return 1
    return 0
