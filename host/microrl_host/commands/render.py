"""microrl render: an animated GIF of a task under a policy, from the task's picture() hook (or,
for the quadrotor, its 3D renderer)."""
import os

from .. import tasks
from . import CommandError
from .options import OUTPUT_HELP, SEED, check_memory, check_output, whole


MAX_EPISODES = 100
MAX_SIZE = 2048
FRAME_SECONDS = 0.04  # at most 25 frames per second: a task with shorter steps shows every few
RENDERER_EVERY = 4  # a task's own renderer (the quadrotor's 3D one): every 4th step, 25 frames per second of flight


def register(sub):
    p = sub.add_parser("render", help="animate a policy on its task as a GIF",
                       description="Run a policy file on its task (--task, or the built-in task of the policy's shape) and write an "
                       "animated GIF that plays in real time, drawn from the task's picture() hook (docs/tasks.md): the pendulum's "
                       "rod, the cart and its pole; a quadrotor policy flies from random starts and is drawn in 3D "
                       "with its four arms and the target. Observations and actions of the built-in tasks: %s." % tasks.shapes())
    p.add_argument("policy", metavar="POLICY", help="a policy file (.mrlp), e.g. from microrl train")
    p.add_argument("--task", metavar="TASK", help="the task: a built-in name or a task file or module (default: the built-in task of the policy's shape)")
    p.add_argument("--out", default=None, metavar="FILE", help="GIF to write (default: POLICY with the extension .gif)" + OUTPUT_HELP)
    p.add_argument("--episodes", type=whole(1, MAX_EPISODES, "a GIF holds every frame"), default=1, help="episodes to show one after the other, at most %d (default 1)" % MAX_EPISODES)
    p.add_argument("--seed", type=SEED, default=12345, help="seed of the start states, 0 to 2**32-1 (default 12345)")
    p.add_argument("--size", type=whole(32, MAX_SIZE), default=240, help="frame width and height in pixels, 32 to %d (default 240)" % MAX_SIZE)
    p.set_defaults(func=run)


def draw(shapes, text, size):
    """One frame of picture() shapes: a box [-1, 1] x [-1, 1], y up, into size x size pixels."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (size, size), (255, 255, 255))
    d = ImageDraw.Draw(img)
    half = size / 2.0

    def px(x, y):
        return half + half * x, half - half * y

    for shape in shapes:
        if shape[0] == "line":
            _, x0, y0, x1, y1, width = shape
            w = max(1, int(round(half * width)))
            d.line([px(x0, y0), px(x1, y1)], fill=(204, 77, 77), width=w)
            for x, y in ((x0, y0), (x1, y1)):  # round ends
                cx, cy = px(x, y)
                d.ellipse([cx - w / 2, cy - w / 2, cx + w / 2, cy + w / 2], fill=(204, 77, 77))
        elif shape[0] == "disc":
            _, x, y, r = shape
            cx, cy = px(x, y)
            r = half * r
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=(0, 0, 0))
    for k, line in enumerate(text):
        d.text((6, 6 + 12 * k if k == 0 else size - 16), line, fill=(0, 0, 0))
    return img.convert("P", palette=Image.ADAPTIVE, colors=32)


def frame_every(module):
    """Control steps per frame: at most 25 frames per second of the task's time."""
    return max(1, int(round(FRAME_SECONDS / module.DT)))


def frames(policy, module, episodes, seed, size):
    """(PIL images, returns, seconds per frame) of episodes of policy on the task module."""
    from microrl.rng import Rng
    from microrl.task import Env

    env = Env(module)
    rng = Rng(seed)
    every = frame_every(module)
    images = []
    returns = []
    for _ in range(episodes):
        obs = env.reset(rng)
        total = 0.0
        images.append(draw(module.picture(env.P, env.s), ["step %3d  return %7.1f" % (0, total)], size))
        done = False
        while not done:
            action = policy(obs)
            obs, reward, terminated, truncated = env.step(action)
            total += reward
            done = terminated or truncated
            if env.t % every == 0 or done:
                text = ["step %3d  return %7.1f" % (env.t, total), "action " + " ".join("%+.2f" % a for a in action)]
                images.append(draw(module.picture(env.P, env.s), text, size))
        returns.append(total)
    return images, returns, every * module.DT


def run(args):
    import io

    from .. import atomic
    from .eval import load_policy, pick_task

    if args.out is not None:
        check_output(args.out, "--out")
    policy = load_policy(args.policy)
    found = pick_task(policy, args.task, drawn=True)
    if args.out is None:  # beside the policy and named after it, as export's .mrlq: two policies never share a GIF
        args.out = os.path.splitext(args.policy)[0] + ".gif"
        check_output(args.out, "--out")
    renderer = tasks.RENDERERS.get(found.name)
    if renderer is None and not hasattr(found.module, "picture"):
        raise CommandError("task %s has no picture() hook to draw it with (docs/tasks.md)" % found.name)
    # every frame is kept until the GIF is written: a palette byte per pixel, and PIL's RGB frame while drawing
    every = RENDERER_EVERY if renderer else frame_every(found.module)
    size = max(args.size, 240) if renderer else args.size
    count = args.episodes * (-(-found.module.EPISODE_STEPS // every) + 1)
    check_memory(count * size ** 2, count * size ** 2, "a GIF of %d frames of %d x %d pixels" % (count, size, size), "use fewer --episodes or a smaller --size")
    if renderer:
        images, summary = __import__(renderer, None, None, ("frames",)).frames(policy, args.episodes, args.seed, every=every, size=size, params=found.module.PARAMETERS)
        seconds = every * found.module.DT
        said = "; ".join("return %.1f, %s, final distance %.3f m" % (r, "succeeds" if ok else "does not succeed", d) for r, ok, d in summary)
    else:
        images, returns, seconds = frames(policy, found.module, args.episodes, args.seed, args.size)
        said = "return %s" % ", ".join("%.1f" % r for r in returns)
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=int(round(seconds * 1000)), loop=0)
    atomic.write_bytes(args.out, buf.getvalue())
    print("%s: %d frames; %s" % (args.out, len(images), said))
    return 0
