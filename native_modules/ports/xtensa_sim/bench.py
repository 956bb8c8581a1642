"""Native against plain inside MicroPython on the emulated Xtensa core (the xtensa_sim firmware,
the shipped xtensawin module), in emulated instructions: bench/qemu_board.py's workload (a
13-64-64-4 forward, float native and plain, int16 on the native and viper kernels; one TD3 update,
64-64, batch 100) under qemu -icount shift=0, where the emulated clock advances 1 ns per
instruction, so time.ticks_us() counts thousands of instructions (CCOUNT runs at the core's
40 MHz: one tick every 25 instructions). Instructions, not ESP32 cycles: no pipeline, cache,
flash wait-state or FPU latency model.

    python3 bench.py FIRMWARE [--json OUT]"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
for _p in (HERE, os.path.join(ROOT, "host"), os.path.join(ROOT, "device"), os.path.join(ROOT, "bench")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import sim_board  # noqa: E402
from microrl_host.board import qemu as qemu_board  # noqa: E402
from qemu_board import BOARD_CODE  # noqa: E402  (bench/qemu_board.py: the same workload as the ARM and RISC-V boards)


def run(firmware, batch=100):
    code = "FORWARD_REPS = 50\nPAIRS = 5\nBATCH = %d\nWARMUP = %d\nREPLAY = %d\n" % (batch, 2 * batch, 2 * batch) + BOARD_CODE
    with tempfile.TemporaryDirectory() as work:
        image = qemu_board.build_romfs(work, "xtensawin")
        with sim_board.SimBoard(firmware, image, icount=0) as board:
            out = board.run(code, timeout=7200)
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if not line:
        raise RuntimeError("the board did not finish:\n" + out[-3000:])
    raw = json.loads(line[-1][len("RESULT "):])
    # ticks_us under -icount shift=0: thousands of emulated instructions
    res = {k.replace("_us", "_kinsn"): v for k, v in raw.items()}
    res["batch"] = batch
    res["forward_plain_over_native"] = raw["plain_forward_us"] / raw["native_forward_us"]
    res["td3_update_plain_over_native"] = raw["plain_td3_update_us"] / raw["native_td3_update_us"]
    res["int16_native_and_viper_same_integers"] = raw["int16_native_output"] == raw["int16_viper_output"]
    return res


def kernel_instructions():
    """The kernels alone as bare functions on the same core (../../microrl_kernels/xtensa/harness.py
    bench): instructions of a 13-64-64-4 forward, float (tanh and relu hidden layers) and int16
    (relu), and of an Adam step."""
    import re
    import subprocess
    out = subprocess.run([sys.executable, os.path.join(ROOT, "native_modules", "microrl_kernels", "xtensa", "harness.py"), "bench"],
                         capture_output=True, text=True, check=True).stdout
    grab = lambda pattern: float(re.search(pattern, out).group(1))  # noqa: E731
    return {"forward_float_tanh_insn": grab(r"\(tanh, tanh, identity; one row\): (\d+)"),
            "forward_float_relu_insn": grab(r"\(relu, relu, identity; one row\): (\d+)"),
            "forward_int16_relu_insn": grab(r"in int16 .*?: (\d+) instructions"),
            "adam_insn_per_parameter": grab(r"\((\S+) per parameter\)")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("firmware")
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    res = {"micropython": run(args.firmware, args.batch), "kernels_bare": kernel_instructions(),
           "core": "qemu-system-xtensa -M sim -cpu de233_fpu (windowed, LX7 FPU), -icount shift=0",
           "unit": "emulated instructions (micropython: thousands, from time.ticks_us under -icount shift=0)"}
    print(json.dumps(res, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
