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


WIDE_OBS = [[0.3 * k - 3.0, 0.05 * k - 0.5, 0.4 * k - 4.0] for k in range(12)]


@pytest.fixture(scope="module")
def wide_export(tmp_path_factory):
    """A 3-182-182-1 policy (a 33,124-weight layer: past the 32,767 that array('h', range(n))
    holds on CPython; the format counts weights by its uint16 sizes) exported to int16."""
    from microrl.nn import MLP
    from microrl.rng import Rng

    sizes = [3, 182, 182, 1]
    net = MLP(sizes, ("relu", "tanh"), trainable=False).init(Rng(3))
    folder = tmp_path_factory.mktemp("wide")
    path, out = str(folder / "wide.mrlp"), str(folder / "wide.mrlq")
    microrl.save(path, microrl.Policy(sizes, ("relu", "tanh"), params=net.params, act_scale=[2.0], act_offset=[0.0]))
    proc = _cli("export", path, "--int16", "--out", out, "--calibration-episodes", "1", "--eval-episodes", "0", "--references", "2", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return path, out, json.loads(proc.stdout)


def test_export_int16_of_a_layer_past_32767_weights(wide_export):
    path, out, report = wide_export
    assert report["action_error_max"] < 0.02, report  # N m, of +-2
    float_policy, q = microrl.load(path), microrl.load(out, check=True)
    assert q.reference_count == 2 and q.reference_difference <= 1e-4
    assert max(abs(q(o)[0] - float_policy(o)[0]) for o in WIDE_OBS) < 0.02


@needs_micropython
def test_micropython_runs_a_layer_past_32767_weights(wide_export):
    """The same file on micropython with every integer kernel there (viper, plain, and native with
    the shipped module): CPython's plain-integer actions exactly."""
    from microrl_host.board import native

    _, out, _ = wide_export
    ours = [microrl.load(out)(o)[0] for o in WIDE_OBS]
    mpy = int(run_micropython_code("import sys; print(sys.implementation._mpy)"))
    shipped = native.mpy_for_arch(native.arch_from_mpy(mpy), mpy)
    code = (
        "import sys\nsys.path.insert(0, %r)\nimport microrl\nfrom microrl import fixedpoint\n"
        "for name in fixedpoint.available():\n    fixedpoint.use(name)\n    q = microrl.load(%r, check=True)\n"
        "    print(name, ' '.join(repr(q(o)[0]) for o in %r))\n"
    ) % (os.path.dirname(shipped) if shipped else "/nonexistent", out, WIDE_OBS)
    lines = run_micropython_code(code).strip().splitlines()
    assert [line.split()[0] for line in lines] == (["native"] if shipped else []) + ["viper", "plain"], lines
    for line in lines:
        assert [float(v) for v in line.split()[1:]] == ours, line


@needs_micropython
def test_export_writes_reference_vectors_that_micropython_checks(exported, pendulum_policy, tmp_path):
    out, report = exported
    assert report["references"] == 8
    q = microrl.load(out, check=True)
    assert q.reference_count == 8 and q.reference_difference <= 1e-4
    text = run_micropython_code("import microrl\nq = microrl.load(%r, check=True)\nprint(q.reference_count, q.reference_difference)" % out)
    count, diff = text.split()
    assert int(count) == 8 and float(diff) <= 1e-4
    # from a float file with references: its observations, centred on the int16 input steps
    from microrl.references import read as read_references
    from microrl_host.references import attach

    def read(path):
        return read_references(microrl.load(path), path)

    float_path = str(tmp_path / "with_refs.mrlp")
    p = microrl.load(pendulum_policy)
    attach(p, [[1.0, 0.0, 0.0], [0.0, 1.0, 2.0], [-0.7, 0.7, -5.0], [0.3, -0.95, 7.5]])
    microrl.save(float_path, p)
    out2 = str(tmp_path / "with_refs.mrlq")
    proc = _cli("export", float_path, "--int16", "--out", out2, "--eval-episodes", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    refs = read(out2)
    assert refs.count == 4
    q = microrl.load(out2, check=True)
    step = 2.0 ** q.fx[0]
    for k in range(4):
        # each observation moved by less than a step of the int16 input, onto a step's centre
        for o, c in zip(read(float_path).observation(k), refs.observation(k)):
            assert abs(o - c) <= 0.5 / step + 1e-6
            assert abs(c * step - round(c * step)) < 1e-3
    assert json.loads(_cli("export", float_path, "--int16", "--out", str(tmp_path / "none.mrlq"), "--eval-episodes", "0", "--references", "0", "--json").stdout)["references"] == 0
    assert read(str(tmp_path / "none.mrlq")) is None
