""""core-s" is CPU time: the per-phase seconds a round reports, summed, match
what the operating system accounts to the processes that ran it (user + sys
of this process and of the workers it forked and reaped), whatever the load
of the machine.  They used to be wall seconds of every worker, summed: at a
load of 4 a run printed 43.2 core-s where the OS counted 17.4 s.

Each round here waits 20 ms in every response (an injected ``sleep``, as a
loaded machine or a slow peer would make it wait): wall time grows, CPU time
does not.  The control runs the same round with the old clock (wall time)
and shows the comparison catches it."""
from __future__ import annotations

import multiprocessing
import resource
import time

import pytest

from secea_fast import workloads
from secea_fast.protocols import secea, secemb
from secea_fast.protocols.secea import parties
from secea_fast.protocols.secea_phe import run_round as phe_round


def _os_cpu() -> float:
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _measured(run):
    r0, w0 = _os_cpu(), time.perf_counter()
    res = run()
    return res, _os_cpu() - r0, time.perf_counter() - w0


def _core(res) -> float:
    # "product" is a part of "responses" (its sub-phase), not added to the total
    return sum(v for k, v in res.seconds.items() if k != "product")


def _agrees(core: float, os_cpu: float, low: float = 0.8) -> bool:
    # the round does work outside its phases (making the parties, forking
    # the workers, collecting their results), so the phases' sum may be a
    # little below the OS total; it is never above it
    return low * os_cpu - 0.1 <= core <= 1.02 * os_cpu + 0.05


WAIT = 0.02


@pytest.fixture
def waiting(monkeypatch):
    """Every response waits WAIT seconds; returns the shared count of
    responses (forked workers inherit the patch and the shared counter)."""
    answer = parties.Client.answer
    count = multiprocessing.Value("i", 0)

    def slow(self, *a, **k):
        with count.get_lock():
            count.value += 1
        time.sleep(WAIT)
        return answer(self, *a, **k)
    monkeypatch.setattr(parties.Client, "answer", slow)
    return count


@pytest.fixture(scope="module")
def local():
    return workloads.workload("movielens-100k", N=3, d=8, seed=0)


@pytest.mark.parametrize("processes", [1, 2])
def test_secea_core_seconds_are_the_os_cpu_time(local, waiting, processes):
    res, os_cpu, wall = _measured(lambda: secea.run_round(local, processes=processes))
    core = _core(res)
    assert os_cpu > 0.3, os_cpu                    # enough work for the comparison to mean something
    assert _agrees(core, os_cpu), (core, os_cpu, res.seconds)
    # wall stays wall: the phases' wall time includes the waits (spread over
    # the processes), and no phase is longer than the run
    assert waiting.value > 0
    assert res.wall["blocks"] >= 0.9 * waiting.value * WAIT / processes, (res.wall, waiting.value)
    assert all(0 <= v <= wall + 0.05 for v in res.wall.values()), (res.wall, wall)


def test_control_wall_clock_core_seconds_are_caught(local, waiting, monkeypatch):
    """The weakened round: phases timed with the wall clock (the old
    "core-s").  The same comparison fails."""
    monkeypatch.setattr(time, "process_time", time.perf_counter)
    res, os_cpu, _ = _measured(lambda: secea.run_round(local, processes=2))
    assert not _agrees(_core(res), os_cpu), (_core(res), os_cpu)


def test_secea_phe_core_seconds_are_the_os_cpu_time():
    small = workloads.workload("tiny", N=3, d=None, seed=0)
    res, os_cpu, _ = _measured(lambda: phe_round(small, key_bits=256, insecure_keys=True, processes=2))
    assert _agrees(_core(res), os_cpu, low=0.7), (_core(res), os_cpu, res.seconds)


def test_secemb_core_seconds_are_the_os_cpu_time():
    from secea_fast.cli import secemb_workload
    Q, items, grads = secemb_workload(20, 2000, 16, 0)
    res, os_cpu, _ = _measured(lambda: secemb.run_round(Q, items, grads, 100))
    assert _agrees(_core(res), os_cpu, low=0.7), (_core(res), os_cpu, res.seconds)
