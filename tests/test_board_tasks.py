"""Any task on the board (issue 31, 4): deploy copies a task's module (a built-in or a user's
file), ROLLOUT runs the board's own copy of it by name in closed loop, train-on-board trains
against it; a hardware task (examples/hardware_motor: its step drives a motor through motor_io)
trains on the virtual board with a simulated motor behind that interface."""
import json
import os
import shutil
import struct

import pytest

from boardkit import cli, cli_json, make_policy, needs_board
from helpers import ROOT

from microrl import protocol as P

EXAMPLE = os.path.join(ROOT, "examples", "hardware_motor")
HARDWARE_TASK = os.path.join(EXAMPLE, "motor_position.py")


def _slider_source():
    from test_tasks import docs_example_source

    return docs_example_source()


def test_a_hardware_task_is_named_after_its_file_without_loading_on_the_host():
    """The host has no motor_io (nor machine): the task is the board's only, named after its
    file; deploy and train-on-board take it as it is (a defect: board_name took only modules)."""
    from microrl_host import tasks
    from microrl_host.board.deploy import board_task

    with pytest.raises(tasks.TaskImportError):
        tasks.resolve(HARDWARE_TASK)
    task = board_task(HARDWARE_TASK)
    assert (task.name, task.source, task.module) == ("motor_position", HARDWARE_TASK, None)
    assert "does not load on this host" in task.why_not_here
    # the demo trains on the host first: refused in one line, pointing at train-on-board
    proc = cli("demo", "--task", HARDWARE_TASK, "--steps", 10)
    assert proc.returncode == 2 and "train-on-board --task" in proc.stderr and "Traceback" not in proc.stderr


def test_rollout_payloads_of_another_shape_or_name_are_refused_on_the_board():
    with pytest.raises(ValueError, match="protocol 2"):
        P.unpack_rollout(struct.pack("<IH", 1, 2))  # protocol 1's ROLLOUT named no task
    assert P.unpack_rollout(P.pack_rollout(7, 3, "my_task2", 63)) == (7, 3, 63, "my_task2")
    for bad in ("", "2fast", "a.b", "../x", "x" * (P.TASK_NAME_MAX + 1), "é"):
        assert not P.is_task_name(bad), bad


@pytest.fixture(scope="module")
def slider_board(tmp_path_factory):
    """A virtual board with microrl, the docs' slider.py (a user's task file) and a 2-16-16-1
    policy deployed: the task from the policy's run (run.json names it; the file in the current
    folder), as `microrl deploy POLICY` does."""
    from microrl_host.board.virtual import VirtualBoard

    work = tmp_path_factory.mktemp("work")
    (work / "slider.py").write_text(_slider_source())
    make_policy(work / "s.mrlp", sizes=(2, 16, 16, 1), seed=3)
    (work / "s.run").mkdir()
    (work / "s.run" / "run.json").write_text(json.dumps({"task": "slider", "algo": "td3"}))
    with VirtualBoard(str(tmp_path_factory.mktemp("board"))) as b:
        b.work = work
        b.report = cli_json("deploy", "s.mrlp", "--port", b.port, cwd=work)
        yield b


@needs_board
def test_deploy_copies_the_task_the_policys_run_names_and_only_it(slider_board):
    report = slider_board.report
    assert list(report["tasks"]) == ["slider"] and report["tasks"]["slider"]["OBS_DIM"] == 2
    tasks_dir = os.path.join(slider_board.folder, "lib", "microrl", "tasks")
    assert sorted(os.listdir(tasks_dir)) == ["__init__.py", "slider.py"]
    assert open(os.path.join(tasks_dir, "slider.py")).read() == _slider_source()
    # a policy of another shape than the task named: refused, saying so
    make_policy(slider_board.work / "p3.mrlp")
    proc = cli("deploy", "p3.mrlp", "--task", "./slider.py", "--port", slider_board.port, cwd=slider_board.work)
    assert proc.returncode == 2 and "takes 3 observations" in proc.stderr and "slider" in proc.stderr


@needs_board
def test_rollout_runs_the_boards_copy_of_a_users_task_as_the_host_does(slider_board):
    """ROLLOUT by name against the board's slider.py: the same episodes as the device core on
    the host from the same starts, over several requests (more episodes than one reply holds)."""
    import microrl
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import Env
    from microrl_host import tasks
    from microrl_host.board.serial_link import LinkError, SerialLink

    module = tasks.resolve(str(slider_board.work / "slider.py")).module
    policy = microrl.load(str(slider_board.work / "s.mrlp"))
    episodes = P.ROLLOUT_EPISODES + 5
    host = rollouts(policy, Env(module, rng=Rng(21), evaluation=True), episodes)
    with SerialLink(slider_board.port, policy_path="policy.mrlp") as link:
        rows, steps, policy_us, total_us = link.rollout(module, 21, episodes)
        assert len(rows) == episodes and steps == sum(r[3] for r in host) and 0 < policy_us <= total_us
        for board_row, host_row in zip(rows, host):
            assert board_row[1:] == pytest.approx(host_row[1:], abs=1e-3) and board_row[0] == pytest.approx(host_row[0], rel=1e-4, abs=1e-3)
        with pytest.raises(LinkError, match="deploy it with microrl deploy --task"):
            link.rollout("not_deployed", 1, 1)
        with pytest.raises(LinkError, match="start at episode 0"):  # a request carrying on a run the board does not have
            link.request(P.ROLLOUT, P.pack_rollout(99, 1, "slider", 5))


def _hardware_board(tmp_path, heap="256K"):
    """A virtual board whose folder holds the simulated motor as motor_io.py (on a real board,
    examples/hardware_motor/motor_io.py drives the motor)."""
    from microrl_host.board.virtual import VirtualBoard

    fs = tmp_path / "fs"
    fs.mkdir()
    (fs / ".microrl-board").touch()  # a board's folder, that the host puts the plant in (docs/virtual-board.md)
    shutil.copy(os.path.join(EXAMPLE, "sim", "motor_io.py"), fs / "motor_io.py")
    return VirtualBoard(str(fs), heap=heap)


@needs_board
def test_a_hardware_task_trains_on_the_board_against_its_plant(tmp_path):
    """train-on-board --task ./motor_position.py: the task file deployed, TD3 on the board
    stepping the (simulated) motor through motor_io, the policy back and evaluated on the board
    (the host cannot load the task)."""
    with _hardware_board(tmp_path) as vb:
        r = cli_json("train-on-board", "--port", vb.port, "--task", HARDWARE_TASK, "--steps", 300, "--seed", 2, "--episodes", 3,
                     "--out", tmp_path / "m.mrlp", "--quiet", timeout=600)
        assert r["task"] == "motor_position" and r["eval_on"] == "board" and len(r["eval_returns"]) == 3
        assert r["bytes_per_transition"] == 11 and set(r["eval_summary"]) >= {"success_rate", "angle_error_rad"}
        assert os.path.exists(tmp_path / "fs" / "lib" / "microrl" / "tasks" / "motor_position.mpy")  # compiled for the board
        # the plant moved under the task's steps: the motor's simulated time is the steps' periods
        from boardkit import mpremote

        out = mpremote(vb.port, "exec", "import microrl.tasks.motor_position as t, motor_io\n"
                                         "from microrl.task import Env\nfrom microrl.rng import Rng\ne = Env(t, rng=Rng(1))\ne.reset()\nfor _ in range(50): e.step([6.0])\n"
                                         "print(motor_io.waited[1], e.s[2])").stdout.split()
        assert int(out[0]) == 51 and 20.0 < float(out[1]) < 31.0  # full voltage: near 5 rad/s per volt
        # a policy of another shape: refused once the board has said the task's, before the
        # policy is copied (the host cannot load this task): the board keeps the trained policy
        make_policy(tmp_path / "p3.mrlp", sizes=(2, 8, 1))
        proc = cli("deploy", tmp_path / "p3.mrlp", "--task", HARDWARE_TASK, "--port", vb.port)
        assert proc.returncode == 2 and "the task motor_position has 3 and 1" in proc.stderr, proc.stderr
        assert (tmp_path / "fs" / "policy.mrlp").read_bytes() == (tmp_path / "m.mrlp").read_bytes()


@needs_board
@pytest.mark.slow
@pytest.mark.learning
def test_a_hardware_task_learns_on_the_board(tmp_path):
    """Three seeds of 5,000 steps on the simulated motor: the policy turns to its targets. A motor
    left alone scores about -329 (the angle to a target uniform in +-pi: pi^2/3 a step for 100
    steps); measured -20 to -28 (seeds 0, 1)."""
    returns = []
    with _hardware_board(tmp_path) as vb:
        for seed in (0, 1, 2):
            r = cli_json("train-on-board", "--port", vb.port, "--task", HARDWARE_TASK, "--steps", 5000, "--seed", seed, "--episodes", 20,
                         "--out", tmp_path / ("m%d.mrlp" % seed), "--quiet", timeout=1200)
            returns.append(r["eval_return_mean"])
    assert sorted(returns)[1] > -120, returns


def _cartpole():
    from microrl_host import tasks

    if "cartpole" not in tasks.builtin_names():
        pytest.skip("the cart-pole is not a built-in task in this tree (branch m-cartpole)")
    return tasks.builtin("cartpole")


@needs_board
@pytest.mark.slow
def test_the_cartpole_runs_in_closed_loop_and_trains_on_the_virtual_board(tmp_path):
    """The built-in cart-pole swing-up on the board: deployed by name (only it), a policy against
    the board's own copy in closed loop giving the host's episodes, and TD3 trained there
    (train-on-board --task cartpole; its policy evaluated on the host's copy)."""
    import microrl
    from microrl.evaluate import rollouts
    from microrl.rng import Rng
    from microrl.task import Env
    from microrl_host.board.serial_link import SerialLink
    from microrl_host.board.virtual import VirtualBoard

    cartpole = _cartpole()
    policy = make_policy(tmp_path / "c.mrlp", sizes=(cartpole.OBS_DIM, 16, 16, cartpole.ACT_DIM), seed=5)
    policy = microrl.load(str(tmp_path / "c.mrlp"))
    with VirtualBoard(str(tmp_path / "fs"), heap="256K") as vb:
        report = cli_json("deploy", tmp_path / "c.mrlp", "--task", "cartpole", "--port", vb.port, "--mpy")
        assert list(report["tasks"]) == ["cartpole"] and report["tasks"]["cartpole"]["EPISODE_STEPS"] == cartpole.EPISODE_STEPS
        assert sorted(os.listdir(tmp_path / "fs" / "lib" / "microrl" / "tasks")) == ["__init__.mpy", "cartpole.mpy"]
        host = rollouts(policy, Env(cartpole, rng=Rng(8), evaluation=True), 2)
        with SerialLink(vb.port, policy_path="policy.mrlp") as link:
            rows, steps, policy_us, total_us = link.rollout("cartpole", 8, 2)
        assert steps == 2 * cartpole.EPISODE_STEPS and [r[3] for r in rows] == [r[3] for r in host]
        for board_row, host_row in zip(rows, host):
            assert board_row[0] == pytest.approx(host_row[0], rel=1e-3, abs=1e-2) and board_row[1] == host_row[1]
        r = cli_json("train-on-board", "--port", vb.port, "--task", "cartpole", "--steps", 3000, "--seed", 1, "--episodes", 2,
                     "--out", tmp_path / "trained.mrlp", "--quiet", timeout=900)
        assert r["task"] == "cartpole" and r["eval_on"] == "host" and r["bytes_per_transition"] == 2 * (cartpole.OBS_DIM + cartpole.ACT_DIM + 1) + 1
        assert len(r["returns"]) >= 2  # episodes of 1,000 steps ended on the board while it trained
        assert microrl.load(str(tmp_path / "trained.mrlp")).sizes[0] == cartpole.OBS_DIM and len(r["eval_returns"]) == 2


@needs_board
def test_demo_runs_a_users_task_file_end_to_end(tmp_path):
    """microrl demo --task ./slider.py: trained on the host, deployed with its task, the board's
    closed loop giving the host's episodes, the serial loop stepping the host's copy."""
    (tmp_path / "slider.py").write_text(_slider_source())
    r = cli_json("demo", "--task", "./slider.py", "--steps", 1500, "--episodes", 3, "--requests", 30, timeout=900, cwd=tmp_path)
    assert r["task"] == r["board_task"] == "slider" and r["policy"] == str(tmp_path / "slider-policy.mrlp")
    assert r["board_return_max_diff"] < 1e-3 and r["board_success_matches_host"] and 0 < r["board_steps"] <= 3 * 200
    assert r["serial_steps"] == 30 and r["p50_us"] > 0
    assert sorted(os.listdir(tmp_path)) == ["slider-policy.mrlp", "slider.py"]
