"""Executors (local pool, Ray): shard semantics, bit-identical protocol
results across executors and process counts, the parties' pickling guard,
and ``secea-fast bench throughput`` / ``bench report`` end to end."""
import json
import pickle

import numpy as np
import pytest

from secea_fast import executor as ex_mod
from secea_fast.executor import LocalExecutor, get_executor, party_transfer
from secea_fast import workloads
from secea_fast.protocols import secea
from secea_fast.protocols._blocks import resolve_executor, run_blocks


def _square(state, job):
    return job * job + state["offset"]


def _pid_of(state, job):
    import os
    return os.getpid(), os.environ.get("SECEA_FAST_NUM_THREADS")


@pytest.fixture(scope="module")
def tiny():
    return workloads.workload("tiny", N=4, seed=3)


# ------------------------------------------------------------------ local pool
@pytest.mark.parametrize("processes", [1, 2])
def test_local_map_order_and_collect(processes):
    ex = LocalExecutor(processes)
    jobs = list(range(23))
    assert ex.map(_square, jobs, {"offset": 5}) == [j * j + 5 for j in jobs]
    got = []
    assert ex.map(_square, jobs, {"offset": 1}, got.append) is None
    assert sorted(got) == [j * j + 1 for j in jobs]
    assert ex.map(_square, [], {"offset": 0}) == []


class _Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("no pickling")


class _NeedsTwo(Exception):
    """Pickles (args = one message) but does not unpickle (needs two)."""

    def __init__(self, a, b):
        super().__init__(f"{a} {b}")


def _failing(state, job):
    import os
    if job == state["bad"]:
        if state["how"] == "raise":
            raise ValueError(f"shard {job} is bad")
        if state["how"] == "unpicklable":
            raise _Unpicklable("odd")
        if state["how"] == "unreadable":
            raise _NeedsTwo("x", "y")
        os._exit(3)                     # a worker killed mid-shard
    return job


@pytest.mark.parametrize("how,err,match", [("raise", ValueError, "shard 7 is bad"),
                                           ("unpicklable", RuntimeError, "_Unpicklable: odd"),
                                           ("unreadable", RuntimeError, "could not read"),
                                           ("exit", RuntimeError, "job 7 .* killed its worker "
                                                                  "process 2 times: a worker died")])
def test_local_worker_failures_reach_the_caller(how, err, match):
    """A shard's exception is raised in the caller with its type (or as a
    RuntimeError with the traceback when it does not pickle); a shard that
    kills its worker is retried once in a new worker, then reported (not
    run in the caller, which it would kill); the other workers are stopped,
    and the executor works afterwards."""
    ex = LocalExecutor(2)
    with pytest.warns(RuntimeWarning) if how == "exit" else _no_warning():
        with pytest.raises(err, match=match):
            ex.map(_failing, range(40), {"bad": 7, "how": how})
    assert ex.map(_square, range(5), {"offset": 0}) == [0, 1, 4, 9, 16]


def _last_one_dies(state, job):
    import os
    import time
    if job == 1:
        time.sleep(0.3)                 # job 0 is done by then: job 1 is the only one left
        os._exit(3)
    return job


def test_a_job_that_killed_its_worker_never_runs_in_the_caller():
    """The last job left killed its worker: it is retried in a new worker,
    not in the caller (whom it would kill), then reported; job 0's result
    was collected."""
    got = []
    with pytest.warns(RuntimeWarning, match="again in new worker processes"):
        with pytest.raises(RuntimeError, match=r"job 1 .* killed its worker process 2 times.* 1 of 2"):
            LocalExecutor(2).map(_last_one_dies, range(2), None, got.append)
    assert got == [0]


def _no_warning():
    import contextlib
    return contextlib.nullcontext()


def _dies_once(state, job):
    """Kills its worker the first time job ``bad`` runs (a marker file makes
    the death transient, like an OOM kill)."""
    import os
    if job == state["bad"] and not os.path.exists(state["marker"]):
        open(state["marker"], "w").close()
        os._exit(9)
    return job * 10


def test_local_worker_death_loses_nothing(tmp_path):
    """A worker that dies costs only its shard: the shards without a result
    run again in new workers and every result arrives exactly once."""
    got = []
    with pytest.warns(RuntimeWarning, match="worker process died .*exit code 9"):
        LocalExecutor(2).map(_dies_once, range(30), {"bad": 11, "marker": str(tmp_path / "m")}, got.append)
    assert sorted(got) == [10 * j for j in range(30)]


def _nested(state, job):
    from secea_fast._workers import run_shards
    out = []
    run_shards(_square, [job, job + 1], {"offset": 0}, out.append, 2)
    return sorted(out)


def test_workers_may_run_their_own_pool():
    """Workers are plain forks, not daemonic multiprocessing children, so a
    shard can use a pool itself (a SecEA-PHE block running a Paillier batch
    with processes > 1)."""
    assert LocalExecutor(2).map(_nested, range(4)) == [[j * j, (j + 1) ** 2] for j in range(4)]


def test_local_pool_from_a_script_on_stdin():
    """The pool imports nothing in its workers, not even ``__main__``, so a
    program read from stdin (no importable file) can use it."""
    import subprocess
    import sys
    script = (
        "import os\n"
        "from secea_fast.executor import LocalExecutor\n"
        "def f(state, job):\n"
        "    return job + state, os.getpid()\n"
        "res = LocalExecutor(2).map(f, range(12), 100)\n"
        "assert [r for r, _ in res] == list(range(100, 112))\n"
        "assert os.getpid() not in {p for _, p in res}\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_local_workers_are_processes_with_one_thread():
    res = LocalExecutor(2).map(_pid_of, range(8))
    assert {t for _, t in res} == {"1"}
    import os
    assert os.getpid() not in {p for p, _ in res}


def test_executor_argument_errors():
    with pytest.raises(ValueError, match="processes must be >= 1"):
        LocalExecutor(0)
    with pytest.raises(TypeError):
        LocalExecutor(1.5)
    with pytest.raises(TypeError, match="fn must be a callable"):
        LocalExecutor(1).map(3, [1])
    with pytest.raises(TypeError, match="collect must be callable"):
        LocalExecutor(1).map(_square, [1], {"offset": 0}, collect=5)
    with pytest.raises(ValueError, match="unknown executor"):
        get_executor("dask")
    with pytest.raises(ValueError, match="address applies to the ray"):
        get_executor("local", 1, "auto")
    with pytest.raises(ValueError, match="contradicts"):
        resolve_executor(LocalExecutor(2), 1)
    with pytest.raises(TypeError, match="Executor"):
        resolve_executor("local", None)


def _block(state, j):
    return j, {"work": 0.0}, {"work": 1}


def test_run_blocks_reports_to_the_callers_meter():
    """The progress display is the driver's: run_blocks steps the meter a
    factory makes and closes it; a bool is refused by name."""
    made = []

    class Meter:
        def __init__(self, total, label):
            self.total, self.label, self.steps, self.closed = total, label, 0, False
            made.append(self)

        def step(self, k=1):
            self.steps += k

        def close(self):
            self.closed = True

    got, nbytes = [], {}
    run_blocks(LocalExecutor(1), _block, [1, 2, 3], None, got.append, label="blk", progress=Meter,
               nbytes=nbytes)
    assert sorted(got) == [1, 2, 3] and nbytes == {"work": 3}
    assert [(m.total, m.label, m.steps, m.closed) for m in made] == [(3, "blk", 3, True)]
    run_blocks(LocalExecutor(1), _block, [1], None, got.append)          # no display: nothing made
    assert len(made) == 1
    with pytest.raises(TypeError, match="progress must be None or a callable"):
        run_blocks(LocalExecutor(1), _block, [1], None, got.append, progress=True)


def test_local_shard_overhead_is_small():
    assert 0.0 <= LocalExecutor(2).shard_overhead(50) < 0.05
    with pytest.raises(ValueError):
        LocalExecutor(1).shard_overhead(1)


# ------------------------------------------------------------------ secret guard
def test_parties_refuse_pickling_outside_an_executor():
    prm = secea.SecEAParams(N=3, d=4)
    c, s = secea.Client(0, prm, ["a", "b"]), secea.Server(prm)
    for obj in (c, s):
        with pytest.raises(TypeError, match="not picklable"):
            pickle.dumps(obj)


def test_transferred_client_keeps_seeds_not_the_private_key():
    prm = secea.SecEAParams(N=3, d=4)
    cs = [secea.Client(n, prm, [f"e{n}", "x"]) for n in range(3)]
    keys = [c.public_key for c in cs]
    for c in cs:
        c.set_peer_keys(keys)
    with party_transfer():
        copy = pickle.loads(pickle.dumps(cs[0]))
    assert copy._seeds == cs[0]._seeds and copy._self_seed == cs[0]._self_seed
    assert copy._keypair is None and cs[0]._keypair is not None
    with pytest.raises(RuntimeError, match="worker copy"):
        copy.public_key
    with pytest.raises(RuntimeError, match="worker copy"):
        copy.set_peer_keys(keys)
    with pytest.raises(TypeError):          # the guard is back after the block
        pickle.dumps(cs[0])


# ------------------------------------------------------------------ protocol results
def test_round_identical_for_executors_and_process_counts(tiny):
    ref = secea.run_round(tiny, verify=True, block_size=16)
    res = secea.run_round(tiny, executor=LocalExecutor(2), verify=True, block_size=16)
    assert res.processes == 2
    for a, b in zip(ref.sums, res.sums):
        assert np.array_equal(a, b)
    assert "blocks" in res.wall


def test_round_upto_phases(tiny):
    for upto in ("offline", "responses"):
        r = secea.run_round(tiny, upto=upto, block_size=16)
        assert r.embeddings == [] and r.seconds["offline"] > 0
        assert (r.seconds["responses"] > 0) == (upto == "responses")
        assert r.seconds["decode"] == 0.0
    with pytest.raises(ValueError, match="upto"):
        secea.run_round(tiny, upto="noise")
    with pytest.raises(ValueError, match="verify needs"):
        secea.run_round(tiny, upto="offline", verify=True)


# ------------------------------------------------------------------ Ray
@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'secea_fast[ray]')")
    import sys
    from ray import cloudpickle
    # this test module is not importable by the workers: ship its functions by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def test_ray_batch_sizes():
    from secea_fast import tuning
    assert ex_mod._ray_batch(None, 100, 2) == 1                 # shard time not known yet
    assert ex_mod._ray_batch(1.0, 100, 2) == 1                  # long shards: one per task
    k = int(tuning.RAY_TASK_TARGET_S / 0.005)
    assert ex_mod._ray_batch(0.005, 1000, 2) == k               # 5 ms shards
    assert ex_mod._ray_batch(1e-6, 10**6, 2) == tuning.RAY_TASK_MAX_SHARDS
    assert ex_mod._ray_batch(1e-6, 12, 2) == 3                  # the tail: two tasks per actor
    assert ex_mod._ray_batch(1e-6, 1, 2) == 1


@pytest.mark.slow     # a Ray cluster (about 6 s to start); .ci/run runs it
def test_ray_map_and_one_thread_workers(ray_cluster):
    with ex_mod.RayExecutor(2) as ex:
        assert ex.processes == 2
        jobs = list(range(17))
        assert ex.map(_square, jobs, {"offset": 2}) == [j * j + 2 for j in jobs]
        got = []
        ex.map(_square, jobs, {"offset": 0}, got.append)
        assert sorted(got) == [j * j for j in jobs]
        res = ex.map(_pid_of, range(6))
        assert {t for _, t in res} == {"1"} and len({p for p, _ in res}) <= 2
        # many short shards go in batches per task: every result, once
        many = list(range(500))
        assert ex.map(_square, many, {"offset": 1}) == [j * j + 1 for j in many]
        assert 0.0 <= ex.shard_overhead(40) < 0.5
    with pytest.raises(RuntimeError, match="closed"):
        ex.map(_square, [1], {"offset": 0})


@pytest.mark.slow     # a Ray cluster (about 6 s to start); .ci/run runs it
def test_ray_round_bit_identical_to_local(ray_cluster, tiny):
    ref = secea.run_round(tiny, processes=2, verify=True, block_size=16)
    with ex_mod.RayExecutor(2) as ex:
        res = secea.run_round(tiny, executor=ex, verify=True, block_size=16)
        res2 = secea.run_round(tiny, executor=ex, verify=True, block_size=32)  # executor reused
    for a, b, c in zip(ref.sums, res.sums, res2.sums):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    for a, b in zip(ref.counts, res.counts):
        assert np.array_equal(a, b)


@pytest.mark.slow     # a Ray cluster (about 6 s to start); .ci/run runs it
def test_ray_secea_phe_round(ray_cluster):
    from secea_fast.protocols import secea_phe
    local = workloads.workload("tiny", N=3, d=2, seed=1)
    local = [dict(list(x.items())[:12]) for x in local]
    with ex_mod.RayExecutor(2) as ex:
        res = secea_phe.run_round(local, key_bits=512, insecure_keys=True, executor=ex,
                                  verify=True)
    assert res.processes == 2


# ------------------------------------------------------------------ bench commands
def test_throughput_measure_schema(tiny):
    from secea_fast.bench import throughput
    out = throughput.measure("secea", "responses", [1, 2], ("local",), workload="tiny", N=4)
    assert out["kind"] == "secea-fast/throughput" and out["version"] == 1
    (r,) = out["results"]
    assert r["unit"] == "entities/s" and r["executor"] == "local"
    assert [row["processes"] for row in r["rows"]] == [1, 2]
    assert r["rows"][0]["speedup"] == 1.0 and r["rows"][0]["efficiency"] == 1.0
    assert r["workload"]["entities"] == sum(len(x) for x in workloads.workload("tiny", N=4))
    for row in r["rows"]:
        assert row["rate"] == pytest.approx(r["workload"]["entities"] / row["seconds"])
    assert "Ray" not in throughput.table(out)


@pytest.mark.parametrize("protocol,phase", [("paillier", "encrypt"), ("dpf", "keygen"),
                                            ("dpf", "eval")])
def test_throughput_other_protocols(protocol, phase):
    from secea_fast.bench import throughput
    opts = {"paillier": {"key_bits": 2048, "count": 70}, "dpf": {"count": 300, "log_domain": 10}}
    out = throughput.measure(protocol, phase, 2, **opts[protocol])
    rows = out["results"][0]["rows"]
    assert [r["processes"] for r in rows] == [1, 2] and all(r["rate"] > 0 for r in rows)


def test_throughput_errors():
    from secea_fast.bench import throughput
    with pytest.raises(ValueError, match="unknown protocol"):
        throughput.measure("secemb")
    with pytest.raises(ValueError, match="phases"):
        throughput.measure("secea", "noise")
    with pytest.raises(ValueError, match="unknown executor"):
        throughput.measure("secea", "offline", 1, ("dask",))
    with pytest.raises(ValueError, match="unknown option"):
        throughput.measure("secea", "offline", 1, colour="red")
    with pytest.raises(ValueError, match="processes"):
        throughput.measure("secea", "offline", 0)
    with pytest.raises(ValueError, match="address applies"):
        throughput.measure("secea", "offline", 1, address="auto")


def test_cli_bench_throughput_then_report(tmp_path, capsys):
    from secea_fast.cli import main
    js = tmp_path / "tp.json"
    assert main(["bench", "throughput", "--workload", "tiny", "-N", "4", "-P", "2",
                 "--phase", "round", "--json", str(js), "--quiet"]) == 0
    data = json.loads(js.read_text())
    assert data["results"][0]["phase"] == "round"
    assert main(["bench", "report", str(js), "-o", str(tmp_path / "rep"), "--no-plots"]) == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "round" in md and "entities/s" in md
    assert main(["bench", "throughput", "--protocol", "secea", "--phase", "encrypt"]) == 2
    assert "phases" in capsys.readouterr().err


@pytest.mark.slow     # a Ray cluster (about 6 s to start); .ci/run runs it
def test_cli_run_with_ray_executor(ray_cluster, capsys):
    from secea_fast.cli import main
    assert main(["run", "--workload", "tiny", "-N", "3", "--executor", "ray", "--processes", "2",
                 "--quiet"]) == 0
    with pytest.raises(SystemExit) as exc:
        main(["run", "--protocol", "osfl", "--executor", "ray"])
    assert exc.value.code == 2
    assert "it is read by --protocol secea" in capsys.readouterr().err
