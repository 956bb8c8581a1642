"""Bad command lines (issue 30, items 8 and 9): each ends in one line naming the problem, exit 2,
no traceback, before any work, nothing written. The cases the issue reproduced, each with the
words its line must say, and a spread of bench/bad_command_lines.py's sweep (every subcommand);
the whole sweep (900+ lines) is the bench."""
import os
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import bad_command_lines as sweep  # noqa: E402

# (argv with the sweep's {fixture} placeholders, words the one line must hold)
ISSUE_CASES = [
    (["train", "pendulum", "--seed", str(2**64), "--out", "{out}", "--run-dir", "{run}"], ["--seed", "from 0 to 2**32-1"]),
    (["train", "pendulum", "--hidden", "1000000,1000000", "--out", "{out}", "--run-dir", "{run}"], ["at most 65535 units"]),
    (["train", "pendulum", "--hidden", "65535,65535,65535", "--out", "{out}", "--run-dir", "{run}"], ["needs about", "of memory", "smaller --hidden"]),
    (["train", "pendulum", "--replay-capacity", str(10**12), "--out", "{out}", "--run-dir", "{run}"], ["a buffer of 1,000,000,000,000 transitions needs about"]),
    (["train", "pendulum", "--hidden", "70000", "--out", "{out}", "--run-dir", "{run}"], ["at most 65535 units"]),
    (["train", "pendulum", "--steps", str(10**30), "--out", "{out}", "--run-dir", "{run}"], ["--steps", "from 1 to 10,000,000,000"]),
    (["train", "pendulum", "--algo", "td3", "--threads", "3", "--out", "{out}", "--run-dir", "{run}"], ["TD3 takes 1 or 2"]),
    (["eval", "{policy}", "--env", "Pendulum-v1", "--seed", "-1"], ["--seed", "expected a whole number >= 0"]),
    (["sweep", "pendulum", "--algo", "td3", "--run-dir", "{text}", "--quiet"], ["--run-dir", "a regular file, not a folder"]),
    (["eval", "{unreadable}"], ["cannot be read", "Permission denied"]),
    (["export", "{unreadable}", "--int16", "--out", "{out_q}"], ["cannot be read", "Permission denied"]),
    (["deploy", "--port", "{missing}", "--policy", "{unreadable}"], ["Permission denied"]),
    (["bench", "serial", "--port", "{missing}", "--policy", "{unreadable}"], ["Permission denied"]),
    (["export", "{policy}", "--int16", "--obs-range", "40000", "--out", "{out_q}"], ["int16 fixed point holds +-32767", "--obs-range"]),
    (["eval", "{denormal}"], ["obs_std[0]", "below the smallest normal float32"]),
    (["eval", "{nonzero_reserved}"], ["reserved header bytes 14-15 and the header's padding must be zero"]),
    (["render", "{nonzero_padding}", "--out", "{out_gif}"], ["reserved header bytes 14-15 and the header's padding must be zero"]),
    (["train", "pendulum", "--out", "{node}", "--run-dir", "{run}"], ["not a regular file"]),
    (["train", "pendulum", "--out", "{deep}/x.mrlp", "--run-dir", "{run}"], ["does not exist", "one missing folder at most"]),
    (["train", "pendulum", "--resume", "--out", "{out}", "--run-dir", "{run_fifo_csv}"], ["progress.csv", "named pipe"]),
    (["plot", "{run_fifo_csv}"], ["named pipe"]),
    (["demo", "--out", "{out}", "--quiet", "--heap", "abc"], ["--heap abc"]),
    (["sweep", "nosuchtask", "--run-dir", "{run}", "--quiet", "--seeds", "0"], ["unknown MuJoCo task"]),
]


@pytest.fixture(scope="module")
def results():
    every = sweep.cases()
    # a spread over every subcommand and kind of value ('board sim' is tests/test_board_sim.py's: a virtual board's own options)
    spread = [c for c in every if c[0] != "board"][::12]
    selected = [("issue", argv) for argv, _ in ISSUE_CASES] + spread
    return sweep.run_all(selected, timeout=120, workers=2)


@pytest.mark.parametrize("index", range(len(ISSUE_CASES)))
def test_the_issues_cases_say_what_is_wrong_in_one_line(results, index):
    r = results[index]
    argv, words = ISSUE_CASES[index]
    if "skipped" in r:
        pytest.skip(r["skipped"])
    assert r["ok"], r
    for w in words:
        assert w in r["last_line"], (w, r["last_line"])


def test_a_spread_of_the_sweep_ends_in_one_line_and_exit_2(results):
    spread = [r for r in results[len(ISSUE_CASES):] if "skipped" not in r]
    assert len(spread) > 60
    failed = [(r["argv"], r["code"], r["last_line"], r["wrote"]) for r in spread if not r["ok"]]
    assert failed == []
