"""`microrl demo`: train Pendulum on the host, deploy to a board (a virtual one when none is
given), run the policy there in a closed loop against the board's own Pendulum, and measure
the serial round trip."""
import contextlib
import tempfile
import time


def train_policy(steps=10000, seed=0, progress=None):
    """Train TD3 on Pendulum on the host with the numba trainer (whole loop compiled; the first
    run compiles for about 25 s, later runs load the cache); returns the trained Policy."""
    from .td3 import ALGO

    last = [0]

    def report(step, state, evaluation):
        if progress:
            progress(step - last[0], None if evaluation is None else evaluation[1])
        last[0] = step

    policy, _ = ALGO.train_pendulum(steps=steps, seed=seed, eval_every=1000, eval_episodes=3, progress=report)
    if progress and steps > last[0]:
        progress(steps - last[0], None)
    return policy


@contextlib.contextmanager
def board_port(port=None, heap=None, log=None):
    """Yield (port, description): the given port, or a virtual board started for the duration."""
    if port:
        yield port, port
        return
    from .board import DEFAULT_HEAP, VirtualBoard

    with tempfile.TemporaryDirectory(prefix="microrl-board-") as folder:
        with VirtualBoard(folder, heap=heap or DEFAULT_HEAP, log=log) as board:
            yield board.port, "virtual MicroPython board (unix port, heap %s) on %s" % (heap or DEFAULT_HEAP, board.port)


def run_demo(port=None, steps=10000, seed=0, episodes=5, requests=200, out="demo-policy.mrlp", heap=None, mpy=False, quiet=False, say=print):
    """The whole demo; returns a dict of results. say(text) prints a line of the story."""
    import microrl
    from microrl.evaluate import evaluate
    from microrl.pendulum import Pendulum

    from .deploy import BOARD_POLICY, deploy
    from .progress import Progress
    from .serial_bench import host_latency, run_requests
    from .serial_link import LinkError, SerialLink

    result = {"steps": steps, "seed": seed, "episodes": episodes}
    say("1/4 training TD3 on Pendulum-v1 on the host: %d steps, seed %d (numba, the whole loop compiled)" % (steps, seed))
    t0 = time.perf_counter()
    with Progress(steps, desc="training", quiet=quiet) as bar:
        policy = train_policy(steps, seed, lambda n, ret: bar.update(n, **({"eval_return": "%.0f" % ret} if ret is not None else {})))
    result["train_seconds"] = time.perf_counter() - t0
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    mean, std, host_returns = evaluate(policy, Pendulum(), episodes, seed=eval_seed)
    result["host_return_mean"] = mean
    result["host_return_std"] = std
    result["policy_file"] = out
    say("    %.1f s; on the host: return %.1f +- %.1f over %d episodes; saved %s" % (result["train_seconds"], mean, std, episodes, out))
    with board_port(port, heap) as (p, described):
        say("2/4 board: %s" % described)
        report = deploy(p, out, mpy=mpy)
        result["board"] = report["board"]
        say("3/4 deployed microrl (%d files copied, %d unchanged) and the policy; its actions on the board match the host's" % (len(report["copied"]), report["unchanged"]))
        with SerialLink(p) as link:
            link.load(BOARD_POLICY)
            returns, n_steps, compute = link.rollout(eval_seed, episodes, timeout=60.0 + 2.0 * episodes * 200)
            bm = sum(returns) / len(returns)
            bs = (sum((r - bm) ** 2 for r in returns) / len(returns)) ** 0.5
            result.update(board_return_mean=bm, board_return_std=bs, board_step_compute_us=compute / max(1, n_steps))
            result["return_max_diff"] = max(abs(a - b) for a, b in zip(returns, host_returns))
            say("4/4 closed loop on the board (policy and Pendulum both on it): return %.1f +- %.1f over %d episodes "
                "(host: %.1f); policy %.0f us per step" % (bm, bs, episodes, mean, result["board_step_compute_us"]))
            summary, error = run_requests(link, policy.obs_dim, requests, seed)
            if error:
                raise LinkError(error)
        result.update({k: summary[k] for k in ("p50_us", "p90_us", "p99_us", "max_us", "board_compute_us", "per_second")})
        result.update(host_latency(policy, 1000, seed))
        say("    serial round trip over %d requests: p50 %.0f us, p99 %.0f us, max %.0f us; board compute %.0f us; %.0f inferences/s "
            "(host: %.1f us per inference)" % (requests, summary["p50_us"], summary["p99_us"], summary["max_us"], summary["board_compute_us"], summary["per_second"], result["host_p50_us"]))
    return result


def run_quadrotor_demo(port=None, steps=None, seed=0, episodes=5, requests=200, out="quadrotor-policy.mrlp", heap=None, mpy=False, quiet=False, say=print, serial_episodes=1):
    """Train TD3 on the quadrotor on the host, fly the policy on a board against the board's own
    quadrotor simulation, then fly the host's simulation with the policy answering over the
    serial line. Returns a dict of results."""
    import microrl
    from microrl import quadrotor as Q
    from microrl.rng import Rng

    from .deploy import BOARD_POLICY, deploy
    from .offpolicy import QUADROTOR_STEPS, flight_summary
    from .progress import Progress
    from .serial_link import LinkError, SerialLink
    from .td3 import ALGO

    import numpy as np

    steps = steps or QUADROTOR_STEPS
    result = {"task": "quadrotor", "steps": steps, "seed": seed, "episodes": episodes}
    say("1/5 training TD3 on the quadrotor hover task on the host: %d steps, seed %d (numba, simulation in the compiled loop)" % (steps, seed))
    t0 = time.perf_counter()
    last = [0]
    with Progress(steps, desc="training", quiet=quiet) as bar:

        def report(step, state, evaluation):
            bar.update(step - last[0])
            last[0] = step

        run = ALGO.run("quadrotor", steps=steps, seed=seed, eval_every=0, eval_episodes=0, progress=report)
    result["train_seconds"] = time.perf_counter() - t0
    result["train_s"] = run.stats["train_s"]
    policy = run.policy
    microrl.save(out, policy)
    eval_seed = 10007 + seed
    host_rows = Q.fly(policy, episodes, eval_seed)
    host = flight_summary(np.array(host_rows, dtype=np.float64))
    result.update({"host_" + k: v for k, v in host.items()})
    result["policy_file"] = out
    say("    %.1f s (%.1f s training); on the host (device core on CPython): flies %d of %d episodes, final distance %.3f m (median); saved %s"
        % (result["train_seconds"], result["train_s"], sum(r[1] for r in host_rows), episodes, host["position_error_m"], out))
    with board_port(port, heap) as (p, described):
        say("2/5 board: %s" % described)
        report_ = deploy(p, out, mpy=mpy)
        result["board"] = report_["board"]
        say("3/5 deployed microrl (%d files copied, %d unchanged) and the policy" % (len(report_["copied"]), report_["unchanged"]))
        with SerialLink(p) as link:
            link.load(BOARD_POLICY)
            rows, n_steps, policy_us, total_us = link.fly(eval_seed, episodes, timeout=120.0 + 30.0 * episodes)
            board = flight_summary(np.array(rows, dtype=np.float64))
            result.update({"board_" + k: v for k, v in board.items()})
            per_step = policy_us / max(1, n_steps)
            sim_step = (total_us - policy_us) / max(1, n_steps)
            result.update(board_policy_step_us=per_step, board_sim_step_us=sim_step, board_control_rate_hz=1e6 / per_step if per_step else None,
                          board_steps=n_steps, board_return_max_diff=max(abs(a[0] - b[0]) for a, b in zip(rows, host_rows)),
                          board_success_matches_host=[int(a[1]) for a in rows] == [int(b[1]) for b in host_rows])
            say("4/5 closed loop on the board (policy and quadrotor both in MicroPython): flies %d of %d episodes, final distance %.3f m (median; host %.3f m); "
                "policy %.0f us per step (a %.0f Hz control rate), simulation %.0f us per step"
                % (sum(int(r[1]) for r in rows), episodes, board["position_error_m"], host["position_error_m"], per_step, result["board_control_rate_hz"], sim_step))
            # the simulation on the host, the policy on the board, one request per control step
            rng = Rng(eval_seed)
            env = Q.Quadrotor(rng, evaluation=True)
            latencies = []
            flights = []
            compute = 0
            for _ in range(serial_episodes):
                obs = env.reset()
                done = truncated = False
                total = 0.0
                while not (done or truncated):
                    t1 = time.perf_counter()
                    action, us = link.infer(list(obs))
                    latencies.append(time.perf_counter() - t1)
                    compute += us
                    obs, r, done, truncated = env.step(action)
                    total += r
                flights.append((total, 1 if (not done) and Q.success(env.s) else 0, float(np.linalg.norm(list(env.s)[0:3])), env.t))
            lat = np.array(latencies) * 1e6
            serial = flight_summary(np.array(flights, dtype=np.float64))
            result.update({"serial_" + k: v for k, v in serial.items()})
            result.update(serial_p50_us=float(np.percentile(lat, 50)), serial_p99_us=float(np.percentile(lat, 99)), serial_steps=len(lat),
                          serial_control_rate_hz=1e6 / float(np.percentile(lat, 50)))
            say("5/5 over the serial line (quadrotor on the host, policy on the board): flies %d of %d episodes, final distance %.3f m; "
                "round trip p50 %.0f us, p99 %.0f us over %d steps (a %.0f Hz control rate)"
                % (sum(f[1] for f in flights), serial_episodes, serial["position_error_m"], result["serial_p50_us"], result["serial_p99_us"], len(lat), result["serial_control_rate_hz"]))
            if not flights:
                raise LinkError("no serial flight ran")
    return result
