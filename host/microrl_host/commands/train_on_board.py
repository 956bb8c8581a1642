"""microrl train-on-board: TD3 trained on the board itself, against the board's own copy of a task."""
import json
import math
import sys

from microrl.refusals import count

from .. import tasks
from . import CommandError
from .options import EPISODES_OR_NONE, OUTPUT_HELP, SEED, STEPS, check_output, integer, parse_hidden


def register(sub):
    p = sub.add_parser(
        "train-on-board",
        help="train TD3 on a MicroPython board against its own copy of a task, then evaluate the policy",
        description="Deploy microrl and the task (as .mpy files), run the device core's TD3 on the board against the board's copy "
        "of the task (a hardware task's step drives the board's actuators and reads its sensors), stream its progress "
        "(step, latest return, free RAM) to the host, bring the trained actor back and evaluate it with the same task: on the "
        "host, or on the board in closed loop when the task does not load on the host (a hardware task). Sizes you "
        "leave out are chosen from the board's free heap and largest free block: the largest network that fits with a "
        "useful replay buffer, with a measured margin (see docs/on-board-training.md); a run that would not fit is "
        "refused before it starts.",
    )
    p.add_argument("--port", required=True, help="the board's serial port (or a virtual board's: 'microrl board sim')")
    p.add_argument("--task", default=tasks.DEFAULT, help="the task: a built-in name (%s) or your task file (./mytask.py, "
                   "docs/tasks.md), a hardware task too (default %s)" % (", ".join(tasks.builtin_names()), tasks.DEFAULT))
    p.add_argument("--steps", type=STEPS, required=True, help="environment steps (one training update each after warm-up)")
    p.add_argument("--hidden", type=parse_hidden, default=None, help="hidden layer widths of actor and critics, e.g. 32,32 (default: chosen to fit)")
    p.add_argument("--batch", type=integer(), default=None, help="training batch (default: chosen to fit)")
    p.add_argument("--replay", type=integer(), default=None, help="replay buffer rows, 2 x (observations + actions + 1) + 1 bytes each "
                   "(default: as many as fit, up to one per step)")
    p.add_argument("--warmup", type=integer(), default=None, help="random-action steps before training (default 1000, at most a quarter of the steps)")
    p.add_argument("--actor-lr", type=float, default=None, help="actor learning rate (Adam; default: the device core's, 1e-3)")
    p.add_argument("--critic-lr", type=float, default=None, help="critic learning rate (Adam; default: the device core's, 1e-3)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the training on the board and the evaluation, 0 to 2**32-1 (default 0)")
    p.add_argument("--out", default="board-policy.mrlp", help="where to save the trained policy on the host (default board-policy.mrlp)" + OUTPUT_HELP)
    p.add_argument("--episodes", type=EPISODES_OR_NONE, default=10, help="evaluation episodes with the task's evaluation starts, on the host (on "
                   "the board for a task that does not load on the host); 0: none (default 10)")
    p.add_argument("--no-deploy", action="store_true", help="use the microrl and the task already on the board")
    p.add_argument("--init", metavar="RUN_OR_CHECKPOINT", help="start the board's TD3 from a host TD3 run: its run folder (PREFIX.run/, as "
                   "microrl train writes it) or checkpoint.npz. The actor, both critics, their targets and the Adam moments and "
                   "counts go to the board, checked there; the run's hidden sizes and learning rates are used, and the warm-up is "
                   "one batch (the actor acts from the first step). Refused when those networks do not fit the board's heap")
    p.add_argument("--py", action="store_true", help="deploy .py sources instead of .mpy files (more of the heap goes to compiling them)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args):
    import microrl

    from .. import atomic
    from ..board.deploy import DeployError, board_task, deploy
    from ..board.serial_link import LinkError, connect, disconnect
    from ..board.train import BoardTrainError, read_host_run, train_on_board
    from .progress import Progress

    hidden = args.hidden
    if args.steps < 1 or (args.batch is not None and args.batch < 1) or (args.replay is not None and args.replay < 2):
        raise CommandError("--steps and --batch must be at least 1, and --replay at least 2")
    if args.batch is not None and args.replay is not None and args.replay < args.batch:
        raise CommandError("--replay (%d) must be at least --batch (%d)" % (args.replay, args.batch))
    if args.episodes < 0 or (args.warmup is not None and args.warmup < 0):
        raise CommandError("--episodes and --warmup must be at least 0")
    rates = {}
    for flag, value in (("--actor-lr", args.actor_lr), ("--critic-lr", args.critic_lr)):
        if value is not None:
            if not (math.isfinite(value) and value > 0):
                raise CommandError("%s must be a finite number above 0, got %r" % (flag, value))
            rates[flag[2:].replace("-", "_")] = value
    check_output(args.out, "--out")
    try:
        task = board_task(args.task)
        init = read_host_run(args.init) if args.init else None
    except (DeployError, BoardTrainError) as e:
        raise CommandError(str(e)) from None
    say = (lambda t: print(t, file=sys.stderr)) if args.json else print
    try:
        if not args.no_deploy:
            deploy(args.port, mpy=not args.py, tasks=[task])
        transport = connect(args.port, soft_reset=True)  # a clean heap for training
    except (DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    # the bar is drawn at the board's first progress line, not before: a run refused on the board
    # (sizes that do not fit its heap, an --init that does not match) says so in one line alone
    shown = []

    def progress(n, ret, mem):
        if not shown:
            shown.append(Progress(args.steps, desc="training on the board", quiet=args.quiet or args.json))
        shown[0].update(n, **({"return": "%.0f" % ret} if ret == ret else {}), free_kB="%.0f" % (mem / 1024.0))

    def tell(text):
        if shown and shown[0].bar:
            shown[0].write(text)
        else:
            say(text)

    try:
        result = train_on_board(transport, args.steps, hidden, args.batch, args.replay, args.warmup, args.seed, progress=progress, say=tell,
                                task=task.name, init=init, **rates)
    except BoardTrainError as e:
        raise CommandError(str(e)) from None
    finally:
        if shown:
            shown[0].close()
        disconnect(transport)
    data = result.pop("policy_bytes")
    shape = result.pop("task_shape")
    atomic.write_bytes(args.out, data)
    policy = microrl.load(args.out)
    result.update(policy_file=args.out, episodes=args.episodes)
    if args.episodes:
        try:
            result.update(evaluate_trained(policy, data, task, shape, args.episodes, 10007 + args.seed, args.port))
        except (DeployError, LinkError) as e:
            raise CommandError("the policy is saved in %s, but evaluating it on the board failed: %s" % (args.out, e)) from None
    if args.json:
        print(json.dumps(result))
        return 0
    print("trained %s of %s on the board in %.1f s (%.1f steps/s, %s with updates, %s kernels); free RAM %.1f kB before allocating, %.1f kB at the lowest (estimate %.1f kB)"
          % (count(args.steps, "step"), result["task_name"], result["seconds"], result["steps_per_second"],
             "%.1f steps/s" % result["train_steps_per_second"] if result["train_steps_per_second"] else "?",
             result["backend"], result["mem_free_start"] / 1024.0, (result["mem_free_min"] or 0) / 1024.0, result["estimate_bytes"] / 1024.0))
    evaluated = ""
    if args.episodes:
        figures = "".join(", %s %.3g" % (k, v) for k, v in result["eval_summary"].items())
        evaluated = "; on the %s: return %.1f +- %.1f over %s%s" % (result["eval_on"], result["eval_return_mean"], result["eval_return_std"], count(args.episodes, "episode"), figures)
    print("policy %s copied back to %s%s" % (policy.describe(), args.out, evaluated))
    return 0


def evaluate_trained(policy, policy_bytes, task, shape, episodes, seed, port):
    """The trained policy from the task's evaluation starts drawn from Rng(seed): on the host
    with the host's copy of the task (microrl.evaluate.rollouts, what the board would compute),
    or, for a task that does not load on the host (a hardware task), on the board in closed loop
    (the policy file copied there, ROLLOUT; shape: the board's task, board.train.task_shape). A dict of eval_on, eval_return_mean/std,
    eval_returns and eval_summary (success rate and final error when the task has them)."""
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import Env

    if task.module is not None:
        rows = rollouts(policy, Env(task.module, rng=Rng(seed), evaluation=True), episodes)
        on, module = "host", task.module
    else:
        rows = board_rollouts(policy_bytes, task, episodes, seed, port)
        on, module = "board", shape
    returns = [r[0] for r in rows]
    mean = sum(returns) / len(returns)
    std = (sum((r - mean) ** 2 for r in returns) / len(returns)) ** 0.5
    summary = tasks.summary(module, rows) if tasks.has_summary(module) else {}
    return {"eval_on": on, "eval_return_mean": mean, "eval_return_std": std, "eval_returns": returns, "eval_summary": summary}


def board_rollouts(policy_bytes, task, episodes, seed, port):
    """Rows of the policy in closed loop on the board against its copy of task: the policy file
    copied to the board (verified), then ROLLOUTs."""
    from ..board.deploy import BOARD_POLICY, copy_files
    from ..board.serial_link import SerialLink, connect, disconnect

    transport = connect(port, soft_reset=True)
    try:
        copy_files(transport, {BOARD_POLICY: policy_bytes})
        with SerialLink(port, transport=transport) as link:
            link.load(BOARD_POLICY)
            # a hardware task's steps wait for its period: the time limit's allowance is generous
            return link.rollout(task.name, seed, episodes, timeout=600.0 + 60.0 * episodes)[0]
    finally:
        disconnect(transport)
