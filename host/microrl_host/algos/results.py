"""The one shape of a training run's results, the same for every algorithm and task (a task
with a success test adds success_rate and its evaluation summary of the policy written, e.g.
the quadrotor's position_error_m and crash_rate (microrl_host.tasks.summary), policy_step where
it came from and final_success_rate at the last step; a run with sim-to-real perturbations adds
perturbations, {name: value}): what
`microrl train --json` prints, Run.stats of every algorithm's run. docs/training.md
("Results") explains each key; tests/test_host_cli.py checks that every algorithm gives them all."""
import platform

KEYS = (
    "algo", "task", "seed", "steps", "resumed_from",
    "wall_s", "train_s", "train_cpu_s", "compile_s", "eval_s", "steps_per_s",
    "eval_mean", "eval_std", "evals", "policy", "run_dir", "versions",
)
SUCCESS_KEYS = ("success_rate", "final_success_rate", "policy_step")  # a task with a success test adds these, and its summary's
# packages whose version a result names, when the run loaded them (null otherwise)
PACKAGES = ("numpy", "numba", "scipy", "gymnasium", "mujoco")


class Run:
    """What a training run returns, whatever the algorithm (run.drive): the policy written (a
    microrl.policy.Policy), evals [(step, mean, std)], stats (run_result's dict, the shape of
    `microrl train --json`) and trainer, the algorithm's final training state (TD3/SAC: the
    State of arrays a checkpoint holds, also as state; PPO: its learner)."""

    def __init__(self, policy, evals, stats, trainer=None):
        self.policy = policy
        self.evals = evals
        self.stats = stats
        self.trainer = trainer

    @property
    def state(self):
        return self.trainer


def versions(used):
    """{"microrl", "python", and each of PACKAGES: its version if the run used it (used: those
    modules, which the run imported), else None}. A module's own __version__: the package
    metadata's look-up took 13 ms of every run here."""
    import microrl

    out = {"microrl": microrl.__version__, "python": platform.python_version()}
    out.update(dict.fromkeys(PACKAGES))
    for module in used:
        out[module.__name__] = module.__version__
    return out


def run_result(algo, task, seed, steps, resumed_from, wall_s, train_s, train_cpu_s, compile_s, eval_s, evals, policy, run_dir, used):
    """A run's results as a dict with exactly KEYS. steps: the run's total (including those done
    before a resume, which resumed_from gives, else None); evals: [(step, mean, std)]; used: the
    modules of PACKAGES the run used."""
    done = steps - (resumed_from or 0)
    last = evals[-1] if evals else None
    return {
        "algo": algo,
        "task": task,
        "seed": int(seed),
        "steps": int(steps),
        "resumed_from": None if resumed_from is None else int(resumed_from),
        "wall_s": float(wall_s),
        "train_s": float(train_s),
        "train_cpu_s": float(train_cpu_s),
        "compile_s": float(compile_s),
        "eval_s": float(eval_s),
        "steps_per_s": done / train_s if train_s > 0 else None,
        "eval_mean": None if last is None else float(last[1]),
        "eval_std": None if last is None else float(last[2]),
        "evals": [[int(s), float(m), float(d)] for s, m, d in evals],
        "policy": policy,
        "run_dir": run_dir,
        "versions": versions(used),
    }


def summary_line(r):
    """One line for a person: what ran, how long, how well, where the files are (a task with a
    success test: its success rate and the rest of its evaluation summary)."""
    returns = "%.1f +- %.1f" % (r["eval_mean"], r["eval_std"]) if r["eval_mean"] is not None else None
    how_well = "eval return %s" % (returns or "not evaluated")
    if r.get("success_rate") is not None:
        # the policy saved's figures, then the last evaluation's apart (when the best evaluation
        # was an earlier one), each said with what it measures: no figure reads as another's
        figures = "".join(", %s %.3g" % (k, r[k]) for k in sorted(r) if k not in KEYS and k not in SUCCESS_KEYS and isinstance(r[k], float))
        saved = "succeeds in %.0f%% of its evaluation episodes%s" % (100 * r["success_rate"], figures)
        if r.get("policy_step") not in (None, r["steps"]):
            how_well = "%s (the policy saved: the best evaluation, step %d); the last evaluation (step %d) succeeded in %.0f%%%s" % (
                saved, r["policy_step"], r["steps"], 100 * r["final_success_rate"], ", return %s" % returns if returns else "")
        else:
            how_well = "%s; %s" % (saved, how_well)
    return "%s on %s: %d steps in %.2f s (%.0f steps/s; compile/cache load %.2f s), %s; policy: %s; run: %s" % (
        r["algo"], r["task"], r["steps"], r["train_s"], r["steps_per_s"] or 0.0, r["compile_s"], how_well, r["policy"], r["run_dir"])
