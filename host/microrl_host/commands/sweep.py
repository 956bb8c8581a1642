"""microrl sweep: many seeds, or a small grid of settings, of `microrl train`, in parallel: as
local processes by default, or as tasks on a Ray cluster with --ray ADDRESS (the same jobs, no
code changes). Each job is one `microrl train` run in its own folder under --run-dir; the sweep
writes summary.csv and summary.json there (settings, seed, exit code, last evaluation)."""
import argparse
import itertools
import json
import os
import shlex
import subprocess
import sys
import time

from microrl.refusals import count

from .. import atomic
from ..algos import registry
from ..runlog import RunLocked, previous_run, probe, runlock
from . import CommandError
from .options import FOLDER_HELP, MAX_SEED, STEPS, check_output, whole

MAX_JOBS = 10000  # runs in one sweep

# how a job runs `microrl train ARGS...`; tests may point it at a stand-in
DEFAULT_TRAIN_COMMAND = [sys.executable, "-m", "microrl_host.cli", "train"]
TRAIN_COMMAND = DEFAULT_TRAIN_COMMAND


def register(sub):
    p = sub.add_parser(
        "sweep",
        help="run several seeds or a grid of settings of 'microrl train' in parallel (local processes or Ray)",
        description=__doc__,
        epilog="Example: microrl sweep ant --algo ppo --seeds 1-4 --grid lr=1e-4,3e-4 --steps 1000000 --set envs=32\n"
        "runs 8 trainings (4 seeds x 2 learning rates), each with 'microrl train ... --envs 32'.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("task", help="the task, as for 'microrl train' (e.g. ant, Hopper-v5, pendulum)")
    p.add_argument("--algo", default=None, help="the algorithm, as for 'microrl train' (default: the task's suggestion, else td3)")
    p.add_argument("--seeds", default="0-2", help="seeds: a list '1,2,5' or a range '0-4' (default 0-2)")
    p.add_argument("--grid", action="append", default=[], metavar="OPTION=V1,V2", help="a train option and its values, e.g. lr=1e-4,3e-4 (repeat for a grid: every combination runs)")
    p.add_argument("--steps", type=STEPS, default=None, help="environment steps per run (default: train's)")
    p.add_argument("--run-dir", default=None, help="folder of the sweep (default sweeps/TASK-ALGO-TIME, with characters such as a module:Id task's colon as '_')" + FOLDER_HELP)
    p.add_argument("--workers", type=whole(1, 1024), default=None, help="local runs at once (default: one per CPU)")
    p.add_argument("--ray", metavar="ADDRESS", default=None, help="run the jobs on a Ray cluster: 'auto', 'ray://HOST:10001', or 'local' to start Ray here (pip install 'microrl[ray]')")
    p.add_argument("--dry-run", action="store_true", help="print the jobs' commands and stop")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--set", action="append", default=[], metavar="OPTION=VALUE", help="a train option for every run, e.g. envs=32 or hidden=64,64 or no-obs-norm=true (repeatable)")
    p.set_defaults(func=run)


def parse_seeds(text):
    usage = "--seeds takes a list such as 1,2,5 or a range such as 0-4 of seeds from 0 to 2**32-1; got %r" % text
    try:
        if "-" in text.strip().lstrip("-"):
            lo, hi = (int(v) for v in text.split("-", 1))
            ends = [lo, hi]
        else:
            ends = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise CommandError(usage) from None
    if not ends:
        raise CommandError("--seeds gave no seeds (%r)" % text)
    if min(ends) < 0 or max(ends) > MAX_SEED:
        raise CommandError(usage)
    if "-" in text.strip().lstrip("-"):
        if hi < lo:
            raise CommandError("--seeds %s: the range ends before it starts; give LOW-HIGH, e.g. 0-4" % text)
        if hi - lo + 1 > MAX_JOBS:
            raise CommandError("--seeds %s gives %d runs; a sweep runs at most %d" % (text, hi - lo + 1, MAX_JOBS))
        return list(range(lo, hi + 1))
    return ends


def parse_grid(items, split=True, what="--grid"):
    """[('lr', ['1e-4', '3e-4']), ...] from ['lr=1e-4,3e-4', ...] (split=False: one value each)."""

    grid = []
    for item in items:
        name, _, values = item.partition("=")
        name = name.strip().lstrip("-")
        vals = [v.strip() for v in values.split(",") if v.strip()] if split else [values.strip()]
        if not name or not vals or not vals[0]:
            raise CommandError("%s takes OPTION=%s; got %r" % (what, "V1,V2 (e.g. lr=1e-4,3e-4)" if split else "VALUE (e.g. envs=32)", item))
        if name in ("seed", "run-dir", "run_dir", "out", "json", "quiet"):
            raise CommandError("%s %s: the sweep sets --%s itself" % (what, name, name))
        grid.append((name.replace("_", "-"), vals))
    return grid


def folder_name(text):
    """text as a folder name that every filesystem takes: a `module:Id` task's colon (refused on
    Windows, a drive or stream separator there), slashes, spaces and the like become '_'."""
    name = "".join(c if c.isascii() and (c.isalnum() or c in "._=,+-") else "_" for c in text)
    return name.strip(".") or "_"


def make_jobs(args):
    """One dict per run: name, settings, seed, argv for `microrl train` (args.algo: the chosen
    algorithm from here on)."""
    args.algo = chosen_algo(args)
    seeds = parse_seeds(args.seeds)
    grid = parse_grid(args.grid)
    fixed = [(k, v[0]) for k, v in parse_grid(args.set, split=False, what="--set")]
    names = [n for n, _ in grid]
    experimental = registry.experimental_names()
    jobs = []
    for combo in itertools.product(*[v for _, v in grid]) if grid else [()]:
        settings = dict(zip(names, combo))
        for seed in seeds:
            label = folder_name("_".join(["%s=%s" % (k, v) for k, v in settings.items()] + ["seed%d" % seed]))
            argv = [args.task, "--algo", args.algo, "--seed", str(seed), "--quiet", "--json"]
            if args.steps is not None:
                argv += ["--steps", str(args.steps)]
            for k, v in list(settings.items()) + fixed:
                if k.replace("-", "_") in experimental:  # train takes these as --set NAME=VALUE
                    argv += ["--set", "%s=%s" % (k.replace("-", "_"), v)]
                else:
                    argv += ["--" + k] if v.lower() in ("true", "on") else ([] if v.lower() in ("false", "off") else ["--" + k, v])
            jobs.append({"name": label, "settings": settings, "seed": seed, "argv": argv})
    return jobs


def check_train_arguments(jobs):
    """CommandError when a job's `microrl train` arguments would be refused: checked here, as
    `microrl train` checks them, before any run starts (each setting once)."""
    import tempfile

    from . import train
    from .options import Parser

    parser = Parser(prog="microrl")
    train_parser = train.register(parser.add_subparsers(parser_class=Parser))

    def refuse(message):
        raise CommandError("the runs' train arguments: %s" % message)

    train_parser.error = refuse
    seen = set()
    with tempfile.TemporaryDirectory() as scratch:  # outputs that exist nowhere else: only the settings are checked
        for job in jobs:
            argv = job["argv"]
            key = tuple(argv[:4] + argv[5:])  # all but the seed's value
            if key in seen:
                continue
            seen.add(key)
            args = train_parser.parse_args(argv + ["--run-dir", os.path.join(scratch, "run"), "--out", os.path.join(scratch, "policy.mrlp")])
            try:
                train.check(args)
            except CommandError as e:
                raise CommandError("the runs' train arguments: %s" % e) from None


def check_task(task):
    """CommandError when `microrl train` would not find the task (tasks.resolve): checked here,
    as each run would check it first, before the sweep's folder is made."""
    from .. import tasks
    from ..envs.mujoco import MujocoMissingError, require_mujoco

    try:
        found = tasks.resolve(task)
        if found.kind == "mujoco":
            require_mujoco()
        elif found.kind == "gym":  # a gymnasium id: made once, as the runs will make it
            from ..envs.gym import make_gym_env

            make_gym_env(found.gym).close()
    except (tasks.TaskError, MujocoMissingError, ValueError) as e:
        raise CommandError(str(e)) from None


def chosen_algo(args):
    """The sweep's algorithm: --algo, else the task's suggestion (its ALGO), else train's default."""
    if args.algo is not None:
        return args.algo
    from .. import tasks

    try:
        found = tasks.resolve(args.task)
    except tasks.TaskError as e:
        raise CommandError(str(e)) from None
    return found.algo if found.algo in registry.ALGOS else registry.DEFAULT


def run_job(argv, run_dir, command=None, env=None):
    """Run one training; returns (exit code, its JSON result or None, stderr's last lines)."""
    # each job keeps its policy in its own folder: parallel jobs must not share one default file
    cmd = list(command or TRAIN_COMMAND) + list(argv) + ["--run-dir", run_dir, "--out", os.path.join(run_dir, "policy.mrlp")]
    env = dict(os.environ if env is None else env)
    env.setdefault("MICRORL_THREADS", "1")  # the jobs already fill the CPUs, one each
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    result = None
    for line in reversed(proc.stdout.strip().splitlines()):
        try:
            result = json.loads(line)
            break
        except ValueError:
            continue
    return proc.returncode, result, "\n".join(proc.stderr.strip().splitlines()[-5:])


def _ray_job(argv, command):
    """On a Ray worker: run the training in a scratch folder with the code Ray shipped (its
    py_modules), and return the run's files with the result, so that the sweep's folder on the
    driver gets them whatever file systems the cluster has."""
    import tempfile

    import microrl
    import microrl_host

    env = dict(os.environ)
    code_dirs = [os.path.dirname(os.path.dirname(os.path.abspath(m.__file__))) for m in (microrl_host, microrl)]
    env["PYTHONPATH"] = os.pathsep.join(code_dirs + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    with tempfile.TemporaryDirectory(prefix="microrl-sweep-") as tmp:
        run_dir = os.path.join(tmp, "run")
        code, result, err = run_job(argv, run_dir, command or [sys.executable, "-m", "microrl_host.cli", "train"], env)
        files = {}
        for folder, _, names in os.walk(run_dir):
            for n in names:
                path = os.path.join(folder, n)
                with open(path, "rb") as f:
                    files[os.path.relpath(path, run_dir)] = f.read()
        if isinstance(result, dict):  # paths on the worker mean nothing on the driver
            result = {k: v for k, v in result.items() if k not in ("run_dir", "policy")}
        return code, result, err, files


def _last_eval(run_dir):
    from ..runlog import read_progress

    try:
        rows = read_progress(run_dir)
    except (FileNotFoundError, OSError, ValueError):
        return None, None
    evals = [r for r in rows if r.get("eval_mean") is not None]
    return (evals[-1]["eval_mean"], evals[-1]["step"]) if evals else (None, None)


def run(args):
    jobs = make_jobs(args)
    if len(jobs) > MAX_JOBS:
        raise CommandError("the sweep has %d runs; at most %d" % (len(jobs), MAX_JOBS))
    if TRAIN_COMMAND is DEFAULT_TRAIN_COMMAND:
        check_train_arguments(jobs)
    if args.ray is not None and not args.ray.strip():
        raise CommandError("--ray takes the cluster's address ('auto', 'ray://HOST:10001', or 'local' to start Ray here); without --ray the runs are local processes")
    if args.ray:
        import importlib.util

        if importlib.util.find_spec("ray") is None:
            raise CommandError("--ray needs Ray, which is not installed: pip install 'microrl[ray]' (or run without --ray for local processes)")
    elif TRAIN_COMMAND is DEFAULT_TRAIN_COMMAND and not args.dry_run:
        check_task(args.task)  # (a Ray cluster may have packages this machine lacks)
    root = args.run_dir or os.path.join("sweeps", folder_name("%s-%s-%s" % (args.task.lower(), args.algo, time.strftime("%Y%m%d-%H%M%S"))))
    for job in jobs:
        job["run_dir"] = os.path.join(root, job["name"])
    if args.dry_run:
        for job in jobs:
            print(" ".join(shlex.quote(a) for a in ["microrl", "train"] + job["argv"] + ["--run-dir", job["run_dir"]]))
        return 0
    check_output(root, "--run-dir", folder=True)
    if probe(root) is not None:
        raise _locked(root, probe(root))
    try:
        with runlock(root):  # one sweep writes a sweep's folder at a time (each run locks its own folder too)
            return _sweep(args, jobs, root)
    except RunLocked as e:
        raise _locked(root, e.pid) from None


def _locked(root, pid):
    return CommandError("--run-dir %s: another sweep%s is writing this folder; wait for it to end, or give another --run-dir"
                        % (root, " (pid %d)" % pid if pid else ""))


def _sweep(args, jobs, root):
    from .progress import Progress

    for job in jobs:  # as `microrl train` refuses it, before any run starts
        held = previous_run(job["run_dir"])
        if held:
            raise CommandError("--run-dir %s already holds this sweep's runs (%s: %s); give another --run-dir" % (root, job["name"], held))
    for name in ("summary.csv", "summary.json"):
        if os.path.lexists(os.path.join(root, name)):
            check_output(os.path.join(root, name), "--run-dir")
    os.makedirs(root, exist_ok=True)
    where = "Ray at %s" % args.ray if args.ray else "%d local processes" % (args.workers or os.cpu_count() or 1)
    if not args.quiet:
        print("sweep: %s of %s %s on %s, into %s" % (count(len(jobs), "run"), args.algo, args.task, where, root), file=sys.stderr)
    results = []
    with Progress(len(jobs), desc="sweep", unit="run", quiet=args.quiet) as bar:
        for job, (code, result, err) in (_run_ray(jobs, args.ray) if args.ray else _run_local(jobs, args.workers)):
            final, at_step = _last_eval(job["run_dir"])
            row = {"name": job["name"], "seed": job["seed"], **{"--" + k: v for k, v in job["settings"].items()}, "exit_code": code, "final_eval": final, "eval_step": at_step, "run_dir": job["run_dir"]}
            if code != 0:
                row["error"] = err
                bar.write("run %s failed (exit %d): %s" % (job["name"], code, err.splitlines()[-1] if err else "no message"))
            results.append(row)
            bar.update(1, done=job["name"])
    results.sort(key=lambda r: r["name"])
    columns = ["name", "seed"] + ["--" + k for k in (jobs[0]["settings"] if jobs else {})] + ["exit_code", "final_eval", "eval_step", "run_dir"]
    lines = [",".join(columns)] + [",".join("" if r.get(c) is None else str(r.get(c)) for c in columns) for r in results]
    atomic.write_text(os.path.join(root, "summary.csv"), "\n".join(lines) + "\n")
    atomic.write_text(os.path.join(root, "summary.json"), json.dumps({"task": args.task, "algo": args.algo, "runs": results}, indent=2))
    failed = [r for r in results if r["exit_code"] != 0]
    if not args.quiet:
        for r in results:
            print("%-40s exit %d  final eval %s" % (r["name"], r["exit_code"], "%.1f" % r["final_eval"] if r["final_eval"] is not None else "-"))
        print("summary: %s" % os.path.join(root, "summary.csv"))
    if failed:
        raise CommandError("%d of %d runs failed; see %s (first: %s)" % (len(failed), len(results), os.path.join(root, "summary.json"), failed[0]["error"].splitlines()[-1] if failed[0].get("error") else "no message"))
    return 0


def _run_local(jobs, workers):
    from concurrent.futures import ThreadPoolExecutor, as_completed

    # threads only wait on the training processes, which do the work
    with ThreadPoolExecutor(max(1, workers or os.cpu_count() or 1)) as pool:
        futures = {pool.submit(run_job, job["argv"], job["run_dir"]): job for job in jobs}
        for fut in as_completed(futures):
            yield futures[fut], fut.result()


def _run_ray(jobs, address):

    try:
        import ray
    except ImportError:
        raise CommandError("--ray needs Ray, which is not installed: pip install 'microrl[ray]' (or run without --ray for local processes)") from None
    import microrl
    import microrl_host

    # ship this installation's code to the workers (Ray's py_modules): no install on the cluster
    runtime_env = {"py_modules": [os.path.dirname(os.path.abspath(m.__file__)) for m in (microrl_host, microrl)]}
    try:
        ray.init(address=None if address == "local" else address, runtime_env=runtime_env, ignore_reinit_error=True, log_to_driver=False)
    except Exception as e:  # connection refused, bad address...
        raise CommandError("cannot connect to the Ray cluster at %s: %s" % (address, e)) from None
    remote = ray.remote(num_cpus=1)(_ray_job)
    command = None if TRAIN_COMMAND is DEFAULT_TRAIN_COMMAND else TRAIN_COMMAND  # None: the worker's own python
    pending = {remote.remote(job["argv"], command): job for job in jobs}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(done[0])
            code, result, err, files = ray.get(done[0])
            for rel, data in files.items():
                atomic.write_bytes(os.path.join(job["run_dir"], rel), data)
            yield job, (code, result, err)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
