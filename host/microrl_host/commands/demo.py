"""microrl demo: the whole story in one command. Train Pendulum on the host, deploy to a board
(a virtual one when none is given), run the policy there in a closed loop against the board's
own Pendulum, and measure the serial round trip."""
import json
import os
import sys
import time

from .. import tasks
from . import CommandError
from .options import FOLDER_HELP, OUTPUT_HELP, SEED, STEPS, check_memory, check_output, check_port, whole


MAX_REQUESTS = 1_000_000


def register(sub):
    p = sub.add_parser(
        "demo",
        help="train Pendulum on the host, deploy to a board (virtual if none), run it there",
        description="Train TD3 on Pendulum-v1 on the host, deploy microrl and the policy to a MicroPython board, run the "
        "policy on the board in a closed loop against the board's own Pendulum, and measure the serial round trip. "
        "Without --port it starts a virtual board (the MicroPython unix port behind a pseudo-terminal).",
    )
    p.add_argument("--task", choices=("pendulum", "quadrotor"), default="pendulum",
                   help="pendulum (default), or quadrotor: a 22-64-64-4 policy flies the board's own quadrotor simulation, "
                   "then the host's over the serial line")
    p.add_argument("--port", help="a real board's serial port (default: start a virtual board)")
    p.add_argument("--steps", type=STEPS, default=None, help="training steps on the host (default 10000; quadrotor %d)" % tasks.resolve("quadrotor").training["steps"])
    p.add_argument("--seed", type=SEED, default=0, help="seed of training and evaluation, 0 to 2**32-1 (default 0)")
    p.add_argument("--episodes", type=whole(1, 200), default=5, help="evaluation episodes, on the host and on the board, 1 to 200 (default 5)")
    p.add_argument("--requests", type=whole(1, MAX_REQUESTS), default=200, help="serial inference requests timed, at most %d (default 200)" % MAX_REQUESTS)
    p.add_argument("--out", default=None, help="where to save the trained policy (default demo-policy.mrlp; quadrotor-policy.mrlp)" + OUTPUT_HELP)
    p.add_argument("--heap", help="the virtual board's RAM, e.g. 160K (default: a typical ESP32's)")
    p.add_argument("--board-dir", metavar="DIR", help="keep the virtual board's filesystem in DIR (default: a temporary folder, removed afterwards)" + FOLDER_HELP)
    p.add_argument("--mpy", action="store_true", help="deploy .mpy files (compiled with mpy-cross for the board)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args):
    from microrl.protocol import MAX_FLIGHTS

    from ..board.virtual import BoardError
    from ..board.deploy import DeployError
    from ..board.serial_link import LinkError

    if args.board_dir and args.port:
        raise CommandError("--board-dir is the virtual board's folder; a real board (--port) keeps its own files")
    quadrotor = args.task == "quadrotor"
    if args.steps is None and not quadrotor:
        args.steps = 10000
    if args.out is None:
        args.out = "quadrotor-policy.mrlp" if quadrotor else "demo-policy.mrlp"
    if quadrotor and args.episodes > MAX_FLIGHTS:
        raise CommandError("--episodes must be at most %d for the quadrotor" % MAX_FLIGHTS)
    if args.port:
        check_port(args.port)
    elif args.heap is not None:  # the virtual board's, checked before training rather than after
        from ..board.virtual import parse_size

        try:
            heap = parse_size(args.heap)
        except (BoardError, OverflowError):
            raise CommandError("--heap %s: give bytes, or a number with K or M (e.g. 160K)" % args.heap) from None
        check_memory(heap, heap, "a virtual board with a heap of %s" % args.heap, "give a smaller --heap")
    check_output(args.out, "--out")
    if args.board_dir:
        check_output(args.board_dir, "--board-dir", folder=True)
    say = (lambda text: print(text, file=sys.stderr)) if args.json else (lambda text: print(text, flush=True))
    try:
        if quadrotor:
            result = run_quadrotor_demo(args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say, board_dir=args.board_dir)
        else:
            result = run_demo(args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say, args.board_dir)
    except (BoardError, DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps(result))
    return 0


def run_demo(port=None, steps=10000, seed=0, episodes=5, requests=200, out="demo-policy.mrlp", heap=None, mpy=False, quiet=False, say=print, board_dir=None):
    """The whole demo; returns a dict of results. say(text) prints a line of the story. It writes
    the policy file out and nothing else outside board_dir (the virtual board's filesystem;
    None: a temporary folder)."""
    import microrl
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum

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
    policy = td3.ALGO.run("pendulum", steps=steps, seed=seed, eval_every=1000, eval_episodes=3, callbacks=ProgressBar(quiet=quiet)).policy
    result["train_seconds"] = time.perf_counter() - t0
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    mean, std, host_returns = evaluate(policy, Env(pendulum), episodes, seed=eval_seed)
    result["host_return_mean"] = mean
    result["host_return_std"] = std
    result["policy"] = os.path.abspath(out)
    result["board_dir"] = os.path.abspath(board_dir) if board_dir and not port else None
    say("    %.1f s; on the host: return %.1f +- %.1f over %d episodes; policy saved to %s" % (result["train_seconds"], mean, std, episodes, result["policy"]))
    with board_port(port, heap, folder=board_dir) as (p, described):
        say("2/4 board: %s" % described)
        report = deploy(p, out, mpy=mpy)
        result["board"] = report["board"]
        result["board_backend"] = report["backend"]
        say("3/4 deployed microrl (%d files copied, %d unchanged; %s backend on the board) and the policy; its actions on the board match the host's"
            % (len(report["copied"]), report["unchanged"], report["backend"]))
        if report["native_note"]:
            say("    " + report["native_note"])
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


def run_quadrotor_demo(port=None, steps=None, seed=0, episodes=5, requests=200, out="quadrotor-policy.mrlp", heap=None, mpy=False, quiet=False, say=print, serial_episodes=1, board_dir=None):
    """Train TD3 on the quadrotor on the host, fly the policy on a board against the board's own
    quadrotor simulation, then fly the host's simulation with the policy answering over the
    serial line. Returns a dict of results."""
    import microrl
    from microrl.rng import Rng
    from microrl.task import Env
    from microrl.tasks import quadrotor as Q

    from ..algos.td3 import ALGO
    from ..board.deploy import BOARD_POLICY, deploy
    from ..board.serial_link import LinkError, SerialLink
    from ..board.virtual import board_port
    from .progress import ProgressBar

    import numpy as np

    training = Q.TRAINING
    steps = steps or training["steps"]
    result = {"task": "quadrotor", "steps": steps, "seed": seed, "episodes": episodes}
    say("1/5 training TD3 on the quadrotor hover task on the host: %d steps, seed %d (numba, simulation in the compiled loop)" % (steps, seed))
    t0 = time.perf_counter()
    # evaluations as `microrl train quadrotor` makes them: the run writes its best-evaluated actor
    run = ALGO.run(Q, steps=steps, seed=seed, callbacks=ProgressBar(quiet=quiet))
    result["train_seconds"] = time.perf_counter() - t0
    result["train_s"] = run.stats["train_s"]
    policy = run.policy
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    host_rows = Q.fly(policy, episodes, eval_seed)
    host = tasks.summary(Q, host_rows)
    result.update({"host_" + k: v for k, v in host.items()})
    result["policy_file"] = out
    say("    %.1f s (%.1f s training); on the host (device core on CPython): flies %d of %d episodes, final distance %.3f m (median); saved %s"
        % (result["train_seconds"], result["train_s"], sum(r[1] for r in host_rows), episodes, host["position_error_m"], out))
    with board_port(port, heap, folder=board_dir) as (p, described):
        say("2/5 board: %s" % described)
        report_ = deploy(p, out, mpy=mpy)
        result["board"] = report_["board"]
        say("3/5 deployed microrl (%d files copied, %d unchanged) and the policy" % (len(report_["copied"]), report_["unchanged"]))
        with SerialLink(p) as link:
            link.load(BOARD_POLICY)
            rows, n_steps, policy_us, total_us = link.fly(eval_seed, episodes, timeout=120.0 + 30.0 * episodes)
            board = tasks.summary(Q, rows)
            result.update({"board_" + k: v for k, v in board.items()})
            per_step = policy_us / max(1, n_steps)
            sim_step = (total_us - policy_us) / max(1, n_steps)
            result.update(board_policy_step_us=per_step, board_sim_step_us=sim_step, board_control_rate_hz=1e6 / per_step if per_step else None,
                          board_steps=n_steps, board_return_max_diff=max(abs(a[0] - b[0]) for a, b in zip(rows, host_rows)),
                          board_success_matches_host=[int(a[1]) for a in rows] == [int(b[1]) for b in host_rows])
            say("4/5 closed loop on the board (policy and quadrotor both in MicroPython): flies %d of %d episodes, final distance %.3f m (median; host %.3f m); "
                "policy %.0f us per step (a %.0f Hz control rate), simulation %.0f us per step"
                % (sum(int(r[1]) for r in rows), episodes, board["position_error_m"], host["position_error_m"], per_step, result["board_control_rate_hz"], sim_step))
            # the simulation on the host, the policy on the board, one request per control step
            rng = Rng(eval_seed)
            env = Env(Q, rng=rng, evaluation=True)
            latencies = []
            flights = []
            compute = 0
            for _ in range(serial_episodes):
                obs = env.reset()
                done = truncated = False
                total = 0.0
                while not (done or truncated):
                    t1 = time.perf_counter()
                    action, us = link.infer(list(obs))
                    latencies.append(time.perf_counter() - t1)
                    compute += us
                    obs, r, done, truncated = env.step(action)
                    total += r
                flights.append((total, 1 if (not done) and Q.success(env.P, env.s) else 0, float(np.linalg.norm(list(env.s)[0:3])), env.t))
            lat = np.array(latencies) * 1e6
            serial = tasks.summary(Q, flights)
            result.update({"serial_" + k: v for k, v in serial.items()})
            result.update(serial_p50_us=float(np.percentile(lat, 50)), serial_p99_us=float(np.percentile(lat, 99)), serial_steps=len(lat),
                          serial_control_rate_hz=1e6 / float(np.percentile(lat, 50)))
            say("5/5 over the serial line (quadrotor on the host, policy on the board): flies %d of %d episodes, final distance %.3f m; "
                "round trip p50 %.0f us, p99 %.0f us over %d steps (a %.0f Hz control rate)"
                % (sum(f[1] for f in flights), serial_episodes, serial["position_error_m"], result["serial_p50_us"], result["serial_p99_us"], len(lat), result["serial_control_rate_hz"]))
            if not flights:
                raise LinkError("no serial flight ran")
    return result
