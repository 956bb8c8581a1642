"""Train TD3 on Pendulum on the board itself (the device core's TD3, in MicroPython), with the
progress streamed to the host, and the trained policy copied back.

The memory a run needs is estimated from the sizes before it starts (parameters, gradients and
Adam moments of the actor and both critics, the three target networks, activations of a batch,
the replay buffer), and a run that would not fit the board's free heap is refused."""
import time

from microrl import td3
from microrl.layout import actor_critic_sizes, param_count
from microrl.pendulum import ACT_DIM, OBS_DIM
from microrl.replay import bytes_per_transition

from .deploy import _exec, board_program

# Room for the garbage a training step makes, on top of what TD3 allocates.
WORKING_MARGIN = 16 * 1024
# Measured on the virtual board (x64, 160K heap): runs fitted while their estimate was up to
# about 84% of the free heap and failed at 88% (the heap fragments as the networks are
# initialised). Above this share a run starts with a warning.
SAFE_SHARE = 0.8


def estimate_bytes(hidden, batch, replay, obs_dim=OBS_DIM, act_dim=ACT_DIM):
    """Bytes of RAM a TD3 run of these sizes allocates (the device core's td3.estimate_bytes,
    which follows its constructor), as a dict of parts and 'total'."""
    config = td3.TD3Config(hidden=tuple(hidden), batch=batch, replay_capacity=replay)
    allocated = td3.estimate_bytes(obs_dim, act_dim, config)
    parts = {
        "replay": replay * bytes_per_transition(obs_dim, act_dim),
        "objects": td3.OBJECT_OVERHEAD,
        "margin": WORKING_MARGIN,
    }
    parts["networks, Adam and batch"] = allocated - parts["replay"] - parts["objects"]
    parts["total"] = allocated + WORKING_MARGIN
    return parts


class BoardTrainError(Exception):
    pass


def largest_array_bytes(hidden, batch, replay, obs_dim=OBS_DIM, act_dim=ACT_DIM):
    """The biggest single buffer of the run: it needs one contiguous free block of the heap."""
    critic = actor_critic_sizes(obs_dim, act_dim, hidden)[1]
    return max(replay * bytes_per_transition(obs_dim, act_dim), 4 * param_count(critic), 4 * batch * max(critic))


# the board side of the run: programs/train_prepare.py, then programs/train_run.py
_PREPARE = board_program("train_prepare")


def train_on_board(transport, steps, hidden=(16, 16), batch=32, replay=2000, warmup=None, seed=0, board_out="trained.mrlp", progress=None, every=None, warn=None):
    """Run training on the board over an mpremote transport in the raw REPL (microrl deployed).
    progress(step, latest_return, mem_free) is called as lines arrive. Returns a dict with
    'policy_bytes' (the trained policy file), 'mem_free_start', 'seconds', 'returns'."""
    est = estimate_bytes(hidden, batch, replay)
    out, err = _exec(transport, _PREPARE, 60)
    if err:
        raise BoardTrainError("importing microrl on the board failed: %s" % _last_line(err))
    text = out.decode("ascii", "replace")
    fields = text.split("F ")[-1].split()
    free, block = int(fields[0]), int(fields[1])
    largest_free = int(text.split("max free sz:")[1].split()[0]) * block if "max free sz:" in text else free
    biggest = largest_array_bytes(hidden, batch, replay)
    if est["total"] > free or biggest > largest_free:
        detail = ", ".join("%s %.1f kB" % (k, v / 1024.0) for k, v in est.items() if k != "total")
        raise BoardTrainError(
            "this run needs about %.1f kB of RAM (%s), with %.1f kB in one block, but the board has %.1f kB free after "
            "importing microrl, %.1f kB in its largest block: use a smaller --replay (%d bytes per transition), --batch or "
            "--hidden (deploying with --mpy leaves the heap less fragmented)"
            % (est["total"] / 1024.0, detail, biggest / 1024.0, free / 1024.0, largest_free / 1024.0, bytes_per_transition(OBS_DIM, ACT_DIM))
        )
    warning = None
    if est["total"] > SAFE_SHARE * free:
        warning = ("this run needs about %.1f kB, %.0f%% of the %.1f kB free: it may still fail when the heap fragments; "
                   "if it does, use a smaller --replay, --batch or --hidden" % (est["total"] / 1024.0, 100.0 * est["total"] / free, free / 1024.0))
        if warn:
            warn(warning)
    every = every or max(1, min(50, steps // 100))
    warmup_steps = batch if warmup is None else warmup
    code = board_program("train_run", HIDDEN=tuple(hidden), BATCH=batch, REPLAY=replay, WARMUP=warmup_steps, STEPS=steps, SEED=seed, EVERY=every, OUT=board_out)
    # timestamps of progress lines after warm-up: the speed of steps that train, not of random play
    state = {"buf": b"", "returns": [], "mem": None, "step": 0, "done": False, "train_start": None, "train_end": None}

    def consume(data):
        state["buf"] += data
        while b"\n" in state["buf"]:
            line, state["buf"] = state["buf"].split(b"\n", 1)
            parts = line.decode("ascii", "replace").split()
            if not parts:
                continue
            if parts[0] == "M" and len(parts) == 2:
                state["mem_after_alloc"] = int(parts[1])
            elif parts[0] == "P" and len(parts) == 4:
                step, ret, mem = int(parts[1]), float(parts[2]), int(parts[3])
                if ret == ret and (not state["returns"] or state["returns"][-1][1] != ret):
                    state["returns"].append((step, ret))
                state["mem"] = mem if state["mem"] is None else min(mem, state["mem"])
                if progress:
                    progress(step - state["step"], ret, mem)
                state["step"] = step
                if step >= warmup_steps:
                    now = time.perf_counter()
                    if state["train_start"] is None:
                        state["train_start"] = (step, now)
                    state["train_end"] = (step, now)
            elif parts[0] == "D":
                state["done"] = True
            elif parts[0] == "N" and len(parts) == 2:
                state["diverged"] = int(parts[1])

    t0 = time.perf_counter()
    try:
        transport.exec_raw_no_follow(code)
        # a step can take seconds on a slow board: allow 120 s of silence before giving up
        out, err = transport.follow(120, consume)
    except KeyboardInterrupt:
        transport.serial.write(b"\r\x03")  # stop the run on the board too
        raise
    except Exception as e:
        raise BoardTrainError("lost the board during training at step %d: %s" % (state["step"], str(e) or type(e).__name__)) from None
    seconds = time.perf_counter() - t0
    if err:
        msg = _last_line(err)
        if "MemoryError" in msg:
            raise BoardTrainError(
                "the board ran out of memory at step %d (%s; the run was estimated at %.1f kB of %.1f kB free, and a fragmented "
                "heap has less room than it shows): use a smaller --replay, --batch or --hidden" % (state["step"], msg, est["total"] / 1024.0, free / 1024.0)
            )
        raise BoardTrainError("training on the board failed at step %d: %s" % (state["step"], msg))
    if state.get("diverged") is not None:
        raise BoardTrainError("training on the board diverged: the actor's weights became NaN or infinite by step %d (checked every %d steps, last good at step %d); "
                              "stopped, no policy written" % (state["diverged"], every, state["step"]))
    if not state["done"]:
        raise BoardTrainError("training on the board stopped at step %d without finishing" % state["step"])
    from mpremote.transport import TransportError

    try:
        data = transport.fs_readfile(board_out)
    except (OSError, TransportError) as e:
        raise BoardTrainError("could not copy %s back from the board: %s" % (board_out, e)) from None
    return {
        "policy_bytes": data,
        "warning": warning,
        "mem_free_start": free,
        "largest_free_block": largest_free,
        "mem_free_min": state["mem"],
        "estimate_bytes": est["total"],
        "seconds": seconds,
        "steps_per_second": steps / seconds if seconds > 0 else 0.0,
        "returns": state["returns"],
        "train_steps_per_second": _rate(state["train_start"], state["train_end"]),
    }


def _rate(start, end):
    """Steps per second between two (step, time) progress marks, or None if too few."""
    if start is None or end is None or end[0] <= start[0] or end[1] <= start[1]:
        return None
    return (end[0] - start[0]) / (end[1] - start[1])


def _last_line(err):
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "?"
