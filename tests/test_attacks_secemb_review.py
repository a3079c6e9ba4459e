"""A second look at SecEmb's deployment by an active server 0 (the relay,
which also sets every config field server 1 and the users receive), each
attack refused by the sessions of secea_fast.protocols.secemb.session, each
with a weakened control (a subclass or patch used only here) on which the
attack succeeds, so the test has power.

1. server 0 asks server 1 for no Gaussian noise (Mai et al. 2025, SecEmb,
   Appendix G: each server adds its own, so the aggregate server 0
   reconstructs is differentially private): server 1 keeps its own sigma.
"""
import numpy as np

from secea_fast.protocols import secemb
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.secemb import SecEmbParams, Server0Session, Server1Session, UserSession

P = SecEmbParams(m=64, d=3, m_prime=6, n_users=4)
RUN = b"run-review"
ITEMS = [[3, 9, 40], [1, 2, 3, 4], [60, 61]]


def federation(n=3):
    return Roster.make([("server1", "server1"), ("server0", "server0")] + [(f"user-{u}", "user") for u in range(n)])


def one_round(s1_factory, grads, *, params=P, items=ITEMS, s1_sigma_asked=0.0):
    """A round with server 0 following the protocol except for the fields it
    sets; returns server 0's reconstructed aggregate."""
    roster, ids = federation(len(items))
    s1 = s1_factory(roster, ids["server1"])
    users = [UserSession(roster, ids[f"user-{u}"], run=RUN) for u in range(len(items))]
    table = secemb.encode_table(np.random.default_rng(0).normal(size=(params.m, params.d)), params)
    s0 = Server0Session(roster, run=RUN, min_users=1)
    s0.begin(1, params, table)
    reqs = [u.retrieve(1, params, items[i], s1.key_message()) for i, u in enumerate(users)]
    ans, refused = s1.answer(1, params, table, {f"user-{i}": r[1] for i, r in enumerate(reqs)})
    assert not refused
    ups = []
    for i, u in enumerate(users):
        u.reconstruct(1, s0.answer(1, f"user-{i}", reqs[i][0]), ans[f"user-{i}"])
        ups.append(u.upload(1, grads[i]))
    s0.aggregate(1, {f"user-{i}": up[0] for i, up in enumerate(ups)})
    share, _ = s1.aggregate(1, {f"user-{i}": up[1] for i, up in enumerate(ups)}, s1_sigma_asked)
    return s0.reconstruct(1, share)[0]


# ============================================================ 1: server 1's noise
GRADS = [np.full((len(it), P.d), 1.0) for it in ITEMS]
EXACT = sum(np.bincount(it, minlength=P.m)[:, None] * np.ones((1, P.d)) for it in ITEMS)


class _ObedientServer1(Server1Session):
    """Control: server 1 that adds the noise server 0 asks for (what the
    deployment did: the aggregate stage's ``noise_sigma`` field)."""

    def aggregate(self, rnd, uploads, noise_sigma=None):
        self.noise_sigma = float(noise_sigma or 0.0)
        return super().aggregate(rnd, uploads, noise_sigma)


def test_server0_cannot_turn_off_server1s_noise():
    agg = one_round(lambda r, me: Server1Session(r, me, run=RUN, noise_sigma=50.0), GRADS, s1_sigma_asked=0.0)
    assert np.abs(agg - EXACT).max() > 10.0


def test_control_server1_that_obeys_server0_gives_the_exact_sum():
    agg = one_round(lambda r, me: _ObedientServer1(r, me, run=RUN, noise_sigma=50.0), GRADS, s1_sigma_asked=0.0)
    assert np.array_equal(agg, EXACT)


def test_server0_may_ask_for_more_noise_and_the_state_keeps_sigma():
    agg = one_round(lambda r, me: Server1Session(r, me, run=RUN), GRADS, s1_sigma_asked=50.0)
    assert np.abs(agg - EXACT).max() > 10.0
    roster, ids = federation()
    s1 = Server1Session(roster, ids["server1"], run=RUN, noise_sigma=2.5)
    assert Server1Session.import_state(roster, ids["server1"], s1.export_state()).noise_sigma == 2.5


# ============================================================ 2: m below a user's item
def _probe_max_item(user_cls, m):
    """Server 0 sends each user a retrieve stage whose m is its guess: a user
    whose largest item id is >= m would fail.  Returns, per user, the sizes of
    its two requests or the error."""
    roster, ids = federation()
    s1 = Server1Session(roster, ids["server1"], run=RUN)
    params = SecEmbParams(m=m, d=P.d, m_prime=P.m_prime, n_users=P.n_users)
    out = []
    for u, items in enumerate([[3, 9, 20], [3, 9, 40]]):
        user = user_cls(roster, ids[f"user-{u}"], run=RUN)
        try:
            out.append(tuple(len(x) for x in user.retrieve(1, params, items, s1.key_message())))
        except ValueError as exc:
            out.append(str(exc))
    return out


class _RangeCheckingUser(UserSession):
    """Control: a user that refuses its items outside server 0's m (what the
    deployment did: ``User(params, items)`` raised)."""

    def retrieve(self, rnd, params, items, server1_key):
        secemb.User(params, items)
        return super().retrieve(rnd, params, items, server1_key)


def test_server0_cannot_probe_a_users_largest_item_with_m():
    a, b = _probe_max_item(UserSession, 32)
    assert isinstance(a, tuple) and a == b


def test_control_range_checking_user_tells_its_largest_item():
    a, b = _probe_max_item(_RangeCheckingUser, 32)
    assert isinstance(a, tuple) and "item ids must be in [0, 32)" in b


def test_items_beyond_m_are_truncated_away_and_the_round_completes():
    params = SecEmbParams(m=32, d=P.d, m_prime=P.m_prime, n_users=P.n_users)
    items = [[3, 9, 40], [1, 2, 3, 4], [60, 61]]
    grads = [np.full((len(it), P.d), 1.0) for it in items]
    agg = one_round(lambda r, me: Server1Session(r, me, run=RUN, min_users=1), grads, params=params, items=items)
    want = np.zeros((32, P.d))
    for it in items:
        for j in it:
            if j < 32:
                want[j] += 1.0
    assert np.array_equal(agg, want)


# ============================================================ 3: a range that fails on large gradients
def _probe_gradient(monkeypatch=None):
    """Server 0 picks frac_bits and n_users so R_u is tiny (and could pick a
    table that makes rows large): does a user's upload fail on its data?
    Returns, per gradient magnitude, the upload sizes or the error."""
    tight = SecEmbParams(m=P.m, d=P.d, m_prime=P.m_prime, frac_bits=30, n_users=1 << 20, agg_bits=64)
    roster, ids = federation(1)
    out = []
    for g in (1e-3, 1e5, np.inf, np.nan):
        s1 = Server1Session(roster, ids["server1"], run=RUN)
        user = UserSession(roster, ids["user-0"], run=RUN)
        table = secemb.encode_table(np.zeros((P.m, P.d)), tight)
        s0 = Server0Session(roster, run=RUN)
        s0.begin(1, tight, table)
        r0, r1 = user.retrieve(1, tight, ITEMS[0], s1.key_message())
        ans, _ = s1.answer(1, tight, table, {"u": r1})
        user.reconstruct(1, s0.answer(1, "user-0", r0), ans["u"])
        try:
            out.append(tuple(len(x) for x in user.upload(1, np.full((3, P.d), g), dense=None)))
        except ValueError as exc:
            out.append(str(exc))
    return out


def test_a_large_gradient_is_saturated_not_refused():
    sizes = _probe_gradient()
    assert all(isinstance(s, tuple) for s in sizes) and len(set(sizes)) == 1


def test_control_unsaturated_user_fails_on_its_data(monkeypatch):
    from secea_fast.protocols.secemb import session
    monkeypatch.setattr(session, "saturate", lambda x, params: np.asarray(x, dtype=np.float64))
    small, large, inf, nan = _probe_gradient()
    assert isinstance(small, tuple) and "per-user range" in large and "NaN or infinity" in inf


def test_saturate_stays_within_the_per_user_range():
    for p in (P, SecEmbParams(m=4, d=1, m_prime=1, frac_bits=0, n_users=3, agg_bits=64),
              SecEmbParams(m=4, d=1, m_prime=1, frac_bits=40, n_users=7, agg_bits=32)):
        x = secemb.session.saturate([1e300, -1e300, np.inf, -np.inf, np.nan, 0.5], p)
        q = np.rint(x * p.scale)
        assert np.abs(q).max() <= p.user_bound_fixed and x[4] == 0.0
        secemb.params.encode_agg(x, p)


def test_a_users_own_bad_items_fail_whatever_m_is():
    import pytest
    roster, ids = federation()
    s1 = Server1Session(roster, ids["server1"], run=RUN)
    for m in (32, 64):
        params = SecEmbParams(m=m, d=P.d, m_prime=P.m_prime, n_users=P.n_users)
        for items in ([40, 40], [-1, 3]):
            with pytest.raises(ValueError, match="duplicate or negative"):
                UserSession(roster, ids["user-0"], run=RUN).retrieve(1, params, items, s1.key_message())


# ============================================================ 4: state that grows with the run
def test_saved_sessions_hold_one_round_and_old_rounds_stay_refused():
    """Every node exports its session at every stage; with the used channel
    tuples of every past round kept, server 1's state grew by three tuples
    per user per round for the whole run.  Older rounds are refused by the
    round rule, so only the current round's tuples are kept."""
    import pytest
    from secea_fast.protocols.secemb import ProtocolError
    roster, ids = federation()
    s1 = Server1Session(roster, ids["server1"], run=RUN, min_users=1)
    users = [UserSession(roster, ids[f"user-{u}"], run=RUN) for u in range(3)]
    table = secemb.encode_table(np.zeros((P.m, P.d)), P)
    sizes, old = [], None
    for rnd in range(1, 6):
        s0 = Server0Session(roster, run=RUN, min_users=1)
        s0.begin(rnd, P, table)
        reqs = [u.retrieve(rnd, P, ITEMS[i], s1.key_message()) for i, u in enumerate(users)]
        old = old or reqs[0][1]
        ans, _ = s1.answer(rnd, P, table, {f"user-{i}": r[1] for i, r in enumerate(reqs)})
        ups = [u.upload(rnd, np.zeros((len(ITEMS[i]), P.d))) if u.reconstruct(
            rnd, s0.answer(rnd, f"user-{i}", reqs[i][0]), ans[f"user-{i}"]) is not None else None
            for i, u in enumerate(users)]
        s1.aggregate(rnd, {f"user-{i}": up[1] for i, up in enumerate(ups)})
        sizes.append((len(s1.export_state()), len(users[0].export_state())))
    assert sizes[1] == sizes[-1]
    with pytest.raises(ProtocolError, match="older than the current round"):
        s1.answer(1, P, table, {"u": old})
    with pytest.raises(ProtocolError, match="already started"):
        users[0].retrieve(2, P, ITEMS[0], s1.key_message())
