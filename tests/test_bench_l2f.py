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


@pytest.mark.slow
def test_l2f_trainer_end_to_end():
    binary = os.environ.get(bench.L2F_TRAINER_ENV)
    if not binary:
        pytest.skip("%s not set: no build of learning-to-fly's trainer named (docs/sim-to-real.md)" % bench.L2F_TRAINER_ENV)
    record = bench.l2f_seed(binary, 0)
    assert "why" not in record, record
    assert record["train_s"] > 0 and 0.0 <= record["success_rate"] <= 1.0 and 0.0 <= record["success_rate_perturbed"] <= 1.0
