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
from microrl.refusals import count

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
# train-on-board's learning settings beside the device core's TD3Config defaults (the host's
# stay as they are). A full replay starts each new episode at a random row (replay_overwrite): with
# a ring, 16,16 and 5,700 rows forgot the swing-up once the buffer held only later episodes.
# Exploration noise 0.3 (the device core's: 0.1): a 16,16 TD3 with a replay of ~25 episodes forgot
# the swing-up from starts its recent, narrow episodes no longer held (docs/on-board-training.md,
# "Learned, then lost"). Rewards scaled by 0.1 in the critics' targets (the device core's: 1): on
# the 160K virtual board, seeds 0-24, 19 of 25 final policies at -200 or better against 16 of 25,
# the worst -598 against -851 (docs/on-board-training.md, "Reward scale").
BOARD_LEARNING = dict(replay_overwrite="random", exploration_noise=0.3, reward_scale=0.1)
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
    given = [flag for flag, value in (("--hidden", hidden), ("--batch", batch), ("--replay", replay)) if value is not None]
    if given:  # smaller values of those given, or those chosen
        advice = "use a smaller %s (the replay takes %d bytes per transition), or leave %s out to have %s chosen" % (
            " or ".join(given), row_bytes(task), " and ".join(given), "it" if len(given) == 1 else "them")
    else:  # the smallest sizes were tried: no option helps
        advice = ("no smaller run learns: train on the host (microrl train %s --hidden 16,16) and deploy the policy, "
                  "which runs on this board, or train on a board with more RAM" % task.NAME)
    raise BoardTrainError(
        "this run needs about %.1f kB of RAM (%s), with %.1f kB in one block, but the board has %.1f kB usable after "
        "importing microrl, %.1f kB in its largest block: %s"
        % (est["total"] / 1024.0, detail, replay_block_bytes(r, task) / 1024.0, free / 1024.0, largest / 1024.0, advice)
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


# ---------------------------------------------------------------- starting from a host run

# the device TD3's networks (attribute paths on the board's `agent`) and the host checkpoint's
# arrays they start from: weights, Adam moments, targets (the same flat layout, microrl.layout)
INIT_ARRAYS = (
    ("actor.params", "actor.params"), ("actor.m", "actor.m"), ("actor.v", "actor.v"), ("actor_target.params", "actor_target.params"),
    ("critics[0].params", "critic1.params"), ("critics[0].m", "critic1.m"), ("critics[0].v", "critic1.v"),
    ("critics[1].params", "critic2.params"), ("critics[1].m", "critic2.m"), ("critics[1].v", "critic2.v"),
    ("critic_targets[0].params", "critic1_target.params"), ("critic_targets[1].params", "critic2_target.params"),
)
INIT_CHUNK = 256  # floats per line of the program that writes them (1 kB as hex)
INIT_LINES = 2  # lines a program: compiling one takes a few kB
# heap the writing needs beside the built agent (a program's text, its compiled code, a chunk's
# bytes and floats): kept out of what the sizes may take. A 256K virtual board whose replay took
# the rest ran out at 2 kB
INIT_ROOM = 12 * 1024


class HostRun:
    """A host TD3 run to start the board's TD3 from (train_on_board's init): its checkpoint's
    arrays, hidden sizes, updates so far, settings and where it came from."""

    def __init__(self, path, meta, arrays):
        self.path = path
        self.meta = meta
        self.arrays = arrays
        sizes = [int(v) for v in arrays["actor.sizes"]]
        self.obs_dim, self.act_dim, self.hidden = sizes[0], sizes[-1], tuple(sizes[1:-1])
        self.updates = int(arrays["counters"][1])
        self.config = meta.get("config", {})
        self.task = meta.get("task")


def read_host_run(path):
    """The HostRun of a run folder (its checkpoint.npz) or a checkpoint file; BoardTrainError
    saying what is wrong (not TD3: the board trains TD3; no checkpoint)."""
    import os

    from ..algos import checkpoint

    file = os.path.join(path, "checkpoint.npz") if os.path.isdir(path) else path
    if not os.path.exists(file):
        what = "run folder %s has no checkpoint.npz" % path if os.path.isdir(path) else "no run folder or checkpoint at %s" % path
        raise BoardTrainError("--init: %s (microrl train writes one in the run folder, PREFIX.run/)" % what)
    try:
        meta, arrays = checkpoint.read(file)
    except checkpoint.CheckpointError as e:
        raise BoardTrainError("--init: %s" % e) from None
    if meta.get("algo") != "td3":
        raise BoardTrainError("--init: %s is a %s run; the board trains TD3: start it from a TD3 run (microrl train --algo td3)"
                              % (path, str(meta.get("algo", "?")).upper()))
    missing = [h for _, h in INIT_ARRAYS if h not in arrays] + [k for k in ("actor.sizes", "counters") if k not in arrays]
    if missing:
        raise BoardTrainError("--init: %s lacks %s: not a TD3 checkpoint of this version" % (file, ", ".join(missing[:4])))
    run = HostRun(file, meta, arrays)
    if run.config.get("activation", "relu") != "relu":
        raise BoardTrainError("--init: the run's networks use %s; the board's TD3 uses relu" % run.config["activation"])
    return run


def init_programs(run):
    """The board programs that write the host run's arrays into the board's `agent` (built by
    train_build.py), a few kB each, then set its update counts and print a check sum per array
    ('S name sum'), which init_check compares with the host's."""
    import numpy as np

    out = ["from binascii import unhexlify\nimport struct\n"
           "def _put(dst, off, h):\n b = unhexlify(h)\n v = struct.unpack('<%df' % (len(b) // 4), b)\n"
           " for i in range(len(v)):\n  dst[off + i] = v[i]\n"]
    for board, host in INIT_ARRAYS:
        values = np.ascontiguousarray(run.arrays[host], dtype="<f4")
        lines = []
        for off in range(0, values.size, INIT_CHUNK):
            lines.append("_put(agent.%s, %d, '%s')\n" % (board, off, values[off:off + INIT_CHUNK].tobytes().hex()))
        for k in range(0, len(lines), INIT_LINES):
            out.append("gc.collect()\n" + "".join(lines[k:k + INIT_LINES]))
    delay = int(run.config.get("policy_delay", 2))
    pairs = "(%s)" % "".join("(%r, agent.%s), " % (b, b) for b, _ in INIT_ARRAYS)
    out.append("agent.updates = %d\nagent.critics[0].adam_step_count = agent.critics[1].adam_step_count = %d\nagent.actor.adam_step_count = %d\n"
               "for _n, _a in %s:\n _s = 0.0\n for _x in _a:\n  _s += _x\n print('S', _n, repr(_s))\n_put = _a = None\ngc.collect()\n"
               % (run.updates, run.updates, run.updates // delay, pairs))
    return out


def init_check(run, text):
    """BoardTrainError unless every array's sum on the board ('S name sum' lines) is the host's."""
    import numpy as np

    sums = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "S":
            sums[parts[1]] = float(parts[2])
    for board, host in INIT_ARRAYS:
        want = float(np.sum(run.arrays[host], dtype=np.float64))
        scale = float(np.sum(np.abs(run.arrays[host]), dtype=np.float64)) + 1e-30
        if board not in sums or abs(sums[board] - want) > 1e-4 * scale:  # summed in float32 on many boards
            raise BoardTrainError("--init: the board's %s does not hold the host run's %s (sum %r on the board, %r here)" % (board, host, sums.get(board), want))


def _run(transport, code, timeout):
    """_exec, its failures as BoardTrainError."""
    try:
        return _exec(transport, code, timeout)
    except DeployError as e:
        raise BoardTrainError(str(e)) from None


def train_on_board(transport, steps, hidden=None, batch=None, replay=None, warmup=None, seed=0, progress=None, every=None, say=None,
                   actor_lr=DEFAULT_LR, critic_lr=DEFAULT_LR, task=None, init=None):
    """Run training on the board over an mpremote transport in the raw REPL (microrl deployed,
    and the task: its name in the board's microrl.tasks, default the registry's default task).
    Sizes left as None are chosen to fit the board (choose()); say(text) is told the choice.
    A run whose actor becomes NaN or infinite stops on the board: BoardTrainError, no policy.
    progress(step, latest_return, mem_free) is called as lines arrive. Returns a dict with
    'policy_bytes' (the trained policy file), the sizes, 'task' (its constants as the board has
    them), 'mem_free_start', 'seconds', 'returns'. init: a HostRun (read_host_run) whose actor,
    critics, targets and Adam state the board's TD3 starts from (its hidden sizes, then; warm-up
    by default only the batch's rows: the actor acts from the first step)."""
    board = read_board(transport, task)
    shape = board["task"]
    free, usable, largest_free, block = board["free"], board["usable"], board["largest"], board["gc_block"]
    chosen = [hidden is None, batch is None, replay is None]
    if init is not None:
        if (init.obs_dim, init.act_dim) != (shape.OBS_DIM, shape.ACT_DIM):
            raise BoardTrainError("--init: the run %s has %s and %s, the task %s on the board %d and %d"
                                  % (init.path, count(init.obs_dim, "observation"), count(init.act_dim, "action"), board["task_name"], shape.OBS_DIM, shape.ACT_DIM))
        if hidden is not None and tuple(hidden) != init.hidden:
            raise BoardTrainError("--init: the run's networks have hidden layers %s, not --hidden %s: leave --hidden out"
                                  % (",".join(map(str, init.hidden)), ",".join(map(str, hidden))))
        hidden = init.hidden
        try:
            hidden, batch, replay, why = choose(steps, usable - INIT_ROOM, largest_free - INIT_ROOM, block, hidden, batch, replay, shape)
        except BoardTrainError as e:
            raise BoardTrainError("--init: the host run's networks (hidden %s: actor, two critics, their targets and Adam moments) do not fit "
                                  "on this board: %s; train on the host with a smaller --hidden (16,16 fits a 112K board)"
                                  % (",".join(map(str, init.hidden)), str(e).split(": use a smaller")[0])) from None
        why = "the host run's networks; " + why
        if warmup is None:
            warmup = min(steps, batch)
        if actor_lr == DEFAULT_LR and critic_lr == DEFAULT_LR:  # the host run's rates unless given
            actor_lr = float(init.config.get("actor_lr", actor_lr))
            critic_lr = float(init.config.get("critic_lr", critic_lr))
    else:
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
                    LEARNING=BOARD_LEARNING, ACTOR_LR=float(actor_lr), CRITIC_LR=float(critic_lr))
    # the agent is built, then trains (from the host run's arrays, written between)
    if init is not None:
        out, err = _run(transport, board_program("train_build", **settings), 120)
        if err:
            raise BoardTrainError("building TD3 on the board failed: %s" % _last_line(err))
        built = out.decode("ascii", "replace").split()
        state_mem = int(built[built.index("M") + 1]) if "M" in built[:-1] else None
        text = ""
        for program in init_programs(init):
            out, err = _run(transport, program, 60)
            if err:
                raise BoardTrainError("writing the host run's networks on the board failed: %s" % _last_line(err))
            text += out.decode("ascii", "replace")
        init_check(init, text)
        if say:
            say("board: TD3 starts from %s (%s; actor, critics, targets and Adam moments, checked)" % (init.path, count(init.updates, "update")))
        code = board_program("train_loop", **settings)
    else:
        code = board_program("train_build", **settings) + board_program("train_loop", **settings)
    # timestamps of progress lines after warm-up: the speed of steps that train, not of random play
    state = {"buf": b"", "returns": [], "mem": None, "step": 0, "done": False, "train_start": None, "train_end": None, "weights": []}
    if init is not None:
        state["mem_after_alloc"] = state_mem

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
        "init": init.path if init is not None else None,
        "init_updates": init.updates if init is not None else None,
        "hidden": list(hidden),
        "batch": batch,
        "replay": replay,
        "warmup": warmup_steps,
        "actor_lr": actor_lr,
        "critic_lr": critic_lr,
        "learning": dict(BOARD_LEARNING),
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
