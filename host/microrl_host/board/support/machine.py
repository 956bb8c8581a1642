# The virtual board's `machine`: the unix port's own module plus what boards have and it lacks.
# The virtual board (microrl_host/board.py) restarts the process when it exits; exit code 109
# marks a hard reset.
from umachine import *  # noqa: F401,F403


def reset():
    raise SystemExit(109)


def unique_id():
    return b"microrl-virtual"


def freq(*args):
    return 240000000
