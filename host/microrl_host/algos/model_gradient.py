"""A model-gradient actor for TD3 (the setting model_horizon): the actor follows the gradient of
the return it gets over a short horizon in the task's own simulator, rather than a critic's
one-step action gradient (SVG(H), Heess et al. 2015; SHAC, Xu et al. 2022). Why: on the
quadrotor the critics' dQ/da at the point where the actor comes to rest is noise several times
the true one, and the actor rests wherever that noise points (docs/quadrotor.md).

From B observations drawn from the replay buffer, each rebuilt into a state by the task's
state_from_observation() hook, the actor flies H steps of the task's step() with the nominal
parameters (no noise, disturbance or randomised airframe):

    J = sum_{t<H} gamma^t r_t + model_value * gamma^H Q1(o_H, pi(o_H))

(a step that terminates earns its reward, 0, and ends that rollout). dJ/dtheta is back-propagated
through time; the step's Jacobians (next state, reward and observation against the state's first
MODEL_DIM entries and the action) come from forward differences of the task's own step, so a task
needs no derivatives of its own. One Adam step of the actor on -J/B every model_every environment
steps from model_start on; TD3's own actor step is off from then (its critics and targets learn
as before). Compiled per task (a bound copy, as the loop and the evaluation are).
"""
import numpy as np

from microrl.perturb import ACTION_DELAY

from ..nn import mlp
from ..nn.jit import bound_copy, jit

EPS = 1e-6  # forward differences of the step, in the state's and the action's units

# the names a bound copy of model_return_gradient sees (CompiledTask.bindings, and these)
task_step = task_state_from_observation = None
OBS_DIM = ACT_DIM = MODEL_DIM = STATE_DIM = STEP_DRAWS = 0
ACTION_SCALE = ACTION_OFFSET = (0.0,)


def model_return_gradient(P, actor, critic, starts, horizon, gamma, value_weight, lr, adam_step, B, grad):
    """Roll the actor `horizon` steps from each of the observations `starts` (rows) through the
    task's step with parameters P, back-propagate J (module docstring) to the actor's parameters
    and, when lr > 0, take one Adam step on -J/B (adam_step counts from 1). The gradient of -J/B
    is left in grad (and in the actor's grads). Returns J / B."""
    H = horizon
    D = MODEL_DIM
    n_in = D + ACT_DIM
    n_out = D + 1 + OBS_DIM  # next state, reward, next observation
    f32 = np.float32
    S = np.zeros((H + 1, B, STATE_DIM))
    OBS = np.zeros((H + 1, B, OBS_DIM), f32)
    ACT = np.zeros((H + 1, B, ACT_DIM), f32)
    JAC = np.zeros((H, B, n_out, n_in))
    alive = np.zeros((H + 1, B))
    u = np.full(max(STEP_DRAWS, 1), 0.5)  # a stochastic step's draws held at their middle
    a = np.zeros(ACT_DIM)
    s = np.zeros(STATE_DIM)
    o = np.zeros(OBS_DIM)  # float64: forward differences of a float32 observation would be rounding
    base = np.zeros(n_out)
    total = 0.0
    for b in range(B):
        task_state_from_observation(P, starts[b], S[0, b])
        for i in range(OBS_DIM):
            OBS[0, b, i] = starts[b, i]
        alive[0, b] = 1.0
    for t in range(H + 1):
        A = mlp.forward(actor, OBS[t], B)
        for b in range(B):
            for i in range(ACT_DIM):
                ACT[t, b, i] = A[b, i]
        if t == H:
            break
        g = gamma**t
        for b in range(B):
            if alive[t, b] == 0.0:
                continue
            # the step, then each of its inputs moved by EPS
            for k in range(-1, n_in):
                for i in range(STATE_DIM):
                    s[i] = S[t, b, i]
                for i in range(ACT_DIM):
                    a[i] = ACTION_SCALE[i] * ACT[t, b, i] + ACTION_OFFSET[i]
                if 0 <= k < D:
                    s[k] += EPS
                elif k >= D:
                    a[k - D] += EPS
                r, done, truncated = task_step(P, s, a, u, o)
                if k < 0:
                    for i in range(STATE_DIM):
                        S[t + 1, b, i] = s[i]
                    for i in range(OBS_DIM):
                        OBS[t + 1, b, i] = o[i]
                    alive[t + 1, b] = 0.0 if done else 1.0
                    total += g * r
                    for i in range(D):
                        base[i] = s[i]
                    base[D] = r
                    for i in range(OBS_DIM):
                        base[D + 1 + i] = o[i]
                    if done:
                        break
                    continue
                for i in range(D):
                    JAC[t, b, i, k] = (s[i] - base[i]) / EPS
                JAC[t, b, D, k] = (r - base[D]) / EPS
                for i in range(OBS_DIM):
                    JAC[t, b, D + 1 + i, k] = (o[i] - base[D + 1 + i]) / EPS
    # backward through time; lam: dJ/ds_t (first D entries), gobs: dJ/do_t
    grads = mlp.grads(actor)
    for k in range(grads.shape[0]):
        grads[k] = 0.0
    tmp = np.zeros(grads.shape[0], f32)
    dy = np.zeros((B, ACT_DIM), f32)
    dobs = np.zeros((B, OBS_DIM), f32)
    lam = np.zeros((B, D))
    gobs = np.zeros((B, OBS_DIM))
    dnext = np.zeros(n_out)
    if value_weight != 0.0:
        X = np.zeros((B, OBS_DIM + ACT_DIM), f32)
        for b in range(B):
            for i in range(OBS_DIM):
                X[b, i] = OBS[H, b, i]
            for i in range(ACT_DIM):
                X[b, OBS_DIM + i] = ACT[H, b, i]
        q = mlp.forward(critic, X, B)
        dq = np.zeros((B, 1), f32)
        gH = value_weight * gamma**H
        for b in range(B):
            if alive[H, b] > 0.0:
                total += gH * q[b, 0]
                dq[b, 0] = -gH / B
        dx = np.zeros((B, OBS_DIM + ACT_DIM), f32)
        mlp.backward(critic, X, B, dq, tmp[:0], dx)
        for b in range(B):
            for i in range(ACT_DIM):
                dy[b, i] = dx[b, OBS_DIM + i]
        mlp.forward(actor, OBS[H], B)
        mlp.backward(actor, OBS[H], B, dy, tmp, dobs)
        for k in range(grads.shape[0]):
            grads[k] += tmp[k]
        for b in range(B):
            for i in range(OBS_DIM):
                gobs[b, i] = -B * (dx[b, i] + dobs[b, i])  # back from -J/B to J
    for t in range(H - 1, -1, -1):
        g = gamma**t
        for b in range(B):
            for i in range(ACT_DIM):
                dy[b, i] = 0.0
            if alive[t, b] == 0.0:
                for i in range(D):
                    lam[b, i] = 0.0
                continue
            # dJ/d(next state, reward, next observation) of step t
            for i in range(D):
                dnext[i] = lam[b, i] * alive[t + 1, b]
            dnext[D] = g
            for i in range(OBS_DIM):
                dnext[D + 1 + i] = gobs[b, i] * alive[t + 1, b]
            for k in range(n_in):
                v = 0.0
                for i in range(n_out):
                    v += JAC[t, b, i, k] * dnext[i]
                if k < D:
                    lam[b, k] = v
                else:
                    dy[b, k - D] = -ACTION_SCALE[k - D] * v / B
        mlp.forward(actor, OBS[t], B)
        mlp.backward(actor, OBS[t], B, dy, tmp, dobs)
        for k in range(grads.shape[0]):
            grads[k] += tmp[k]
        for b in range(B):
            for i in range(OBS_DIM):
                gobs[b, i] = -B * dobs[b, i]
    for k in range(grads.shape[0]):
        grad[k] = grads[k]
    if lr > 0.0:
        mlp.adam(actor, lr, adam_step)
    return total / B


def refusal(env, config):
    """Why a run cannot use model_horizon on env (one line), or None."""
    module = getattr(env, "module", None)
    if not getattr(env, "compiled", False) or module is None:
        return "model_horizon needs a task written against the task interface (docs/tasks.md), not a gymnasium environment: its step is what the actor's gradient rolls through"
    missing = [k for k in ("state_from_observation", "MODEL_DIM") if not hasattr(module, k)]
    if missing:
        return ("model_horizon needs the task's state_from_observation(P, obs, s) and MODEL_DIM (docs/tasks.md) to roll its step from replayed observations; %s has no %s"
                % (env.name, " or ".join(missing)))
    if config.model_batch > config.batch:
        return "model_batch (%d) must be at most batch (%d): the rollouts use the actor's batch buffers" % (config.model_batch, config.batch)
    if env.generic[ACTION_DELAY] != 0:
        return "model_horizon cannot be used with an action delay (the rollouts step the task without it); train without action_delay"
    return None


class ModelActor:
    """The actor's steps of a TD3 run with model_horizon > 0 (offpolicy.Algorithm.run calls
    before_chunk and after_chunk around each chunk of model_every steps at most)."""

    def __init__(self, env, config, seed):
        problem = refusal(env, config)
        if problem:
            raise ValueError(problem)
        m = env.module
        self.horizon = int(config.model_horizon)
        self.batch = int(config.model_batch)
        self.every = int(config.model_every)
        self.start = int(config.model_start)
        self.value_weight = float(config.model_value)
        self.gamma = float(config.gamma)
        self.lr = float(config.model_lr)
        self.seed = int(seed)
        self.params = np.array(env.params, np.float64)  # the nominal task (training's randomisation, noise and disturbances left out)
        b = env.bindings
        bindings = {"task_step": m.step, "task_state_from_observation": m.state_from_observation, "OBS_DIM": m.OBS_DIM, "ACT_DIM": m.ACT_DIM,
                    "MODEL_DIM": int(m.MODEL_DIM), "STATE_DIM": m.STATE_DIM, "STEP_DRAWS": m.STEP_DRAWS,
                    "ACTION_SCALE": b["ACTION_SCALE"], "ACTION_OFFSET": b["ACTION_OFFSET"]}
        self.gradient = bound_copy(model_return_gradient, "model_return_gradient_" + env.key, bindings, jit)
        self.grad = None

    def chunk(self, step):
        """Steps the next chunk may take at most: up to the next model step."""
        return self.every - step % self.every

    def before_chunk(self, hp, index, step):
        hp[index] = 1.0 if step >= self.start else 0.0  # TD3's own actor step off from model_start

    def after_chunk(self, state, step, warmup):
        """One model step when a chunk ends on one (step a multiple of model_every, from
        model_start, once training has begun)."""
        if step % self.every or step < self.start or step < warmup or state.replay.count[1] < 1:
            return None
        k = (step - self.start) // self.every + 1  # Adam's step count; the first clears TD3's moments
        if k == 1:
            mlp.view(state.actor).m[:] = 0.0
            mlp.view(state.actor).v[:] = 0.0
        rng = np.random.default_rng((self.seed, step))  # a resumed run draws what it would have
        rows = rng.integers(0, int(state.replay.count[1]), self.batch)
        starts = np.ascontiguousarray(state.replay.obs[rows], np.float32)
        if self.grad is None:
            self.grad = np.zeros(mlp.view(state.actor).params.shape[0], np.float32)
        return self.gradient(self.params, state.actor, state.critic1, starts, self.horizon, self.gamma, self.value_weight, self.lr, k, self.batch, self.grad)
