"""microrl export: convert a policy file for a board, e.g. to int16 fixed point."""
import json
import os

from microrl.refusals import count

from ..references import COUNT, MAX_REFERENCES
from . import CommandError
from .options import EPISODES, EPISODES_OR_NONE, OUTPUT_HELP, SEED, check_output, load_policy, number, whole


def register(sub):
    p = sub.add_parser(
        "export",
        help="convert a policy for a board (--int16: fixed point for boards without an FPU or native module)",
        description="Quantise a float policy (.mrlp) to int16 weights and activations with per-layer power-of-two "
        "scales (a .mrlq file, docs/fixedpoint.md). On the board, microrl.load() reads it and runs it with "
        "@micropython.viper integer code: no float math in the network, no native module, no ulab, half the RAM. "
        "Activation scales come from calibration observations: closed-loop rollouts of the float policy on its task "
        "(--task: a task or a gymnasium id; or the built-in task of the policy's shape, e.g. Pendulum for 3 observations and 1 action), else uniform "
        "samples in +-OBS_RANGE. The report compares the two policies' actions, and on the task their closed-loop returns.",
    )
    p.add_argument("policy", help="a float policy file (.mrlp), e.g. from microrl train")
    p.add_argument("--int16", action="store_true", help="quantise to int16 fixed point (the one export format so far)")
    p.add_argument("--out", help="output file (default: POLICY with the extension .mrlq)" + OUTPUT_HELP)
    p.add_argument("--task", metavar="TASK", help="the policy's task: a built-in name, a task file or module, or a gymnasium id (module:EnvId) "
                   "(default: the built-in task of the policy's shape, if any)")
    p.add_argument("--obs-range", type=number(above=0), default=None, help="calibrate on uniform observations in +-OBS_RANGE instead of rollouts on the task")
    p.add_argument("--calibration-episodes", type=EPISODES, default=5, help="episodes on the task for calibration (default 5)")
    p.add_argument("--eval-episodes", type=EPISODES_OR_NONE, default=10, help="episodes on the task comparing the returns (default 10; 0 skips)")
    p.add_argument("--seed", type=SEED, default=1, help="seed of the calibration rollouts or samples, 0 to 2**32-1 (default 1)")
    p.add_argument("--references", type=whole(0, MAX_REFERENCES, "a handful is enough: each costs 4 bytes per observation and action"), default=COUNT, metavar="N",
                   help="reference vectors in the int16 file (default %d, at most %d; 0: none, a version 1 file an older microrl reads): the float "
                   "file's reference observations (else calibration observations), each moved to the middle of its int16 input step, "
                   "with the int16 policy's actions; microrl deploy and microrl.load(path, check=True) check them" % (COUNT, MAX_REFERENCES))
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def run(args):
    from microrl import fixedpoint
    from microrl.task import task_obs_dim

    from .. import calibration as Q
    from .. import tasks
    from .eval import pick_task

    if not args.int16:
        raise CommandError("choose the format to export to: --int16 (int16 fixed point for the viper path)")
    policy = load_policy(args.policy, " (give a float policy file, e.g. from microrl train)")
    if isinstance(policy, fixedpoint.QuantisedPolicy):
        raise CommandError("%s is already an int16 policy; export a float policy (.mrlp)" % args.policy)
    out = args.out or os.path.splitext(args.policy)[0] + ".mrlq"
    if os.path.abspath(out) == os.path.abspath(args.policy) or (os.path.exists(out) and os.path.samefile(out, args.policy)):
        raise CommandError("--out would overwrite the input policy; choose another file")
    check_output(out, "--out")
    task = gym_env = None
    if args.task is not None or len(tasks.by_shape(task_obs_dim(policy), policy.act_dim)) == 1:
        found = pick_task(policy, args.task)
        task, gym_env = found.module, found.gym_id
    if args.obs_range is not None:
        try:
            Q.check_range(policy, args.obs_range)
        except ValueError as e:
            raise CommandError(str(e)) from None
    try:
        observations = Q.calibration_observations(policy, args.calibration_episodes, args.seed, args.obs_range, task=task, gym_env=gym_env)
    except tasks.TaskError as e:
        raise CommandError(str(e)) from None
    try:
        quantised = fixedpoint.quantise(policy, observations)
    except ValueError as e:
        raise CommandError(str(e)) from None
    if args.references:
        _attach_references(quantised, policy, args.policy, observations, args.references)
    fixedpoint.save(out, quantised)
    worst, mean = Q.action_error(policy, quantised, observations)
    report = {
        "input": args.policy,
        "output": out,
        "bytes_float": os.path.getsize(args.policy),
        "bytes_int16": os.path.getsize(out),
        "network": quantised.describe(),
        "frac_bits_activations": quantised.fx,
        "frac_bits_weights": quantised.fw,
        "calibration_observations": len(observations),
        "action_error_max": worst,
        "action_error_mean": mean,
        "references": quantised.references.count if quantised.references is not None else 0,
    }
    if args.eval_episodes > 0 and (task is not None or gym_env is not None):
        report["task"] = found.name
        try:
            loop = Q.closed_loop(policy, quantised, args.eval_episodes, task=task, gym_env=gym_env)
        except tasks.TaskError as e:
            raise CommandError(str(e)) from None
        report.update({k: loop[k] for k in ("float_mean", "float_std", "int16_mean", "int16_std", "mean_difference", "worst_episode_difference")})
    if args.json:
        print(json.dumps(report))
        return 0
    print("wrote %s: %s, %d bytes (float: %d)" % (out, report["network"], report["bytes_int16"], report["bytes_float"]))
    print("fractional bits: activations %s, weights %s" % (quantised.fx, quantised.fw))
    print("action error on %s: max %.3g, mean %.3g" % (count(len(observations), "calibration observation"), worst, mean))
    if report["references"]:
        print("%s (the int16 policy's actions on the host; microrl deploy checks them on the board)" % count(report["references"], "reference vector"))
    if "int16_mean" in report:
        print("%s return over %s: float %.1f +- %.1f, int16 %.1f +- %.1f (difference %+.2f; worst episode %.2f)"
              % (report["task"], count(args.eval_episodes, "episode"), report["float_mean"], report["float_std"], report["int16_mean"], report["int16_std"],
                 report["mean_difference"], report["worst_episode_difference"]))
    return 0


def _attach_references(quantised, policy, float_path, calibration, count):
    """The float file's reference observations (else calibration observations), centred on their
    int16 input steps, with the quantised policy's actions."""
    from microrl.references import read

    from ..references import attach, centred_for_int16, spread

    refs = read(policy, float_path)
    source = [list(refs.observation(k)) for k in range(refs.count)] if refs is not None else spread(calibration, 4 * count)
    centred = centred_for_int16(quantised, source)[:count]
    if centred:
        attach(quantised, centred, [list(quantised(o)) for o in centred])
