"""bench/quadrotor.py's reading of L2F's final actor (RLtools' save_code) and its adapter onto our
task; with MICRORL_L2F_TRAINER naming a build of learning-to-fly's trainer, one seed of it end to
end (slow: minutes), else skipped saying so."""
import importlib.util
import os

import numpy as np
import pytest

_spec = importlib.util.spec_from_file_location("bench_quadrotor", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "quadrotor.py"))
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _save_code(layers):
    """Text in the shape RLtools' save_code gives a sequential model of dense layers."""
    out = ["namespace rl_tools::checkpoint::actor {"]
    for n, (w, b) in enumerate(layers):
        out.append("    namespace layer_%d {" % n)
        for what, m in (("weights", w), ("biases", b.reshape(1, -1))):
            data = ", ".join(str(v) for v in np.ascontiguousarray(m, "<f4").tobytes())
            out.append("        namespace %s { namespace parameters_memory {" % what)
            out.append("            alignas(float) const unsigned char memory[] = {%s};" % data)
            out.append("            using CONTAINER_SPEC = RL_TOOLS_NAMESPACE_WRAPPER ::rl_tools::matrix::Specification<float, unsigned long, %d, %d, X>;" % m.shape)
            out.append("        } }")
        out.append("        using SPEC = RL_TOOLS_NAMESPACE_WRAPPER ::rl_tools::nn::layers::dense::Specification<float, unsigned long, %d, %d, Y>;" % (w.shape[1], w.shape[0]))
        out.append("    }")
    out.append("}")
    return "\n".join(out)


def test_reads_the_layers_save_code_writes(tmp_path):
    rng = np.random.default_rng(0)
    layers = [(rng.normal(size=(8, 146)).astype(np.float32), rng.normal(size=8).astype(np.float32)),
              (rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=4).astype(np.float32))]
    path = tmp_path / "actor.h"
    path.write_text(_save_code(layers))
    got = bench.read_l2f_actor(str(path))
    assert len(got) == 2
    for (w, b), (gw, gb) in zip(layers, got):
        assert np.array_equal(w, gw) and np.array_equal(b, gb)


def test_the_adapter_flies_an_actor_with_an_action_history():
    # zero weights, biases at the hover command: the craft is held at hover from every start
    from microrl.tasks import quadrotor as Q

    hover = np.float32(np.arctanh(Q.hover_action(Q.new_parameters())))
    layers = [(np.zeros((4, 18 + 32 * 4), np.float32), np.full(4, hover, np.float32))]
    s = bench.l2f_fly(layers, episodes=3)
    assert 0.0 <= s["success_rate"] <= 1.0 and s["position_error_m"] > 0.0


def _trainer_record(variable, missing, seed):
    """seed 0 of the trainer build named by the environment variable (skips if none is named)."""
    binary = os.environ.get(variable)
    if not binary:
        pytest.skip("%s not set: %s" % (variable, missing))
    record = seed(binary, 0)
    assert "why" not in record, record
    return record


@pytest.mark.slow
def test_l2f_trainer_end_to_end():
    record = _trainer_record(bench.L2F_TRAINER_ENV, "no build of learning-to-fly's trainer named (docs/sim-to-real.md)", bench.l2f_seed)
    assert record["train_s"] > 0 and 0.0 <= record["success_rate"] <= 1.0 and 0.0 <= record["success_rate_perturbed"] <= 1.0


# ---------------------------------------------------------------- RLtools' zoo L2F SAC trainer


def _fast_tanh(x):
    x = np.clip(x, -3.0, 3.0)
    return x * (27.0 + x * x) / (27.0 + 9.0 * x * x)


def _zoo_tar(path, layers, example_in, example_out, observation=bench.ZOO_OBSERVATION):
    """A checkpoint.tar in the layout RLtools' persist/tar backend writes for a zoo SAC actor."""
    import io
    import json
    import tarfile

    def add(tar, name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    def tensor(tar, name, a):
        a = np.ascontiguousarray(a, "<f4")
        add(tar, name + "/meta", ("type: tensor\ndtype: float32\nnum_dims: %d\n" % a.ndim + "".join("dim_%d: %d\n" % (i, d) for i, d in enumerate(a.shape))).encode())
        add(tar, name + "/data", a.tobytes())

    names = ["input_layer"] + ["hidden_layers/%d" % i for i in range(len(layers) - 2)] + ["output_layer"]
    with tarfile.open(path, "w") as tar:
        add(tar, "actor/meta", ("checkpoint_name: x\nmeta: %s\ntype: sequential\n" % json.dumps({"environment": {"name": "l2f", "observation": observation}})).encode())
        add(tar, "actor/layers/0/meta", b"type: mlp\nnum_layers: %d\n" % len(layers))
        for n, (w, b) in zip(names, layers):
            tensor(tar, "actor/layers/0/%s/weights/parameters" % n, w)
            tensor(tar, "actor/layers/0/%s/biases/parameters" % n, b)
            add(tar, "actor/layers/0/%s/meta" % n, b"activation_function: %s\ntype: dense\n" % (b"IDENTITY" if n == "output_layer" else b"FAST_TANH"))
        add(tar, "actor/layers/1/meta", b"type: sample_and_squash\n")
        tensor(tar, "example/input", example_in[None])
        tensor(tar, "example/output", example_out[None])


def test_reads_an_rltools_checkpoint_tar(tmp_path):
    rng = np.random.default_rng(1)
    layers = [(rng.normal(size=(16, 29)).astype(np.float32), rng.normal(size=16).astype(np.float32)),
              (rng.normal(size=(16, 16)).astype(np.float32), rng.normal(size=16).astype(np.float32)),
              (rng.normal(size=(8, 16)).astype(np.float32), rng.normal(size=8).astype(np.float32))]
    x = rng.normal(size=(13, 29)).astype(np.float32)
    h = _fast_tanh(_fast_tanh(x @ layers[0][0].T + layers[0][1]) @ layers[1][0].T + layers[1][1]) @ layers[2][0].T + layers[2][1]
    y = np.tanh(h[:, :4])  # the mean's half, squashed: what sample_and_squash gives in evaluation
    _zoo_tar(tmp_path / "checkpoint.tar", layers, x, y)
    actor = bench.read_zoo_actor(str(tmp_path / "checkpoint.tar"))
    assert actor["observation"] == bench.ZOO_OBSERVATION
    assert [(w.shape, a) for w, _, a in actor["layers"]] == [((16, 29), "FAST_TANH"), ((16, 16), "FAST_TANH"), ((8, 16), "IDENTITY")]
    for (w, b), (gw, gb, _) in zip(layers, actor["layers"]):
        assert np.array_equal(w, gw) and np.array_equal(b, gb)
    assert actor["example_max_error"] < 1e-5
    # an example that is not the actor's output shows as a large error
    _zoo_tar(tmp_path / "other.tar", layers, x, -y)
    assert bench.read_zoo_actor(str(tmp_path / "other.tar"))["example_max_error"] > 0.1


def test_the_zoo_adapter_orders_inputs_as_its_observation():
    # ours: position 0-2, rotation matrix 3-11, velocity 12-14, angular velocity 15-17, rotors 18-21;
    # the zoo's: position and velocity error, rotation matrix, velocity, angular velocity, 2 commands
    x = bench.zoo_inputs(np.arange(22.0), np.arange(100.0, 108.0))
    assert list(x) == [0, 1, 2, 12, 13, 14] + list(range(3, 12)) + list(range(12, 18)) + list(range(100, 108))


def test_the_zoo_adapter_flies_an_actor():
    from microrl.tasks import quadrotor as Q

    hover = np.arctanh(Q.hover_action(Q.new_parameters()))
    layers = [(np.zeros((4, 29), np.float32), np.zeros(4, np.float32), "FAST_TANH"),
              (np.zeros((8, 4), np.float32), np.array([hover] * 4 + [0.0] * 4, np.float32), "IDENTITY")]
    s = bench.zoo_fly({"layers": layers}, episodes=3)
    assert 0.0 <= s["success_rate"] <= 1.0 and s["position_error_m"] > 0.0


@pytest.mark.slow
def test_rltools_zoo_trainer_end_to_end():
    record = _trainer_record(bench.ZOO_ENV, "no build of RLtools' zoo L2F SAC trainer named (docs/quadrotor.md)", bench.zoo_seed)
    assert record["wall_s"] > 0 and record["example_max_error"] < 1e-5
    assert 0.0 <= record["success_rate"] <= 1.0 and 0.0 <= record["success_rate_perturbed"] <= 1.0


def test_bad_set_values_and_eval_spacing_are_one_line_before_any_training(tmp_path):
    # a --set value out of range was a child's traceback after compiling; --eval-every 0 looped
    import subprocess
    import sys

    from helpers import repo_env

    assert bench.ppo_settings(0, {"epochs": 2})["epochs"] == 2
    with pytest.raises(ValueError, match="epochs must be a whole number >= 1"):
        bench.ppo_settings(0, {"epochs": -1})
    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "quadrotor.py")
    for args, words in ((["--set", "epochs=-1"], "--set: epochs must be a whole number >= 1, got -1"),
                        (["--set", "critic_final_lr=-1"], "critic_final_lr must be a finite number >= 0"),
                        (["--eval-every", "0"], "--eval-every 0: give a positive number of steps")):
        proc = subprocess.run([sys.executable, script, "--seeds", "1"] + args, capture_output=True, text=True, env=repo_env(), cwd=str(tmp_path), timeout=120)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
        assert words in proc.stderr, proc.stderr
        assert os.listdir(tmp_path) == []
