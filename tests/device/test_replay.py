from microrl.compat import zeros
from microrl.task import Env
from microrl.tasks import pendulum
from microrl.replay import ReplayBuffer, bounds, bytes_per_transition
from microrl.rng import Rng
from tiny import raises


def test_bytes_per_transition_documented():
    # Pendulum: obs 3 + action 1 + reward 1 values and one flag byte; the next obs is not stored
    assert bytes_per_transition(3, 1) == 11
    assert bytes_per_transition(3, 1, fixed=False) == 21
    assert ReplayBuffer(10, 3, 1, bounds(Env(pendulum))).nbytes() == 10 * 11
    assert ReplayBuffer(10, 3, 1).nbytes() == 10 * 21


def _sample(rb, n, od, ad, seed=0):
    oa = zeros(n * (od + ad))
    rew = zeros(n)
    nxt = zeros(n * od)
    done = zeros(n)
    rb.sample_into(Rng(seed), n, oa, od + ad, rew, nxt, done)
    return oa, rew, nxt, done


def test_ring_wraps_and_samples_whole_transitions():
    # float rows: exact values; the next obs comes from the following row, across the wrap
    rb = ReplayBuffer(6, 2, 1)
    for t in range(9):  # overwrites the oldest rows
        rb.add([t, t + 0.5], [t * 0.125], -t, [t + 1, t + 1.5], t == 8)
    assert rb.size == 6
    n = 60
    oa, rew, nxt, done = _sample(rb, n, 2, 1)
    seen = set()
    for s in range(n):
        t = int(oa[s * 3])
        seen.add(t)
        assert 4 <= t <= 8, t
        assert oa[s * 3 + 1] == t + 0.5
        assert oa[s * 3 + 2] == t * 0.125
        assert rew[s] == -t
        assert nxt[s * 2] == t + 1 and nxt[s * 2 + 1] == t + 1.5
        assert done[s] == (1.0 if t == 8 else 0.0)
    assert len(seen) == 5  # 6 rows: 5 whole transitions and the last one's final next obs


def test_episode_end_keeps_the_final_next_observation():
    # an episode of 3 steps, then a new one: the first episode's last transition bootstraps from
    # its own final observation (a tail row), not from the next episode's first
    rb = ReplayBuffer(20, 1, 1)
    for t in range(3):
        rb.add([t], [0.0], 1.0, [t + 1], False, episode_end=(t == 2))
    for t in range(3):
        rb.add([100 + t], [0.0], 1.0, [101 + t], False)
    oa, rew, nxt, done = _sample(rb, 200, 1, 1)
    seen = set()
    for s in range(200):
        o = int(oa[s * 2])
        seen.add(o)
        assert nxt[s] == o + 1, (o, nxt[s])
    assert seen == {0, 1, 2, 100, 101, 102}


def test_fixed_point_rows_round_to_their_field_scales():
    env = Env(pendulum)
    b = bounds(env)
    assert len(b) == 5 and b[2] == 8.0 and b[4] > 16.0
    rb = ReplayBuffer(50, 3, 1, b)
    rng = Rng(3)
    obs = env.reset(rng)
    stored = []
    for t in range(40):
        o = list(obs)
        a = [rng.uniform(-1.0, 1.0)]
        nxt, r, term, trunc = env.step([2.0 * a[0]])
        rb.add(o, a, r, nxt, term, trunc)
        stored.append((o, a[0], r, list(nxt)))
        obs = nxt
    oa, rew, nx, done = _sample(rb, 100, 3, 1)
    for s in range(100):
        # find the stored transition this sample decodes
        best = min(stored, key=lambda x: abs(x[0][2] - oa[s * 4 + 2]) + abs(x[0][0] - oa[s * 4]))
        o, a, r, n = best
        for i in range(3):
            assert abs(oa[s * 4 + i] - o[i]) <= 0.6 * b[i] / 32767 + 1e-6
            assert abs(nx[s * 3 + i] - n[i]) <= 0.6 * b[i] / 32767 + 1e-6
        assert abs(oa[s * 4 + 3] - a) <= 0.6 / 32767 + 1e-7
        assert abs(rew[s] - r) <= 0.6 * b[4] / 32767 + 1e-6


def test_out_of_range_values_saturate_and_bad_sizes_are_refused():
    rb = ReplayBuffer(4, 1, 1, (1.0, 1.0, 1.0))
    rb.add([5.0], [-3.0], 2.0, [0.5], False)
    oa, rew, nxt, done = _sample(rb, 1, 1, 1)
    assert abs(oa[0] - 1.0) < 1e-4 and abs(oa[1] + 1.0) < 1e-4 and abs(rew[0] - 1.0) < 1e-4
    assert "at least 2" in str(raises(ValueError, ReplayBuffer, 1, 3, 1))
    assert "bounds" in str(raises(ValueError, ReplayBuffer, 4, 3, 1, (1.0, 1.0)))


def test_random_overwrite_keeps_every_sample_whole():
    # once full, each episode starts at a random row: samples still pair each obs with its own
    # next obs, and some rows of the first episodes survive long after a ring would have lost them
    rb = ReplayBuffer(64, 1, 1, None, Rng(7))
    for ep in range(40):
        for t in range(10):
            o = ep * 100 + t
            rb.add([o], [0.0], 1.0, [o + 1], False, episode_end=(t == 9))
    oa, rew, nxt, done = _sample(rb, 400, 1, 1, seed=2)
    episodes = set()
    for s in range(400):
        o = int(oa[s * 2])
        assert nxt[s] == o + 1, (o, nxt[s])
        episodes.add(o // 100)
    assert min(episodes) < 34  # a ring of 64 rows would hold only episodes 35-39
