"""Train TD3 on Pendulum on the board itself (the device core's TD3, in MicroPython), with the
progress streamed to the host, and the trained actor's weights sent back over the serial line.

Before a run starts, the board reports its free heap, its largest free block and its allocation
block size; the RAM the run needs is its estimate (microrl.memory: every buffer TD3 allocates,
plus its objects) and a measured working margin. Sizes the user leaves out are chosen here: the
largest network of a measured ladder whose run fits with a useful replay buffer, and the replay
as large as the room left (no larger than the run can fill)."""
import time
from array import array

from microrl import memory
from microrl.layout import actor_critic_sizes
from microrl.tasks import pendulum
from microrl.tasks.pendulum import ACT_DIM, EPISODE_STEPS, OBS_DIM
from microrl.replay import bytes_per_transition
from microrl.td3 import TD3Config

from .deploy import _exec, board_program

# Usable heap (see USABLE_PROBE) a run needs beyond its estimate: room for a step's garbage, the
# run's own code compiled on the board, attribute tables that grow, arrays too big for the 1 kB
# pieces the probe counts. Measured as the smallest heap on which a size builds, trains and sends
# its weights back (bench/board_train.py --margin): 5.1-12.4 kB for 6 sizes from 8,8/16 to
# 64,64/64 on the 64-bit unix port, 10.8 kB for 16,16/32 on the 32-bit Cortex-M3 qemu port.
MARGIN = 16 * 1024

# The networks and batches a default run may take, largest first. A rung is taken when its run
# fits with at least MIN_REPLAY rows of replay (or all the steps of a shorter run): measured over
# 5 seeds x 20,000 steps (docs/on-board-training.md), 16,16 with 5,700 rows returned -125 to
# -161 where 24,24 with 3,400 rows returned down to -241.
LADDER = (((32, 32), 32), ((24, 24), 32), ((16, 16), 32), ((16, 16), 16), ((8, 8), 16))
MIN_REPLAY = 5000
# the rungs that learned: smaller ones are only for a heap too small for these (8,8/16 with
# 5,600 rows returned -647 to -1640 over 5 seeds, where 16,16/32 with 4,400 returned -85 to -670)
LEARNING_RUNGS = 3
# a full replay on the board starts each new episode at a random row (TD3Config.replay_overwrite):
# with a ring, 16,16 and 5,700 rows forgot the swing-up once the buffer held only later episodes
REPLAY_OVERWRITE = "random"
SMALLEST_REPLAY = 500  # below this a board is refused rather than given a replay too small to learn from
DEFAULT_WARMUP = TD3Config().warmup
DEFAULT_LR = TD3Config().actor_lr  # the device core's default, actor and critics alike


class BoardTrainError(Exception):
    pass


def margin_bytes(gc_block=32):
    """The same on 32- and 64-bit ports: measured, it did not halve with the word size."""
    return MARGIN


def rows_for(steps):
    """Replay rows a run of `steps` steps can fill: one per step and a tail row per episode."""
    return steps + steps // EPISODE_STEPS + 1


def estimate_bytes(hidden, batch, replay, gc_block=32, obs_dim=OBS_DIM, act_dim=ACT_DIM):
    """Bytes of RAM a TD3 run of these sizes needs on a board with gc_block-byte allocation
    blocks, as a dict of parts and 'total' (the estimate and the working margin)."""
    config = TD3Config(hidden=tuple(hidden), batch=batch, replay_capacity=max(2, replay))
    allocated = memory.estimate_bytes(obs_dim, act_dim, config, gc_block, task=pendulum)  # the task's environment arrays too
    parts = {"replay": memory.buffer_sizes(obs_dim, act_dim, config)[-2] + replay, "margin": margin_bytes(gc_block)}
    parts["networks, Adam and batch"] = allocated - parts["replay"]
    parts["total"] = allocated + parts["margin"]
    return parts


def replay_block_bytes(replay, obs_dim=OBS_DIM, act_dim=ACT_DIM):
    """The biggest single buffer of a run (the replay rows): it needs one contiguous free block."""
    return replay * (bytes_per_transition(obs_dim, act_dim) - 1)


def fits(hidden, batch, replay, free, largest, gc_block=32):
    return estimate_bytes(hidden, batch, replay, gc_block)["total"] <= free and replay_block_bytes(replay) + gc_block <= largest


def largest_replay(hidden, batch, free, largest, gc_block=32, cap=None):
    """The most replay rows (up to cap) with which a run of these sizes fits, or 0."""
    lo, hi = 0, cap or 10**7
    if not fits(hidden, batch, 2, free, largest, gc_block):
        return 0
    lo = 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(hidden, batch, mid, free, largest, gc_block):
            lo = mid
        else:
            hi = mid - 1
    return lo


def choose(steps, free, largest, gc_block=32, hidden=None, batch=None, replay=None):
    """The sizes of a run: those given, and for the rest the largest rung of LADDER that fits
    with a useful replay, the replay as large as fits (no more rows than the run fills).
    Returns (hidden, batch, replay, reason); BoardTrainError when nothing fits."""
    wanted = rows_for(steps)
    useful = min(MIN_REPLAY, wanted)
    rungs = [(h, b) for h, b in LADDER if (hidden is None or tuple(hidden) == h) and (batch is None or batch == b)]
    if hidden is not None or batch is not None:
        rungs.append((tuple(hidden) if hidden is not None else LADDER[-1][0], batch if batch is not None else LADDER[-1][1]))
    if replay is not None:
        for h, b in rungs:
            if fits(h, b, replay, free, largest, gc_block):
                return h, b, replay, "the largest network on the ladder that fits beside a replay of %d rows" % replay
    else:
        # the largest rung with a useful replay; failing that, the rung that learns with the most
        # replay (the smallest), then the rungs below it
        learning = [rung for rung in rungs if rung in LADDER[:LEARNING_RUNGS]] if hidden is None and batch is None else rungs
        rest = [rung for rung in rungs if rung not in learning]
        for least, kind, tried in ((useful, "a replay of %d rows or more" % useful, learning),
                                   (min(SMALLEST_REPLAY, wanted), "the most replay that fits (less than %d rows: expect less learning)" % useful,
                                    learning[::-1] + rest)):
            for h, b in tried:
                rows = largest_replay(h, b, free, largest, gc_block, cap=wanted)
                if rows >= least:
                    why = ("the largest network on the ladder that fits with " if least == useful else "the network that fits with ") + kind
                    why += "; the replay holds every step of the run" if rows == wanted else "; the replay fills the rest of the free heap"
                    return h, b, rows, why
    h, b = rungs[-1] if rungs else LADDER[-1]
    r = replay if replay is not None else min(SMALLEST_REPLAY, wanted)
    est = estimate_bytes(h, b, r, gc_block)
    detail = ", ".join("%s %.1f kB" % (k, v / 1024.0) for k, v in est.items() if k != "total")
    given = [flag for flag, value in (("--hidden", hidden), ("--batch", batch), ("--replay", replay)) if value is not None]
    if given:  # smaller values of those given, or those chosen
        advice = "use a smaller %s (the replay takes %d bytes per transition), or leave %s out to have %s chosen" % (
            " or ".join(given), bytes_per_transition(OBS_DIM, ACT_DIM), " and ".join(given), "it" if len(given) == 1 else "them")
    else:  # the smallest sizes were tried: no option helps
        advice = ("no smaller run learns: train on the host (microrl train pendulum --hidden 16,16) and deploy the policy, "
                  "which runs on this board, or train on a board with more RAM")
    raise BoardTrainError(
        "this run needs about %.1f kB of RAM (%s), with %.1f kB in one block, but the board has %.1f kB usable after "
        "importing microrl, %.1f kB in its largest block: %s"
        % (est["total"] / 1024.0, detail, replay_block_bytes(r) / 1024.0, free / 1024.0, largest / 1024.0, advice)
    )


# What a board can give to buffers: the bytes it can allocate in pieces of 1 kB, after a
# collection (programs/usable_heap.py). gc.mem_free() also counts the holes that importing leaves
# between objects, which no buffer fits in (15-35 kB of them here: 64-bit unix port, 32-bit
# Cortex-M3); the probe does not.
USABLE_PROBE = board_program("usable_heap")
# the board side of the run: programs/train_prepare.py (free heap, usable heap, largest block,
# block size, byte order, backend), then programs/train_run.py
_PREPARE = USABLE_PROBE + board_program("train_prepare")


def read_board(transport):
    """Free heap, largest free block, allocation block size, byte order and backend of the board
    with the training code imported."""
    out, err = _exec(transport, _PREPARE, 60)
    if err:
        raise BoardTrainError("importing microrl on the board failed: %s" % _last_line(err))
    text = out.decode("ascii", "replace")
    fields = text.split("F ")[-1].split()
    free, block = int(fields[0]), int(fields[1])
    largest = int(text.split("max free sz:")[1].split()[0]) * block if "max free sz:" in text else free
    usable = int(text.split("U ")[-1].split()[0])
    return {"free": free, "usable": usable, "largest": largest, "gc_block": block, "byteorder": fields[2], "backend": fields[3]}


def default_warmup(steps, batch):
    """Random-action steps before training: the device core's default (five episodes), at most
    a quarter of a short run, at least one batch."""
    return max(batch, min(DEFAULT_WARMUP, steps // 4))


def train_on_board(transport, steps, hidden=None, batch=None, replay=None, warmup=None, seed=0, progress=None, every=None, say=None,
                   actor_lr=DEFAULT_LR, critic_lr=DEFAULT_LR):
    """Run training on the board over an mpremote transport in the raw REPL (microrl deployed).
    Sizes left as None are chosen to fit the board (choose()); say(text) is told the choice.
    A run whose actor becomes NaN or infinite stops on the board: BoardTrainError, no policy.
    progress(step, latest_return, mem_free) is called as lines arrive. Returns a dict with
    'policy_bytes' (the trained policy file), the sizes, 'mem_free_start', 'seconds', 'returns'."""
    board = read_board(transport)
    free, usable, largest_free, block = board["free"], board["usable"], board["largest"], board["gc_block"]
    chosen = [hidden is None, batch is None, replay is None]
    hidden, batch, replay, why = choose(steps, usable, largest_free, block, hidden, batch, replay)
    est = estimate_bytes(hidden, batch, replay, block)
    warmup_steps = default_warmup(steps, batch) if warmup is None else warmup
    if say:
        what = "chosen" if all(chosen) else ("given" if not any(chosen) else "given and chosen")
        say("board: %.1f kB free after importing microrl, %.1f kB of it usable in 1 kB pieces (largest block %.1f kB, %d-byte blocks, "
            "%s kernels); sizes %s: hidden %s, batch %d, replay %d rows (%d bytes each): about %.1f kB with a %.0f kB margin (%s)"
            % (free / 1024.0, usable / 1024.0, largest_free / 1024.0, block, board["backend"], what, ",".join(map(str, hidden)), batch, replay,
               bytes_per_transition(OBS_DIM, ACT_DIM), est["total"] / 1024.0, est["margin"] / 1024.0, why))
    every = every or max(1, min(50, steps // 100))
    code = board_program("train_run", HIDDEN=tuple(hidden), BATCH=batch, REPLAY=replay, WARMUP=warmup_steps, STEPS=steps, SEED=seed, EVERY=every,
                         OVERWRITE=REPLAY_OVERWRITE, ACTOR_LR=float(actor_lr), CRITIC_LR=float(critic_lr))
    # timestamps of progress lines after warm-up: the speed of steps that train, not of random play
    state = {"buf": b"", "returns": [], "mem": None, "step": 0, "done": False, "train_start": None, "train_end": None, "weights": []}

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
            elif parts[0] == "W" and len(parts) == 2:
                state["weights"].append(parts[1])
            elif parts[0] == "D":
                state["done"] = True
            elif parts[0] == "N" and len(parts) == 3:
                state["diverged"] = (int(parts[1]), parts[2])

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
        step, what = state["diverged"]
        what = {"actor": "the actor's weights", "critic": "a critic's weights", "action": "the actor's action"}.get(what, what)
        raise BoardTrainError("training on the board diverged: %s became NaN or infinite by step %d (last good check at step %d); "
                              "stopped, no policy written (a smaller --actor-lr or --critic-lr may help)" % (what, step, state["step"]))
    if not state["done"]:
        raise BoardTrainError("training on the board stopped at step %d without finishing" % state["step"])
    data = policy_bytes(hidden, "".join(state["weights"]), board["byteorder"])
    return {
        "policy_bytes": data,
        "hidden": list(hidden),
        "batch": batch,
        "replay": replay,
        "warmup": warmup_steps,
        "actor_lr": actor_lr,
        "critic_lr": critic_lr,
        "bytes_per_transition": bytes_per_transition(OBS_DIM, ACT_DIM),
        "backend": board["backend"],
        "gc_block": block,
        "mem_after_alloc": state.get("mem_after_alloc"),
        "mem_free_start": free,
        "mem_usable_start": usable,
        "largest_free_block": largest_free,
        "mem_free_min": state["mem"],
        "estimate_bytes": est["total"],
        "estimate_parts": est,
        "seconds": seconds,
        "steps_per_second": steps / seconds if seconds > 0 else 0.0,
        "returns": state["returns"],
        "train_steps_per_second": _rate(state["train_start"], state["train_end"]),
    }


def policy_bytes(hidden, hex_weights, byteorder="little"):
    """The policy file of the actor whose float32 weights the board sent as hex."""
    from microrl.policy import Policy, to_bytes
    from microrl.tasks.pendulum import ACTION_HIGH, ACTION_LOW
    from microrl.td3 import action_map

    params = array("f", bytes.fromhex(hex_weights))
    if byteorder != "little":
        params.byteswap()
    sizes = actor_critic_sizes(OBS_DIM, ACT_DIM, hidden)[0]
    config = TD3Config(hidden=tuple(hidden))
    scale, offset = action_map(ACTION_LOW, ACTION_HIGH, ACT_DIM)  # as TD3.policy() maps [-1, 1]
    try:
        return to_bytes(Policy(sizes, (config.activation, "tanh"), params=params, act_scale=scale, act_offset=offset))
    except ValueError as e:
        raise BoardTrainError("the weights the board sent do not make a policy: %s" % e) from None


def _rate(start, end):
    """Steps per second between two (step, time) progress marks, or None if too few."""
    if start is None or end is None or end[0] <= start[0] or end[1] <= start[1]:
        return None
    return (end[0] - start[0]) / (end[1] - start[1])


def _last_line(err):
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "?"
