"""An algorithm's settings, written once: a dataclass whose fields each carry their default,
help text, range and whether they are an experiment (`setting(...)`). The library checks a
configuration with it, `microrl train` builds its options, its `--set NAME=VALUE` and
`--help-all` from it, and a task's suggestions are read through it; nothing here names an
algorithm. An algorithm's class derives from Settings and is a dataclass (init=False: Settings'
__init__ takes the overrides, None meaning the default, and checks them)."""
import dataclasses
import math
from typing import ClassVar


def setting(default, help, low=None, high=None, above=None, whole=False, kind=None, choices=None, experimental=False, option=True, given_as=None, shown=None):
    """A field of a Settings dataclass. low/high: inclusive bounds, above: an exclusive lower one;
    whole: a whole number; kind: the value's type where the default does not say it (a default
    of None); choices: the values a word takes; experimental: given only as --set NAME=VALUE
    (listed by --help-all); option: False for a setting the command line gives otherwise (--steps,
    --seed, --threads); given_as: (name, to_setting, from_setting, low bound): the command line
    and a task's suggestions give the value as name, converted (PPO's init_std, its log std);
    shown: the default as the help says it, where the value alone would not."""
    meta = dict(help=help, low=low, high=high, above=above, whole=whole, kind=kind, choices=choices, experimental=experimental, option=option,
                given_as=given_as, shown=shown)
    return dataclasses.field(default=default, metadata=meta)


class Spec:
    """One setting as the command line sees it: name, default, help and range (from its field)."""

    def __init__(self, f):
        m = f.metadata
        self.name, self.default = f.name, f.default
        self.help, self.experimental, self.option, self.choices = m["help"], m["experimental"], m["option"], m["choices"]
        self.low, self.high, self.above, self.whole = m["low"], m["high"], m["above"], m["whole"]
        self.given_as, self.shown = m["given_as"], m["shown"]
        default = f.default
        self.kind = m["kind"] or (tuple if isinstance(default, tuple) else bool if isinstance(default, bool) else int if isinstance(default, int) or self.whole
                                  else str if isinstance(default, str) else float)
        if self.given_as:  # the value given is another quantity, of its own range
            self.low, self.high, self.above = None, None, self.given_as[3]

    @property
    def given_name(self):
        return self.given_as[0] if self.given_as else self.name

    def default_text(self):
        if self.shown is not None:
            return self.shown
        v = self.given_as[2](self.default) if self.given_as else self.default
        return ",".join(str(h) for h in v) if isinstance(v, tuple) else "%g" % v if isinstance(v, float) else str(v)

    def range_text(self):
        """'a whole number >= 1', 'a finite number in (0, 1]', ... ('' for a word or a switch)."""
        if self.kind in (tuple, bool, str):
            return ""
        what = "a whole number" if self.kind is int else "a finite number"
        lo = self.above if self.above is not None else self.low
        if lo is not None and self.high is not None:
            if self.above is not None:
                return "%s in (%g, %g]" % (what, lo, self.high)
            return "%s from %g to %g" % (what, lo, self.high)
        if self.above is not None:
            return "%s above %g" % (what, self.above)
        if self.low is not None:
            return "%s >= %g" % (what, self.low)
        if self.high is not None:
            return "%s <= %g" % (what, self.high)
        return what

    def problem(self, v):
        """What is wrong with value v of this setting, or None."""
        if self.kind is tuple:
            if not v or not all(isinstance(h, int) and h >= 1 for h in v):
                return "%s sizes must be whole numbers of at least 1, got %r" % (self.name, v)
            return None
        if self.kind is bool:
            return None if isinstance(v, bool) else "%s must be true or false, got %r" % (self.name, v)
        if self.kind is str:
            return None if v in (self.choices or (v,)) else "%s must be one of %s, got %r" % (self.name, ", ".join(self.choices), v)
        if v is None and self.default is None:
            return None
        fine = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        fine = fine and (self.kind is not int or v == int(v))
        low = self.low if not self.given_as else None
        above = self.above if not self.given_as else None
        fine = fine and (low is None or v >= low) and (above is None or v > above) and (self.high is None or self.given_as or v <= self.high)
        if fine:
            return None
        if self.given_as:
            return "%s must be a finite number, got %r" % (self.name, v)
        return "%s must be %s, got %r" % (self.name, self.range_text(), v)

    def parse(self, text):
        """The value of text, as --set gives it (given_as: converted); ValueError saying what it must be."""
        text = text.strip()
        if self.kind is bool:
            if text.lower() not in ("true", "false", "on", "off", "1", "0"):
                raise ValueError("true or false")
            return text.lower() in ("true", "on", "1")
        if self.kind is str:
            if text not in (self.choices or (text,)):
                raise ValueError("one of %s" % ", ".join(self.choices))
            return text
        if self.kind is tuple:
            try:
                return tuple(int(h) for h in text.split(","))
            except ValueError:
                raise ValueError("sizes such as 64,64") from None
        try:
            v = int(text) if self.kind is int else float(text)
        except ValueError:
            raise ValueError("a whole number" if self.kind is int else "a number") from None
        return self.given_as[1](v) if self.given_as else v


class Settings:
    """Base of an algorithm's settings dataclass: Cls(**overrides) takes the defaults with
    overrides (None: the default; hidden sizes as a tuple), ValueError naming an unknown setting
    or listing every one out of range."""

    NAME: ClassVar[str] = "?"  # the algorithm's name, in messages
    SUGGESTIONS: ClassVar[str] = "training"  # the Found attribute holding a task's suggestions for it
    RESUMABLE: ClassVar[tuple] = ("steps",)  # settings a resumed run may change
    RUN_DEFAULTS: ClassVar[dict] = {}  # `microrl train`'s eval_every / checkpoint_every without the task's
    THREADS: ClassVar[str] = ""  # what --threads means to it
    MAX_THREADS: ClassVar[int] = 0  # at most (0: no bound)

    def __init__(self, **overrides):
        names = self.names()
        for k in overrides:
            if k not in names:
                raise ValueError("unknown %s setting %r; known: %s" % (self.NAME.upper(), k, ", ".join(sorted(names))))
        for f in dataclasses.fields(self):
            v = overrides.get(f.name)
            setattr(self, f.name, f.default if v is None else v)
        if isinstance(self.hidden, (list, tuple)):
            self.hidden = tuple(int(h) if isinstance(h, float) and h == int(h) else h for h in self.hidden)
        problems = [p for p in (s.problem(getattr(self, s.name)) for s in self.specs()) if p]
        if not problems:
            problems = self.relations()
        if problems:
            raise ValueError("; ".join(problems))

    def relations(self):
        """Problems between settings (each in range by itself), as lines."""
        return []

    @classmethod
    def specs(cls):
        return [Spec(f) for f in dataclasses.fields(cls)]

    @classmethod
    def names(cls):
        return {f.name for f in dataclasses.fields(cls)}

    @classmethod
    def experimental(cls):
        return [s for s in cls.specs() if s.experimental]

    @classmethod
    def suggested(cls, found):
        """{setting: value} of a task's suggestions (found: a tasks.Found, or anything with the
        SUGGESTIONS attribute) that configure this algorithm, given_as values converted; the
        run's own (steps, evaluations, checkpoints) are the driver's."""
        given = dict(getattr(found, cls.SUGGESTIONS, None) or {})
        out = {}
        for s in cls.specs():
            if not s.option:
                continue
            if s.given_name in given:
                v = given[s.given_name]
                out[s.name] = s.given_as[1](v) if s.given_as else tuple(v) if s.kind is tuple else v
        return out

    @classmethod
    def for_run(cls, found, given, saved=None):
        """The settings of a run: a checkpoint's (saved, on resume: all but RESUMABLE), else the
        task's suggestions (found), with the settings given over them (None: not given)."""
        base = {k: v for k, v in saved.items() if k in cls.names() and k not in cls.RESUMABLE} if saved else cls.suggested(found)
        return cls(**dict(base, **{k: v for k, v in given.items() if v is not None}))

    def as_dict(self):
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def replace(self, **changes):
        return type(self)(**dict(self.as_dict(), **changes))
