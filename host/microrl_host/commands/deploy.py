"""microrl deploy: copy microrl (and a policy) to a MicroPython board."""
import json
import sys

import os

from microrl.refusals import count

from .. import tasks
from ..runlog import run_folder_of
from . import CommandError
from .options import number


def register(sub):
    p = sub.add_parser(
        "deploy",
        help="copy microrl and a policy to a MicroPython board (only what changed, verified)",
        description="Copy the device core (to /lib/microrl), the tasks the board runs (to /lib/microrl/tasks/) and optionally a "
        "policy (to /policy.mrlp) to a MicroPython board with mpremote, and the native C kernels that fit the board (to /lib/microrl_kernels.mpy). Only changed files "
        "are copied; each is verified by SHA-256 on the board and swapped in only when "
        "all arrived (an interrupted copy leaves the previous version usable). Then microrl is imported on the board and "
        "the policy's actions are checked against the host's: on the reference vectors the policy file carries (microrl train, "
        "import and export write them), else on a few observations; the report gives the largest difference.",
    )
    p.add_argument("--port", help="the board's serial port, e.g. /dev/ttyUSB0, /dev/ttyACM0, or a virtual board's /dev/pts/N (needed unless --plan)")
    p.add_argument("policy_file", nargs="?", metavar="POLICY", help="a policy file (.mrlp) to copy and check (or --policy)")
    p.add_argument("--policy", help="a policy file (.mrlp) to copy and check")
    p.add_argument("--task", action="append", metavar="TASK", help="a task the board runs in closed loop or trains on, copied to its "
                   "/lib/microrl/tasks/ under its file's name and imported there to check: a built-in name (%s) or your task "
                   "file (./mytask.py, docs/tasks.md), a hardware task too; repeat for several (default: the task the policy's run "
                   "names in POLICY-without-.mrlp.run/run.json, else the built-in task of the policy's shape; without a policy, the "
                   "built-in tasks the board has, updated). Built-in tasks not named are removed from the board; yours stay"
                   % ", ".join(tasks.builtin_names()))
    p.add_argument("--mpy", action="store_true", help="compile to .mpy with mpy-cross for the board's MicroPython version and architecture (faster import, less RAM)")
    p.add_argument("--no-native", action="store_true", help="leave the native C kernels (lib/microrl_kernels.mpy) out, and remove them if deployed before: the board runs plain Python")
    p.add_argument("--timeout", type=number(above=0), default=10.0, help="seconds to wait for the board's REPL (default 10)")
    p.add_argument("--plan", action="store_true", help="write nothing: say what the deploy would take on the board at hand (--port: its free "
                   "heap, filesystem and clock, read only) and on the named board types (--board): the flash and heap of the core, the kernels "
                   "and the policy, whether they fit, the heap of on-board training, and the time of a policy step and a training step from "
                   "the kernels' instruction counts on an emulated core, beside the RLtools paper's Table 2 (docs/boards.md)")
    p.add_argument("--board", action="append", metavar="TYPE", choices=sorted(plan_types()) + ["all"],
                   help="with --plan: a board type to plan for, from its nominal figures (%s, or all; repeat; default without --port: all)" % ", ".join(sorted(plan_types())))
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def plan_types():
    from ..board.plan import BOARD_TYPES

    return BOARD_TYPES


def run_task(policy_path):
    """The task the training run of policy_path names (its run folder's run.json, as `microrl
    train` writes it beside the policy), or None when there is no such run; CommandError when the
    run names a task this host does not find."""
    import json

    meta = os.path.join(run_folder_of(policy_path), "run.json")
    try:
        with open(meta) as f:
            name = json.load(f).get("task")
    except (OSError, ValueError, AttributeError, RecursionError):  # (RecursionError: JSON nested thousands deep)
        return None
    if not isinstance(name, str):
        return None
    try:
        found = tasks.resolve(name)
    except tasks.TaskError:
        raise CommandError("the policy's run (%s) names the task %s, which is no built-in task nor a module in the current folder: "
                           "say which file it is with --task ./FILE.py" % (meta, name)) from None
    return found.module if found.compiled else None


def run(args):
    from ..board.deploy import DeployError, deploy

    if args.policy_file and args.policy and args.policy_file != args.policy:
        raise CommandError("two policies given (%s and --policy %s): deploy one" % (args.policy_file, args.policy))
    policy = args.policy or args.policy_file
    chosen = args.task
    if chosen is None and policy:
        named = run_task(policy)
        chosen = [named] if named is not None else None
    if args.plan:
        from .deploy_plan import run_plan

        return run_plan(args, policy, chosen)
    if args.board:
        raise CommandError("--board names a board type to plan for: use it with --plan")
    if not args.port:
        raise CommandError("give the board's serial port (--port PORT), or --plan for a report that needs no board")
    log = None if args.json else (lambda m: print("  " + m, file=sys.stderr))
    try:
        report = deploy(args.port, policy, args.mpy, log=log, timeout=args.timeout, use_native=not args.no_native, tasks=chosen)
    except DeployError as e:
        raise CommandError(str(e)) from None
    if args.json:
        report = dict(report)
        report["info"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in report["info"].items()}
        print(json.dumps(report))
        return 0
    print("board: %s" % report["board"])
    print("microrl %s (%s files): %d copied (%s), %d unchanged"
          % (report["microrl"], report["format"], len(report["copied"]), count(report["bytes"], "byte"), report["unchanged"]))
    if report["native"]:
        print("native kernels: /lib/microrl_kernels.mpy for %s" % report["native"])
    if report["native_note"]:
        print(report["native_note"])
    print("backend on the board: %s" % report["backend"])
    for name, t in report["tasks"].items():
        print("task %s: microrl.tasks.%s on the board, %s, %s, %s per episode"
              % (t["NAME"], name, count(t["OBS_DIM"], "observation"), count(t["ACT_DIM"], "action"), count(t["EPISODE_STEPS"], "step")))
    if "policy" in report:
        if report["policy_references"]:
            n = report["policy_references"]
            print("policy: %s; its %s on the board %s the actions stored in the file (largest difference %.2g)"
                  % (report["policy"], count(n, "reference vector"), "matches" if n == 1 else "match", report["policy_max_diff"]))
        else:
            print("policy: %s; actions on the board match the host's (largest difference %.2g; the file has no reference vectors)" % (report["policy"], report["policy_max_diff"]))
    return 0
