"""microrl plot: a learning curve PNG from a run folder's progress.csv."""
import json
import os

from . import CommandError
from .options import OUTPUT_HELP, check_output


def register(sub):
    p = sub.add_parser("plot", help="plot a run's learning curve (PNG) from its progress.csv",
                       description="Plot episode returns and evaluation returns (mean +- std) against steps from a run folder written by microrl train.")
    p.add_argument("run", metavar="RUN", help="run folder (or its progress.csv)")
    p.add_argument("--out", metavar="FILE", help="PNG to write (default RUN/learning_curve.png)" + OUTPUT_HELP)
    p.set_defaults(func=run)


def run(args):
    from ..runlog import read_progress

    try:
        rows = read_progress(args.run)
    except FileNotFoundError as e:
        raise CommandError(str(e))
    except (ValueError, KeyError) as e:
        raise CommandError("%s: progress.csv is malformed (%s)" % (args.run, e))
    folder = args.run if os.path.isdir(args.run) else os.path.dirname(os.path.abspath(args.run))
    episodes = [(r["step"], r["episode_return"]) for r in rows if r.get("episode_return") is not None]
    evals = [(r["step"], r["eval_mean"], r["eval_std"] or 0.0) for r in rows if r.get("eval_mean") is not None]
    if not episodes and not evals:
        raise CommandError("%s has no rows yet: nothing to plot" % args.run)
    title = os.path.basename(os.path.abspath(folder))
    meta_path = os.path.join(folder, "run.json")
    if os.path.exists(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            title = "%s on %s, seed %s" % (str(meta.get("algo", "?")).upper(), meta.get("task", "?"), meta.get("seed", "?"))
        except (ValueError, OSError):
            pass
    out = args.out or os.path.join(folder, "learning_curve.png")
    check_output(out, "--out")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    if episodes:
        xs, ys = zip(*episodes)
        ax.plot(xs, ys, ".", color="tab:blue", alpha=0.35, markersize=4, label="training episode return")
    if evals:
        xs, mean, std = zip(*sorted(evals))
        lo = [m - s for m, s in zip(mean, std)]
        hi = [m + s for m, s in zip(mean, std)]
        ax.fill_between(xs, lo, hi, color="tab:orange", alpha=0.25, linewidth=0)
        ax.plot(xs, mean, "-o", color="tab:orange", markersize=3, label="evaluation return (mean ± std)")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("return")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    from .. import atomic
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    atomic.write_bytes(out, buf.getvalue())
    print(out)
    return 0
