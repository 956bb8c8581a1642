"""Progress bars for long work: tqdm on a terminal (stderr), silent with quiet=True. ProgressBar
shows a training run's callbacks (microrl_host.algos.callbacks) as one."""
import sys
import threading
import time

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

    def restart(self):
        """Back to 0 and the clock started again: the rate and ETA then count only the work that
        follows (not the connecting or warming up before it)."""
        if self.bar is not None:
            self.bar.reset(total=self.bar.total)

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


class CompileNotice:
    """While code compiles: after `delay` seconds (a cache load is quicker and shows nothing), the
    text with a spinner and the seconds so far on a terminal, else one line; stop() says how long
    it took."""

    FRAMES = "|/-\\"

    def __init__(self, text, stream=None, delay=1.0):
        self.text = text
        self.stream = stream or sys.stderr
        self.delay = delay
        self.t0 = time.perf_counter()
        self.shown = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        tty = self.stream.isatty()
        if self.done.wait(self.delay):
            return
        self.shown = True
        k = 0
        if not tty:
            self.stream.write(self.text + "...\n")
            self.stream.flush()
            return
        while not self.done.wait(0.2):
            self.stream.write("\r%s %s: %.0f s" % (self.FRAMES[k % 4], self.text, time.perf_counter() - self.t0))
            self.stream.flush()
            k += 1

    def stop(self):
        self.done.set()
        self.thread.join()
        if self.shown:
            end = "\r" if self.stream.isatty() else ""
            self.stream.write("%sready after %.1f s%s\n" % (end, time.perf_counter() - self.t0, " " * 40 if end else ""))
            self.stream.flush()


class ProgressBar(Callbacks):
    """A training run's progress as a bar; messages above it; a notice while compiling. quiet:
    nothing at all."""

    def __init__(self, quiet=False):
        self.quiet = quiet
        self.bar = None
        self.compiling = None

    def on_compile(self, text):
        if not self.quiet:
            self.compiling = CompileNotice(text)

    def on_start(self, total, initial, desc):
        self._compiled()
        self.bar = Progress(total, desc=desc, quiet=self.quiet, initial=initial)

    def _compiled(self):
        if self.compiling is not None:
            self.compiling.stop()
            self.compiling = None

    def on_progress(self, step, done, trainer, figures):
        if self.bar is not None:
            self.bar.update(done, **{k: FORMATS.get(k, "%.4g") % v for k, v in figures.items() if v is not None})

    def on_message(self, text):
        if self.bar is not None:
            self.bar.write(text)

    def on_end(self):
        self._compiled()
        if self.bar is not None:
            self.bar.close()
