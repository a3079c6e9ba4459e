"""View tests for the one-shot objective-hiding FL scheme (Egger, Urbanke,
Bitar, "Federated One-Shot Learning with Data Privacy and Objective-Hiding",
2025): sharing (Sec. V, eq. 1), query (eq. 2) and symmetric privacy
(Sec. VI), all run over F_5 with n = 4 clients, T = 2 objectives, rho = 3,
z_s = z_q = 1 (k_C = 2, K = 1), so complete views can be tabulated.

Every label column (partition) is encoded with its own share randomness and
its own mask elements, so the columns of one run are independent samples of
the per-column view (the federator's query randomness, common to all
columns, is fixed by a seeded stream: the views are compared conditionally
on it, which is what the federator holds).

* Federator (symmetric mode): the complete per-column view, the n answers
  A^1..A^n together (125 reachable cells), for two label tensors with the
  same requested sum but different individual labels and different labels
  of the other objective.  Controls: no mask (the scheme of Sec. V alone),
  and one mask seed and session reused for two retrievals.
* A colluding client (z_s = 1): all shares it receives, per column jointly,
  for two label inputs of another client.  Control: eq. 1 without the
  random coefficient.
* A colluding client (z_q = 1): the query values it receives (eq. 2) for the
  two objectives j = 0, 1.  Control: eq. 2 without the random k.
"""

import numpy as np

from secea_fast.prg import Prg, random_seed
from secea_fast.protocols import osfl

from _views import FAMILY_ALPHA, ZeroPrg, assert_same_distribution, assert_views_same, same_distribution, samples

P = 5
N, T, RHO, S = 4, 2, 3, 300
ASG = osfl.Assignment.cyclic(N, T, RHO)          # objective 0: clients 0, 1, 2; objective 1: 0, 2, 3


def _labels(ones):
    """(n, T, s, 1) labels: 1 for the (client, objective) pairs in ``ones``."""
    lab = np.zeros((N, T, S, 1), dtype=np.int64)
    for i, t in ones:
        lab[i, t] = 1
    return lab


# the requested objective 0 has the same sum (1) from different holders;
# the other objective's labels and sum differ (1 vs 2): symmetric privacy
# (Sec. VI) means the federator learns nothing about them
INPUTS = {"A": _labels([(2, 0), (0, 1)]), "B": _labels([(1, 0), (2, 1), (3, 1)])}


def _retrieve(labels, j, *, symmetric=True, seed=None, session=None, qseed=b"q" * 32):
    """One retrieval; returns the federator's (columns, n) answers and the
    clients (for their received shares)."""
    params = osfl.OSFLParams(ASG, 1, 1, S, 1, p=P)
    if symmetric:
        seed = random_seed(32) if seed is None else seed
        session = random_seed(16) if session is None else session
    clients = [osfl.Client(i, params, labels[i], shared_seed=seed if symmetric else None,
                           session=session if symmetric else b"") for i in range(N)]
    for c in clients:
        for m in c.share():
            clients[m.receiver].receive(m)
    fed = osfl.Federator(params, j)
    qs = fed.queries(rng=Prg(qseed, b"fixed query randomness"))
    answers = {i: clients[i].answer(qs[i]) for i in range(N)}
    assert (fed.reconstruct(answers).astype(np.int64) == labels[list(ASG.clients(j)), j].sum(axis=0)).all()
    A = np.stack([answers[i].values.reshape(-1) for i in range(N)], axis=1).astype(np.int64)
    return A, clients


def _federator_views(name, runs, **kw):
    return np.concatenate([_retrieve(INPUTS[name], 0, **kw)[0] for _ in range(runs)])


def test_federator_view_same_for_two_label_inputs():
    runs = samples(10, ci=4)                          # 4: the control below
    A, B = _federator_views("A", runs), _federator_views("B", runs)
    assert len(np.unique(A, axis=0)) > 100            # uniform on a coset of W (125 points)
    assert_same_distribution(A, B)
    assert_views_same(A, B, P)


def test_federator_check_detects_missing_mask():
    A, B = _federator_views("A", 4, symmetric=False), _federator_views("B", 4, symmetric=False)
    assert same_distribution(A, B) < FAMILY_ALPHA


def _two_retrievals(name, runs, reuse):
    """The federator's view of two retrievals of objective 0 (fresh query
    randomness for each) answered from the same stored shares: per column
    the 2n answers.  ``reuse``: both with one mask seed and session (else a
    fresh session for the second)."""
    params = osfl.OSFLParams(ASG, 1, 1, S, 1, p=P)
    out = []
    for r in range(runs):
        seed, session = random_seed(32), random_seed(16)
        clients = [osfl.Client(i, params, INPUTS[name][i], shared_seed=seed, session=session)
                   for i in range(N)]
        for c in clients:
            for m in c.share():
                clients[m.receiver].receive(m)
        # the same stored shares a second time: the clients' own saved state (parties that
        # hold secrets are never copied)
        again = [osfl.Client.import_state(c.export_state(), params) for c in clients]
        if not reuse:
            for c in again:
                c._session = session + b"/2"
        views = []
        for k, cl in enumerate((clients, again)):
            fed = osfl.Federator(params, 0)
            qs = fed.queries(rng=Prg(bytes([k + 1]) * 32, b"fixed query randomness"))
            views.append(np.stack([cl[i].answer(qs[i]).values.reshape(-1) for i in range(N)], axis=1))
        out.append(np.concatenate(views, axis=1))
    return np.concatenate(out).astype(np.int64)


def test_federator_two_retrievals_with_fresh_sessions():
    runs = samples(10, ci=6)                          # 6: the control below
    A, B = _two_retrievals("A", runs, reuse=False), _two_retrievals("B", runs, reuse=False)
    # the check the control below fails: differences of the two retrievals' answers
    assert_same_distribution(A[:, :N] - A[:, N:] + P, B[:, :N] - B[:, N:] + P)
    assert_views_same(A, B, P)


def test_federator_check_detects_a_mask_seed_reused_for_two_retrievals():
    """One (seed, session) for two retrievals (the hazard the ``Client``
    docstring warns about): the masks cancel in the difference of the
    answers, whose dependence on the other objective's labels no longer
    lies in the mask space W: the federator learns that objective's sum."""
    A, B = _two_retrievals("A", 6, reuse=True), _two_retrievals("B", 6, reuse=True)
    assert same_distribution(A[:, :N] - A[:, N:] + P, B[:, :N] - B[:, N:] + P) < FAMILY_ALPHA


# ----------------------------------------------------------------- colluding clients
def _client_views(labels, member, runs, zero=False):
    """Per column: every share ``member`` receives (all senders, all its
    objectives), as elements of F_P."""
    params = osfl.OSFLParams(ASG, 1, 1, S, 1, p=P)
    rows = []
    for _ in range(runs):
        clients = [osfl.Client(i, params, labels[i]) for i in range(N)]
        got = []
        for c in clients:
            rng = ZeroPrg(random_seed(32), b"leaky") if zero and c.index != member else None
            msgs = c.share(rng)
            got += [m for m in msgs if m.receiver == member]
        got.sort(key=lambda m: (m.objective, m.sender))
        rows.append(np.stack([m.values.reshape(-1) for m in got], axis=1))
    return np.concatenate(rows).astype(np.int64)


def test_colluding_client_sees_uniform_shares():
    # client 0 holds both objectives: its view has 4 received shares per column
    runs = samples(8, ci=2)                           # 2: the control below
    A, B = _client_views(INPUTS["A"], 0, runs), _client_views(INPUTS["B"], 0, runs)
    assert A.shape[1] == 4
    assert_same_distribution(A, B)
    assert_views_same(A, B, P)


def test_colluding_client_check_detects_shares_without_randomness():
    A, B = _client_views(INPUTS["A"], 0, 2, zero=True), _client_views(INPUTS["B"], 0, 2, zero=True)
    assert same_distribution(A, B) < FAMILY_ALPHA


def _query_views(j, count, zero=False):
    """Each client's query values (eq. 2) for objective j, ``count`` fresh
    queries: (count, n) arrays per client, in a dict."""
    params = osfl.OSFLParams(ASG, 1, 1, S, 1, p=P)
    fed = osfl.Federator(params, j)
    out = {i: [] for i in range(N)}
    for _ in range(count):
        rng = ZeroPrg(random_seed(32), b"leaky") if zero else None
        qs = fed.queries(rng)
        for i in range(N):
            out[i].append(np.asarray(qs[i].values, dtype=np.int64))
    return {i: np.stack(v) for i, v in out.items()}


def test_colluding_client_query_hides_the_objective():
    A, B = _query_views(0, 1500), _query_views(1, 1500)
    for i in range(N):
        assert_same_distribution(A[i], B[i], FAMILY_ALPHA / N)


def test_query_check_detects_missing_query_randomness():
    A, B = _query_views(0, 50, zero=True), _query_views(1, 50, zero=True)
    assert min(same_distribution(A[i], B[i]) for i in range(N)) < FAMILY_ALPHA
