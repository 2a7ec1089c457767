"""Progress reporting on stderr for the steps that can take more than a few seconds.

One `Progress` object per run. ``Progress(True)`` writes one line per step to stderr (or the given
stream): ``graphclust: <step> ...`` when the step starts and `` done in 1.23 s`` when it ends;
``Progress(False)`` writes nothing. The command line enables it unless ``--quiet`` is given or
stderr is not a terminal (`Progress.for_terminal`); the Python API takes a ``verbose`` flag
(`graphclust.Pipeline`).
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager

__all__ = ["Progress"]


class Progress:
    """Step-by-step progress lines on a stream (stderr by default).

    Parameters
    ----------
    enabled : bool
        False makes every method a no-op.
    stream : file-like, optional
        Where to write; ``sys.stderr`` (looked up at write time, so pytest's capture works) when
        None.
    prefix : str, default "graphclust"

    Examples
    --------
    >>> import io
    >>> out = io.StringIO()
    >>> p = Progress(True, stream=out)
    >>> with p.step("building the graph"):
    ...     pass
    >>> out.getvalue().startswith("graphclust: building the graph ... done in ")
    True
    >>> Progress(False, stream=out).note("not shown") is None
    True
    """

    def __init__(self, enabled=False, *, stream=None, prefix="graphclust"):
        self.enabled = bool(enabled)
        self._stream = stream
        self.prefix = prefix
        self.steps = []  # (name, seconds) of the finished steps, kept even when disabled

    @classmethod
    def for_terminal(cls, quiet=False, stream=None):
        """Enabled unless `quiet` or the stream (default stderr) is not a terminal."""
        s = sys.stderr if stream is None else stream
        try:
            tty = bool(s.isatty())
        except (AttributeError, ValueError):
            tty = False
        return cls(tty and not quiet, stream=stream)

    @property
    def stream(self):
        return sys.stderr if self._stream is None else self._stream

    def _write(self, text):
        self.stream.write(text)
        self.stream.flush()

    def note(self, message):
        """One line ``graphclust: message``."""
        if self.enabled:
            self._write(f"{self.prefix}: {message}\n")

    @contextmanager
    def step(self, what):
        """Context manager timing one step; the time is appended to `steps` in any case."""
        t0 = time.perf_counter()
        if self.enabled:
            self._write(f"{self.prefix}: {what} ...")
        ok = False
        try:
            yield self
            ok = True
        finally:
            dt = time.perf_counter() - t0
            self.steps.append((what, dt))
            if self.enabled:
                self._write(f" done in {dt:.2f} s\n" if ok else f" failed after {dt:.2f} s\n")
