"""microrl demo: the whole story in one command."""
import json
import sys

from ..cli import CommandError


def register(sub):
    p = sub.add_parser(
        "demo",
        help="train Pendulum on the host, deploy to a board (virtual if none), run it there",
        description="Train TD3 on Pendulum-v1 on the host, deploy microrl and the policy to a MicroPython board, run the "
        "policy on the board in a closed loop against the board's own Pendulum, and measure the serial round trip. "
        "Without --port it starts a virtual board (the MicroPython unix port behind a pseudo-terminal).",
    )
    p.add_argument("--task", choices=("pendulum", "quadrotor"), default="pendulum",
                   help="pendulum (default), or quadrotor: a 13-64-64-4 policy flies the board's own quadrotor simulation, "
                   "then the host's over the serial line")
    p.add_argument("--port", help="a real board's serial port (default: start a virtual board)")
    p.add_argument("--steps", type=int, default=None, help="training steps on the host (default 10000; quadrotor: the trainer's default)")
    p.add_argument("--seed", type=int, default=0, help="seed of training and evaluation (default 0)")
    p.add_argument("--episodes", type=int, default=5, help="evaluation episodes, on the host and on the board (default 5)")
    p.add_argument("--requests", type=int, default=200, help="serial inference requests timed (default 200)")
    p.add_argument("--out", default=None, help="where to save the trained policy (default demo-policy.mrlp; quadrotor-policy.mrlp)")
    p.add_argument("--heap", help="the virtual board's RAM, e.g. 160K (default: a typical ESP32's)")
    p.add_argument("--mpy", action="store_true", help="deploy .mpy files (compiled with mpy-cross for the board)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args):
    from ..board import BoardError
    from ..demo import run_demo, run_quadrotor_demo
    from ..deploy import DeployError
    from ..serial_link import LinkError
    from microrl.protocol import MAX_FLIGHTS

    quadrotor = args.task == "quadrotor"
    if args.steps is None:
        args.steps = None if quadrotor else 10000
    if args.out is None:
        args.out = "quadrotor-policy.mrlp" if quadrotor else "demo-policy.mrlp"
    if quadrotor and args.episodes > MAX_FLIGHTS:
        raise CommandError("--episodes must be at most %d for the quadrotor" % MAX_FLIGHTS)
    if (args.steps is not None and args.steps < 1) or args.episodes < 1 or args.requests < 1:
        raise CommandError("--steps, --episodes and --requests must be at least 1")
    if args.episodes > 200:
        raise CommandError("--episodes must be at most 200")
    say = (lambda text: print(text, file=sys.stderr)) if args.json else (lambda text: print(text, flush=True))
    try:
        if quadrotor:
            result = run_quadrotor_demo(args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say)
        else:
            result = run_demo(args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say)
    except (BoardError, DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps(result))
    return 0
