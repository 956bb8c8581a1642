"""Experiment script of issue 33 (q-structure), kept in this commit only (reverted after it).
One quadrotor TD3 seed with overrides (q-structure). Evaluates every 20k (100 flights, nominal),
final actor nominal and perturbed (bench's evaluation). usage: run.py NAME SEED [key=value ...]
keys: TD3 config (lr_end, exploration_noise, ...), training (train_every, curriculum_steps, steps),
params p.NAME=value (the nominal task: training and evaluation)"""
import json, sys, time, os
import numpy as np
WT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [WT + "/host", WT + "/device"]
from microrl.tasks import quadrotor as Q
name, seed = sys.argv[1], int(sys.argv[2])
noise_end = None; cfg = {}; training = {}; params = list(Q.CRAZYFLIE)
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    v = eval(v)
    if k.startswith("p."):
        params[Q.PARAM_NAMES.index(k[2:])] = float(v)
    elif k == "noise_end":
        noise_end = v
    elif k in ("train_every", "curriculum_steps", "steps"):
        training[k] = v
    else:
        cfg[k] = v
Q.PARAMETERS = Q.CRAZYFLIE = tuple(params)
Q.TRAINING = dict(Q.TRAINING, **training)
from microrl_host.algos import td3, offpolicy
if noise_end is not None:  # exploration noise falling linearly to noise_end x at the last step (scratch hack)
    _share, _scaled, _at = offpolicy.learning_rate_share, offpolicy.scaled_learning_rates, {"f": 1.0}
    def share(config, step, steps):
        _at["f"] = noise_end + (1.0 - noise_end) * max(0.0, 1.0 - step / float(steps))
        return _share(config, step, steps) * (1.0 - 1e-15)
    def scaled(config, s):
        c = _scaled(config, s); c.exploration_noise = config.exploration_noise * _at["f"]; return c
    offpolicy.learning_rate_share, offpolicy.scaled_learning_rates = share, scaled
from microrl_host.algos.callbacks import EachChunk
from microrl_host import tasks
from microrl_host.envs.task import CompiledTask
from microrl.perturb import training as perturbed_training
nominal = np.array(params, np.float64)
task = CompiledTask(Q)
steps = Q.TRAINING["steps"]
rows = []; actors = {}
clock = {"t": 0.0, "last": None}
def progress(step, state):
    now = time.perf_counter(); clock["t"] += now - clock["last"]
    if step % 20000 == 0 or step == steps:
        r = task.evaluate(state.actor, False, 100, 4242, nominal)
        s = tasks.summary(Q, r)
        s.update(step=step, t=round(clock["t"], 2))
        rows.append(s); actors[str(step)] = td3.actor_export(state)[2].copy()
        print(json.dumps(s), flush=True)
    clock["last"] = time.perf_counter()
td3.ALGO.run("quadrotor", steps=1, seed=seed, eval_episodes=0, **cfg)
clock["last"] = time.perf_counter()
run = td3.ALGO.run("quadrotor", steps=steps, seed=seed, eval_every=0, eval_episodes=0, callbacks=EachChunk(progress), threads=1, **cfg)
r = task.evaluate(run.state.actor, False, 100, 4242, nominal, perturbations=perturbed_training(Q))
pert = tasks.summary(Q, r)
final = dict(name=name, seed=seed, args=sys.argv[3:], success=rows[-1]["success_rate"], distance=rows[-1]["position_error_m"],
             crash=rows[-1]["crash_rate"], success_perturbed=pert["success_rate"], distance_perturbed=pert["position_error_m"],
             first90=next((x["step"] for x in rows if x["success_rate"] >= 0.9), None), perturbations=run.stats.get("perturbations"))
print("FINAL", json.dumps(final), flush=True)
out = "%s_s%d" % (name, seed)  # in the current folder
json.dump({"args": sys.argv[3:], "rows": rows, "final": final}, open(out + ".json", "w"))
np.savez(out + "_actors.npz", **actors)
