"""microrl plot: a learning curve PNG from a run folder's progress.csv."""
import json
import os

from . import CommandError
from .options import OUTPUT_HELP, check_input, check_output


def register(sub):
    p = sub.add_parser("plot", help="plot a run's learning curve (PNG) from its progress.csv",
                       description="Plot episode returns and evaluation returns (mean +- std) against steps from a run folder written by microrl train.")
    p.add_argument("run", metavar="RUN", help="run folder (or its progress.csv)")
    p.add_argument("--out", metavar="FILE", help="PNG to write (default RUN/learning_curve.png)" + OUTPUT_HELP)
    p.set_defaults(func=run)


def run(args):
    import math

    from ..runlog import read_progress

    csv_path = os.path.join(args.run, "progress.csv") if os.path.isdir(args.run) else args.run
    check_input(csv_path, "progress.csv", " (is %s a run folder written by microrl train?)" % args.run)
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(csv_path)), "learning_curve.png")
    check_output(out, "--out")
    try:
        rows = read_progress(csv_path)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise CommandError("%s is malformed (%s); a run folder's progress.csv has the columns step, time_s, episode_return, eval_mean, eval_std" % (csv_path, e))
    except OSError as e:
        raise CommandError("%s cannot be read: %s" % (csv_path, e.strerror or e))
    folder = os.path.dirname(os.path.abspath(csv_path))
    finite = lambda *v: all(x is not None and math.isfinite(x) for x in v)  # noqa: E731 - a damaged row is left out, not plotted
    episodes = [(r["step"], r["episode_return"]) for r in rows if finite(r.get("step"), r.get("episode_return"))]
    evals = [(r["step"], r["eval_mean"], r["eval_std"] or 0.0) for r in rows if finite(r.get("step"), r.get("eval_mean")) and finite(r.get("eval_std") or 0.0)]
    if not episodes and not evals:
        raise CommandError("%s has no rows of finite numbers yet: nothing to plot" % csv_path)
    title = os.path.basename(os.path.abspath(folder))
    meta_path = os.path.join(folder, "run.json")
    if os.path.isfile(meta_path):  # (a named pipe there would block the read)
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            title = "%s on %s, seed %s" % (str(meta.get("algo", "?")).upper(), meta.get("task", "?"), meta.get("seed", "?"))
        except (ValueError, OSError, RecursionError):  # (RecursionError: JSON nested thousands deep)
            pass

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
