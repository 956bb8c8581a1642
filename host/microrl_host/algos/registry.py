"""The algorithms `microrl train --algo` offers, a line each: its name, its settings (a
settings.Settings dataclass, in a module that loads no numba: the commands list every
algorithm's options on every start) and a function importing its module, whose
train_task(task, steps=..., seed=..., **settings) trains it (imported only then: it loads what
it computes with). Adding an algorithm: its module in algos/ and its line here; `microrl
train` builds its options, --set and --help-all from the settings."""
from .config import SACSettings, TD3Settings
from .ppo import PPOSettings

DEFAULT = "td3"  # for a task that suggests none (its ALGO)


class Algo:
    def __init__(self, name, settings, module):
        self.name, self.settings, self.module = name, settings, module


def _td3():
    from . import td3

    return td3


def _sac():
    from . import sac

    return sac


def _ppo():
    from . import ppo

    return ppo


ALGOS = {a.name: a for a in (
    Algo("td3", TD3Settings, _td3),
    Algo("sac", SACSettings, _sac),
    Algo("ppo", PPOSettings, _ppo),
)}


def experimental_names():
    """Every algorithm's experimental settings (given as --set NAME=VALUE)."""
    return {s.name for a in ALGOS.values() for s in a.settings.experimental()}
