"""Rebuild the compiled code that ships with the package (host/microrl_host/nn/seed.py) after a
change to numba-compiled code: tests/test_seed.py fails until it is rebuilt.

    python tools/build_seed.py
"""
import os
import sys

sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d) for d in ("host", "device")]

from microrl_host.nn import seed  # noqa: E402

# what the seed holds: everything a first run of these commands compiles (tests/test_seed.py runs them)
COMMANDS = (
    ["train", "pendulum", "--algo", "td3", "--steps", "1500"],
    ["train", "pendulum", "--algo", "sac", "--steps", "1500"],
)

if __name__ == "__main__":
    path, count = seed.build(COMMANDS)
    print("%s: %d compiled functions, %d bytes" % (path, count, os.path.getsize(path)))
