# What device tests need of pytest, in MicroPython-compatible Python.


def raises(exc_type, fn, *args, **kwargs):
    """Call fn and return the exception it raises; fail unless it is an exc_type."""
    try:
        fn(*args, **kwargs)
    except exc_type as e:
        return e
    raise AssertionError("%s not raised by %s" % (exc_type.__name__, getattr(fn, "__name__", fn)))


# Boards run single-precision MicroPython (float32); the unix port and CPython run doubles.
# 1e-10 is below float32's resolution at 1.0 (6e-8) and far above double's (1e-16).
SINGLE_PRECISION = 1.0 + 1e-10 == 1.0


def close(a, b, rel=1e-5, abs_=1e-6):
    return abs(a - b) <= abs_ + rel * abs(b)


def assert_close(a, b, rel=1e-5, abs_=1e-6, what=""):
    if not close(a, b, rel, abs_):
        raise AssertionError("%s: %r != %r (rel %g, abs %g)" % (what, a, b, rel, abs_))


def assert_all_close(xs, ys, rel=1e-5, abs_=1e-6, what=""):
    if len(xs) != len(ys):
        raise AssertionError("%s: lengths %d != %d" % (what, len(xs), len(ys)))
    for i in range(len(xs)):
        assert_close(xs[i], ys[i], rel, abs_, "%s[%d]" % (what, i))


_own_folder = None


def tmp_path(name):
    """A path for a test's file in a folder no other run shares: $MICRORL_TEST_TMP (pytest's
    tmp_path: tests/device/conftest.py sets it, and the suites that run these modules under
    micropython pass it on), else a new folder of this run's own under $TMPDIR or /tmp."""
    global _own_folder
    import os

    try:
        given = os.getenv("MICRORL_TEST_TMP")
        base = os.getenv("TMPDIR") or "/tmp"
    except AttributeError:  # a port without os.getenv
        given, base = None, "/tmp"
    if given:
        return given + "/" + name
    if _own_folder is None:
        for i in range(100000):  # os.mkdir makes a new folder or fails: no two runs get the same one
            folder = "%s/microrl_test_%d" % (base, i)
            try:
                os.mkdir(folder)
            except OSError as e:
                if e.args[0] == 17:  # EEXIST
                    continue
                raise
            _own_folder = folder
            break
    return _own_folder + "/" + name
