import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# test this checkout's code even when another checkout is pip-installed in editable mode
for sub in ("host", "device"):
    path = os.path.join(ROOT, sub)
    if path not in sys.path:
        sys.path.insert(0, path)
sys.path.insert(0, os.path.join(ROOT, "tests"))
