"""What a training run tells its caller while it runs. The library prints nothing: a command
line shows these as a progress bar (commands/progress.py), a notebook may plot them, a test may
stop a run by raising from one. Every hook is optional; subclass and override what you need."""


class Callbacks:
    def on_start(self, total, initial, desc):
        """Before the first step: total steps of the run, steps already done (a resumed run)."""

    def on_progress(self, step, done, trainer, figures):
        """After each chunk of steps (off-policy: up to 1000; PPO: one iteration). step: steps so
        far; done: steps in this chunk; trainer: the algorithm's state (off-policy: its State of
        arrays; PPO: the learner); figures: {name: float} worth showing (eval, return, lr, kl)."""

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
