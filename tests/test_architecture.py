"""The house rules of docs/architecture.md, checked on the source (imports parsed with ast):
the library (microrl_host outside commands/ and cli.py, and the device core) knows no command
line, nothing imports back up into cli/commands, and no two modules import each other in a
circle, counting imports inside functions too."""
import ast
import os
import re

from helpers import ROOT

HOST = os.path.join(ROOT, "host")
DEVICE = os.path.join(ROOT, "device")


def _modules():
    """{dotted name: path} of the importable modules of microrl_host and microrl. Board-side
    programs (board/programs, board/support) are files run on a board, not modules."""
    found = {}
    for base, package in ((HOST, "microrl_host"), (DEVICE, "microrl")):
        for folder, dirs, files in os.walk(os.path.join(base, package)):
            dirs[:] = [d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py"))]
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, f), base)[:-3].split(os.sep)
                    if rel[-1] == "__init__":
                        rel = rel[:-1]
                    found[".".join(rel)] = os.path.join(folder, f)
    return found


MODULES = _modules()


def _is_package(name):
    return MODULES[name].endswith("__init__.py")


def _imports(name):
    """Every module `name` imports (absolute names, as written or resolved from relative ones)."""
    tree = ast.parse(open(MODULES[name]).read())
    package = name if _is_package(name) else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            out.add(target)
            for a in node.names:  # `from . import x` imports the module x
                if target + "." + a.name in MODULES:
                    out.add(target + "." + a.name)
    return out


def _is_command_line(name):
    return name == "microrl_host.cli" or name == "microrl_host.commands" or name.startswith("microrl_host.commands.")


LIBRARY = [m for m in MODULES if not _is_command_line(m)]


def test_the_walk_finds_the_layers():
    for layer in ("microrl_host.algos.td3", "microrl_host.envs.mujoco", "microrl_host.nn.mlp", "microrl_host.board.deploy", "microrl_host.commands.train", "microrl.policy"):
        assert layer in MODULES
    assert len(LIBRARY) > 30


def test_no_argparse_outside_the_command_line():
    offenders = [m for m in LIBRARY if "argparse" in _imports(m)]
    assert offenders == []


def test_the_library_never_imports_the_command_line():
    offenders = {m: sorted(i for i in _imports(m) if _is_command_line(i)) for m in LIBRARY}
    assert {m: i for m, i in offenders.items() if i} == {}


def test_the_library_neither_prints_nor_raises_command_errors():
    """Printing and user-facing exits belong to commands/; the device core's server writes its
    frames to stdout, which is its job, not a print."""
    offenders = []
    for m in LIBRARY:
        for node in ast.walk(ast.parse(open(MODULES[m]).read())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append((m, node.lineno, "print"))
            if isinstance(node, ast.Name) and node.id == "CommandError":
                offenders.append((m, node.lineno, "CommandError"))
    assert offenders == []


# the exceptions, with their reasons: nn/blas.py loads scipy's BLAS extension without scipy.linalg's
# __init__ (0.3 s of every training process's start) and registers it where numba looks it up
# and the task registry enters a user's task file in sys.modules under its name, because numba's
# disk cache rebuilds a compiled function's environment by importing its module by name
FOLLOWABLE = {("microrl_host.nn.blas", "sys.modules"), ("microrl_host.tasks", "sys.modules")}


def test_no_lookups_a_reader_cannot_follow():
    offenders = []
    for m in MODULES:
        text = open(MODULES[m]).read()
        for word in ("import_module", "sys.modules", "._actions", "_option_string_actions", "_group_actions"):
            if word in text and (m, word) not in FOLLOWABLE:
                offenders.append((m, word))
    assert offenders == []


def test_no_import_cycles():
    graph = {m: sorted(i for i in _imports(m) if i in MODULES and i != m) for m in MODULES}
    # a package's __init__ importing its own submodules is not a cycle back up
    cycles = []
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in graph[m]:
            if n.startswith(m + ".") and _is_package(m):
                continue
            if state.get(n) == "open":
                cycles.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def test_readme_layout_and_architecture_doc_name_every_library_module():
    """Every module of the host library and every folder of it is named in the README's Layout
    section and in docs/architecture.md (a new module gets its line; a moved one its new place)."""
    readme = open(os.path.join(ROOT, "README.md")).read()
    layout = readme[readme.index("## Layout"):]
    layout = layout[: layout.index("\n## ", 4)]
    doc = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    names = set()
    for m in LIBRARY:
        if m.startswith("microrl_host"):
            path = MODULES[m]
            names.add(os.path.basename(os.path.dirname(path)) + "/" if path.endswith("__init__.py") else os.path.basename(path))
    names -= {"microrl_host/"}
    names |= {"programs/", "support/", "commands/", "cli.py"}
    missing = sorted((n, where) for n in names for where, text in (("README", layout), ("architecture.md", doc)) if n not in text)
    assert missing == []


def test_docs_name_no_file_that_is_gone():
    """The other direction: every `name.py` the README's Layout section or docs/architecture.md
    names is a file of the tree (a removed module leaves no line behind)."""
    import re

    readme = open(os.path.join(ROOT, "README.md")).read()
    layout = readme[readme.index("## Layout"):]
    layout = layout[: layout.index("\n## ", 4)]
    doc = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    files = set()
    for top in ("host", "device", "native_modules", "bench", "tests", "examples", "tools"):
        for _, _, names in os.walk(os.path.join(ROOT, top)):
            files.update(names)
    named = {(n, where) for where, text in (("README", layout), ("architecture.md", doc)) for n in re.findall(r"([\w]+\.py)\b", text)}
    assert sorted((n, where) for n, where in named if n not in files) == []


def test_the_host_uses_only_the_device_cores_public_modules():
    """microrl._plain, _numpy, _ulab, _native are the backends behind backend.py and nn.MLP: the host
    goes through those (nn.MLP(kernels="numpy")), so the kernels have one caller to keep working."""
    offenders = {m: sorted(i for i in _imports(m) if i.startswith("microrl._")) for m in MODULES if m.startswith("microrl_host")}
    assert {m: i for m, i in offenders.items() if i} == {}


# the modules that run any task the same way: the algorithms, the training driver and loop, the
# compiled task's binding, the networks; on the device, TD3, the task runner, evaluation, replay
TASK_NEUTRAL = [m for m in MODULES if m.startswith(("microrl_host.algos", "microrl_host.nn"))] + [
    "microrl_host.envs.task", "microrl_host.envs.gym", "microrl.td3", "microrl.task", "microrl.evaluate", "microrl.replay", "microrl.memory", "microrl.nn"]
# the board side (issue 31, 4): the serial protocol and the board's server, the host's link,
# deploy and on-board training, and the commands that drive a board, run any task by its name;
# the programs they run on a board (board/programs/*.py) likewise
BOARD_TASK_NEUTRAL = [m for m in MODULES if m.startswith("microrl_host.board.") and m != "microrl_host.board.programs"] + [
    "microrl.protocol", "microrl.server", "microrl_host.commands.demo", "microrl_host.commands.deploy", "microrl_host.commands.train_on_board"]
BOARD_PROGRAMS = sorted(os.path.join(HOST, "microrl_host", "board", "programs", f) for f in os.listdir(os.path.join(HOST, "microrl_host", "board", "programs"))
                        if f.endswith(".py"))


def _docstrings(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _task_names_in(paths):
    """(path, line, text) of every name, string or import in the files that names a built-in
    task; prose in docstrings and comments may mention one as an example."""
    import re

    names = sorted(f[:-3] for f in os.listdir(os.path.join(DEVICE, "microrl", "tasks")) if f.endswith(".py") and not f.startswith("_"))
    assert "pendulum" in names and "quadrotor" in names
    word = re.compile(r"(?<![a-z])(%s)(?![a-z])" % "|".join(names), re.IGNORECASE)
    offenders = []
    for m in paths:
        tree = ast.parse(open(MODULES.get(m, m)).read())
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            texts = []
            if isinstance(node, ast.Name):
                texts.append(node.id)
            elif isinstance(node, ast.Attribute):
                texts.append(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                texts.append(node.value)
            elif isinstance(node, ast.alias):
                texts.append(node.name)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                texts.append(node.name)
            elif isinstance(node, ast.ImportFrom) and node.module:
                texts.append(node.module)
            offenders += [(m, getattr(node, "lineno", 0), t) for t in texts if word.search(t)]
    return offenders


def test_no_algorithm_or_driver_module_names_a_task():
    """A task is one file plus its test (docs/architecture.md, Where to add): the modules that
    train, evaluate and store any task name none of them, in code, strings or imports (the
    registry, microrl_host/tasks.py, is the one place that knows names)."""
    assert _task_names_in(TASK_NEUTRAL) == []


def test_no_board_module_names_a_task():
    """The board side runs any task by name (issue 31, 4): the protocol carries a task's name, the
    server imports it, deploy copies its file, train-on-board trains against it; none of these
    modules, the commands that drive a board, nor the programs sent to a board name a task."""
    assert len(BOARD_TASK_NEUTRAL) > 8 and len(BOARD_PROGRAMS) > 5
    assert _task_names_in(BOARD_TASK_NEUTRAL + BOARD_PROGRAMS) == []


def _calls(name):
    """{'RunLog', 'checkpoint.write', ...}: the names a module calls (f(...) and a.f(...))."""
    out = set()
    for node in ast.walk(ast.parse(open(MODULES[name]).read())):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name):
                out.add(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                out.add("%s.%s" % (f.value.id, f.attr))
    return out


def test_one_run_driver_and_one_task_resolver():
    """docs/architecture.md (issue 40): algos/run.py is the one training driver (the run log,
    checkpoints and the policy file are written there only), every algorithm of `microrl train`
    is a module of algos/ whose train() hands a learner to it (one file plus its line in
    commands/train.py's ALGOS), and tasks.py is the one place a task's name is read."""
    driver_only = {"RunLog", "checkpoint.write", "save_policy", "policy_file.save"}
    for m in LIBRARY:
        if m.startswith("microrl_host.algos.") and m != "microrl_host.algos.run":
            assert not (_calls(m) & driver_only), (m, _calls(m) & driver_only)
    from microrl_host.algos import registry

    for name, entry in registry.ALGOS.items():
        module = "microrl_host.algos." + name
        assert module in MODULES and entry.module().__name__ == module, name
        source = open(MODULES[module]).read()
        assert "train_task" in source and ("run.drive(" in source or "offpolicy.Algorithm(" in source), name
    assert "run.drive(" in open(MODULES["microrl_host.algos.offpolicy"]).read()
    # the task's name is resolved in tasks.py only: no other module matches MuJoCo names or builds a Found
    for m in LIBRARY + [m for m in MODULES if _is_command_line(m)]:
        if m != "microrl_host.tasks":
            assert not (_calls(m) & {"Found", "tasks.Found", "mujoco_key", "_mujoco_key"}), m


def test_an_algorithm_is_its_module_and_its_registry_line():
    """docs/architecture.md, "Where to add" (issue 40): an algorithm's settings are a dataclass of
    described fields, from which `microrl train` builds its options; commands/train.py names no
    algorithm's settings (only the ones every algorithm has), imports no algorithm and asks no
    object which algorithm it is."""
    import dataclasses

    from microrl_host.algos import registry
    from microrl_host.algos.settings import Settings

    everyones = None
    names = set()
    for name, entry in registry.ALGOS.items():
        cls = entry.settings
        assert dataclasses.is_dataclass(cls) and issubclass(cls, Settings) and cls.NAME == name, name
        for f in dataclasses.fields(cls):
            assert len(f.metadata.get("help", "").split()) >= 2, (name, f.name)  # described where it is defined
        mine = {s.given_name for s in cls.specs()}
        names |= mine
        everyones = mine if everyones is None else everyones & mine
        cls()  # its defaults pass its own checks
    source = open(MODULES["microrl_host.commands.train"]).read()
    tree = ast.parse(source)
    words = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    words |= set(re.findall(r"[a-z_]+", " ".join(n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str))))
    assert sorted((names - everyones - {"threads", "seed"}) & words) == []
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert not imported & {"td3", "sac", "ppo", "config", "offpolicy", "..algos.td3", "..algos.sac", "..algos.ppo", "..algos.config"}, imported
    assert "isinstance(entry" not in source


def test_a_subcommand_is_one_module_of_commands_and_its_name_in_cli():
    """docs/architecture.md, "Where to add": a subcommand is a module of commands/ with
    register() (which names the function that runs it: set_defaults(func=...)), named in
    cli.COMMANDS; the other modules there are shared helpers."""
    from microrl_host import cli

    listed = {c.__name__ for c in cli.COMMANDS}
    for m in MODULES:  # a module of commands/ with a register() is a subcommand: cli lists it
        if m.startswith("microrl_host.commands.") and m not in listed:
            assert "\ndef register(" not in open(MODULES[m]).read(), "%s registers a subcommand cli.COMMANDS does not list" % m
    for command in cli.COMMANDS:
        assert callable(getattr(command, "register", None)) and "set_defaults(func=" in open(command.__file__).read(), command.__name__
