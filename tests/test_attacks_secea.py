"""Attacks on a SecEA deployment, each refused by the protocol's sessions
(secea_fast.protocols.secea.session), and for each a weakened control (a
subclass used only here) that shows the test has power: with the rule taken
out, the attack goes through.

The adversary is the server or the network (it replays, reorders, delays,
substitutes keys) or one deviating client; the transport is the in-memory
loopback with faults as a wrapper around it, which drives the same
sessions as the Flower adapter."""
import numpy as np
import pytest

from secea_fast.prg import X25519KeyPair
from secea_fast.protocols import secea
from secea_fast.protocols.common.roster import Identity, Roster
from secea_fast.protocols.secea.loopback import FaultyLoopback, Loopback, drive
from secea_fast.protocols.secea.messages import Message
from secea_fast.protocols.secea.session import (ClientSession, ProtocolError, RoundFailed, ServerSession,
                                                check_key, signed_key_bytes, static_pair_seed)


def _local(N=4, M=24, d=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"e{i}" for i in range(M)]
    out = []
    for _ in range(N):
        own = rng.choice(M, size=int(rng.integers(M // 4, M // 2)), replace=False)
        out.append({ids[i]: rng.uniform(-1, 1, d) for i in own})
    return out


def _fed(local, cls=ClientSession, auth=True, classes=None):
    names = [f"client-{i}" for i in range(len(local))]
    roster, ids = Roster.make([(x, "client") for x in names]) if auth else (None, {})
    classes = classes or {}
    clients = {x: classes.get(x, cls)(roster, ids.get(x), local[i]) for i, x in enumerate(names)}
    return roster, names, clients


def _server(roster, names, **kw):
    kw.setdefault("d", 3)
    return ServerSession(roster, names, **kw)


def _same(clients, names, expect):
    for x, want in zip(names, expect):
        c = clients[x]
        got = c.client.finish(c.sums, c.counts)
        assert set(got) == set(want)
        for key in want:
            assert np.array_equal(got[key], want[key]), (x, key)


class Recorder:
    """A transport wrapper that keeps every envelope sent to each client."""

    def __init__(self, inner):
        self.inner, self.sent = inner, []

    def __call__(self, outbox):
        for x, (cfg, blobs) in outbox.items():
            self.sent.append((x, dict(cfg), list(blobs)))
        return self.inner(outbox)

    def find(self, name, stage, step=None):
        return [(c, b) for x, c, b in self.sent if x == name and c["stage"] == stage
                and (step is None or c.get("step") == step)]


# ----------------------------------------------------------------- replayed keys
class ResettingSession(ClientSession):
    """Control: takes any keys stage, as the Flower handler did before the
    sessions (a replayed keys stage reset the client, pad guard included)."""

    def _keys(self, cfg, rnd, attempt):
        self.round, self.attempt, self.answered_round = -1, 0, -1
        return super()._keys(cfg, rnd, attempt)


class ResettingOpenSession(ClientSession):
    """Control: takes any peers stage that opens an attempt (the same reset)."""

    def receive(self, cfg, blobs):
        if cfg.get("stage") == "peers" and "salt" in cfg:
            self.round, self.attempt, self.answered_round = -1, 0, -1
        return super().receive(cfg, blobs)


@pytest.mark.parametrize("control", [False, True])
@pytest.mark.parametrize("first", ["keys", "peers"])
def test_replayed_keys_stage_does_not_reset_the_client(control, first):
    """The stage that opens an attempt (keys; peers when k is public and the
    seeds come from the roster) replayed after the round."""
    local = _local()
    cls = {"keys": ResettingSession, "peers": ResettingOpenSession}[first] if control else ClientSession
    roster, names, clients = _fed(local, cls)
    rec = Recorder(Loopback(clients))
    drive(_server(roster, names, k=None if first == "keys" else 24), rec)
    assert [c["stage"] for x, c, _ in rec.sent if x == "client-0"][0] == first
    c0 = clients["client-0"]
    guard = set(c0.client._used)
    assert any(p.startswith("response to") for _, p, _ in guard)      # it answered queries
    (cfg, blobs), = rec.find("client-0", first)[:1]
    if control:
        c0.receive(cfg, blobs)                          # the replay is taken: a fresh client
        assert not any(p.startswith("response to") for _, p, _ in c0.client._used)     # the guard is gone
    else:
        with pytest.raises(ProtocolError, match="replayed"):
            c0.receive(cfg, blobs)
        assert c0.client._used == guard


# ----------------------------------------------------------------- key substitution
@pytest.mark.parametrize("auth", [True, False])
def test_key_substituted_by_the_server_is_refused(auth):
    """The server slips its own X25519 key for client 1 into the peers
    stage sent to client 0.  With the roster the pairwise seeds come from
    the roster keys alone, so the stage carries no key and one slipped in
    is refused.  Control: without the roster (ephemeral keys, no
    signatures) the substituted key is taken and client 0 uploads its union
    terms under it."""
    local = _local()
    roster, names, clients = _fed(local, auth=auth)
    evil = X25519KeyPair()

    def substitute(name, cfg, blobs):
        if name == "client-0" and cfg["stage"] == "peers":
            blobs = list(blobs)
            if auth:
                blobs = [evil.public_bytes] * len(names)
            else:
                blobs[1] = evil.public_bytes + blobs[1][32:]
        return cfg, blobs
    loop = Loopback(clients)
    server = _server(roster, names)
    out = server.start()
    out = server.receive(*FaultyLoopback(loop, tamper=substitute)(out))          # keys
    replies, failed = FaultyLoopback(loop, tamper=substitute)(out)                # peers
    if auth:
        assert "client-0" in failed and "expected 0" in failed["client-0"]
        assert "client-0" not in replies
    else:
        assert not failed and replies["client-0"][1]         # its masked union terms, under the evil key


# ----------------------------------------------------------------- restart after release
class ForgetfulSession(ClientSession):
    """Control: forgets that it answered queries (the rule lived only in
    the Flower server's runner)."""

    def receive(self, cfg, blobs):
        out = super().receive(cfg, blobs)
        self.answered_round = -1
        return out


@pytest.mark.parametrize("control", [False, True])
def test_restart_after_release_is_refused_by_the_client_itself(control):
    """A server (not the package's runner) restarts the round with attempt
    2 after clients answered queries in attempt 1: each client refuses it
    (a querier would learn the lost client's embeddings by difference)."""
    local = _local()
    roster, names, clients = _fed(local, ForgetfulSession if control else ClientSession)
    rec = Recorder(Loopback(clients))
    server = _server(roster, names)
    out = server.start()
    while not any(c.get("step") == 2 for c, _ in out.values()):
        out = server.receive(*rec(out))                       # through step 1: queries answered
    (cfg, blobs), = rec.find("client-0", "keys")
    again = dict(cfg, attempt=2)
    if control:
        clients["client-0"].receive(again, [])
    else:
        with pytest.raises(ProtocolError, match="answered queries"):
            clients["client-0"].receive(again, [])


# ----------------------------------------------------------------- response of another round
class RoundBlindSession(ClientSession):
    """Control: takes protocol messages of any round."""

    def _parse(self, blobs):
        return [Message.from_bytes(b, N=self.client.params.N) for b in blobs]


@pytest.mark.parametrize("control", [False, True])
def test_response_from_another_round_is_refused_not_decoded(control):
    local = _local()
    roster, names, clients = _fed(local, RoundBlindSession if control else ClientSession)

    def other_round(name, cfg, blobs):
        if name == "client-0" and cfg["stage"] == "step":
            out = []
            for b in blobs:
                m = Message.from_bytes(b)
                if m.kind == "response" and m.sender == 1:
                    b = Message(m.kind, m.sender, m.receiver, m.round + 1, m.block, m.data).to_bytes()
                out.append(b)
            blobs = out
        return cfg, blobs
    loop = Loopback(clients)
    drive(_server(roster, names), FaultyLoopback(loop, tamper=other_round))
    refused = [e for x, s, e in loop.refusals if x == "client-0"]
    if control:
        assert not refused                      # decoded (to a failure or a correction), not refused
    else:
        assert refused and "of round 2 in round 1" in refused[0]


# ----------------------------------------------------------------- unchecked decodes
class SilentSession(ClientSession):
    """Control: drops the unchecked report (as the Flower path dropped DecodeResult.checked)."""

    def _step(self, cfg, blobs, step):
        reply, out = super()._step(cfg, blobs, step)
        reply.pop("unchecked", None)
        self.unchecked = set()
        return reply, out


@pytest.mark.parametrize("control", [False, True])
def test_unchecked_decode_is_reported_or_refused(control):
    """N = 5 with the default K leaves no redundancy: every block is
    decoded unchecked.  The server's result lists them; with
    require_checked the clients refuse them (failed blocks)."""
    local = _local(N=5)
    roster, names, clients = _fed(local, SilentSession if control else ClientSession)
    res = drive(_server(roster, names), Loopback(clients))
    if control:
        assert res.unchecked == []
        return
    assert sorted(x for x, _ in res.unchecked) == names and not res.failed_blocks
    roster, names, clients = _fed(local)
    res = drive(_server(roster, names, require_checked=True), Loopback(clients))
    assert sorted(x for x, _ in res.failed_blocks) == names
    assert all("no redundancy" in str(e) for c in clients.values() for e in c.errors.values())


# ----------------------------------------------------------------- deviating nodes
def _deviant(case):
    class Deviant(ClientSession):
        def receive(self, cfg, blobs):
            reply, out = super().receive(cfg, blobs)
            stage = cfg["stage"]
            if case == "a key part" and stage == "keys":
                out = [bytes(32)]           # a key where the roster gives the seeds: nothing is due
            elif case == "no key" and stage == "keys":
                out = []
            elif case == "huge k" and stage == "keys":
                reply = dict(reply, k=10 ** 6)
            elif case == "no union upload" and stage == "peers":
                out = []
            elif case == "share under another index" and stage == "step" and cfg["step"] == 0:
                m = Message.from_bytes(out[0])
                out[0] = Message(m.kind, (self.client.index + 1) % self.client.params.N, m.receiver, m.round,
                                 m.block, m.data).to_bytes()
            elif case == "garbage blob" and stage == "step" and cfg["step"] == 0:
                out[0] = np.random.default_rng(1).bytes(len(out[0]))
            return reply, out
    return Deviant


CASES = ["share under another index", "garbage blob", "a key part", "huge k", "no union upload"]


@pytest.mark.parametrize("case", CASES)
def test_deviating_node_is_dropped_not_aborting(case):
    local = _local(N=6)
    roster, names, clients = _fed(local, classes={"client-2": _deviant(case)})
    res = drive(_server(roster, names), Loopback(clients))
    assert list(res.dropped) == ["client-2"] and res.attempts == 2
    rest = names[:2] + names[3:]
    _same(clients, rest, secea.aggregate(local[:2] + local[3:]))


class TrustingServer(ServerSession):
    """Control: relays what a client sends without checking it fits the stage."""

    def _check_step(self, x, blobs, step, party, node_of, live, params, M, B, kn, emitted_now, expect_resp,
                    excused):
        try:
            return [Message.from_bytes(b) for b in blobs]
        except ValueError as exc:              # what the runner did: the round aborts
            raise RuntimeError(f"round aborted: {exc}") from None


@pytest.mark.parametrize("case", ["share under another index", "garbage blob"])
def test_deviating_node_control_without_the_checks(case):
    """Without the server's checks the deviant is not the one dropped:
    the round fails or drops honest clients."""
    local = _local(N=6)
    roster, names, clients = _fed(local, classes={"client-2": _deviant(case)})
    try:
        res = drive(TrustingServer(roster, names, d=3), Loopback(clients))
    except (ValueError, RuntimeError):
        return
    assert list(res.dropped) != ["client-2"]


def test_past_the_tolerance_the_round_fails_naming_the_nodes():
    local = _local(N=3)
    roster, names, clients = _fed(local, classes={"client-1": _deviant("a key part")})
    with pytest.raises(RoundFailed, match=r"2 clients remain.*client-1 \(keys of attempt 1: 1 parts, expected 0"):
        drive(_server(roster, names), Loopback(clients))


# ----------------------------------------------------------------- malformed config
def _session_before_step0():
    """Client 0 after keys and peers, and the step-0 envelope the server sends it."""
    local = _local(N=3)
    roster, names, clients = _fed(local)
    server = _server(roster, names)
    loop = Loopback(clients)
    out = server.receive(*loop(server.start()))          # keys -> peers
    out = server.receive(*loop(out))                       # peers -> step 0
    cfg, blobs = out["client-0"]
    return clients["client-0"], cfg, blobs


@pytest.mark.parametrize("change,field", [
    (lambda c: c.pop("N"), "'N' is missing"),
    (lambda c: c.pop("B"), "'B' is missing"),
    (lambda c: c.update(round=-1), "'round' = -1"),
    (lambda c: c.update(step=-1), "'step' = -1"),
    (lambda c: c.update(emit=[99]), "'emit' = 99"),
    (lambda c: c.update(emit=[-1]), "'emit' = -1"),
    (lambda c: c.update(decode=[-1]), "'decode' = -1"),
])
def test_malformed_config_is_a_value_error_naming_the_field(change, field):
    s, cfg, blobs = _session_before_step0()
    cfg = dict(cfg)
    change(cfg)
    with pytest.raises(ValueError, match=field):
        s.receive(cfg, blobs)


def test_too_few_blobs_is_a_value_error_naming_the_field():
    local = _local(N=3)
    roster, names, clients = _fed(local, auth=False)        # the peers stage relays the N keys
    server = _server(roster, names)
    out = server.receive(*Loopback(clients)(server.start()))          # keys -> peers
    cfg, blobs = out["client-0"]
    with pytest.raises(ValueError, match="'blobs' has 1 keys, expected N = 3"):
        clients["client-0"].receive(cfg, blobs[:1])


def test_malformed_config_control_well_formed_is_taken():
    """Control: the same session takes the well-formed step 0."""
    s, cfg, blobs = _session_before_step0()
    reply, out = s.receive(cfg, blobs)
    assert reply["stage"] == "step" and out


# ----------------------------------------------------------------- no timings in replies
def _timing_fields(cfg):
    return [k for k, v in cfg.items() if "second" in k or k.startswith("t_") or isinstance(v, float)]


class TimedSession(ClientSession):
    """Control: puts its compute seconds in its replies (as the Flower handler did)."""

    def receive(self, cfg, blobs):
        reply, out = super().receive(cfg, blobs)
        return dict(reply, t_union=float(self.seconds.get("union", 0.0))), out


@pytest.mark.parametrize("control", [False, True])
def test_no_reply_carries_a_timing(control):
    local = _local()
    roster, names, clients = _fed(local, TimedSession if control else ClientSession)
    loop = Loopback(clients)
    replies = []

    def keep(outbox):
        r, f = loop(outbox)
        replies.extend(cfg for cfg, _ in r.values())
        return r, f
    drive(_server(roster, names), keep)
    found = [k for cfg in replies for k in _timing_fields(cfg)]
    assert bool(found) == control
    assert all(c.seconds for c in clients.values())        # the node keeps them itself


def test_signed_key_binds_round_attempt_and_party_set():
    """A key signed for one attempt (or party set) does not verify in another."""
    roster, ids = Roster.make([(f"client-{i}", "client") for i in range(3)])
    names = list(roster.names())
    pub = X25519KeyPair().public_bytes
    blob = signed_key_bytes(roster, ids["client-1"], 1, 1, 1, names, pub)
    assert check_key(roster, blob, 1, 1, 1, names) == pub
    for rnd, att, parties in ((2, 1, names), (1, 2, names), (1, 1, names[::-1])):
        with pytest.raises(ProtocolError, match="does not verify"):
            check_key(roster, blob, rnd, att, 1, parties)


# ----------------------------------------------------------------- static pairwise seeds
class SaltOnlySession(ClientSession):
    """Control: derives a_{n,v} from the static secret and the salt alone,
    binding neither round nor attempt nor party set."""

    def _pair_seed(self, salt, rnd, attempt, index, peer, parties):
        return static_pair_seed(self.roster, self.identity, salt, 0, 0, index, peer, sorted(parties))


def _public_only_seed(roster, salt, rnd, attempt, index, peer, parties):
    """Control: a 'pair seed' from public values only (the roster keys, the
    salt and the transcript): what a derivation without the static-static
    DH gives, which anyone holding the roster computes."""
    import hashlib
    a, b = sorted((parties[index], parties[peer]))
    return hashlib.sha256(roster.entries[a].public + roster.entries[b].public + salt
                          + f"{rnd}/{attempt}".encode()).digest()


def _open_round(cls, roster, ids, local, names, rnd, salt, attempt=1):
    """A client session opened by a peers stage of round ``rnd`` with ``salt``."""
    s = cls(roster, ids[names[0]], local[0])
    cfg = {"stage": "peers", "round": rnd, "attempt": attempt, "N": len(names), "d": 3, "T": 1, "K": 0,
           "precision": 8, "bound": 100.0, "party": 0, "parties": list(names), "salt": salt, "k": 24,
           "psu": True}
    s.receive(cfg, [])
    return s.client._seeds


@pytest.mark.parametrize("control", [False, True])
def test_replayed_salt_gives_other_seeds(control):
    """A deviating server replays round 1's salt in round 2 (or in the same
    round under a reordered party set): the pairwise seeds differ, so no
    one-time pad is reused.  Control: a derivation that binds only the
    salt gives round 2 the seeds of round 1 (every pad reused)."""
    local = _local(N=3)
    names = [f"client-{i}" for i in range(3)]
    roster, ids = Roster.make([(x, "client") for x in names])
    cls = SaltOnlySession if control else ClientSession
    salt = bytes(range(32))
    first = _open_round(cls, roster, ids, local, names, 1, salt)
    again = _open_round(cls, roster, ids, local, names, 2, salt)
    retry = _open_round(cls, roster, ids, local, names, 1, salt, attempt=2)
    if control:
        assert first == again == retry
    else:
        assert set(first) == {1, 2} and all(first[v] != again[v] != retry[v] != first[v] for v in first)
        # the two clients of a pair agree, and another pair (same salt) has another seed
        peer = static_pair_seed(roster, ids["client-1"], salt, 1, 1, 1, 0, names)
        assert peer == first[1] and first[1] != first[2]


@pytest.mark.parametrize("control", [False, True])
def test_stranger_cannot_derive_the_seeds(control):
    """A node not in the roster (or the server, which holds every public
    key) cannot compute a roster pair's seed: it lacks both private keys.
    It cannot open a session either.  Control: a derivation from public
    values only, which the stranger recomputes."""
    names = [f"client-{i}" for i in range(3)]
    roster, ids = Roster.make([(x, "client") for x in names])
    salt = bytes(32)
    stranger = Identity("client-1")            # claims client 1's name with a key of its own
    with pytest.raises(ValueError, match="not in the roster"):
        ClientSession(roster, Identity("mallory"), _local(N=1)[0])
    if control:
        real = _public_only_seed(roster, salt, 1, 1, 0, 1, names)
        forged = _public_only_seed(roster, salt, 1, 1, 1, 0, names)
        assert forged == real
        return
    real = static_pair_seed(roster, ids["client-0"], salt, 1, 1, 0, 1, names)
    assert static_pair_seed(roster, ids["client-1"], salt, 1, 1, 1, 0, names) == real
    forged = static_pair_seed(roster, stranger, salt, 1, 1, 1, 0, names)
    assert forged != real
    with pytest.raises(ValueError, match="not in the roster"):
        static_pair_seed(roster, ids["client-0"], salt, 1, 1, 0, 1, ["client-0", "mallory", "client-2"])


def test_round_without_keys_stage_is_exact():
    """With a public bound k and the roster, the round opens with peers (no
    keys stage) and every client's result equals the plaintext aggregate."""
    local = _local(N=4)
    roster, names, clients = _fed(local)
    rec = Recorder(Loopback(clients))
    res = drive(_server(roster, names, k=24), rec)
    assert not rec.find("client-0", "keys") and res.attempts == 1
    assert [c["stage"] for x, c, _ in rec.sent if x == "client-0"][0] == "peers"
    _same(clients, names, secea.aggregate(local))


@pytest.mark.parametrize("ledger", [True, False])
def test_replayed_run_is_refused_by_the_salt_ledger(ledger):
    """A deviating server replays a whole past run to a node (same round,
    attempt and salt) once that run's session state is gone: with the
    node's salt ledger the client refuses the opening stage.  Control:
    without a ledger the fresh session takes it and derives the past run's
    seeds again (its one-time pads would repeat)."""
    from secea_fast.protocols.secea.session import SaltLedger
    local = _local(N=3)
    names = [f"client-{i}" for i in range(3)]
    roster, ids = Roster.make([(x, "client") for x in names])
    salts = SaltLedger() if ledger else None
    clients = {x: ClientSession(roster, ids[x], local[i], salts=salts if x == "client-0" else None)
               for i, x in enumerate(names)}
    rec = Recorder(Loopback(clients))
    drive(_server(roster, names, k=24), rec)
    (cfg, blobs), = rec.find("client-0", "peers")[:1]
    past = dict(clients["client-0"].client._seeds)
    fresh = ClientSession(roster, ids["client-0"], local[0], salts=salts)     # the next run's session
    if ledger:
        with pytest.raises(ProtocolError, match="'salt' was used before"):
            fresh.receive(cfg, blobs)
        assert fresh.client is None
    else:
        fresh.receive(cfg, blobs)
        assert fresh.client._seeds == past
