"""microrl demo: the whole story in one command. Train Pendulum on the host, deploy to a board
(a virtual one when none is given), run the policy there in a closed loop against the board's
own Pendulum, and measure the serial round trip."""
import json
import sys
import time

from . import CommandError
from .options import check_output


def register(sub):
    p = sub.add_parser(
        "demo",
        help="train Pendulum on the host, deploy to a board (virtual if none), run it there",
        description="Train TD3 on Pendulum-v1 on the host, deploy microrl and the policy to a MicroPython board, run the "
        "policy on the board in a closed loop against the board's own Pendulum, and measure the serial round trip. "
        "Without --port it starts a virtual board (the MicroPython unix port behind a pseudo-terminal).",
    )
    p.add_argument("--port", help="a real board's serial port (default: start a virtual board)")
    p.add_argument("--steps", type=int, default=10000, help="training steps on the host (default 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of training and evaluation (default 0)")
    p.add_argument("--episodes", type=int, default=5, help="evaluation episodes, on the host and on the board (default 5)")
    p.add_argument("--requests", type=int, default=200, help="serial inference requests timed (default 200)")
    p.add_argument("--out", default="demo-policy.mrlp", help="where to save the trained policy (default demo-policy.mrlp)")
    p.add_argument("--heap", help="the virtual board's RAM, e.g. 160K (default: a typical ESP32's)")
    p.add_argument("--mpy", action="store_true", help="deploy .mpy files (compiled with mpy-cross for the board)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args):
    from ..board.virtual import BoardError
    from ..board.deploy import DeployError
    from ..board.serial_link import LinkError

    if args.steps < 1 or args.episodes < 1 or args.requests < 1:
        raise CommandError("--steps, --episodes and --requests must be at least 1")
    if args.episodes > 200:
        raise CommandError("--episodes must be at most 200")
    check_output(args.out, "--out")
    say = (lambda text: print(text, file=sys.stderr)) if args.json else (lambda text: print(text, flush=True))
    try:
        result = run_demo(args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say)
    except (BoardError, DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps(result))
    return 0


def run_demo(port=None, steps=10000, seed=0, episodes=5, requests=200, out="demo-policy.mrlp", heap=None, mpy=False, quiet=False, say=print):
    """The whole demo; returns a dict of results. say(text) prints a line of the story."""
    import microrl
    from microrl.evaluate import evaluate
    from microrl.pendulum import Pendulum

    from ..algos import td3
    from ..board.deploy import BOARD_POLICY, deploy
    from ..board.serial_bench import host_latency, run_requests
    from ..board.serial_link import LinkError, SerialLink
    from ..board.virtual import board_port
    from .progress import ProgressBar

    result = {"steps": steps, "seed": seed, "episodes": episodes}
    say("1/4 training TD3 on Pendulum-v1 on the host: %d steps, seed %d (numba, the whole loop compiled)" % (steps, seed))
    t0 = time.perf_counter()
    # TD3 with the numba trainer (whole loop compiled; the first run compiles for about 25 s,
    # later runs load the cache)
    policy, _ = td3.train_pendulum(steps=steps, seed=seed, eval_every=1000, eval_episodes=3, callbacks=ProgressBar(quiet=quiet))
    result["train_seconds"] = time.perf_counter() - t0
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    mean, std, host_returns = evaluate(policy, Pendulum(), episodes, seed=eval_seed)
    result["host_return_mean"] = mean
    result["host_return_std"] = std
    result["policy_file"] = out
    say("    %.1f s; on the host: return %.1f +- %.1f over %d episodes; saved %s" % (result["train_seconds"], mean, std, episodes, out))
    with board_port(port, heap) as (p, described):
        say("2/4 board: %s" % described)
        report = deploy(p, out, mpy=mpy)
        result["board"] = report["board"]
        say("3/4 deployed microrl (%d files copied, %d unchanged) and the policy; its actions on the board match the host's" % (len(report["copied"]), report["unchanged"]))
        with SerialLink(p) as link:
            link.load(BOARD_POLICY)
            returns, n_steps, compute = link.rollout(eval_seed, episodes, timeout=60.0 + 2.0 * episodes * 200)
            bm = sum(returns) / len(returns)
            bs = (sum((r - bm) ** 2 for r in returns) / len(returns)) ** 0.5
            result.update(board_return_mean=bm, board_return_std=bs, board_step_compute_us=compute / max(1, n_steps))
            result["return_max_diff"] = max(abs(a - b) for a, b in zip(returns, host_returns))
            say("4/4 closed loop on the board (policy and Pendulum both on it): return %.1f +- %.1f over %d episodes "
                "(host: %.1f); policy %.0f us per step" % (bm, bs, episodes, mean, result["board_step_compute_us"]))
            summary, error = run_requests(link, policy.obs_dim, requests, seed)
            if error:
                raise LinkError(error)
        result.update({k: summary[k] for k in ("p50_us", "p90_us", "p99_us", "max_us", "board_compute_us", "per_second")})
        result.update(host_latency(policy, 1000, seed))
        say("    serial round trip over %d requests: p50 %.0f us, p99 %.0f us, max %.0f us; board compute %.0f us; %.0f inferences/s "
            "(host: %.1f us per inference)" % (requests, summary["p50_us"], summary["p99_us"], summary["max_us"], summary["board_compute_us"], summary["per_second"], result["host_p50_us"]))
    return result
