# The sim-to-real perturbations of the device core's runner (microrl.perturb, microrl.task.Env,
# the quadrotor's own): off, a run is the run it was; on, each does what it says.
from math import sqrt

from microrl import perturb
from microrl.rng import Rng
from microrl.perturb import names as perturbation_names, set_values
from microrl.perturb import training as training_perturbations
from microrl.task import Env, parameters
from microrl.tasks import pendulum
from microrl.tasks import quadrotor as Q
from microrl.compat import zeros
from tiny import SINGLE_PRECISION


def _episode(env, actions, seed):
    """Observations and rewards of one episode of fixed actions from Rng(seed)."""
    out = []
    obs = env.reset(Rng(seed))
    out.extend(obs)
    for a in actions:
        obs, r, term, trunc = env.step(a)
        out.extend(obs)
        out.append(r)
        if term or trunc:
            break
    return out


def test_off_is_the_nominal_run():
    acts = [[0.1 * (i % 7) - 0.3] * 4 for i in range(60)]
    off = dict((k, 0.0) for k in perturbation_names(Q))
    assert _episode(Env(Q), acts, 3) == _episode(Env(Q, perturbations=off), acts, 3)
    pacts = [0.5 * ((i % 5) - 2) for i in range(60)]
    assert _episode(Env(pendulum), pacts, 4) == _episode(Env(pendulum, perturbations={"action_delay": 0, "observation_noise": 0.0}), pacts, 4)


def test_delay_holds_actions_back_whole_steps():
    line = zeros(3 * 2, "d")
    a = zeros(2, "d")
    perturb.start_line(line, 2, 3, (1.0, -1.0))
    seen = []
    for t in range(6):
        a[0] = 10.0 + t
        a[1] = 20.0 + t
        perturb.delay_action(line, a, 2, 3)
        seen.append((a[0], a[1]))
    # the line's neutral commands first, then each command 3 steps late
    assert seen == [(1.0, -1.0)] * 3 + [(10.0, 20.0), (11.0, 21.0), (12.0, 22.0)]


def test_delayed_env_equals_actions_given_late():
    acts = [0.5 * ((i % 5) - 2) for i in range(40)]
    late = [0.0] * 2 + acts[:-2]  # pendulum's neutral command: no torque (the middle of +-2)
    assert _episode(Env(pendulum, perturbations={"action_delay": 2}), acts, 5) == _episode(Env(pendulum), late, 5)


def test_observation_carries_the_pending_actions():
    """Under a delay of d with pending_actions, the observation is the task's, then the d
    commands sent and not yet applied (oldest first) in [-1, 1] units: exactly the next d
    commands the task applies; the task's part is the delayed run's own."""
    d = 3
    acts = [[0.4 * ((i % 5) - 2)] for i in range(30)]  # pendulum's +-2 N m: [-1, 1] units are half
    seen = Env(pendulum, perturbations={"action_delay": d}, pending_actions=True)
    blind = Env(pendulum, perturbations={"action_delay": d})
    assert seen.obs_dim == pendulum.OBS_DIM + d and blind.obs_dim == pendulum.OBS_DIM
    obs = seen.reset(Rng(9))
    plain = blind.reset(Rng(9))
    sent = [0.0] * d  # neutral commands before the first
    for t, a in enumerate(acts):
        assert list(obs[:3]) == list(plain[:3])
        assert max(abs(o - c / 2.0) for o, c in zip(obs[3:], sent[-d:])) < 1e-6  # (obs is float32)
        obs = seen.step(a)[0]
        plain = blind.step(a)[0]
        sent.append(a[0])
    assert len(seen.obs) == 3 + d


def test_pending_actions_controller_is_the_envs_observation():
    """perturb.PendingActions (what a board runs, observing the commands it sent itself) gives a
    policy the same inputs as microrl.task.Env's pending actions in simulation."""
    from microrl.policy import Policy
    from microrl.task import policy_env

    d = 2
    n = pendulum.OBS_DIM + d
    params = [0.01 * ((i * 7) % 13 - 6) for i in range(n * 4 + 4 + 4 + 1)]
    policy = Policy([n, 4, 1], ["tanh", "tanh"], params=params, act_scale=[2.0], act_offset=[0.0])
    policy.pending = d
    seen = []

    class Recording:
        def __call__(self, x):
            seen.append(list(x))
            return policy(x)

    env = policy_env(pendulum, policy, rng=Rng(3))
    inputs = []
    obs = env.reset()
    for _ in range(12):
        inputs.append(list(obs))
        obs = env.step(policy(obs))[0]
    rec = Recording()
    rec.act_dim, rec.pending, rec.sizes, rec.act_scale, rec.act_offset = 1, d, policy.sizes, policy.act_scale, policy.act_offset
    controller = perturb.PendingActions(rec)
    plain = Env(pendulum, rng=Rng(3), perturbations={"action_delay": d})
    obs = plain.reset()
    for _ in range(12):
        obs = plain.step(controller(obs))[0]
    assert seen == inputs


def test_policy_perturbations_keep_a_policys_own_delay():
    from microrl.task import policy_perturbations

    class P:
        pending = 2

    assert policy_perturbations(P(), None) == {"action_delay": 2}
    assert policy_perturbations(P(), {"observation_noise": 1.0}) == {"observation_noise": 1.0, "action_delay": 2}
    try:
        policy_perturbations(P(), {"action_delay": 3})
        assert False, "another delay was accepted"
    except ValueError as e:
        assert "2 steps" in str(e)


def test_noise_has_the_asked_spread_and_leaves_the_main_stream_alone():
    env = Env(pendulum, perturbations={"observation_noise": 0.1})
    plain = Env(pendulum)
    n = 0
    total = 0.0
    squares = 0.0
    for seed in range(60):
        noisy = _episode(env, [0.0] * 20, seed)
        clean = _episode(plain, [0.0] * 20, seed)
        for k in range(3):  # the start observation: same start state, noise only
            d = noisy[k] - clean[k]
            total += d
            squares += d * d
            n += 1
    mean = total / n
    std = sqrt(squares / n - mean * mean)
    assert abs(mean) < 0.03 and 0.08 < std < 0.12, (mean, std)


def test_quadrotor_episode_airframe_within_its_spread():
    P = parameters(Q)
    G = zeros(perturb.GENERIC_DIM, "d")
    set_values(Q, P, G, training_perturbations(Q))
    assert G[perturb.OBSERVATION_NOISE] == 1.0
    env = Env(Q, perturbations=training_perturbations(Q))
    nominal = Q.PARAMETERS
    forces = []
    masses = []
    for seed in range(40):
        env.reset(Rng(seed))
        m = env.P[Q.MASS] / nominal[Q.MASS]
        assert 0.9 <= m <= 1.1 and m != 1.0
        masses.append(m)
        for first, count, spread in ((Q.J_XX, 3, Q.VARY_INERTIA), (Q.THRUST_C0, 3, Q.VARY_THRUST), (Q.TAU_RISING, 2, Q.VARY_MOTOR)):
            k = env.P[first] / nominal[first]
            ulps = 1e-6 if SINGLE_PRECISION else 1e-12  # a float32 board's parameters: a few ulps
            assert abs(k - 1.0) <= env.P[spread] + ulps
            for i in range(count):  # one factor per group
                assert abs(env.P[first + i] / nominal[first + i] - k) < 1000 * ulps
        forces.append(env.P[Q.FORCE])
        assert env.P[Q.TORQUE + 2] != 0.0
    assert len(set(forces)) == 40 and max(abs(f) for f in forces) < 5 * env.P[Q.DISTURBANCE_FORCE]
    assert len(set(masses)) == 40
    plain = Env(Q)
    plain.reset(Rng(0))
    for i in range(Q.PARAM_DIM):
        assert plain.P[i] == nominal[i]


def test_heavier_craft_sinks_at_the_nominal_hover_command():
    heavy = Env(Q, params=[v * 1.3 if i == Q.MASS else v for i, v in enumerate(Q.PARAMETERS)])
    nominal = Env(Q)
    P = nominal.P
    for env in (heavy, nominal):
        env.reset(Rng(1))
        env.set_state([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] + [Q.hover_rpm(env.P)] * 4)
        for _ in range(20):
            env.step([Q.hover_action(P)] * 4)
    assert heavy.s[2] < -0.01 and abs(nominal.s[2]) < 1e-3


def test_a_constant_force_pushes_the_craft():
    windy = Env(Q, params=[0.02 if i == Q.FORCE else v for i, v in enumerate(Q.PARAMETERS)])
    windy.reset(Rng(2))
    windy.set_state([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0] + [Q.hover_rpm(windy.P)] * 4)
    for _ in range(20):
        windy.step([Q.hover_action(windy.P)] * 4)
    assert windy.s[0] > 0.01 and abs(windy.s[1]) < 1e-6


def test_bad_perturbations_are_refused():
    for bad in ({"action_delay": 1.5}, {"action_delay": perturb.MAX_DELAY + 1}, {"observation_noise": -1.0}, {"vary_mass": 1.0}, {"wind": 1.0}):
        try:
            Env(Q, perturbations=bad)
        except ValueError:
            continue
        raise AssertionError("accepted %r" % (bad,))
