"""Progress of a long command on stderr: stages with their elapsed time.

On a terminal the stages are drawn by ``rich`` (a spinner and the elapsed
time of the running stage, each finished stage kept as a line with its
time; a bar with a count for work of known size).  When stderr is not a
terminal (a log, CI, a pipe) nothing is redrawn: each stage prints one
line when it starts, with the time since the command started.  Disabled
(``--quiet``), nothing is printed at all.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any

__all__ = ["Stages", "Bar"]

# the running command's rich display, if any: a bar joins it (rich draws one
# live display at a time)
_ACTIVE: list[Any] = [None]


def _tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class Stages:
    """A command's stages, one at a time: :meth:`stage` ends the running
    one and starts the next; :meth:`close` ends the last.  Thread-safe (a
    watcher thread may report stages of a run it follows)."""

    def __init__(self, title: str, enabled: bool = True) -> None:
        self.title, self.enabled = title, bool(enabled)
        self.t0 = time.monotonic()
        self.tty = _tty()
        self.current: str | None = None
        self.names: list[str] = []
        self._lock = threading.Lock()
        self._live: Any = None
        self._task: Any = None
        if self.enabled and self.tty and _ACTIVE[0] is None:
            from rich.console import Console
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
            self._live = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  TimeElapsedColumn(), console=Console(stderr=True), transient=False)
            self._live.start()
            _ACTIVE[0] = self._live

    def stage(self, name: str) -> None:
        """Start stage ``name`` (a repeat of the running stage is ignored)."""
        with self._lock:
            if not self.enabled or name == self.current:
                return
            self._end()
            self.current = name
            self.names.append(name)
            if self._live is not None:
                self._task = self._live.add_task(f"{self.title}: {name}", total=None)
            else:
                sys.stderr.write(f"[{time.monotonic() - self.t0:7.1f} s] {self.title}: {name}\n")
                sys.stderr.flush()

    def _end(self) -> None:
        if self._live is not None and self._task is not None:
            self._live.update(self._task, total=1, completed=1)
            self._task = None

    def close(self) -> None:
        """End the last stage (and the terminal display)."""
        with self._lock:
            self._end()
            self.current = None
            if self._live is not None:
                self._live.stop()
                if _ACTIVE[0] is self._live:
                    _ACTIVE[0] = None
                self._live = None

    def __enter__(self) -> "Stages":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Bar:
    """Work of ``total`` items under ``label``: a rich bar with count,
    elapsed time and ETA on a terminal; elsewhere one line when the work is
    done; nothing when not ``enabled``."""

    def __init__(self, total: int, label: str, enabled: bool = True) -> None:
        self.total, self.label = int(total), label
        self.enabled = bool(enabled) and self.total > 0
        self.done, self.t0 = 0, time.monotonic()
        self._live: Any = None
        self._shared = False
        if self.enabled and _tty() and _ACTIVE[0] is not None:
            self._live, self._shared = _ACTIVE[0], True
            self._task = self._live.add_task(label, total=self.total)
        elif self.enabled and _tty():
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            self._live = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True))
            self._live.start()
            self._task = self._live.add_task(label, total=self.total)

    def step(self, k: int = 1) -> None:
        """Count ``k`` more items done."""
        self.done += k
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self._task, completed=self.done)
            if self.done >= self.total:
                self.close()
        elif self.done >= self.total and self.done - k < self.total:
            sys.stderr.write(f"{self.label}: {self.total} done in {time.monotonic() - self.t0:.1f} s\n")
            sys.stderr.flush()

    def close(self) -> None:
        """Stop the display (also when the work ended early)."""
        if self._live is not None:
            if not self._shared:
                self._live.stop()
            self._live = None
