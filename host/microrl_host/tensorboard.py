"""TensorBoard logs of a training run (`microrl train --tensorboard`), written with tensorboardX
(`pip install "microrl[tensorboard]"`) between chunks of training only: nothing runs inside the
compiled loop. TensorBoard is a Callbacks that records (callbacks.records) and hands every hook
on to another, such as the command line's progress bar:

    from microrl_host.algos import td3
    from microrl_host.tensorboard import TensorBoard
    run = td3.ALGO.run("pendulum", callbacks=TensorBoard("tb/p0"))   # then: tensorboard --logdir tb

Scalars under CleanRL's tags (charts/, losses/, eval/; docs/training.md, TensorBoard), and the
run's settings as hyperparameters with the last evaluation as their metrics (the HPARAMS tab)."""
import os
import time

from .algos.callbacks import NONE, Callbacks

INSTALL = 'pip install "microrl[tensorboard]"'
METRICS = {"eval/return_mean": "hparam/eval_return", "eval/success_rate": "hparam/success_rate"}  # the last record's -> the HPARAMS tab


class TensorBoardMissing(ImportError):
    """tensorboardX is not installed."""


def summary_writer():
    """tensorboardX's SummaryWriter class, or TensorBoardMissing saying how to install it."""
    try:
        from tensorboardX import SummaryWriter
    except ImportError:
        raise TensorBoardMissing("TensorBoard logs need tensorboardX, which is not installed: %s" % INSTALL) from None
    return SummaryWriter


def hparam_value(v):
    """What TensorBoard's hyperparameters take (bool, int, float, str): sizes as '64,64'."""
    if isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


class TensorBoard(Callbacks):
    """Write the run's scalars into folder (made if missing; a resumed run appends and drops
    what was logged after its checkpoint), passing every hook on to inner."""

    records = True

    def __init__(self, folder, inner=NONE):
        self.SummaryWriter = summary_writer()
        self.folder = folder
        self.inner = inner
        self.writer = None
        self.settings = {}
        self.last = {}  # the latest value of each tag, and its step
        self.last_step = 0

    def on_compile(self, text):
        self.inner.on_compile(text)

    def on_start(self, total, initial, desc):
        # purge_step: TensorBoard hides what a killed run logged after the step resumed from
        # a file name of its own: tensorboardX names event files by the second, so a resumed run
        # started within the second of the last one's writer would replace that file, its logs lost
        self.writer = self.SummaryWriter(self.folder, purge_step=initial + 1 if initial else None, flush_secs=30,
                                         filename_suffix=".%d.%d" % (os.getpid(), time.time_ns()))
        self.inner.on_start(total, initial, desc)

    def on_settings(self, settings):
        self.settings = {k: hparam_value(v) for k, v in settings.items()}
        self.inner.on_settings(settings)

    def on_progress(self, step, done, trainer, figures):
        self.inner.on_progress(step, done, trainer, figures)

    def on_record(self, step, scalars):
        try:
            for tag, value in scalars.items():
                self.writer.add_scalar(tag, value, step)
        except OSError as e:
            raise self._failed(e) from None
        self.last.update(scalars)
        self.last_step = step
        self.inner.on_record(step, scalars)

    def _hparams(self):
        """The settings and the last evaluation into this run's own event file: add_hparams()
        would open a sub-run (named by the time), or in this folder a second writer whose file
        name, made of the second and the host, can be this writer's own."""
        from tensorboardX.summary import hparams

        metrics = {name: float(self.last[tag]) for tag, name in METRICS.items() if tag in self.last}
        file_writer = self.writer._get_file_writer()  # what add_hparams writes through, in tensorboardX and torch alike
        for summary in hparams(self.settings, metrics):
            file_writer.add_summary(summary)
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, self.last_step)

    def on_message(self, text):
        self.inner.on_message(text)

    def on_end(self):
        try:
            if self.writer is not None:
                try:
                    if self.settings:
                        self._hparams()
                    self.writer.close()
                except OSError as e:
                    raise self._failed(e) from None
        finally:
            self.inner.on_end()

    def _failed(self, e):
        """The OSError for a write of the logs that failed (a full disk), naming the folder, after
        tensorboardX's writer is stopped and marked closed: its exit hook would try again and
        print a traceback after the command's one line."""
        for file_writer in list(getattr(self.writer, "all_writers", {}).values()) + [getattr(self.writer, "file_writer", None)]:
            events = getattr(file_writer, "event_writer", None)
            if events is None or getattr(events, "_closed", True):
                continue
            for stop in (lambda: events._worker.stop(), lambda: events._ev_writer.close(), lambda: events._event_queue.close()):
                try:
                    stop()
                except (OSError, AttributeError, ValueError):
                    pass
            events._closed = True
            name = getattr(getattr(events, "_ev_writer", None), "_file_name", None)
            try:
                if name and os.path.getsize(name) == 0:  # this run's own event file, which nothing reached
                    os.remove(name)
            except OSError:
                pass
        self.writer = None
        return OSError(e.errno, e.strerror, "%s, the TensorBoard logs" % self.folder)
