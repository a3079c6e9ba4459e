"""Objective-hiding one-shot FL (Egger, Urbanke, Bitar, 2025) at the Fig. 4
shape: n = 100 clients, T = 20 objectives, z_s = z_q = 5, s = 10^5 public
labels of c = 10 classes, rho = 51 (k_C = 26: every share polynomial carries
K = 21 labels), cyclic assignment, EMBEDDING_PRIME.

Each stage is timed on one party, alternating with ``secea_fast.linalg.matmul``
on the product shape the stage reduces to (same process, same inputs sizes,
best of the rounds for both), and reports in extra_info / stdout:

* ``elements_per_s``: label (sharing) or answer (answering, reconstruction)
  field elements processed per second;
* ``macs_per_s``: field multiply-adds per second of the stage's math;
* ``fraction_of_matmul``: matmul seconds / stage seconds on that shape
  (goal >= 0.3).

Stages: sharing (client 0: eq. 1 for its |I(0)| = 11 objectives, one
rho x k_C by k_C x (P c) product each), answering (a middle client: the
weighted sum of its |I(i)| stored rows, plus the K + 1 mask streams in
symmetric mode), reconstruction (the federator: K x n by n x (P c)).  The
answer is a one-row product, which the matmul kernel runs slowly; the
stage uses C field kernels instead (see ``osfl.params.lincomb``), so its
fraction exceeds 1 and the kernel's rate on the sharing shape is reported
beside it.  A full end-to-end ``run`` at s = 2,000 gives per-phase seconds.
"""
import time

import numpy as np
import pytest

from secea_fast import linalg
from secea_fast.protocols import osfl

from conftest import uniform

N, T, RHO, ZS, ZQ, S, C, LEVELS = 100, 20, 51, 5, 5, 10**5, 10, 17
ROUNDS = 5


@pytest.fixture(scope="module")
def setup(rng):
    params = osfl.OSFLParams(osfl.Assignment.cyclic(N, T, RHO), ZS, ZQ, S, C, levels=LEVELS)
    labels = rng.integers(0, LEVELS, size=(T, S, C), dtype=np.uint8)
    return params, labels


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _report(benchmark, name, t_stage, t_mm, elements, macs, shape, extra=None):
    info = {"stage": name, "n": N, "T": T, "rho": RHO, "z_s": ZS, "z_q": ZQ, "s": S, "c": C,
            "stage_seconds": t_stage, "matmul_seconds": t_mm, "matmul_shape": shape,
            "elements_per_s": elements / t_stage, "macs_per_s": macs / t_stage,
            "matmul_macs_per_s": macs / t_mm, "fraction_of_matmul": t_mm / t_stage}
    info.update(extra or {})
    benchmark.extra_info.update(info)
    print(f"\n[osfl {name}] {elements / t_stage / 1e6:.1f} M elements/s, {macs / t_stage / 1e9:.2f} G MAC/s; "
          f"matmul on {shape}: {macs / t_mm / 1e9:.2f} G MAC/s; fraction of matmul = {t_mm / t_stage:.2f}"
          + "".join(f"; {k} = {v:.3g}" for k, v in (extra or {}).items() if isinstance(v, float)))


def test_osfl_share(benchmark, setup, rng):
    params, labels = setup
    objs = params.objectives(0)
    refs = [uniform(rng, params.p, (params.k_C, params.cols)) for _ in objs]
    t_stage, t_mm = [], []

    def target():
        client = osfl.Client(0, params, labels)
        dt, msgs = _timed(client.share)
        t_stage.append(dt)
        del msgs
        dt, outs = _timed(lambda: [linalg.matmul(params.vandermonde(t), R, params.p) for t, R in zip(objs, refs)])
        t_mm.append(dt)

    benchmark.group = "osfl stages (n=100, T=20, z=5, s=1e5)"
    benchmark.pedantic(target, rounds=ROUNDS, iterations=1)
    macs = len(objs) * params.rho * params.k_C * params.cols
    _report(benchmark, "share", min(t_stage), min(t_mm), len(objs) * S * C, macs,
            f"{len(objs)} x ({params.rho}x{params.k_C} @ {params.k_C}x{params.cols})",
            {"share_elements_out_per_s": len(objs) * params.rho * params.cols / min(t_stage)})


def _ready_client(params, labels, rng, index, seed=None):
    client = osfl.Client(index, params, labels, shared_seed=seed, session=b"retrieval-1")
    client.share()
    for t in params.objectives(index):
        for i1 in params.clients(t):
            if i1 != index:
                client.receive(osfl.ShareMessage(i1, index, t, uniform(rng, params.p, (params.n_partitions, C))))
    assert client.ready
    return client


@pytest.mark.parametrize("symmetric", [False, True])
def test_osfl_answer(benchmark, setup, rng, symmetric):
    params, labels = setup
    index = N // 2
    seed = b"s" * 32 if symmetric else None
    query = osfl.Federator(params, 3).queries()[index]
    m = len(params.objectives(index))
    rows = m + (params.K + 1 if symmetric else 0)
    w = uniform(rng, params.p, (1, rows))
    M = uniform(rng, params.p, (rows, params.cols))
    B8 = uniform(rng, params.p, (8, rows))
    t_stage, t_mm, t_mm8 = [], [], []

    def fresh():
        # answer() is once per client and a Client holding a secret is never copied, so each
        # round gets a new ready client, built outside the timed region
        return (_ready_client(params, labels, rng, index, seed=seed),), {}

    def target(client):
        dt, _ = _timed(lambda: client.answer(query))
        t_stage.append(dt)
        t_mm.append(_timed(lambda: linalg.matmul(w, M, params.p))[0])
        t_mm8.append(_timed(lambda: linalg.matmul(B8, M, params.p))[0])

    benchmark.group = "osfl stages (n=100, T=20, z=5, s=1e5)"
    benchmark.pedantic(target, setup=fresh, rounds=ROUNDS + 2, iterations=1)
    macs = rows * params.cols
    _report(benchmark, "answer" + (" symmetric" if symmetric else ""), min(t_stage), min(t_mm),
            m * params.cols, macs, f"1x{rows} @ {rows}x{params.cols}",
            {"kernel_8row_macs_per_s": 8 * macs / min(t_mm8),
             "fraction_of_8row_kernel_rate": (macs / min(t_stage)) / (8 * macs / min(t_mm8))})


def test_osfl_reconstruct(benchmark, setup, rng):
    params, _ = setup
    fed = osfl.Federator(params, 3)
    answers = {i: osfl.Answer(i, uniform(rng, params.p, (params.n_partitions, C))) for i in range(N)}
    D = params.decoder(3)
    A = uniform(rng, params.p, (N, params.cols))
    t_stage, t_mm = [], []

    def target():
        t_stage.append(_timed(lambda: fed.reconstruct(answers))[0])
        t_mm.append(_timed(lambda: linalg.matmul(D, A, params.p))[0])

    benchmark.group = "osfl stages (n=100, T=20, z=5, s=1e5)"
    benchmark.pedantic(target, rounds=ROUNDS, iterations=1)
    macs = params.K * N * params.cols
    _report(benchmark, "reconstruct", min(t_stage), min(t_mm), N * params.cols, macs,
            f"{params.K}x{N} @ {N}x{params.cols}", {"label_elements_out_per_s": S * C / min(t_stage)})


@pytest.mark.parametrize("symmetric", [False, True])
def test_osfl_end_to_end(benchmark, rng, symmetric):
    """All 100 clients and the federator, s = 2,000 labels (per-phase seconds and bytes)."""
    s = 2000
    asg = osfl.Assignment.cyclic(N, T, RHO)
    labels = rng.integers(0, LEVELS, size=(N, T, s, C), dtype=np.uint8)
    out = {}

    def target():
        out["rep"] = osfl.run_round(labels, asg, 3, ZS, ZQ, symmetric, levels=LEVELS)

    benchmark.group = "osfl end to end (n=100, T=20, z=5, s=2000)"
    benchmark.pedantic(target, rounds=1, iterations=1)
    rep = out["rep"]
    res = rep.sums
    assert (res == labels[list(asg.clients(3)), 3].astype(np.int64).sum(axis=0)).all()
    table = osfl.rates(N, T, RHO, ZS, ZQ, s=s, c=C)["ours"]
    benchmark.extra_info.update(symmetric=symmetric, **{f"seconds_{k}": v for k, v in rep.seconds.items()},
                                **{f"bytes_{k}": v for k, v in rep.bytes.items()},
                                **{f"elements_{k}": v for k, v in rep.elements.items()},
                                table_I_communication=table["communication"],
                                measured_rates=rep.measured_rates())
    print(f"\n[osfl end to end, symmetric={symmetric}] " +
          ", ".join(f"{k} {v:.3f} s" for k, v in rep.seconds.items()) +
          f"; field elements {sum(rep.elements.values())} (Table I: {table['communication']:.0f} + queries)")


# ----------------------------------------------------------------- the competing approaches side by side
# Fig. 3's setting (n = 10, T = 10, z_s = z_q = 1) with n = rho = 11 so that
# every scheme applies (the star product and Approaches 1-2 need rho = n; the
# main scheme needs rho - z_s - z_q odd): s = 10^4 labels of c = 10 classes.
AN, AT, AZ, AS, AC = 11, 10, 1, 10**4, 10
APPROACHES = {
    "ours": lambda lab, asg, sym: osfl.run_round(lab, asg, 3, AZ, AZ, sym, levels=LEVELS),
    "approach1": lambda lab, asg, sym: osfl.approach1(lab, 3, AZ, AZ, levels=LEVELS),
    "approach2": lambda lab, asg, sym: osfl.approach2(lab, 3, AZ, AZ, sym, levels=LEVELS),
    "star_product": lambda lab, asg, sym: osfl.star_product(lab, 3, AZ, AZ, sym, levels=LEVELS),
    "gxstpir": lambda lab, asg, sym: osfl.gxstpir(lab, asg, 3, AZ, AZ, sym, levels=LEVELS),
}


@pytest.fixture(scope="module")
def approach_labels(rng):
    return rng.integers(0, LEVELS, size=(AN, AT, AS, AC), dtype=np.uint8)


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("scheme", list(APPROACHES))
def test_osfl_approaches(benchmark, approach_labels, scheme, symmetric):
    """One whole retrieval per round (all 11 clients and the federator):
    seconds per phase, payload field elements and bytes per stage, against
    ``osfl.elements`` (exact) and Table I / Sec. IV (``osfl.rates``).
    Approach 1 has no symmetric mode: its symmetric row repeats it."""
    asg = osfl.Assignment.cyclic(AN, AT, AN)
    out = {}

    def target():
        out["rep"] = APPROACHES[scheme](approach_labels, asg, symmetric)

    benchmark.group = f"osfl approaches (n={AN}, T={AT}, z=1, s=1e4, c=10, symmetric={symmetric})"
    benchmark.pedantic(target, rounds=3, iterations=1)
    rep = out["rep"]
    assert (rep.sums == approach_labels[:, 3].astype(np.int64).sum(axis=0)).all()
    kw = {"K": 2} if scheme == "approach2" else {}
    want = osfl.elements(scheme, AN, AT, AN, AZ, AZ, s=AS, c=AC, **kw)
    assert {k: rep.elements[k] for k in want} == want
    table = osfl.rates(AN, AT, AN, AZ, AZ, s=AS, c=AC)[scheme]
    benchmark.extra_info.update(scheme=scheme, symmetric=symmetric,
                                **{f"seconds_{k}": v for k, v in rep.seconds.items()},
                                **{f"bytes_{k}": v for k, v in rep.bytes.items()},
                                **{f"elements_{k}": v for k, v in rep.elements.items()},
                                table_communication=table["communication"])
    print(f"\n[osfl {scheme:12s} symmetric={symmetric!s:5s}] "
          + ", ".join(f"{k} {v:.3f}" for k, v in rep.seconds.items())
          + f" s; MB shared {rep.bytes['sharing'] / 1e6:.1f}, queried {rep.bytes['queries'] / 1e3:.1f} kB, "
          f"downloaded {rep.bytes['answers'] / 1e6:.2f}; elements shared + downloaded "
          f"{rep.elements['sharing'] + rep.elements['answers']} (Table I {table['communication']:.0f})")


# ----------------------------------------------------------------- the session driver against the parties called directly
def _direct_round(labels, asg, j, symmetric):
    """The round with the parties called directly, message objects handed
    over in a loop (what ``run_round`` did before the sessions): the
    reference the driver's cost is measured against."""
    from secea_fast.prg import random_seed
    n, _, s, c = labels.shape
    params = osfl.OSFLParams(asg, ZS, ZQ, s, c, levels=LEVELS)
    seed, session = (random_seed(32), random_seed(16)) if symmetric else (None, b"")
    clients = [osfl.Client(i, params, labels[i], shared_seed=seed, session=session) for i in range(n)]
    fed = osfl.Federator(params, j)
    nbytes = elems = 0
    for cl in clients:
        for m in cl.share():
            nbytes += m.nbytes
            elems += m.elements
            clients[m.receiver].receive(m)
    queries = fed.queries()
    return fed.reconstruct({i: clients[i].answer(queries[i]) for i in range(n)})


def test_osfl_driver_overhead(benchmark, rng):
    """``run_round`` (sessions over the in-memory loopback) against the same
    round with the parties called directly, alternating in one process at the
    end-to-end shape (n = 100, T = 20, rho = 51, s = 2,000: 51,000 share
    messages), CPU seconds of each, 5 pairs.  Reports the ratio of the
    medians and of the minima (goal: at most 1.05), and the driver's own
    cost measured apart: the same 51,000 frames through the sessions with
    engines that do no arithmetic, over the median direct round."""
    from secea_fast.protocols.osfl.session import ClientSession, FederatorSession, drive
    s = 2000
    asg = osfl.Assignment.cyclic(N, T, RHO)
    labels = rng.integers(0, LEVELS, size=(N, T, s, C), dtype=np.uint8)
    want = labels[list(asg.clients(3)), 3].astype(np.int64).sum(axis=0)
    t_direct, t_driver = [], []

    def target():
        for _ in range(5):
            t0 = time.process_time()
            assert (_direct_round(labels, asg, 3, False).astype(np.int64) == want).all()
            t1 = time.process_time()
            assert (osfl.run_round(labels, asg, 3, ZS, ZQ, levels=LEVELS).sums == want).all()
            t2 = time.process_time()
            t_direct.append(t1 - t0)
            t_driver.append(t2 - t1)

    benchmark.group = "osfl driver overhead (n=100, T=20, s=2000)"
    benchmark.pedantic(target, rounds=1, iterations=1)

    # the driver alone: engines that hand over fixed messages and do nothing
    params = osfl.OSFLParams(asg, ZS, ZQ, s, C, levels=LEVELS)
    v = np.zeros((params.n_partitions, C), dtype=np.uint64)
    msgs = {i: [osfl.ShareMessage(i, i1, t, v) for t in params.objectives(i) for i1 in params.clients(t) if i1 != i]
            for i in range(N)}

    class NullClient:
        wire_params, ready = params, True

        def __init__(self, i):
            self.index = i

        def share(self, rng=None):
            return msgs[self.index]

        def receive(self, m):
            pass

        def answer(self, q):
            return osfl.Answer(self.index, v)

    class NullFederator:
        wire_params, responders = params, tuple(range(N))

        def queries(self, rng=None):
            return {i: osfl.Query(i, np.zeros(1, np.uint64), np.zeros(1, np.uint64)) for i in range(N)}

        def reconstruct(self, answers):
            return np.zeros((s, C), dtype=np.uint64)

    t_null, t_loop = [], []
    for _ in range(5):
        t0 = time.process_time()
        drive([ClientSession(NullClient(i), round_id=b"r" * 16) for i in range(N)],
              FederatorSession(NullFederator(), round_id=b"r" * 16))
        t1 = time.process_time()
        nulls = [NullClient(i) for i in range(N)]
        for cl in nulls:
            for m in cl.share():
                m.nbytes, m.elements
                nulls[m.receiver].receive(m)
        t2 = time.process_time()
        t_null.append(t1 - t0)
        t_loop.append(t2 - t1)
    med = lambda xs: float(np.median(xs))
    info = {"direct_cpu_s": t_direct, "driver_cpu_s": t_driver,
            "ratio_of_medians": med(t_driver) / med(t_direct), "ratio_of_minima": min(t_driver) / min(t_direct),
            "driver_alone_s": min(t_null) - min(t_loop),
            "driver_alone_fraction": (min(t_null) - min(t_loop)) / med(t_direct)}
    benchmark.extra_info.update(info)
    print(f"\n[osfl driver] direct {['%.2f' % x for x in t_direct]} s, driver {['%.2f' % x for x in t_driver]} s "
          f"(CPU); ratio of medians {info['ratio_of_medians']:.3f}, of minima {info['ratio_of_minima']:.3f}; "
          f"the driver alone {info['driver_alone_s']:.3f} s = {info['driver_alone_fraction']:.1%} of a direct round")
