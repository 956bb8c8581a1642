"""The int16 fixed-point path from the host: `microrl export --int16` on a trained Pendulum policy,
its closed-loop return against the float policy (CPython and micropython), the same integers on
both, and damaged files refused. The device-side checks are in tests/device/test_fixedpoint.py."""
import json
import os
import random

import pytest

import microrl
from microrl import fixedpoint as fp
from microrl.tasks import pendulum
from microrl_host import calibration as Q
from helpers import needs_micropython, run_cpython, run_micropython_code, trained_pendulum_policy


def _cli(*argv):
    # the CLI's main() (python -m microrl_host.cli runs the same function)
    return run_cpython(["-c", "import sys; from microrl_host.cli import main; sys.exit(main(sys.argv[1:]))"] + list(argv))


@pytest.fixture(scope="module")
def pendulum_policy(tmp_path_factory):
    """A trained Pendulum policy (tests/data, checked against its manifest), copied to a
    temporary folder: a fixture, not a learning check, so the same on every CPU."""
    import shutil

    path = str(tmp_path_factory.mktemp("policy") / "pendulum.mrlp")
    shutil.copyfile(trained_pendulum_policy(), path)
    return path


@pytest.fixture(scope="module")
def exported(pendulum_policy):
    out = pendulum_policy[:-5] + ".mrlq"
    proc = _cli("export", pendulum_policy, "--int16", "--out", out, "--json")
    assert proc.returncode == 0, proc.stderr
    return out, json.loads(proc.stdout)


def test_export_int16_reports_closed_loop_return(exported, pendulum_policy):
    out, report = exported
    assert os.path.isfile(out)
    assert report["bytes_int16"] < 0.6 * report["bytes_float"]
    # the int16 policy balances the pendulum as the float one does: same starts, returns within 1%
    assert report["float_mean"] > -400, report  # the fixture balances (about -150)
    assert abs(report["mean_difference"]) <= 0.01 * abs(report["float_mean"]) + 1.0, report
    assert report["action_error_max"] < 0.05, report  # N m, of +-2


def test_closed_loop_returns_on_more_episodes(exported, pendulum_policy):
    float_policy = microrl.load(pendulum_policy)
    q = microrl.load(exported[0])
    assert isinstance(q, fp.QuantisedPolicy)
    loop = Q.closed_loop(float_policy, q, episodes=20, seed=777, task=pendulum)
    assert abs(loop["mean_difference"]) <= 0.01 * abs(loop["float_mean"]) + 1.0, loop
    assert loop["worst_episode_difference"] < 0.05 * abs(loop["float_mean"]) + 5.0, loop


@needs_micropython
def test_micropython_runs_the_same_integers_and_returns(exported):
    """On micropython the viper kernel runs; its actions equal CPython's plain-integer ones
    exactly, and the closed-loop return matches."""
    out, _ = exported
    code = (
        "import microrl\nfrom microrl import fixedpoint\nfrom microrl.evaluate import evaluate\nfrom microrl.task import Env\nfrom microrl.tasks import pendulum\n"
        "q = microrl.load(%r)\nprint(fixedpoint.implementation())\n"
        "for k in range(20):\n    o = [0.3 * k - 3.0, 0.05 * k - 0.5, 0.4 * k - 4.0]\n    print(repr(q(o)[0]))\n"
        "print(repr(evaluate(q, Env(pendulum), 3, 4242)[0]))\n" % out
    )
    lines = run_micropython_code(code).split()
    assert lines[0] == "viper"
    q = microrl.load(out)
    assert fp.implementation() == "plain"
    ours = [q([0.3 * k - 3.0, 0.05 * k - 0.5, 0.4 * k - 4.0])[0] for k in range(20)]
    assert [float(v) for v in lines[1:21]] == ours
    from microrl.evaluate import evaluate
    from microrl.task import Env
    from microrl.tasks import pendulum

    assert abs(float(lines[21]) - evaluate(q, Env(pendulum), 3, 4242)[0]) < 1e-3


def test_every_truncation_and_random_bit_flips_refused(tmp_path):
    """A whole small int16 policy file (every truncation point, 1,000 random bit flips): each one
    refused with a PolicyFileError, none loaded."""
    from microrl.nn import MLP
    from microrl.rng import Rng

    net = MLP([3, 16, 16, 1], ("relu", "tanh"), trainable=False).init(Rng(8))
    float_policy = microrl.Policy([3, 16, 16, 1], ("relu", "tanh"), params=net.params, obs_mean=[0.0] * 3, obs_std=[1.0] * 3, act_scale=[2.0], act_offset=[0.0])
    data = fp.to_bytes(fp.quantise(float_policy, Q.calibration_observations(float_policy, task=pendulum)))
    path = str(tmp_path / "bad.mrlq")
    with open(path, "wb") as f:
        f.write(data)
    assert isinstance(microrl.load(path), fp.QuantisedPolicy)
    for cut in range(len(data)):
        with open(path, "wb") as f:
            f.write(data[:cut])
        with pytest.raises(microrl.PolicyFileError):
            microrl.load(path)
    rng = random.Random(1)
    for _ in range(1000):
        bad = bytearray(data)
        k = rng.randrange(len(data) * 8)
        bad[k >> 3] ^= 1 << (k & 7)
        with open(path, "wb") as f:
            f.write(bad)
        with pytest.raises(microrl.PolicyFileError):
            microrl.load(path)


def test_export_errors_are_one_line(tmp_path, pendulum_policy, exported):
    cases = [
        ([pendulum_policy], "--int16"),
        ([str(tmp_path / "missing.mrlp"), "--int16"], "no policy file at"),
        ([exported[0], "--int16", "--out", str(tmp_path / "x.mrlq")], "already an int16 policy"),
        ([pendulum_policy, "--int16", "--out", pendulum_policy], "overwrite"),
    ]
    junk = tmp_path / "junk.mrlp"
    junk.write_bytes(b"not a policy at all")
    cases.append(([str(junk), "--int16"], "not a microrl policy file"))
    for argv, needle in cases:
        proc = _cli("export", *argv)
        assert proc.returncode == 2, (argv, proc.stdout, proc.stderr)
        assert needle in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_export_with_obs_range_for_non_pendulum_policy(tmp_path):
    from microrl.nn import MLP
    from microrl.rng import Rng

    net = MLP([13, 64, 64, 4], ("relu", "tanh"), trainable=False).init(Rng(2))
    path = str(tmp_path / "p13.mrlp")
    microrl.save(path, microrl.Policy([13, 64, 64, 4], ("relu", "tanh"), params=net.params))
    proc = _cli("export", path, "--int16", "--obs-range", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert "int16_mean" not in report  # no closed loop for a non-Pendulum policy
    assert report["action_error_max"] < 0.01, report
