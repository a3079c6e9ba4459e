"""The shape every protocol's round has: ``run_round(...)`` returns a
:class:`RoundResult` (per-phase CPU and wall seconds, bytes, whether the
output was verified against plaintext), and rounds whose work splits into
independent blocks run them through :func:`run_blocks` (any
:class:`secea_fast.executor.Executor`, results collected in the parent as
they arrive).  A progress display is the caller's: ``run_blocks`` takes a
factory ``progress(total, label)`` returning a :class:`Meter` (the command
line passes its bar), so no protocol imports a driver."""
from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from ..._checks import check_int
from ...executor import Executor, LocalExecutor

__all__ = ["RoundResult", "Meter", "ProgressFactory", "resolve_executor", "run_blocks", "apportion_wall"]

ParamsT = TypeVar("ParamsT")


@dataclass
class RoundResult(Generic[ParamsT]):
    """One round of a protocol, every party simulated.  Subclasses add the
    protocol's outputs (all with defaults) and name its ``PHASES``.

    ``seconds``: phase -> CPU seconds (user + sys) summed over the parties:
    each party's work is timed with ``time.process_time`` in the process
    that ran it (this one, or an executor's worker) and the deltas are
    added, so the sum is what the operating system accounts to the round's
    processes for those phases (tested against ``getrusage``); time spent
    waiting (for workers, I/O) is not in it.  Printed as "core-s".
    ``wall``: phase -> wall-clock seconds of this run;
    ``bytes``: phase -> bytes the parties send in that phase (the
    protocol's own messages, as serialized); ``verified``: True when the
    round compared its output with the plaintext computation (it raises
    AssertionError on a difference), None when it was not asked to;
    ``params``: the protocol's parameters (the type argument)."""
    params: ParamsT
    seconds: dict
    wall: dict
    bytes: dict
    verified: bool | None = None
    processes: int = 1

    PROTOCOL: ClassVar[str] = ""
    PHASES: ClassVar[tuple] = ()
    BYTES_OF: ClassVar[dict] = {}      # phase -> its key in ``bytes`` when they differ

    def table(self) -> str:
        """Per-phase core seconds, wall seconds and protocol MB as text."""
        phases = list(self.PHASES) + [p for p in self.seconds if p not in self.PHASES]
        rows = [("phase", "core-s", "wall-s", "protocol MB")]
        for ph in phases:
            rows.append((ph, f"{self.seconds.get(ph, 0.0):.3f}", f"{self.wall.get(ph, 0.0):.3f}",
                         f"{self.bytes.get(self.BYTES_OF.get(ph, ph), 0) / 1e6:.2f}"))
        w = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                                   for i, c in enumerate(r)) for r in rows)

    def summary(self) -> dict:
        """The protocol-independent part as JSON-serializable values."""
        return {"protocol": self.PROTOCOL, "processes": int(self.processes),
                "verified": self.verified,
                "core_seconds": {k: float(v) for k, v in self.seconds.items()},
                "wall_seconds": {k: float(v) for k, v in self.wall.items()},
                "bytes": {k: int(v) for k, v in self.bytes.items()}}


class Meter(Protocol):
    """What a round reports its progress to: ``step()`` after each block,
    ``close()`` once at the end (also when the work ended early)."""

    def step(self, k: int = 1) -> None:
        """Count ``k`` more blocks done."""

    def close(self) -> None:
        """The work is over."""


# progress(total, label) -> the Meter of ``total`` blocks under ``label``
ProgressFactory = Callable[[int, str], Meter]


def _meter(progress: ProgressFactory | None, total: int, label: str) -> Meter | None:
    if progress is None or progress is False:
        return None
    if not callable(progress):
        raise TypeError(f"progress must be None or a callable (total, label) -> an object with step() and "
                        f"close(), got {type(progress).__name__}")
    return progress(total, label)


def resolve_executor(executor: Executor | None, processes: int | None) -> Executor:
    """The executor of a round: ``executor`` if given (``processes``, if
    also given, must match it), else a :class:`LocalExecutor` of
    ``processes`` (default 1)."""
    if executor is None:
        return LocalExecutor(1 if processes is None else processes)
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be a secea_fast.executor.Executor, got {type(executor).__name__}")
    if processes is not None and check_int(processes, "processes") != executor.processes:
        raise ValueError(f"processes={processes} contradicts the executor's {executor.processes}")
    return executor


def run_blocks(executor: Executor, job: Callable[[Any, Any], tuple[Any, dict[str, float], dict[str, int]]],
               jobs: Sequence[Any], state: Any, collect: Callable[[Any], object], *, label: str = "blocks",
               progress: ProgressFactory | None = None, secs: dict[str, float] | None = None,
               nbytes: dict[str, int] | None = None) -> float:
    """Run ``job(state, j)`` for every j of ``jobs`` on ``executor``.  Each
    job returns ``(payload, seconds, nbytes)``: the two dicts (phase ->
    value) are added into ``secs`` / ``nbytes`` and ``collect(payload)`` is
    called in this process, as results arrive; ``progress(len(jobs), label)``,
    if given, makes the :class:`Meter` stepped after each.  Returns the wall
    time."""
    secs = {} if secs is None else secs
    nbytes = {} if nbytes is None else nbytes
    bar = _meter(progress, len(jobs), label)

    def on_result(res: tuple[Any, dict[str, float], dict[str, int]]) -> None:
        payload, t, nb = res
        for ph, x in t.items():
            secs[ph] = secs.get(ph, 0.0) + x
        for ph, x in nb.items():
            nbytes[ph] = nbytes.get(ph, 0) + x
        collect(payload)
        if bar is not None:
            bar.step()

    w0 = time.perf_counter()
    try:
        executor.map(job, jobs, state, on_result)
    finally:
        if bar is not None:
            bar.close()
    return time.perf_counter() - w0


def apportion_wall(wall: dict[str, float], secs: dict[str, float], phases: Iterable[str],
                   wall_total: float) -> None:
    """Share ``wall_total`` (the wall time of phases run interleaved) among
    ``phases`` in proportion to their CPU seconds in ``secs``."""
    busy = sum(secs.get(ph, 0.0) for ph in phases) or 1.0
    for ph in phases:
        wall[ph] = wall_total * secs.get(ph, 0.0) / busy
