"""microrl import: a policy trained elsewhere (Stable-Baselines3, CleanRL-style PyTorch, ONNX) as
a checked microrl policy file (docs/import.md)."""
import json
import os
import warnings

from microrl.refusals import count

from ..importers.errors import brief
from ..references import COUNT, MAX_REFERENCES
from . import CommandError
from .options import OUTPUT_HELP, SEED, check_input, check_output, number, whole

MAX_CHECK = 100_000  # observations of the check: 256 suffice, a million rows of actions would fill the memory for nothing


def register(sub):
    p = sub.add_parser(
        "import",
        help="a policy from Stable-Baselines3 (.zip), a CleanRL-style PyTorch actor (.pt) or ONNX (.onnx) as a checked policy file",
        description="Convert a trained actor into a microrl policy file (.mrlp) with its observation normalisation and action scaling: "
        "a Stable-Baselines3 .zip (TD3, DDPG, SAC, PPO, A2C with an MlpPolicy; with --vecnormalize the VecNormalize statistics it "
        "was trained behind, clip_obs and epsilon included), a PyTorch state_dict in the layout of CleanRL's td3/sac/ppo "
        "continuous-action actors, or an ONNX MLP (Gemm/MatMul layers with Relu, Tanh, Sigmoid or Gelu). The file computes the "
        "framework's own deterministic action: SB3's predict(obs, deterministic=True) (SAC and TD3: tanh, scaled to the action Box; "
        "PPO: the Gaussian mean clipped to the Box), CleanRL's actor, onnxruntime's output. Each import checks itself: the "
        "framework's actions against the file's (loaded back with microrl.load) on CHECK observations, and the file is written "
        "only if they agree within the tolerance, with reference vectors that microrl deploy checks on the board. Needs the "
        "optional extra: pip install torch==2.13.0 (the CPU wheel), then pip install 'microrl[import]'. No code from the files runs: "
        "pickles are read with an allow-list (numpy arrays, gymnasium spaces, plain values), SB3's pickled schedules and buffers are "
        "not read, .pt files with torch.load(weights_only=True); --trust-pickle loads a .zip's and a .pkl's pickles as SB3 does, for a "
        "file you trust. Sources are refused by size before they are read (docs/import.md).",
    )
    p.add_argument("source", metavar="SOURCE", help="an SB3 .zip, a PyTorch .pt/.pth/.cleanrl_model state_dict, or an .onnx file")
    p.add_argument("--out", help="the policy file to write (default: SOURCE with the extension .mrlp)" + OUTPUT_HELP)
    p.add_argument("--kind", choices=("sb3", "torch", "onnx"), help="what SOURCE is (default: told from its contents and name)")
    p.add_argument("--vecnormalize", metavar="PKL", help="SB3: the VecNormalize statistics the model was trained behind (VecNormalize.save's .pkl)")
    p.add_argument("--trust-pickle", action="store_true", help="SB3: unpickle the zip's 'data' and the VecNormalize .pkl as SB3 does, "
                   "which runs any code they hold: only for files you trust, when the allow-list refuses one (default: numpy arrays, "
                   "gymnasium spaces and plain values only; pickled schedules and buffers not read)")
    p.add_argument("--algo", choices=("td3", "ddpg", "sac", "ppo", "a2c"), help="SB3: the algorithm (default: from the zip's policy class)")
    p.add_argument("--layout", choices=("td3", "sac", "ppo"), help="PyTorch: CleanRL's actor layout (default: from the state_dict's keys)")
    p.add_argument("--activation", choices=("relu", "tanh", "sigmoid", "gelu"), help="PyTorch: the hidden layers' activation (default: relu for td3 and sac, tanh for ppo, as CleanRL's)")
    p.add_argument("--obs-stats", metavar="NPZ", help="PyTorch, ONNX: a .npz with 'mean' and 'var' (and optionally 'epsilon', default 1e-8, and 'clip') of an observation "
                   "normalisation done outside the network, as gymnasium's NormalizeObservation (CleanRL's PPO): (obs - mean) / sqrt(var + epsilon), clipped to +-clip")
    p.add_argument("--env", metavar="ID", help="a gymnasium id: its observation space for the check's observations, its action Box for --clip-actions, "
                   "--scale-actions and CleanRL's PPO (its ClipAction)")
    p.add_argument("--action-low", metavar="LOW", help="the action Box's low bound(s), comma-separated (one number: every action), instead of --env's")
    p.add_argument("--action-high", metavar="HIGH", help="the action Box's high bound(s), as --action-low")
    p.add_argument("--output", metavar="NAME", help="ONNX: the graph output that is the action (default: the first)")
    p.add_argument("--scale-actions", action="store_true", help="ONNX: the output is in [-1, 1]; scale it to the action Box (as SB3's unscale_action; SB3's ONNX "
                   "export guide leaves this out of the graph)")
    p.add_argument("--clip-actions", action="store_true", help="ONNX: clip the actions to the action Box")
    p.add_argument("--check", type=whole(1, MAX_CHECK, "a few hundred check a mapping"), default=256, metavar="N",
                   help="observations to check the file's actions on against the framework's (default 256, at most %d)" % MAX_CHECK)
    p.add_argument("--seed", type=SEED, default=0, help="seed of the check's observations, 0 to 2**32-1 (default 0)")
    p.add_argument("--tolerance", type=number(above=0, below=1), default=1e-4, help="largest difference allowed, relative to max(1, |action|), above 0 and below 1 (default 1e-4)")
    p.add_argument("--references", type=whole(0, MAX_REFERENCES, "a handful is enough: each costs 4 bytes per observation and action"), default=None, metavar="N",
                   help="reference vectors in the file: observations of the check with the framework's actions, so at most --check of them "
                   "(default %d, or --check's number if smaller; at most %d; 0: none, a version 1 file if nothing else needs version 2)" % (COUNT, MAX_REFERENCES))
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.set_defaults(func=run)


def _floats(text, option):
    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = [float("nan")]
    if any(v != v for v in values):
        raise CommandError("%s: expected numbers separated by commas (inf and -inf for an unbounded action), got %r" % (option, text))
    return values


def _action_box(args, n_out, space):
    """(low, high) arrays of n_out values from --action-low/--action-high or the env's Box; None."""
    import numpy as np

    if (args.action_low is None) != (args.action_high is None):
        raise CommandError("give both --action-low and --action-high, or neither")
    if args.action_low is not None:
        low, high = _floats(args.action_low, "--action-low"), _floats(args.action_high, "--action-high")
        low = low * n_out if len(low) == 1 else low
        high = high * n_out if len(high) == 1 else high
        if len(low) != n_out or len(high) != n_out:
            raise CommandError("--action-low/--action-high give %d/%d bounds for %s" % (len(low), len(high), count(n_out, "action")))
        low, high = np.array(low), np.array(high)
    elif space is not None:
        if not hasattr(space, "low"):
            raise CommandError("--env %s has %s actions, not a Box: microrl's policies give continuous actions" % (args.env, type(space).__name__))
        low, high = np.asarray(space.low, np.float64).reshape(-1), np.asarray(space.high, np.float64).reshape(-1)
        if low.size != n_out:
            raise CommandError("--env %s has %s, the network %d" % (args.env, count(low.size, "action"), n_out))
    else:
        return None
    if args.action_low is not None:
        _ordered(low, high, args)
    if not np.all(low <= high):
        raise CommandError("the action Box's low bounds must not be above its high ones")
    return low, high


def _ordered(low, high, args):
    if not all(a < b for a, b in zip(low, high)):
        raise CommandError("--action-low/--action-high: each low bound must be below its high bound, got %s and %s" % (args.action_low, args.action_high))


def _obs_stats(path):
    import numpy as np

    from ..importers import ImportRefused
    from ..importers.limits import check_source

    check_input(path, "--obs-stats file (a .npz of 'mean' and 'var')")
    try:
        check_source(path, "the --obs-stats file")  # a .npz is a zip: a bomb is refused before numpy inflates it
    except ImportRefused as e:
        raise CommandError("--obs-stats %s" % e) from None
    try:
        with np.load(path) as z:
            data = {k: np.asarray(z[k], np.float64) for k in z.files}
    except Exception as e:
        raise CommandError("--obs-stats %s: not a .npz numpy.load reads (%s)" % (path, e)) from None
    if "mean" not in data or ("var" not in data and "std" not in data):
        raise CommandError("--obs-stats %s: needs arrays 'mean' and 'var' (np.savez(PATH, mean=..., var=...)); it has %s" % (path, ", ".join(data) or "none"))
    mean = data["mean"].reshape(-1)
    eps = data.get("epsilon", np.float64(1e-8)).reshape(-1)
    clip = data["clip"].reshape(-1) if "clip" in data else None
    if eps.size != 1 or (clip is not None and clip.size != 1):
        raise CommandError("--obs-stats %s: 'epsilon' and 'clip' must be single numbers" % path)
    eps, clip = float(eps[0]), None if clip is None else float(clip[0])
    spread = data["std"].reshape(-1) if "std" in data else data["var"].reshape(-1)
    with np.errstate(invalid="ignore"):  # a negative variance is refused below, not warned about
        std = spread if "std" in data else np.sqrt(spread + eps)
    if mean.shape != std.shape or not (np.all(np.isfinite(mean)) and np.all(std > 0) and np.all(np.isfinite(std))) or not (clip is None or clip > 0):
        raise CommandError("--obs-stats %s: 'mean' and 'var' must be finite vectors of one length, the variance not negative (var + epsilon above 0), "
                           "'clip' above 0" % path)
    return mean, std, clip


def _env_spaces(env_id):
    if env_id is None:
        return None, None
    import gymnasium as gym

    try:
        env = gym.make(env_id)
    except Exception as e:
        raise CommandError("--env %s: gymnasium could not make it (%s)" % (env_id, brief(e))) from None
    try:
        return env.observation_space, env.action_space
    finally:
        env.close()


def _width(space, env_id):
    import numpy as np

    if not hasattr(space, "low") or space.shape is None:
        raise CommandError("--env %s has %s observations, not a Box: microrl's policies take one vector" % (env_id, type(space).__name__))
    return int(np.prod(space.shape))


def _convert(args, source, out):
    """The import itself (run's checks done): the report, or ImportRefused/CommandError."""
    import numpy as np

    from ..importers import convert, detect

    kind = args.kind or detect(source)
    misplaced = [opt for opt, value, kinds in (("--vecnormalize", args.vecnormalize, ("sb3",)), ("--algo", args.algo, ("sb3",)),
                                               ("--trust-pickle", args.trust_pickle, ("sb3",)),
                                               ("--action-low", args.action_low, ("torch", "onnx")), ("--action-high", args.action_high, ("torch", "onnx")),
                                               ("--layout", args.layout, ("torch",)), ("--activation", args.activation, ("torch",)),
                                               ("--obs-stats", args.obs_stats, ("torch", "onnx")), ("--output", args.output, ("onnx",)),
                                               ("--scale-actions", args.scale_actions, ("onnx",)), ("--clip-actions", args.clip_actions, ("onnx",)))
                 if value and kind not in kinds]
    if misplaced:
        raise CommandError("%s: not for %s sources (%s is one)" % (", ".join(misplaced), kind, source))
    obs_space, act_space = _env_spaces(args.env)
    stats = _obs_stats(args.obs_stats) if args.obs_stats else None
    if kind == "sb3":
        from ..importers import sb3

        imported = sb3.load(source, args.vecnormalize, args.algo, args.trust_pickle)
    elif kind == "torch":
        from ..importers import cleanrl

        sd = cleanrl.read_state_dict(source)
        layout = args.layout or cleanrl.detect_layout(sd, source)
        names = cleanrl.layer_names(sd, layout, source)
        n_out = sd[names[-1] + ".weight"].shape[0]
        if layout == "ppo":
            box = _action_box(args, n_out, act_space)  # ClipAction's Box: the options' or --env's
        elif args.action_low is not None:
            if "action_scale" in sd:  # the actor scales its tanh by its own buffers: a second Box would be ignored or contradict them
                raise CommandError("--action-low/--action-high: the %s layout's actor scales its tanh output by its action_scale and action_bias "
                                   "buffers (%s has them), which give its action Box; the options are for the ppo layout, a %s actor "
                                   "without those buffers, and ONNX" % (layout, source, layout))
            box = _action_box(args, n_out, None)
            if not np.all(np.isfinite(box[0]) & np.isfinite(box[1])):
                raise CommandError("--action-low/--action-high: the %s layout scales its tanh output to the Box, which needs finite bounds" % layout)
        else:
            box = None  # the buffers, or the tanh output as it is
        imported = cleanrl.load(source, layout, args.activation, box, stats)
    else:
        from ..importers import onnx_graph

        box = None
        if args.scale_actions or args.clip_actions:
            probe = onnx_graph.load(source, args.output, stats)  # the output width first
            box = _action_box(args, probe.chain._width(), act_space)
            if box is None:
                raise CommandError("--scale-actions and --clip-actions need the action Box: give --env or --action-low/--action-high")
        elif args.action_low is not None:
            raise CommandError("--action-low/--action-high: for an ONNX source they are the Box of --scale-actions or --clip-actions; give one of those, "
                               "or leave them out")
        imported = onnx_graph.load(source, args.output, stats, box, args.scale_actions, args.clip_actions)
    if obs_space is not None and _width(obs_space, args.env) != imported.chain.n_in:
        raise CommandError("--env %s has %s, the network takes %d" % (args.env, count(_width(obs_space, args.env), "observation"), imported.chain.n_in))
    return convert(imported, out, args.check, args.seed, args.tolerance, args.references, space=obs_space)


def _references(args):
    """--references, at most --check: the reference vectors are observations of the check."""
    if args.references is None:
        return min(COUNT, args.check)
    if args.references > args.check:
        raise CommandError("--references %d is more than --check %d: the reference vectors are observations of the check with the framework's "
                           "actions; give --check %d or more, or fewer references" % (args.references, args.check, args.references))
    return args.references


def run(args):
    from ..importers import ImportRefused

    source = args.source
    check_input(source, "source (an SB3 .zip, a PyTorch .pt state_dict or an .onnx file)")
    out = args.out if args.out is not None else os.path.splitext(source)[0] + ".mrlp"
    if out and (os.path.abspath(out) == os.path.abspath(source) or (os.path.exists(out) and os.path.samefile(out, source))):
        raise CommandError("--out would overwrite the source; choose another file")
    check_output(out, "--out")
    for option, path in (("--vecnormalize", args.vecnormalize), ("--obs-stats", args.obs_stats)):
        if path is not None:
            check_input(path, "%s file" % option)
    for option, text in (("--action-low", args.action_low), ("--action-high", args.action_high)):
        if text is not None:
            _floats(text, option)  # the numbers before any file is read (their count once the network's is known)
    if args.action_low is not None and args.action_high is not None:
        low, high = _floats(args.action_low, "--action-low"), _floats(args.action_high, "--action-high")
        if len(low) == len(high) or 1 in (len(low), len(high)):
            _ordered(low * len(high) if len(low) == 1 else low, high * len(low) if len(high) == 1 else high, args)
    args.references = _references(args)
    try:
        with warnings.catch_warnings():
            # the libraries' warnings (a model saved by another SB3 version, torch's deprecations)
            # would break the one line of a refusal; the check against the framework's own
            # actions is what tells whether the file is right
            warnings.simplefilter("ignore")
            report = _convert(args, source, out)
    except ImportRefused as e:
        message = str(e)  # a refusal deep in a network's layers does not name the file: the message does
        raise CommandError(message if message.startswith(source + ":") or args.vecnormalize and message.startswith(args.vecnormalize) else "%s: %s" % (source, message)) from None
    report["input"] = source
    if args.json:
        print(json.dumps(report))
        return 0
    print("wrote %s: %s, %d bytes" % (out, report["network"], report["bytes"]))
    print("from %s" % report["source"])
    for note in report["notes"]:
        print("  " + note)
    print("checked on %s: largest difference from %s actions %.2g (absolute %.2g; tolerance %.2g)%s"
          % (report["observations"], report["framework"], report["max_difference"], report["max_abs_difference"], report["tolerance"],
             "; %.0f%% of the action values at the clipping bounds" % (100 * report["actions_at_clip"]) if report["actions_at_clip"] else ""))
    if report["references"]:
        print("%s in the file (%s actions): microrl deploy checks them on the board" % (count(report["references"], "reference vector"), report["framework"]))
    return 0
