"""microrl train-on-board: TD3 on Pendulum, trained on the board itself."""
import json
import math
import sys

from . import CommandError
from .options import EPISODES_OR_NONE, OUTPUT_HELP, SEED, STEPS, check_output, integer, parse_hidden


def register(sub):
    p = sub.add_parser(
        "train-on-board",
        help="train TD3 on Pendulum on a MicroPython board, then evaluate the policy on the host",
        description="Deploy microrl (as .mpy files), run the device core's TD3 on Pendulum on the board, stream its progress "
        "(step, latest return, free RAM) to the host, bring the trained actor back and evaluate it on the host. Sizes you "
        "leave out are chosen from the board's free heap and largest free block: the largest network that fits with a "
        "useful replay buffer, with a measured margin (see docs/on-board-training.md); a run that would not fit is "
        "refused before it starts.",
    )
    p.add_argument("--port", required=True, help="the board's serial port (or a virtual board's: 'microrl board sim')")
    p.add_argument("--steps", type=STEPS, required=True, help="environment steps (one training update each after warm-up)")
    p.add_argument("--hidden", type=parse_hidden, default=None, help="hidden layer widths of actor and critics, e.g. 32,32 (default: chosen to fit)")
    p.add_argument("--batch", type=integer(), default=None, help="training batch (default: chosen to fit)")
    p.add_argument("--replay", type=integer(), default=None, help="replay buffer rows, 11 bytes each (default: as many as fit, up to one per step)")
    p.add_argument("--warmup", type=integer(), default=None, help="random-action steps before training (default 1000, at most a quarter of the steps)")
    p.add_argument("--actor-lr", type=float, default=None, help="actor learning rate (Adam; default: the device core's, 1e-3)")
    p.add_argument("--critic-lr", type=float, default=None, help="critic learning rate (Adam; default: the device core's, 1e-3)")
    p.add_argument("--seed", type=SEED, default=0, help="seed of the training on the board and the evaluation, 0 to 2**32-1 (default 0)")
    p.add_argument("--out", default="board-policy.mrlp", help="where to save the trained policy on the host (default board-policy.mrlp)" + OUTPUT_HELP)
    p.add_argument("--episodes", type=EPISODES_OR_NONE, default=10, help="evaluation episodes on the host (default 10)")
    p.add_argument("--no-deploy", action="store_true", help="use the microrl already on the board")
    p.add_argument("--py", action="store_true", help="deploy .py sources instead of .mpy files (more of the heap goes to compiling them)")
    p.add_argument("--json", action="store_true", help="print the results as one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args):
    import microrl
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum

    from .. import atomic
    from ..board.deploy import DeployError, deploy
    from ..board.serial_link import LinkError, connect, disconnect
    from ..board.train import BoardTrainError, train_on_board
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
    say = (lambda t: print(t, file=sys.stderr)) if args.json else print
    try:
        if not args.no_deploy:
            deploy(args.port, mpy=not args.py)
        transport = connect(args.port, soft_reset=True)  # a clean heap for training
    except (DeployError, LinkError) as e:
        raise CommandError(str(e)) from None
    try:
        with Progress(args.steps, desc="training on the board", quiet=args.quiet or args.json) as bar:
            def progress(n, ret, mem):
                bar.update(n, **({"return": "%.0f" % ret} if ret == ret else {}), free_kB="%.0f" % (mem / 1024.0))

            def tell(text):
                if bar.bar:
                    bar.write(text)
                else:
                    say(text)

            result = train_on_board(transport, args.steps, hidden, args.batch, args.replay, args.warmup, args.seed, progress=progress, say=tell, **rates)
    except BoardTrainError as e:
        raise CommandError(str(e)) from None
    finally:
        disconnect(transport)
    atomic.write_bytes(args.out, result.pop("policy_bytes"))
    policy = microrl.load(args.out)
    mean, std, _ = evaluate(policy, Env(pendulum), args.episodes, seed=10007 + args.seed)
    result.update(policy_file=args.out, eval_return_mean=mean, eval_return_std=std, episodes=args.episodes)
    if args.json:
        print(json.dumps(result))
        return 0
    print("trained %d steps on the board in %.1f s (%.1f steps/s, %s with updates, %s kernels); free RAM %.1f kB before allocating, %.1f kB at the lowest (estimate %.1f kB)"
          % (args.steps, result["seconds"], result["steps_per_second"], "%.1f steps/s" % result["train_steps_per_second"] if result["train_steps_per_second"] else "?",
             result["backend"], result["mem_free_start"] / 1024.0, (result["mem_free_min"] or 0) / 1024.0, result["estimate_bytes"] / 1024.0))
    print("policy %s copied back to %s; on the host: return %.1f +- %.1f over %d episodes" % (policy.describe(), args.out, mean, std, args.episodes))
    return 0
