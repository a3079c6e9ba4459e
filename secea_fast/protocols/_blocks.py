"""The block driver the rounds share (users call the rounds): a round's
independent blocks on any :class:`secea_fast.executor.Executor`, results
collected in the parent as they arrive, the caller's progress meter
stepped; the executor of a round; wall time shared among interleaved
phases.  Private to ``protocols``."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._checks import check_int
from ..executor import Executor, LocalExecutor
from .common.rounds import Meter, ProgressFactory


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
