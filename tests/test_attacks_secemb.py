"""Attacks on a SecEmb deployment by an active server 0 (the relay; server 1
runs the package honestly) and by deviating nodes, each refused by the
sessions of secea_fast.protocols.secemb.session.  Every test has a weakened
control (a subclass or a patch used only here) on which the attack
succeeds, so the test has power: it would fail on code without the rule.

1. replay of every stage against the sealed channel (the replayed answer
   stage under a chosen table read every slot's item);
2. aggregation over a subset (one user) and repeated aggregation;
3. key substitution (server 0 hands out its own key as server 1's);
6. timings: PadOrTrunc and each user stage take the same time whatever
   |I_u| (Mann-Whitney), messages have one size, replies carry no seconds;
7. five deviating nodes are dropped, not aborting the round;
8. malformed stage config is a ValueError naming the field.
"""
import secrets
import time

import numpy as np
import pytest

from secea_fast import dpf
from secea_fast.prg import X25519KeyPair
from secea_fast.protocols import secemb
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.common.wire import Reader, Writer
from secea_fast.protocols.secemb import (ProtocolError, SealedChannel, SealError, SecEmbParams, Server0Session,
                                         Server1Session, UserSession)
from secea_fast.protocols.secemb import parties as parties_mod
from secea_fast.protocols.secemb.channel import derive

P = SecEmbParams(m=64, d=3, m_prime=6, n_users=4)
RUN = b"run-1"


def federation(n=3):
    roster, ids = Roster.make([("server1", "server1"), ("server0", "server0")]
                              + [(f"user-{u}", "user") for u in range(n)])
    return roster, ids


def setup(n=3, s1_cls=Server1Session, min_users=2):
    roster, ids = federation(n)
    s1 = s1_cls(roster, ids["server1"], run=RUN, min_users=min_users)
    users = [UserSession(roster, ids[f"user-{u}"], run=RUN) for u in range(n)]
    table = secemb.encode_table(np.random.default_rng(0).normal(size=(P.m, P.d)), P)
    return roster, ids, s1, users, table


ITEMS = [[3, 9, 40], [1, 2, 3, 4], [60, 61]]


def retrieve_all(s1, users, table, rnd=1, items=ITEMS):
    reqs = [u.retrieve(rnd, P, items[i], s1.key_message()) for i, u in enumerate(users)]
    ans, refused = s1.answer(rnd, P, table, {f"user-{i}": r[1] for i, r in enumerate(reqs)})
    assert not refused
    return reqs, ans


def unseal_answer_ct(data):
    r = Reader(data, b"SESA", "answer", 1)
    r.u64(), r.blob()
    return r.blob()


def request_paths(data):
    return secemb.RetrievalRequest.from_bytes(data).keys


# ============================================================ finding 1: replay
class _ForgetfulServer1(Server1Session):
    """Control: server 1 without answer-once and without the channel's
    once-per-tuple rule (what the deployment had)."""

    def answer(self, rnd, params, table, requests):
        if self.current is not None:
            self.current.eph.clear()
        self.channel.used.clear()
        return super().answer(rnd, params, table, requests)


def _replayed_answer_attack(s1_cls):
    """Server 0 replays the answer stage with user 0's sealed request and the
    table Q xor D, D[j] = j; returns the item indices it reads (or the
    refusal)."""
    roster, ids, s1, users, table = setup(s1_cls=s1_cls)
    reqs, ans = retrieve_all(s1, users, table)
    D = np.repeat(np.arange(P.m, dtype=np.uint64)[:, None], P.d, axis=1)
    ans2, refused = s1.answer(1, P, table ^ D, {"again": reqs[0][1]})
    if refused:
        return None, refused
    ct1, ct2 = unseal_answer_ct(ans["user-0"]), unseal_answer_ct(ans2["again"])
    z1 = np.frombuffer(bytes(a ^ b for a, b in zip(ct1, ct2))[:-16], dtype=np.uint8)   # = resp(Q) xor resp(QxD)
    # the response bytes' XOR is the XOR of the shares (headers cancel); shares are the trailing m' d words
    z1 = z1[-P.m_prime * P.d * 8:].view("<u8").reshape(P.m_prime, P.d)
    z0 = dpf.path_xor_rows(request_paths(reqs[0][0]), D)
    return set((z0 ^ z1)[:, 0].tolist()), refused


def test_replayed_answer_stage_is_refused():
    got, refused = _replayed_answer_attack(Server1Session)
    assert got is None and "already answered" in refused["again"]


def test_control_replayed_answer_reads_the_items():
    got, _ = _replayed_answer_attack(_ForgetfulServer1)
    assert set(ITEMS[0]) <= got and len(got) == P.m_prime      # every slot's item index, padding included


def test_replay_of_every_stage_is_refused():
    roster, ids, s1, users, table = setup()
    reqs, ans = retrieve_all(s1, users, table)
    # request replayed to server 1 (same round, another label)
    _, refused = s1.answer(1, P, table, {"x": reqs[1][1]})
    assert "already answered" in refused["x"]
    # answer replayed to the user, after the user took it
    a0 = {}
    s0 = Server0Session(roster, run=RUN)
    s0.begin(1, P, table)
    for i in range(3):
        a0[i] = s0.answer(1, f"user-{i}", reqs[i][0])
        users[i].reconstruct(1, a0[i], ans[f"user-{i}"])
    with pytest.raises(ProtocolError, match="stage"):
        users[0].reconstruct(1, a0[0], ans["user-0"])
    ups = [users[i].upload(1, np.zeros((len(ITEMS[i]), P.d))) for i in range(3)]
    with pytest.raises(ProtocolError, match="stage"):
        users[0].upload(1, np.zeros((3, P.d)))
    # an upload replayed within the aggregate batch
    share, refused = s1.aggregate(1, {"a": ups[0][1], "b": ups[1][1], "c": ups[2][1], "a2": ups[0][1]})
    assert "twice" in refused["a2"]
    # the aggregate stage replayed
    with pytest.raises(ProtocolError, match="already aggregated"):
        s1.aggregate(1, {"a": ups[0][1], "b": ups[1][1]})
    # round 1's request replayed into round 2
    _, refused = s1.answer(2, P, table, {"old": reqs[2][1]})
    assert "round 1, not 2" in refused["old"]
    # a round older than the current one
    with pytest.raises(ProtocolError, match="older"):
        s1.answer(1, P, table, {})


def test_sealed_channel_never_reuses_a_key_and_nonce():
    a, b = X25519KeyPair(), X25519KeyPair()
    ch_a, ch_b = SealedChannel("user-0", RUN), SealedChannel("server1", RUN)
    box = ch_a.seal(a, b.public_bytes, 1, "request", "server1", b"secret")
    with pytest.raises(SealError, match="already used"):
        ch_a.seal(a, b.public_bytes, 1, "request", "server1", b"other")
    assert ch_b.open(b, a.public_bytes, 1, "request", "user-0", box) == b"secret"
    with pytest.raises(SealError, match="already used"):
        ch_b.open(b, a.public_bytes, 1, "request", "user-0", box)
    # a failed open spends the tuple too, and every field of the tuple binds
    ch_c = SealedChannel("server1", RUN)
    for args in ((2, "request", "user-0"), (1, "upload", "user-0"), (1, "request", "user-1")):
        with pytest.raises(SealError, match="failed to open"):
            ch_c.open(b, a.public_bytes, *args, box)
    with pytest.raises(SealError):
        SealedChannel("server1", b"run-2").open(b, a.public_bytes, 1, "request", "user-0", box)
    # the used tuples survive the session's export
    roster, ids, s1, users, table = setup()
    retrieve_all(s1, users, table)
    s1b = Server1Session.import_state(roster, ids["server1"], s1.export_state())
    assert s1b.channel.used == s1.channel.used and s1b.keypair.public_bytes == s1.keypair.public_bytes


def test_control_channel_without_the_rule_reuses_the_keystream():
    """Without the once-per-tuple rule, two seals of one tuple share key and
    nonce: the XOR of the ciphertexts is the XOR of the plaintexts."""
    class Leaky(SealedChannel):
        def _spend(self, *a):
            pass
    a, b = X25519KeyPair(), X25519KeyPair()
    ch = Leaky("server1", RUN)
    p1, p2 = secrets.token_bytes(32), secrets.token_bytes(32)
    c1 = ch.seal(a, b.public_bytes, 1, "answer", "user-0", p1)
    c2 = ch.seal(a, b.public_bytes, 1, "answer", "user-0", p2)
    assert bytes(x ^ y for x, y in zip(c1, c2))[:32] == bytes(x ^ y for x, y in zip(p1, p2))


# ============================================================ finding 2: subset / repeated aggregation
def _aggregate_attack(s1_cls, min_users, subsets):
    """Server 0 asks server 1 for sums over ``subsets`` (lists of user
    indices) of one round; returns server 0's reconstructed sums (or the
    refusal)."""
    roster, ids, s1, users, table = setup(s1_cls=s1_cls, min_users=min_users)
    s0 = Server0Session(roster, run=RUN, min_users=1)
    s0.begin(1, P, table)
    reqs, ans = retrieve_all(s1, users, table)
    grads = [np.full((len(ITEMS[i]), P.d), float(i + 1)) for i in range(3)]
    ups = []
    for i, u in enumerate(users):
        u.reconstruct(1, s0.answer(1, f"user-{i}", reqs[i][0]), ans[f"user-{i}"])
        ups.append(u.upload(1, grads[i]))
    s0.aggregate(1, {f"user-{i}": ups[i][0] for i in range(3)})
    sums = []
    for sub in subsets:
        share, _ = s1.aggregate(1, {f"user-{i}": ups[i][1] for i in sub})
        s0.stage = "reconstruct"          # server 0 is the attacker: it reuses its own session freely
        sums.append(s0.reconstruct(1, share)[0])
    return sums


class _RepeatingServer1(Server1Session):
    """Control: server 1 that aggregates again (no aggregate-once; its
    channel forgets and keeps the retrieval paths)."""

    def aggregate(self, rnd, uploads, noise_sigma=0.0):
        rd = self.current
        paths = rd.paths
        rd.closed = False
        self.channel.used = {k for k in self.channel.used if k[1] != "upload"}
        try:
            return super().aggregate(rnd, uploads, noise_sigma)
        finally:
            rd.paths, rd.closed = paths, False


def test_single_user_aggregate_is_refused():
    with pytest.raises(ProtocolError, match="below min_users = 2"):
        _aggregate_attack(Server1Session, 2, [[1]])


def test_control_single_user_aggregate_reveals_its_gradient():
    (agg,) = _aggregate_attack(Server1Session, 1, [[1]])
    assert set(np.flatnonzero(agg[:, 0])) == set(ITEMS[1]) and (agg[ITEMS[1]] == 2.0).all()


def test_repeated_aggregate_is_refused():
    with pytest.raises(ProtocolError, match="already aggregated"):
        _aggregate_attack(Server1Session, 2, [[0, 1, 2], [0, 1]])


def test_control_repeated_aggregate_reveals_a_gradient_by_difference():
    full, part = _aggregate_attack(_RepeatingServer1, 2, [[0, 1, 2], [0, 1]])
    diff = full - part
    assert set(np.flatnonzero(diff[:, 0])) == set(ITEMS[2]) and (diff[ITEMS[2]] == 3.0).all()


def test_aggregate_covers_exactly_the_answered_users_whose_upload_arrived():
    roster, ids, s1, users, table = setup()
    reqs, ans = retrieve_all(s1, users, table)
    s0 = Server0Session(roster, run=RUN)
    s0.begin(1, P, table)
    ups = []
    for i, u in enumerate(users):
        u.reconstruct(1, s0.answer(1, f"user-{i}", reqs[i][0]), ans[f"user-{i}"])
        ups.append(u.upload(1, np.ones((len(ITEMS[i]), P.d))))
    s0.aggregate(1, {f"user-{i}": ups[i][0] for i in range(3)})
    share, refused = s1.aggregate(1, {"0": ups[0][1], "2": ups[2][1]})
    agg, _, names = s0.reconstruct(1, share)
    assert names == ["user-0", "user-2"] and not refused
    want = np.zeros((P.m, P.d))
    for i in (0, 2):
        want[ITEMS[i]] += 1.0
    assert np.array_equal(agg, want)


# ============================================================ finding 3: key substitution
def _substituted_key_attack(user_cls, how):
    """Server 0 gives user 0 a key of its own as server 1's; returns the item
    indices it reads from the user's sealed request (or raises)."""
    roster, ids, s1, users, table = setup()
    mine = X25519KeyPair()
    if how == "unsigned":
        sig, signer = bytes(64), "server1"
    elif how == "signed-by-server0":
        sig, signer = roster.sign(ids["server0"], "secemb.server1-key", secemb.session.run_binding(RUN),
                                  mine.public_bytes), "server0"
    else:      # server 1's genuine signature of its own key, with server 0's key swapped in
        genuine = Reader(s1.key_message(), b"SEK1", "k", 1)
        genuine.blob(), genuine.blob(), genuine.blob()
        sig, signer = genuine.blob(), "server1"
    fake = (Writer(b"SEK1", 1).blob(secemb.session.run_binding(RUN)).blob(signer.encode())
            .blob(mine.public_bytes).blob(sig).bytes())
    user = user_cls(roster, ids["user-0"], run=RUN)
    r0, sq = user.retrieve(1, P, ITEMS[0], fake)
    r = Reader(sq, b"SESQ", "q", 1)
    rnd, name, eph, _, box = r.u64(), r.blob().decode(), r.blob(), r.blob(), r.blob()
    key, nonce, ad = derive(mine.exchange(eph), secemb.session.run_binding(RUN), rnd, "request", name, "server1")
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    paths1 = request_paths(AESGCM(key).decrypt(nonce, box, ad))
    D = np.repeat(np.arange(P.m, dtype=np.uint64)[:, None], P.d, axis=1)
    return set((dpf.path_xor_rows(request_paths(r0), D) ^ dpf.path_xor_rows(paths1, D))[:, 0].tolist())


class _TrustingUser(UserSession):
    """Control: a user that takes server 1's key from server 0 unchecked."""

    def check_server1_key(self, data):
        r = Reader(data, b"SEK1", "k", 1)
        r.blob(), r.blob()
        return r.blob()


@pytest.mark.parametrize("how", ["unsigned", "signed-by-server0", "server1-signature-other-key"])
def test_substituted_server1_key_is_refused(how):
    with pytest.raises(ProtocolError, match="server 1"):
        _substituted_key_attack(UserSession, how)


def test_control_substituted_key_reads_the_items():
    assert set(ITEMS[0]) <= _substituted_key_attack(_TrustingUser, "unsigned")


def test_server1_counts_only_roster_users():
    roster, ids, s1, users, table = setup()
    other, oids = federation(3)                         # a stranger's identity, same names
    stranger = UserSession(other, oids["user-0"], run=RUN)
    with pytest.raises(ProtocolError):
        stranger.retrieve(1, P, [1], s1.key_message())           # server 1's key does not verify for it
    # a request signed by another roster party (server 0 posing as a user)
    forged = bytearray(users[0].retrieve(1, P, [1, 2], s1.key_message())[1])
    r = Reader(bytes(forged), b"SESQ", "q", 1)
    rnd, _name, eph, sig, box = r.u64(), r.blob(), r.blob(), r.blob(), r.blob()
    for who in ("server0", "server1", "user-1"):
        data = Writer(b"SESQ", 1).u64(rnd).blob(who.encode()).blob(eph).blob(sig).blob(box).bytes()
        _, refused = s1.answer(1, P, table, {"x": data})
        assert ("not a roster party of role 'user'" if who.startswith("server") else "does not verify") \
            in refused["x"], refused


# ============================================================ finding 6: timings and sizes
def _old_pad_or_trunc(items, m, m_prime):
    """Control: the data-dependent PadOrTrunc (truncating is cheap, padding
    builds an m-entry mask)."""
    items = np.asarray(items, dtype=np.int64)
    n = len(items)
    keys = np.frombuffer(secrets.token_bytes(8 * max(n, m_prime)), dtype=np.uint64)
    if n >= m_prime:
        keep = np.sort(np.argpartition(keys[:n], m_prime - 1)[:m_prime]) if n > m_prime else np.arange(n)
        return items[keep].copy(), keep.astype(np.int64)
    unrated = np.ones(m, dtype=bool)
    unrated[items] = False
    pool = np.flatnonzero(unrated)
    pk = np.frombuffer(secrets.token_bytes(8 * len(pool)), dtype=np.uint64)
    pads = pool[np.argpartition(pk, m_prime - n - 1)[:m_prime - n]]
    idx = np.concatenate([items, pads])
    pos = np.concatenate([np.arange(n), -np.ones(m_prime - n, dtype=np.int64)])
    perm = np.argsort(np.frombuffer(secrets.token_bytes(8 * m_prime), dtype=np.uint64))
    return idx[perm], pos[perm]


TP = SecEmbParams(m=3883, d=8, m_prime=40, n_users=4)
TRNG = np.random.default_rng(5)


def _timings(stage, pad, samples=300, TP=TP):
    """Seconds of ``stage`` for users with |I_u| < m' (group a) and >= m'
    (group b), interleaved so that drift hits both alike."""
    from scipy.stats import mannwhitneyu
    roster, ids = Roster.make([("server1", "server1"), ("user-0", "user")])
    s1 = Server1Session(roster, ids["server1"], run=RUN)
    key = s1.key_message()
    table = np.zeros((TP.m, TP.d), dtype=np.uint64)
    s0 = secemb.Server(0, TP, table)
    out = {"a": [], "b": []}
    for k in range(2 * samples):
        g = "a" if k % 2 == 0 else "b"
        n = int(TRNG.integers(1, TP.m_prime)) if g == "a" else int(TRNG.integers(TP.m_prime, 2 * TP.m_prime))
        items = np.sort(TRNG.choice(TP.m, size=n, replace=False))
        if stage == "padortrunc":
            t0 = time.perf_counter()
            pad(items, TP.m, TP.m_prime)
            out[g].append(time.perf_counter() - t0)
            continue
        u = UserSession(roster, ids["user-0"], run=RUN)
        t0 = time.perf_counter()
        r0, r1 = u.retrieve(1, TP, items, key)
        t1 = time.perf_counter()
        if stage == "retrieve":
            out[g].append(t1 - t0)
            continue

        s1b = Server1Session.import_state(roster, ids["server1"], s1.export_state())
        ans, _ = s1b.answer(1, TP, table, {"u": r1})
        a0 = s0.answer(0, secemb.RetrievalRequest.from_bytes(r0)).to_bytes()
        grads = np.zeros((n, TP.d))
        t0 = time.perf_counter()
        u.reconstruct(1, a0, ans["u"])
        u.upload(1, grads)
        out[g].append(time.perf_counter() - t0)
    return mannwhitneyu(out["a"], out["b"]).pvalue


@pytest.fixture
def old_pad(monkeypatch):
    monkeypatch.setattr(parties_mod, "pad_or_trunc_idx", _old_pad_or_trunc)


@pytest.mark.parametrize("stage", ["padortrunc", "retrieve", "upload"])
def test_stage_time_does_not_depend_on_the_number_of_items(stage):
    pytest.importorskip("scipy")
    if stage == "upload":          # no PadOrTrunc in this stage: a smaller table keeps the test fast
        p = _timings(stage, secemb.pad_or_trunc_idx, 100, SecEmbParams(m=512, d=8, m_prime=40, n_users=4))
    else:
        p = _timings(stage, secemb.pad_or_trunc_idx, 200)
    assert p > 1e-6, f"{stage}: Mann-Whitney p = {p:.3g}"


@pytest.mark.parametrize("stage", ["padortrunc", "retrieve"])
def test_control_data_dependent_padortrunc_is_detected(stage, old_pad):
    pytest.importorskip("scipy")
    assert _timings(stage, _old_pad_or_trunc) < 1e-6


def test_message_sizes_do_not_depend_on_the_number_of_items():
    roster, ids, s1, _, table = setup(n=1)
    sizes = set()
    for n in (0, 1, 3, P.m_prime, P.m_prime + 5):
        s1 = Server1Session(roster, ids["server1"], run=RUN, min_users=1)
        s0 = Server0Session(roster, run=RUN, min_users=1)
        s0.begin(1, P, table)
        u = UserSession(roster, ids["user-0"], run=RUN)
        items = list(range(10, 10 + n))
        r0, r1 = u.retrieve(1, P, items, s1.key_message())
        ans, _ = s1.answer(1, P, table, {"u": r1})
        a0 = s0.answer(1, "user-0", r0)
        u.reconstruct(1, a0, ans["u"])
        up0, up1 = u.upload(1, np.ones((n, P.d)))
        share, _ = s1.aggregate(1, {"u": up1})
        sizes.add(tuple(map(len, (r0, r1, a0, ans["u"], up0, up1, share))))
    assert len(sizes) == 1, sizes


# ============================================================ in-process faults through run_round
def test_run_round_survives_transport_faults():
    rng = np.random.default_rng(1)
    Q = rng.normal(size=(40, 3))
    items = [[1, 2], [3, 4, 5], [6], [7, 8, 9, 10]]
    grads = [rng.normal(size=(len(i), 3)) for i in items]
    for kw, bad in ((dict(corrupt=[("upload", "user-1")]), "user-1"),
                    (dict(corrupt=[("request", "user-2")]), "user-2"),
                    (dict(drop=[("reply", "user-0")]), None),
                    (dict(replay=[("answer", None), ("aggregate", "user-3")]), None),
                    (dict(reorder=True), None),
                    (dict(delay=[("upload", "user-0")]), None)):
        net = secemb.Faults(secemb.Loopback(), **kw)
        res = secemb.run_round(Q, items, grads, 4, transport=net)
        if bad:
            assert bad in res.dropped, (kw, res.dropped)
        keep = [u for u in range(4) if f"user-{u}" in res.summed]
        ref = secemb.run_round(Q, [items[u] for u in keep], [grads[u] for u in keep], 4, n_users=4)
        assert np.array_equal(res.aggregate, ref.aggregate), kw


def test_run_round_fails_clearly_below_min_users():
    rng = np.random.default_rng(2)
    Q = rng.normal(size=(40, 3))
    items = [[1, 2], [3, 4, 5], [6]]
    grads = [rng.normal(size=(len(i), 3)) for i in items]
    net = secemb.Faults(secemb.Loopback(), corrupt=[("upload", "user-0"), ("upload", "user-1")])
    with pytest.raises(RuntimeError, match="below min_users = 2"):
        secemb.run_round(Q, items, grads, 4, transport=net)


# ============================================================ findings 7 and 8: bad nodes and config on Flower
def _flower():
    pytest.importorskip("flwr", reason="the flower extra is not installed")
    import test_flower_secemb as tfs
    return tfs


def _tamper(handler, fn):
    """A node that runs ``handler`` and then alters its reply with ``fn(cfg, reply_cfg, blobs)``."""
    def run(cfg, blobs, st):
        rc, out, new, res = handler(cfg, blobs, st)
        rc, out = fn(cfg, dict(rc), list(out))
        return rc, out, new, res
    return run


def _flip(b):
    b = bytearray(b)
    b[len(b) // 2] ^= 1
    return bytes(b)


def _at(stage, change):
    return lambda cfg, rc, out: change(rc, out) if cfg.get("stage") == stage else (rc, out)


def _claims_server1(me):
    def fn(cfg, rc, out):
        if cfg.get("stage") == "hello":
            rc.update(role="server1", server1_key=b"\x00" * 200)
            return rc, out
        return {"stage": cfg.get("stage"), "role": "server1"}, [b"answers from a self-declared server 1"]
    return fn


DEVIATIONS = {
    "unopenable sealed part": lambda me: _at("retrieve", lambda rc, out: (rc, [out[0], secrets.token_bytes(len(out[1]))])),
    "flipped bit in a sealed upload": lambda me: _at("upload", lambda rc, out: (rc, [out[0], _flip(out[1])])),
    "user claiming role server1": _claims_server1,
    "garbage request to server 0": lambda me: _at("retrieve", lambda rc, out: (rc, [b"garbage", out[1]])),
    "reply with one part": lambda me: _at("retrieve", lambda rc, out: (rc, out[:1])),
}


@pytest.mark.parametrize("case", sorted(DEVIATIONS))
def test_deviating_user_is_dropped_not_aborting(case):
    tfs = _flower()
    Q, items, grads = tfs._setup(n_users=4, sizes=[2, 3, 4, 5])
    loop, roster, _, me = tfs.make_loop(items, grads)
    bad = 202
    loop.handlers[bad] = loop._guard(bad, _tamper(tfs.node_handler(me["user-2"], bad, "user", items[2],
                                                                   lambda r: grads[2]),
                                                  DEVIATIONS[case](me["user-2"])))
    res = tfs.runner(loop, roster, 6, n_users=4).run(loop.nodes, Q)
    assert list(res.dropouts) == [bad], res.dropouts
    keep = [0, 1, 3]
    ref = secemb.run_round(Q, [items[u] for u in keep], [grads[u] for u in keep], 6, n_users=4)
    assert np.array_equal(res.aggregate, ref.aggregate)


def test_control_an_honest_node_is_not_dropped():
    """The deviations above are what makes the node a dropout."""
    tfs = _flower()
    Q, items, grads = tfs._setup(n_users=4, sizes=[2, 3, 4, 5])
    loop, roster, _, me = tfs.make_loop(items, grads)
    loop.handlers[202] = loop._guard(202, _tamper(tfs.node_handler(me["user-2"], 202, "user", items[2],
                                                                   lambda r: grads[2]), lambda c, rc, out: (rc, out)))
    res = tfs.runner(loop, roster, 6, n_users=4).run(loop.nodes, Q)
    assert not res.dropouts and len(res.uploaded) == 4


def test_past_tolerance_the_round_fails_naming_the_nodes():
    tfs = _flower()
    Q, items, grads = tfs._setup(n_users=3, sizes=[2, 3, 4])
    loop, roster, _, me = tfs.make_loop(items, grads)
    for x in (200, 201):
        u = x - 200
        loop.handlers[x] = loop._guard(x, _tamper(tfs.node_handler(me[f"user-{u}"], x, "user", items[u],
                                                                   lambda r: None), DEVIATIONS["reply with one part"](None)))
    with pytest.raises(RuntimeError, match=r"below min_users = 2.*node 200 \(user-0\).*node 201 \(user-1\)"):
        tfs.runner(loop, roster, 6).run(loop.nodes, Q)
    # server 1 deviating: a garbage share
    loop, roster, _, me = tfs.make_loop(items, grads)
    loop.handlers[tfs.S1] = loop._guard(tfs.S1, _tamper(tfs.node_handler(me["server1"], tfs.S1, "server1"),
                                                        _at("aggregate", lambda rc, out: (rc, [b"junk"]))))
    with pytest.raises(RuntimeError, match=r"server 1 \(node 100\)"):
        tfs.runner(loop, roster, 6).run(loop.nodes, Q)


def _cfg_error(cfg, blobs=(), role="user"):
    tfs = _flower()
    _, me = tfs.federation(1)
    from secea_fast.flower import secemb as fsecemb
    with pytest.raises(ValueError) as e:
        fsecemb.handle(cfg, list(blobs), None, role, [1, 2], lambda r: np.zeros((2, 3)),
                       me=me["user-0" if role == "user" else "server1"], node_id=1, run=1)
    return str(e.value)


BASE = {"m": 64, "d": 3, "m_prime": 6, "frac_bits": 16, "n_users": 4, "dense_size": 0, "agg_bits": 64}


@pytest.mark.parametrize("cfg,blobs,role,field", [
    (dict(BASE, stage="retrieve"), (), "user", "'round'"),
    (dict(BASE, stage="retrieve", round=-1), (), "user", "'round'"),
    (dict(BASE, stage="retrieve", round=1), (), "user", "'server1_key'"),
    ({k: v for k, v in dict(BASE, stage="retrieve", round=1).items() if k != "m_prime"}, (), "user", "'m_prime'"),
    (dict(BASE, stage="retrieve", round=1, d=-3), (), "user", "'d'"),
    (dict(BASE, stage="upload", round=1), (b"x",), "user", "parts"),
    (dict(BASE, stage="bogus", round=1), (), "user", "'stage'"),
    (dict(BASE, stage="answer", round=1), (b"x",), "server1", "'count'"),
    (dict(BASE, stage="answer", round=1, count=2), (b"x",), "server1", "'count'"),
    (dict(BASE, stage="aggregate", round=1, noise_sigma=-1.0), (), "server1", "'noise_sigma'"),
    (dict(BASE, stage="aggregate", round=True), (), "server1", "'round'"),
])
def test_malformed_config_is_a_value_error_naming_the_field(cfg, blobs, role, field):
    assert field in _cfg_error(cfg, blobs, role)


def test_control_well_formed_config_is_accepted():
    tfs = _flower()
    _, me = tfs.federation(1)
    from secea_fast.flower import secemb as fsecemb
    s1 = Server1Session(me["server1"].roster, me["server1"].identity, run=1)
    rc, out, _, _ = fsecemb.handle(dict(BASE, stage="retrieve", round=1, server1_key=s1.key_message()), [], None,
                                   "user", [1, 2], lambda r: np.zeros((2, 3)), me=me["user-0"], node_id=1, run=1)
    assert len(out) == 2 and "seconds" not in rc


def test_replies_carry_no_timings_and_the_check_has_power():
    """No reply of any stage carries seconds; the same scan finds them in a
    handler that adds them (the deployment's old replies)."""
    tfs = _flower()
    Q, items, grads = tfs._setup(n_users=2)

    def scan(loop):
        return [k for d, _, c, _ in loop.view if d == "up" for k in c if "second" in k or "time" in k]
    loop, roster, _, _ = tfs.make_loop(items, grads)
    tfs.runner(loop, roster, 6).run(loop.nodes, Q)
    assert not scan(loop)
    loop, roster, _, me = tfs.make_loop(items, grads)
    loop.handlers[200] = loop._guard(200, _tamper(tfs.node_handler(me["user-0"], 200, "user", items[0],
                                                                   lambda r: grads[0]),
                                                  lambda c, rc, out: (dict(rc, seconds=0.001), out)))
    tfs.runner(loop, roster, 6).run(loop.nodes, Q)
    assert scan(loop)


def test_reordered_stages_and_other_runs_are_refused():
    roster, ids, s1, users, table = setup()
    with pytest.raises(ProtocolError, match="stage 'idle'"):
        users[0].reconstruct(1, b"", b"")                        # an answer before any request
    with pytest.raises(ProtocolError, match="answered nothing"):
        s1.aggregate(1, {})                                      # an aggregate before any answer
    s0 = Server0Session(roster, run=RUN)
    with pytest.raises(ProtocolError, match="'answer' of round 1"):
        s0.answer(1, "user-0", b"")                              # before the round began
    s0.begin(1, P, table)
    with pytest.raises(ProtocolError, match="'reconstruct' of round 1"):
        s0.reconstruct(1, b"")                                   # a share before the uploads
    other = Server1Session(roster, ids["server1"], run=b"run-2")  # server 1's genuine key of another run
    with pytest.raises(ProtocolError, match="another run"):
        users[0].retrieve(1, P, [1], other.key_message())
