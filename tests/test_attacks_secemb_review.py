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

