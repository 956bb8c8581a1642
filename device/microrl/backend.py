# The one seam every array operation goes through. Buffers are always array('f') (or 'd' in
# gradient checks); a backend makes views of them once, at allocation, and its kernels work on
# those views in place. Choice, in order: the native C module, ulab, numpy (CPython), plain Python.
# MICRORL_BACKEND (environment, CPython) or microrl.backend.use(name) forces one.

_ORDER = ("native", "ulab", "numpy", "plain")
_impl = None
_name = None


def load(name):
    """The backend module of that name (ImportError when it cannot load here)."""
    if name == "native":
        try:
            from . import _native as impl
        except ValueError as e:  # a microrl_kernels.mpy of another architecture or .mpy version
            raise ImportError("microrl_kernels.mpy cannot load here: %s" % e)
    elif name == "ulab":
        from . import _ulab as impl
    elif name == "numpy":
        from . import _numpy as impl
    elif name == "plain":
        from . import _plain as impl
    else:
        raise ValueError("unknown backend %r; choose one of %s" % (name, ", ".join(_ORDER)))
    return impl


def _forced():
    try:
        import os

        return os.environ.get("MICRORL_BACKEND") or None
    except (ImportError, AttributeError):  # MicroPython has no os.environ
        try:
            import os

            return os.getenv("MICRORL_BACKEND") or None
        except Exception:
            return None


def use(name=None):
    """Select a backend by name, or the best importable one when name is None. Returns its name.
    Networks allocated before a switch keep the views of the backend they were built with."""
    global _impl, _name
    if name is not None:
        _impl = load(name)
        _name = name
        return name
    for candidate in _ORDER:
        try:
            _impl = load(candidate)
            _name = candidate
            return candidate
        except ImportError:
            pass
    raise ImportError("no backend importable")  # plain always is; kept for clarity


def impl():
    if _impl is None:
        use(_forced())
    return _impl


def name():
    impl()
    return _name


def available():
    """Names of the backends importable here."""
    found = []
    for candidate in _ORDER:
        try:
            load(candidate)
            found.append(candidate)
        except ImportError:
            pass
    return found
