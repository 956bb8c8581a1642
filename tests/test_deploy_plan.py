"""microrl deploy --plan: what a deploy would take, with nothing written to the board; its figures
against the files it counts and the recorded instruction counts (host/microrl_host/board/plan_data.json)."""
import hashlib
import json
import os

import pytest

from boardkit import cli, make_policy, needs_board
from helpers import assert_refused


def _plan(*args):
    proc = cli("deploy", "--plan", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)["plan"]


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "pendulum.mrlp"
    return str(path), make_policy(path)


def _entry(arch, what, precision=None, activation=None):
    from microrl_host.board import plan

    for c in plan.load_data()["counts"]:
        if c["arch"] == arch and c["what"] == what and c.get("precision", precision) == precision and c.get("hidden_activation", activation) == activation:
            return c
    return None


def test_plan_for_a_named_board_counts_the_files_deploy_copies(policy):
    from microrl_host.board import native, plan
    from microrl_host.board.deploy import board_sources, policy_tasks

    path, pol = policy
    (r,) = _plan(path, "--board", "esp32")
    assert r["board"] == "ESP32" and r["arch"] == "xtensawin" and r["nominal"]
    f = r["flash"]
    assert f["policy"] == os.path.getsize(path)
    assert f["kernels"] == os.path.getsize(native.mpy_for_arch("xtensawin"))
    assert f["core"] == sum(os.path.getsize(p) for p in board_sources(policy_tasks(pol)).values())
    assert f["total"] == f["core"] + f["kernels"] + f["policy"] and f["fits"] == (f["total"] <= f["free"])
    h = r["heap"]
    assert h["policy"] >= 4 * pol.n_params and h["total"] == h["core"] + h["kernels"] + h["policy"]
    assert r["mip_package"] == "microrl-xtensawin"
    # Table 2's forward from the recorded count, at the ESP32's clock
    ref = _entry("xtensawin", "forward", "float32", "relu")
    assert r["reference_forward"]["instructions"] == ref["instructions"]
    assert r["reference_forward"]["us"] == pytest.approx(ref["instructions"] / plan.BOARD_TYPES["esp32"].clock_mhz)
    assert r["paper_table2_us"]["optimized"] == plan.BOARD_TYPES["esp32"].paper[2]
    # the policy's step scaled by multiply-adds from that forward (relu hidden layers, as this policy's)
    step = r["policy_step"]
    assert step["instructions"] == round(ref["instructions"] * (3 * 64 + 64 * 64 + 64) / (13 * 64 + 64 * 64 + 64 * 4))
    train = r["training"]
    assert train["step"]["instructions"] == _entry("xtensawin", "td3_step", "float32", "relu")["instructions"]  # the same network and batch
    assert train["chosen"]["bytes"] <= h["free"]


def test_plan_with_mpy_counts_compiled_files_and_an_int16_policy(policy, tmp_path):
    path, _ = policy
    q = tmp_path / "p.mrlq"
    proc = cli("export", path, "--int16", "--obs-range", "1", "--out", q)
    assert proc.returncode == 0, proc.stderr
    (py,) = _plan(path, "--board", "rp2040")
    (mpy,) = _plan(str(q), "--board", "rp2040", "--mpy")
    assert mpy["flash"]["format"] == "mpy" and mpy["flash"]["core"] < py["flash"]["core"]
    assert mpy["flash"]["policy"] == os.path.getsize(q) < py["flash"]["policy"]
    assert mpy["policy_step"] is None  # no count recorded for armv6m: said, not guessed
    assert mpy["mip_package"] == "microrl-armv6m"


def test_plan_without_a_board_covers_every_named_type(policy):
    from microrl_host.board import plan

    reports = _plan(policy[0])
    assert sorted(r["board"] for r in reports) == sorted(t.name for t in plan.BOARD_TYPES.values())
    text = cli("deploy", "--plan", policy[0], "--board", "esp32-c3")
    assert text.returncode == 0 and "ESP32-C3" in text.stdout and "6645" in text.stdout and "Traceback" not in text.stderr


@pytest.mark.parametrize("args, words", [
    (["--plan", "missing.mrlp"], ["no policy file", "missing.mrlp"]),
    (["--board", "esp32"], ["--board", "--plan"]),
    ([], ["--port", "--plan"]),
    (["--plan", "--port", "/dev/no-such-port"], ["/dev/no-such-port"]),
])
def test_plan_refusals(args, words, tmp_path):
    assert_refused(cli("deploy", *args, cwd=tmp_path), *words)


def _tree_hashes(folder):
    out = {}
    for top, _, names in os.walk(folder):
        for name in names:
            p = os.path.join(top, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, folder)] = hashlib.sha256(f.read()).hexdigest()
    return out


@needs_board
def test_plan_on_the_board_at_hand_writes_nothing(policy, tmp_path):
    from microrl_host.board.deploy import deploy
    from microrl_host.board.virtual import VirtualBoard

    path, pol = policy
    other = tmp_path / "other.mrlp"
    make_policy(other, seed=9)
    with VirtualBoard(str(tmp_path / "board")) as b:
        deploy(b.port, path)
        before = _tree_hashes(b.folder)
        (r, esp32) = _plan(str(other), "--port", b.port, "--board", "esp32")
        assert _tree_hashes(b.folder) == before  # the new policy was not copied, nothing else touched
    assert r["nominal"] is False and r["arch"] == "x64" and esp32["board"] == "ESP32"
    assert r["flash"]["policy"] == os.path.getsize(other) and r["flash"]["fits"] is True
    assert 0 < r["heap"]["free"] and r["heap"]["fits"] is True
    assert r["kernels"].endswith("x64/microrl_kernels.mpy") and r["mip_package"] == "microrl-x64"
    assert r["clock_mhz"] == 240  # the virtual board's machine.freq()
    assert r["policy_step"] is None  # no emulated counts for x64


def test_recorded_xtensa_counts_are_the_harness_counts():
    """The forwards in plan_data.json are what the harness counts now (when the Xtensa tools are here)."""
    import subprocess
    import sys

    from helpers import ROOT

    harness = os.path.join(ROOT, "native_modules", "microrl_kernels", "xtensa", "harness.py")
    sys.path.insert(0, os.path.dirname(harness))
    try:
        import harness as h
    finally:
        sys.path.pop(0)
    if h.missing_tools():
        pytest.skip("the Xtensa tools are missing: %s" % h.missing_tools())
    out = subprocess.run([sys.executable, harness, "bench"], capture_output=True, text=True, timeout=600).stdout
    tanh = [line for line in out.splitlines() if "forward (tanh" in line][0]
    relu = [line for line in out.splitlines() if "forward (relu" in line][0]
    assert "%d instructions" % _entry("xtensawin", "forward", "float32", "tanh")["instructions"] in tanh
    assert "%d instructions" % _entry("xtensawin", "forward", "float32", "relu")["instructions"] in relu


def test_an_esp32_s2_at_hand_gets_no_kernels_and_the_plain_package(policy):
    """What board_info reports of an ESP32-S2 (xtensawin without an FPU): no kernels in the plan
    (deploy gives it none) and the `microrl` package, with the board's own heap, filesystem and clock."""
    from microrl_host.board import native, plan

    path, pol = policy
    mpy = 6 | 3 << 8 | native.MPY_ARCHS.index("xtensawin") << 10
    info = {"version": (1, 29, 0), "platform": "esp32", "machine": "ESP32S2 module with ESP32S2", "mpy": mpy, "arch": "xtensawin",
            "mem_free": 100000, "fs_free": 1 << 20}
    r = plan.plan_board(plan.board_target(info, 240000000), pol, path)
    assert r["flash"]["kernels"] == 0 and r["kernels"] is None and r["mip_package"] == "microrl"
    assert r["clock_mhz"] == 240 and r["heap"]["free"] == 100000 and r["flash"]["free"] == 1 << 20


def _harness_modules():
    import sys

    from helpers import ROOT

    subs = (("bench",), ("native_modules", "microrl_kernels", "riscv"), ("native_modules", "microrl_kernels", "arm"),
            ("native_modules", "microrl_kernels", "xtensa"))
    for sub in subs:
        sys.path.insert(0, os.path.join(ROOT, *sub))
    try:
        import board_plan_data
        import harness_arm
        import harness_rv
    finally:
        del sys.path[:len(subs)]
    return board_plan_data, harness_rv, harness_arm


@pytest.mark.parametrize("arch,core", [("rv32imc", None), ("armv7m", "m3"), ("armv7emsp", "m7"), ("armv7emsp", "m4f")])
def test_emulated_harness_computes_as_numpy_and_counts_as_recorded(arch, core):
    """The kernels compiled for rv32imc on qemu's RISC-V core (native_modules/microrl_kernels/riscv/),
    for armv7m on its Cortex-M3 board and for armv7emsp on its Cortex-M7 and M4F boards
    (native_modules/microrl_kernels/arm/): the 13-64-64-4 forwards compute what numpy does, and
    take the instructions plan_data.json has (the M4F as many as the M7, whose are recorded)."""
    import tempfile

    import numpy as np

    board_plan_data, harness_rv, harness_arm = _harness_modules()
    tools = harness_rv if core is None else harness_arm
    if tools.missing_tools():
        pytest.skip("the %s tools are missing: %s" % (arch, tools.missing_tools()))
    job, _ = board_plan_data.make_job([])
    with tempfile.TemporaryDirectory() as tmp:
        if core is None:
            result = harness_rv.run(job, harness_rv.build(tmp))
        else:
            result = harness_arm.run(job, harness_arm.build(tmp, core), core)
    ins = result.instructions
    assert round(sum(ins[6:9])) == _entry(arch, "forward", "float32", "relu")["instructions"]
    assert round(sum(ins[3:6])) == _entry(arch, "forward", "float32", "tanh")["instructions"]
    assert round(sum(ins[10:13])) == _entry(arch, "forward", "int16", "relu")["instructions"]
    # the relu forward's result (the job's ops 6-8: dense calls on the arrays the job holds), against numpy
    words = job.words
    ops, w = [], 0
    while w < len(words):
        n = {1: 9, 2: 12, 3: 10, 4: 4, 5: 3, 9: 12}[words[w]]
        ops.append(words[w:w + 1 + n])
        w += 1 + n

    def arr(offset, shape):
        return np.frombuffer(bytes(job.data[offset:offset + 4 * int(np.prod(shape))]), np.float32).reshape(shape)

    x = arr(ops[6][3], (1, 13))
    for op in ops[6:9]:
        _, W, b, _, y, _, _, n_out, n_in, act = op
        want = x @ arr(W, (n_out, n_in)).T + arr(b, (n_out,))
        want = np.maximum(want, 0) if act == 1 else want
        got = result[(y, (1, n_out), np.dtype("<f4"))]
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
        x = want.astype(np.float32)


def test_times_from_counts_stay_lower_bounds_on_a_dual_issue_cortex_m7(policy):
    """Times are instructions over the most a core completes in a cycle: one on the ESP32s and
    the C3, two on the Teensy 4.1's Cortex-M7 (once the Cortex-M counts were recorded, its 30,760
    instructions at one a cycle, 51 µs, were no lower bound)."""
    reports = {r["board"]: r for r in _plan(policy[0])}
    teensy, esp32 = reports["Teensy 4.1"]["reference_forward"], reports["ESP32"]["reference_forward"]
    assert teensy["instructions"] == _entry("armv7emsp", "forward", "float32", "relu")["instructions"]
    assert teensy["us"] == pytest.approx(teensy["instructions"] / (600 * 2))
    assert esp32["us"] == pytest.approx(esp32["instructions"] / 240)
