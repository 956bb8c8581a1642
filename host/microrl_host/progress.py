"""Progress bars for long work: tqdm on a terminal, silent with quiet=True."""
import sys


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
