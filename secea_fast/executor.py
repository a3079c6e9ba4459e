"""Executors for entity-sharded work: one interface, a local process pool
(default) and a Ray backend for running past one machine.

A protocol splits its per-entity work into independent *shards* (for SecEA:
one query block of one client; every shard uses its own PRG domains, so the
result does not depend on where or in which order shards run) that read one
large, read-only *state* (the parties and their shares).  An executor runs

    collect(fn(state, shard))   for every shard, in completion order,

where ``fn`` is a module-level function (workers import it by name) and
``collect`` runs in the calling process, so results come back per shard and
a progress bar or an aggregate can advance as they arrive.

* :class:`LocalExecutor` (``processes`` workers): with one process the
  shards run inline; with more, they run on the package's one process-pool
  mechanism, ``secea_fast._workers.run_shards``: workers forked for the
  call inherit ``state`` and the shard list copy-on-write and take the next
  shard index from a shared counter, sending each result back over their
  own pipe (nothing is serialised but the results, nothing is imported, not
  even ``__main__``).  There is no task queue and no thread in the calling
  process, which only waits for results: on a machine with as many cores as
  workers, the pool threads of ``multiprocessing.Pool`` took CPU from the
  workers and left them waiting between shards (45-85 ms per worker over a
  1 s phase).  A shard's exception is raised in the caller (as a
  RuntimeError with the traceback if it does not pickle) and the other
  workers are stopped; a worker that dies costs only its shard, which runs
  again in a new worker (RuntimeError if it kills that one too); without
  ``fork`` (Windows) the shards run inline.
* :class:`RayExecutor` (the optional ``ray`` extra): ``state`` goes to the
  object store once per :meth:`Executor.map` call (``ray.put``; NumPy arrays
  in it are read zero-copy by workers on the same node), each of
  ``processes`` long-lived actors deserialises it once, then shards are
  dispatched with two tasks in flight per actor so an actor never idles
  waiting for the driver; short shards go several to a task (about
  ``tuning.RAY_TASK_TARGET_S`` of work each, from the shard time measured
  on finished tasks) so Ray's round trip of about 0.5 ms is paid per task.  ``address=None`` starts a local Ray instance with
  ``num_cpus=processes``; ``address="auto"`` or ``"ray://host:10001"``
  joins a running cluster, whose nodes must have ``secea_fast`` installed.
  :meth:`Executor.shard_overhead` measures the per-shard scheduling cost
  (a no-op shard's round trip) so users can size shards: keep a shard's
  work at >= 100x that cost.

Every kernel inside a worker runs on one thread (the workers are the
parallelism); results are bit-identical across executors and process counts
(tested).

Memory.  A shard allocates and frees tens of MB of short-lived arrays (a
SecEA block: the N queries of 2^21 entries, 16 MB each).  With glibc's
default, adaptive thresholds those come from fresh ``mmap``s or a heap that
is trimmed back to the OS after every block, so each block page-faults its
buffers in again: at the MovieLens-1M shape that made the query phase 1.5x
slower.  The worker processes (the fork workers, the Ray actors)
therefore set ``M_MMAP_THRESHOLD`` to 32 MB and ``M_TRIM_THRESHOLD`` to
256 MB once (:func:`tune_malloc`; a no-op without glibc): freed buffers are
reused, at the price of keeping up to 256 MB of freed heap in the process.
The calling process, which runs the shards of the inline pool, is the
caller's: ``secea_fast.tune_memory()`` applies the same settings to it (the
command line and the benchmarks call it); ``SECEA_FAST_MALLOC=default``
turns both off (``secea_fast._memory``).

Secrets.  Every class holding a secret (``secea_fast._secrets.SecretHolder``:
protocol parties, private keys, PRG streams, DPF path secrets) refuses to
be pickled or copied, so its secrets cannot leak into a log, a cache or a
file by accident.  An executor lifts that refusal only while it serialises
its own ``state`` (:func:`party_transfer`), and then a party pickles only
the attributes ``secea_fast._secrets.TRANSFER`` declares for its class
(the others are None in the copy; a class without an entry is refused).
The copies carry no long-term private key: a SecEA client sends the
pairwise, self and query seeds it has derived, not its X25519 key; a
SecEA-PHE client sends its Paillier public keys, not its private key, and
``secea_phe.run_round`` decrypts in the calling process when the workers'
copies cannot; servers send their noise seeds.  With Ray, those seeds then
sit in the object store of the cluster and cross the network between
nodes: run the parties of one trust domain per cluster, with Ray's TLS
(``RAY_USE_TLS=1``) between nodes.  The local pool serialises nothing: its
forked workers are the calling process's own image for one call (every key
of the simulated parties included) and exit when it returns.
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, TypeVar, overload

from ._checks import check_int
from ._memory import release_free_heap, tune_malloc
from ._native import available_cpus
from ._secrets import transfer
from ._workers import run_shards

__all__ = ["Executor", "LocalExecutor", "RayExecutor", "get_executor", "party_transfer",
           "ray_available", "tune_malloc", "worker_usage"]

_THREADS_ENV = "SECEA_FAST_NUM_THREADS"
_J = TypeVar("_J")
_R = TypeVar("_R")


def party_transfer() -> AbstractContextManager[None]:
    """The block inside which protocol parties pickle for this executor's
    own workers: ``secea_fast._secrets.transfer``, where the one rule for
    secrets says which attributes of which class cross (the module
    docstring)."""
    return transfer()


def _check_map_args(fn, jobs, collect):
    if not callable(fn):
        raise TypeError("fn must be a callable fn(state, shard)")
    if collect is not None and not callable(collect):
        raise TypeError("collect must be callable or None")
    return list(jobs)


class Executor:
    """Runs ``fn(state, shard)`` for every shard; see the module docstring."""

    name = "base"
    processes = 1

    @overload
    def map(self, fn: Callable[[Any, _J], _R], jobs: Iterable[_J], state: Any = None,
            collect: None = None) -> list[_R]: ...
    @overload
    def map(self, fn: Callable[[Any, _J], _R], jobs: Iterable[_J], state: Any,
            collect: Callable[[_R], object]) -> None: ...

    def map(self, fn: Callable[[Any, _J], _R], jobs: Iterable[_J], state: Any = None,
            collect: Callable[[_R], object] | None = None) -> list[_R] | None:
        """``collect(fn(state, shard))`` for every shard in completion
        order; without ``collect``, the results as a list in shard order."""
        shards = _check_map_args(fn, jobs, collect)
        if collect is not None:
            self._run(fn, shards, state, collect)
            return None
        out: list[Any] = [None] * len(shards)

        def put(res: tuple[int, _R]) -> None:
            out[res[0]] = res[1]
        self._run(_Indexed(fn), list(enumerate(shards)), state, put)
        return out

    def _run(self, fn, jobs, state, collect):      # pragma: no cover - abstract
        raise NotImplementedError

    def shard_overhead(self, shards: int = 200) -> float:
        """Seconds of scheduling per shard: the wall time of ``shards``
        no-op shards less that of one (which pays the per-call state
        load), divided by ``shards - 1``."""
        shards = check_int(shards, "shards")
        if shards < 2:
            raise ValueError("shards must be >= 2")
        times = []
        for k in (1, shards):
            t0 = time.perf_counter()
            self._run(_noop, range(k), None, lambda r: None)
            times.append(time.perf_counter() - t0)
        return max(times[1] - times[0], 0.0) / (shards - 1)

    def close(self) -> None:
        """Release workers (no-op for the local pool)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"{type(self).__name__}(processes={self.processes})"


class _Indexed:
    """fn wrapper keeping a shard's position (for ``map`` without collect)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state, item):
        return item[0], self.fn(state, item[1])


# ------------------------------------------------------------------ local pool
class LocalExecutor(Executor):
    """Inline (``processes=1``) or ``processes`` forked workers that
    inherit ``state`` copy-on-write and pull shards from a shared counter;
    created per :meth:`map` call (``secea_fast._workers``; see the module
    docstring)."""

    name = "local"

    def __init__(self, processes: int = 1) -> None:
        processes = check_int(processes, "processes")
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        self.processes = processes

    def _run(self, fn, jobs, state, collect):
        if self.processes == 1 or len(jobs) <= 1:
            for job in jobs:
                collect(fn(state, job))
            return
        release_free_heap()
        run_shards(fn, list(jobs), state, collect, self.processes)


# ------------------------------------------------------------------------- Ray
def ray_available() -> bool:
    """Whether the optional ``ray`` extra is importable."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError('the Ray executor needs Ray: pip install "secea_fast[ray]"') from None
    return ray


class _RayWorker:
    """Body of a Ray actor: holds the deserialised state of the current map
    call and runs shards on it, kernels on one thread."""

    def __init__(self):
        os.environ[_THREADS_ENV] = "1"
        tune_malloc()
        self._token, self._state = None, None

    def load(self, token, state):
        self._token, self._state = token, state
        return os.getpid()

    def run(self, token, fn, jobs):
        """The shards ``jobs`` in order: (results, seconds they took)."""
        if token != self._token:
            raise RuntimeError("shard dispatched before its state was loaded")
        t0 = time.perf_counter()
        out = [fn(self._state, job) for job in jobs]
        return out, time.perf_counter() - t0

    def ping(self, x):
        return x


class RayExecutor(Executor):
    """``processes`` Ray actors (default: the cluster's CPUs), one CPU each,
    alive until :meth:`close`.  ``address``: None starts a local instance
    (``num_cpus=processes``, stopped again by :meth:`close`; always a new
    one, never a cluster ``RAY_ADDRESS`` or ``ray start`` left on the host);
    otherwise passed to ``ray.init`` to join a running cluster.
    ``inflight``: shards queued per actor.

    A local instance keeps its session files (sockets, logs; Ray never
    removes them) in a temporary directory of its own (``RAY_TMPDIR`` while
    Ray starts; short, for the sockets' 107-byte path limit), removed by
    :meth:`close` and, if the command is killed, by its watchdog
    (:func:`secea_fast._lifetime.remove_on_exit`)."""

    name = "ray"

    def __init__(self, processes: int | None = None, address: str | None = None,
                 inflight: int = 2, **init_kwargs: Any) -> None:
        ray = _import_ray()
        if processes is not None:
            processes = check_int(processes, "processes")
            if processes < 1:
                raise ValueError(f"processes must be >= 1, got {processes}")
        if address is not None and not isinstance(address, str):
            raise TypeError("address must be a string such as 'auto' or 'ray://host:10001'")
        self.inflight = check_int(inflight, "inflight")
        if self.inflight < 1:
            raise ValueError("inflight must be >= 1")
        self._ray = ray
        self._owns = False
        self._tmp: str | None = None
        if not ray.is_initialized():
            kw: dict[str, Any] = dict(include_dashboard=False, log_to_driver=False)
            if address is None:
                kw["num_cpus"] = processes or available_cpus()
            kw.update(init_kwargs)
            handlers = _signal_handlers()
            if address is None:
                self._tmp = _ray_tmpdir()
                # Ray's FutureWarning about accelerator variables answered at its source (the
                # behaviour it announces), and its "Started a local Ray instance" INFO line
                env = {"RAY_TMPDIR": self._tmp, "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO":
                       os.environ.get("RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO", "0")}
                before = {k: os.environ.get(k) for k in env}
                os.environ.update(env)
                kw.setdefault("logging_level", logging.WARNING)
                try:
                    ray.init(address="local", **kw)
                except BaseException:
                    self._remove_tmp()
                    raise
                finally:
                    for k, v in before.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
            else:
                ray.init(address=address, **kw)
            _restore_signal_handlers(handlers)
            self._owns = True
        self.address = address
        if processes is None:
            processes = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.processes = processes
        actor = ray.remote(num_cpus=1)(_RayWorker)
        self._actors: list[Any] | None = []
        self._tokens = 0
        try:
            self._actors = [actor.remote() for _ in range(processes)]
            # wait until every actor is up (process start + imports), so that
            # a map call times only its own work
            ray.get([a.ping.remote(0) for a in self._actors])
        except BaseException:
            # a signal (the command's Interrupted) or a failure while the actors start: the
            # caller never gets the executor to close, so the instance ends here, not in
            # Ray's exit hook after the command's sweep has killed its processes (which hung)
            self.close()
            raise

    def _run(self, fn, jobs, state, collect):
        ray = self._ray
        if self._actors is None:
            raise RuntimeError("RayExecutor is closed")
        self._tokens += 1
        token = self._tokens
        with party_transfer():
            ref = ray.put(state)
        ray.get([a.load.remote(token, ref) for a in self._actors])
        pending = {}
        nxt = [0]
        per_shard = [None]          # running estimate of one shard's seconds

        def submit(actor):
            k = _ray_batch(per_shard[0], len(jobs) - nxt[0], len(self._actors))
            batch = jobs[nxt[0]:nxt[0] + k]
            if batch:
                nxt[0] += len(batch)
                pending[actor.run.remote(token, fn, batch)] = actor

        for a in self._actors:
            for _ in range(self.inflight):
                submit(a)
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                actor = pending.pop(done[0])
                results, secs = ray.get(done[0])
                est = secs / len(results)
                per_shard[0] = est if per_shard[0] is None else (per_shard[0] + est) / 2
                submit(actor)
                for res in results:
                    collect(res)
        finally:
            for r in pending:
                ray.cancel(r)
            # drop the state held by the actors and the object store
            ray.get([a.load.remote(0, None) for a in self._actors])
            del ref

    def close(self) -> None:
        if self._actors is None:
            return
        for a in self._actors:
            self._ray.kill(a)
        self._actors = None
        if self._owns:
            self._ray.shutdown()
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            import shutil
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


_GUARDED_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


def _signal_handlers() -> dict:
    """The Python handlers of SIGTERM, SIGINT and SIGHUP now."""
    import signal
    return {getattr(signal, n): signal.getsignal(getattr(signal, n)) for n in _GUARDED_SIGNALS
            if hasattr(signal, n)}


def _restore_signal_handlers(handlers: dict) -> None:
    """Put back the handlers that were Python functions before ``ray.init``
    (a command's guard, :func:`secea_fast._lifetime.run_guarded`): Ray's
    driver replaces SIGTERM's with its own, and its core worker's fatal
    signal handler then aborts the process (exit -6), so no cleanup would
    run and Ray's processes would outlive the command."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return
    for sig, h in handlers.items():
        if callable(h) and signal.getsignal(sig) is not h:
            signal.signal(sig, h)


def _ray_tmpdir() -> str:
    """A new temporary directory for a local Ray instance's session files,
    registered for removal if the command is killed; under the system's
    temporary directory when that is short enough for Ray's socket paths
    (about 70 bytes below it), else under /tmp."""
    import tempfile
    from ._lifetime import remove_on_exit
    base = tempfile.gettempdir()
    d = tempfile.mkdtemp(prefix="secea-ray-", dir=base if len(base) <= 20 else "/tmp")
    remove_on_exit(d)
    return d


def _ray_batch(per_shard, left, actors):
    """Shards per Ray task: one until a shard's time is known, then enough
    that a task lasts ``tuning.RAY_TASK_TARGET_S`` (a Ray round trip costs
    about 0.5 ms; shards of a few ms would pay it several percent), never
    more than leaves each actor two tasks of what is left (the tail)."""
    from . import tuning
    if per_shard is None or left <= 0:
        return 1
    k = int(tuning.RAY_TASK_TARGET_S / max(per_shard, 1e-9)) or 1
    return max(1, min(k, tuning.RAY_TASK_MAX_SHARDS, left // (2 * actors)))


def _noop(state, job):
    return job


def _usage(state, job):
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF)
    return os.getpid(), r.ru_utime + r.ru_stime, r.ru_maxrss * 1024


def worker_usage(executor: Executor, probes: int = 8) -> dict[int, tuple[float, int]]:
    """(CPU seconds so far, user + sys; peak resident set in bytes,
    ``getrusage``'s ru_maxrss) of the workers that ran ``probes`` x
    ``processes`` no-op shards, by process id: for a Ray executor its
    long-lived actors, so the difference of two calls is the CPU their
    computation in between took, and the peak covers it (an actor that gets
    no probe is missing).  A local pool forks new workers per call: their
    figures are of the fork, not of a past computation."""
    if not isinstance(executor, Executor):
        raise TypeError(f"executor must be an Executor, got {type(executor).__name__}")
    probes = check_int(probes, "probes")
    if probes < 1:
        raise ValueError(f"probes must be >= 1, got {probes}")
    out: dict[int, tuple[float, int]] = {}
    for pid, cpu, rss in executor.map(_usage, range(probes * executor.processes), None):
        old = out.get(pid, (0.0, 0))
        out[pid] = (max(cpu, old[0]), max(rss, old[1]))
    return out


def get_executor(kind: str = "local", processes: int | None = None,
                 address: str | None = None) -> Executor:
    """``"local"`` -> :class:`LocalExecutor` (``processes`` default 1),
    ``"ray"`` -> :class:`RayExecutor`."""
    if not isinstance(kind, str):
        raise TypeError("executor kind must be a string")
    if kind == "local":
        if address is not None:
            raise ValueError("address applies to the ray executor only")
        return LocalExecutor(1 if processes is None else processes)
    if kind == "ray":
        return RayExecutor(processes, address)
    raise ValueError(f"unknown executor {kind!r}: expected 'local' or 'ray'")
