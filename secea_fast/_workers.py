"""The package's one process-pool mechanism: forked workers per call.

``run_shards(fn, jobs, state, collect, workers)`` runs
``collect(fn(state, job))`` for every job, with ``workers`` processes
forked for this call (``os.fork``) that inherit ``fn``, ``state`` and the
job list copy-on-write and take the next job index from a shared counter;
each result comes back over the worker's own pipe.  ``caller_works=True``
makes the calling process pull jobs from the same counter too (Paillier
batches: ``processes=k`` is the caller plus k - 1 workers);
otherwise the caller only waits for results (:class:`LocalExecutor`, whose
workers fill every core).

Why fork, and why per call.  A forked worker starts from the parent's
memory as it is: nothing is pickled but the results, and nothing is
imported, in particular not ``__main__``.  The 'spawn' and 'forkserver'
start methods re-run the main module in every worker, which fails when the
program has no importable file (a script read from stdin, ``python - <
script.py``, some notebook and embedded interpreters): the Paillier pool
then died with ``BrokenProcessPool``.  Workers live for one call and exit
with ``os._exit`` (no atexit handlers, no stdio flush), so they never hold
a stale copy of the parent's secrets beyond the call, and no pool outlives
a key.  The randomness that workers draw comes from the OS (``secrets``,
``os.urandom``), which forking does not duplicate.  Processes are made with
``os.fork`` rather than ``multiprocessing.Process``, so a worker of one pool
(e.g. a SecEA-PHE block) may itself run a pool (``multiprocessing`` refuses
children to its daemonic processes).  Each worker's kernels run one thread
(``SECEA_FAST_NUM_THREADS=1`` in the worker): the workers are the
parallelism.

Failures.  A job's exception is raised in the caller with its type (or as a
RuntimeError carrying the traceback when it does not pickle); the other
workers are stopped.  A worker that dies (killed, out of memory, a crash in
native code) loses only the job it was running: the other workers are
stopped (one may have died holding the counter's lock), every result
already received is kept, and the jobs without a result run again in a new
round of workers.  A job that kills its worker a second time raises
RuntimeError naming it, instead of taking the caller down with it.  When no
process can be forked (no ``fork`` on the platform, or ``fork`` fails), the
jobs run in the calling process.  No failure surfaces as
``BrokenProcessPool``.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import traceback
import warnings
from multiprocessing.connection import Pipe, wait as mp_wait

from ._memory import tune_malloc
from ._lifetime import die_with_parent

__all__ = ["run_shards", "fork_available"]

_THREADS_ENV = "SECEA_FAST_NUM_THREADS"
_START, _OK, _DONE, _ERR = 0, 1, 2, 3
MAX_DEATHS = 2              # a job that kills this many workers raises


def fork_available() -> bool:
    return hasattr(os, "fork") and "fork" in mp.get_all_start_methods()


def _worker(fn, state, jobs, order, counter, conn) -> None:
    """Body of a forked worker: the next index from the counter until none
    is left; (START, i) before job i, (OK, i, result) after it, DONE at the
    end, or (ERR, i, exception).  Never returns: ``os._exit``."""
    code, i = 0, None
    try:
        die_with_parent()                       # a killed caller takes its workers with it
        os.environ[_THREADS_ENV] = "1"
        tune_malloc()                           # this worker's heap only
        while True:
            with counter.get_lock():
                k = counter.value
                if k >= len(order):
                    break
                counter.value = k + 1
            i = order[k]
            conn.send((_START, i, None))
            conn.send((_OK, i, fn(state, jobs[i])))
            i = None
        conn.send((_DONE, None, None))
    except BaseException as e:                  # noqa: BLE001 - re-raised in the caller
        code = 1
        try:
            conn.send((_ERR, i, e))
        except Exception:                       # the exception does not pickle
            try:
                conn.send((_ERR, i, RuntimeError(f"a worker failed: {type(e).__name__}: {e}\n"
                                                 f"{traceback.format_exc()}")))
            except Exception:
                pass
    finally:
        try:
            conn.close()
        finally:
            os._exit(code)


def _reap(pid) -> int:
    """Exit code of a finished child (negative: killed by that signal)."""
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:                   # already reaped
        return 0
    return os.waitstatus_to_exitcode(status)


def _stop(procs) -> None:
    for pid, conn in procs.values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for pid, conn in procs.values():
        _reap(pid)
        conn.close()
    procs.clear()


def _round(fn, jobs, state, deliver, order, workers, caller_works):
    """One round over the indices ``order``.  Returns (indices without a
    result, {index: exit code} of jobs whose worker died running them)."""
    ctx = mp.get_context("fork")
    counter = ctx.Value("q", 0)
    procs = {}                                  # conn -> (pid, conn)
    done, died = set(), {}
    running = {}                                # conn -> index it is running
    try:
        for _ in range(workers):
            recv_end, send_end = Pipe(duplex=False)
            try:
                pid = os.fork()
            except OSError as e:                # out of processes / memory: fewer workers
                recv_end.close()
                send_end.close()
                if not procs:
                    warnings.warn(f"secea_fast: could not start a worker process ({e}); "
                                  "running the jobs in this process", RuntimeWarning, stacklevel=4)
                break
            if pid == 0:                        # the child: never returns
                recv_end.close()
                _worker(fn, state, jobs, order, counter, send_end)
            send_end.close()                    # EOF reaches us when the child exits
            procs[recv_end] = (pid, recv_end)
        if not procs:
            if not caller_works:                # a retry round (see run_shards): nothing ran
                return list(order), died
            caller_works = True
        pending = dict(procs)

        def handle(conn):
            try:
                kind, i, payload = conn.recv()
            except EOFError:                    # the worker died
                pid, _ = pending.pop(conn)
                del procs[conn]
                code = _reap(pid)
                conn.close()
                if conn in running:
                    died[running.pop(conn)] = code
                return "died"
            except Exception as e:              # a message that does not unpickle here
                raise RuntimeError(f"could not read a worker's result: {e!r}") from e
            if kind == _START:
                running[conn] = i
            elif kind == _OK:
                running.pop(conn, None)
                done.add(i)
                deliver(i, payload)
            elif kind == _DONE:
                del pending[conn]
            else:
                raise payload
            return None

        while True:
            if caller_works:
                with counter.get_lock():
                    k = counter.value
                    if k < len(order):
                        counter.value = k + 1
                if k < len(order):
                    i = order[k]
                    deliver(i, fn(state, jobs[i]))
                    done.add(i)
                    for conn in mp_wait(list(pending), timeout=0):
                        if handle(conn) == "died":
                            return [i for i in order if i not in done], died
                    continue
                caller_works = False
            if not pending:
                break
            for conn in mp_wait(list(pending)):
                if handle(conn) == "died":
                    # another worker may have died holding the counter's lock:
                    # stop them all and run what is left in a new round
                    return [i for i in order if i not in done], died
        return [i for i in order if i not in done], died
    finally:
        _stop(procs)


def run_shards(fn, jobs, state, collect, workers: int, *, caller_works: bool = False) -> None:
    """``collect(fn(state, job))`` for every job of ``jobs`` (a list), in
    completion order, on ``workers`` forked processes (plus the caller if
    ``caller_works``); see the module docstring."""
    delivered = set()

    def deliver(i, result):
        if i not in delivered:
            delivered.add(i)
            collect(result)

    deaths: dict[int, int] = {}
    order = list(range(len(jobs)))
    if not fork_available():
        workers = 0
    while order:
        # a job that killed a worker never runs here (it would kill the caller): while one
        # is left, the caller takes no job and the workers run them all
        here = caller_works and not any(i in deaths for i in order)
        n = min(workers, len(order) - 1 if here else len(order))
        if n < 1 or (len(order) == 1 and order[0] not in deaths):
            for i in order:                     # in this process
                if i in deaths:
                    raise RuntimeError(f"job {i} ({jobs[i]!r:.80}) killed its worker process and no "
                                       f"worker is left to retry it; {len(delivered)} of "
                                       f"{len(jobs)} results were collected")
                deliver(i, fn(state, jobs[i]))
            return
        left, died = _round(fn, jobs, state, deliver, order, n, here)
        if not left:
            return
        for i, code in died.items():
            deaths[i] = deaths.get(i, 0) + 1
            if deaths[i] >= MAX_DEATHS:
                raise RuntimeError(f"job {i} ({jobs[i]!r:.80}) killed its worker process "
                                   f"{deaths[i]} times: a worker died (exit code {code}); "
                                   f"{len(delivered)} of {len(jobs)} results were collected")
        codes = ", ".join(str(c) for c in died.values())
        if died:       # a job was running on the dead worker: run the rest in new workers
            how = "again in new worker processes"
        else:          # not attributable to a job: finish here
            how, workers = "in this process", 0
        warnings.warn(f"secea_fast: a worker process died{f' (exit code {codes})' if codes else ''}; "
                      f"running the {len(left)} job(s) without a result {how}",
                      RuntimeWarning, stacklevel=2)
        order = left
