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
        result["board_backend"] = report["backend"]
        say("3/4 deployed microrl (%d files copied, %d unchanged; %s backend on the board) and the policy; its actions on the board match the host's"
            % (len(report["copied"]), report["unchanged"], report["backend"]))
        if report["native_note"]:
            say("    " + report["native_note"])
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
