"""One seed, the same numbers on CPython and on MicroPython: weights, resets, noise, training."""
import json

from helpers import needs_micropython, run_micropython_code

SCRIPT = """
import json
from microrl.rng import Rng
from microrl.nn import MLP
from microrl.task import Env
from microrl.tasks import pendulum
from microrl.td3 import TD3, TD3Config
r = Rng(42)
noise = [r.normal() for _ in range(7)] + [r.uniform(-1, 1) for _ in range(5)] + [r.randint(1000) for _ in range(5)]
net = MLP([3, 8, 1], ("relu", "tanh")).init(Rng(7))
env = Env(pendulum, rng=Rng(5))
resets = []
for _ in range(3):
    env.reset()
    resets += [env.s[0], env.s[1]]
agent = TD3(Env(pendulum), TD3Config(hidden=(8,), batch=8, warmup=16, replay_capacity=64), 11)
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


def compare(mp, cp, single_precision, backend_name):
    """MicroPython's numbers (mp) against CPython's (cp). Integers are equal everywhere. A double
    MicroPython gives the same floats bit for bit; a single-precision one (every board) computes
    each normal draw, reset and weight in float32, so those agree to float32 rounding of the
    computation (observed: under 6e-6 relative, 3.4e-7 absolute): checked at 2e-5 relative plus
    1e-6 absolute. The trained actor agrees to 1e-4 wherever either side is not plain doubles."""
    normals, uniforms, ints = mp["noise"][:7], mp["noise"][7:12], mp["noise"][12:]
    assert ints == cp["noise"][12:] and all(isinstance(i, int) for i in ints)
    for key, got, want in (("normal", normals, cp["noise"][:7]), ("uniform", uniforms, cp["noise"][7:12]), ("resets", mp["resets"], cp["resets"]), ("weights", mp["weights"], cp["weights"])):
        assert len(got) == len(want), key
        if single_precision:
            bad = [(a, b) for a, b in zip(got, want) if abs(a - b) > 1e-6 + 2e-5 * abs(b)]
            assert not bad, "%s differ beyond float32 rounding: %r" % (key, bad[:3])
        else:
            assert got == want, key  # weights: both float32-rounded from the same doubles
    # training: plain (MicroPython, double math) vs this process's backend: float32 tolerance
    tol = 0.0 if backend_name == "plain" and not single_precision else 1e-4
    assert max(abs(a - b) for a, b in zip(mp["actor"], cp["actor"])) <= tol


@needs_micropython
def test_same_seed_same_numbers():
    from microrl import backend

    mp = json.loads(run_micropython_code(SCRIPT))
    compare(mp, _cpython(), False, backend.name())
