"""This checkout's folders, and its code put on sys.path: shared by bench/_harness.py and
bench/bad_command_lines.py (each names its own order)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE = os.path.join(ROOT, "device")
HOST = os.path.join(ROOT, "host")


def on_path(*folders):
    """Put each folder first on sys.path in turn, unless it is there already (the last named ends first)."""
    for p in folders:
        if p not in sys.path:
            sys.path.insert(0, p)
