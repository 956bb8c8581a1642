"""Round-trip latency of policy inference over the serial protocol, beside the same policy on
the host. Used by `microrl bench serial`, `microrl demo` and bench/board_serial.py."""
import math
import time

from .serial_link import LinkError, SerialLink


def percentile(sorted_values, q):
    """Nearest-rank percentile of an ascending list (q in 0..100)."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, math.ceil(q / 100.0 * len(sorted_values)) - 1))
    return sorted_values[k]


def summarise(round_trips_us, compute_us, elapsed_s):
    rt = sorted(round_trips_us)
    cu = sorted(compute_us)
    return {
        "completed": len(rt),
        "p50_us": percentile(rt, 50),
        "p90_us": percentile(rt, 90),
        "p99_us": percentile(rt, 99),
        "max_us": rt[-1] if rt else float("nan"),
        "board_compute_us": percentile(cu, 50),
        "board_compute_max_us": cu[-1] if cu else float("nan"),
        "per_second": len(rt) / elapsed_s if elapsed_s > 0 and rt else 0.0,
    }


def host_latency(policy, n, seed=0):
    """Median and p99 microseconds of policy(obs) on the host, for n calls."""
    from microrl.rng import Rng

    rng = Rng(seed)
    obs = [[rng.uniform(-1.0, 1.0) for _ in range(policy.obs_dim)] for _ in range(64)]
    times = []
    for i in range(n):
        o = obs[i & 63]
        t0 = time.perf_counter_ns()
        policy(o)
        times.append((time.perf_counter_ns() - t0) / 1000.0)
    times.sort()
    return {"host_p50_us": percentile(times, 50), "host_p99_us": percentile(times, 99)}


def run_requests(link, obs_dim, n, seed=0, progress=None, started=None, finished=None):
    """n INFER requests on an open SerialLink. Returns (summary dict, error or None): a link
    failure (board reset, timeout) stops the run and the results so far are kept. progress(1)
    after each request; started() and finished() when the timed requests start and end (a bar's
    clock runs between them, as the rate's here)."""
    from microrl.rng import Rng

    rng = Rng(seed)
    rts, cus = [], []
    error = None
    if started:
        started()
    t_start = time.perf_counter()
    try:
        for i in range(n):
            obs = [rng.uniform(-1.0, 1.0) for _ in range(obs_dim)]
            t0 = time.perf_counter_ns()
            _, compute = link.infer(obs)
            rts.append((time.perf_counter_ns() - t0) / 1000.0)
            cus.append(compute)
            if progress:
                progress(1)
    except LinkError as e:
        error = str(e)
    elapsed = time.perf_counter() - t_start
    if finished:
        finished()
    summary = summarise(rts, cus, elapsed)
    summary["requested"] = n
    return summary, error


def bench_serial(port, board_policy, n, seed=0, warmup=20, progress=None, timeout=5.0, started=None, finished=None):
    """Open the link, load board_policy (a path on the board), warm up, time n requests
    (progress, started, finished: as run_requests')."""
    with SerialLink(port, timeout=timeout) as link:
        n_in, n_out, described = link.load(board_policy)
        for _ in range(warmup):
            link.infer([0.0] * n_in)
        summary, error = run_requests(link, n_in, n, seed, progress, started, finished)
        summary["board"] = link.board_info["board"]
        summary["policy"] = described
        summary["error"] = error
        if error is not None:
            link.serving = False  # do not wait on a server that is gone
        return summary


def run_closed_loop(link, task, steps, seed=0, params=None):
    """The task stepped on the host (the device core's microrl.task.Env, its evaluation starts
    from Rng(seed)), the policy on the board answering one INFER per control step, for `steps`
    steps. Returns (summary dict: the round trips as run_requests gives them, and the returns of
    the episodes that ended; error or None: a link failure stops the run, the results so far are
    kept)."""
    from microrl.rng import Rng
    from microrl.task import Env

    env = Env(task, params, Rng(seed), evaluation=True)
    rts, cus, returns = [], [], []
    error = None
    obs = env.reset()
    total = 0.0
    t_start = time.perf_counter()
    try:
        for _ in range(steps):
            t0 = time.perf_counter_ns()
            action, compute = link.infer(list(obs))
            rts.append((time.perf_counter_ns() - t0) / 1000.0)
            cus.append(compute)
            obs, reward, terminated, truncated = env.step(action)
            total += reward
            if terminated or truncated:
                returns.append(total)
                total = 0.0
                obs = env.reset()
    except LinkError as e:
        error = str(e)
    summary = summarise(rts, cus, time.perf_counter() - t_start)
    summary["requested"] = steps
    summary["episode_returns"] = returns
    return summary, error
