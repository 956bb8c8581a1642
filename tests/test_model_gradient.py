"""TD3's model-gradient actor (model_horizon, algos/model_gradient.py): the gradient it follows is
the gradient of the H-step return it computes (held to central differences of that return in the
actor's parameters), the quadrotor's state_from_observation inverts its observe, and the option
refuses what it cannot roll in one line (docs/quadrotor.md, "A model-gradient actor")."""
import numpy as np
import pytest

from microrl.layout import actor_critic_sizes
from microrl.tasks import quadrotor as Q
from microrl_host.algos import td3
from microrl_host.algos.model_gradient import ModelActor
from microrl_host.envs.task import CompiledTask
from microrl_host.nn import mlp


def _starts(n, seed):
    """Observations of the quadrotor's training start states."""
    P = Q.new_parameters()
    rng = np.random.default_rng(seed)
    s = np.zeros(Q.STATE_DIM)
    obs = np.zeros((n, Q.OBS_DIM), np.float32)
    o = np.zeros(Q.OBS_DIM)
    for b in range(n):
        Q.initial_state(P, s, rng.random(Q.RESET_DRAWS), 0.3, 1.0, 0.5, 0.5, 0.0, 0.0, 0.0)
        Q.observe(P, s, o)
        obs[b] = o
    return obs


def test_state_from_observation_inverts_observe():
    P = Q.new_parameters()
    rng = np.random.default_rng(0)
    s, back, o = np.zeros(Q.STATE_DIM), np.zeros(Q.STATE_DIM), np.zeros(Q.OBS_DIM)
    for _ in range(200):  # tilts up to 180 degrees: every branch of the quaternion's recovery
        Q.initial_state(P, s, rng.random(Q.RESET_DRAWS), 0.5, np.pi, 1.0, 1.0, 0.0, -0.3, 0.15)  # rotors within their range
        Q.observe(P, s, o)
        Q.state_from_observation(P, o, back)
        sign = 1.0 if s[3] >= 0 else -1.0  # q and -q are one rotation
        s[3:7] *= sign
        assert np.allclose(back[: Q.MODEL_DIM], s[: Q.MODEL_DIM], atol=1e-9)


@pytest.mark.parametrize("value_weight", [0.0, 1.0])
def test_the_gradient_is_the_returns_gradient(value_weight):
    task = CompiledTask(Q)
    config = td3.ALGO.config(model_horizon=12, model_batch=8, model_value=value_weight)
    model = ModelActor(task, config, seed=0)
    sizes_a, sizes_c = actor_critic_sizes(Q.OBS_DIM, Q.ACT_DIM, (64, 64))
    actor = mlp.new_net(sizes_a, ("relu", "tanh"), 256, seed=1)
    critic = mlp.new_net(sizes_c, ("relu", "identity"), 256, seed=2)
    starts = _starts(8, 1)
    P = model.params
    grad = np.zeros(mlp.view(actor).params.shape[0], np.float32)

    def ret():  # J / B, lr 0: no step taken
        return model.gradient(P, actor, critic, starts, 12, 0.99, value_weight, 0.0, 1, 8, grad)

    ret()
    g = -grad.astype(np.float64)  # grad holds d(-J/B)
    params = mlp.view(actor).params
    p0 = params.copy()
    rng = np.random.default_rng(2)
    for direction in [g / np.linalg.norm(g)] + [d / np.linalg.norm(d) for d in rng.normal(size=(2, g.size))]:
        e = 3e-3
        params[:] = p0 + e * direction
        mlp.refresh_transposed(actor)
        up = ret()
        params[:] = p0 - e * direction
        mlp.refresh_transposed(actor)
        down = ret()
        params[:] = p0
        mlp.refresh_transposed(actor)
        assert (up - down) / (2 * e) == pytest.approx(g @ direction, rel=0.05, abs=1e-3 * np.linalg.norm(g))


def test_a_step_climbs_the_return():
    task = CompiledTask(Q)
    model = ModelActor(task, td3.ALGO.config(model_horizon=20, model_batch=16), seed=0)
    sizes_a, sizes_c = actor_critic_sizes(Q.OBS_DIM, Q.ACT_DIM, (64, 64))
    actor = mlp.new_net(sizes_a, ("relu", "tanh"), 256, seed=3)
    critic = mlp.new_net(sizes_c, ("relu", "identity"), 256, seed=4)
    starts = _starts(16, 5)
    grad = np.zeros(mlp.view(actor).params.shape[0], np.float32)
    before = model.gradient(model.params, actor, critic, starts, 20, 0.99, 0.0, 1e-3, 1, 16, grad)
    after = model.gradient(model.params, actor, critic, starts, 20, 0.99, 0.0, 0.0, 1, 16, grad)
    assert after > before


@pytest.mark.parametrize("task,settings,words", [
    ("pendulum", {}, "state_from_observation"),
    ("Pendulum-v1", {}, "task interface"),
    ("quadrotor", {"perturbations": {"action_delay": 2}}, "action delay"),
    ("quadrotor", {"model_batch": 300}, "model_batch"),
    ("quadrotor", {"model_every": 0}, "model_every"),
    ("quadrotor", {"model_value": -1.0}, "model_value"),
])
def test_what_it_cannot_roll_is_refused_in_one_line(task, settings, words):
    with pytest.raises(ValueError, match=words) as e:
        td3.ALGO.run(task, steps=10, seed=0, eval_episodes=0, threads=1, model_horizon=8, **settings)
    assert "\n" not in str(e.value)


def test_a_run_with_it_hands_the_actors_steps_to_the_model():
    """A short quadrotor run with model steps every 500 steps from step 2000: TD3 moves the actor
    before; from then on, the actor at each model step is exactly the previous model step's actor
    after one model step (TD3's own actor step is off in between)."""
    from microrl_host.algos.callbacks import Callbacks

    seen = {}

    class Watch(Callbacks):
        def on_progress(self, step, done, trainer, figures):
            v = mlp.view(trainer.actor)
            replay = trainer.replay
            seen[step] = (v.params.copy(), v.m.copy(), v.v.copy(), np.array(replay.obs[: int(replay.count[1])]))

    settings = dict(warmup=1000, batch=64, model_horizon=5, model_batch=8, model_every=500, model_start=2000)
    run = td3.ALGO.run("quadrotor", steps=3000, seed=0, eval_episodes=0, threads=1, callbacks=Watch(), **settings)
    assert sorted(seen)[-4:] == [1500, 2000, 2500, 3000]
    assert not np.array_equal(seen[1500][0], seen[2000][0])
    model = ModelActor(CompiledTask(Q, perturbations={}), td3.ALGO.config(**settings), seed=0)
    actor = mlp.new_net(*_actor_shape(), 256)
    grad = np.zeros(seen[2000][0].shape[0], np.float32)
    for step, k in ((2500, 2), (3000, 3)):
        params, m, v, _ = seen[step - 500]
        view = mlp.view(actor)
        view.params[:], view.m[:], view.v[:] = params, m, v
        mlp.refresh_transposed(actor)
        obs = seen[step][3]
        rows = np.random.default_rng((0, step)).integers(0, obs.shape[0], 8)
        model.gradient(model.params, actor, run.state.critic1, np.ascontiguousarray(obs[rows]), 5, 0.99, 0.0, model.lr, k, 8, grad)
        assert np.array_equal(mlp.view(actor).params, seen[step][0])


def _actor_shape():
    sizes_a, _ = actor_critic_sizes(Q.OBS_DIM, Q.ACT_DIM, (64, 64))
    return sizes_a, ("relu", "tanh")


def test_the_command_line_refuses_a_task_without_the_hook():
    from helpers import assert_refused, run_microrl

    assert_refused(run_microrl("train", "pendulum", "--set", "model_horizon=10", "--steps", "100"), "state_from_observation")
