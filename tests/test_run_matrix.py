"""Every algorithm x every kind of task x the run features (issue 40): each cell works, or is
refused in one line that says why. One driver (algos/run.py) serves every algorithm and one
resolver (tasks.resolve) every task, so a cell that works for one algorithm works for all, or
its refusal names the reason (a perturbation needs a task written against the task interface).

Runs in-process through the command line's own entry point (cli.main) with tiny step counts:
the compiled code loads once for the whole matrix."""
import json
import os

import pytest

from helpers import DEVICE

from microrl.policy import load
from microrl.tasks import pendulum
from microrl_host import cli

ALGOS = ("td3", "sac", "ppo")
KINDS = ("builtin", "file", "gym", "mujoco")
SMALL = {  # a few hundred steps, one short evaluation at the end of each run
    "td3": ["--steps", "300", "--hidden", "8,8", "--warmup", "100", "--eval-every", "300", "--eval-episodes", "1"],
    "sac": ["--steps", "300", "--hidden", "8,8", "--warmup", "100", "--eval-every", "300", "--eval-episodes", "1"],
    "ppo": ["--steps", "256", "--hidden", "8,8", "--envs", "2", "--rollout-steps", "64", "--eval-every", "256", "--eval-episodes", "1", "--threads", "1"],
}


def task_of(kind, tmp_path):
    if kind == "builtin":
        return "pendulum"
    if kind == "file":  # a user's task file: the built-in pendulum's source under another name
        path = tmp_path / "swing.py"
        if not path.exists():
            with open(os.path.join(DEVICE, "microrl", "tasks", "pendulum.py")) as f:
                path.write_text(f.read().replace("from ..compat import", "from microrl.compat import"))
        return str(path)
    if kind == "gym":
        return "Pendulum-v1"
    pytest.importorskip("mujoco", reason="mujoco not installed: pip install 'microrl[mujoco]'")
    return "inverted_pendulum"


def microrl(capsys, *argv):
    """(exit code, stdout, stderr) of `microrl ARGV` run in this process."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def refused_in_one_line(code, err, *words):
    lines = [l for l in err.strip().splitlines() if l.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("algo", ALGOS)
def test_every_algorithm_on_every_kind_of_task(algo, kind, tmp_path, capsys):
    task = task_of(kind, tmp_path)
    compiled = kind in ("builtin", "file")
    out = tmp_path / "p.mrlp"
    base = ["train", task, "--algo", algo, "--out", out] + SMALL[algo]
    steps = int(SMALL[algo][1])

    # --json and --tensorboard
    tensorboard = []
    try:
        import tensorboardX  # noqa: F401

        tensorboard = ["--tensorboard", tmp_path / "tb"]
    except ImportError:
        pass
    code, stdout, err = microrl(capsys, *base, "--json", *tensorboard)
    assert code == 0, err
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["algo"] == algo and result["steps"] == steps and [e[0] for e in result["evals"]] == [steps]
    assert os.path.exists(out) and os.path.exists(tmp_path / "p.run" / "policy.mrlp")
    if tensorboard:
        assert os.listdir(tmp_path / "tb")

    # --resume to twice the steps
    code, stdout, err = microrl(capsys, *base[:-len(SMALL[algo])], *SMALL[algo][2:], "--steps", 2 * steps, "--resume", "--json")
    assert code == 0, err
    result = json.loads(stdout.strip().splitlines()[-1])
    assert result["resumed_from"] == steps and result["steps"] == 2 * steps

    # eval, nominal and perturbed (an action delay asked of the evaluation)
    code, stdout, err = microrl(capsys, "eval", out, "--task", task, "--episodes", 1, "--json", "--action-delay", 1)
    if compiled:
        assert code == 0, err
        assert "perturbed" in json.loads(stdout.strip().splitlines()[-1])
    else:
        refused_in_one_line(code, err, "--action-delay", "task interface")

    # training under an action delay
    code, stdout, err = microrl(capsys, *base, "--overwrite", "--action-delay", 1, "--json")
    if compiled:  # the pending actions observed: the policy's input is one action wider
        assert code == 0, err
        result = json.loads(stdout.strip().splitlines()[-1])
        assert result["perturbations"] == {"action_delay": 1} and result["pending_actions"] == 1
        policy = load(str(out))
        assert policy.pending == 1 and policy.sizes[0] == pendulum.OBS_DIM + pendulum.ACT_DIM  # (both compiled kinds are the pendulum)
    else:
        refused_in_one_line(code, err, "--action-delay", "task interface")

    # a sweep of it takes the same task and settings (checked as train checks them; --dry-run)
    code, stdout, err = microrl(capsys, "sweep", task, "--algo", algo, "--seeds", "0-1", "--steps", steps, "--run-dir", tmp_path / "sweep", "--dry-run")
    assert code == 0, err
    assert len(stdout.strip().splitlines()) == 2
