"""The sim-to-real options of `microrl train` and `microrl eval`: --action-delay, --latency-from
(a board's round trip measured by `microrl bench serial --json`, as whole control steps) and
--nominal, turned into the perturbations a run trains or is evaluated with (microrl.task)."""
import json
import math
import os

from . import CommandError
from .options import check_input, whole

DELAY_HELP = ("hold every action back by STEPS control steps (a real loop's latency), observing the commands not applied yet (default 0)")
LATENCY_HELP = ("the action delay a board's `microrl bench serial --json > FILE` measured, in whole control steps")


def add_options(p, training=True):
    """--action-delay and --latency-from (and, training, --nominal) on the parser p."""
    from microrl.perturb import MAX_DELAY

    p.add_argument("--action-delay", type=whole(0, MAX_DELAY, "the most an action delay holds"), metavar="STEPS",
                   help=DELAY_HELP if training else "the perturbed evaluation also holds every action back by STEPS control steps (a board's latency)")
    p.add_argument("--latency-from", metavar="FILE", help=LATENCY_HELP + ("" if training else "; the perturbed evaluation runs with it"))
    if training:
        p.add_argument("--no-pending-actions", dest="pending_actions", action="store_false",
                       help="with a delay, observe the task's observation alone (docs/sim-to-real.md)")
        p.add_argument("--nominal", action="store_true", help="train without the task's own sim-to-real perturbations (docs/sim-to-real.md)")


def delay_from_bench(path, dt):
    """(steps, one line saying how) of the bench JSON at path for a task with time step dt (s);
    CommandError naming what is wrong with the file."""
    from microrl.perturb import MAX_DELAY

    if not os.path.exists(path):
        raise CommandError("--latency-from %s: no such file (write one with: microrl bench serial PORT POLICY --json > %s)" % (path, path))
    if os.path.isdir(path):
        raise CommandError("--latency-from %s is a folder; give the JSON file `microrl bench serial --json` wrote" % path)
    try:  # a regular file only: a named pipe's read would wait for ever
        check_input(path, "JSON file of `microrl bench serial --json`")
    except CommandError as e:
        raise CommandError("--latency-from: %s" % e) from None
    try:
        with open(path, "rb") as f:
            result = json.loads(f.read(1 << 20).decode("utf-8"))
    except (OSError, ValueError, RecursionError) as e:  # (RecursionError: arrays nested thousands deep)
        raise CommandError("--latency-from %s: not the JSON `microrl bench serial --json` writes (%s)" % (path, str(e).splitlines()[0] if str(e) else type(e).__name__)) from None
    p50 = result.get("p50_us") if isinstance(result, dict) else None
    if isinstance(p50, bool) or not isinstance(p50, (int, float)):
        raise CommandError("--latency-from %s: no round trip in it (p50_us); write it with: microrl bench serial PORT POLICY --json > %s" % (path, path))
    try:
        p50 = float(p50)
    except OverflowError:  # a whole number of 400 digits
        raise CommandError("--latency-from %s: its round trip p50_us is a number of %d digits, not a time a bench measures" % (path, len(str(abs(p50))))) from None
    if not (0.0 < p50 < float("inf")):
        raise CommandError("--latency-from %s: its round trip p50_us is %r, not a positive time (did the bench complete any request?)" % (path, p50))
    steps = int(math.ceil(p50 * 1e-6 / dt - 1e-9))
    if steps > MAX_DELAY:
        raise CommandError("--latency-from %s: a round trip of %.1f ms is %d control steps of %g ms, beyond the %d steps an action delay can hold"
                           % (path, p50 / 1000.0, steps, dt * 1000.0, MAX_DELAY))
    line = "latency: round trip %.2f ms (median of %s) at the task's %g ms step = an action delay of %d step%s" % (
        p50 / 1000.0, path, dt * 1000.0, steps, "" if steps == 1 else "s")
    return steps, line


def perturbations(args, found, training=True):
    """The perturbations ({name: value}) the options in args ask for on the task found
    (tasks.resolve), None for the task's own choice (training) or none (evaluation), and a line
    to show the user, or None; CommandError for options that do not fit."""
    from microrl.task import parameters
    from microrl.perturb import training as training_perturbations
    from microrl.perturb import GENERIC_DIM, set_values
    from microrl.compat import zeros

    delay = getattr(args, "action_delay", None)
    bench = getattr(args, "latency_from", None)
    nominal = getattr(args, "nominal", False)
    if delay is not None and bench is not None:
        raise CommandError("give --action-delay or --latency-from, not both")
    if not getattr(args, "pending_actions", True) and not delay and bench is None:
        raise CommandError("--no-pending-actions goes with an action delay: give --action-delay STEPS (1 or more) or --latency-from FILE")
    if delay is None and bench is None and not nominal:
        return None, None
    module = found.module if found is not None else None
    if module is None:
        flag = "--nominal" if nominal and delay is None and bench is None else ("--action-delay" if delay is not None else "--latency-from")
        raise CommandError("%s needs a task written against the task interface (a built-in task, a task file or module: docs/tasks.md), "
                           "not %s" % (flag, found.name if found is not None else "this task"))
    line = None
    if bench is not None:
        delay, line = delay_from_bench(bench, float(module.DT))
    chosen = {} if (nominal or not training) else training_perturbations(module)
    if delay:
        chosen["action_delay"] = delay
    try:
        set_values(module, parameters(module), zeros(GENERIC_DIM, "d"), chosen)
    except ValueError as e:
        raise CommandError(str(e)) from None
    return chosen, line
