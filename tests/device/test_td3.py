# TD3 mechanics on a tiny configuration (the learning check is a slow host test).
from microrl.evaluate import evaluate
from microrl.task import Env
from microrl.tasks import pendulum
from microrl.td3 import TD3, TD3Config
from tiny import raises


def _small(seed=0, **kw):
    cfg = TD3Config(hidden=(8,), batch=8, warmup=16, replay_capacity=64, **kw)
    return TD3(Env(pendulum), cfg, seed)


def test_same_seed_same_training():
    a = _small(3)
    b = _small(3)
    for _ in range(40):
        a.step()
        b.step()
    assert list(a.actor.params) == list(b.actor.params)
    assert list(a.critics[1].params) == list(b.critics[1].params)


def test_updates_targets_and_delay():
    agent = _small(1, policy_delay=2)
    for _ in range(15):
        agent.step()
    assert agent.updates == 0  # warm-up: random actions, no training
    actor_before = list(agent.actor.params)
    target_before = list(agent.actor_target.params)
    critic_before = list(agent.critics[0].params)
    agent.step()  # update 1: critics only
    assert agent.updates == 1
    assert list(agent.critics[0].params) != critic_before
    assert list(agent.actor.params) == actor_before
    assert list(agent.actor_target.params) == target_before
    agent.step()  # update 2: actor and the targets move too
    assert list(agent.actor.params) != actor_before
    tau = agent.config.tau
    for k in range(len(target_before)):
        expected = (1 - tau) * target_before[k] + tau * agent.actor.params[k]
        assert abs(agent.actor_target.params[k] - expected) < 1e-6


def test_episode_returns_reported():
    agent = _small(2)
    returns = []
    for _ in range(400):
        r = agent.step()
        if r is not None:
            returns.append(r)
    assert len(returns) == 2 and agent.episodes == 2
    assert all(r < 0 for r in returns)


def test_evaluate_is_deterministic():
    agent = _small(4)
    env = Env(pendulum)
    m1, s1, r1 = evaluate(agent.policy(), env, episodes=2, seed=5)
    m2, s2, r2 = evaluate(agent.policy(), env, episodes=2, seed=5)
    assert r1 == r2 and len(r1) == 2 and s1 >= 0


def test_unknown_setting_is_refused():
    e = raises(ValueError, TD3Config, batchsize=10)
    assert "batchsize" in str(e)


def test_memory_estimate_matches_allocation():
    import gc

    from microrl.memory import estimate_bytes

    if not hasattr(gc, "mem_alloc"):  # CPython: sizes only, the figure is checked under micropython
        assert estimate_bytes(3, 1, TD3Config(hidden=(8,), batch=8, replay_capacity=64)) > 64 * 11
        return
    for cfg in (TD3Config(hidden=(16, 16), batch=16, replay_capacity=500), TD3Config(hidden=(24,), batch=8, replay_capacity=200, activation="gelu")):
        gc.collect()
        before = gc.mem_alloc()
        agent = TD3(Env(pendulum), cfg, 0)
        gc.collect()
        used = gc.mem_alloc() - before
        est = estimate_bytes(3, 1, cfg, task=pendulum)
        assert 0 <= est - used < 1024, (used, est)  # never under, within 1 KB
        del agent


def test_learning_rate_falls_linearly_to_lr_end():
    agent = TD3(Env(pendulum), TD3Config(hidden=(8,), batch=8, warmup=16, replay_capacity=64, steps=100, lr_end=0.1), 0)
    assert agent.lr_scale() == 1.0
    for _ in range(50):
        agent.step()
    assert abs(agent.lr_scale() - 0.55) < 1e-9
    agent.steps = 150
    assert agent.lr_scale() == 0.1


def test_random_overwrite_and_float_rows_train():
    # the on-board settings (a full replay overwritten from random rows) and float32 rows
    for kw in ({"replay_overwrite": "random"}, {"replay_fixed_point": False}):
        agent = _small(5, **kw)
        for _ in range(120):  # the 64-row buffer fills and wraps
            agent.step()
        assert agent.updates > 0 and agent.replay.size == 64
        assert agent.replay.fixed == ("replay_fixed_point" not in kw)



def test_reward_scale_scales_the_rewards_in_the_critics_targets():
    # the same run with rewards scaled by 0.25: the first update's targets differ by exactly the
    # rewards' share (same networks, same batch: the bootstrapped part is the same)
    plain, scaled = _small(4), _small(4, reward_scale=0.25)
    while plain.updates == 0:
        plain.step()
        scaled.step()
    for s in range(8):
        r = plain.reward[s]
        assert r == scaled.reward[s] and r < -0.1
        assert abs((scaled.q_target[s] - 0.25 * r) - (plain.q_target[s] - r)) < 1e-4 * abs(r), (s, r)
