"""One seed, the same numbers on CPython and on MicroPython: weights, resets, noise, training."""
import json

from helpers import needs_micropython, run_micropython_code

SCRIPT = """
import json
from microrl.rng import Rng
from microrl.nn import MLP
from microrl.pendulum import Pendulum
from microrl.td3 import TD3, TD3Config
r = Rng(42)
noise = [r.normal() for _ in range(7)] + [r.uniform(-1, 1) for _ in range(5)] + [r.randint(1000) for _ in range(5)]
net = MLP([3, 8, 1], ("relu", "tanh")).init(Rng(7))
env = Pendulum(Rng(5))
resets = []
for _ in range(3):
    env.reset()
    resets += [env.th, env.thdot]
agent = TD3(Pendulum(), TD3Config(hidden=(8,), batch=8, warmup=16, replay_capacity=64), 11)
for _ in range(60):
    agent.step()
print(json.dumps({"noise": noise, "weights": list(net.params), "resets": resets, "actor": list(agent.actor.params)}))
"""


def _cpython():
    scope = {}
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(SCRIPT, scope)
    return json.loads(out.getvalue())


@needs_micropython
def test_same_seed_same_numbers():
    from microrl import backend

    mp = json.loads(run_micropython_code(SCRIPT))
    cp = _cpython()
    assert mp["noise"] == cp["noise"]
    assert mp["resets"] == cp["resets"]
    assert mp["weights"] == cp["weights"]  # both float32-rounded from the same doubles
    # training: plain (MicroPython, double math) vs this process's backend: float32 tolerance
    tol = 0.0 if backend.name() == "plain" else 1e-4
    assert max(abs(a - b) for a, b in zip(mp["actor"], cp["actor"])) <= tol
