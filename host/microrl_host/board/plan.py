"""What a deploy would take on a board, before anything is written (`microrl deploy --plan`): the
flash of the device core, the native kernels and the policy, their heap, whether they fit, the
heap of on-board training, and the time of a policy step and a training step from instruction
counts of the kernels on an emulated core, beside the RLtools paper's Table 2.

For the board at hand (its own free heap, filesystem and clock, read without writing) or for a
named board type (BOARD_TYPES: nominal figures). The estimates use plan_data.json (written by
bench/board_plan_data.py): the kernels' instructions per call sequence on an emulated core, and the
heap the device core and a policy took on the unix port."""
import json
import os
import tempfile

from microrl.layout import actor_critic_sizes, param_count

from . import native
from .deploy import DeployError, board_sources, compile_mpy, mpy_cross_version

DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plan_data.json")
PAPER = "RLtools/BackpropTools paper, Table 2: 13-64-64-4 relu forward, µs"


class BoardType:
    """A board's nominal figures: its chip's RAM, flash and clock, and what MicroPython leaves of
    them (free heap after boot without PSRAM, the filesystem of its standard firmware), typical
    values that firmware and board change. paper: Table 2's µs (generic, DSP library, optimized)."""

    def __init__(self, name, arch, cpu, clock_mhz, ram_kb, heap_kb, flash_mb, fs_kb, fpu, paper=None, note=None):
        self.name, self.arch, self.cpu, self.clock_mhz = name, arch, cpu, clock_mhz
        self.ram_kb, self.heap_kb, self.flash_mb, self.fs_kb, self.fpu = ram_kb, heap_kb, flash_mb, fs_kb, fpu
        self.paper, self.note = paper, note

    def as_dict(self):
        return dict(vars(self))


BOARD_TYPES = {
    "esp32": BoardType("ESP32", "xtensawin", "Xtensa LX6, 2 cores", 240, 520, 110, 4, 2048, "single", (4282, 279, 333),
                       "heap without PSRAM (110-160 KB free after boot)"),
    "esp32-s3": BoardType("ESP32-S3", "xtensawin", "Xtensa LX7, 2 cores", 240, 512, 150, 8, 6144, "single", None,
                          "heap without PSRAM; boards with PSRAM have megabytes"),
    "teensy4.1": BoardType("Teensy 4.1", "armv7emdp", "Cortex-M7 (i.MX RT1062)", 600, 1024, 400, 8, 7168, "double", (64, 45, 41),
                           "loads the armv7emsp kernels"),
    "rp2040": BoardType("RP2040 (Raspberry Pi Pico)", "armv6m", "Cortex-M0+, 2 cores", 125, 264, 190, 2, 1408, None, None,
                        "no FPU: float kernels in software, int16 policies run in integers"),
    "esp32-c3": BoardType("ESP32-C3", "rv32imc", "RISC-V RV32IMC", 160, 400, 150, 4, 2048, None, (8716, 6950, 6645),
                          "no FPU: float kernels in software, int16 policies run in integers"),
}
REFERENCE = [13, 64, 64, 4]  # Table 2's network
# instructions a core of the architecture may complete in a cycle: the Cortex-M7 (armv7emsp and
# armv7emdp boards) issues two; the others here one. Times from counts divide by it to stay lower bounds
ISSUE_WIDTH = {"armv7emsp": 2, "armv7emdp": 2}


def load_data(path=DATA_PATH):
    with open(path) as f:
        return json.load(f)


def macs(sizes):
    return sum(a * b for a, b in zip(sizes[:-1], sizes[1:]))


def is_int16(policy):
    return type(policy).__name__ == "QuantisedPolicy"


def policy_data_bytes(policy):
    """A policy's own arrays on the heap: its parameters (float32; int16: 2 bytes a weight, 4 a
    bias) and one float per unit of every layer (its activations)."""
    sizes = list(policy.sizes)
    if is_int16(policy):
        weights = macs(sizes)
        data = 2 * weights + 4 * (policy.n_params - weights)
    else:
        data = 4 * policy.n_params
    return data + 4 * sum(sizes)


def _objects(value, word_bits):
    """Object bytes measured on the 64-bit unix port, scaled for a port of word_bits."""
    return value if word_bits == 64 else value // 2


def _hidden_activation(policy):
    from microrl.activations import NAMES

    acts = getattr(policy, "acts", None) or []
    return NAMES[acts[0]] if acts else None


def _counts_for(data, arch, what, precision=None):
    """The recorded count entries of this what for arch (or an arch this board loads)."""
    found = []
    for candidate in native.loadable_archs(arch):
        found = [c for c in data["counts"] if c["arch"] == candidate and c["what"] == what and (precision is None or c.get("precision") == precision)]
        if found:
            break
    return found


def _mhz(arch, clock_mhz):
    """Instructions a µs at most (clock_mhz None: unknown)."""
    return clock_mhz * ISSUE_WIDTH.get(arch, 1) if clock_mhz else None


def step_time(data, arch, clock_mhz, sizes, precision, activation):
    """Instructions and µs (at the most instructions a cycle the core can issue: a lower bound) of
    the kernels of one policy step of a network of these sizes, scaled by multiply-adds from the
    recorded forward; None when no count for the arch is recorded."""
    entries = _counts_for(data, arch, "forward", precision)
    if not entries:
        return None
    entry = next((e for e in entries if e.get("hidden_activation") == activation), entries[0])
    instructions = entry["instructions"] * macs(sizes) / macs(entry["network"])
    mhz = _mhz(arch, clock_mhz)
    return {"instructions": round(instructions), "us": instructions / mhz if mhz else None, "source": entry["source"],
            "from": "%s forward (%s, %s)" % ("-".join(map(str, entry["network"])), entry.get("hidden_activation"), entry["precision"])}


def training_time(data, arch, clock_mhz, obs_dim, act_dim, hidden, batch):
    """Instructions and ms of the kernels of one TD3 training step (an environment step's action
    and an update of batch `batch`), scaled by parameters and batch from the recorded step."""
    entries = _counts_for(data, arch, "td3_step")
    if not entries:
        return None
    e = entries[0]
    actor, critic = actor_critic_sizes(obs_dim, act_dim, list(hidden))
    ours = (param_count(actor) + param_count(critic)) * batch
    theirs = (param_count(e["network"]) + param_count(e["critic"])) * e["batch"]
    instructions = e["instructions"] * ours / theirs
    mhz = _mhz(arch, clock_mhz)
    return {"instructions": round(instructions), "ms": instructions / mhz / 1000.0 if mhz else None, "source": e["source"],
            "from": "TD3 step %s actor, batch %d" % ("-".join(map(str, e["network"])), e["batch"])}


def _sizes(paths):
    return {p: os.path.getsize(p) for p in paths}


def flash_files(arch, board_mpy, mpy, use_native, board_tasks, policy_path, version=None):
    """{part: bytes} of what deploy copies: core (with the tasks), kernels, policy; and the
    kernels' path. version: the board's MicroPython version (for mpy-cross's advice)."""
    sources = board_sources(board_tasks)
    if mpy:
        with tempfile.TemporaryDirectory() as tmp:
            info = {"mpy_version": native.mpy_version(board_mpy) if board_mpy else mpy_cross_version(), "arch": arch,
                    "version": version or ("of the board's MicroPython",)}
            core = sum(os.path.getsize(p) for p in compile_mpy(sources, info, tmp).values())
    else:
        core = sum(os.path.getsize(p) for p in sources.values())
    parts = {"core": core, "kernels": 0, "policy": os.path.getsize(policy_path) if policy_path else 0}
    kernels_path = None
    if use_native:
        kernels_path = native.mpy_for_arch(arch, board_mpy) if arch else None
        if kernels_path:
            parts["kernels"] = os.path.getsize(kernels_path)
    return parts, kernels_path


def plan_board(target, policy=None, policy_path=None, mpy=False, use_native=True, board_tasks=(), data=None, task=None):
    """The report for one board. target: {"name", "arch", "board_mpy" (None for a type),
    "clock_mhz", "heap_free", "fs_free", "word_bits", "fpu", "paper", "nominal"}."""
    from . import train as board_train

    data = data or load_data()
    arch = target["arch"]
    files, kernels_path = flash_files(arch, target.get("board_mpy"), mpy, use_native and not target.get("no_fpu_kernels"), board_tasks, policy_path,
                                      target.get("version"))
    flash_total = sum(files.values())
    word = target["word_bits"]
    heap_data = data.get("heap", {})
    kind = "int16" if policy is not None and is_int16(policy) else "float"
    measured = heap_data.get(kind) or heap_data.get("float") or {}
    heap = {"core": _objects(measured.get("core_bytes", 0), word), "kernels": files["kernels"], "policy": 0}
    if policy is not None:
        heap["policy"] = policy_data_bytes(policy) + _objects(measured.get("policy_constant_bytes", 0), word)
    heap_total = sum(heap.values())
    report = {"board": target["name"], "arch": arch, "nominal": target["nominal"], "clock_mhz": target["clock_mhz"], "fpu": target["fpu"],
              "flash": dict(files, total=flash_total, free=target["fs_free"], format="mpy" if mpy else "py",
                            fits=None if target["fs_free"] is None else flash_total <= target["fs_free"]),
              "heap": dict(heap, total=heap_total, free=target["heap_free"], fits=heap_total <= target["heap_free"] if target["heap_free"] else None),
              "kernels": os.path.relpath(kernels_path, native.HERE) if kernels_path else None,
              "paper_table2_us": dict(zip(("generic", "dsp", "optimized"), target["paper"])) if target.get("paper") else None}
    from .mip import package_for

    board_mpy = target.get("board_mpy") or (6 | 3 << 8 | native.MPY_ARCHS.index(arch) << 10 if arch else None)
    report["mip_package"] = "microrl" if target.get("no_fpu_kernels") or board_mpy is None else package_for(board_mpy)
    report["note"] = target.get("note")
    ref = step_time(data, arch, target["clock_mhz"], REFERENCE, "float32", "relu")
    report["reference_forward"] = ref  # Table 2's network on our kernels, for the comparison
    if policy is not None:
        report["policy"] = {"describe": policy.describe(), "bytes": files["policy"], "parameters": policy.n_params}
        report["policy_step"] = step_time(data, arch, target["clock_mhz"], list(policy.sizes), "int16" if kind == "int16" else "float32", _hidden_activation(policy))
        # the same network exported to int16 (microrl export --int16): integer kernels, no FPU needed
        report["policy_step_int16"] = step_time(data, arch, target["clock_mhz"], list(policy.sizes), "int16", _hidden_activation(policy)) if kind == "float" else None
        hidden = list(policy.sizes[1:-1])
        from microrl.td3 import TD3Config

        config = TD3Config()
        train = {"hidden": hidden, "batch": config.batch, "replay_default": config.replay_capacity}
        if task is not None and target["heap_free"]:
            gc_block = 32 if word == 64 else 16
            est = board_train.estimate_bytes(hidden, config.batch, config.replay_capacity, gc_block, task)
            room = target["heap_free"] - heap["core"] - heap["kernels"]
            train.update(bytes=est["total"], fits=est["total"] <= room,
                         largest_replay=board_train.largest_replay(hidden, config.batch, room, room, gc_block, config.replay_capacity, task))
            train["step"] = training_time(data, arch, target["clock_mhz"], task.OBS_DIM, task.ACT_DIM, hidden, config.batch)
            try:  # what `microrl train-on-board --steps 10000` would choose in that room
                h, b, rows, _ = board_train.choose(config.steps, room, room, gc_block, task=task)
                train["chosen"] = {"steps": config.steps, "hidden": list(h), "batch": b, "replay": rows,
                                   "bytes": board_train.estimate_bytes(h, b, rows, gc_block, task)["total"],
                                   "step": training_time(data, arch, target["clock_mhz"], task.OBS_DIM, task.ACT_DIM, h, b)}
            except board_train.BoardTrainError:
                train["chosen"] = None
        report["training"] = train
    return report


def type_target(key):
    t = BOARD_TYPES[key]
    return {"name": t.name, "arch": t.arch, "board_mpy": None, "clock_mhz": t.clock_mhz, "heap_free": t.heap_kb * 1024, "fs_free": t.fs_kb * 1024,
            "word_bits": 32, "fpu": t.fpu, "paper": t.paper, "nominal": True, "note": t.note, "no_fpu_kernels": False}


def board_target(info, clock_hz=None):
    """The board at hand, from deploy.board_info's answer (and machine.freq())."""
    arch = info["arch"]
    paper = None
    for t in BOARD_TYPES.values():  # the paper's figures for a board the machine string names
        if t.paper and t.name.upper().replace("-", "") in (info.get("machine") or "").upper().replace("-", "") and t.arch == arch:
            paper = t.paper
    return {"name": "the board at hand: MicroPython %s on %s%s" % (".".join(map(str, info["version"])), info["platform"], " (%s)" % info["machine"] if info.get("machine") else ""),
            "arch": arch, "board_mpy": info["mpy"], "version": tuple(info["version"]), "clock_mhz": clock_hz / 1e6 if clock_hz else None, "heap_free": info["mem_free"],
            "fs_free": info["fs_free"] if info["fs_free"] >= 0 else None, "word_bits": 64 if arch in ("x64",) else 32,
            "fpu": None, "paper": paper, "nominal": False, "no_fpu_kernels": native.is_esp32s2(info.get("machine"))}


def board_clock(transport):
    """machine.freq() of the board in Hz, or None (read only)."""
    from .deploy import board_exec

    try:
        # (stm32's freq() is a tuple, the core clock first)
        code = "try:\n import machine\n f = machine.freq()\n print('F', f[0] if isinstance(f, tuple) else f)\nexcept Exception:\n print('F -')\n"
        out = board_exec(transport, code).split()
        f = out[out.index("F") + 1]
        return int(f) if f != "-" else None
    except (DeployError, ValueError, IndexError):
        return None

