"""Native kernels against plain Python on an emulated microcontroller, in one run: the forward
pass of a 13-64-64-4 policy (float native, float plain, and the same network quantised to int16
on the native C kernel and on the viper one) and one TD3 update (Pendulum, policy delay 2: the
mean over pairs of updates), on the same board, as ratios.

  MICRORL_QEMU_FIRMWARE=.../firmware.elf python bench/qemu_board.py [--arch armv7m|rv32imc] [--json]

The firmware is MicroPython's qemu port built from its own sources by its own documentation
(ports/qemu/README.md): BOARD=MPS2_AN385 (Cortex-M3, no FPU: soft float) for armv7m, VIRT_RV32 for
rv32imc. Emulated time is not real time: qemu translates the guest code and runs it at host
speed, with no model of the MCU's clock, flash wait states or caches, so only the ratio native /
plain within one run means something, and even that only roughly (soft-float helper calls, memory
accesses and the interpreter's dispatch are weighted by the host, not by a Cortex-M3).

TD3 here is the full 64-64 networks at batch 100 (a small replay buffer: sampling costs the same):
about 300 KB of heap, more than the qemu port's default (140 KB, like an ESP32 without PSRAM).
Build the firmware with the port's documented MICROPY_HEAP_SIZE option (1048576 was used here),
or pass a smaller --batch."""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (os.path.join(ROOT, "host"), os.path.join(ROOT, "device")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from microrl_host.board import qemu as qemu_board  # noqa: E402

BOARD_CODE = r"""
import gc, json, time
from microrl import backend
from microrl.nn import MLP
from microrl.rng import Rng
from microrl.task import Env
from microrl.tasks import pendulum
from microrl.td3 import TD3, TD3Config
res = {"mem_free_start": gc.mem_free()}
for name in ("native", "plain"):
    backend.use(name)
    gc.collect()
    net = MLP([13, 64, 64, 4], ("relu", "identity"), trainable=False).init(Rng(1))
    for i in range(13):
        net.input_buf[i] = 0.1 * i - 0.6
    net.forward(1)
    reps = FORWARD_REPS if name == "native" else max(1, FORWARD_REPS // 100)
    t = time.ticks_us()
    for _ in range(reps):
        net.forward(1)
    res[name + "_forward_us"] = time.ticks_diff(time.ticks_us(), t) / reps
    res[name + "_action0"] = net.output_buf[0]
    net = None
    gc.collect()
    agent = TD3(Env(pendulum), TD3Config(hidden=(64, 64), batch=BATCH, warmup=WARMUP, replay_capacity=REPLAY), 0)
    while agent.steps < WARMUP:
        agent.step()
    agent.train_step()
    pairs = PAIRS if name == "native" else max(1, PAIRS // 20)
    gc.collect()
    t = time.ticks_us()
    for _ in range(2 * pairs):
        agent.train_step()
    res[name + "_td3_update_us"] = time.ticks_diff(time.ticks_us(), t) / (2 * pairs)
    gc.collect()
    res[name + "_mem_free_after_td3"] = gc.mem_free()
    agent = None
    gc.collect()
# int16: the same 13-64-64-4 quantised, on each integer kernel
from array import array
from microrl import fixedpoint
from microrl.policy import Policy
backend.use("native")
net = MLP([13, 64, 64, 4], ("relu", "identity"), trainable=False).init(Rng(1))
pol = Policy([13, 64, 64, 4], ("relu", "identity"), params=net.params)
r = Rng(2)
calib = []
for _ in range(20):
    row = array("f", range(13))
    for i in range(13):
        row[i] = r.uniform(-1, 1)
    calib.append(row)
obs = calib[0]
for kernel in ("native", "viper"):
    fixedpoint.use(kernel)
    q = fixedpoint.quantise(pol, calib)
    xq = array("h", range(13))
    for i in range(13):
        xq[i] = int(obs[i] * (1 << q.fx[0]))
    q.forward_int(xq)
    reps = FORWARD_REPS if kernel == "native" else max(1, FORWARD_REPS // 10)
    t = time.ticks_us()
    for _ in range(reps):
        q.forward_int(xq)
    res["int16_" + kernel + "_forward_us"] = time.ticks_diff(time.ticks_us(), t) / reps
    t = time.ticks_us()
    for _ in range(reps):
        q(obs)
    res["int16_" + kernel + "_call_us"] = time.ticks_diff(time.ticks_us(), t) / reps
    res["int16_" + kernel + "_output"] = list(q.forward_int(xq))[:4]
    q = None
    gc.collect()
fixedpoint.use(None)
print("RESULT " + json.dumps(res))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="armv7m", choices=sorted(qemu_board.BOARDS))
    ap.add_argument("--firmware", default=os.environ.get("MICRORL_QEMU_FIRMWARE"), help="the qemu port's firmware.elf (default $MICRORL_QEMU_FIRMWARE)")
    ap.add_argument("--batch", type=int, default=100, help="TD3 batch (default 100, as TD3Config)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.firmware or not os.path.isfile(args.firmware):
        ap.error("name MicroPython's qemu port firmware.elf with --firmware or MICRORL_QEMU_FIRMWARE (see the docstring)")
    code = "FORWARD_REPS = 200\nPAIRS = 10\nBATCH = %d\nWARMUP = %d\nREPLAY = %d\n" % (args.batch, 2 * args.batch, 2 * args.batch) + BOARD_CODE
    with tempfile.TemporaryDirectory() as work:
        image = qemu_board.build_romfs(work, args.arch)
        with qemu_board.QemuBoard(args.firmware, args.arch, image) as board:
            out = board.run(code, timeout=3600)
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if not line:
        sys.exit("the board did not finish:\n" + out[-3000:])
    res = json.loads(line[-1][len("RESULT "):])
    res["arch"] = args.arch
    res["batch"] = args.batch
    res["forward_plain_over_native"] = res["plain_forward_us"] / res["native_forward_us"]
    res["td3_update_plain_over_native"] = res["plain_td3_update_us"] / res["native_td3_update_us"]
    res["int16_native_and_viper_same_integers"] = res["int16_native_output"] == res["int16_viper_output"]
    res["note"] = "emulated time (qemu), not real time: only the ratios mean something"
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print("qemu %s board, emulated time (not real time; compare the ratios only)" % args.arch)
    print("forward 13-64-64-4 (relu, relu, identity):  native %9.0f us   plain %11.0f us   plain/native %6.1fx" % (res["native_forward_us"], res["plain_forward_us"], res["forward_plain_over_native"]))
    print("TD3 update (64-64, batch %d): native %9.0f us   plain %11.0f us   plain/native %6.1fx" % (args.batch, res["native_td3_update_us"], res["plain_td3_update_us"], res["td3_update_plain_over_native"]))
    print("forward 13-64-64-4 (relu, relu, identity), relative to the int16 native kernel (same run):")
    base = res["int16_native_forward_us"]
    for label, key in (("int16 native (C)", "int16_native_forward_us"), ("int16 viper", "int16_viper_forward_us"),
                       ("float native (C)", "native_forward_us"), ("float plain", "plain_forward_us")):
        print("  %-18s %11.0f us  %8.1fx" % (label, res[key], res[key] / base))
    print("  policy call (quantise obs + forward): int16 native %.0f us, int16 viper %.0f us" % (res["int16_native_call_us"], res["int16_viper_call_us"]))
    print("  int16 native and viper give the same integers: %s" % res["int16_native_and_viper_same_integers"])


if __name__ == "__main__":
    main()
