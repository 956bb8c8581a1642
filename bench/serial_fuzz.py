"""Lost requests on a hostile serial line: N good requests to microrl.serve on a virtual board (or
a real one with --port), with garbage, frames cut at random points, frames with a bit flipped and
oversized headers written between them (microrl_host/board/serial_fuzz.py). Goal: 0 lost. No noise
item completes into a valid frame with the bytes after it (such an item loses its last bytes:
counted as noise_shortened), so a lost request is the board's fault, never the fuzzer's.

    python bench/serial_fuzz.py [-n 10000] [--seed 0] [--noise 1.0] [--port PORT] [--json]
"""
import argparse
import json
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "host"), os.path.join(ROOT, "device")]

from board_serial import NETWORKS, board_process, make_policy  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=10000, help="good requests (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=1.0, help="noise items per good request, on average (default 1.0)")
    ap.add_argument("--batch", type=int, default=200, help="requests written per batch (default 200, at most 249)")
    ap.add_argument("--port", help="a real board (default: a virtual board)")
    ap.add_argument("--heap", default=None, help="the virtual board's heap (default: microrl_host.board.virtual.DEFAULT_HEAP)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)

    from microrl_host.board.virtual import DEFAULT_HEAP
    from microrl_host.board.deploy import BOARD_POLICY, deploy
    from microrl_host.board.serial_fuzz import fuzz
    from microrl_host.board.serial_link import SerialLink

    heap = args.heap or DEFAULT_HEAP
    with tempfile.TemporaryDirectory() as folder, board_process(args.port, heap, folder) as (port, described):
        path = os.path.join(folder, "policy.mrlp")
        policy = make_policy(path, NETWORKS[0][1])
        deploy(port, path)
        with SerialLink(port, policy_path=BOARD_POLICY) as link:
            result = fuzz(link, policy, args.n, seed=args.seed, batch=args.batch, noise_per_request=args.noise)
            action, _ = link.infer([0.5, -0.5, 1.0])  # still serving, with its policy
            result["still_serving"] = abs(action[0] - policy([0.5, -0.5, 1.0])[0]) < 1e-5
    result.update({"board": described, "seed": args.seed, "noise_per_request": args.noise, "load": os.getloadavg()})
    if args.json:
        print(json.dumps(result))
    else:
        print("board: %s" % described)
        print("lost requests: %d of %d (goal 0), noise items %s (%d bytes taken off items that would have completed into a frame), "
              "%d error frames, %.1f s, still serving: %s, load %.1f"
              % (result["lost"], result["requests"], result["noise_items"], result["noise_shortened"], result["error_frames"], result["seconds"],
                 result["still_serving"], result["load"][0]))
        for e in result["lost_examples"]:
            print("  lost in the batch from request %d: seqs %s (batch finished: %s)" % (e["batch_start"], e["seqs"], e["finished"]))
    return 0 if result["lost"] == 0 and result["still_serving"] else 1


if __name__ == "__main__":
    sys.exit(main())
