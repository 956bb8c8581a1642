"""microrl deploy --plan: what a deploy would take, per board, with nothing written (board/plan.py)."""
import json
import sys

from . import CommandError


def _kb(n):
    return "%.1f KB" % (n / 1024.0) if n < 10 << 20 else "%.0f MB" % (n / 1048576.0)


def _fits(flag):
    return {True: "fits", False: "DOES NOT FIT", None: "unknown"}[flag]


def _targets(args, transport_info):
    from ..board import plan

    keys = []
    for b in args.board or ([] if args.port else ["all"]):
        keys += sorted(plan.BOARD_TYPES) if b == "all" else [b]
    targets = [transport_info] if transport_info else []
    return targets + [plan.type_target(k) for k in dict.fromkeys(keys)]


def _at_hand(args):
    """The board at hand's figures, read without writing anything (board_info, machine.freq())."""
    from ..board import plan
    from ..board.deploy import DeployError, board_info, check_board
    from ..board.serial_link import LinkError, connect, disconnect

    try:
        transport = connect(args.port, timeout=args.timeout, soft_reset=True)
    except LinkError as e:
        raise CommandError(str(e)) from None
    try:
        info = board_info(transport)
        check_board(info)
        return plan.board_target(info, plan.board_clock(transport))
    except DeployError as e:
        raise CommandError(str(e)) from None
    finally:
        disconnect(transport)


def run_plan(args, policy_path, chosen_tasks):
    from ..board import plan
    from ..board.deploy import DeployError, board_task, load_policy, policy_tasks

    try:
        policy = load_policy(policy_path) if policy_path else None
        board_tasks = [board_task(t) for t in chosen_tasks] if chosen_tasks is not None else (policy_tasks(policy) if policy is not None else [])
    except DeployError as e:
        raise CommandError(str(e)) from None
    task = next((t.module for t in board_tasks if t.module is not None), None)
    here = _at_hand(args) if args.port else None
    reports = []
    try:
        data = plan.load_data()
        for target in _targets(args, here):
            reports.append(plan.plan_board(target, policy, policy_path, args.mpy, not args.no_native, board_tasks, data, task))
    except DeployError as e:
        raise CommandError(str(e)) from None
    if args.json:
        print(json.dumps({"plan": reports, "written": []}))
        return 0
    for r in reports:
        _print(r)
    print("nothing was written to any board (--plan)", file=sys.stderr)
    return 0


def _print(r):
    print("%s%s: %s, %s MHz, %s" % (r["board"], " (nominal figures)" if r["nominal"] else "", r["arch"] or "no native code",
                                   "%g" % r["clock_mhz"] if r["clock_mhz"] else "clock unknown", ("FPU: %s" % r["fpu"]) if r["fpu"] else "no FPU" if r["nominal"] else "FPU not reported"))
    if r["note"]:
        print("  (%s)" % r["note"])
    f, h = r["flash"], r["heap"]
    print("  flash: core %s (.%s), kernels %s, policy %s = %s of %s free: %s" % (
        _kb(f["core"]), f["format"], _kb(f["kernels"]) if f["kernels"] else "none", _kb(f["policy"]) if f["policy"] else "none", _kb(f["total"]),
        _kb(f["free"]) if f["free"] is not None else "?", _fits(f["fits"])))
    print("  heap: core %s, kernels up to %s, policy %s = %s of %s free: %s" % (
        _kb(h["core"]), _kb(h["kernels"]), _kb(h["policy"]), _kb(h["total"]), _kb(h["free"]) if h["free"] else "?", _fits(h["fits"])))
    step = r.get("policy_step")
    if "policy" in r:
        if step:
            print("  policy step (%s): %s instructions in the kernels%s (scaled from the %s; %s)" % (
                r["policy"]["describe"], format(step["instructions"], ","), ", at least %.0f µs" % step["us"] if step["us"] else "", step["from"], step["source"]))
        else:
            print("  policy step: unknown (no instruction counts recorded for %s: board/plan_data.json)" % r["arch"])
        q = r.get("policy_step_int16")
        if q:
            print("  the same policy as int16 (microrl export --int16): %s instructions%s" % (format(q["instructions"], ","), ", at least %.0f µs" % q["us"] if q["us"] else ""))
        t = r.get("training", {})
        if "bytes" in t:
            print("  training on the board (TD3, %s hidden, batch %d, replay %d rows): %s of heap: %s; the largest replay that fits: %d rows" % (
                "-".join(map(str, t["hidden"])), t["batch"], t["replay_default"], _kb(t["bytes"]), _fits(t["fits"]), t["largest_replay"]))
            s = t.get("step")
            if s:
                print("  training step: %s instructions in the kernels%s (scaled from a %s)" % (format(s["instructions"], ","), ", at least %.1f ms" % s["ms"] if s["ms"] else "", s["from"]))
            else:
                print("  training step: unknown (no instruction counts recorded for %s)" % r["arch"])
            c = t.get("chosen")
            if c:
                s = c["step"]
                print("  train-on-board --steps %d would choose %s hidden, batch %d, replay %d rows: %s of heap%s" % (
                    c["steps"], "-".join(map(str, c["hidden"])), c["batch"], c["replay"], _kb(c["bytes"]),
                    ", a training step at least %.1f ms (%s instructions)" % (s["ms"], format(s["instructions"], ",")) if s and s["ms"] else ""))
            elif "chosen" in t:
                print("  train-on-board: no network of its ladder fits this heap")
        else:
            print("  training on the board: not sized (no task of the policy's shape: name it with --task)")
    print("  mip package: %s (mpremote mip install --index URL %s: docs/boards.md)" % (r["mip_package"], r["mip_package"]))
    ref = r["reference_forward"]
    paper = r["paper_table2_us"]
    if ref or paper:
        ours = "%s instructions%s" % (format(ref["instructions"], ","), ", at least %.0f µs" % ref["us"] if ref["us"] else "") if ref else "not counted"
        theirs = ("paper: %d µs generic, %d DSP library, %d optimized" % (paper["generic"], paper["dsp"], paper["optimized"])) if paper else "not in the paper's Table 2"
        print("  Table 2's 13-64-64-4 relu forward: ours %s; %s" % (ours, theirs))
