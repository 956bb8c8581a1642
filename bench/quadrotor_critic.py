"""What TD3's critics say where the quadrotor's actor settles (issue 33; docs/quadrotor.md, "Why
the actor at the end of training does not fly"). One seed of `microrl train quadrotor`'s loop
(its settings, or --set NAME=VALUE for a TD3 setting); every --every steps the actor is flown
from `microrl eval`'s starts to the point p* where it settles, and there:

- the twin critics' (and their targets') values of the actor's action at p*, half-way to the
  target and at the target (the same state moved), beside the discounted return the actor really
  gets from those states (nominal task, no noise, deterministic);
- the action gradient at p*: each critic's central differences of Q(s*, a) in each of the four
  motor commands (+-0.02), against the true ones (that command for one step, then the actor), and
  the cosine between them. The actor follows critic 1's.

    python bench/quadrotor_critic.py --seed 0 --json
    python bench/quadrotor_critic.py --seed 1 --every 100000 --set target_noise=0.1

The probe flies the task's own Python functions (microrl.tasks.quadrotor) on the host: a few
seconds per probe, outside the training clock."""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTS = 4  # evaluation starts flown to find p* (their spread says whether there is one point)
DELTA = 0.02  # command change of the action gradient's central differences
HORIZON = 1500  # steps of the true returns (gamma^1500 < 1e-6 at 0.99)


def _path():
    for p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
        if p not in sys.path:
            sys.path.insert(0, p)


def fly(Q, P, s, actor, steps, gamma):
    """Fly state s (changed in place) with actor for steps: the discounted return."""
    import numpy as np

    o = [0.0] * Q.OBS_DIM
    x = np.zeros((1, Q.OBS_DIM), np.float32)
    a = [0.0] * Q.ACT_DIM
    ret, disc = 0.0, 1.0
    for _ in range(steps):
        Q.observe(P, s, o)
        x[0] = o
        act = actor.forward(1, x)[0]
        for i in range(Q.ACT_DIM):
            a[i] = float(act[i])
        r, done = Q.advance(P, s, a)
        ret += disc * r
        disc *= gamma
        if done:
            break
    return ret


def probe(Q, state, gamma, seed=7):
    """{p_star, spread, line, grad_critic1, grad_critic2, grad_true, cosine} of a TD3 State."""
    import numpy as np

    from microrl_host.algos import offpolicy
    from microrl_host.nn import mlp

    P = Q.new_parameters(Q.PARAMETERS)
    E = Q.new_parameters(Q.PARAMETERS)
    Q.evaluation(E)
    actor = mlp.numpy_net(state.actor, 1)
    rng = np.random.default_rng(seed)
    finals = []
    for _ in range(STARTS):
        s = np.zeros(Q.STATE_DIM)
        Q.initial_state(E, s, rng.random(Q.RESET_DRAWS), E[Q.INIT_POSITION], E[Q.INIT_ANGLE], 0.0, 0.0, 0.0, 0.0, 0.0)
        fly(Q, P, s, actor, Q.EPISODE_STEPS, gamma)
        finals.append(s.copy())
    star = finals[0]
    critics = (state.critic1, state.critic2, state.critic1_target, state.critic2_target)

    def observed(s):
        o = [0.0] * Q.OBS_DIM
        Q.observe(P, s, o)
        return np.array([o], np.float32)

    line = []
    for share in (1.0, 0.5, 0.0):  # p*, half-way, the target
        s = star.copy()
        s[0:3] = star[0:3] * share
        x = observed(s)
        ci = offpolicy.critic_input(x, np.array(actor.forward(1, x), np.float32))
        q = [round(float(offpolicy.q_values(net, ci)[0]), 2) for net in critics]
        line.append({"share_of_p_star": share, "q1": q[0], "q2": q[1], "q1_target": q[2], "q2_target": q[3], "true": round(fly(Q, P, s, actor, HORIZON, gamma), 2)})
    x = observed(star)
    a0 = np.array(actor.forward(1, x), np.float32).copy()
    G = np.zeros((3, Q.ACT_DIM))
    for j in range(Q.ACT_DIM):
        for sign in (1.0, -1.0):
            a = a0.copy()
            a[0, j] = np.clip(a[0, j] + sign * DELTA, -1.0, 1.0)
            ci = offpolicy.critic_input(x, a)
            s = star.copy()
            r, done = Q.advance(P, s, [float(v) for v in a[0]])
            true = r + (0.0 if done else gamma * fly(Q, P, s, actor, HORIZON, gamma))
            values = [float(offpolicy.q_values(net, ci)[0]) for net in critics[:2]] + [true]
            G[:, j] += sign * np.array(values) / (2.0 * DELTA)

    def cosine(u, v):
        return round(float(u @ v / max(1e-12, np.linalg.norm(u) * np.linalg.norm(v))), 3)

    return {"p_star": [round(float(v), 4) for v in star[:3]], "distance": round(float(np.linalg.norm(star[:3])), 4),
            "spread": round(float(max(np.linalg.norm(f[:3] - star[:3]) for f in finals)), 4), "line": line,
            "grad_critic1": [round(float(v), 3) for v in G[0]], "grad_critic2": [round(float(v), 3) for v in G[1]], "grad_true": [round(float(v), 3) for v in G[2]],
            "cosine": [cosine(G[0], G[2]), cosine(G[1], G[2])], "norm": [round(float(np.linalg.norm(g)), 3) for g in G]}


def setting(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError("expected NAME=VALUE (a TD3 setting, e.g. target_noise=0.1), got %r" % text)
    name, value = text.split("=", 1)
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        raise argparse.ArgumentTypeError("%s: the value %r is not a number or a list" % (name, value)) from None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=None, help="training steps (default microrl train quadrotor's, 500,000)")
    ap.add_argument("--every", type=int, default=50000, help="steps between probes (default 50,000; and at the end)")
    ap.add_argument("--set", type=setting, action="append", default=[], metavar="NAME=VALUE", help="a TD3 setting for the run (repeatable)")
    ap.add_argument("--json", action="store_true", help="one JSON line per probe")
    a = ap.parse_args()
    if a.every < 1 or (a.steps is not None and a.steps < 1):
        print("--every and --steps take a whole number of steps >= 1", file=sys.stderr)
        return 2
    _path()
    from microrl.tasks import quadrotor as Q
    from microrl_host.algos import td3
    from microrl_host.algos.callbacks import EachChunk

    settings = dict(a.set)
    try:
        config = td3.ALGO.config(**settings)
    except ValueError as e:
        print(str(e), file=sys.stderr)
        return 2
    steps = a.steps or Q.TRAINING["steps"]

    def progress(step, state):
        if step % a.every == 0 or step == steps:
            p = dict(probe(Q, state, config.gamma), step=step)
            if a.json:
                print(json.dumps(p), flush=True)
            else:
                at, target = p["line"][0], p["line"][-1]
                print("step %d: settles %.3f m off the target (spread %.3f m); Q1 %.1f at p*, %.1f at the target (true %.1f, %.1f); "
                      "action gradient |critic 1| %.3f |critic 2| %.3f |true| %.3f, cosine to the true %.2f, %.2f"
                      % (step, p["distance"], p["spread"], at["q1"], target["q1"], at["true"], target["true"], p["norm"][0], p["norm"][1], p["norm"][2],
                         p["cosine"][0], p["cosine"][1]), flush=True)

    td3.ALGO.run("quadrotor", steps=steps, seed=a.seed, eval_every=0, eval_episodes=0, callbacks=EachChunk(progress), threads=1, **settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
