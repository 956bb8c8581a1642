"""Counts in messages agree with their number: "1 episode", "1 action", never "1 episodes"
(microrl.refusals.count, used by the host's commands and the board alike)."""
import os
import re

import pytest

from helpers import DEVICE, HOST, run_micropython_code, run_microrl, trained_pendulum_policy

from microrl.refusals import count


def test_count_says_one_and_many():
    assert count(1, "episode") == "1 episode"
    assert count(0, "episode") == "0 episodes"
    assert count(10, "action") == "10 actions"
    assert count(1, "copy", "copies") == "1 copy" and count(3, "copy", "copies") == "3 copies"


def test_count_on_the_board():
    # the board's messages (server.py, references.py) say it with the same function
    out = run_micropython_code("from microrl.refusals import count\nprint(count(1, 'action'), '|', count(4, 'action'))")
    assert out.strip() == "1 action | 4 actions"


def test_eval_of_one_episode_says_episode():
    proc = run_microrl("eval", trained_pendulum_policy(), "--episodes", 1)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"over 1 episode$", proc.stdout.strip()), proc.stdout
    assert "1 episodes" not in proc.stdout


def test_a_one_action_policy_is_said_so():
    import microrl

    from microrl_host.board.deploy import DeployError, check_shape

    policy = microrl.load(trained_pendulum_policy())  # Pendulum: 3 observations, 1 action
    with pytest.raises(DeployError) as e:
        check_shape(policy, "quadrotor", 18, 4)
    assert "takes 3 observations and gives 1 action," in str(e.value), str(e.value)


# the nouns whose counts are 1 in ordinary runs (one episode, a one-action task): any message that
# writes them after a bare %d would say "1 episodes" then
SLIPS = re.compile(r"%d (episodes|actions|observations|files|updates|references|reference vectors)\b")


@pytest.mark.parametrize("root", [HOST, DEVICE], ids=["host", "device"])
def test_no_count_written_without_count(root):
    found = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        if SLIPS.search(line):
                            found.append("%s:%d: %s" % (os.path.relpath(path, root), n, line.strip()))
    assert not found, "use microrl.refusals.count for these counts:\n" + "\n".join(found)
