"""View tests for SecEmb: each server's complete view of a round is
distributed identically for two different private inputs of the users.

The group is Z_2^64, too large to tabulate, so the test projects the view
onto small groups where every additive or XOR relation between two messages
survives: for each word of the view, its residue mod 16, and for each pair of
words (w_i, w_j), (w_i - w_j), (w_i + w_j) and (w_i xor w_j) mod 16.  A
relation such as ``cw_agg - cw_ret = +-(beta_agg - beta_ret)`` between two
correction words built on one conversion output (what each server could
compute before the aggregation conversion was domain-separated) shows up as
a skewed residue for one input and not the other.  Two-sample chi-square
tests compare the inputs with a Bonferroni-corrected family-wise level of
1e-6, so a correct protocol fails them with probability below 1e-6; the
``leaky`` control runs the same check on a deliberately broken user and must
fail, so the check itself is shown to have power.
"""
import math

import numpy as np
import pytest

from secea_fast import dpf
from secea_fast.protocols import secemb
from secea_fast.protocols.secemb import SecEmbParams, Server, User

from _views import samples

FAMILY_ALPHA = 1e-6


# ------------------------------------------------------------ statistics
def chi2_sf(x: float, dof: int) -> float:
    """P[chi^2_dof >= x], closed forms for integer dof (no SciPy needed)."""
    if dof <= 0:
        return 1.0
    if x <= 0:
        return 1.0
    h = x / 2.0
    if dof % 2 == 0:
        term, total = 1.0, 1.0
        for i in range(1, dof // 2):
            term *= h / i
            total += term
        return min(1.0, math.exp(-h + math.log(total)))
    # odd dof: Q(k/2, h) = erfc(sqrt h) + e^-h sum_{i=1}^{(k-1)/2} h^(i-1/2) / Gamma(i+1/2)
    total, gamma = math.erfc(math.sqrt(h)), math.sqrt(math.pi) / 2.0      # Gamma(3/2)
    for i in range(1, (dof + 1) // 2):
        total += math.exp(-h + (i - 0.5) * math.log(h) - math.log(gamma))
        gamma *= i + 0.5
    return min(1.0, total)


def two_sample_pvalues(codes_a: np.ndarray, codes_b: np.ndarray, bins: int) -> np.ndarray:
    """codes_*: (samples, tests) small integers < bins.  Two-sample chi-square
    p-value per test (equal sample sizes)."""
    n, t = codes_a.shape
    assert codes_b.shape == (n, t)
    idx = np.arange(t, dtype=np.int64) * bins
    ca = np.bincount((codes_a.astype(np.int64) + idx).ravel(), minlength=t * bins).reshape(t, bins)
    cb = np.bincount((codes_b.astype(np.int64) + idx).ravel(), minlength=t * bins).reshape(t, bins)
    tot = ca + cb
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(tot > 0, (ca - cb) ** 2 / np.maximum(tot, 1), 0.0).sum(axis=1)
    dof = (tot > 0).sum(axis=1) - 1
    return np.array([chi2_sf(float(s), int(k)) for s, k in zip(stat, dof)])


def projections(views: np.ndarray) -> np.ndarray:
    """(samples, words) uint64 -> (samples, tests) residues mod 16: every word,
    and the difference, sum and xor of every pair of words."""
    w = (views & np.uint64(15)).astype(np.int16)
    n, k = w.shape
    iu, ju = np.triu_indices(k, 1)
    a, b = w[:, iu], w[:, ju]
    return np.concatenate([w, (a - b) % 16, (a + b) % 16, a ^ b], axis=1).astype(np.uint8)


def min_pvalue_scaled(views_a, views_b):
    """Smallest p-value times the number of tests (Bonferroni)."""
    pa, pb = projections(np.asarray(views_a)), projections(np.asarray(views_b))
    p = two_sample_pvalues(pa, pb, 16)
    return float(p.min()) * p.size


def assert_same_distribution(views_a, views_b):
    scaled = min_pvalue_scaled(views_a, views_b)
    assert scaled > FAMILY_ALPHA, f"views differ: Bonferroni p = {scaled:.3g}"


def test_chi2_sf_matches_known_quantiles():
    # chi^2 quantiles: P[X >= 3.841] = 0.05 (1 dof), 5.991 (2), 7.815 (3), 24.996 (15)
    for x, k in ((3.841459, 1), (5.991465, 2), (7.814728, 3), (24.99579, 15), (11.0705, 5)):
        assert chi2_sf(x, k) == pytest.approx(0.05, rel=1e-4)


# ------------------------------------------------------------ SecEmb views
M, D, MP = 64, 4, 8
PARAMS = SecEmbParams(m=M, d=D, m_prime=MP, n_users=4, dense_size=2)
CONTROL = 600                              # the leaky control's rounds: the CI level's
ROUNDS = samples(1200, ci=CONTROL)


def request_words(req):
    """Every word a server receives in a RetrievalRequest (key bodies; the
    headers are public constants)."""
    return [np.frombuffer(k.to_bytes()[24:], dtype="<u8") for k in req.keys]


def single_user_view(items, grads, dense, b, user_cls=User, params=PARAMS):
    u = user_cls(params, items)
    req = u.retrieval_request()[b]
    up = u.aggregation_upload(grads, dense)[b]
    count = secemb.count_shares(len(items))[b]
    words = request_words(req) + [up.cws.ravel(), up.dense.ravel(), np.array([count], dtype=np.uint64)]
    return np.concatenate(words).astype(np.uint64)


def draw(items, grads, dense, b, user_cls=User, rounds=ROUNDS, params=PARAMS):
    return np.stack([single_user_view(items, grads, dense, b, user_cls, params) for _ in range(rounds)])


class _LeakyUser(User):
    """The pre-fix construction: eq. 3's retrieval keys (beta = 1, a
    correction word converted in domain 0) and an aggregation conversion
    that reuses that domain on the same path."""

    def retrieval_request(self):
        r0, r1 = super().retrieval_request()
        cws = dpf.convert_gen_batch(self._round["paths"], np.ones(PARAMS.m_prime, dtype=np.uint64))
        return (secemb.RetrievalRequest(0, dpf.KeyBatch.from_paths(r0.keys, cws, vector=False)),
                secemb.RetrievalRequest(1, dpf.KeyBatch.from_paths(r1.keys, cws, vector=False)))

    def aggregation_upload(self, grads, dense=None, clip=None):
        st = self._need_round()
        for secret in st["paths"]:
            secret._domains.clear()            # bypass the one-payload-per-domain guard
        rows = np.zeros((PARAMS.m_prime, PARAMS.d))
        real = st["pos"] >= 0
        rows[real] = np.asarray(grads, dtype=np.float64)[st["pos"][real]]
        cws = dpf.convert_gen_batch(st["paths"], secemb.encode_fixed(rows, PARAMS))   # domain 0
        d0, d1 = self._dense_shares(dense)
        return secemb.AggregationUpload(0, cws, d0), secemb.AggregationUpload(1, cws, d1)


ITEMS_FEW = [3, 17, 40]
ITEMS_MANY = [3, 17, 40, 5, 9, 60, 33, 21]
_rng = np.random.default_rng(7)                      # simulation data only
GRADS_FEW = _rng.uniform(-1, 1, (3, D))
GRADS_MANY = _rng.uniform(-1, 1, (8, D))
GRADS_MANY_B = _rng.uniform(-1, 1, (8, D))
DENSE_A, DENSE_B = np.array([0.5, -2.0]), np.array([3.25, 0.0])


@pytest.mark.parametrize("b", [0, 1])
def test_server_view_hides_number_of_real_items(b):
    """3 real items (5 padding slots) against 8 real items: the padding that
    PadOrTrunc adds must be invisible to each server."""
    assert_same_distribution(draw(ITEMS_FEW, GRADS_FEW, DENSE_A, b),
                             draw(ITEMS_MANY, GRADS_MANY, DENSE_B, b))


@pytest.mark.parametrize("b", [0, 1])
def test_server_view_hides_gradients(b):
    """The same 8 items with two different gradient sets (and dense updates)."""
    assert_same_distribution(draw(ITEMS_MANY, GRADS_MANY, DENSE_A, b),
                             draw(ITEMS_MANY, GRADS_MANY_B, DENSE_B, b))


@pytest.mark.parametrize("b", [0, 1])
def test_server_view_hides_items_and_gradients_over_z_2_32(b):
    """The aggregation over Z_2^32 (agg_bits = 32): correction words and dense
    shares are 32-bit, and the view still does not depend on the items, their
    number or the gradients."""
    P32 = SecEmbParams(m=M, d=D, m_prime=MP, n_users=4, dense_size=2, agg_bits=32)
    assert_same_distribution(draw(ITEMS_FEW, GRADS_FEW, DENSE_A, b, params=P32),
                             draw(ITEMS_MANY, GRADS_MANY_B, DENSE_B, b, params=P32))


def test_view_check_detects_the_shared_conversion_leak():
    """Control: the same check on the pre-fix construction fails (padding and
    gradients both leak through cw_agg[:, 0] - cw_ret)."""
    few = draw(ITEMS_FEW, GRADS_FEW, DENSE_A, 0, _LeakyUser, rounds=CONTROL)
    many = draw(ITEMS_MANY, GRADS_MANY, DENSE_A, 0, _LeakyUser, rounds=CONTROL)
    assert min_pvalue_scaled(few, many) < 1e-12
    g_zero = np.zeros((8, D))
    ga = draw(ITEMS_MANY, g_zero, DENSE_A, 1, _LeakyUser, rounds=CONTROL)
    gb = draw(ITEMS_MANY, g_zero + 7 / PARAMS.scale, DENSE_A, 1, _LeakyUser, rounds=CONTROL)
    assert min_pvalue_scaled(ga, gb) < 1e-12


def test_retrieval_carries_no_correction_word():
    """The XOR retrieval sends the path keys alone: the request is exactly one
    path-key batch of m' bodies of 32 + 16 n bytes, so no retrieval
    correction word exists that an aggregation correction word could be
    subtracted from (the leak the control above reproduces)."""
    P = SecEmbParams(m=64, d=4, m_prime=8)
    u = User(P, [3, 17, 40])
    r0, r1 = u.retrieval_request()
    for b, r in ((0, r0), (1, r1)):
        assert isinstance(r.keys, dpf.PathKeyBatch) and r.keys.party == b
        assert len(r.keys.to_bytes()) == 24 + 8 + P.m_prime * (32 + 16 * P.log_domain)


def multi_user_view_server0(grads_pair):
    """Server 0's complete view of a two-user round: both users' requests and
    uploads and server 1's aggregate share (server 0 learns the sum, which
    is the same for both inputs)."""
    P = SecEmbParams(m=16, d=2, m_prime=4, n_users=2)
    table = secemb.encode_table(np.zeros((16, 2)), P)
    s0, s1 = Server(0, P, table), Server(1, P, table)
    items = [[1, 5], [5, 9]]
    users = [User(P, it) for it in items]
    words, ups = [], [{}, {}]
    for uid, u in enumerate(users):
        r0, r1 = u.retrieval_request()
        s0.answer(uid, r0)
        s1.answer(uid, r1)
        words += request_words(r0)
        up0, up1 = u.aggregation_upload(grads_pair[uid])
        ups[0][uid], ups[1][uid] = up0, up1
        words.append(up0.cws.ravel())
    share1 = s1.aggregate(ups[1])
    s0.aggregate(ups[0])
    words.append(share1.sparse.ravel())
    return np.concatenate(words).astype(np.uint64)


def test_server0_view_with_server1_share_depends_only_on_the_sum():
    """Users 0 and 1 rate item 5; moving gradient mass between them keeps the
    sum, so server 0's view (including server 1's share) must not change."""
    a = [np.array([[1.0, 2.0], [0.5, 0.5]]), np.array([[0.25, -1.0], [3.0, 1.0]])]
    e = 1.0 / PARAMS.scale                  # odd fixed-point units, so low bits differ too
    b = [np.array([[1.0, 2.0], [-1.0 + 5 * e, 3 * e]]), np.array([[1.75 - 5 * e, -0.5 - 3 * e], [3.0, 1.0]])]
    va = np.stack([multi_user_view_server0(a) for _ in range(500)])
    vb = np.stack([multi_user_view_server0(b) for _ in range(500)])
    assert_same_distribution(va, vb)


def coalition_view(b, items0, grads0):
    """The joint view of server b and user 1 (SecEmb allows one server to
    collude with any users): server b's messages from both users, everything
    user 1 sent and its path secrets, and, for b = 0, server 1's share."""
    P = SecEmbParams(m=16, d=2, m_prime=4, n_users=2)
    table = secemb.encode_table(np.zeros((16, 2)), P)
    servers = [Server(0, P, table), Server(1, P, table)]
    users = [User(P, items0), User(P, [2, 5, 9])]
    grads = [grads0, np.array([[0.5, 1.0], [2.0, -1.0], [0.25, 0.75]])]
    words, ups = [], [{}, {}]
    for uid, u in enumerate(users):
        reqs = u.retrieval_request()
        for s in (0, 1):
            servers[s].answer(uid, reqs[s])
        finals = [np.frombuffer(x._finals, dtype="<u8") for x in u._round["paths"]]
        up = u.aggregation_upload(grads[uid])
        ups[0][uid], ups[1][uid] = up
        words += request_words(reqs[b]) + [up[b].cws.ravel()]
        if uid == 1:
            words += request_words(reqs[1 - b]) + [up[1 - b].cws.ravel()] + finals
    shares = [servers[s].aggregate(ups[s]) for s in (0, 1)]
    if b == 0:
        words.append(shares[1].sparse.ravel())
    return np.concatenate(words).astype(np.uint64)


@pytest.mark.parametrize("b", [0, 1])
def test_server_and_user_coalition_learns_only_the_honest_users_sum(b):
    """User 0 rates 3 items, or 4 with a zero gradient on the fourth: the same
    contribution to the sum, one padding slot against none.  The coalition of
    server b with user 1 must not tell them apart."""
    g3 = np.array([[1.0, -0.5], [0.125, 2.0], [3.0, 0.0]])
    g4 = np.vstack([g3, np.zeros((1, 2))])
    va = np.stack([coalition_view(b, [1, 5, 12], g3) for _ in range(500)])
    vb = np.stack([coalition_view(b, [1, 5, 12, 7], g4) for _ in range(500)])
    assert_same_distribution(va, vb)


# ------------------------------------------------------------ through the sessions
def session_view_server1(items, grads, dense):
    """Server 1's view of one user's round through the sessions (what the
    deployment runs): every plaintext it opens from the sealed channel (the
    request's path keys, the upload's correction words and dense share) and
    the lengths of the sealed parts; the signed metadata around them (the
    user's name, its fresh ephemeral key and signature) does not depend on
    the inputs."""
    from secea_fast.protocols.secemb import channel
    roster, ids = _SESSION_FED
    s1 = secemb.Server1Session(roster, ids["server1"], run=b"view", min_users=1)
    u = secemb.UserSession(roster, ids["user-0"], run=b"view")
    opened = []
    real_open = channel.SealedChannel.open

    def spy(self, *a):
        out = real_open(self, *a)
        opened.append(out)
        return out
    channel.SealedChannel.open = spy
    try:
        r0, r1 = u.retrieve(1, PARAMS, items, s1.key_message())
        table = np.zeros((M, D), dtype=np.uint64)
        ans, _ = s1.answer(1, PARAMS, table, {"u": r1})
        a0 = Server(0, PARAMS, table).answer(0, secemb.RetrievalRequest.from_bytes(r0)).to_bytes()
        channel.SealedChannel.open = real_open      # the user's own open is not server 1's view
        u.reconstruct(1, a0, ans["u"])
        channel.SealedChannel.open = spy
        _, up1 = u.upload(1, grads, dense)
        s1.aggregate(1, {"u": up1})
    finally:
        channel.SealedChannel.open = real_open
    req = secemb.RetrievalRequest.from_bytes(opened[0])
    up = secemb.AggregationUpload.from_bytes(opened[1])
    words = request_words(req) + [up.cws.ravel(), up.dense.ravel(), np.array([len(r1), len(up1)], dtype=np.uint64)]
    return np.concatenate(words).astype(np.uint64)


def _session_fed():
    from secea_fast.protocols.common.roster import Roster
    return Roster.make([("server1", "server1"), ("user-0", "user")])


_SESSION_FED = _session_fed()


def test_server1_view_through_the_sessions_hides_items_and_gradients():
    """The same view test on what server 1 opens in a round of the sessions
    (sealed channel, signatures, stage checks): 3 real items against 8,
    different gradients and dense updates, identically distributed."""
    va = np.stack([session_view_server1(ITEMS_FEW, GRADS_FEW, DENSE_A) for _ in range(600)])
    vb = np.stack([session_view_server1(ITEMS_MANY, GRADS_MANY_B, DENSE_B) for _ in range(600)])
    assert_same_distribution(va, vb)
