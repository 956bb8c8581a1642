"""Settings that are the command line (issue 40, item 3): each algorithm's settings are one
dataclass (default, help, range, experimental or not: algos/settings.py), from which `microrl
train` builds its options, its --set and --help-all; an algorithm is its module and its line in
algos/registry.py, with no edit of commands/train.py; board-only settings are the board's."""
import dataclasses
from typing import ClassVar

import pytest

from helpers import assert_refused, run_microrl

from microrl_host.algos import registry
from microrl_host.algos.config import BOARD_ONLY, SACSettings, TD3Settings
from microrl_host.algos.settings import Settings, setting
from microrl_host.commands import train
from microrl_host.commands.options import Parser


def _parser():
    return train.register(Parser(prog="microrl").add_subparsers(parser_class=Parser))


def test_the_settings_check_every_problem_in_one_line_and_take_none_as_the_default():
    assert TD3Settings(batch=None).batch == TD3Settings().batch == 100
    with pytest.raises(ValueError) as e:
        TD3Settings(batch=0, gamma=1.5, actor_lr=float("nan"), lr_end=2.0, hidden=(0, 4))
    said = str(e.value)
    for words in ("batch must be a whole number >= 1, got 0", "gamma must be a finite number in (0, 1], got 1.5",
                  "actor_lr must be a finite number above 0, got nan", "lr_end must be a finite number from 0 to 1, got 2.0", "hidden sizes must be"):
        assert words in said, said
    with pytest.raises(ValueError, match=r"replay_capacity \(50\) must be at least batch \(100\)"):
        TD3Settings(replay_capacity=50)
    with pytest.raises(ValueError, match="unknown SAC setting 'policy_delay'"):
        SACSettings(policy_delay=3)  # TD3's, not SAC's
    assert SACSettings().warmup == 100 and TD3Settings().warmup == 1000  # SAC's own default over the shared field


def test_board_only_settings_are_the_boards_configuration_only():
    from microrl.td3 import TD3Config

    for name in BOARD_ONLY:
        assert hasattr(TD3Config(), name) and name not in TD3Settings.names() and name not in SACSettings.names()
    proc = run_microrl("train", "pendulum", "--set", "reward_scale=0.1")
    assert_refused(proc, "--set reward_scale: no such experimental setting")
    proc = run_microrl("train", "pendulum", "--reward-scale", "0.1")
    assert proc.returncode == 2 and "unrecognized arguments: --reward-scale" in proc.stderr, proc.stderr


def test_every_setting_is_an_option_or_listed_by_help_all():
    parser = _parser()
    help_text = parser.format_help()
    assert len(help_text.splitlines()) <= 120  # two screens (it was 125 before the settings were written once)
    options = {s for a in parser._actions for s in a.option_strings}
    every = run_microrl("train", "--help-all")
    assert every.returncode == 0 and every.stdout.startswith(help_text.split("\n", 1)[0])
    for name, entry in registry.ALGOS.items():
        for spec in entry.settings.specs():
            if spec.experimental:
                assert "--" + spec.name.replace("_", "-") not in options
                assert "  %-15s %s: %s" % (spec.name, name, spec.help) in every.stdout, spec.name
            elif spec.option:
                flag = spec.given_name.replace("_", "-")
                assert "--" + flag in options or "--no-" + flag in options, spec.name


@dataclasses.dataclass(init=False)
class _ToySettings(Settings):
    NAME: ClassVar[str] = "toy"
    steps: int = setting(100, "steps in all", low=1, whole=True, option=False)
    hidden: tuple = setting((4,), "hidden layer sizes, e.g. 4")
    toy_rate: float = setting(0.5, "how fast the toy learns", above=0, high=1)
    toy_trick: bool = setting(False, "a trick under test", experimental=True)

    def memory(self):
        return dict(hidden=self.hidden, update_rows=1, rows=1, outputs=1, copies=1, advice="none")


def test_an_algorithm_is_its_settings_and_its_registry_line(monkeypatch, tmp_path):
    """A registry line is all commands/train.py needs: options, --set, the checks and the call."""
    ran = {}

    class Module:
        @staticmethod
        def train_task(task, **options):
            ran.update(options)
            raise ValueError("the toy trained nothing")

    monkeypatch.setitem(registry.ALGOS, "toy", registry.Algo("toy", _ToySettings, lambda: Module))
    parser = _parser()
    assert "settings of toy" in parser.format_help() and "--toy-rate" in parser.format_help()
    out = str(tmp_path / "t.mrlp")
    args = parser.parse_args(["pendulum", "--algo", "toy", "--toy-rate", "2", "--out", out])
    with pytest.raises(train.CommandError, match=r"toy_rate must be a finite number in \(0, 1\], got 2.0"):
        train.check(args)
    args = parser.parse_args(["pendulum", "--algo", "toy", "--toy-rate", "0.25", "--set", "toy_trick=true", "--out", out])
    with pytest.raises(train.CommandError, match="the toy trained nothing"):
        train.run(args)
    assert ran["toy_rate"] == 0.25 and ran["toy_trick"] is True and ran["steps"] == 10000
    args = parser.parse_args(["pendulum", "--algo", "td3", "--toy-rate", "0.25", "--out", out])
    with pytest.raises(train.CommandError, match="--toy-rate is a toy option; it does not apply to --algo td3"):
        train.check(args)
