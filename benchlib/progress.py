"""Progress where someone watches it, and a few plain lines where no one does.

On a terminal (or in a Jupyter kernel) a step count is tqdm's bar, redrawn in place. Written to
a file or a pipe (a Slurm log, ``make demo > demo.log 2>&1``), a redrawn bar leaves a line each
time it is drawn; there :class:`Lines` says the count instead, in a plain line when a step
finishes, at most one every :data:`LINE_INTERVAL_S` seconds (the first and the last always)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol, TextIO

#: The least time between two plain progress lines (the first and the last are always said).
LINE_INTERVAL_S = 30.0


class Progress(Protocol):
    """What benchlib's commands ask of a progress bar (tqdm's names)."""

    n: int

    def __iter__(self) -> Iterator[Any]: ...

    def __enter__(self) -> Progress: ...

    def __exit__(self, *exc: object) -> Any: ...

    def update(self, n: int = 1) -> Any: ...

    def set_postfix(self, ordered_dict: Mapping[str, Any] | None = None,
                    refresh: bool = True) -> None: ...

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None: ...

    def write(self, s: str) -> None: ...

    def close(self) -> None: ...


def watched(stream: TextIO | None = None) -> bool:
    """Whether a person watches ``stream`` (default: standard error) as it is drawn: a terminal,
    or the output of a Jupyter kernel (where tqdm draws a widget)."""
    stream = stream or sys.stderr
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
    return _in_kernel()


def _in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (IPython with a kernel attached)."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def bar(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str = "",
        unit: str = "it", enabled: bool = True) -> Progress:
    """A progress count over ``iterable`` (or ``total`` steps): tqdm's bar where
    :func:`watched`, else :class:`Lines`; nothing at all when not ``enabled``. Both iterate,
    update, take a postfix, write a line above themselves, close, and serve as a context."""
    if enabled and not watched():
        return Lines(iterable, total=total, desc=desc, unit=unit)
    from tqdm.auto import tqdm

    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=not enabled)


class Lines:
    """A progress bar's stand-in for a log: ``demo: 3/8 points (done 2, failed 1)`` on standard
    error when a step finishes, at most one line every ``interval_s`` seconds, the first and the
    last step always; lines written through it (:meth:`write`) go to standard output as they
    are."""

    def __init__(self, iterable: Iterable[Any] | None = None, *, total: int | None = None,
                 desc: str = "", unit: str = "it", interval_s: float = LINE_INTERVAL_S) -> None:
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.desc, self.unit, self.interval_s = total, desc, unit, interval_s
        self.n = 0
        self.postfix = ""
        self._said: int | None = None  # the count the last line said
        self._said_at = float("-inf")
        self._lock = threading.Lock()  # a report's pages finish on several threads

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable or ():
            yield item
            self.update()

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        """``n`` more steps finished; a line when the count moved and it is time for one."""
        with self._lock:
            self.n += n
            now = time.monotonic()
            if self.n != self._said and (self.n == self.total or self._said is None
                                         or now - self._said_at >= self.interval_s):
                self._say(now)

    def set_postfix(self, ordered_dict: Mapping[str, Any] | None = None,
                    refresh: bool = True) -> None:
        """Counts said after the step count in the next line (``done 2, failed 1``)."""
        self.postfix = ", ".join(f"{key} {value}" for key, value in (ordered_dict or {}).items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        """A point's label, which a bar shows while the point runs: a log has no use for it."""

    def write(self, s: str) -> None:
        """A line of its own, on standard output (as tqdm's ``write``)."""
        print(s, flush=True)

    def close(self) -> None:
        """Say the final count if the last line did not."""
        with self._lock:
            if self._said is not None and self.n != self._said:
                self._say(time.monotonic())

    def line(self) -> str:
        """The current count as a line: ``demo: 3/8 points (done 2, failed 1)``."""
        of = f"/{self.total}" if self.total is not None else ""
        unit = self.unit if self.total == 1 or (self.total is None and self.n == 1) \
            else f"{self.unit}s"
        extra = f" ({self.postfix})" if self.postfix else ""
        return f"{self.desc}: {self.n}{of} {unit}{extra}"

    def _say(self, now: float) -> None:
        """Print :meth:`line` to standard error and remember it."""
        print(self.line(), file=sys.stderr, flush=True)
        self._said, self._said_at = self.n, now
