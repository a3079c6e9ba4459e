"""The competing approaches of Egger, Urbanke, Bitar, "Federated One-Shot
Learning with Data Privacy and Objective-Hiding" (2025) as protocols
(secea_fast.protocols.osfl.approaches): Approach 2 (Sec. IV), the
star-product scheme (Approach 3, Sec. VII-a) and Shamir + GXSTPIR
(Sec. VII-b, Table I).

Exactness against plaintext over several parameter sets (minimum number of
clients, z = 0, z = 1, larger collusion, four primes), measured payload
against ``osfl.elements`` and Table I (``osfl.rates``), bytes against the
serialized messages, the places where the paper's text and its formulas
disagree, and bad input.  View tests: tests/test_views_osfl_approaches.py.
"""
import math

import numpy as np
import pytest

import secea_fast as sf
from secea_fast.prg import Prg
from secea_fast.protocols import osfl

EMB = sf.EMBEDDING_PRIME


def _labels(rng, n, T, s, c, p):
    levels = max(2, min(17, (p - 1) // n + 1))
    return rng.integers(0, levels, size=(n, T, s, c)), levels


def _random_assignment(rng, n, T, rho):
    inc = np.zeros((n, T), dtype=np.uint8)
    for t in range(T):
        inc[rng.choice(n, rho, replace=False), t] = 1
    return inc


# ----------------------------------------------------------------- exactness
A2_CASES = [  # (n, T, z_s, z_q, K, p)
    (3, 1, 1, 1, 1, 11),            # minimum n = 2K + z_s + z_q - 1
    (5, 3, 1, 1, 2, 11),            # the paper's Example 1 / Approach 2: pairs, z = 1, n = 5
    (7, 2, 2, 1, 2, 13), (4, 2, 0, 0, 2, 11), (6, 2, 0, 2, 2, 101),
    (9, 4, 2, 2, 3, EMB), (8, 3, 1, 3, 2, 2**61 - 1),
]


@pytest.mark.parametrize("case", A2_CASES, ids=lambda c: "n{}-T{}-zs{}-zq{}-K{}-p{}".format(*c))
@pytest.mark.parametrize("symmetric", [False, True])
def test_approach2_exact(case, symmetric):
    n, T, z_s, z_q, K, p = case
    rng = np.random.default_rng(hash(case) % 2**32)
    for s in (1, 2 * K + 1):
        labels, levels = _labels(rng, n, T, s, 3, p)
        for j in range(T):
            rep = osfl.approach2(labels, j, z_s, z_q, symmetric, K=K, p=p, levels=levels, verify=True,
                                 wire=(j == 0))
            assert rep.verified and rep.sums.dtype == np.int64
            assert (rep.sums == labels[:, j].sum(axis=0)).all()
            assert rep.info["scheme"] == "approach2" and rep.info["N"] == 2 * K + z_s + z_q - 1


SP_CASES = [  # (n, T, z_s, z_q, k_C or None for k_C* of Lemma 1, p)
    (5, 2, 1, 1, 3, 11),            # Approach 3 of Sec. VII-a: k_C = 3, z = 1, n = 5
    (3, 1, 1, 1, None, 11),         # minimum n = z_s + z_q + 1 (k_C = 2, one symbol per subquery)
    (10, 3, 1, 1, None, EMB), (12, 2, 2, 3, None, 101), (6, 2, 0, 0, None, 13),
    (7, 1, 2, 1, 4, 2**61 - 1), (9, 2, 1, 2, 2, 13), (8, 2, 2, 0, 6, 2**64 - 59),
]


@pytest.mark.parametrize("case", SP_CASES, ids=lambda c: "n{}-T{}-zs{}-zq{}-k{}-p{}".format(*c))
@pytest.mark.parametrize("symmetric", [False, True])
def test_star_product_exact(case, symmetric):
    n, T, z_s, z_q, k_C, p = case
    rng = np.random.default_rng(hash(case) % 2**32)
    for s in (1, 7):
        labels, levels = _labels(rng, n, T, s, 2, p)
        for j in range(T):
            rep = osfl.star_product(labels, j, z_s, z_q, symmetric, k_C=k_C, p=p, levels=levels,
                                    verify=True, wire=(j == 0))
            assert (rep.sums == labels[:, j].sum(axis=0)).all()
            sp = rep.params
            assert sp.b * sp.k_C == sp.R * sp.d                      # the schedule retrieves every stored symbol once
            if k_C is None:
                assert sp.k_C == osfl.star_product_k(n, T, z_s, z_q)[1]


GX_CASES = [  # (n, T, rho, z_s, z_q, p)
    (3, 1, 3, 1, 1, 11),            # minimum: rho = n = z_s + z_q + 1
    (5, 3, 3, 1, 1, 11), (8, 4, 5, 2, 1, 13), (4, 2, 2, 0, 0, 11), (6, 2, 4, 0, 1, 101),
    (10, 5, 7, 2, 2, EMB), (16, 3, 16, 3, 4, 2**61 - 1), (7, 3, 5, 1, 0, sf.GOLDILOCKS),
]


@pytest.mark.parametrize("case", GX_CASES, ids=lambda c: "n{}-T{}-rho{}-zs{}-zq{}-p{}".format(*c))
@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("cyclic", [True, False])
def test_gxstpir_exact(case, symmetric, cyclic):
    n, T, rho, z_s, z_q, p = case
    rng = np.random.default_rng(hash(case) % 2**32)
    inc = osfl.Assignment.cyclic(n, T, rho) if cyclic else _random_assignment(rng, n, T, rho)
    asg = osfl.Assignment(inc)
    labels, levels = _labels(rng, n, T, int(rng.integers(1, 9)), 2, p)
    garbage = labels.copy()
    garbage[~asg.incidence] = 10**6 % p            # unassigned entries are ignored
    for j in range(T):
        rep = osfl.gxstpir(garbage if levels is None else labels, inc, j, z_s, z_q, symmetric, p=p,
                           levels=levels, verify=True, wire=(j == 0))
        assert (rep.sums == labels[list(asg.clients(j)), j].sum(axis=0)).all()


def test_gxstpir_unassigned_entries_ignored_and_idle_clients_answer():
    rng = np.random.default_rng(5)
    inc = np.zeros((7, 2), dtype=np.uint8)
    inc[[0, 1, 2], 0] = 1
    inc[[2, 3, 4], 1] = 1              # clients 5 and 6 compute nothing but still answer
    labels = rng.integers(0, 5, size=(7, 2, 4, 3))
    garbage = labels.copy()
    garbage[~inc.astype(bool)] = 10**6
    for sym in (False, True):
        rep = osfl.gxstpir(garbage, inc, 1, 1, 1, sym, transcript=True)
        assert (rep.sums == labels[[2, 3, 4], 1].sum(axis=0)).all()
        assert set(rep.transcript["answers"]) == set(range(7))


# ----------------------------------------------------------------- communication
def _wire_bytes(tr):
    return {"sharing": sum(len(m.to_bytes()) for m in tr["shares"]),
            "queries": sum(len(q.to_bytes()) for q in tr["queries"].values()),
            "answers": sum(len(a.to_bytes()) for a in tr["answers"].values())}


def _check_counts(rep, want, table=None):
    assert rep.bytes == _wire_bytes(rep.transcript)                  # counted bytes = serialized bytes
    assert {k: rep.elements[k] for k in want} == want                # payload = the instance's formula
    # every payload element is 8 bytes on the wire, plus a fixed header per message
    assert rep.bytes["sharing"] == 8 * want["sharing"] + 49 * len(rep.transcript["shares"])
    assert rep.bytes["answers"] == 8 * want["answers"] + 33 * len(rep.transcript["answers"])
    if table is not None:                                            # Table I / Sec. IV when the divisibility holds
        assert want["sharing"] + want["answers"] == pytest.approx(table["communication"], rel=1e-12)
        got = rep.measured_rates()
        assert got["sharing_rate"] == pytest.approx(table["sharing_rate"], rel=1e-12)
        assert got["pir_rate"] == pytest.approx(table["pir_rate"], rel=1e-12)


def test_approach2_bytes_match_formula():
    n, T, z_s, z_q, s, c = 8, 3, 1, 2, 12, 3
    labels = np.random.default_rng(1).integers(0, 3, size=(n, T, s, c))
    for K in (2, 3):                                               # K | s: Sec. IV's formula exactly
        rep = osfl.approach2(labels, 1, z_s, z_q, True, K=K, transcript=True)
        table = osfl.rates(n, T, n, z_s, z_q, s=s, c=c, K2=K)["approach2"]
        _check_counts(rep, osfl.elements("approach2", n, T, n, z_s, z_q, s=s, c=c, K=K), table)
        assert rep.elements["queries"] == T * (2 * K + z_s + z_q - 1)
    rep = osfl.approach2(labels[:, :, :11], 1, z_s, z_q, K=2, transcript=True)       # padded: P = 6
    _check_counts(rep, osfl.elements("approach2", n, T, n, z_s, z_q, s=11, c=c, K=2))
    assert rep.elements["answers"] == 6 * 6 * c          # N = 6 answers of P = 6 partitions


def test_approach2_matches_the_papers_example_cost():
    """Sec. IV, Approach 2 with n = 5, z = 1, pairs of labels: T (s/2) n (n - 1)
    shared and 5 s / 2 downloaded (symbols of F_q^c)."""
    n, T, s, c = 5, 4, 10, 2
    labels = np.random.default_rng(2).integers(0, 2, size=(n, T, s, c))
    rep = osfl.approach2(labels, 3, 1, 1, K=2, verify=True)
    assert rep.elements["sharing"] == T * (s // 2) * n * (n - 1) * c
    assert rep.elements["answers"] == 5 * s // 2 * c
    # Approach 1 (Sec. IV): T s n (n - 1) + 3 s
    rep1 = osfl.approach1(labels, 3, 1, 1)
    assert rep1.elements["sharing"] + rep1.elements["answers"] == (T * s * n * (n - 1) + 3 * s) * c
    assert osfl.rates(n, T, n, 1, 1, s=s, c=c)["approach1"]["communication"] == (T * s * n * (n - 1) + 3 * s) * c


def test_star_product_bytes_match_table_I():
    n, T, z_s, z_q, c = 10, 3, 1, 1, 2
    k = osfl.star_product_k(n, T, z_s, z_q)[1]
    d = n - k - z_q + 1
    b = d // math.gcd(k, d)
    s = (k - z_s) * b * 3                                          # (k - z_s) b | s: Table I exactly
    labels = np.random.default_rng(3).integers(0, 3, size=(n, T, s, c))
    rep = osfl.star_product(labels, 0, z_s, z_q, True, transcript=True, verify=True)
    table = osfl.rates(n, T, n, z_s, z_q, s=s, c=c)["star_product"]
    _check_counts(rep, osfl.elements("star_product", n, T, n, z_s, z_q, s=s, c=c), table)
    rep = osfl.star_product(labels[:, :, :s - 1], 2, z_s, z_q, k_C=k - 1, transcript=True)   # padded
    _check_counts(rep, osfl.elements("star_product", n, T, n, z_s, z_q, s=s - 1, c=c, k_C=k - 1))


def test_star_product_example_download_is_table_I_not_five_halves():
    """Sec. VII-a, Approach 3 (n = 5, z = 1, k_C = 3) states a download of
    5s/2, "the same as for Approach 2".  The star-product scheme retrieves
    k_C = 3 stored symbols (2 labels, 1 aggregated random coefficient) per
    partition at d(C*D) - 1 = 2 symbols per 5 downloaded: 15 s / 4, which is
    Table I's s c k_C n / ((k_C - z_s)(n - k_C - z_q + 1)).  Pinned here."""
    n, T, s, c = 5, 2, 8, 1
    labels = np.random.default_rng(4).integers(0, 2, size=(n, T, s, c))
    rep = osfl.star_product(labels, 1, 1, 1, k_C=3, verify=True)
    assert rep.elements["answers"] == 15 * s // 4 != 5 * s // 2
    k, z = 3, 1
    assert rep.elements["answers"] == s * c * k * n / ((k - z) * (n - k - z + 1))     # Table I at k_C = 3
    assert rep.elements["sharing"] == T * (s // 2) * n * (n - 1)            # sharing: T (s/2) n (n - 1), as stated


def test_gxstpir_bytes_match_table_I():
    n, T, rho, z_s, z_q, c = 9, 4, 6, 1, 2, 2
    L = rho - z_s - z_q
    s = L * 4
    labels = np.random.default_rng(5).integers(0, 3, size=(n, T, s, c))
    asg = osfl.Assignment.cyclic(n, T, rho)
    rep = osfl.gxstpir(labels, asg, 2, z_s, z_q, True, transcript=True, verify=True)
    table = osfl.rates(n, T, rho, z_s, z_q, s=s, c=c)["gxstpir"]
    _check_counts(rep, osfl.elements("gxstpir", n, T, rho, z_s, z_q, s=s, c=c), table)
    rep = osfl.gxstpir(labels[:, :, :s - 1], asg, 0, z_s, z_q, transcript=True)
    _check_counts(rep, osfl.elements("gxstpir", n, T, rho, z_s, z_q, s=s - 1, c=c))


def test_main_scheme_and_approach1_counts_match_elements():
    n, T, rho, z_s, z_q, s, c = 9, 4, 7, 2, 2, 12, 3
    labels = np.random.default_rng(6).integers(0, 3, size=(n, T, s, c))
    rep = osfl.run_round(labels, osfl.Assignment.cyclic(n, T, rho), 0, z_s, z_q)
    assert rep.elements == osfl.elements("ours", n, T, rho, z_s, z_q, s=s, c=c)
    rep = osfl.approach1(labels, 0, z_s, z_q)
    assert rep.elements == osfl.elements("approach1", n, T, n, z_s, z_q, s=s, c=c)


def test_approach2_symmetric_mask_is_the_papers_R_p():
    """Sec. VI's R_p(x) = sum_{tau=1}^{k_C+z_q-1} x^(k_C-z_s+tau-1) s_tau spans
    exactly the exponents K..N-1 of Approach 2's answer polynomial: the mask
    the clients add (``Approach2.mpow``) is that polynomial, and it leaves
    the decoded coefficients 0..K-1 untouched."""
    for n, z_s, z_q, K in [(5, 1, 1, 2), (9, 2, 2, 3), (4, 0, 0, 2)]:
        a2 = osfl.Approach2(n, 1, 4, 1, z_s, z_q, K=K, p=101)
        k_C = K + z_s
        exps = [k_C - z_s + tau - 1 for tau in range(1, k_C + z_q)]
        assert exps == list(range(K, a2.N))
        V = sf.poly.vandermonde(a2.points[:a2.N], a2.N, 101)
        assert (a2.mpow == V[:, exps]).all()
        assert not sf.linalg.matmul(a2.decoder, np.ascontiguousarray(a2.mpow), 101).any()


def test_gxstpir_mask_lies_in_the_decoder_kernel():
    gx = osfl.GXSTPIR(osfl.Assignment.cyclic(8, 3, 6), 5, 1, 1, 2, p=101)
    Bfull = np.zeros((gx.n, gx.n - gx.L), dtype=np.uint64)
    for f, w in enumerate(gx.window):
        Bfull[f:f + gx.L + 1, f] = w
    for j in range(3):
        assert not sf.linalg.matmul(gx.decoder(j), Bfull, 101).any()
    assert np.linalg.matrix_rank(Bfull.astype(float)) == gx.n - gx.L     # staircase: full rank


def test_rates_approach_entries():
    r = osfl.rates(10, 10, 10, 1, 1, s=3, c=5)
    assert r["approach2"]["communication"] == pytest.approx(10 * 15 * 90 / 2 + 5 * 15 / 2)
    assert r["approach1"]["pir_rate"] == pytest.approx(1 / 3)
    r = osfl.rates(10, 10, 7, 1, 1)
    assert math.isnan(r["approach2"]["communication"]) and math.isnan(r["approach1"]["pir_rate"])
    assert math.isnan(osfl.rates(4, 2, 4, 1, 1, K2=2)["approach2"]["pir_rate"])     # needs n >= 5


# ----------------------------------------------------------------- bad input
def test_approaches_validation():
    lab = np.ones((5, 2, 4, 1), dtype=np.int64)
    asg = osfl.Assignment.cyclic(5, 2, 4)
    for fn, args in ((osfl.approach2, ()), (osfl.star_product, ()), (osfl.gxstpir, (asg,))):
        with pytest.raises(TypeError, match="labels"):
            fn(lab.tolist(), *args, 0, 1, 1)
        with pytest.raises(TypeError, match="labels"):
            fn(lab.astype(float), *args, 0, 1, 1)
        with pytest.raises(ValueError, match="objective"):
            fn(lab, *args, 2, 1, 1)
        with pytest.raises(TypeError, match="objective"):
            fn(lab, *args, 0.0, 1, 1)
        with pytest.raises(ValueError, match="z_s"):
            fn(lab, *args, 0, -1, 1)
        with pytest.raises(TypeError, match="z_q"):
            fn(lab, *args, 0, 1, "1")
        with pytest.raises(TypeError, match="symmetric"):
            fn(lab, *args, 0, 1, 1, 1)
        with pytest.raises(TypeError, match="wire"):
            fn(lab, *args, 0, 1, 1, wire=1)
        with pytest.raises(ValueError, match="p = 12 is not prime"):
            fn(lab, *args, 0, 1, 1, p=12)
        with pytest.raises(TypeError, match="CSPRNG"):
            fn(lab, *args, 0, 1, 1, query_rng=np.random.default_rng(0))
        with pytest.raises(TypeError, match="share_rng"):
            fn(lab, *args, 0, 1, 1, share_rng=Prg(b"k" * 32, b"d"))
        with pytest.raises(ValueError, match="negative"):
            fn(-lab, *args, 0, 1, 1)
        with pytest.raises(ValueError, match="levels"):
            fn(lab * 3, *args, 0, 1, 1, levels=3)
        with pytest.raises(ValueError, match="shape"):
            fn(lab[0], *args, 0, 1, 1)
    with pytest.raises(ValueError, match="n >= 2K \\+ z_s \\+ z_q - 1"):
        osfl.approach2(lab, 0, 1, 1, K=3)
    with pytest.raises(ValueError, match="K must be >= 1"):
        osfl.approach2(lab, 0, 1, 1, K=0)
    with pytest.raises(TypeError, match="K must be an int"):
        osfl.approach2(lab, 0, 1, 1, K=2.0)
    with pytest.raises(ValueError, match="k_C must satisfy"):
        osfl.star_product(lab, 0, 1, 1, k_C=5)
    with pytest.raises(ValueError, match="k_C must satisfy"):
        osfl.star_product(lab, 0, 1, 1, k_C=1)
    with pytest.raises(ValueError, match="n >= z_s \\+ z_q \\+ 1"):
        osfl.star_product(lab, 0, 3, 2)
    with pytest.raises(ValueError, match="rho >= z_s \\+ z_q \\+ 1"):
        osfl.gxstpir(lab, asg, 0, 2, 2)
    with pytest.raises(ValueError, match="field is too small"):
        osfl.gxstpir(lab, asg, 0, 1, 1, p=7)                      # n + L = 7 > p - 1
    with pytest.raises(ValueError, match="field is too small"):
        osfl.approach2(np.zeros((5, 1, 2, 1), dtype=np.int64), 0, 1, 1, K=1, p=5)   # n > p - 1
    with pytest.raises(ValueError, match="constant column weight"):
        osfl.gxstpir(lab, [[1, 1], [1, 0], [0, 0], [0, 0], [0, 0]], 0, 0, 0)
    with pytest.raises(ValueError, match="capacity"):
        osfl.approach2(np.full((5, 1, 2, 1), 3), 0, 1, 1, p=11)   # 5 * 3 >= 11: sums would wrap
    with pytest.raises(ValueError, match="scheme must be one of"):
        osfl.elements("pir", 5, 2, 5, 1, 1, s=2, c=1)
    with pytest.raises(TypeError, match="scheme must be a str"):
        osfl.elements(3, 5, 2, 5, 1, 1, s=2, c=1)
    with pytest.raises(ValueError, match="rho = n"):
        osfl.elements("star_product", 5, 2, 4, 1, 1, s=2, c=1)


def test_approaches_use_no_insecure_rng(no_insecure_rng):
    labels = np.arange(6 * 3 * 5 * 2).reshape(6, 3, 5, 2) % 4
    for sym in (False, True):
        assert (osfl.approach2(labels, 1, 1, 1, sym, K=2).sums == labels[:, 1].sum(axis=0)).all()
        assert (osfl.star_product(labels, 1, 1, 1, sym).sums == labels[:, 1].sum(axis=0)).all()
        inc = osfl.Assignment.cyclic(6, 3, 4)
        assert (osfl.gxstpir(labels, inc, 1, 1, 1, sym).sums == labels[list(inc.clients(1)), 1].sum(axis=0)).all()


def test_share_evaluation_routes_agree(monkeypatch):
    """``osfl.params.evaluate``: the row-by-row route (thin share polynomials)
    and the matmul kernel give the same shares, bit for bit."""
    from secea_fast import tuning
    from secea_fast.protocols.osfl.params import evaluate
    rng = np.random.default_rng(7)
    for p in (11, EMB, 2**64 - 59):
        for k in (1, 2, 3, 4, 6):
            V = sf.poly.vandermonde(np.arange(1, 10, dtype=np.uint64), k, p)
            C = (rng.integers(0, 2**63, size=(k, 37), dtype=np.uint64) % np.uint64(p))
            monkeypatch.setattr(tuning, "OSFL_ROWS_MAX_COEFFS", 0)
            a = evaluate(V, C, p)
            monkeypatch.setattr(tuning, "OSFL_ROWS_MAX_COEFFS", 100)
            b = evaluate(V, C, p)
            assert (a == b).all()
            want = (V.astype(object) @ C.astype(object)) % p
            assert (a.astype(object) == want).all()


@pytest.mark.slow
def test_approaches_at_the_fig4_shape():
    """Fig. 4's n = 100, T = 20, z_s = z_q = 5 (s = 40 labels of 2 classes):
    exact sums and payload equal to ``osfl.elements`` for every approach."""
    n, T, z, s, c = 100, 20, 5, 40, 2
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 11, size=(n, T, s, c))
    asg = osfl.Assignment.cyclic(n, T, 51)
    runs = [("approach2", osfl.approach2(labels, 7, z, z, True, K=2, verify=True), n, {"K": 2}),
            ("star_product", osfl.star_product(labels, 7, z, z, True, verify=True), n, {}),
            ("gxstpir", osfl.gxstpir(labels, asg, 7, z, z, True, verify=True), 51, {}),
            ("ours", osfl.run_round(labels, asg, 7, z, z, True, verify=True), 51, {})]
    for name, rep, rho, kw in runs:
        assert rep.verified
        assert {k: rep.elements[k] for k in ("sharing", "queries", "answers")} == \
            osfl.elements(name, n, T, rho, z, z, s=s, c=c, **kw)


def test_party_steps_validate_their_arguments():
    """The classes' checked steps (``share``, ``queries``, ``answer``,
    ``reconstruct``) refuse bad arguments, naming them."""
    objs = [osfl.Approach2(5, 2, 4, 1, 1, 1, K=1, p=101), osfl.StarProduct(5, 2, 4, 1, 1, 1, k_C=3, p=101),
            osfl.GXSTPIR(osfl.Assignment.cyclic(5, 2, 4), 4, 1, 1, 1, p=101)]
    lab = np.ones((4, 1), dtype=np.int64)
    for obj in objs:
        assert obj.share(1, lab).shape == (len(obj.members(1)), obj.store_cols)
        with pytest.raises(ValueError, match="objective"):
            obj.share(2, lab)
        with pytest.raises(TypeError, match="labels"):
            obj.share(0, lab.astype(float))
        with pytest.raises(ValueError, match="labels must have shape"):
            obj.share(0, np.ones((3, 1), dtype=np.int64))
        with pytest.raises(ValueError, match="labels must hold"):
            obj.share(0, lab * 101)
        with pytest.raises(TypeError, match="CSPRNG"):
            obj.share(0, lab, np.random.default_rng(0))
        with pytest.raises(TypeError, match="CSPRNG"):
            obj.queries(0, np.random.default_rng(0))
        qs = obj.queries(1)
        i = obj.responders[0]
        store = np.zeros((len(obj.objectives(i)), obj.store_cols), dtype=np.uint64)
        assert isinstance(obj.answer(i, store, qs[i]), osfl.Answer)
        with pytest.raises(ValueError, match="answering clients"):
            obj.answer(7, store, qs[i])
        with pytest.raises(TypeError, match="i must be an int"):
            obj.answer("0", store, qs[i])
        with pytest.raises(ValueError, match="store must have shape"):
            obj.answer(i, store[:, 1:], qs[i])
        with pytest.raises(TypeError, match="store"):
            obj.answer(i, store.astype(np.int64), qs[i])
        with pytest.raises(TypeError, match="query must be a Query"):
            obj.answer(i, store, qs[i].values)
        with pytest.raises(ValueError, match="addressed to client"):
            obj.answer(i, store, qs[obj.responders[1]])
        with pytest.raises(ValueError, match="query.values must hold"):
            obj.answer(i, store, osfl.Query(i, qs[i].objectives[:-1], qs[i].values[:-1]))
        with pytest.raises(TypeError, match="mask"):
            obj.answer(i, store, qs[i], mask=b"k" * 32)
        with pytest.raises(ValueError, match="session"):
            obj.answer(i, store, qs[i], mask=(b"k" * 32, b""))
        with pytest.raises(ValueError, match="A must have shape"):
            obj.reconstruct(0, np.zeros((2, 2), dtype=np.uint64))
        with pytest.raises(ValueError, match="objective"):
            obj.reconstruct(-1, np.zeros(obj.answers_shape, dtype=np.uint64))
        assert obj.reconstruct(0, np.zeros(obj.answers_shape, dtype=np.uint64)).shape == (4, 1)
