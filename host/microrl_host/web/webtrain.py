# The page's Python, run by worker.js under MicroPython-webassembly: the device core's own
# train_pendulum (device/microrl/train.py), as a board runs it, with every episode's frames
# (the task's picture() shapes) and returns sent to the page as JSON through js.report.
import json
import time

import js
import microrl.train
from microrl.policy import load
from microrl.refusals import count
from microrl.rng import Rng
from microrl.task import Env, policy_perturbations
from microrl.tasks import cartpole, pendulum, quadrotor

TASKS = (pendulum, cartpole, quadrotor)
# the page's networks (docs/browser.md: 10,000 steps within a minute in the browser)
SETTINGS = {"hidden": (64, 64), "batch": 32}


def _report(kind, **fields):
    fields["kind"] = kind
    js.report(json.dumps(fields))


def quadrotor_picture(P, s):
    """The quadrotor seen from the side (x right, z up): its arms to the four rotors, as rotated by
    its attitude, and the target (a cross at the origin), within [-1, 1] for positions within +-2 m."""
    q = quadrotor
    x, z = s[q.POSITION], s[q.POSITION + 2]
    w, qx, qy, qz = s[q.ORIENTATION], s[q.ORIENTATION + 1], s[q.ORIENTATION + 2], s[q.ORIENTATION + 3]
    shapes = [("line", -0.05, 0.0, 0.05, 0.0, 0.01), ("line", 0.0, -0.05, 0.0, 0.05, 0.01)]  # the target: a cross
    k = 0.5  # m to picture units; the arms drawn 10 times their length, to be seen
    for i in range(4):
        rx, ry = 10 * P[q.ROTOR_X + i], 10 * P[q.ROTOR_Y + i]
        # x and z rows of the rotation matrix of (w, qx, qy, qz), applied to (rx, ry, 0)
        ax = (1 - 2 * (qy * qy + qz * qz)) * rx + 2 * (qx * qy - w * qz) * ry
        az = 2 * (qx * qz - w * qy) * rx + 2 * (qy * qz + w * qx) * ry
        shapes.append(("line", k * x, k * z, k * (x + ax), k * (z + az), 0.025))
        shapes.append(("disc", k * (x + ax), k * (z + az), 0.035))
    return shapes


def picture(task, P, s):
    return quadrotor_picture(P, s) if task is quadrotor else task.picture(P, s)


class ShownEnv(Env):
    """microrl.task.Env keeping its last episode's frames and return for the page."""

    made = []

    def __init__(self, task, *args, **kwargs):
        Env.__init__(self, task, *args, **kwargs)
        ShownEnv.made.append(self)
        self.frames = []
        self.total = 0.0
        self.last_frames = []
        self.last_return = None
        self.episodes = 0

    def reset(self, rng=None):
        obs = Env.reset(self, rng)
        self.frames = [picture(self.task, self.P, self.s)]
        self.total = 0.0
        return obs

    def step(self, action):
        out = Env.step(self, action)
        self.frames.append(picture(self.task, self.P, self.s))
        self.total += out[1]
        if out[2] or out[3]:
            self.last_frames, self.last_return = self.frames, self.total
            self.episodes += 1
        return out


def train(steps=10000, seed=0, eval_every=2000, eval_episodes=10, **settings):
    """train_pendulum with the page's reports; returns its evaluations."""
    chosen = dict(SETTINGS)
    chosen.update(settings)
    ShownEnv.made = []
    microrl.train.Env = ShownEnv
    start = time.ticks_ms()
    seen = [0, None]  # training episodes and the last evaluation reported

    def progress(step, agent, last):
        train_env, eval_env = ShownEnv.made[0], ShownEnv.made[1]
        ms = time.ticks_diff(time.ticks_ms(), start)
        if train_env.episodes > seen[0]:
            seen[0] = train_env.episodes
            _report("episode", step=step, ms=ms, ret=train_env.last_return, frames=train_env.last_frames)
        if last is not None and last is not seen[1]:
            seen[1] = last
            _report("evaluation", step=last[0], ms=ms, mean=last[1], std=last[2], frames=eval_env.last_frames)

    try:
        agent, evaluations = microrl.train.train_pendulum(steps=steps, seed=seed, eval_every=eval_every, eval_episodes=eval_episodes, progress=progress, **chosen)
    finally:
        microrl.train.Env = Env
    ms = time.ticks_diff(time.ticks_ms(), start)
    env = ShownEnv(pendulum)
    rng = Rng(seed + 1)
    policy = agent.policy()
    for _ in range(3):  # three swing-ups of the trained policy, from random starts
        obs = env.reset(rng)
        done = False
        while not done:
            obs, _, terminated, truncated = env.step(policy(obs))
            done = terminated or truncated
        _report("final", ret=env.last_return, frames=env.last_frames)
    _report("done", ms=ms, steps=steps, evaluations=[list(e) for e in evaluations], settings={k: list(v) if isinstance(v, tuple) else v for k, v in chosen.items()})
    return evaluations


def fly(path, seed=12345):
    """One episode of a policy file on the built-in task of its shape."""
    policy = load(path)
    obs_dim, act_dim = policy.sizes[0] - policy.pending * policy.sizes[-1], policy.sizes[-1]
    task = None
    for t in TASKS:
        if (t.OBS_DIM, t.ACT_DIM) == (obs_dim, act_dim):
            task = t
    if task is None:
        _report("error", message="no built-in task takes %s and gives %s" % (count(obs_dim, "observation"), count(act_dim, "action")))
        return
    # policy_env's choices, in the recording Env
    shown = ShownEnv(task, perturbations=policy_perturbations(policy), pending_actions=bool(policy.pending))
    obs = shown.reset(Rng(seed))
    done = False
    while not done:
        obs, _, terminated, truncated = shown.step(policy(obs))
        done = terminated or truncated
    _report("fly", task=task.NAME, ret=shown.last_return, frames=shown.last_frames, dt=getattr(task, "DT", 0.02))
