from microrl.rng import Rng


def test_same_seed_same_stream():
    a = Rng(7)
    b = Rng(7)
    for _ in range(100):
        assert a.next_u32() == b.next_u32()
    assert Rng(7).uniform() != Rng(8).uniform()


def test_uniform_range_and_mean():
    r = Rng(1)
    n = 4000
    total = 0.0
    for _ in range(n):
        u = r.uniform(-2.0, 3.0)
        assert -2.0 <= u < 3.0
        total += u
    assert abs(total / n - 0.5) < 0.1


def test_randint_covers_range():
    r = Rng(2)
    seen = [0] * 7
    for _ in range(2000):
        k = r.randint(7)
        assert 0 <= k < 7
        seen[k] += 1
    assert min(seen) > 200


def test_normal_moments():
    r = Rng(3)
    n = 6000
    s = 0.0
    s2 = 0.0
    for _ in range(n):
        z = r.normal(1.0, 2.0)
        s += z
        s2 += z * z
    mean = s / n
    var = s2 / n - mean * mean
    assert abs(mean - 1.0) < 0.1, mean
    assert abs(var - 4.0) < 0.3, var


def test_state_roundtrip():
    r = Rng(4)
    r.normal()
    state = r.getstate()
    first = [r.normal() for _ in range(5)]
    r.setstate(state)
    assert [r.normal() for _ in range(5)] == first
