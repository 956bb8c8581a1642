"""Bad command lines against every `microrl` subcommand (issue 30): wrong types, numbers out of
range, NaN and infinities, huge values, missing, unreadable and special files (a named pipe, a
device node, a socket, a folder where a file goes, a file where a folder goes, a symbolic link
loop, a path under a file, two missing folders), damaged policy files. Each line must end in one
line on stderr naming the problem and exit code 2, with no traceback, before any work, and
without writing anything: the bench runs each in an empty folder, and checks that folder and the
fixtures' folder are unchanged afterwards. A line still running after --timeout seconds counts
as accepted (e.g. `--steps 10**30` training for ever).

    python bench/bad_command_lines.py [--only train,eval] [--workers 2] [--timeout 30] [--json] [--list]

Prints the count tried and the count of each failure (traceback, exit other than 2, more than
one line, ran on, wrote files), and every failing line. Target: 0 of each.

Unreadable files: as root, chmod 000 does not stop reads, so those lines run under
`setpriv` without the capabilities that let root ignore file modes (CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH); without setpriv they are skipped, and the report says so. Lines needing a
live board (a board that answers) are not here: tests/test_board_*.py cover those."""
import argparse
import json
import os
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import time

from _paths import DEVICE, HOST, ROOT, on_path  # noqa: F401  (ROOT: kept a name of this module)

on_path(DEVICE, HOST)

from microrl.perturb import MAX_DELAY  # noqa: E402
from microrl.tasks import quadrotor as Q  # noqa: E402

IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SETPRIV = shutil.which("setpriv")
DROP_DAC = ["--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-dac_override,-dac_read_search"]

# values that are bad for every option of their kind
NOT_INT = ["abc", "1.5", "", "1e3", "0x10"]
NOT_FLOAT = ["abc", "", "1,5"]
NON_FINITE = ["nan", "inf", "-inf", "1e999"]
HUGE = [str(10**30), str(2**64)]

# file fixtures (made by Fixtures): placeholders in a case's argv
BAD_INPUTS = ["{missing}", "{folder}", "{fifo}", "{node}", "{socket}", "{empty}", "{garbage}", "{text}", "{truncated}", "{badcrc}",
              "{loop}", "{underfile}", "{longname}", "{unreadable}", "{denormal}", "{nonzero_reserved}", "{nonzero_padding}"]
BAD_OUTPUTS = ["{fifo}", "{node}", "{socket}", "{folder}", "{deep}/x.mrlp", "{underfile}", "{loop}", "{longname}", "/proc/microrl-x",
               "{link_to_file}", "{dangling_link}", "/proc/self/fd/1"]  # (never the machine's /dev/stdout: a regression would replace it)
# a task (train's TASK, --task): names that are no task, special files, Python files that are no task
BAD_TASKS = ["nosuchtask", "", "nosuch.module", "gym:nosuch", "{missing}", "{text}", "{fifo}", "{folder}", "{loop}", "{longname}",
             "{task_lacking}", "{task_syntax}", "{task_raises}", "{task_exits}"]
# --latency-from FILE: files that are no `microrl bench serial --json` output, or hold no usable round trip
LATENCY_FILES = ["{missing}", "{folder}", "{fifo}", "{node}", "{socket}", "{empty}", "{garbage}", "{text}", "{loop}", "{underfile}",
                 "{longname}", "{unreadable}", "{bench_no_p50}", "{bench_zero_p50}", "{bench_nan_p50}", "{bench_inf_p50}", "{bench_huge_p50}",
                 "{bench_bool_p50}", "{bench_text_p50}", "{bench_list}", "{bench_deep}", ""]
BAD_FOLDERS = ["{text}", "{fifo}", "{node}", "{socket}", "{deep}/run", "{underfile}", "{loop}", "{longname}", "/proc/microrl-run"]


def ints(flag, low, huge=True, extra=()):
    """Bad values of a whole-number option whose smallest valid value is low."""
    return [[flag, v] for v in NOT_INT + NON_FINITE[:2] + [str(low - 1), str(low - 10**30)] + (HUGE if huge else []) + list(extra)]


def floats(flag, below=None, extra=()):
    """Bad values of a number option: not numbers, non-finite, below its range."""
    return [[flag, v] for v in NOT_FLOAT + NON_FINITE + ([below] if below is not None else []) + list(extra)]


def cases():
    """[(subcommand, argv)]: argv after `microrl`, with {fixture} placeholders."""
    out = []

    def add(command, base, variants):
        for v in variants:
            out.append((command, list(base) + list(v)))

    # ---- train
    train = ["train", "pendulum", "--out", "{out}", "--run-dir", "{run}"]
    add("train", train, ints("--steps", 1) + ints("--seed", 0, extra=[str(2**32)]) + ints("--checkpoint-every", 0) + ints("--eval-every", 0)
        + ints("--eval-episodes", 0) + ints("--batch", 1) + ints("--replay-capacity", 1, extra=[str(10**12)]) + ints("--policy-delay", 1)
        + ints("--warmup", 0) + ints("--threads", 1, extra=["3"]))
    add("train", train, floats("--gamma", "0", ["1.5"]) + floats("--tau", "0", ["2"]) + floats("--actor-lr", "0") + floats("--critic-lr", "-1")
        + floats("--exploration-noise", "-1") + floats("--target-noise", "-0.1") + floats("--target-noise-clip", "-1"))
    add("train", train, [["--hidden", v] for v in ["0", "a,b", "64,,64", "-1", "1.5", "", ",", "1000000,1000000", "70000", "65536", "64," * 300 + "64", str(10**30)]])
    add("train", train, [["--activation", "nosuch"], ["--algo", "nosuch"], ["--algo", "ppo", "--batch", "10"], ["--envs", "4"], ["--resume"],
                         ["--steps"], ["--nosuch-option"], ["--json", "--quiet", "--steps", "-5"]])
    add("train", ["train", "pendulum", "--algo", "sac", "--out", "{out}", "--run-dir", "{run}"],
        floats("--alpha-lr", "0") + floats("--initial-alpha", "0") + floats("--target-entropy"))
    add("train", [], [["train", t, "--out", "{out}", "--run-dir", "{run}"] for t in ["nosuchtask", "", "CartPole-v1", "Pendulum-v99", "../../etc/passwd", "gym:nosuch"]])
    add("train", [], [["train", t, "--out", "{out}", "--run-dir", "{run}"] for t in BAD_TASKS if t not in ("nosuchtask", "")])
    add("train", [], [["train"], ["train", "pendulum", "extra-arg"]])
    add("train", ["train", "pendulum", "--steps", "300"], [["--out", o, "--run-dir", "{run}"] for o in BAD_OUTPUTS]
        + [["--out", "{out}", "--run-dir", d] for d in BAD_FOLDERS] + [["--out", "{out}", "--run-dir", "{out}"]])
    add("train", ["train", "pendulum", "--steps", "300", "--resume", "--out", "{out}"],
        [["--run-dir", d] for d in ("{missing}", "{run_fifo_ckpt}", "{run_garbage_ckpt}", "{run_unreadable_ckpt}", "{folder}",
                                    "{run_deep_meta_ckpt}", "{run_list_meta_ckpt}")])
    add("train", ["train", "pendulum", "--steps", "300", "--out", "{out}"], [["--run-dir", "{run_deep_held}"]])
    # the learning settings added with issue 33, the sim-to-real options (docs/sim-to-real.md) and --tensorboard
    add("train", train, [["--set", "lr_end=" + v] for v in NOT_FLOAT + NON_FINITE + ["-0.1", "1.5", "-1e30"]]
        + [["--set", "lr_end=0.5", "--algo", "ppo"], ["--set", "model_horizon=10", "--algo", "sac"], ["--set", "nosuch=1"], ["--set", "lr_end"]]
        + ints("--action-delay", 0, extra=[str(MAX_DELAY + 1)])
        + [["--latency-from", f] for f in LATENCY_FILES] + [["--latency-from", "{bench_ok}", "--action-delay", "1"],
           ["--no-pending-actions"], ["--no-pending-actions", "--action-delay", "0"], ["--latency-from"], ["--action-delay"]]
        + [["--tensorboard", d] for d in BAD_FOLDERS] + [["--resume", "--overwrite"]])
    add("train", [], [["train", t, "--out", "{out}", "--run-dir", "{run}"] + v for t in ("Pendulum-v1",)
                      for v in (["--action-delay", "1"], ["--latency-from", "{bench_ok}"], ["--nominal"], ["--no-pending-actions", "--action-delay", "1"])])
    add("train-ppo", ["train", "inverted_pendulum", "--algo", "ppo", "--out", "{out}", "--run-dir", "{run}"],
        floats("--init-std", "0", ["-1"]) + [["--action-delay", "1"], ["--latency-from", "{bench_ok}"], ["--nominal"],
                                                     ["--no-pending-actions"], ["--policy-delay", "2"], ["--set", "lr_end=0.5"]])
    ppo = ["train", "inverted_pendulum", "--algo", "ppo", "--out", "{out}", "--run-dir", "{run}"]
    add("train-ppo", ppo, ints("--envs", 1) + ints("--rollout-steps", 1) + ints("--epochs", 1) + ints("--minibatches", 1)
        + ints("--threads", 1) + floats("--lr", "0") + floats("--clip-coef", "0") + floats("--gae-lambda", "-1", ["2"])
        + floats("--target-kl", "0") + floats("--max-grad-norm", "-1") + floats("--ent-coef", "-1") + floats("--vf-coef", "0")
        + [["--hidden", "1000000,1000000"], ["--hidden", "70000"], ["--steps", str(10**30)], ["--seed", str(2**64)], ["--policy-delay", "2"]])

    # ---- eval
    add("eval", ["eval"], [[p] for p in BAD_INPUTS] + [[p, "--env", "Pendulum-v1"] for p in ("{missing}", "{fifo}", "{unreadable}")])
    add("eval", ["eval", "{policy}"], ints("--episodes", 1) + ints("--seed", 0, extra=[str(2**32)])
        + [["--env", e] for e in ("nosuch", "", "CartPole-v1", "quadrotor", "MountainCarContinuous-v0", "Ant-v5")]
        + [["--env", "Pendulum-v1", "--seed", v] for v in ("-1", str(2**64))] + [["--nosuch"], ["extra"]])
    add("eval", ["eval", "{quadrotor_policy}"], [["--env", "pendulum"], ["--episodes", "0"]])
    add("eval", ["eval", "{policy}"], ints("--action-delay", 0, extra=[str(MAX_DELAY + 1)]) + [["--latency-from", f] for f in LATENCY_FILES]
        + [["--latency-from", "{bench_ok}", "--action-delay", "1"], ["--latency-from"], ["--no-pending-actions", "--action-delay", "1"],
           ["--env", "Pendulum-v1", "--action-delay", "1"], ["--env", "Pendulum-v1", "--latency-from", "{bench_ok}"]])
    add("eval", ["eval", "{policy}"], [["--task", t] for t in BAD_TASKS + ["quadrotor"]] + [["--task", "pendulum", "--env", "nosuch"]])

    # ---- export
    add("export", ["export", "--int16"], [[p] for p in BAD_INPUTS] + [["{qpolicy}"]])
    exp = ["export", "{policy}", "--int16", "--out", "{out_q}"]
    add("export", exp, floats("--obs-range", "0", ["-1", "40000", "1e30", "1e-30"]) + ints("--calibration-episodes", 1)
        + ints("--eval-episodes", 0) + ints("--seed", 0, extra=[str(2**32)]))
    add("export", ["export", "{policy}", "--int16"], [["--out", o] for o in BAD_OUTPUTS + ["{policy}"]])
    add("export", [], [["export", "{policy}", "--out", "{out_q}"]])
    # (a gymnasium id of the policy's shape is a task export calibrates on since 91f58d2: one of another shape instead)
    add("export", exp, [["--task", t] for t in BAD_TASKS + ["quadrotor", "MountainCarContinuous-v0"]])

    # ---- render
    add("render", ["render"], [[p, "--out", "{out_gif}"] for p in BAD_INPUTS] + [["{wide_policy}", "--out", "{out_gif}"]])
    ren = ["render", "{policy}", "--out", "{out_gif}"]
    add("render", ren, ints("--episodes", 1) + ints("--size", 32, extra=["100000"]) + ints("--seed", 0, extra=[str(2**32)]))
    add("render", ["render", "{policy}"], [["--out", o] for o in BAD_OUTPUTS])
    add("render", ren, [["--task", t] for t in BAD_TASKS + ["quadrotor", "Pendulum-v1"]])

    # ---- plot
    add("plot", ["plot"], [[p] for p in ["{missing}", "{fifo}", "{node}", "{text}", "{empty}", "{garbage}", "{folder}", "{loop}", "{unreadable}",
                                          "{run_bad_csv}", "{run_empty_csv}", "{run_fifo_csv}", "{run_nan_csv}"]])
    add("plot", ["plot", "{run_good}"], [["--out", o] for o in BAD_OUTPUTS])

    # ---- sweep
    sw = ["sweep", "pendulum", "--algo", "td3", "--run-dir", "{run}", "--quiet"]
    add("sweep", sw, [["--seeds", v] for v in ["abc", "", "5-1", "-", "0-" + str(10**12), "1,,x", str(2**64), "-3"]]
        + [["--grid", v] for v in ["lr", "=1", "lr=", "seed=1,2", "out=x"]] + [["--set", v] for v in ["envs", "=3", "run-dir=x"]]
        + ints("--steps", 1) + ints("--workers", 1) + [["--algo", "nosuch"], ["--ray", "nosuch://x"]])
    add("sweep", ["sweep", "pendulum", "--quiet"], [["--run-dir", d] for d in BAD_FOLDERS])
    add("sweep", [], [["sweep"], ["sweep", "nosuchtask", "--run-dir", "{run}", "--quiet", "--seeds", "0", "--steps", "100"]]
        + [["sweep", t, "--algo", "td3", "--run-dir", "{run}", "--quiet", "--seeds", "0", "--steps", "100"] for t in BAD_TASKS])

    # ---- demo
    demo = ["demo", "--out", "{out}", "--quiet"]
    add("demo", demo, ints("--steps", 1) + ints("--seed", 0, extra=[str(2**32)]) + ints("--episodes", 1, extra=["201"])
        + ints("--requests", 1) + [["--heap", h] for h in ("abc", "-1", "0", "1K", str(10**30), "nan", "")]
        + [["--task", "nosuch"], ["--port", "{missing}"], ["--port", "{text}"], ["--port", "{folder}"], ["--port", "{fifo}"],
           ["--port", "{missing}", "--board-dir", "{run}"]])
    add("demo", ["demo", "--quiet"], [["--out", o] for o in BAD_OUTPUTS] + [["--out", "{out}", "--board-dir", d] for d in BAD_FOLDERS])

    # ---- train-on-board (no board answers at these ports)
    tob = ["train-on-board", "--port", "{missing}", "--out", "{out}", "--quiet"]
    add("train-on-board", tob, ints("--steps", 1) + ints("--batch", 1) + ints("--replay", 2) + ints("--warmup", 0)
        + ints("--seed", 0, extra=[str(2**32)]) + ints("--episodes", 0) + floats("--actor-lr", "0") + floats("--critic-lr", "-1")
        + [["--hidden", v] for v in ("0", "a", "70000", "1000000,1000000")])
    add("train-on-board", tob + ["--steps", "100"], [["--init", r] for r in BAD_INPUTS + ["{run_good}", "{run_garbage_ckpt}", "{run_fifo_ckpt}",
                                                                                      "{run_unreadable_ckpt}", ""]])
    add("train-on-board", ["train-on-board", "--steps", "100", "--quiet", "--out", "{out}"],
        [["--port", p] for p in ("{missing}", "{text}", "{folder}", "{fifo}", "")] + [[]])
    add("train-on-board", ["train-on-board", "--port", "{missing}", "--steps", "100", "--quiet"], [["--out", o] for o in BAD_OUTPUTS])

    # ---- deploy, bench serial, board sim (no board answers here)
    add("deploy", ["deploy"], [["--port", p] for p in ("{missing}", "{text}", "{folder}", "{fifo}", "")] + [[]]
        + [["--port", "{missing}", "--policy", p] for p in BAD_INPUTS + ["{policy_deep_run}"]]
        + [["--port", "{missing}"] + v for v in floats("--timeout", "-1", ["0"])])
    add("deploy", ["deploy", "--plan", "--board", "esp32"], [["--policy", p] for p in BAD_INPUTS] + [["--port", "{missing}"], ["--board", "nosuch"]])
    add("deploy", ["deploy", "--port", "{missing}"], [["--board", "esp32"]])
    add("mip", ["mip"], [["--out", d] for d in BAD_FOLDERS] + [[], ["--out", "{run}/index", "--arch", "nosuch"]])
    add("bench", ["bench", "serial"], [["--port", "{missing}", "--policy", p] for p in BAD_INPUTS]
        + [["--port", p, "--policy", "{policy}"] for p in ("{missing}", "{text}", "{folder}", "{fifo}", "")]
        + [["--port", "{missing}", "--policy", "{policy}"] + v for v in ints("-n", 1) + ints("--warmup", 0) + ints("--seed", 0, extra=[str(2**32)])
           + floats("--timeout", "-1", ["0"])] + [[]])
    add("board", ["board", "sim"], [["--folder", d] for d in BAD_FOLDERS]
        + [["--folder", "{run}", "--heap", h] for h in ("abc", "-1", "0", "1K", str(10**30), "nan", "")]
        + [["--folder", "{run}", "--flash", f] for f in ("abc", "-1", "0", "1K", str(10**30), "nan", "")]
        # issue 39: system folders, modes that are gone or never silent, two ways at once
        + [["--folder", d] for d in ("/", "/tmp", "/dev", "/etc", "/usr", "/proc/self")]
        + [["--folder", "{text}", "--confine", c] for c in ("none", "chroot", "userns", "")]
        + [["--folder", "{text}", "--unconfined", "--confine", c] for c in ("bwrap", "landlock")])
    add("board", ["board"], [["nosuch"]])

    # ---- import (sources that are damaged, of kinds microrl does not import, or options that do not fit them; with or
    # without the import extra: without it, a source that gets as far as being read names the extra)
    imp = ["import", "{sb3_badcrc}", "--out", "{out}"]
    add("import", ["import"], [[p, "--out", "{out}"] for p in BAD_INPUTS + ["{sb3_truncated}", "{sb3_badcrc}", "{sb3_other}", "{onnx_garbage}",
                                                                            "{pt_garbage}", "{zip_garbage}", "{sb3_deep}"]] + [[]])
    add("import", ["import", "{sb3_badcrc}"], [["--out", o] for o in BAD_OUTPUTS + ["{sb3_badcrc}"]])
    add("import", imp, ints("--check", 1, extra=["100001"]) + ints("--seed", 0, extra=[str(2**32)]) + ints("--references", 0, extra=["1001"])
        + floats("--tolerance", "0", ["1", "-1"]) + [["--vecnormalize", p] for p in BAD_INPUTS] + [["--kind", "nosuch"], ["--algo", "dqn"],
        ["--layout", "nosuch"], ["--activation", "elu"], ["--obs-stats", "{npz_garbage}"], ["--output", "nosuch"], ["--scale-actions"]])
    add("import", ["import", "{pt_garbage}", "--out", "{out}"], [["--obs-stats", p] for p in BAD_INPUTS + ["{npz_garbage}"]]
        + [["--vecnormalize", "{pkl_garbage}"], ["--kind", "sb3"], ["--kind", "onnx"], ["--layout", "ppo"]])
    add("import", ["import", "{onnx_garbage}", "--out", "{out}"], [["--clip-actions"] + v for v in
        ([["--action-low", a, "--action-high", "1"] for a in NOT_FLOAT + ["nan", "1,2,x"]] + [["--action-low", "2", "--action-high", "1"],
         ["--action-low", "0"], ["--env", "nosuch-v0"], ["--env", ""], ["--env", "CartPole-v1"]])])

    # ---- the rest
    add("info", ["info"], [["extra"], ["--nosuch"]])
    add("cli", [], [["nosuch"], ["--nosuch"], ["train", "--help-me"]])
    out.extend(("import", argv) for argv in import_hostile_cases())  # issue 39: see that block below
    return out + environment_and_disk_cases()


# =============================================================================================
# Issue 39, item 9: environment variables, newer options, run folders another run holds, full
# disks. A case here may carry (command, argv, {"env": {...}, "keep": [...]}): env added to the
# command's environment; keep: names the command may leave in its folder (a run that stops on a
# full disk keeps its checkpoint, and says so). {full} is a 64 KB tmpfs filled to the last byte
# (as root; its cases are skipped elsewhere); {run_locked} a run folder and {out_locked} a policy
# file whose locks this bench holds while it runs (runlog.runlock/filelock).
BAD_BACKENDS = ["bogus", "PLAIN", "Plain", " plain", "numpy,plain", "native", "ulab"]
BAD_THREADS = ["0", "-3", "5", "two", "1.5", " "]


def environment_and_disk_cases():
    out = []

    def add(command, base, variants, env=None, keep=()):
        for v in variants:
            out.append((command, list(base) + list(v), {"env": dict(env or {}), "keep": list(keep)}))

    train = ["train", "pendulum", "--steps", "300", "--out", "{out}", "--run-dir", "{run}"]
    ppo = ["train", "inverted_pendulum", "--algo", "ppo", "--steps", "300", "--out", "{out}", "--run-dir", "{run}"]
    sweep = ["sweep", "pendulum", "--algo", "td3", "--seeds", "0", "--steps", "300"]
    # MICRORL_BACKEND naming no backend, or one CPython cannot load, with every command
    every = [("eval", ["eval", "{policy}", "--episodes", "1"]), ("info", ["info"]), ("export", ["export", "{policy}", "--int16", "--out", "{out_q}"]),
             ("train", train), ("train-ppo", ppo), ("render", ["render", "{policy}", "--out", "{out_gif}"]), ("plot", ["plot", "{run_good}", "--out", "{out_png}"]),
             ("sweep", sweep + ["--run-dir", "{run}"]), ("deploy", ["deploy", "--port", "{missing}", "--policy", "{policy}"]),
             ("bench", ["bench", "serial", "--port", "{missing}", "--policy", "{policy}"]),
             ("train-on-board", ["train-on-board", "--port", "{missing}", "--steps", "10", "--out", "{out}"]), ("demo", ["demo", "--out", "{out}"]),
             ("import", ["import", "{sb3_badcrc}", "--out", "{out}"])]
    for backend in BAD_BACKENDS:
        for command, argv in every:
            add(command, argv, [[]], env={"MICRORL_BACKEND": backend})
    # MICRORL_THREADS other than 1 or 2
    for threads in BAD_THREADS:
        add("train", train, [[]], env={"MICRORL_THREADS": threads})
        add("train-ppo", ppo, [[]], env={"MICRORL_THREADS": threads})
        add("sweep", sweep, [["--run-dir", "{run}"]], env={"MICRORL_THREADS": threads})
    # --latency-from with a round trip too large for a float
    for bench in ("{bench_400_digits}", "{bench_minus_400_digits}", "{bench_400_digits_fraction}"):
        add("train", train, [["--latency-from", bench]])
        add("eval", ["eval", "{policy}", "--task", "pendulum", "--episodes", "1"], [["--latency-from", bench]])
    # --out and --tensorboard on the run's own files
    on_run = ["{run}/checkpoint.npz", "{run}/progress.csv", "{run}/run.json", "{run}/run.lock", "{run}/./run.json", "{run}/../run/run.json"]
    for base, command in ((["train", "pendulum", "--steps", "300", "--run-dir", "{run}"], "train"),
                          (["train", "inverted_pendulum", "--algo", "ppo", "--steps", "300", "--run-dir", "{run}"], "train-ppo")):
        add(command, base, [["--out", o] for o in on_run])
    add("train", ["train", "pendulum", "--steps", "300", "--run-dir", "{run}"],
        [["--out", "{out}", "--tensorboard", t] for t in ("{run}/run.json", "{run}/checkpoint.npz/tb", "{run}/progress.csv", "{out}")]
        + [["--out", "{run}/tensorboard/p.mrlp", "--tensorboard"], ["--out", "{run_good}/progress.csv", "--run-dir", "{run_good}"]])
    add("sweep", sweep + ["--run-dir", "{run}"], [["--ray", ""], ["--ray", " "]])
    # a run folder or policy file another run writes
    add("train", ["train", "pendulum", "--steps", "300", "--out", "{out}", "--run-dir", "{run_locked}"], [[], ["--resume"], ["--overwrite"]])
    add("train-ppo", ["train", "inverted_pendulum", "--algo", "ppo", "--steps", "300", "--out", "{out}", "--run-dir", "{run_locked}"], [[], ["--resume"]])
    add("sweep", sweep, [["--run-dir", "{run_locked}"]])
    add("train", ["train", "pendulum", "--steps", "300", "--run-dir", "{run}"], [["--out", "{out_locked}"]])
    # full disks: one line naming the file not written, nothing left behind
    add("export", ["export", "{policy}"], [["--int16", "--out", "{full}/q.mrlq"], ["--int16", "--references", "0", "--out", "{full}/q.mrlq"]])
    add("render", ["render", "{policy}"], [["--out", "{full}/x.gif"]])
    add("plot", ["plot", "{run_good}"], [["--out", "{full}/x.png"]])
    # (each line its own names on the full disk: lines run two at a time, and a second run writing
    # the same policy file is refused as such; --quiet: a run that starts says nothing else)
    add("train", ["train", "pendulum", "--steps", "300", "--quiet"], [["--out", "{full}/p1.mrlp", "--run-dir", "{full}/r1"], ["--out", "{full}/p2.mrlp"]])
    add("train-ppo", ["train", "inverted_pendulum", "--algo", "ppo", "--steps", "300", "--quiet"], [["--out", "{full}/p3.mrlp", "--run-dir", "{full}/r3"]])
    add("sweep", sweep, [["--run-dir", "{full}/s", "--quiet"]])
    add("import", ["import", "{sb3_badcrc}"], [["--out", "{full}/i.mrlp"]])
    # only the policy file's disk, or only the TensorBoard logs' disk, full: the run folder keeps its checkpoint
    add("train", ["train", "pendulum", "--steps", "300", "--run-dir", "{run}", "--quiet"], [["--out", "{full}/p4.mrlp"]], keep=["run"])
    add("train", train, [["--tensorboard", "{full}", "--quiet"]], keep=["run"])
    return out


class Fixtures:
    """The files the cases name, in one folder (checked unchanged after every case)."""

    def __init__(self, folder):
        from microrl import Policy, fixedpoint, save
        from microrl import policy as pf
        from microrl.rng import Rng

        self.folder = folder
        self.sockets = []
        p = lambda name: os.path.join(folder, name)  # noqa: E731
        policy = Policy([3, 16, 1], ["relu", "tanh"], act_scale=[2.0])
        policy.net.init(Rng(1))
        good = pf.to_bytes(policy)
        self.values = {"policy": save(p("policy.mrlp"), policy), "missing": p("missing.mrlp"), "text": p("notes.txt"),
                       "empty": p("empty.mrlp"), "garbage": p("garbage.mrlp"), "truncated": p("truncated.mrlp"), "badcrc": p("badcrc.mrlp"),
                       "fifo": p("fifo"), "folder": p("folder"), "loop": p("loop"), "deep": p("no/such"), "underfile": p("notes.txt/x"),
                       "longname": p("x" * 5000), "socket": p("sock")}
        quad = Policy([Q.OBS_DIM, 8, Q.ACT_DIM], ["relu", "tanh"])
        quad.net.init(Rng(2))
        self.values["quadrotor_policy"] = save(p("quadrotor.mrlp"), quad)
        wide = Policy([5, 8, 2], ["relu", "tanh"])
        self.values["wide_policy"] = save(p("wide.mrlp"), wide)
        q = fixedpoint.quantise(policy, [[0.5, -0.5, 1.0], [-1.0, 1.0, -8.0]])
        self.values["qpolicy"] = fixedpoint.save(p("policy.mrlq"), q)
        with open(p("notes.txt"), "w") as f:
            f.write("not a policy\n")
        open(p("empty.mrlp"), "wb").close()
        with open(p("garbage.mrlp"), "wb") as f:
            f.write(os.urandom(300))
        with open(p("truncated.mrlp"), "wb") as f:
            f.write(good[: len(good) // 2])
        with open(p("badcrc.mrlp"), "wb") as f:
            f.write(good[:-1] + bytes([good[-1] ^ 1]))
        os.mkfifo(p("fifo"))
        os.mkdir(p("folder"))
        os.symlink(p("loop"), p("loop"))
        os.symlink(p("notes.txt"), p("link_to_file"))  # what /dev/stdout is when output goes to a file
        os.symlink(p("nowhere"), p("dangling_link"))
        self.values.update(link_to_file=p("link_to_file"), dangling_link=p("dangling_link"))
        # Python files that are no task (docs/tasks.md): loading them must leave nothing beside them
        for name, source in (("lacking", "NAME = 'lacking'\nOBS_DIM = 3\n"), ("syntax", "NAME = (\n"),
                             ("raises", "NAME = 'raises'\nraise RuntimeError('no robot here')\n"), ("exits", "import sys\nsys.exit(3)\n")):
            with open(p("task_%s.py" % name), "w") as f:
                f.write(source)
            self.values["task_" + name] = p("task_%s.py" % name)
        s = socket.socket(socket.AF_UNIX)
        s.bind(p("sock"))
        self.sockets.append(s)
        if IS_ROOT:
            os.mknod(p("node"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
            self.values["node"] = p("node")
        else:
            self.values["node"] = p("fifo")  # no device nodes without root: a pipe stands in
        shutil.copy(self.values["policy"], p("unreadable.mrlp"))
        os.chmod(p("unreadable.mrlp"), 0)
        self.values["unreadable"] = p("unreadable.mrlp")
        # well-formed files with values a policy cannot run with, or header bytes the format says are zero
        self.values["denormal"] = self._patched(p("denormal.mrlp"), Policy([3, 4, 1], ["relu", "tanh"], obs_mean=[0.0] * 3, obs_std=[1.0] * 3),
                                                "obs_std", struct.pack("<f", 1e-45))
        self.values["nonzero_reserved"] = self._patched(p("reserved.mrlp"), policy, 14, b"\x01\x00")
        # three layers: 16 + 2 * 4 + 3 = 27 bytes of header fields, one byte of padding to 28
        self.values["nonzero_padding"] = self._patched(p("padding.mrlp"), Policy([3, 8, 8, 1], ["relu", "tanh"]), 27, b"\x07")
        # sources for microrl import that no framework reads: made without the import extra
        import zipfile

        sb3 = {"data": json.dumps({"policy_class": {"__module__": "stable_baselines3.td3.policies"}}), "policy.pth": os.urandom(2000),
               "pytorch_variables.pth": os.urandom(500)}
        with zipfile.ZipFile(p("sb3.zip"), "w") as z:
            for name, data in sb3.items():
                z.writestr(name, data)
        whole = open(p("sb3.zip"), "rb").read()
        os.remove(p("sb3.zip"))
        with open(p("sb3_truncated.zip"), "wb") as f:
            f.write(whole[: len(whole) // 2])
        with zipfile.ZipFile(p("sb3_badcrc.zip"), "w") as z:  # stored: the flipped byte is in policy.pth's own bytes
            for name, data in sb3.items():
                z.writestr(name, data)
        raw = bytearray(open(p("sb3_badcrc.zip"), "rb").read())
        at = raw.index(b"policy.pth") + len("policy.pth") + 100
        raw[at] ^= 0xFF
        with open(p("sb3_badcrc.zip"), "wb") as f:
            f.write(raw)
        with zipfile.ZipFile(p("sb3_other.zip"), "w") as z:  # a DQN: discrete actions
            z.writestr("data", json.dumps({"policy_class": {"__module__": "stable_baselines3.dqn.policies"}}))
            z.writestr("policy.pth", b"")
        for name, data in (("onnx_garbage", ("model.onnx", os.urandom(300))), ("pt_garbage", ("actor.pt", b"\x80\x02" + os.urandom(300))),
                           ("zip_garbage", ("model.zip", os.urandom(300))), ("npz_garbage", ("stats.npz", b"PK\x03\x04" + os.urandom(100))),
                           ("pkl_garbage", ("vecnormalize.pkl", os.urandom(300)))):
            with open(p(data[0]), "wb") as f:
                f.write(data[1])
            self.values[name] = p(data[0])
        self.values.update(sb3_truncated=p("sb3_truncated.zip"), sb3_badcrc=p("sb3_badcrc.zip"), sb3_other=p("sb3_other.zip"))
        # --latency-from files: bench JSON with no usable round trip (and one that is fine, for options that do not go with it)
        for name, text in (("bench_ok", '{"p50_us": 15000.0}'), ("bench_no_p50", '{"p90_us": 15000.0}'), ("bench_zero_p50", '{"p50_us": 0}'),
                           ("bench_nan_p50", '{"p50_us": NaN}'), ("bench_inf_p50", '{"p50_us": Infinity}'), ("bench_huge_p50", '{"p50_us": 1e300}'),
                           ("bench_bool_p50", '{"p50_us": true}'), ("bench_text_p50", '{"p50_us": "15 ms"}'), ("bench_list", "[15000]"),
                           ("bench_deep", "[" * 100000 + "]" * 100000)):
            with open(p(name + ".json"), "w") as f:
                f.write(text)
            self.values[name] = p(name + ".json")
        # run folders
        for name, csv in (("run_good", "step,episode_return,eval_mean,eval_std\n200,-1000,,\n1000,-800,-700,50\n"),
                          ("run_bad_csv", "step,episode_return\nabc,def\n"), ("run_empty_csv", ""),
                          ("run_nan_csv", "step,episode_return,eval_mean,eval_std\nnan,nan,nan,nan\ninf,1e999,,\n")):
            os.mkdir(p(name))
            with open(os.path.join(p(name), "progress.csv"), "w") as f:
                f.write(csv)
            self.values[name] = p(name)
        # JSON nested deeper than Python's parser goes (RecursionError, not ValueError), where commands read JSON
        # (plot's run.json title: tests/test_host_hostile.py, a plot that works)
        deep = "[" * 100000 + "]" * 100000
        os.mkdir(p("deep.run"))  # the run folder of deep.mrlp (deploy reads its task from run.json)
        with open(p("deep.run/run.json"), "w") as f:
            f.write(deep)
        self.values["policy_deep_run"] = save(p("deep.mrlp"), policy)
        with zipfile.ZipFile(p("sb3_deep.zip"), "w") as z:
            z.writestr("data", deep)
            z.writestr("policy.pth", b"x")
        self.values["sb3_deep"] = p("sb3_deep.zip")
        import numpy as np

        for name, meta in (("run_deep_meta_ckpt", deep.encode()), ("run_list_meta_ckpt", b"[1]")):
            os.mkdir(p(name))
            with open(os.path.join(p(name), "checkpoint.npz"), "wb") as f:
                np.savez(f, __meta__=np.frombuffer(meta, np.uint8))
            self.values[name] = p(name)
        for name, text in (("bench_400_digits", '{"p50_us": %s}' % ("9" * 400)), ("bench_minus_400_digits", '{"p50_us": -%s}' % ("9" * 400)),
                           ("bench_400_digits_fraction", '{"p50_us": %s.5}' % ("9" * 400))):
            with open(p(name + ".json"), "w") as f:
                f.write(text)
            self.values[name] = p(name + ".json")
        self._hold_locks(p)
        held = os.path.join(p("run_deep_held"), "")  # a run folder holding a checkpoint, its run.json too deep
        os.mkdir(held)
        shutil.copy(p("deep.run/run.json"), held)
        with open(os.path.join(held, "checkpoint.npz"), "wb") as f:
            f.write(b"PK")
        self.values["run_deep_held"] = p("run_deep_held")
        os.mkdir(p("run_fifo_csv"))
        os.mkfifo(os.path.join(p("run_fifo_csv"), "progress.csv"))
        self.values["run_fifo_csv"] = p("run_fifo_csv")
        for name, make in (("run_fifo_ckpt", lambda f: os.mkfifo(f)), ("run_garbage_ckpt", lambda f: open(f, "wb").write(os.urandom(500))),
                           ("run_unreadable_ckpt", lambda f: (open(f, "wb").write(b"PK"), os.chmod(f, 0)))):
            os.mkdir(p(name))
            make(os.path.join(p(name), "checkpoint.npz"))
            self.values[name] = p(name)
        self.values.update(import_hostile_fixtures(folder))

    @staticmethod
    def _patched(path, policy, where, data):
        """A policy file with bytes replaced (at an offset, or at the first float of obs_std) and
        its CRC made valid again: a damage the checksum cannot see."""
        from microrl import policy as pf

        raw = bytearray(pf.to_bytes(policy)[:-4])
        if where == "obs_std":
            header_len = struct.unpack("<H", raw[6:8])[0]
            where = header_len + 4 * policy.sizes[0]
        raw[where : where + len(data)] = data
        raw += struct.pack("<I", pf.crc32(bytes(raw)) & 0xFFFFFFFF)
        with open(path, "wb") as f:
            f.write(raw)
        return path

    def _hold_locks(self, p):
        """A run folder (holding a checkpoint) and a policy file that "another run" writes: this
        bench holds their locks while it runs; and, as root, a full disk."""
        import contextlib

        from microrl_host.runlog import filelock, runlock

        self.held = contextlib.ExitStack()
        os.mkdir(p("run_locked"))
        with open(os.path.join(p("run_locked"), "checkpoint.npz"), "wb") as f:
            f.write(b"PK")
        self.held.enter_context(runlock(p("run_locked")))
        self.held.enter_context(filelock(p("locked.mrlp")))
        self.values.update(run_locked=p("run_locked"), out_locked=p("locked.mrlp"))
        self.full = None
        if IS_ROOT and shutil.which("mount"):
            os.mkdir(p("full"))
            if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", p("full")], capture_output=True).returncode == 0:
                self.full = p("full")
                with open(os.path.join(self.full, "filler"), "wb", buffering=0) as f:
                    try:
                        while True:
                            f.write(b"\0" * 4096)
                    except OSError:
                        pass
                self.values["full"] = self.full
            else:
                os.rmdir(p("full"))

    def close(self):
        for s in self.sockets:
            s.close()
        self.held.close()
        if self.full:
            subprocess.run(["umount", self.full], check=False)


def snapshot(folder):
    """{relative path: (type, size, mtime, inode)} of everything under folder (links not followed;
    size and mtime of regular files only), but the full disk's case folders (run_case checks
    each case's own)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        if dirpath == folder and "full" in dirnames:
            dirnames.remove("full")
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            # a folder's own mtime is left out: the commands' write test makes and removes a file in it
            regular = stat.S_ISREG(st.st_mode)
            out[os.path.relpath(path, folder)] = (stat.S_IFMT(st.st_mode), st.st_size if regular else 0, st.st_mtime_ns if regular else 0, st.st_ino)
    return out


def run_case(argv, fixtures, workdir, timeout, env, extra=None):
    """Run one bad command line in an empty folder; returns a dict with its outcome. extra: the
    case's {"env": more environment, "keep": names it may leave in its folder}."""
    extra = extra or {}
    values = dict(fixtures.values, out=os.path.join(workdir, "out.mrlp"), out_q=os.path.join(workdir, "out.mrlq"),
                  out_gif=os.path.join(workdir, "out.gif"), out_png=os.path.join(workdir, "out.png"), run=os.path.join(workdir, "run"))
    full = None
    if any("{full}" in a for a in argv):
        if "full" not in values:
            return {"argv": argv, "skipped": "a full disk is a tmpfs this bench mounts as root"}
        # the case's own folder on the full disk (lines run two at a time): what it leaves there
        # is its own, and counts as written
        full = values["full"] = os.path.join(values["full"], os.path.basename(workdir))
        os.mkdir(full)
    if extra.get("env"):
        env = dict(env, **extra["env"])
    args = [a.format(**values) for a in argv]
    cmd = [sys.executable, "-m", "microrl_host.cli"] + args
    unreadable = any("{unreadable" in a or "_unreadable_" in a for a in argv)
    if unreadable and IS_ROOT:
        if not SETPRIV:
            return {"argv": argv, "skipped": "as root without setpriv, chmod 000 cannot make a file unreadable"}
        cmd = [SETPRIV] + DROP_DAC + cmd
    before = snapshot(fixtures.folder)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=workdir, env=env,
                            start_new_session=True, text=True, errors="replace")
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        ran_on = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        ran_on = True
    seconds = time.perf_counter() - t0
    lines = [line for line in stderr.splitlines() if line.strip()]
    wrote = sorted(set(os.listdir(workdir)) - set(extra.get("keep", ()))) + (["full disk: " + n for n in sorted(os.listdir(full))] if full else [])
    if full:
        shutil.rmtree(full, ignore_errors=True)
    changed = sorted(k for k, v in snapshot(fixtures.folder).items() if before.get(k) != v) + sorted(k for k in before if not os.path.lexists(os.path.join(fixtures.folder, k)))
    result = {"argv": argv, "env": extra.get("env") or {}, "code": proc.returncode, "seconds": round(seconds, 2), "stderr": stderr[-2000:], "last_line": lines[-1] if lines else "",
              "traceback": "Traceback (most recent call last)" in stderr, "ran_on": ran_on, "wrong_exit": not ran_on and proc.returncode != 2,
              "not_one_line": not ran_on and len(lines) != 1, "wrote": wrote + ["fixtures: " + c for c in changed]}
    result["ok"] = not (result["traceback"] or result["ran_on"] or result["wrong_exit"] or result["not_one_line"] or result["wrote"])
    return result


def run_all(selected, timeout=30.0, workers=2, progress=None):
    """Run the cases [(command, argv)]; returns (results, fixtures folder removed afterwards)."""
    from concurrent.futures import ThreadPoolExecutor

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HOST, DEVICE] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["MICRORL_THREADS"] = "1"
    top = tempfile.mkdtemp(prefix="microrl-bad-lines-")
    fixtures_dir = os.path.join(top, "fixtures")
    os.mkdir(fixtures_dir)
    fixtures = Fixtures(fixtures_dir)
    try:
        def one(i):
            command, argv = selected[i][:2]
            workdir = os.path.join(top, "case%04d" % i)
            os.mkdir(workdir)
            r = run_case(argv, fixtures, workdir, timeout, env, selected[i][2] if len(selected[i]) > 2 else None)
            r["command"] = command
            if progress:
                progress(r)
            return r

        with ThreadPoolExecutor(max(1, workers)) as pool:
            results = list(pool.map(one, range(len(selected))))
    finally:
        fixtures.close()
        for dirpath, dirnames, filenames in os.walk(top):  # chmod 000 files and folders: let rmtree in
            for n in dirnames + filenames:
                try:
                    if not os.path.islink(os.path.join(dirpath, n)):
                        os.chmod(os.path.join(dirpath, n), 0o700)
                except OSError:
                    pass
        shutil.rmtree(top, ignore_errors=True)
    return results


def summary(results):
    done = [r for r in results if "skipped" not in r]
    counts = {"tried": len(done), "skipped": len(results) - len(done)}
    for k in ("traceback", "wrong_exit", "not_one_line", "ran_on"):
        counts[k] = sum(1 for r in done if r[k])
    counts["wrote"] = sum(1 for r in done if r["wrote"])
    counts["failed"] = sum(1 for r in done if not r["ok"])
    by_command = {}
    for r in done:
        c = by_command.setdefault(r["command"], [0, 0])
        c[0] += 1
        c[1] += 0 if r["ok"] else 1
    counts["by_command"] = {k: {"tried": v[0], "failed": v[1]} for k, v in sorted(by_command.items())}
    return counts


def show(argv, env=None):
    prefix = "".join("%s=%r " % kv for kv in sorted((env or {}).items()))
    return (prefix + " ".join(a if a and " " not in a else repr(a) for a in argv))[:200]



# ---- microrl import's hostile sources (issue 39 items 4, 5 and 9; tests/test_import_hostile.py, tests/test_import.py) ----
# Pickles that run code (they write PICKLE_RAN into the case's empty folder, so that code that
# ran shows as a file written), zip bombs, networks no policy file holds, options that contradict
# each other. The files that need torch or onnx to make are made, and their lines run, only
# where those are installed.
PICKLE_RAN = "pickle-ran-code"


def _importable(name):
    import importlib.util

    return importlib.util.find_spec(name) is not None


class _RunsCode:
    def __init__(self, call, arg):
        self.call, self.arg = call, arg

    def __reduce__(self):
        return (self.call, (self.arg,))


def zeros_deflated(size):
    """(raw deflate stream of `size` zero bytes, its CRC-32), made fast: after a full flush the
    stream of each 16 MiB of zeros is the same bytes, made once and repeated (1 GB: 1 MB)."""
    import zlib

    chunk = b"\0" * (1 << 24)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size >> 24):
        crc = zlib.crc32(chunk, crc)
    return first + again * ((size >> 24) - 1) + c.flush(), crc


def write_zip(path, members):
    """A zip archive written by hand: members [(name, bytes as stored, method 0 or 8, crc, the
    size its headers declare)], so that a header may declare less than the member inflates to."""
    import zlib

    out, central = bytearray(), bytearray()
    for m in members:
        name, data, method, crc, size = m if len(m) == 5 else (m[0], m[1], 0, zlib.crc32(m[1]), len(m[1]))
        name = name.encode()
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(data), size, len(name), 0, 0, 0, 0, 0, len(out)) + name
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(data), size, len(name), 0) + name + data
    with open(path, "wb") as f:
        f.write(bytes(out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), len(out), 0)))


def import_hostile_fixtures(folder):
    """{placeholder: path} of the files import_hostile_cases names."""
    import base64
    import pickle

    p = lambda name: os.path.join(folder, name)  # noqa: E731
    values = {}
    td3 = {"policy_class": {":type:": "<class 'abc.ABCMeta'>", "__module__": "stable_baselines3.td3.policies"}}
    write_zip(p("sb3_td3_data.zip"), [("data", json.dumps(td3).encode()), ("policy.pth", b"x")])
    for name, call in (("exec", exec), ("system", os.system)):
        arg = "open(%r, 'w').write('ran')" % PICKLE_RAN if call is exec else "touch " + PICKLE_RAN
        with open(p("pkl_%s.pkl" % name), "wb") as f:
            pickle.dump({"obs_rms": _RunsCode(call, arg), "clip_obs": 10.0}, f)
        values["pkl_" + name] = p("pkl_%s.pkl" % name)
        data = dict(td3, observation_space={":type:": "<class 'gymnasium.spaces.box.Box'>",
                                            ":serialized:": base64.b64encode(pickle.dumps(_RunsCode(call, arg))).decode()})
        write_zip(p("sb3_space_%s.zip" % name), [("data", json.dumps(data).encode()), ("policy.pth", b"x")])
        values["sb3_space_" + name] = p("sb3_space_%s.zip" % name)
    stream, crc = zeros_deflated(512 << 20)  # past import's 256 MiB
    write_zip(p("sb3_bomb.zip"), [("data", stream, 8, crc, 512 << 20), ("policy.pth", b"x")])
    write_zip(p("sb3_bomb_lying.zip"), [("data", stream, 8, crc, 1000), ("policy.pth", b"x")])
    write_zip(p("pt_bomb.pt"), [("archive/data.pkl", pickle.dumps({})), ("archive/data/0", stream, 8, crc, 512 << 20)])
    write_zip(p("npz_bomb.npz"), [("mean.npy", stream, 8, crc, 512 << 20)])
    values.update(sb3_td3_data=p("sb3_td3_data.zip"), sb3_bomb=p("sb3_bomb.zip"), sb3_bomb_lying=p("sb3_bomb_lying.zip"), pt_bomb=p("pt_bomb.pt"),
                  npz_bomb=p("npz_bomb.npz"))
    if _importable("torch"):
        import torch

        def actor(widths, dtype=torch.float32):
            names = ["fc%d" % (i + 1) for i in range(len(widths) - 2)] + ["fc_mu"]
            sd = {}
            for n, (a, b) in zip(names, zip(widths[:-1], widths[1:])):
                sd[n + ".weight"], sd[n + ".bias"] = torch.zeros(b, a, dtype=dtype), torch.zeros(b, dtype=dtype)
            return sd

        stride0 = actor([3, 4, 1])
        stride0.update({"fc1.weight": torch.zeros(1, 1).expand(300000, 300000), "fc1.bias": torch.zeros(1).expand(300000),
                        "fc_mu.weight": torch.zeros(1, 1).expand(1, 300000)})
        buffers = dict(actor([3, 4, 1]), action_scale=torch.ones(1), action_bias=torch.zeros(1))
        for name, sd in (("zero_width", actor([3, 0, 1])), ("wide", actor([3, 70000, 1])), ("deep", actor([3] + [4] * 3000 + [1])),
                         ("stride0", stride0), ("int", actor([3, 4, 1], torch.int64)), ("complex", actor([3, 4, 1], torch.complex64)),
                         ("buffers", buffers)):
            torch.save(sd, p("pt_%s.pt" % name))
            values["pt_" + name] = p("pt_%s.pt" % name)
    if _importable("onnx"):
        from onnx import TensorProto, helper, numpy_helper, save

        import numpy as np

        def graph(name, inits, nodes):
            g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, [None, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
            save(helper.make_model(g), p(name + ".onnx"))
            values[name] = p(name + ".onnx")

        one = [helper.make_node("MatMul", ["obs", "W"], ["y"])]
        graph("onnx_wide", [numpy_helper.from_array(np.zeros((3, 70000), np.float32), "W"), numpy_helper.from_array(np.zeros((70000, 1), np.float32), "W2")],
              [helper.make_node("MatMul", ["obs", "W"], ["h"]), helper.make_node("MatMul", ["h", "W2"], ["y"])])
        graph("onnx_nodata", [TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[3, 4])], one)
        graph("onnx_huge", [TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[300000, 300000], raw_data=b"\0" * 16)], one)
        graph("onnx_int", [numpy_helper.from_array(np.zeros((3, 4), np.int64), "W")], one)
        external = TensorProto(name="W", data_type=TensorProto.FLOAT, dims=[3, 4], data_location=TensorProto.EXTERNAL)
        external.external_data.add(key="location", value="../../../etc/passwd")
        graph("onnx_external", [external], one)
    return values


def import_hostile_cases():
    """argv of microrl import's hostile lines (issue 39)."""
    out = [["import", src, "--out", "{out}"] for src in ("{sb3_bomb}", "{sb3_bomb_lying}", "{pt_bomb}", "{sb3_space_exec}", "{sb3_space_system}")]
    out += [["import", "{sb3_td3_data}", "--vecnormalize", pkl, "--out", "{out}"] for pkl in ("{pkl_exec}", "{pkl_system}")]
    out += [["import", "{sb3_td3_data}", "--out", "{out}"] + v for v in (["--references", "500", "--check", "10"], ["--references", "9", "--check", "8"],
                                                                         ["--action-low", "-1", "--action-high", "1"], ["--action-low", "1", "--action-high", "-1"])]
    out += [["import", "{onnx_garbage}", "--out", "{out}"] + v for v in (["--action-low", "-1", "--action-high", "1"], ["--clip-actions", "--action-low", "1", "--action-high", "1"],
                                                                         ["--scale-actions", "--action-low", "0,1", "--action-high", "0,2"], ["--trust-pickle"])]
    out += [["import", "{pt_garbage}", "--out", "{out}", "--trust-pickle"], ["import", "{onnx_garbage}", "--out", "{out}", "--obs-stats", "{npz_bomb}"]]
    if _importable("torch"):
        out += [["import", "{pt_%s}" % n, "--out", "{out}"] for n in ("zero_width", "wide", "deep", "stride0", "int", "complex")]
        out += [["import", "{pt_buffers}", "--out", "{out}", "--action-low", "-1", "--action-high", "1"],
                ["import", "{pt_buffers}", "--out", "{out}", "--action-low", "1", "--action-high", "-1"]]
    if _importable("onnx"):
        out += [["import", "{%s}" % n, "--out", "{out}"] for n in ("onnx_wide", "onnx_nodata", "onnx_huge", "onnx_int", "onnx_external")]
    return out
# ---- end of microrl import's hostile sources (issue 39) ----


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="subcommands to run, comma-separated (train, train-ppo, eval, export, render, plot, sweep, demo, train-on-board, deploy, mip, bench, board, import, info, cli)")
    ap.add_argument("--workers", type=int, default=2, help="command lines run at once (default 2)")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds after which a line counts as accepted and is stopped (default 30)")
    ap.add_argument("--list", action="store_true", help="print the command lines and stop")
    ap.add_argument("--json", action="store_true", help="print one JSON object: the counts and every failing line")
    args = ap.parse_args(argv)
    selected = cases()
    if args.only:
        wanted = set(args.only.split(","))
        selected = [c for c in selected if c[0] in wanted]
    if args.list:
        for case in selected:
            print(show(["microrl"] + case[1], case[2]["env"] if len(case) > 2 else None))
        return 0
    done = [0]

    def progress(r):
        done[0] += 1
        if not args.json and not r.get("ok", True):
            why = ", ".join(k for k in ("traceback", "wrong_exit", "not_one_line", "ran_on") if r[k]) + (", wrote %s" % r["wrote"] if r["wrote"] else "")
            print("[%d/%d] FAIL (%s; exit %s): %s\n    %s" % (done[0], len(selected), why, r["code"], show(["microrl"] + r["argv"], r.get("env")), r["last_line"][:300]), file=sys.stderr, flush=True)

    t0 = time.time()
    results = run_all(selected, args.timeout, args.workers, progress)
    counts = summary(results)
    counts.update(seconds=round(time.time() - t0, 1), load=os.getloadavg()[0], root=IS_ROOT, setpriv=bool(SETPRIV))
    if args.json:
        print(json.dumps({"counts": counts, "failures": [{k: r[k] for k in ("command", "argv", "env", "code", "traceback", "ran_on", "wrong_exit", "not_one_line", "wrote", "last_line")}
                                                         for r in results if "skipped" not in r and not r["ok"]]}))
    else:
        print("tried %(tried)d bad command lines (skipped %(skipped)d): traceback %(traceback)d, exit other than 2 %(wrong_exit)d, "
              "more than one line %(not_one_line)d, ran on %(ran_on)d, wrote files %(wrote)d; failed %(failed)d "
              "(%(seconds)s s, load %(load).2f)" % counts)
        for k, v in counts["by_command"].items():
            print("  %-15s %4d tried, %3d failed" % (k, v["tried"], v["failed"]))
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
