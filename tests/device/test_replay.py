from microrl.compat import zeros
from microrl.replay import ReplayBuffer, bytes_per_transition
from microrl.rng import Rng


def test_bytes_per_transition_documented():
    rb = ReplayBuffer(10, 3, 1)
    assert bytes_per_transition(3, 1) == 36
    assert rb.nbytes() == 10 * 36


def test_ring_wraps_and_samples_whole_transitions():
    rb = ReplayBuffer(5, 2, 1)
    for t in range(8):  # overwrites the first three
        rb.add([t, t + 0.5], [t * 0.1], -t, [t + 1, t + 1.5], t == 7)
    assert rb.size == 5 and rb.pos == 3
    n = 50
    oa = zeros(n * 3)
    rew = zeros(n)
    nxt = zeros(n * 2)
    done = zeros(n)
    rb.sample_into(Rng(0), n, oa, 3, rew, nxt, done)
    seen = set()
    for s in range(n):
        t = int(oa[s * 3])
        seen.add(t)
        assert 3 <= t <= 7
        assert abs(oa[s * 3 + 1] - (t + 0.5)) < 1e-6
        assert abs(oa[s * 3 + 2] - t * 0.1) < 1e-6
        assert rew[s] == -t
        assert nxt[s * 2] == t + 1
        assert done[s] == (1.0 if t == 7 else 0.0)
    assert len(seen) == 5
