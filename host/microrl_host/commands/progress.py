"""Progress bars for long work: tqdm on a terminal (stderr), silent with quiet=True. ProgressBar
shows a training run's callbacks (microrl_host.algos.callbacks) as one."""
import sys

from ..algos.callbacks import Callbacks


class Progress:
    def __init__(self, total, desc="", unit="step", quiet=False, initial=0):
        self.bar = None
        if not quiet:
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, unit=unit, initial=initial, dynamic_ncols=True, file=sys.stderr, smoothing=0.05)

    def update(self, n=1, **postfix):
        if self.bar is not None:
            if postfix:
                self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(n)

    def write(self, text):
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# how each training figure is shown beside the bar
FORMATS = {"eval": "%.1f", "return": "%.0f", "lr": "%.1e", "kl": "%.4f"}


class ProgressBar(Callbacks):
    """A training run's progress as a bar; messages above it. quiet: nothing at all."""

    def __init__(self, quiet=False):
        self.quiet = quiet
        self.bar = None

    def on_start(self, total, initial, desc):
        self.bar = Progress(total, desc=desc, quiet=self.quiet, initial=initial)

    def on_progress(self, step, done, trainer, figures):
        if self.bar is not None:
            self.bar.update(done, **{k: FORMATS.get(k, "%.4g") % v for k, v in figures.items() if v is not None})

    def on_message(self, text):
        if self.bar is not None:
            self.bar.write(text)

    def on_end(self):
        if self.bar is not None:
            self.bar.close()
