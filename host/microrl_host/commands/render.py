"""microrl render: an animated GIF of the pendulum under a policy."""
import math

from . import CommandError
from .options import OUTPUT_HELP, SEED, check_memory, check_output, whole


MAX_EPISODES = 100
MAX_SIZE = 2048
FRAMES_PER_EPISODE = 251  # the longest episode's frames: Pendulum 201, the quadrotor 5 s at 25 frames/s plus the start


def register(sub):
    p = sub.add_parser("render", help="animate a Pendulum or quadrotor policy as a GIF",
                       description="Run a Pendulum policy file on the device core's Pendulum and write an animated GIF "
                       "(one frame per 50 ms control step, so it plays in real time); a quadrotor policy (22 observations, "
                       "4 motor commands) flies from random starts and is drawn in 3D with its four arms and the target.")
    p.add_argument("policy", metavar="POLICY", help="a Pendulum (3 observations, 1 action) or quadrotor (22, 4) policy file")
    p.add_argument("--out", default="pendulum.gif", metavar="FILE", help="GIF to write (default pendulum.gif)" + OUTPUT_HELP)
    p.add_argument("--episodes", type=whole(1, MAX_EPISODES, "a GIF holds every frame"), default=1, help="episodes to show one after the other, at most %d (default 1)" % MAX_EPISODES)
    p.add_argument("--seed", type=SEED, default=12345, help="seed of the start states, 0 to 2**32-1 (default 12345)")
    p.add_argument("--size", type=whole(32, MAX_SIZE), default=240, help="frame width and height in pixels, 32 to %d (default 240)" % MAX_SIZE)
    p.set_defaults(func=run)


def draw(th, u, t, total, size):
    """One frame: theta = 0 is upright (as in gymnasium); the arc shows the torque."""
    from PIL import Image, ImageDraw

    from microrl.pendulum import MAX_TORQUE

    img = Image.new("RGB", (size, size), (255, 255, 255))
    d = ImageDraw.Draw(img)
    c = size / 2.0
    r = size * 0.36
    x = c + r * math.sin(th)
    y = c - r * math.cos(th)
    w = max(4, size // 24)
    d.line([(c, c), (x, y)], fill=(204, 77, 77), width=w)
    d.ellipse([x - w / 2, y - w / 2, x + w / 2, y + w / 2], fill=(204, 77, 77))
    if abs(u) > 1e-3:  # torque arc, length proportional to |u|
        span = 150.0 * min(1.0, abs(u) / MAX_TORQUE)
        a0 = -90.0
        box = [c - r * 0.35, c - r * 0.35, c + r * 0.35, c + r * 0.35]
        if u > 0:  # counter-clockwise
            d.arc(box, a0 - span, a0, fill=(60, 60, 60), width=max(2, w // 3))
        else:
            d.arc(box, a0, a0 + span, fill=(60, 60, 60), width=max(2, w // 3))
    d.ellipse([c - w / 2, c - w / 2, c + w / 2, c + w / 2], fill=(0, 0, 0))
    d.text((6, 6), "step %3d  return %7.1f" % (t, total), fill=(0, 0, 0))
    d.text((6, size - 16), "torque %+.2f" % u, fill=(0, 0, 0))
    return img.convert("P", palette=Image.ADAPTIVE, colors=32)


def run(args):
    from microrl.pendulum import DT, Pendulum
    from microrl.rng import Rng

    from .eval import load_policy, pick_env

    check_output(args.out, "--out")
    policy = load_policy(args.policy)
    # every frame is kept until the GIF is written: a palette byte per pixel, and PIL's RGB frame while drawing
    frames = args.episodes * FRAMES_PER_EPISODE
    check_memory(frames * args.size ** 2, frames * args.size ** 2, "a GIF of %d frames of %d x %d pixels" % (frames, args.size, args.size), "use fewer --episodes or a smaller --size")
    from microrl import quadrotor

    if policy.obs_dim == quadrotor.OBS_DIM and policy.act_dim == quadrotor.ACT_DIM:
        return run_quadrotor(args, policy)
    if pick_env(policy, "pendulum") != "pendulum":  # raises for other shapes
        raise CommandError("render draws Pendulum and quadrotor policies only")
    env = Pendulum()
    rng = Rng(args.seed)
    frames = []
    returns = []
    for _ in range(args.episodes):
        obs = env.reset(rng)
        total = 0.0
        frames.append(draw(env.th, 0.0, 0, total, args.size))
        done = False
        t = 0
        while not done:
            u = policy(obs)[0]
            obs, reward, terminated, truncated = env.step(u)
            total += reward
            t += 1
            frames.append(draw(env.th, u, t, total, args.size))
            done = terminated or truncated
        returns.append(total)
    import io

    from .. import atomic

    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:], duration=int(DT * 1000), loop=0)
    atomic.write_bytes(args.out, buf.getvalue())
    print("%s: %d frames, return %s" % (args.out, len(frames), ", ".join("%.1f" % r for r in returns)))
    return 0


def run_quadrotor(args, policy):
    import io

    from microrl.quadrotor import CRAZYFLIE, DT

    from .. import atomic
    from ..envs.quadrotor_render import frames

    every = 4  # 25 frames per second of flight: plays in real time
    images, summary = frames(policy, args.episodes, args.seed, every=every, size=max(args.size, 240), params=CRAZYFLIE)
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=int(every * DT * 1000), loop=0)
    atomic.write_bytes(args.out, buf.getvalue())
    print("%s: %d frames; %s" % (args.out, len(images), "; ".join("return %.1f, %s, final distance %.3f m" % (r, "flies" if ok else "does not fly", d) for r, ok, d in summary)))
    return 0
