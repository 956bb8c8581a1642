"""Compiled functions that exist only to be linked into their callers (MICRORL_LINK_ONLY=0
turns this off).

numba turns every function it compiles into machine code, then links that function's
optimised LLVM module into each caller and optimises and generates code for the whole again: a
function two calls deep (the training loop, the update, forward) was optimised and generated
three times. A function that only compiled code calls (no Python wrapper) needs neither its own
machine code nor its own optimised module: here its library links what it calls and stops, and
the top-level function that is called from Python optimises and generates the whole once (and
caches it on disk, so these functions need no disk cache of their own).

This reaches into numba's code generation (its CPU code library and lowering pass), so it is on
only for the numba versions it was tested with; any other version compiles as numba always does.
"""
import os

import numba

TESTED = ((0, 68),)  # numba (major, minor) versions this was checked with
_version = tuple(int(p) for p in numba.__version__.split(".")[:2] if p.isdigit())
NUMBA_TESTED = _version in TESTED  # cache_load.py reaches into numba too, for the same versions
ENABLED = os.environ.get("MICRORL_LINK_ONLY", "1") != "0" and NUMBA_TESTED

JIT_OPTIONS = {}
CACHE = True  # without link-only libraries, compiled-only functions keep numba's disk cache

if ENABLED:
    from numba.core.codegen import JITCodeLibrary
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.compiler_lock import require_global_compiler_lock
    from numba.core.compiler_machinery import LoweringPass, register_pass
    from numba.core.typed_passes import NativeLowering

    class _EnvNotSet:
        """The library's codegen for numba's lowering pass, which would write the function's
        environment pointer into its machine code: there is none (the caller's has its own)."""

        def __init__(self, codegen):
            self._codegen = codegen

        def set_env(self, env_name, env):
            pass

        def __getattr__(self, name):
            return getattr(self._codegen, name)

    class LinkOnlyLibrary(JITCodeLibrary):
        """A code library that is linked into callers and never run on its own."""

        def finalize(self):
            require_global_compiler_lock()
            self._raise_if_finalized()
            seen = set()
            for library in self._linking_libraries:  # as numba's finalize, without optimising or generating code
                if library not in seen:
                    self._reload_init.update(library._reload_init)
                    seen.add(library)
                    self._final_module.link_in(library._get_module_for_linking(), preserve=True)
            self._finalized = True

        def get_pointer_to_function(self, name):
            self._ensure_finalized()
            return 0  # no machine code: numba's entry point for a function without a Python wrapper

        @property
        def codegen(self):
            return _EnvNotSet(self._codegen)

    @register_pass(mutates_CFG=False, analysis_only=False)
    class UseLinkOnlyLibrary(LoweringPass):
        _name = "microrl_use_link_only_library"

        def __init__(self):
            LoweringPass.__init__(self)

        def run_pass(self, state):
            if state.library is None:
                state.library = LinkOnlyLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
            return False

    class LinkOnlyCompiler(CompilerBase):
        """numba's nopython pipeline, lowering into a LinkOnlyLibrary."""

        def define_pipelines(self):
            pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
            at = [i for i, (p, _) in enumerate(pm.passes) if p is NativeLowering]
            if len(at) != 1:
                raise RuntimeError("numba's pipeline has changed: run with MICRORL_LINK_ONLY=0 and report this")
            pm.passes.insert(at[0], (UseLinkOnlyLibrary, "link-only library"))
            pm.finalize()
            return [pm]

    JIT_OPTIONS = {"pipeline_class": LinkOnlyCompiler}
    CACHE = False
