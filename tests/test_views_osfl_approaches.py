"""View tests for the competing approaches of Egger, Urbanke, Bitar,
"Federated One-Shot Learning with Data Privacy and Objective-Hiding" (2025):
Approach 2 (Sec. IV), the star-product scheme (Approach 3, Sec. VII-a) and
Shamir + GXSTPIR (Sec. VII-b), all over F_7 (F_11 where two colluders need
more points) so that views can be tabulated.

Every label column (partition) is shared with its own randomness and masked
with its own mask elements, and every client's labels are the same in all
columns, so the columns of one run are independent samples of the
per-column view; the federator's query randomness, common to all columns,
is fixed by a seeded stream (the views are compared conditionally on it,
which the federator holds anyway).

* Federator (``symmetric=True``, Sec. VI): all answers of one column, for
  two label tensors with the same requested sum but different individual
  labels and a different sum of the other objective.  Control: the same
  without the mask (the federator then learns about the other objective).
* Colluding clients (data privacy, z_s): every share the coalition
  receives, for two different label tensors of the other clients.
  Control: shares drawn without randomness.
* Colluding clients (objective hiding, z_q): the query values the
  coalition receives for j = 0 and j = 1.  Control: queries without
  randomness.  (A client's other inputs, its labels and the shares it
  stores, are fixed before the query and do not depend on j.)
"""
import itertools

import numpy as np
import pytest

from secea_fast import linalg, poly
from secea_fast.prg import Prg, random_seed
from secea_fast.protocols import osfl

from _views import FAMILY_ALPHA, ZeroPrg, assert_same_distribution, assert_views_same, same_distribution, samples

P = 7


def _labels(n, T, s, ones):
    lab = np.zeros((n, T, s, 1), dtype=np.int64)
    for i, t in ones:
        lab[i, t] = 1
    return lab


# Objective 0 has sum 1 in both inputs (from different clients), objective 1
# has sum 1 in A and 3 in B; client 0 (the colluder of the data-privacy
# tests) has the same labels in both.  GXSTPIR runs on
# Assignment.cyclic(4, 2, 3): objective 0 on clients 0, 1, 2; objective 1 on
# clients 2, 3, 0.
def _inputs(n, T, s):
    return {"A": _labels(n, T, s, [(2, 0), (0, 1)]), "B": _labels(n, T, s, [(1, 0), (2, 1), (3, 1), (0, 1)])}


SCHEMES = {
    # name: (runner(labels, j, symmetric, **kw), n, s)
    "approach2": (lambda lab, j, sym, **kw: osfl.approach2(lab, j, 1, 1, sym, K=2, p=P, **kw), 5, 600),
    "star_product": (lambda lab, j, sym, **kw: osfl.star_product(lab, j, 1, 1, sym, k_C=3, p=P, **kw), 5, 1200),
    "gxstpir": (lambda lab, j, sym, **kw: osfl.gxstpir(lab, osfl.Assignment.cyclic(4, 2, 3), j, 1, 1, sym, p=P,
                                                         **kw), 4, 300),
}


def _star_coordinates(sp, A):
    """A public bijection of the star-product federator's per-column view
    (answers (n, R) per column) onto the coefficients of each subquery's
    C*D codeword (interpolated from the answers off the erasures) and the
    retrieved erasure values: on these coordinates the leak of the scheme
    without the mask is a single fixed coefficient."""
    cols = []
    pts = [int(x) for x in sp.points]
    for r, rnd in enumerate(sp.rounds):
        J = [i for _, i in rnd]
        rest = [i for i in range(sp.n) if i not in J]
        W = poly.lagrange_matrix(np.array([pts[i] for i in rest], dtype=np.uint64), P)     # coeffs = vals @ W
        vals = np.ascontiguousarray(A[:, rest, r].astype(np.uint64))
        coef = linalg.matmul(vals, W, P)
        V = poly.vandermonde(np.array([pts[i] for i in J], dtype=np.uint64), len(rest), P)
        at_J = linalg.matmul(coef, np.ascontiguousarray(V.T), P)
        cols += [coef, (A[:, J, r].astype(np.int64) - at_J.astype(np.int64)) % P]
    return np.concatenate([np.asarray(c, dtype=np.int64) for c in cols], axis=1)


def _federator_views(scheme, name, runs, symmetric=True):
    run, n, s = SCHEMES[scheme]
    lab = _inputs(n, 2, s)[name]
    rows = []
    for _ in range(runs):
        rep = run(lab, 0, symmetric, transcript=True, verify=True, query_rng=Prg(b"q" * 32, b"fixed queries"))
        ans = rep.transcript["answers"]
        A = np.stack([ans[i].values for i in sorted(ans)], axis=1)         # star: (R, n, W); else (P, n, 1)
        if scheme == "star_product":
            rows.append(_star_coordinates(rep.params, np.transpose(A, (2, 1, 0))))
        else:
            rows.append(A[:, :, 0].astype(np.int64))
    return np.concatenate(rows)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_federator_view_same_for_two_label_inputs(scheme):
    runs = samples({"approach2": 8, "star_product": 10, "gxstpir": 16}[scheme], ci=3)   # 3: the control's
    A, B = _federator_views(scheme, "A", runs), _federator_views(scheme, "B", runs)
    assert len(np.unique(A, axis=0)) > 100                 # uniform on a coset, not a point
    if scheme != "star_product":                            # the joint view has <= 7^3 cells
        assert_same_distribution(A, B)
    assert_views_same(A, B, P)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_federator_check_detects_missing_mask(scheme):
    A, B = _federator_views(scheme, "A", 3, symmetric=False), _federator_views(scheme, "B", 3, symmetric=False)
    if scheme == "star_product":
        pv = min(same_distribution(A[:, k], B[:, k]) for k in range(A.shape[1]))
    else:
        pv = same_distribution(A, B)
    assert pv < FAMILY_ALPHA


# ----------------------------------------------------------------- colluding clients: data privacy
def _share_runs(run, lab, runs, zero=False):
    share_rng = (lambda i: ZeroPrg(random_seed(32), b"leaky")) if zero else None
    return [run(lab, 0, False, transcript=True, share_rng=share_rng).transcript["shares"] for _ in range(runs)]


def _coalition_view(runs, coalition):
    """Per column: every share the coalition receives, in a fixed order."""
    rows = []
    for shares in runs:
        got = sorted((m for m in shares if m.receiver in coalition), key=lambda m: (m.objective, m.sender, m.receiver))
        rows.append(np.stack([m.values.reshape(-1) for m in got], axis=1))
    return np.concatenate(rows).astype(np.int64)


def _share_views(run, lab, coalition, runs, zero=False):
    return _coalition_view(_share_runs(run, lab, runs, zero), coalition)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_colluding_client_sees_uniform_shares(scheme):
    """Every single client (z_s = 1) receives shares whose distribution does
    not depend on the other clients' labels (the received shares do not
    depend on its own labels at all)."""
    run, n, s = SCHEMES[scheme]
    inp = _inputs(n, 2, s)
    runs = samples(2, ci=1)                                 # 1: the control's
    ra, rb = _share_runs(run, inp["A"], runs), _share_runs(run, inp["B"], runs)
    for i in range(n):
        A, B = _coalition_view(ra, {i}), _coalition_view(rb, {i})
        if i == 0:
            assert A.shape[1] == (2 * (n - 1) if scheme != "gxstpir" else 4)   # client 0 holds both objectives
        assert_views_same(A, B, P, alpha=FAMILY_ALPHA / n)
    Az, Bz = _share_views(run, inp["A"], {0}, 1, zero=True), _share_views(run, inp["B"], {0}, 1, zero=True)
    assert same_distribution(Az, Bz) < FAMILY_ALPHA


def test_two_colluding_clients_z_s_2():
    """z_s = 2 (Approach 2 with n = 6, K = 1; GXSTPIR with rho = 5 over F_11):
    every pair of clients' received shares is independent of the labels;
    without randomness they are not."""
    p = 11
    cases = [(lambda lab, j, sym, **kw: osfl.approach2(lab, j, 2, 1, sym, K=1, p=p, **kw), 6),
             (lambda lab, j, sym, **kw: osfl.gxstpir(lab, osfl.Assignment.cyclic(6, 2, 5), j, 2, 1, sym, p=p,
                                                     **kw), 6)]
    for run, n in cases:
        # clients 0, 1, 5 (the coalitions) hold zeros in both inputs; objective 0
        # sums to 1 in both, objective 1 to 1 and 2 (cyclic(6, 2, 5): objective 0
        # on clients 0..4, objective 1 on 3, 4, 5, 0, 1)
        inp = {"A": _labels(n, 2, 600, [(2, 0), (3, 1)]), "B": _labels(n, 2, 600, [(3, 0), (4, 1), (3, 1)])}
        for coalition in ({0, 1}, {1, 5}):
            runs = samples(2, ci=1)                         # 1: the control's
            A, B = _share_views(run, inp["A"], coalition, runs), _share_views(run, inp["B"], coalition, runs)
            assert_views_same(A, B, p)
        Az, Bz = (_share_views(run, inp[k], {0, 1}, 1, zero=True) for k in "AB")
        assert same_distribution(Az, Bz) < FAMILY_ALPHA


# ----------------------------------------------------------------- colluding clients: objective hiding
def _scheme_objects():
    return {"approach2": osfl.Approach2(5, 2, 2, 1, 1, 1, K=2, p=P),
            "star_product": osfl.StarProduct(5, 2, 4, 1, 1, 1, k_C=3, p=P),
            "gxstpir": osfl.GXSTPIR(osfl.Assignment.cyclic(4, 2, 3), 1, 1, 1, 1, p=P)}


def _query_views(obj, j, count, coalition, zero=False):
    rows = []
    for _ in range(count):
        rng = ZeroPrg(random_seed(32), b"leaky") if zero else Prg(random_seed(32), b"q")
        qs = obj.queries(j, rng)
        rows.append(np.concatenate([np.asarray(qs[i].values, dtype=np.int64) for i in coalition]))
    return np.stack(rows)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_colluding_client_query_hides_the_objective(scheme):
    obj = _scheme_objects()[scheme]
    for i in obj.responders:
        A, B = _query_views(obj, 0, 600, [i]), _query_views(obj, 1, 600, [i])
        assert_views_same(A, B, P, alpha=FAMILY_ALPHA / len(obj.responders))
    Az, Bz = _query_views(obj, 0, 20, [0], zero=True), _query_views(obj, 1, 20, [0], zero=True)
    assert same_distribution(Az, Bz) < FAMILY_ALPHA


def test_two_colluding_clients_z_q_2():
    """z_q = 2 over F_11: every pair of clients' queries (GXSTPIR on a graph,
    the star product, Approach 2) is independent of j; three clients of one
    objective see it (control)."""
    p = 11
    objs = [osfl.GXSTPIR(osfl.Assignment.cyclic(6, 2, 5), 1, 1, 1, 2, p=p),
            osfl.StarProduct(6, 2, 2, 1, 1, 2, k_C=2, p=p),
            osfl.Approach2(6, 2, 2, 1, 1, 2, K=2, p=p)]
    for obj in objs:
        for pair in itertools.combinations(obj.responders, 2):
            if pair not in ((0, 1), (0, 3), (2, 4)):
                continue
            n = samples(600, ci=200)                        # 200: the control's
            A, B = _query_views(obj, 0, n, list(pair)), _query_views(obj, 1, n, list(pair))
            assert_views_same(A, B, p, alpha=FAMILY_ALPHA / 3)
    # control: three clients (z_q + 1) of Approach 2 see j.  Their values of
    # q^(0)(x) = delta + k_0 x^2 + k_1 x^3 lie on delta (1, 1, 1) plus a plane;
    # the public functional w orthogonal to (alpha_i^2) and (alpha_i^3) gives
    # delta (w . 1): a constant, nonzero exactly when j = 0
    obj = objs[2]
    a = [int(x) for x in obj.points[:3]]
    r2, r3 = [x * x % p for x in a], [x ** 3 % p for x in a]
    w = np.array([(r2[1] * r3[2] - r2[2] * r3[1]) % p, (r2[2] * r3[0] - r2[0] * r3[2]) % p,
                  (r2[0] * r3[1] - r2[1] * r3[0]) % p], dtype=np.int64)
    A, B = _query_views(obj, 0, 200, [0, 1, 2]), _query_views(obj, 1, 200, [0, 1, 2])
    pa, pb = (A[:, [0, 2, 4]] @ w) % p, (B[:, [0, 2, 4]] @ w) % p
    assert len(set(pa.tolist())) == 1 and len(set(pb.tolist())) == 1 and pa[0] != pb[0] == 0
    assert same_distribution(pa, pb) < FAMILY_ALPHA
