"""pyproject.toml's package list names every package of the tree: a package left out installs
only in editable mode (microrl.tasks was left out, and a wheel would have had no tasks)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_package_is_listed():
    with open(os.path.join(ROOT, "pyproject.toml")) as f:
        listed = set(re.findall(r'"([\w.]+)"', re.search(r"^packages = \[(.*)\]$", f.read(), re.M).group(1)))
    found = set()
    for top in ("device", "host"):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            if "__init__.py" in files:
                found.add(os.path.relpath(folder, os.path.join(ROOT, top)).replace(os.sep, "."))
    assert found and found <= listed, "not in pyproject.toml's packages: %s" % sorted(found - listed)
