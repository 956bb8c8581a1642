"""Train TD3 on the board itself (the device core's TD3, in MicroPython) against the board's own
copy of a task (microrl.tasks.NAME: a built-in task, a user's, a hardware task whose step drives
the board's actuators), with the progress streamed to the host, and the trained actor's weights
sent back over the serial line.

Before a run starts, the board reports its free heap, its largest free block and its allocation
block size; the RAM the run needs is its estimate (microrl.memory: every buffer TD3 allocates,
plus its objects) and a measured working margin. Sizes the user leaves out are chosen here: the
largest network of a measured ladder whose run fits with a useful replay buffer, and the replay
as large as the room left (no larger than the run can fill). The task's sizes come from the
board's copy of it (deploy.board_task_info): a hardware task need not load on the host.

The board runs programs/ in one session: usable_heap, task_info and train_prepare (what the
board has: read_board), then train_build (the agent) and train_loop (the steps, the weights
back): train_on_board's `programs` is that list, where a step between building and training
(starting from given weights, say) goes."""
import time
from array import array
from types import SimpleNamespace

from microrl import memory
from microrl.layout import actor_critic_sizes
from microrl.replay import bytes_per_transition
from microrl.td3 import TD3Config

from .deploy import DeployError, _exec, board_program, parse_task_info

# Usable heap (see USABLE_PROBE) a run needs beyond its estimate: room for a step's garbage, the
# run's own code compiled on the board, attribute tables that grow, arrays too big for the 1 kB
# pieces the probe counts. Measured as the smallest heap on which a size builds, trains and sends
# its weights back (bench/board_train.py --margin): 5.1-12.4 kB for 6 sizes from 8,8/16 to
# 64,64/64 on the 64-bit unix port, 10.8 kB for 16,16/32 on the 32-bit Cortex-M3 qemu port.
MARGIN = 16 * 1024

# The networks and batches a default run may take, largest first. A rung is taken when its run
# fits with at least MIN_REPLAY rows of replay (or all the steps of a shorter run): measured on
# Pendulum over 5 seeds x 20,000 steps (docs/on-board-training.md; the same ladder for every task), 16,16 with 5,700 rows returned -125 to
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


def task_shape(info):
    """A task's constants as the board reported them (deploy.board_task_info's dict), under the
    task interface's names, for the sizing below (which also takes a task module itself) and
    tasks.summary (its hooks success and final_error present, as None, when the board's copy has
    them)."""
    shape = SimpleNamespace(NAME=info["NAME"], OBS_DIM=info["OBS_DIM"], ACT_DIM=info["ACT_DIM"], ACTION_LOW=tuple(info["ACTION_LOW"]),
                            ACTION_HIGH=tuple(info["ACTION_HIGH"]), PARAMETERS=(0.0,) * info["PARAM_DIM"], STATE_DIM=info["STATE_DIM"],
                            RESET_DRAWS=info["RESET_DRAWS"], STEP_DRAWS=info["STEP_DRAWS"], EPISODE_STEPS=info["EPISODE_STEPS"],
                            OBS_HIGH=info.get("OBS_HIGH"), REWARD_BOUND=info.get("REWARD_BOUND"), DT=info.get("DT"))
    for hook in ("success", "final_error"):
        if info.get("has_" + hook):
            setattr(shape, hook, None)
    for name in ("ERROR_NAME", "TERMINATED_NAME"):
        if info.get(name) is not None:
            setattr(shape, name, info[name])
    return shape


def _default_task(task):
    if task is not None:
        return task
    from .. import tasks

    return tasks.builtin(tasks.DEFAULT)


def fixed_rows(task):
    """Whether the task's replay rows are 16-bit: it bounds its observations and rewards."""
    return getattr(task, "OBS_HIGH", None) is not None and getattr(task, "REWARD_BOUND", None) is not None


def row_bytes(task):
    """Bytes per replay row (transition) of the task."""
    return bytes_per_transition(task.OBS_DIM, task.ACT_DIM, fixed_rows(task))


def rows_for(steps, task=None):
    """Replay rows a run of `steps` steps can fill: one per step and a tail row per episode."""
    return steps + steps // _default_task(task).EPISODE_STEPS + 1


def estimate_bytes(hidden, batch, replay, gc_block=32, task=None):
    """Bytes of RAM a TD3 run of these sizes on the task (a module, or task_shape; default: the
    registry's default task) needs on a board with gc_block-byte allocation blocks, as a dict of
    parts and 'total' (the estimate and the working margin)."""
    task = _default_task(task)
    od, ad = task.OBS_DIM, task.ACT_DIM
    config = TD3Config(hidden=tuple(hidden), batch=batch, replay_capacity=max(2, replay))
    fixed = fixed_rows(task)
    allocated = memory.estimate_bytes(od, ad, config, gc_block, fixed, task=task)  # the task's environment arrays too
    parts = {"replay": memory.buffer_sizes(od, ad, config, fixed)[-2] + replay, "margin": margin_bytes(gc_block)}
    parts["networks, Adam and batch"] = allocated - parts["replay"]
    parts["total"] = allocated + parts["margin"]
    return parts


def replay_block_bytes(replay, task=None):
    """The biggest single buffer of a run (the replay rows): it needs one contiguous free block."""
    return replay * (row_bytes(_default_task(task)) - 1)


def fits(hidden, batch, replay, free, largest, gc_block=32, task=None):
    return estimate_bytes(hidden, batch, replay, gc_block, task)["total"] <= free and replay_block_bytes(replay, task) + gc_block <= largest


def largest_replay(hidden, batch, free, largest, gc_block=32, cap=None, task=None):
    """The most replay rows (up to cap) with which a run of these sizes fits, or 0."""
    lo, hi = 0, cap or 10**7
    if not fits(hidden, batch, 2, free, largest, gc_block, task):
        return 0
    lo = 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(hidden, batch, mid, free, largest, gc_block, task):
            lo = mid
        else:
            hi = mid - 1
    return lo


def choose(steps, free, largest, gc_block=32, hidden=None, batch=None, replay=None, task=None):
    """The sizes of a run on the task (default: the registry's default): those given, and for
    the rest the largest rung of LADDER that fits with a useful replay, the replay as large as
    fits (no more rows than the run fills). Returns (hidden, batch, replay, reason);
    BoardTrainError when nothing fits."""
    task = _default_task(task)
    wanted = rows_for(steps, task)
    useful = min(MIN_REPLAY, wanted)
    rungs = [(h, b) for h, b in LADDER if (hidden is None or tuple(hidden) == h) and (batch is None or batch == b)]
    if hidden is not None or batch is not None:
        rungs.append((tuple(hidden) if hidden is not None else LADDER[-1][0], batch if batch is not None else LADDER[-1][1]))
    if replay is not None:
        for h, b in rungs:
            if fits(h, b, replay, free, largest, gc_block, task):
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
                rows = largest_replay(h, b, free, largest, gc_block, cap=wanted, task=task)
                if rows >= least:
                    why = ("the largest network on the ladder that fits with " if least == useful else "the network that fits with ") + kind
                    why += "; the replay holds every step of the run" if rows == wanted else "; the replay fills the rest of the free heap"
                    return h, b, rows, why
    h, b = rungs[-1] if rungs else LADDER[-1]
    r = replay if replay is not None else min(SMALLEST_REPLAY, wanted)
    est = estimate_bytes(h, b, r, gc_block, task)
    detail = ", ".join("%s %.1f kB" % (k, v / 1024.0) for k, v in est.items() if k != "total")
    raise BoardTrainError(
        "this run needs about %.1f kB of RAM (%s), with %.1f kB in one block, but the board has %.1f kB usable after "
        "importing microrl, %.1f kB in its largest block: use a smaller --replay (%d bytes per transition), --batch or "
        "--hidden, or leave them out to have them chosen"
        % (est["total"] / 1024.0, detail, replay_block_bytes(r, task) / 1024.0, free / 1024.0, largest / 1024.0, row_bytes(task))
    )


# What a board can give to buffers: the bytes it can allocate in pieces of 1 kB, after a
# collection (programs/usable_heap.py). gc.mem_free() also counts the holes that importing leaves
# between objects, which no buffer fits in (15-35 kB of them here: 64-bit unix port, 32-bit
# Cortex-M3); the probe does not.
USABLE_PROBE = board_program("usable_heap")


def prepare_program(task_name):
    """The board side of a run's start: programs/task_info.py (the task imported as `task`, its
    constants), train_prepare.py (free heap, usable heap, largest block, block size, byte order,
    backend), after the usable-heap probe."""
    return USABLE_PROBE + board_program("task_info", TASK=task_name) + board_program("train_prepare")


def read_board(transport, task_name=None):
    """Free heap, largest free block, allocation block size, byte order and backend of the board
    with the training code and the task microrl.tasks.TASK_NAME imported (default: the
    registry's default task), and the task's constants (under 'task': task_shape)."""
    if task_name is None:
        from .. import tasks

        task_name = tasks.DEFAULT
    out, err = _exec(transport, prepare_program(task_name), 60)
    if err:
        message = _last_line(err)
        if "microrl.tasks." + task_name in message:
            raise BoardTrainError("no task %s on the board (%s): deploy it (train-on-board without --no-deploy, or microrl deploy --task)"
                                  % (task_name, message))
        raise BoardTrainError("importing microrl and the task %s on the board failed: %s" % (task_name, message))
    text = out.decode("ascii", "replace")
    fields = text.split("F ")[-1].split()
    free, block = int(fields[0]), int(fields[1])
    largest = int(text.split("max free sz:")[1].split()[0]) * block if "max free sz:" in text else free
    usable = int(text.split("U ")[-1].split()[0])
    try:
        task = task_shape(parse_task_info(text))
    except DeployError as e:
        raise BoardTrainError(str(e)) from None
    return {"free": free, "usable": usable, "largest": largest, "gc_block": block, "byteorder": fields[2], "backend": fields[3], "task": task,
            "task_name": task_name}


def default_warmup(steps, batch):
    """Random-action steps before training: the device core's default (five episodes), at most
    a quarter of a short run, at least one batch."""
    return max(batch, min(DEFAULT_WARMUP, steps // 4))


def train_on_board(transport, steps, hidden=None, batch=None, replay=None, warmup=None, seed=0, progress=None, every=None, say=None,
                   actor_lr=DEFAULT_LR, critic_lr=DEFAULT_LR, task=None):
    """Run training on the board over an mpremote transport in the raw REPL (microrl deployed,
    and the task: its name in the board's microrl.tasks, default the registry's default task).
    Sizes left as None are chosen to fit the board (choose()); say(text) is told the choice.
    A run whose actor becomes NaN or infinite stops on the board: BoardTrainError, no policy.
    progress(step, latest_return, mem_free) is called as lines arrive. Returns a dict with
    'policy_bytes' (the trained policy file), the sizes, 'task' (its constants as the board has
    them), 'mem_free_start', 'seconds', 'returns'."""
    board = read_board(transport, task)
    shape = board["task"]
    free, usable, largest_free, block = board["free"], board["usable"], board["largest"], board["gc_block"]
    chosen = [hidden is None, batch is None, replay is None]
    hidden, batch, replay, why = choose(steps, usable, largest_free, block, hidden, batch, replay, shape)
    est = estimate_bytes(hidden, batch, replay, block, shape)
    warmup_steps = default_warmup(steps, batch) if warmup is None else warmup
    if say:
        what = "chosen" if all(chosen) else ("given" if not any(chosen) else "given and chosen")
        say("board: %.1f kB free after importing microrl and the task %s, %.1f kB of it usable in 1 kB pieces (largest block %.1f kB, %d-byte "
            "blocks, %s kernels); sizes %s: hidden %s, batch %d, replay %d rows (%d bytes each): about %.1f kB with a %.0f kB margin (%s)"
            % (free / 1024.0, board["task_name"], usable / 1024.0, largest_free / 1024.0, block, board["backend"], what, ",".join(map(str, hidden)), batch,
               replay, row_bytes(shape), est["total"] / 1024.0, est["margin"] / 1024.0, why))
    every = every or max(1, min(50, steps // 100))
    settings = dict(HIDDEN=tuple(hidden), BATCH=batch, REPLAY=replay, WARMUP=warmup_steps, STEPS=steps, SEED=seed, EVERY=every,
                    OVERWRITE=REPLAY_OVERWRITE, ACTOR_LR=float(actor_lr), CRITIC_LR=float(critic_lr))
    # the agent is built, then trains (a step that starts it from given weights goes between)
    programs = [board_program("train_build", **settings), board_program("train_loop", **settings)]
    code = "".join(programs)
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
    data = policy_bytes(hidden, "".join(state["weights"]), board["byteorder"], shape)
    return {
        "policy_bytes": data,
        "task": board["task_name"],
        "task_name": shape.NAME,
        "task_shape": shape,
        "hidden": list(hidden),
        "batch": batch,
        "replay": replay,
        "warmup": warmup_steps,
        "actor_lr": actor_lr,
        "critic_lr": critic_lr,
        "bytes_per_transition": row_bytes(shape),
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


def policy_bytes(hidden, hex_weights, byteorder="little", task=None):
    """The policy file of the actor whose float32 weights the board sent as hex, for the task (a
    module or task_shape: its sizes and action range; default: the registry's default task)."""
    from microrl.policy import Policy, to_bytes
    from microrl.td3 import action_map

    task = _default_task(task)
    params = array("f", bytes.fromhex(hex_weights))
    if byteorder != "little":
        params.byteswap()
    sizes = actor_critic_sizes(task.OBS_DIM, task.ACT_DIM, hidden)[0]
    config = TD3Config(hidden=tuple(hidden))
    scale, offset = action_map(task.ACTION_LOW, task.ACTION_HIGH, task.ACT_DIM)  # as TD3.policy() maps [-1, 1]
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
