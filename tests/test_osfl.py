"""Objective-hiding one-shot FL (secea_fast.protocols.osfl; Egger, Urbanke, Bitar, 2025).

Correctness: exact recovery for many (n, T, rho, z_s, z_q, p), cyclic and
random assignments, with and without symmetric privacy, through the wire.
Privacy (small field p = 11, generator 2): exact enumerations of the
randomness and chi-square tests through the public API, each with a negative
control that shows the test can fail.  Rates: Table I and Lemma 1.
"""
import json
import math
import random
import sys
from collections import Counter

import numpy as np
import pytest

import secea_fast as sf
from secea_fast.prg import Prg, random_seed
from secea_fast.protocols import osfl
from secea_fast import jobs
from secea_fast.studies import osfl_plots

P11 = 11


# ----------------------------------------------------------------- helpers
def _chi2_threshold(df, z=5.0):
    """Upper quantile of chi^2_df at the normal deviate z (Wilson-Hilferty); z = 5: ~3e-7."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def _chi2_uniform(samples, cells):
    counts = Counter(samples)
    exp = len(samples) / cells
    return sum((counts.get(k, 0) - exp) ** 2 / exp for k in range(cells))


def _codes(M, p):
    """Sorted integer codes of the columns of a (rows, cols) array of residues (p^rows < 2^63)."""
    w = np.array([p ** k for k in range(M.shape[0])], dtype=np.int64)
    return np.sort(w @ M.astype(np.int64)).tolist()


def _random_assignment(rng, n, T, rho):
    inc = np.zeros((n, T), dtype=np.uint8)
    for t in range(T):
        inc[rng.choice(n, rho, replace=False), t] = 1
    return inc


def _protocol(params, labels, j, *, seed=None, rng_seed=b"r" * 32):
    """Deterministic run (Prg-seeded shares and queries): returns the answers (n, P, c)."""
    clients = [osfl.Client(i, params, labels[i], shared_seed=seed, session=b"retrieval-1") for i in range(params.n)]
    for cl in clients:
        for m in cl.share(rng=Prg(rng_seed, f"test/share/{cl.index}")):
            clients[m.receiver].receive(m)
    queries = osfl.Federator(params, j).queries(rng=Prg(rng_seed, "test/query"))
    return np.stack([clients[i].answer(queries[i]).values for i in range(params.n)])


# ----------------------------------------------------------------- exact recovery
CASES = [  # (n, T, rho, z_s, z_q, p)
    (5, 1, 5, 1, 1, P11), (5, 3, 3, 1, 1, P11), (10, 4, 9, 1, 1, P11), (10, 7, 7, 2, 2, 13),
    (4, 2, 3, 1, 1, 13), (6, 5, 4, 1, 0, 13), (6, 3, 4, 0, 1, 13), (1, 2, 1, 0, 0, P11),
    (12, 6, 8, 3, 2, sf.EMBEDDING_PRIME), (20, 10, 11, 2, 2, sf.EMBEDDING_PRIME),
    (9, 4, 7, 2, 2, sf.GOLDILOCKS), (16, 3, 16, 3, 4, 2**61 - 1), (7, 3, 5, 0, 0, 2**64 - 59),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "n{}-T{}-rho{}-zs{}-zq{}-p{}".format(*c))
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("cyclic", [True, False])
def test_exact_recovery(case, symmetric, cyclic):
    n, T, rho, z_s, z_q, p = case
    rng = np.random.default_rng(hash(case) % 2**32)
    inc = osfl.Assignment.cyclic(n, T, rho) if cyclic else _random_assignment(rng, n, T, rho)
    s, c = int(rng.integers(1, 9)), int(rng.integers(1, 4))
    levels = max(2, min(17, (p - 1) // n + 1))
    labels = rng.integers(0, levels, size=(n, T, s, c))
    for j in range(T):
        rep = osfl.run_round(labels, inc, j, z_s, z_q, symmetric, p=p, levels=levels, verify=True,
                             wire=(j == 0))
        out = rep.sums
        assert rep.verified is True
        members = np.asarray(inc if not isinstance(inc, osfl.Assignment) else inc.incidence)[:, j].astype(bool)
        assert out.dtype == np.int64 and out.shape == (s, c)
        assert (out == labels[members, j].sum(axis=0)).all()
        assert set(rep.seconds) == {"share", "aggregate", "query", "answer", "reconstruct"}


def test_unassigned_entries_ignored_and_idle_clients_answer():
    rng = np.random.default_rng(3)
    inc = np.zeros((7, 2), dtype=np.uint8)
    inc[[0, 1, 2], 0] = 1
    inc[[2, 3, 4], 1] = 1              # clients 5 and 6 compute nothing but still answer
    labels = rng.integers(0, 5, size=(7, 2, 4, 3))
    garbage = labels.copy()
    garbage[~inc.astype(bool)] = 10**6     # ignored: not assigned
    for sym in (False, True):
        out = osfl.run_round(garbage, inc, 1, 1, 1, sym).sums
        assert (out == labels[[2, 3, 4], 1].sum(axis=0)).all()


def test_primitive_root():
    """alpha generates F_p^* (Sec. V-b): brute-force order for small p, known values for large."""
    for p in [2, 3, 5, 7, 11, 13, 101, 257, 1009, 65537]:
        g = osfl.primitive_root(p)
        seen, x = set(), 1
        for _ in range(p - 1):
            x = x * g % p
            seen.add(x)
        assert len(seen) == p - 1
    assert osfl.primitive_root(sf.GOLDILOCKS) == 7 and osfl.primitive_root(2**61 - 1) == 37
    g, p = osfl.primitive_root(sf.EMBEDDING_PRIME), sf.EMBEDDING_PRIME
    assert all(pow(g, (p - 1) // f, p) != 1 for f in (2, 3, 7))       # p - 1 = 2^44 3^2 7
    with pytest.raises(ValueError):
        osfl.primitive_root(91)


def test_small_field_below_lemma2_bound():
    """Deviation 5: P is invertible for any distinct nonzero points; q = 11 < rho + K = 13 works."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 9), 1, 1, s=4, c=1, p=P11)
    assert params.rho + params.K > P11
    for j in range(3):
        D = params.decoder(j)
        assert D.shape == (params.K, 10)
    labels = np.random.default_rng(0).integers(0, 2, size=(10, 3, 4, 1))
    assert (osfl.run_round(labels, params.assignment, 2, 1, 1, True, p=P11, levels=2).sums
            == labels[list(params.clients(2)), 2].sum(axis=0)).all()


def test_p_diagonal_formula_and_dual_weights():
    """sum nu alpha^m = 0 for 0 <= m <= rho - 2 (Appendix B); sum nu alpha^-1 =
    (-1)^(rho+1) / prod alpha (deviation 5)."""
    p = 101
    params = osfl.OSFLParams(osfl.Assignment.cyclic(12, 4, 7), 2, 2, s=3, c=2, p=p)
    for t in range(4):
        xs = [int(params.points[i]) for i in params.clients(t)]
        nu = [int(v) for v in params.nu(t)]
        for a, x in enumerate(xs):
            prod = 1
            for b, y in enumerate(xs):
                if b != a:
                    prod = prod * (x - y) % p
            assert nu[a] * prod % p == 1
        for m in range(params.rho - 1):
            assert sum(v * pow(x, m, p) for v, x in zip(nu, xs)) % p == 0
        assert sum(v * pow(x, params.rho - 1, p) for v, x in zip(nu, xs)) % p == 1   # leading coefficient
        d1 = sum(v * pow(x, p - 2, p) for v, x in zip(nu, xs)) % p
        assert d1 == (-1) ** (params.rho + 1) * pow(math.prod(xs) % p, p - 2, p) % p


def test_decoder_matches_python_twin():
    """D = P^-1 H with P of Sec. V-d built entry by entry in Python integers."""
    p = 10007
    params = osfl.OSFLParams(osfl.Assignment.cyclic(9, 3, 9), 1, 1, s=5, c=1, p=p)   # K = 4
    j = 1
    K, n = params.K, params.n
    xs = [int(x) for x in params.points]
    mem = params.clients(j)
    nu = {i: int(v) for i, v in zip(mem, params.nu(j))}
    Pm = [[sum(nu[i] * pow(xs[i], -(th - u + 1), p) for i in mem) % p if u <= th else 0 for u in range(K)]
          for th in range(K)]
    H = [[pow(xs[i], -(th + 1), p) for i in range(n)] for th in range(K)]
    D = params.decoder(j).astype(object)
    for th in range(K):
        for i in range(n):
            assert sum(Pm[th][u] * int(D[u, i]) for u in range(K)) % p == H[th][i]


def test_encode_and_query_match_python_twin():
    """Eq. 1 and eq. 2 evaluated term by term in Python integers."""
    p = 1009
    params = osfl.OSFLParams(osfl.Assignment.cyclic(8, 3, 7), 2, 2, s=7, c=2, p=p)   # k_C = 4, K = 2
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 50, size=(7, 2))
    r = rng.integers(0, p, size=(2, params.n_partitions, 2), dtype=np.uint64)
    S = osfl.encode_shares(params, 1, labels, r)
    padded = np.zeros((params.K * params.n_partitions, 2), dtype=np.int64)
    padded[:7] = labels
    for a, i in enumerate(params.clients(1)):
        x = int(params.points[i])
        for part in range(params.n_partitions):
            for k in range(2):
                coeffs = [int(padded[u * params.n_partitions + part, k]) for u in range(params.K)] + \
                         [int(r[tau, part, k]) for tau in range(params.z_s)]
                assert int(S[a, part, k]) == sum(cf * pow(x, m, p) for m, cf in enumerate(coeffs)) % p
    kq = rng.integers(0, p, size=(3, 2), dtype=np.uint64)
    Q = osfl.query_values(params, 2, kq)
    for t in range(3):
        for i in range(8):
            x = int(params.points[i])
            want = (t == 2) + sum(int(kq[t, tau]) * pow(x, params.K + tau, p) for tau in range(2))
            assert int(Q[t, i]) == want % p


def test_strided_partition_layout():
    """Deviation 3: partition p holds labels u P + p; the coefficient matrix is a reshape."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(6, 1, 5), 1, 1, s=7, c=2, p=101)   # K = 2, P = 4
    lab = np.arange(14).reshape(7, 2)
    rows = params.coefficient_rows(lab)
    assert rows.shape == (2, 8)
    assert rows[1].reshape(4, 2)[2].tolist() == lab[1 * 4 + 2].tolist()
    assert rows[1].reshape(4, 2)[3].tolist() == [0, 0]                       # padding
    assert (params.labels_from_rows(rows) == lab).all()


def test_counted_elements_match_table_I_rates():
    n, T, rho, z_s, z_q, s, c = 9, 4, 7, 2, 2, 12, 3         # K = 2 divides s
    labels = np.random.default_rng(1).integers(0, 3, size=(n, T, s, c))
    rep = osfl.run_round(labels, osfl.Assignment.cyclic(n, T, rho), 0, z_s, z_q)
    K = (rho - z_s - z_q + 1) // 2
    assert rep.elements["sharing"] == T * rho * (rho - 1) * (s // K) * c
    assert rep.elements["answers"] == n * (s // K) * c
    assert rep.elements["queries"] == T * rho                     # deviation 2: one scalar per (client, objective)
    table = osfl.rates(n, T, rho, z_s, z_q, s=s, c=c)["ours"]
    got = rep.measured_rates()
    assert got["sharing_rate"] == pytest.approx(table["sharing_rate"])
    assert got["pir_rate"] == pytest.approx(table["pir_rate"])
    assert rep.elements["sharing"] + rep.elements["answers"] == pytest.approx(table["communication"])


# ----------------------------------------------------------------- validation
def test_assignment_validation():
    with pytest.raises(ValueError, match="constant column weight"):
        osfl.Assignment([[1, 1], [1, 0], [0, 0]])
    with pytest.raises(ValueError, match="0 or 1"):
        osfl.Assignment([[1, 2], [1, 0]])
    with pytest.raises(TypeError, match="integers or booleans"):
        osfl.Assignment(np.ones((3, 2)))
    with pytest.raises(ValueError, match="2-D"):
        osfl.Assignment(np.ones(3, dtype=int))
    with pytest.raises(ValueError, match="rho"):
        osfl.Assignment(np.zeros((3, 2), dtype=int))
    with pytest.raises(TypeError):
        osfl.Assignment("11")
    with pytest.raises(ValueError, match="rho"):
        osfl.Assignment.cyclic(3, 2, 4)
    with pytest.raises(TypeError):
        osfl.Assignment.cyclic(3.0, 2, 2)
    a = osfl.Assignment.cyclic(100, 20, 51)
    assert (a.incidence.sum(axis=0) == 51).all()
    load = a.incidence.sum(axis=1)
    assert load.max() - load.min() <= 1                         # balanced
    assert a.clients(3) == tuple(sorted(a.clients(3))) and 0 in a.objectives(0)


def test_params_validation():
    asg = osfl.Assignment.cyclic(10, 3, 6)
    with pytest.raises(ValueError, match="k_C"):
        osfl.OSFLParams(asg, 1, 1, s=4, c=2)                    # rho - z_q + z_s = 6 is even
    with pytest.raises(ValueError, match="rho >= z_s \\+ z_q \\+ 1"):
        osfl.OSFLParams(asg, 3, 4, s=4, c=2)
    with pytest.raises(ValueError, match="too small"):
        osfl.OSFLParams(osfl.Assignment.cyclic(12, 3, 5), 1, 1, s=4, c=2, p=P11)
    with pytest.raises(ValueError, match="capacity"):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1, 1, s=4, c=2, p=P11, levels=3)
    with pytest.raises(ValueError, match="not prime"):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1, 1, s=4, c=2, p=15)
    with pytest.raises(TypeError):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1.0, 1, s=4, c=2)
    with pytest.raises(TypeError):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), True, 1, s=4, c=2)
    with pytest.raises(ValueError, match=">= 0"):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), -1, 0, s=4, c=2)
    with pytest.raises(ValueError, match="s >= 1"):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1, 1, s=0, c=2)
    with pytest.raises(ValueError, match="levels"):
        osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1, 1, s=1, c=2, levels=1)
    ok = osfl.OSFLParams(osfl.Assignment.cyclic(10, 3, 5), 1, 1, s=1, c=2, p=P11, levels=2)  # 11 >= 1 * 10
    assert ok.k_C == 3 and ok.alpha == 2


def test_run_validation():
    inc = osfl.Assignment.cyclic(5, 2, 3)
    good = np.ones((5, 2, 3, 2), dtype=np.int64)
    with pytest.raises(TypeError, match="numpy"):
        osfl.run_round(good.tolist(), inc, 0, 1, 1)
    with pytest.raises(TypeError, match="integer dtype"):
        osfl.run_round(good.astype(float), inc, 0, 1, 1)
    with pytest.raises(ValueError, match="shape"):
        osfl.run_round(good[:4], inc, 0, 1, 1)
    bad = good.copy()
    bad[0, 0, 0, 0] = -1
    with pytest.raises(ValueError, match="negative"):
        osfl.run_round(bad, inc, 0, 1, 1)
    with pytest.raises(ValueError, match="levels"):
        osfl.run_round(good * 3, inc, 0, 1, 1, levels=3)
    with pytest.raises(ValueError, match="capacity"):
        osfl.run_round(good * 4, inc, 0, 1, 1, p=P11)                 # 3 * 4 >= 11
    with pytest.raises(ValueError, match="objective"):
        osfl.run_round(good, inc, 2, 1, 1)
    with pytest.raises(TypeError):
        osfl.run_round(good, inc, 0.0, 1, 1)
    with pytest.raises(TypeError, match="bool"):
        osfl.run_round(good, inc, 0, 1, 1, symmetric=1)
    with pytest.raises(ValueError, match="constant column weight"):
        osfl.run_round(good, np.array([[1, 1], [1, 0], [0, 0], [0, 0], [0, 0]]), 0, 1, 1)


def test_party_misuse_raises():
    params = osfl.OSFLParams(osfl.Assignment.cyclic(5, 2, 3), 1, 1, s=3, c=2, p=101)   # K = 1, P = 3
    assert params.clients(0) == (0, 1, 2) and params.clients(1) == (2, 3, 4)
    labels = np.ones((2, 3, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="index"):
        osfl.Client(5, params, labels)
    with pytest.raises(ValueError, match="shape"):
        osfl.Client(0, params, labels[:1])
    with pytest.raises(ValueError, match="missing"):
        osfl.Client(2, params, {0: labels[0]})                  # client 2 computes objectives 0 and 1
    with pytest.raises(TypeError):
        osfl.Client(0, params, labels.tolist())
    with pytest.raises(ValueError, match="shared_seed"):
        osfl.Client(0, params, labels, shared_seed=b"short")
    clients = [osfl.Client(i, params, labels) for i in range(5)]
    msgs = clients[0].share()
    with pytest.raises(ValueError, match="already shared"):
        clients[0].share()
    m = next(x for x in msgs if x.receiver == 1)
    assert m.objective == 0 and m.values.shape == (3, 2)
    with pytest.raises(ValueError, match="addressed"):
        clients[2].receive(m)
    clients[1].receive(m)
    with pytest.raises(ValueError, match="already has"):
        clients[1].receive(m)
    with pytest.raises(ValueError, match="not another client"):
        clients[1].receive(osfl.ShareMessage(3, 1, 0, m.values))
    with pytest.raises(ValueError, match="does not compute"):
        clients[1].receive(osfl.ShareMessage(2, 1, 1, m.values))
    with pytest.raises(ValueError, match=">= p"):
        clients[2].receive(osfl.ShareMessage(0, 2, 0, np.full((3, 2), 101, dtype=np.uint64)))
    with pytest.raises(ValueError, match="shape"):
        clients[2].receive(osfl.ShareMessage(0, 2, 0, np.zeros((2, 2), dtype=np.uint64)))
    with pytest.raises(TypeError):
        clients[2].receive(osfl.ShareMessage(0, 2, 0, np.zeros((3, 2), dtype=np.int64)))
    with pytest.raises(TypeError):
        clients[2].receive(b"bytes")
    fed = osfl.Federator(params, 1)
    queries = fed.queries()
    with pytest.raises(ValueError, match="cannot answer"):
        clients[1].answer(queries[1])
    with pytest.raises(ValueError, match="query of client"):
        clients[1].answer(queries[2])
    with pytest.raises(ValueError, match="objective index"):
        osfl.Federator(params, 2)
    # a full, honest run, then misuse of answers
    clients = [osfl.Client(i, params, labels) for i in range(5)]
    for cl in clients:
        for msg in cl.share():
            clients[msg.receiver].receive(msg)
    answers = [cl.answer(queries[cl.index]) for cl in clients]
    with pytest.raises(ValueError, match="already answered"):
        clients[0].answer(queries[0])
    with pytest.raises(ValueError, match="missing"):
        fed.reconstruct(answers[:4])
    with pytest.raises(ValueError, match="two answers"):
        fed.reconstruct(answers + answers[:1])
    with pytest.raises(ValueError, match="shape"):
        fed.reconstruct(answers[:4] + [osfl.Answer(4, np.zeros((2, 2), dtype=np.uint64))])
    with pytest.raises(TypeError):
        fed.reconstruct(answers[:4] + [object()])
    out = fed.reconstruct(answers)
    assert (out == 3).all()
    # any Mapping client -> Answer, not only a dict (read-only views were iterated as their keys)
    from types import MappingProxyType
    assert (fed.reconstruct(MappingProxyType({a.client: a for a in answers})) == out).all()


# ----------------------------------------------------------------- wire formats
def _sample_messages():
    rng = np.random.default_rng(9)
    return [osfl.ShareMessage(3, 7, 2, rng.integers(0, 2**40, size=(5, 3), dtype=np.uint64)),
            osfl.Query(4, np.array([0, 5, 9], dtype=np.uint64), rng.integers(0, 2**40, 3, dtype=np.uint64)),
            osfl.Query(6, np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64)),
            osfl.Answer(1, rng.integers(0, 2**40, size=(4, 2), dtype=np.uint64))]


def test_messages_roundtrip_and_nbytes():
    for m in _sample_messages():
        data = m.to_bytes()
        assert m.nbytes == len(data)
        back = type(m).from_bytes(data)
        assert type(back) is type(m)
        for name in m.__dataclass_fields__:
            a, b = getattr(m, name), getattr(back, name)
            assert (np.asarray(a) == np.asarray(b)).all() and np.shape(a) == np.shape(b)
        assert m.elements == np.asarray(m.values).size


def test_malformed_messages_raise_value_error():
    rnd = random.Random(1234)          # fuzz positions only (test data)
    for m in _sample_messages():
        data = m.to_bytes()
        cls = type(m)
        with pytest.raises(ValueError, match="truncated"):
            cls.from_bytes(data[:-1])
        with pytest.raises(ValueError, match="trailing"):
            cls.from_bytes(data + b"\0")
        with pytest.raises(ValueError, match="magic"):
            cls.from_bytes(b"XXXX" + data[4:])
        with pytest.raises(ValueError, match="version"):
            cls.from_bytes(data[:4] + b"\x09" + data[5:])
        with pytest.raises(TypeError):
            cls.from_bytes("not bytes")
        for _ in range(300):
            buf = bytearray(data)
            for _ in range(rnd.randint(1, 4)):
                buf[rnd.randrange(len(buf))] = rnd.randrange(256)
            if rnd.random() < 0.3:
                buf = buf[: rnd.randrange(len(buf))]
            try:
                cls.from_bytes(bytes(buf))
            except ValueError:
                pass
    q = _sample_messages()[1]
    w = q.to_bytes()
    bad = osfl.Query(q.client, q.objectives, q.values[:2]).to_bytes()
    with pytest.raises(ValueError, match="objectives but"):
        osfl.Query.from_bytes(bad)
    assert osfl.Query.from_bytes(w).client == 4


# ----------------------------------------------------------------- randomness
def test_randomness_apis_refuse_non_cryptographic_rngs():
    params = osfl.OSFLParams(osfl.Assignment.cyclic(5, 2, 3), 1, 1, s=3, c=2, p=101)
    cl = osfl.Client(0, params, np.ones((2, 3, 2), dtype=np.int64))
    for bad in (np.random.default_rng(0), random.Random(0), np.random.RandomState(0), b"seed" * 8):
        with pytest.raises(TypeError, match="CSPRNG"):
            cl.share(rng=bad)
        with pytest.raises(TypeError, match="CSPRNG"):
            osfl.Federator(params, 0).queries(rng=bad)


def test_protocol_uses_no_insecure_rng(no_insecure_rng):
    labels = np.arange(6 * 3 * 5 * 2).reshape(6, 3, 5, 2) % 4
    inc = osfl.Assignment.cyclic(6, 3, 5)
    for sym in (False, True):
        assert (osfl.run_round(labels, inc, 1, 1, 1, sym).sums == labels[list(inc.clients(1)), 1].sum(axis=0)).all()
    params = osfl.OSFLParams(inc, 1, 1, s=5, c=2)
    osfl.Client(0, params, labels[0], shared_seed=b"k" * 32, session=b"s").share()
    osfl.Federator(params, 2).queries()
    assert (osfl.approach1(labels, 2, 1, 1).sums == labels[:, 2].sum(axis=0)).all()


def test_seeded_prg_is_reproducible_and_fresh_streams_differ():
    params = osfl.OSFLParams(osfl.Assignment.cyclic(5, 1, 5), 1, 1, s=4, c=1, p=101)
    lab = np.ones((1, 4, 1), dtype=np.int64)
    a = osfl.Client(0, params, lab).share(rng=Prg(b"x" * 32, "d"))
    b = osfl.Client(0, params, lab).share(rng=Prg(b"x" * 32, "d"))
    c = osfl.Client(0, params, lab).share()
    d = osfl.Client(0, params, lab).share()
    assert all((x.values == y.values).all() for x, y in zip(a, b))
    assert any((x.values != y.values).any() for x, y in zip(c, d))


# ----------------------------------------------------------------- privacy (small field)
@pytest.mark.parametrize("z_q", [1, 2])
def test_objective_hiding_exact(z_q):
    """Any z_q clients' queries are independent of j: for every objective t and
    every colluding set of <= z_q clients of I(e_t), enumerating k^(t) gives every
    tuple of query values equally often whether t = j or not (the k^(t) of
    different objectives are independent, so the joint view factorizes).
    Negative control: z_q + 1 colluders tell t = j apart."""
    import itertools
    rho = {1: 4, 2: 5}[z_q]                                     # z_s = 2: k_C = 3, K = 1
    params = osfl.OSFLParams(osfl.Assignment.cyclic(8, 3, rho), 2, z_q, s=1, c=1, p=P11)
    T = params.T
    for t in range(T):
        mem = params.clients(t)
        views = {}
        for j in (t, (t + 1) % T):
            rows = []
            for combo in itertools.product(range(P11), repeat=z_q):
                k = np.zeros((T, z_q), dtype=np.uint64)
                k[t] = combo
                rows.append(osfl.query_values(params, j, k)[t, list(mem)])
            views[j] = np.array(rows)
        for size in range(1, z_q + 2):
            differ = []
            for coll in itertools.combinations(range(len(mem)), size):
                a = Counter(map(tuple, views[t][:, coll].tolist()))
                b = Counter(map(tuple, views[(t + 1) % T][:, coll].tolist()))
                if size <= z_q:
                    assert a == b and len(a) == P11 ** size                  # uniform for t = j and t != j
                differ.append(a != b)
            if size > z_q:
                assert any(differ)                                            # z_q + 1 colluders can see j


def test_objective_hiding_statistical():
    """Federator.queries through the public API: the z_q = 1 colluder's query
    values are uniform and the same for j = 0 and j = 1 (chi-square); a pair of
    clients sharing an objective (z_q + 1) is not."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(6, 2, 4), 2, 1, s=1, c=1, p=P11)   # k_C = 3, K = 1
    assert params.objectives(0) == (0, 1) and params.objectives(1) == (0,)
    draws = 1500
    for j in (0, 1):
        fed = osfl.Federator(params, j)
        one, two = [], []
        for _ in range(draws):
            Q = fed.queries()
            v = [int(x) for x in Q[0].values]                   # client 0 holds both objectives
            one.append(v[0] * P11 + v[1])
            two.append(v[0] * P11 + int(Q[1].values[0]))       # clients 0 and 1 on objective 0
        assert _chi2_uniform(one, P11 ** 2) < _chi2_threshold(P11 ** 2 - 1)
        if j == 0:     # two colluders on objective 0 = j: q(x) - 1 has a root structure -> not uniform
            assert _chi2_uniform(two, P11 ** 2) > _chi2_threshold(P11 ** 2 - 1)


@pytest.mark.parametrize("z_s", [1, 2])
def test_data_privacy_exact(z_s):
    """Any z_s clients' shares of an honest client's labels are independent of the
    labels: enumerating the z_s random coefficients of eq. 1 yields every tuple
    once whatever the labels.  Negative control: z_s + 1 colluders."""
    import itertools
    z_q = 1
    rho = z_s + z_q + 1 + 2                                     # K = 2
    params_small = osfl.OSFLParams(osfl.Assignment.cyclic(rho, 1, rho), z_s, z_q, s=2, c=1, p=P11)
    K, combos = params_small.K, P11 ** z_s
    params = osfl.OSFLParams(params_small.assignment, z_s, z_q, s=K * combos, c=1, p=P11)
    r = np.array(list(itertools.product(range(P11), repeat=z_s)), dtype=np.uint64).T.reshape(z_s, combos, 1)
    views = []
    for y in ([0, 0], [3, 7], [10, 1]):
        labels = np.repeat(np.array(y), combos).reshape(K * combos, 1)     # partition p: (y_0, y_1)
        S = osfl.encode_shares(params, 0, labels, r)[:, :, 0]              # (rho, combos)
        views.append(S)
    for size in (1, z_s, z_s + 1):
        differ = []
        for coll in itertools.combinations(range(rho), size):
            vs = [Counter(map(tuple, V[list(coll)].T.tolist())) for V in views]
            if size <= z_s:
                assert all(v == vs[0] for v in vs) and len(vs[0]) == P11 ** size
            differ.append(vs[0] != vs[1])
        if size > z_s:
            assert any(differ)


def test_data_privacy_statistical():
    """Client.share through the public API (p = 11, z_s = 1): the share client 1
    receives from client 0 is uniform whatever client 0's labels (chi-square over
    2,000 partitions, each an independent sample); the shares of two colluders
    (z_s + 1) are not."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(5, 1, 5), 1, 1, s=2 * 2000, c=1, p=P11)   # K = 2
    for y in ([0, 0], [5, 9]):
        lab = np.repeat(np.array(y), 2000).reshape(4000, 1)[None]
        msgs = {m.receiver: m.values[:, 0].astype(int) for m in osfl.Client(0, params, lab).share()}
        assert _chi2_uniform(msgs[1].tolist(), P11) < _chi2_threshold(P11 - 1)
        pair = (msgs[1] * P11 + msgs[2]).tolist()
        assert _chi2_uniform(pair, P11 ** 2) > _chi2_threshold(P11 ** 2 - 1)


@pytest.mark.parametrize("shape", [(5, 1, 5, 1, 1), (6, 3, 3, 1, 1), (6, 2, 5, 2, 0)],
                         ids=lambda s: "n{}-T{}-rho{}-zs{}-zq{}".format(*s))
def test_symmetric_privacy_exact(shape):
    """Sec. VI (deviation 1): with the mask, the federator's answers depend on the
    labels only through the requested sum.  Two label sets with the same sum of
    objective j (different labels of every client and of other objectives), same
    sharing and query randomness: enumerating the n - K shared mask values gives
    the same multiset of answer vectors (the whole coset of W).  Without the mask
    the answers differ; the mask never changes the decoded sum."""
    import itertools
    n, T, rho, z_s, z_q = shape
    params = osfl.OSFLParams(osfl.Assignment.cyclic(n, T, rho), z_s, z_q, s=1, c=1, p=P11)
    K, j = params.K, 0
    params = osfl.OSFLParams(params.assignment, z_s, z_q, s=K, c=1, p=P11)
    rng = np.random.default_rng(11)
    A = rng.integers(0, 2, size=(n, T, K, 1))
    B = rng.integers(0, 2, size=(n, T, K, 1))
    mem = list(params.clients(j))
    B[mem, j] = 0
    B[mem[0], j] = A[mem, j].sum(axis=0)                 # same sum for objective j, other labels changed
    assert (A[mem, j].sum(axis=0) == B[mem, j].sum(axis=0)).all() and (A != B).any()
    a = _protocol(params, A, j)[:, :, 0]                 # (n, 1) unmasked answers
    b = _protocol(params, B, j)[:, :, 0]
    if T > 1 and z_q > 0:   # other objectives interfere: the unmasked answers reveal more than the sum
        assert (a != b).any()
    nK = n - K
    combos = P11 ** nK
    mparams = osfl.OSFLParams(params.assignment, z_s, z_q, s=K * combos, c=1, p=P11)
    S = np.array(list(itertools.product(range(P11), repeat=nK)), dtype=np.uint64).T.reshape(nK, combos, 1)
    M = osfl.symmetric_mask(mparams, S)[:, :, 0]          # (n, combos)
    masked_a = sf.field.add(M, np.ascontiguousarray(np.repeat(a, combos, axis=1)), P11)
    masked_b = sf.field.add(M, np.ascontiguousarray(np.repeat(b, combos, axis=1)), P11)
    ca, cb = _codes(masked_a, P11), _codes(masked_b, P11)
    assert ca == cb and len(set(ca)) == combos            # identical, uniform on a coset of W
    D = mparams.decoder(j)
    assert (sf.linalg.matmul(D, M, P11) == 0).all()       # the mask lies in W: decoding unchanged


def test_symmetric_client_masks_are_in_the_decoder_kernel():
    """Client.answer with a shared seed adds m_i with sum_i alpha_i^-theta m_i = 0."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(9, 4, 7), 2, 2, s=6, c=3, p=P11)
    labels = np.random.default_rng(2).integers(0, 2, size=(9, 4, 6, 3))
    plain = _protocol(params, labels, 1)
    masked = _protocol(params, labels, 1, seed=b"m" * 32)
    diff = sf.field.sub(masked, plain, P11).reshape(9, -1)
    assert diff.any()
    assert (sf.linalg.matmul(params.decoder(1), diff, P11) == 0).all()


def test_paper_literal_sec6_mask_breaks_decoding():
    """Deviation 1 pinned: the printed R_p(x) = sum_{tau=1}^{k_C+z_q-1} x^(K+tau-1) s_tau,
    added unweighted by every client, is not annihilated by the reconstruction
    functionals sum_i alpha_i^-theta (.) -- it would corrupt the decoded labels."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(8, 3, 5), 1, 1, s=2, c=1, p=101)
    p, K = params.p, params.K
    H = [[pow(int(x), -(th + 1), p) for x in params.points] for th in range(K)]
    literal = [[pow(int(x), K + tau - 1, p) for x in params.points] for tau in range(1, params.k_C + params.z_q)]
    nonzero = [sum(h * r for h, r in zip(Hrow, Rrow)) % p for Hrow in H for Rrow in literal]
    assert any(nonzero)
    B = params.window_basis()
    for f in range(params.n - K):
        for th in range(K):
            assert sum(H[th][f + a] * int(B[f, a]) for a in range(K + 1)) % p == 0


def test_symmetric_privacy_statistical():
    """Full protocol through the public API, p = 11, n = rho = 5, K = 2: with the
    mask, the first two answers are uniform (chi-square over 3,000 partitions,
    independent samples) for two label sets with the same sum; without the mask
    they are not (they lie on a line fixed by the labels)."""
    n, T, rho, z_s, z_q = 5, 1, 5, 1, 1
    params = osfl.OSFLParams(osfl.Assignment.cyclic(n, T, rho), z_s, z_q, s=2 * 3000, c=1, p=P11)
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]])                 # per client, partition-constant
    y2 = y.copy()
    y2[0], y2[3] = y[3], y[0]                                              # same sum, different clients
    for lab_rows in (y, y2):
        labels = np.repeat(lab_rows, 3000, axis=1).reshape(n, 1, 6000, 1)
        for seed, uniform in ((random_seed(32), True), (None, False)):
            clients = [osfl.Client(i, params, labels[i], shared_seed=seed, session=b"retrieval-1") for i in range(n)]
            for cl in clients:
                for m in cl.share():
                    clients[m.receiver].receive(m)
            qs = osfl.Federator(params, 0).queries()
            ans = np.stack([clients[i].answer(qs[i]).values[:, 0] for i in range(n)]).astype(int)
            stat = _chi2_uniform((ans[0] * P11 + ans[1]).tolist(), P11 ** 2)
            assert (stat < _chi2_threshold(P11 ** 2 - 1)) == uniform


# ----------------------------------------------------------------- Approach 1
@pytest.mark.parametrize("n,T,z_s,z_q,p", [(5, 3, 1, 1, P11), (7, 2, 2, 3, 13), (10, 4, 3, 2, sf.EMBEDDING_PRIME),
                                           (3, 1, 0, 2, 101)])
def test_approach1_end_to_end(n, T, z_s, z_q, p):
    rng = np.random.default_rng(n * 100 + T)
    s, c = 4, 3
    levels = max(2, (p - 1) // n)
    labels = rng.integers(0, levels, size=(n, T, s, c))
    for j in range(T):
        rep = osfl.approach1(labels, j, z_s, z_q, p=p, wire=(j == 0), verify=True)
        out = rep.sums
        assert (out == labels[:, j].sum(axis=0)).all()
    assert rep.elements["sharing"] == T * n * (n - 1) * s * c                # Sec. IV: T s n (n - 1) symbols
    assert rep.elements["answers"] == (z_s + z_q + 1) * s * c


def test_approach1_validation():
    labels = np.ones((3, 2, 2, 2), dtype=np.int64)
    with pytest.raises(ValueError, match="n >= z_s \\+ z_q \\+ 1"):
        osfl.approach1(labels, 0, 2, 1)
    with pytest.raises(TypeError):
        osfl.approach1(labels.tolist(), 0, 1, 1)
    with pytest.raises(ValueError, match="objective"):
        osfl.approach1(labels, 5, 1, 1)


# ----------------------------------------------------------------- rates (Table I, Lemma 1)
def test_rates_equal_table_I():
    from fractions import Fraction as F
    for n, T, z_s, z_q in [(10, 10, 1, 1), (100, 20, 5, 5), (30, 7, 2, 4)]:
        for rho in range(2, n + 1):
            sc, g = 15, rho - z_s - z_q + 1
            if g < 2:                          # infeasible: refused (test_rates_refuse_infeasible)
                with pytest.raises(ValueError, match="rho >= z_s \\+ z_q \\+ 1"):
                    osfl.rates(n, T, rho, z_s, z_q, s=3, c=5)
                continue
            r = osfl.rates(n, T, rho, z_s, z_q, s=3, c=5)
            assert r["ours"]["sharing_rate"] == pytest.approx(float(F(g, 2 * T * rho * (rho - 1))))
            assert r["ours"]["pir_rate"] == pytest.approx(float(F(g, 2 * n)))
            assert r["ours"]["communication"] == pytest.approx(
                float(F(2 * T * sc * rho * (rho - 1), g) + F(2 * sc * n, g)))
            if g - 1 > 0:
                assert r["gxstpir"]["sharing_rate"] == pytest.approx(1 / (T * rho * (rho - 1)))
                assert r["gxstpir"]["pir_rate"] == pytest.approx((rho - z_q - z_s) / n)
                assert r["gxstpir"]["communication"] == pytest.approx(
                    T * sc * rho * (rho - 1) + sc * n / (rho - z_s - z_q))
                if (n, T) in ((10, 10), (100, 20)):
                    # Figs. 3-4: ours never costs more than Shamir + GXSTPIR (equal at rho = z_s + z_q + 1)
                    assert r["ours"]["communication"] <= r["gxstpir"]["communication"] * (1 + 1e-12)
                    if g > 2:
                        assert r["ours"]["communication"] < r["gxstpir"]["communication"]
            sp = r["star_product"]
            if rho < n:
                assert math.isnan(sp["communication"]) and sp["k_star"] is None
            else:
                k = sp["k_star"]
                assert sp["sharing_rate"] == pytest.approx((k - z_s) / (T * n * (n - 1)))
                assert sp["pir_rate"] == pytest.approx((k - z_s) * (n - k - z_q + 1) / (n * k))
                assert sp["communication"] == pytest.approx(
                    T * sc * n * (n - 1) / (k - z_s) + sc / (k - z_s) * k * n / (n - k - z_q + 1))


def test_star_product_k_is_the_integer_optimum():
    """Lemma 1's k_C* equals the brute-force argmin of the cost over the feasible range."""
    for n, T, z_s, z_q in [(10, 10, 1, 1), (100, 20, 5, 5), (12, 1, 2, 2), (40, 3, 1, 7), (6, 1, 0, 0)]:
        kp, ks = osfl.star_product_k(n, T, z_s, z_q)
        cost = lambda k: T * n * (n - 1) / (k - z_s) + k * n / ((k - z_s) * (n - k - z_q + 1))  # noqa: E731
        best = min(range(z_s + 1, n - z_q + 1), key=cost)
        assert cost(ks) == pytest.approx(cost(best))
    # the text's operating points: rho = n = 10 and 100, star product cheapest (Figs. 3, 4)
    for n, T, z in [(10, 10, 1), (100, 20, 5)]:
        r = osfl.rates(n, T, n, z, z)
        assert r["star_product"]["communication"] < r["ours"]["communication"] < r["gxstpir"]["communication"]
    kp, ks = osfl.star_product_k(4, 2, 3, 3)                   # empty range z_s + 1 > n - z_q
    assert ks is None and math.isnan(kp)


def test_rates_validation():
    with pytest.raises(ValueError, match="rho"):
        osfl.rates(10, 2, 11, 1, 1)
    with pytest.raises(ValueError, match="rho"):
        osfl.rates(10, 2, 1, 0, 0)
    with pytest.raises(TypeError):
        osfl.rates(10, 2.0, 5, 1, 1)
    with pytest.raises(ValueError):
        osfl.rates(10, 2, 5, -1, 1)


def test_rates_refuse_infeasible():
    """Where no scheme of Table I exists the rates used to come back as
    0 / inf / nan; now the failing constraint is named."""
    for args in [(4, 2, 3, 5, 5), (10, 2, 2, 1, 1), (10, 2, 5, 0, 5), (10, 2, 5, 5, 0)]:
        with pytest.raises(ValueError, match="infeasible: need rho >= z_s \\+ z_q \\+ 1"):
            osfl.rates(*args)
    with pytest.raises(ValueError, match="rho must be <= n"):
        osfl.rates(4, 2, 5, 1, 1)
    # at the boundary every entry is a finite positive number (the star product at rho = n)
    for n, rho, z_s, z_q in [(10, 3, 1, 1), (10, 10, 4, 5), (6, 6, 0, 5), (2, 2, 0, 1)]:
        r = osfl.rates(n, 2, rho, z_s, z_q)
        for scheme in ("ours", "gxstpir") + (("star_product",) if rho == n else ()):
            for key in ("sharing_rate", "pir_rate", "communication"):
                v = r[scheme][key]
                assert math.isfinite(v) and v > 0, (scheme, key, v)


def test_plot_rates_refuses_infeasible():
    pytest.importorskip("matplotlib")       # plot_rates imports it before checking
    with pytest.raises(ValueError, match="infeasible"):
        osfl_plots.plot_rates(4, 2, 2, 2, "unused.png")


def test_plot_rates_without_matplotlib(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match="pip install matplotlib"):
        osfl_plots.plot_rates(10, 10, 1, 1, tmp_path / "rates.png")


def test_plot_rates_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "rates.png"
    assert osfl_plots.plot_rates(10, 10, 1, 1, path) == path and path.stat().st_size > 1000


# ----------------------------------------------------------------- example and job
def test_quantize():
    assert osfl.quantize(np.array([[0.0, 0.5, 1.0]]), 5).tolist() == [[0, 2, 4]]
    with pytest.raises(ValueError):
        osfl.quantize(np.array([1.5]), 5)
    with pytest.raises(ValueError):
        osfl.quantize(np.array([0.5]), 1)


def test_distillation_example_small():
    r = osfl.distillation_example(n=8, T=3, rho=5, z_s=1, z_q=1, s=600, classes=3, dim=6, n_train=40,
                                  n_test=500, j=2)
    assert r["exact_sum"] is True
    acc = r["accuracy"]
    assert acc["student"] > 1 / 3 + 0.1 and acc["pooled"] > 1 / 3 + 0.1
    assert r["rates"]["measured"]["pir_rate"] == pytest.approx(r["rates"]["table_I"]["pir_rate"])


def test_run_job_is_json_serializable():
    out = jobs.osfl_job({"n": 8, "T": 3, "rho": 5, "z-s": 1, "z_q": 1, "s": 400, "n_train": 30, "n_test": 200},
                        classes=3)
    text = json.dumps(out)
    back = json.loads(text)
    assert back["protocol"] == "osfl" and back["exact_sum"] and back["approach1"]["exact_sum"]
    for key in ("share", "aggregate", "query", "answer", "reconstruct", "total"):
        assert key in back["seconds"]
    assert back["bytes"]["sharing"] > 0 and back["accuracy"]["student"] > 0
    assert back["approach1"]["field_elements"]["sharing"] > back["field_elements"]["sharing"]
    with pytest.raises(ValueError, match="unknown osfl option"):
        jobs.osfl_job(bogus=1)
    with pytest.raises(TypeError):
        jobs.osfl_job(symmetric="yes")
    with pytest.raises(TypeError):
        jobs.osfl_job([1, 2])


def test_symmetric_client_needs_a_session():
    """One (seed, session) pair masks one retrieval: without a session every
    retrieval under the seed would reuse the masks."""
    params = osfl.OSFLParams(osfl.Assignment.cyclic(5, 2, 3), 1, 1, s=3, c=2, p=101)
    labels = np.ones((2, 3, 2), dtype=np.int64)
    for session in (b"", ""):
        with pytest.raises(ValueError, match="session"):
            osfl.Client(0, params, labels, shared_seed=b"k" * 32, session=session)
    osfl.Client(0, params, labels)                       # no seed: no masks, no session needed
