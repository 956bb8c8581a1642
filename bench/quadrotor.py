"""Learning to fly: microrl on the quadrotor hover task (microrl.tasks.quadrotor, L2F's Crazyflie),
over seeds, with the algorithm `microrl train quadrotor` runs (the task's ALGO: PPO with its
TRAINING_PPO settings; --algo td3 or sac: the off-policy loop with its TRAINING). Per seed:
training wall time until the success rate first reaches 90% (100 episodes from +-0.5 m and 30
deg of tilt, at rest: within 0.1 m of the target and below 0.5 rad/s after 5 s, no crash;
evaluated every --eval-every steps for PPO, 10,000 for TD3/SAC, outside the clock), and the
final policy's success rate after the fixed budget, nominal and under the task's training
perturbations. The loop is `microrl train quadrotor`'s: the same settings, curriculum and
compiled code.

Beside it, in the same run, L2F's own trainer when MICRORL_L2F_TRAINER names a build of it (the
learning-to-fly repository's trainer, built on this machine by its own instructions:
https://github.com/arplaboratory/learning-to-fly, README "Training"; microrl builds none of it),
called as `$MICRORL_L2F_TRAINER SEED` in a scratch folder: its training main with the seed as
its first argument (the stock main takes none: a two-line change), printing "Training took: X s"
and saving its final actor as code (RLtools' save_code) under checkpoints/, as its benchmark
target does. That actor (146 inputs: our 18 state inputs and its 32-step action history, oldest
first) then flies our task through an adapter that keeps its action history, with our success
test, nominal and perturbed; L2F's simulator differs from ours (docs/quadrotor.md), so this is a
transfer figure, beside its own training time. Without the variable the published figure is
quoted with its source. Ours are evaluated at the end nominal and under the quadrotor's training
perturbations (microrl.perturb.training). The pretrained
`foundation-policy` (RLtools' RAPTOR quadrotor policy, PyPI) flies our hover task as a reference
for what "flies well" means, when it is installed.

    python bench/quadrotor.py                 # PPO, 5 seeds, one thread each, one after another
    MICRORL_RLTOOLS_ZOO_L2F=/path/to/zoo_l2f_sac python bench/quadrotor.py --seeds 5 --json   # beside RLtools' zoo trainer
    python bench/quadrotor.py --seeds 5 --first-seed 5 --json   # seeds 5-9
    python bench/quadrotor.py --algo td3 --seeds 10 --json     # TD3 with the task's TRAINING (500,000 steps)
    MICRORL_L2F_TRAINER=/path/to/l2f_train nice -n 10 python bench/quadrotor.py --algo td3 --seeds 3 --json

RLtools' zoo L2F SAC trainer (src/rl/zoo/l2f/sac.cpp of https://github.com/rl-tools/rl-tools,
built on this machine by that README's Quick Start; microrl builds none of it) runs beside ours,
seed by seed, when MICRORL_RLTOOLS_ZOO_L2F names its binary: `$MICRORL_RLTOOLS_ZOO_L2F SEED` in a
scratch folder, its wall time (and its own "Time:"), its last evaluation on its own task, and its
final actor (the checkpoint.tar of its last step) flown on our task through an adapter
(zoo_inputs: its 29 inputs from ours; it trains at 50 Hz, so each command is held for two of our
steps), nominal and perturbed. Its task is not ours (docs/quadrotor.md, "RLtools' zoo trainer"):
a transfer figure beside its own training time.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVAL_EVERY = 10000
EVAL_EVERY_PPO = 50000  # PPO evaluates outside the clock: finer spacing times its first 90% closer
EVAL_EPISODES = 100
EVAL_SEED = 4242
TARGET = 0.9
L2F_TRAINER_ENV = "MICRORL_L2F_TRAINER"
ZOO_ENV = "MICRORL_RLTOOLS_ZOO_L2F"
L2F_PUBLISHED = {
    "what": "L2F (RLtools C++ TD3, asymmetric actor-critic, action history), 300,000 steps",
    "seconds": 18.0,
    "hardware": "a consumer-grade laptop (Eschmann, Albani, Loianno: Learning to Fly in Seconds, arXiv 2311.13081)",
    "measured_here": False,
}


def _path():
    for p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
        if p not in sys.path:
            sys.path.insert(0, p)


# ------------------------------------------------------------------ one seed (in a subprocess)


def evaluated(clock, curve, step, rows):
    """One evaluation (rows of (return, success, final error, steps) over EVAL_EPISODES flights)
    into the seed's curve, the spread of its final distances and, the first time it reaches
    TARGET, the clock."""
    import numpy as np

    from microrl.tasks import quadrotor as Q
    from microrl_host import tasks

    s = tasks.summary(Q, rows)
    curve.append((step, round(clock["train"], 3), s["success_rate"], s["position_error_m"], s["crash_rate"]))
    flown = rows[rows[:, 3] >= Q.EPISODE_STEPS, 2]  # final distances of the flights that did not crash
    # the 10th and 90th percentiles: equal to the millimetre when every flight ends at one fixed point
    clock["final_spread"] = [float(np.percentile(flown, 10)), float(np.percentile(flown, 90))] if len(flown) else None
    if clock["first_90"] is None and s["success_rate"] >= TARGET:
        clock["first_90"] = (step, clock["train"])
    # progress on stderr (the driver passes it through): a long run shows where it is
    print("  step %d, %.1f s of training: %.0f%% success, %.3f m, crashes %.0f%%" % (step, clock["train"], 100 * s["success_rate"], s["position_error_m"], 100 * s["crash_rate"]),
          file=sys.stderr, flush=True)


def seed_record(algo, seed, steps, settings, clock, curve, perturbed, train_s_run, perturbations):
    """A seed's record: time to TARGET, its evaluations, and the final policy nominal and perturbed."""
    final = curve[-1]
    return {
        "algo": algo,
        "seed": seed,
        "steps": steps,
        "settings": settings,
        "train_s": clock["train"],
        "train_s_run": train_s_run,
        "steps_to_90": clock["first_90"][0] if clock["first_90"] else None,
        "seconds_to_90": clock["first_90"][1] if clock["first_90"] else None,
        "final_success_rate": final[2],
        "best_success_rate": max(c[2] for c in curve),
        "best_step": max(curve, key=lambda c: (c[2], -c[3]))[0],
        "final_position_error_m": final[3],
        "final_success_rate_perturbed": perturbed["success_rate"],
        "final_position_error_m_perturbed": perturbed["position_error_m"],
        "perturbations": perturbations,
        "final_crash_rate": final[4],
        "final_distance_p10_p90_m": clock["final_spread"],
        "curve": curve,
    }


def run_seed(algo, seed, steps, settings=None):
    """Train with `microrl train quadrotor`'s loop (settings: {name: value} of the algorithm's
    beside the task's own, as `microrl train --NAME VALUE`); evaluate every EVAL_EVERY steps
    outside the clock. Returns the seed's record."""
    settings = settings or {}
    _path()
    import numpy as np

    from microrl.tasks import quadrotor as Q
    from microrl_host.algos import sac, td3
    from microrl_host.algos.callbacks import EachChunk
    from microrl_host import tasks
    from microrl_host.envs.task import CompiledTask

    module = td3 if algo == "td3" else sac
    params = np.array(Q.CRAZYFLIE, np.float64)
    task = CompiledTask(Q)
    curve = []
    clock = {"train": 0.0, "last": None, "first_90": None, "final_spread": None}

    def progress(step, state):
        now = time.perf_counter()
        clock["train"] += now - clock["last"]
        if step % EVAL_EVERY == 0 or step == steps:
            evaluated(clock, curve, step, task.evaluate(state.actor, module.SQUASH, EVAL_EPISODES, EVAL_SEED, params))
        clock["last"] = time.perf_counter()

    # compile (or load numba's cache) first, so that the clock holds training only
    module.ALGO.run("quadrotor", steps=1, seed=seed, eval_episodes=0, **settings)
    clock["last"] = time.perf_counter()
    run = module.ALGO.run("quadrotor", steps=steps, seed=seed, eval_every=0, eval_episodes=0, callbacks=EachChunk(progress), **settings)
    from microrl.perturb import training

    rows = task.evaluate(run.state.actor, module.SQUASH, EVAL_EPISODES, EVAL_SEED, params, perturbations=training(Q))
    # what `microrl train quadrotor --algo td3` writes is the actor of its best evaluation (best_step)
    return seed_record(algo, seed, steps, settings, clock, curve, tasks.summary(Q, rows), run.stats["train_s"], run.stats.get("perturbations", {}))


def ppo_settings(seed, given=None):
    """The PPOSettings of a PPO seed: the task's TRAINING_PPO (`microrl train quadrotor`'s),
    with given ({name: value}, --set: a TRAINING_PPO name or a PPOSettings field) over them."""
    from microrl_host.algos import ppo

    settings = dict(ppo.suggested("quadrotor"), seed=seed, threads=1)
    for k, v in (given or {}).items():
        if k == "init_std":
            settings["init_log_std"] = math.log(v)
        elif k in ppo.PPOSettings.names() and k not in ("steps", "seed"):
            settings[k] = tuple(v) if k == "hidden" else v
        else:
            raise ValueError("--set %s: not a PPO setting (known: init_std, %s)" % (k, ", ".join(sorted(ppo.PPOSettings.names() - {"steps", "seed"}))))
    try:
        ppo.PPOSettings(**settings)  # every value in its range: one line here, not a child's traceback
    except ValueError as e:
        raise ValueError("--set: %s" % e) from None
    return settings


def run_seed_ppo(seed, steps, given=None, eval_every=EVAL_EVERY_PPO):
    """PPO (`microrl train quadrotor --algo ppo`'s settings: the task's TRAINING_PPO, given over
    them) for steps; its policy evaluated every eval_every steps outside the clock, and at the
    end nominal and perturbed. PPO keeps no best policy: the final one is what the command writes."""
    _path()
    from microrl.perturb import training
    from microrl.tasks import quadrotor as Q
    from microrl_host import tasks
    from microrl_host.algos import ppo
    from microrl_host.algos.callbacks import Callbacks
    from microrl_host.envs.task import CompiledTask, evaluate_policy

    task = CompiledTask(Q)
    settings = ppo_settings(seed, given)
    curve = []
    clock = {"train": 0.0, "last": None, "first_90": None, "final_spread": None, "next": eval_every}

    class Clock(Callbacks):
        def on_start(self, total, initial, desc):
            clock["last"] = time.perf_counter()

        def on_progress(self, step, done, learner, figures):
            clock["train"] += time.perf_counter() - clock["last"]
            if step >= clock["next"] or step >= steps:
                clock["next"] = (step // eval_every + 1) * eval_every
                evaluated(clock, curve, step, evaluate_policy(task, learner.to_policy(), EVAL_EPISODES, EVAL_SEED))
            clock["last"] = time.perf_counter()

    # compile (or load numba's cache) first, so that the clock holds training only
    ppo.train(ppo.PPOSettings(**dict(settings, steps=1)), "quadrotor", eval_every=1, eval_episodes=1)
    trained = ppo.train(ppo.PPOSettings(**dict(settings, steps=steps)), "quadrotor", callbacks=Clock())
    learner = trained.trainer
    perturbed = tasks.summary(Q, evaluate_policy(task, learner.to_policy(), EVAL_EPISODES, EVAL_SEED, training(Q)))
    # PPO keeps no best policy: the final one is what the command writes
    return seed_record("ppo", seed, trained.stats["steps"], {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()}, clock, curve,
                       perturbed, trained.stats["train_s"], trained.stats.get("perturbations", {}))


def foundation_policy_reference(episodes=EVAL_EPISODES):
    """RLtools' pretrained foundation policy (GRU, 22 inputs: position, rotation matrix, linear
    and angular velocity, previous action) flying our hover task from the same starts."""
    _path()
    try:
        from foundation_policy import QuadrotorPolicy
    except ImportError as e:
        return {"available": False, "why": "foundation-policy is not installed (pip install foundation-policy): %s" % e}
    import numpy as np

    from microrl.tasks import quadrotor as Q
    from microrl_host.envs.quadrotor_render import rotation

    policy = QuadrotorPolicy()
    rows = []
    from microrl.rng import Rng

    rng = Rng(EVAL_SEED)
    from microrl.task import Env

    env = Env(Q, rng=rng, evaluation=True)
    t0 = time.perf_counter()
    for _ in range(episodes):
        env.reset()
        policy.reset()
        previous = np.zeros(4)
        total = 0.0
        done = truncated = False
        while not (done or truncated):
            s = np.array(env.s)
            obs = np.concatenate([s[0:3], rotation(s).reshape(-1), s[7:10], s[10:13], previous])
            action = np.clip(policy.evaluate_step(obs.reshape(1, -1))[0], -1.0, 1.0)
            _, r, done, truncated = env.step([float(a) for a in action])
            previous = action
            total += r
        s = env.s
        rows.append((total, 1.0 if (not done) and Q.success(env.P, s) else 0.0, float(np.linalg.norm(list(s)[0:3])), env.t))
    rows = np.array(rows)
    return {
        "available": True,
        "episodes": episodes,
        "success_rate": float(rows[:, 1].mean()),
        "position_error_m": float(np.median(rows[:, 2])),
        "crash_rate": float((rows[:, 3] < Q.EPISODE_STEPS).mean()),
        "seconds": time.perf_counter() - t0,
    }


# ------------------------------------------------------------------ L2F's own trainer


def run_trainer(binary, seed, prefix):
    """Run a peer's trainer (binary SEED, one thread) in a new scratch folder: (folder, the
    finished process, its wall time)."""
    import tempfile

    folder = tempfile.mkdtemp(prefix=prefix)
    env = dict(os.environ, **ONE_THREAD)
    t0 = time.perf_counter()
    proc = subprocess.run([binary, str(seed)], capture_output=True, text=True, env=env, cwd=folder)
    return folder, proc, time.perf_counter() - t0


def l2f_train(binary, seed):
    """Run L2F's trainer (binary SEED) in a scratch folder: its training time as it prints it,
    the wall time, and its final actor's layers [(weights out x in, biases)], or why not."""
    import re

    folder, proc, wall = run_trainer(binary, seed, "l2f-")
    took = re.search(r"Training took: ([0-9.eE+-]+)s", proc.stdout)
    saved = re.search(r'Saving checkpoint at: "?([^"\n]+\.h)"?', proc.stdout)
    record = {"seed": seed, "wall_s": wall, "train_s": float(took.group(1)) if took else None, "returncode": proc.returncode}
    if proc.returncode != 0 or not took:
        record["why"] = "the trainer failed (%d): %s" % (proc.returncode, (proc.stderr or proc.stdout)[-500:])
        return record, None
    if not saved:
        record["why"] = "the trainer saved no actor (its main must save the final actor as code; see the docstring)"
        return record, None
    return record, read_l2f_actor(os.path.join(folder, saved.group(1)))


def read_l2f_actor(path):
    """The dense layers of an actor RLtools' save_code wrote: [(weights (out, in) float32,
    biases (out,))], in order (each parameters' bytes are little-endian float32, row-major)."""
    import re

    import numpy as np

    text = open(path).read()
    blobs = [np.frombuffer(bytes(int(v) for v in m.group(1).split(",") if v.strip()), dtype="<f4")
             for m in re.finditer(r"memory\[\] = \{([0-9,\s]*)\}", text)]
    shapes = [(int(a), int(b)) for a, b in re.findall(r"matrix::Specification<float, unsigned long, (\d+), (\d+),", text)]
    layers = []
    for i in range(0, len(blobs), 2):
        w = blobs[i].reshape(shapes[i])
        b = blobs[i + 1].reshape(-1)
        layers.append((w, b))
    return layers


def fly_adapted(act, inputs, history, hold=1, perturbations=None, episodes=EVAL_EPISODES):
    """A foreign actor flying our task from microrl eval's starts (seed EVAL_SEED), through an
    adapter: act(x) -> 4 commands, x = inputs(obs, past) from our observation and its own
    action history past (history commands, most recent first, started at the rotor speeds as
    L2F starts it); each command held for hold of our 10 ms steps (an actor trained at 50 Hz:
    2)."""
    import numpy as np

    from microrl.rng import Rng
    from microrl.task import Env
    from microrl.tasks import quadrotor as Q
    from microrl_host import tasks

    env = Env(Q, rng=Rng(EVAL_SEED), evaluation=True, perturbations=perturbations)
    rows = []
    for _ in range(episodes):
        obs = env.reset()
        past = np.tile(np.array(obs[18:22], np.float32), history)
        total = 0.0
        done = truncated = False
        while not (done or truncated):
            action = np.clip(act(inputs(np.array(obs, np.float32), past)), -1.0, 1.0)
            if history:
                past = np.concatenate([action, past[:-Q.ACT_DIM]])
            for _ in range(hold):
                obs, r, done, truncated = env.step([float(a) for a in action])
                total += r
                if done or truncated:
                    break
        rows.append((total, 1.0 if (not done) and Q.success(env.P, env.s) else 0.0, Q.final_error(env.P, env.s), env.t))
    return tasks.summary(Q, np.array(rows))


def l2f_fly(layers, perturbations=None, episodes=EVAL_EPISODES):
    """L2F's actor (tanh layers) on our task: our observation's first 18 values (position,
    rotation matrix, velocities) and its 32-step action history, oldest first."""
    import numpy as np

    def act(x):
        for w, b in layers:
            x = np.tanh(w @ x + b)
        return x

    history = (layers[0][0].shape[1] - 18) // 4
    # L2F's history is oldest first; fly_adapted keeps it most recent first
    inputs = lambda obs, past: np.concatenate([obs[0:18], past.reshape(history, 4)[::-1].reshape(-1)])
    return fly_adapted(act, inputs, history, 1, perturbations, episodes)


def l2f_seed(binary, seed):
    """One seed of L2F's trainer, its final actor flown nominal and perturbed."""
    _path()
    from microrl.perturb import training
    from microrl.tasks import quadrotor as Q

    record, layers = l2f_train(binary, seed)
    if layers is not None:
        if layers[0][0].shape[1] < 18 or layers[-1][0].shape[0] != Q.ACT_DIM:
            record["why"] = "its actor takes %d inputs and gives %d outputs; the adapter needs 18 + its history and 4" % (layers[0][0].shape[1], layers[-1][0].shape[0])
        else:
            nominal = l2f_fly(layers)
            perturbed = l2f_fly(layers, training(Q))
            record.update(success_rate=nominal["success_rate"], position_error_m=nominal["position_error_m"], crash_rate=nominal["crash_rate"],
                          success_rate_perturbed=perturbed["success_rate"], position_error_m_perturbed=perturbed["position_error_m"])
    return record


# ------------------------------------------------------------------ RLtools' zoo L2F SAC trainer


def zoo_train(binary, seed):
    """Run RLtools' zoo L2F SAC trainer (binary SEED, built by RLtools' README Quick Start) in a
    scratch folder: its wall time, its own timer ("Time: X s"), its last evaluation on its own
    task, and its final actor (the checkpoint.tar of its last step), or why not."""
    import glob
    import re

    folder, proc, wall = run_trainer(binary, seed, "rltools-zoo-")
    took = re.search(r"Time: ([0-9.eE+-]+)s", proc.stdout)
    own = re.findall(r"Step: (\d+)/(\d+) Mean return: ([-0-9.eE+]+) Mean episode length: ([0-9.eE+-]+)", proc.stdout)
    record = {"seed": seed, "wall_s": wall, "train_s": float(took.group(1)) if took else None, "returncode": proc.returncode}
    if own:
        step, limit, ret, length = own[-1]
        # its own evaluation (100 episodes of its task, up to 500 steps at 50 Hz), the last one it prints
        record["own_last_evaluation"] = {"step": int(step), "of": int(limit), "mean_return": float(ret), "mean_episode_length": float(length)}
    if proc.returncode != 0:
        record["why"] = "the trainer failed (%d): %s" % (proc.returncode, (proc.stderr or proc.stdout)[-500:])
        return record, None
    tars = sorted(glob.glob(os.path.join(folder, "experiments", "*", "*", "*", "*", "steps", "*", "checkpoint.tar")))
    if not tars:
        record["why"] = "the trainer wrote no checkpoint.tar under experiments/"
        return record, None
    record["checkpoint_step"] = int(os.path.basename(os.path.dirname(tars[-1])))
    actor = read_zoo_actor(tars[-1])
    record["observation"] = actor["observation"]
    record["example_max_error"] = actor["example_max_error"]
    return record, actor


def read_zoo_actor(path):
    """The actor of an RLtools checkpoint.tar (its persist/tar backend: a folder per tensor with
    a text meta, dims and dtype, and raw little-endian data): {"layers": [(weights (out, in),
    biases, activation)], "observation": what its meta says the inputs are, "example_max_error":
    our forward against the example input/output the checkpoint carries}."""
    import tarfile

    import numpy as np

    with tarfile.open(path) as tar:
        files = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}

    def meta(name):
        return dict(line.split(": ", 1) for line in files[name + "/meta"].decode().splitlines() if ": " in line)

    def tensor(name):
        m = meta(name)
        assert m["dtype"] == "float32", m
        return np.frombuffer(files[name + "/data"], dtype="<f4").reshape([int(m["dim_%d" % i]) for i in range(int(m["num_dims"]))])

    mlp = "actor/layers/0"
    assert meta(mlp)["type"] == "mlp" and meta("actor/layers/1")["type"] == "sample_and_squash", (meta(mlp), meta("actor/layers/1"))
    hidden = int(meta(mlp)["num_layers"]) - 2
    names = ["input_layer"] + ["hidden_layers/%d" % i for i in range(hidden)] + ["output_layer"]
    layers = [(tensor("%s/%s/weights/parameters" % (mlp, n)), tensor("%s/%s/biases/parameters" % (mlp, n)), meta("%s/%s" % (mlp, n))["activation_function"])
              for n in names]
    actor = {"layers": layers, "observation": json.loads(files["actor/meta"].decode().split("meta: ", 1)[1].splitlines()[0])["environment"]["observation"]}
    x = tensor("example/input").reshape(-1, layers[0][0].shape[1])
    y = tensor("example/output").reshape(len(x), -1)
    actor["example_max_error"] = float(np.abs(np.array([zoo_act(layers, row) for row in x]) - y).max())
    return actor


def zoo_act(layers, x):
    """The deterministic action of a zoo SAC actor: its MLP (FAST_TANH: RLtools' rational tanh),
    then sample_and_squash's evaluation mode, tanh of the mean (the first half of the outputs)."""
    import numpy as np

    for w, b, activation in layers:
        x = w @ x + b
        if activation == "FAST_TANH":
            x = np.clip(x, -3.0, 3.0)
            x = x * (27.0 + x * x) / (27.0 + 9.0 * x * x)
        elif activation == "TANH":
            x = np.tanh(x)
        else:
            assert activation == "IDENTITY", activation
    return np.tanh(x[: len(x) // 2])


# the zoo's observation (src/rl/zoo/l2f/environment_tiny.h), in its order
ZOO_OBSERVATION = "TrajectoryTrackingLookahead(1, 1).OrientationRotationMatrix.LinearVelocity.AngularVelocity.ActionHistory(2)"
ZOO_HOLD = 2  # it trains at 50 Hz (SIMULATION_FREQUENCY 50): each command held for two of our 10 ms steps


def zoo_fly(actor, perturbations=None, episodes=EVAL_EPISODES):
    """The zoo's actor on our hover task: its 29 inputs from ours: the error to the trajectory
    point (position, velocity; our target is a point at rest, so both are our position and
    velocity), the rotation matrix, velocity, angular velocity, and its last 2 commands (most
    recent first), at its 50 Hz."""
    import numpy as np

    return fly_adapted(lambda x: zoo_act(actor["layers"], x), zoo_inputs, 2, ZOO_HOLD, perturbations, episodes)


def zoo_inputs(obs, past):
    """The zoo actor's 29 inputs from our observation obs and its last 2 commands past (most
    recent first)."""
    import numpy as np

    return np.concatenate([obs[0:3], obs[12:15], obs[3:12], obs[12:18], past])


def zoo_seed(binary, seed):
    """One seed of the zoo's trainer, its final actor flown on our task nominal and perturbed."""
    _path()
    from microrl.perturb import training
    from microrl.tasks import quadrotor as Q

    record, actor = zoo_train(binary, seed)
    if actor is not None:
        if actor["observation"] != ZOO_OBSERVATION or actor["layers"][0][0].shape[1] != 29:
            record["why"] = "its actor observes %s (%d inputs); the adapter knows %s (29)" % (actor["observation"], actor["layers"][0][0].shape[1], ZOO_OBSERVATION)
        else:
            nominal = zoo_fly(actor)
            perturbed = zoo_fly(actor, training(Q))
            record.update(success_rate=nominal["success_rate"], position_error_m=nominal["position_error_m"], crash_rate=nominal["crash_rate"],
                          success_rate_perturbed=perturbed["success_rate"], position_error_m_perturbed=perturbed["position_error_m"],
                          crash_rate_perturbed=perturbed["crash_rate"])
    return record


# ------------------------------------------------------------------ driver


def _child(args):
    env = dict(os.environ, **ONE_THREAD)
    cmd = [sys.executable, os.path.abspath(__file__)] + args
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)  # stderr: passed through (progress, errors)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (its error above)" % " ".join(cmd))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5, help="seeds of ours (default 5)")
    ap.add_argument("--first-seed", type=int, default=0, help="seeds FIRST_SEED .. FIRST_SEED+SEEDS-1 (default 0): two runs on two cores can split them")
    ap.add_argument("--algo", default=None, choices=("td3", "sac", "ppo"), help="ppo (the default: `microrl train quadrotor`'s, the task's ALGO, with its "
                    "TRAINING_PPO settings), td3 or sac")
    ap.add_argument("--eval-every", type=int, default=EVAL_EVERY_PPO, help="PPO: steps between evaluations, outside the clock (default %d); "
                    "the first 90%% is timed at the first evaluation that reaches it" % EVAL_EVERY_PPO)
    ap.add_argument("--steps", type=int, default=None, help="training budget per seed (default microrl train quadrotor's: 500,000 for TD3/SAC, "
                    "its TRAINING_PPO steps for PPO)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting beside the task's own (repeatable): TD3/SAC's, e.g. --set model_horizon=100 --set model_start=400000; "
                    "PPO's over its TRAINING_PPO, e.g. --set rollout_steps=64 --set threads=2 --set hidden=[32,32]")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=2, metavar=("ALGO", "SEED"), help=argparse.SUPPRESS)
    ap.add_argument("--foundation", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--l2f", metavar="SEED", help=argparse.SUPPRESS)
    ap.add_argument("--zoo", metavar="SEED", help=argparse.SUPPRESS)
    a = ap.parse_args()
    _path()
    from microrl.tasks import quadrotor as Q

    a.algo = a.algo or Q.ALGO
    if a.eval_every < 1:
        print("--eval-every %d: give a positive number of steps" % a.eval_every, file=sys.stderr)
        return 2

    ppo = a.algo == "ppo" or (a.one and a.one[0] == "ppo")
    steps = a.steps or (Q.TRAINING_PPO if ppo else Q.TRAINING)["steps"]
    settings = {}
    for item in a.set:
        name, _, value = item.partition("=")
        try:
            settings[name.strip()] = json.loads(value)
        except ValueError:
            if not ppo:
                print("--set %s: give NAME=VALUE with a number as the value" % item, file=sys.stderr)
                return 2
            settings[name.strip()] = value.strip()  # a word: PPO's activation
    if settings and ppo:
        try:
            ppo_settings(0, settings)
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
    if a.one:
        r = run_seed_ppo(int(a.one[1]), steps, settings, a.eval_every) if a.one[0] == "ppo" else run_seed(a.one[0], int(a.one[1]), steps, settings)
        print("  seed %d: final %.0f%% nominal, %.0f%% perturbed, %.3f / %.3f m; 90%% after %s steps, %s s; %.1f s of training"
              % (r["seed"], 100 * r["final_success_rate"], 100 * r["final_success_rate_perturbed"], r["final_position_error_m"], r["final_position_error_m_perturbed"],
                 r["steps_to_90"], r["seconds_to_90"], r["train_s"]), file=sys.stderr, flush=True)
        print(json.dumps(r))
        return 0
    if a.foundation:
        print(json.dumps(foundation_policy_reference()))
        return 0
    l2f_binary = os.environ.get(L2F_TRAINER_ENV)
    if a.l2f is not None:
        print(json.dumps(l2f_seed(l2f_binary, int(a.l2f))))
        return 0
    zoo_binary = os.environ.get(ZOO_ENV)
    if a.zoo is not None:
        print(json.dumps(zoo_seed(zoo_binary, int(a.zoo))))
        return 0
    for name, binary in ((L2F_TRAINER_ENV, l2f_binary), (ZOO_ENV, zoo_binary)):
        if binary and not os.access(binary, os.X_OK):
            print("%s=%s: no executable there" % (name, binary), file=sys.stderr)
            return 2
    load = os.getloadavg()
    runs = []
    l2f_runs = []
    zoo_runs = []
    for seed in range(a.first_seed, a.first_seed + a.seeds):
        r = _child(["--one", a.algo, str(seed), "--steps", str(steps), "--eval-every", str(a.eval_every)] + ["--set=%s" % item for item in a.set])
        runs.append(r)
        if l2f_binary:  # interleaved with ours, seed by seed: the same machine, the same load
            l2f_runs.append(_child(["--l2f", str(seed)]))
            if not a.json:
                l = l2f_runs[-1]
                print("L2F seed %d: %s" % (seed, l["why"] if "why" in l else "trained in %.1f s (%.1f s wall); its final actor on our task flies %.0f%% nominal, %.0f%% perturbed, final distance %.3f m"
                                             % (l["train_s"], l["wall_s"], 100 * l["success_rate"], 100 * l["success_rate_perturbed"], l["position_error_m"])), flush=True)
        if zoo_binary:  # the same: seed by seed, beside ours
            zoo_runs.append(_child(["--zoo", str(seed)]))
            if not a.json:
                z = zoo_runs[-1]
                print("RLtools zoo L2F SAC seed %d: %s" % (seed, z["why"] if "why" in z else
                      "%.1f s wall (its timer %.1f s); its last evaluation on its own task: mean episode length %.0f of 500; its final actor on our task flies %.0f%% nominal "
                      "(crashes %.0f%%, final distance %.3f m), %.0f%% perturbed"
                      % (z["wall_s"], z["train_s"], z["own_last_evaluation"]["mean_episode_length"], 100 * z["success_rate"], 100 * z["crash_rate"],
                         z["position_error_m"], 100 * z["success_rate_perturbed"])), flush=True)
        if not a.json:
            spread = r["final_distance_p10_p90_m"]
            print("seed %d: %s; after %d steps (%.1f s of training) flies %.0f%% (perturbed %.0f%%), crashes %.0f%%, final distance %.3f m (10-90%%: %s); "
                  "best evaluation %.0f%% at step %d"
                  % (seed, "90%% after %d steps, %.1f s" % (r["steps_to_90"], r["seconds_to_90"]) if r["seconds_to_90"] is not None else "never 90%",
                     r["steps"], r["train_s"], 100 * r["final_success_rate"], 100 * r["final_success_rate_perturbed"], 100 * r["final_crash_rate"],
                     r["final_position_error_m"], "%.3f-%.3f m" % tuple(spread) if spread else "all crashed", 100 * r["best_success_rate"], r["best_step"]),
                  flush=True)
    reached = [r["seconds_to_90"] for r in runs if r["seconds_to_90"] is not None]
    # seeds that never reach 90% count as infinitely slow in the median
    times = sorted(reached) + [float("inf")] * (len(runs) - len(reached))
    median = statistics.median(times) if times else None
    foundation = _child(["--foundation"])
    result = {
        "algo": a.algo,
        "steps": steps,
        "settings": settings,
        "seeds": a.seeds,
        "seeds_reaching_90": len(reached),
        "median_seconds_to_90": median,
        "final_success_rates": [r["final_success_rate"] for r in runs],
        "median_final_success_rate": statistics.median(r["final_success_rate"] for r in runs),
        "best_success_rates": [r["best_success_rate"] for r in runs],
        "load_before": load,
        "load_after": os.getloadavg(),
        "runs": runs,
        "final_success_rates_perturbed": [r["final_success_rate_perturbed"] for r in runs],
        "l2f": L2F_PUBLISHED,
        "l2f_trainer": {"binary": l2f_binary, "runs": l2f_runs,
                        "median_train_s": statistics.median([l["train_s"] for l in l2f_runs if l.get("train_s") is not None]) if any(l.get("train_s") for l in l2f_runs) else None}
        if l2f_binary else {"why": "%s not set: L2F's trainer not run" % L2F_TRAINER_ENV},
        "rltools_zoo_l2f_sac": {"binary": zoo_binary, "runs": zoo_runs, "median_wall_s": statistics.median([z["wall_s"] for z in zoo_runs]) if zoo_runs else None}
        if zoo_binary else {"why": "%s not set: RLtools' zoo trainer not run" % ZOO_ENV},
        # ours to 90% over the zoo's whole run, medians of the same run (below 1: ours sooner)
        "ratio_to_zoo": median / statistics.median([z["wall_s"] for z in zoo_runs]) if zoo_runs and median is not None else None,
        "foundation_policy": foundation,
    }
    if a.json:
        print(json.dumps(result))
    else:
        print("microrl %s: %d of %d seeds reach 90%% success; median time to 90%%: %s; median success after %d steps: %.0f%% (load %.1f -> %.1f)"
              % (a.algo, len(reached), a.seeds, "%.1f s" % median if median is not None and median != float("inf") else "not reached by half the seeds",
                 steps, 100 * result["median_final_success_rate"], load[0], result["load_after"][0]))
        if a.algo == "ppo":
            print("the policy `microrl train quadrotor --algo ppo` writes is the final one: it flies %s of the evaluation flights, per seed (perturbed: %s)"
                  % (", ".join("%.0f%%" % (100 * r["final_success_rate"]) for r in runs), ", ".join("%.0f%%" % (100 * r["final_success_rate_perturbed"]) for r in runs)))
        else:
            print("the policy `microrl train quadrotor` writes (its best evaluation) flies %s of the evaluation flights, per seed"
                  % ", ".join("%.0f%%" % (100 * b) for b in result["best_success_rates"]))
        if l2f_binary and result["l2f_trainer"]["median_train_s"] is not None:
            print("L2F's trainer, same machine and run: median %.1f s to its final actor (%d seeds)" % (result["l2f_trainer"]["median_train_s"], len(l2f_runs)))
        if zoo_runs:
            print("RLtools' zoo L2F SAC trainer, same machine and run: median %.1f s wall (%d seeds); ours to 90%% over it: %.2f"
                  % (result["rltools_zoo_l2f_sac"]["median_wall_s"], len(zoo_runs), result["ratio_to_zoo"]))
        print("L2F, published: %.0f s on %s" % (L2F_PUBLISHED["seconds"], L2F_PUBLISHED["hardware"]))
        if foundation.get("available"):
            print("foundation-policy on our hover task: flies %.0f%% of %d episodes, final distance %.3f m (median), crashes %.0f%%"
                  % (100 * foundation["success_rate"], foundation["episodes"], foundation["position_error_m"], 100 * foundation["crash_rate"]))
        else:
            print("foundation-policy: %s" % foundation["why"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
