"""What a training run tells its caller while it runs. The library prints nothing: a command
line shows these as a progress bar (commands/progress.py), a notebook may plot them, a test may
stop a run by raising from one. Every hook is optional; subclass and override what you need."""


class Callbacks:
    # True: the run also calls on_settings and on_record (a recorder such as tensorboard.py);
    # off-policy runs then measure their losses at each evaluation, which costs a little
    records = False

    def on_compile(self, text):
        """Before the run compiles its code or loads it from numba's cache (tens of seconds on a
        first run, a fraction of one later); on_start follows when it is done. text: what it
        does, for a person ("compiling the training loop, first run only")."""

    def on_start(self, total, initial, desc):
        """Before the first step: total steps of the run, steps already done (a resumed run)."""

    def on_progress(self, step, done, trainer, figures):
        """After each chunk of steps (off-policy: up to 1000; PPO: one iteration). step: steps so
        far; done: steps in this chunk; trainer: the algorithm's state (off-policy: its State of
        arrays; PPO: the learner); figures: {name: float} worth showing (eval, return, lr, kl)."""

    def on_settings(self, settings):
        """Before the first step, when records: {name: value} of the run (algo, task, seed,
        steps and every setting of its configuration)."""

    def on_record(self, step, scalars):
        """After each chunk, when records: {tag: float} worth keeping as time series (tags as
        CleanRL's: charts/..., losses/..., eval/...; docs/training.md, TensorBoard)."""

    def on_message(self, text):
        """A line worth telling a person (an evaluation, an interrupted run's checkpoint)."""

    def on_end(self):
        """After the last step, also when the run stopped with an exception."""


NONE = Callbacks()


class EachChunk(Callbacks):
    """Callbacks that call fn(step, trainer) after every chunk: the short way to follow a run,
    e.g. ppo.train(config, "ant", EachChunk(lambda step, learner: print(step, learner.lr)))."""

    def __init__(self, fn):
        self.fn = fn

    def on_progress(self, step, done, trainer, figures):
        self.fn(step, trainer)
