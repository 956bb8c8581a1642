"""Frames of the quadrotor under a policy: a 3D matplotlib view of the airframe (four arms,
rotor discs, body z axis) and the target, one frame every few control steps."""
import io

import numpy as np

from microrl.tasks import quadrotor as Q

ARM_SCALE = 4.0  # the Crazyflie is 9 cm across; drawn larger so its attitude reads at 1 m scale


def rotation(s):
    qw, qx, qy, qz = s[3], s[4], s[5], s[6]
    return np.array([
        [1 - 2 * qy * qy - 2 * qz * qz, 2 * qx * qy - 2 * qw * qz, 2 * qx * qz + 2 * qw * qy],
        [2 * qx * qy + 2 * qw * qz, 1 - 2 * qx * qx - 2 * qz * qz, 2 * qy * qz - 2 * qw * qx],
        [2 * qx * qz - 2 * qw * qy, 2 * qy * qz + 2 * qw * qx, 1 - 2 * qx * qx - 2 * qy * qy]])


def episode(policy, env, rng):
    """(states, actions, return, steps) of one episode from env.reset(rng)."""
    obs = env.reset(rng)
    states = [list(env.s)]
    actions = [[0.0] * 4]
    total = 0.0
    done = truncated = False
    while not (done or truncated):
        a = list(policy(obs))
        obs, r, done, truncated = env.step(a)
        total += r
        states.append(list(env.s))
        actions.append(a)
    return np.array(states), np.array(actions), total, done


def frames(policy, episodes=2, seed=12345, every=4, size=320, params=None):
    """PIL images: every `every`-th control step of `episodes` evaluation episodes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    from microrl.rng import Rng

    rng = Rng(seed)
    from microrl.task import Env

    env = Env(Q, params, rng, evaluation=True)
    P = env.P
    arms = np.array([[P[Q.ROTOR_X + i], P[Q.ROTOR_Y + i], 0.0] for i in range(4)]) * ARM_SCALE
    circle = np.linspace(0, 2 * np.pi, 16)
    disc = np.stack([np.cos(circle), np.sin(circle), 0 * circle], 1) * 0.6 * np.abs(arms[0, 0])
    fig = plt.figure(figsize=(size / 80.0, size / 80.0), dpi=80)
    ax = fig.add_subplot(111, projection="3d")
    out = []
    summary = []
    for e in range(episodes):
        states, actions, total, crashed = episode(policy, env, rng)
        flew = (not crashed) and Q.success(P, states[-1])
        summary.append((total, flew, float(np.linalg.norm(states[-1, 0:3]))))
        trail = states[:, 0:3]
        for t in list(range(0, len(states), every)) + ([len(states) - 1] if (len(states) - 1) % every else []):
            s = states[t]
            ax.cla()
            ax.set_xlim(-0.6, 0.6)
            ax.set_ylim(-0.6, 0.6)
            ax.set_zlim(-0.6, 0.6)
            ax.set_xlabel("x (m)")
            ax.set_ylabel("y (m)")
            ax.set_zlabel("z (m)")
            ax.scatter([0], [0], [0], color="tab:green", marker="x", s=60)  # the target
            ax.plot(trail[: t + 1, 0], trail[: t + 1, 1], trail[: t + 1, 2], color="0.7", lw=1)
            R = rotation(s)
            p = s[0:3]
            for i in range(4):
                tip = p + R @ arms[i]
                ax.plot([p[0], tip[0]], [p[1], tip[1]], [p[2], tip[2]], color="tab:red" if i in (0, 3) else "k", lw=2)
                ring = tip + disc @ R.T
                ax.plot(ring[:, 0], ring[:, 1], ring[:, 2], color="tab:blue", lw=1)
            up = p + R @ np.array([0, 0, 0.12])
            ax.plot([p[0], up[0]], [p[1], up[1]], [p[2], up[2]], color="tab:orange", lw=1)
            ax.set_title("episode %d  t=%.2f s  |p|=%.3f m%s" % (e + 1, t * P[Q.TIME_STEP], np.linalg.norm(p), "  crashed" if crashed and t == len(states) - 1 else ""), fontsize=8)
            buf = io.BytesIO()
            fig.savefig(buf, format="png")
            buf.seek(0)
            out.append(Image.open(buf).convert("P", palette=Image.ADAPTIVE, colors=64))
    plt.close(fig)
    return out, summary
