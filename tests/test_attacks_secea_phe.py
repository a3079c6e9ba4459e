"""Attacks on SecEA-PHE (Tang, Zhu, Li, Sun 2022, Sec. III-B).

First its Paillier keys (responses travel under the querier's key, and
the keys reach the responders through the server).  The adversary is the relaying server or network: it
hands a responder its own Paillier key in place of the querier's, so that
the responder's answer A_{v,n,e} is encrypted under a key the adversary can
open.  Every key is signed under the roster and checked by every receiver
(secea_fast.protocols.secea_phe.keys), so the substitution is refused; the
weakened control runs the same key stage without a roster (keys unsigned)
and shows the attack then goes through: the adversary decrypts the
responder's plain answer.

Then the rules SecEA-PHE has from SecEA's sessions, which it runs with the
Paillier layer: a replayed keys stage, a restart after release, a
substituted key in the peers stage, a response of another round, a
deviating responder; each refused by the sessions, each with a weakened
control (a subclass or patch used only here) that lets the attack through."""
import numpy as np
import pytest

from secea_fast import paillier
from secea_fast.prg import X25519KeyPair
from secea_fast.protocols import _secea_local, secea
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.secea import SecEAParams
from secea_fast.protocols.common.wire import Writer
from secea_fast.protocols.secea.loopback import FaultyLoopback, Loopback, drive
from secea_fast.protocols.secea.session import ClientSession, ProtocolError, ServerSession
from secea_fast.protocols.secea_phe import CipherMessage, PaillierLayer
from secea_fast.protocols.secea_phe import Client, PHEParams, Server
from secea_fast.protocols.secea_phe.keys import exchange_keys, party_names, signed_paillier_key

BITS = 512


@pytest.fixture(scope="module")
def keys():
    return [paillier.keygen(BITS, insecure=True) for _ in range(4)]   # 3 clients + the adversary


def _local(N=3, M=12, d=2, seed=0):
    rng = np.random.default_rng(seed)
    ids = [f"e{i}" for i in range(M)]
    return [{ids[i]: rng.uniform(-1, 1, d) for i in rng.choice(M, 5, replace=False)} for _ in range(N)]


def _parties(local, keys, auth):
    N = len(local)
    params = PHEParams(SecEAParams(N=N, d=2, T=1), key_bits=BITS, insecure_keys=True)
    clients = [Client(n, params, list(local[n]), keys[n]) for n in range(N)]
    for c in clients:
        c.set_peer_keys([x.public_key for x in clients])
    roster, ids = Roster.make([(x, "client") for x in party_names(N)]) if auth else (None, {})
    return params, clients, Server(params), roster, ids


def _substitute(roster, ids, adversary_pk, rnd=1, victim=1, querier=0, signer=None):
    """The relay hands ``victim`` the adversary's key as the querier's, signed
    by ``signer`` (a colluding roster member) or unsigned."""
    names = party_names(3)

    def tamper(receiver, blobs):
        if receiver == victim:
            ident = None if signer is None else ids[names[signer]]
            blobs[3 + querier] = signed_paillier_key(roster if signer is not None else None, ident, rnd,
                                                 querier, names, adversary_pk)
        return blobs
    return tamper


@pytest.mark.parametrize("signer", [None, 2])
def test_substituted_paillier_key_refused(keys, signer):
    """Unsigned, or signed by another client of the roster: the responder
    refuses the querier's key, naming the querier; no query is answered."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    with pytest.raises(ProtocolError, match="Paillier key of client 0") as exc:
        exchange_keys(clients, server, roster, ids, 1,
                      tamper=_substitute(roster, ids, keys[3][0], signer=signer))
    assert exc.value.sender == 0


def test_paillier_key_of_another_round_refused(keys):
    """The querier's genuine signed key of round 1, replayed in round 2."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    old = signed_paillier_key(roster, ids["client-0"], 1, 0, party_names(3), keys[0][0])

    def replay(receiver, blobs):
        blobs[3] = old
        return blobs
    with pytest.raises(ProtocolError, match="Paillier key of client 0"):
        exchange_keys(clients, server, roster, ids, 2, tamper=replay)


def test_substituted_x25519_key_refused(keys):
    """The pairwise-seed key travels in the same stage under SecEA's own
    signature rule: a relay's X25519 key in place of client 0's is refused."""
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    mitm = X25519KeyPair()

    def swap(receiver, blobs):
        if receiver == 1:
            blobs[0] = mitm.public_bytes + blobs[0][32:]       # the key replaced, client 0's signature kept
        return blobs
    with pytest.raises(ProtocolError, match="key of client 0"):
        exchange_keys(clients, server, roster, ids, 1, tamper=swap)
    # weakened control (no roster: keys unsigned): the relay's key is taken,
    # so client 1's pairwise seed with client 0 is one the relay can compute
    _, clients, server, _, _ = _parties(local, keys, auth=False)
    exchange_keys(clients, server, None, {}, 1, tamper=swap)


def test_genuine_keys_pass(keys):
    local = _local()
    _, clients, server, roster, ids = _parties(local, keys, auth=True)
    exchange_keys(clients, server, roster, ids, 1)
    assert all(server.key(n) == keys[n][0] for n in range(3))


def test_control_unsigned_keys_let_the_adversary_read_a_response(keys):
    """Weakened control (no roster: keys unsigned): the substitution is
    accepted, and the adversary decrypts client 1's answer to client 0's
    query -- the plain A_{1,0,e} that eq. (13) exists to hide."""
    local = _local()
    params, clients, server, _, _ = _parties(local, keys, auth=False)
    exchange_keys(clients, server, None, {}, 1, tamper=_substitute(None, {}, keys[3][0]))
    _secea_local.union_and_share(clients, server, local, 1, {}, {}, {})
    members = clients[0].blocks(4)[0]
    queries = clients[0].iter_queries(1, 0, members)
    next(queries)
    q = next(queries)                                # client 0's query to client 1
    A = clients[1].answer_plain(q)
    ct = clients[1].encrypt_response(A, q)
    assert ct.pk == keys[3][0]                       # under the adversary's key
    vals = keys[3][1].decrypt_packed(ct.cts, params.slot_bits, ct.rows * params.row_values)
    got = np.array(vals, dtype=object).reshape(ct.rows, params.row_values)[:, :params.base.sub]
    assert (got.astype(np.uint64) == A).all()


# ================================================================= through SecEA's sessions
# SecEA-PHE runs as SecEA's sessions with the Paillier layer
# (secea_fast.protocols.secea_phe.layer): the attacks on SecEA's rules below
# are refused by the same sessions, each with a weakened control (a subclass
# or patch used only here) that lets the attack through.


@pytest.fixture(scope="module")
def many_keys():
    return [paillier.keygen(BITS, insecure=True) for _ in range(6)]


def _sessions(local, keys, cls=ClientSession, auth=True, classes=None):
    names = party_names(len(local))
    roster, ids = Roster.make([(x, "client") for x in names]) if auth else (None, {})
    classes = classes or {}
    clients = {x: classes.get(x, cls)(roster, ids.get(x), local[i],
                                      layer=PaillierLayer(BITS, insecure_keys=True, keypair=keys[i]))
               for i, x in enumerate(names)}
    return roster, names, clients


def _phe_server(roster, names, cls=ServerSession, **kw):
    return cls(roster, names, d=2, layer=PaillierLayer(BITS, insecure_keys=True), **kw)


class Recorder:
    """A transport wrapper that keeps every envelope sent and every reply."""

    def __init__(self, inner):
        self.inner, self.sent, self.replies = inner, [], []

    def __call__(self, outbox):
        for x, (cfg, blobs) in outbox.items():
            self.sent.append((x, dict(cfg), list(blobs)))
        replies, failed = self.inner(outbox)
        for x, (cfg, blobs) in replies.items():
            self.replies.append((x, dict(cfg), list(blobs)))
        return replies, failed

    def find(self, name, stage):
        return [(c, b) for x, c, b in self.sent if x == name and c["stage"] == stage]


def _means_equal(clients, names, local, params_base):
    ref = secea.plaintext_sums(local, params_base)
    for x in names:
        s, c = ref[int(x.split("-")[1])]
        c_ = clients[x]
        a, b = c_.sums, c_.counts
        assert (a.astype(object) * c.reshape(-1, 1).astype(object) == s.astype(object) * b.astype(object)).all(), x


def test_session_round_is_the_plaintext_mean(many_keys):
    local = _local()
    roster, names, clients = _sessions(local, many_keys)
    res = drive(_phe_server(roster, names), Loopback(clients))
    assert not res.dropped and sorted(res.done) == names
    _means_equal(clients, names, local, SecEAParams(N=3, d=2))


# ----------------------------------------------------------------- replayed keys
class ResettingSession(ClientSession):
    """Control: takes any keys stage (a replay resets the client, pad guard included)."""

    def _keys(self, cfg, rnd, attempt):
        self.round, self.attempt, self.answered_round = -1, 0, -1
        return super()._keys(cfg, rnd, attempt)


@pytest.mark.parametrize("control", [False, True])
def test_replayed_keys_stage_refused_and_does_not_reset(many_keys, control):
    local = _local()
    roster, names, clients = _sessions(local, many_keys, ResettingSession if control else ClientSession)
    rec = Recorder(Loopback(clients))
    drive(_phe_server(roster, names), rec)
    c0 = clients["client-0"]
    guard, pk = set(c0.client._used), c0.layer.public_key
    assert any(p.startswith("response to") for _, p, _ in guard)      # it answered queries
    (cfg, blobs), = rec.find("client-0", "keys")
    if control:
        c0.receive(cfg, blobs)                          # the replay is taken: a fresh client, guard empty
        assert not c0.client._used
    else:
        with pytest.raises(ProtocolError, match="replayed keys stage is refused"):
            c0.receive(cfg, blobs)
        assert c0.client._used == guard
    assert c0.layer.public_key == pk                    # the Paillier key pair is never regenerated


# ----------------------------------------------------------------- restart after release
class ForgetfulSession(ClientSession):
    """Control: forgets that it answered queries."""

    def receive(self, cfg, blobs):
        out = super().receive(cfg, blobs)
        self.answered_round = -1
        return out


@pytest.mark.parametrize("control", [False, True])
def test_restart_after_release_refused_by_the_client_session(many_keys, control):
    """A server restarts the round (attempt 2) after clients answered
    queries under encryption in attempt 1: the client refuses it itself
    (a querier would learn a lost client's embeddings by difference)."""
    local = _local()
    roster, names, clients = _sessions(local, many_keys, ForgetfulSession if control else ClientSession)
    rec = Recorder(Loopback(clients))
    server = _phe_server(roster, names)
    out = server.start()
    while not any(c.get("step") == 2 for c, _ in out.values()):
        out = server.receive(*rec(out))                       # through step 1: queries answered
    assert clients["client-0"].answered_round == (-1 if control else 1)
    (cfg, blobs), = rec.find("client-0", "keys")
    again = dict(cfg, attempt=2)
    if control:
        reply, out = clients["client-0"].receive(again, [])
        assert len(out) == 1                                   # its Paillier key announced again: the restart is on
    else:
        with pytest.raises(ProtocolError, match="answered queries"):
            clients["client-0"].receive(again, [])


# ----------------------------------------------------------------- substituted Paillier key
@pytest.mark.parametrize("auth", [True, False])
def test_substituted_paillier_key_in_the_peers_stage(many_keys, auth):
    """The server hands client 1, in the peers stage, an adversary's
    Paillier key as client 0's (client 0's signature kept: it cannot sign).
    Client 1 refuses the stage, naming client 0.  Control: without the
    roster (keys unsigned) client 1 takes it and encrypts its answers to
    client 0's queries under the adversary's key, which opens them."""
    local = _local()
    roster, names, clients = _sessions(local, many_keys, auth=auth)
    adv_pk, adv_sk = many_keys[5]

    def substitute(name, cfg, blobs):
        if name == "client-1" and cfg["stage"] == "peers":
            blobs = list(blobs)
            i = 0 if auth else 3        # client 0's Paillier key: after the N X25519 keys when unauthenticated
            old = blobs[i]
            sig = b"" if not auth else old[-64:]
            blobs[i] = Writer(b"SEPk").blob(adv_pk.to_bytes()).blob(sig).bytes()
        return cfg, blobs
    loop = Recorder(Loopback(clients))
    server = _phe_server(roster, names)
    out = server.start()
    out = server.receive(*FaultyLoopback(loop, tamper=substitute)(out))           # keys
    replies, failed = FaultyLoopback(loop, tamper=substitute)(out)                 # peers
    if auth:
        assert "client-1" in failed and "Paillier key of client 0" in failed["client-1"]
        assert [e for x, s, e in loop.inner.refusals if x == "client-1"]
        assert "client-1" not in replies
        return
    assert not failed and replies["client-1"][1]            # its union upload: the stage was taken
    out = server.receive(replies, failed)
    try:
        while out:
            out = server.receive(*loop(out))
    except Exception:                                        # the round may break later: the leak came first
        pass
    opened = []
    for x, _, blobs in loop.replies:
        for b in blobs:
            if x == "client-1" and b[:4] == b"SEPH" and CipherMessage.header(b)[2] == 0:
                m = CipherMessage.from_bytes(b, adv_pk)
                prm = PHEParams(SecEAParams(N=3, d=2), key_bits=BITS, insecure_keys=True)
                opened.append(adv_sk.decrypt_packed(m.cts, prm.slot_bits, m.rows * prm.row_values))
    assert opened and all(0 <= v < SecEAParams(N=3, d=2).p for vals in opened for v in vals)


# ----------------------------------------------------------------- response of another round
class RoundBlindSession(ClientSession):
    """Control: takes messages of any round."""

    def _parse(self, blobs):
        return [self.layer.parse(b, self.client, to_client=True) for b in blobs]


@pytest.mark.parametrize("control", [False, True])
def test_response_of_another_round_refused(many_keys, control):
    local = _local()
    roster, names, clients = _sessions(local, many_keys, RoundBlindSession if control else ClientSession)
    pk0 = clients["client-0"].layer.public_key

    def other_round(name, cfg, blobs):
        if name == "client-0" and cfg["stage"] == "step":
            out = []
            for b in blobs:
                if b[:4] == b"SEPH" and CipherMessage.header(b)[1] == 1:
                    m = CipherMessage.from_bytes(b, pk0)
                    b = CipherMessage(m.kind, m.sender, m.receiver, m.round + 1, m.block, m.rows, m.cols,
                                      m.cts, pk0).to_bytes()
                out.append(b)
            blobs = out
        return cfg, blobs
    loop = Loopback(clients)
    drive(_phe_server(roster, names), FaultyLoopback(loop, tamper=other_round))
    refused = [e for x, s, e in loop.refusals if x == "client-0"]
    if control:
        assert not refused                      # decrypted and decoded, not refused
    else:
        assert refused and "of round 2 in round 1" in refused[0]


# ----------------------------------------------------------------- deviating node
def _deviant(case):
    class Deviant(ClientSession):
        def receive(self, cfg, blobs):
            reply, out = super().receive(cfg, blobs)
            if cfg["stage"] == "step":
                for i, b in enumerate(out):
                    if b[:4] == b"SEPH" and CipherMessage.header(b)[2] != self.client.index:
                        if case == "garbage blob":
                            out[i] = np.random.default_rng(1).bytes(len(b))
                        else:                   # framing intact, ciphertexts random units mod n^2
                            pk = self.client._querier_key(CipherMessage.header(b)[2])
                            m = CipherMessage.from_bytes(b, pk)
                            rng = np.random.default_rng(2)
                            cts = [int.from_bytes(rng.bytes(BITS // 4), "little") % pk.nsquare or 1
                                   for _ in m.cts]
                            out[i] = CipherMessage(m.kind, m.sender, m.receiver, m.round, m.block, m.rows,
                                                   m.cols, cts, pk).to_bytes()
                        break
            return reply, out
    return Deviant


def _local6():
    return _local(N=6, M=16, seed=4)


@pytest.mark.parametrize("case", ["garbage blob", "garbage ciphertexts"])
def test_deviating_responder_dropped_not_aborting(many_keys, case):
    """Client 2 sends one response that is not a ciphertext message, or
    whose ciphertexts are random: it is dropped (by the server's check, or
    named by the querier that cannot decrypt it) and the round completes;
    the other clients' means are exact (N = 6 leaves one response of
    redundancy per block)."""
    local = _local6()
    roster, names, clients = _sessions(local, many_keys, classes={"client-2": _deviant(case)})
    res = drive(_phe_server(roster, names), Loopback(clients))
    assert list(res.dropped) == ["client-2"], res.dropped
    rest = [x for x in names if x != "client-2"]
    assert {x for x, _ in res.failed_blocks} <= {"client-2"}
    _means_equal(clients, rest, local, SecEAParams(N=6, d=2))


class TrustingServer(ServerSession):
    """Control: parses what a client sends without the stage's checks (as
    the runner did before the sessions: a bad blob aborts the round)."""

    def _check_step(self, x, blobs, step, party, node_of, live, params, M, B, kn, emitted_now, expect_resp,
                    excused):
        try:
            return [self.layer.parse(b, self.party, to_client=False) for b in blobs]
        except ValueError as exc:
            raise RuntimeError(f"round aborted: {exc}") from None


def test_deviating_responder_control_garbage_blob(many_keys):
    local = _local6()
    roster, names, clients = _sessions(local, many_keys, classes={"client-2": _deviant("garbage blob")})
    with pytest.raises(RuntimeError, match="round aborted"):
        drive(_phe_server(roster, names, cls=TrustingServer), Loopback(clients))


def test_deviating_responder_control_garbage_ciphertexts(many_keys, monkeypatch):
    """Control: a querier that cannot tell which response failed to decrypt
    names no one; the deviant stays and the querier's block fails."""
    monkeypatch.setattr(Client, "response_unpads", lambda self, m, rows: True)
    local = _local6()
    roster, names, clients = _sessions(local, many_keys, classes={"client-2": _deviant("garbage ciphertexts")})
    res = drive(_phe_server(roster, names), Loopback(clients))
    assert "client-2" not in res.dropped
    assert any(x != "client-2" for x, _ in res.failed_blocks)


# ----------------------------------------------------------------- the Paillier key in the session state
def test_session_state_keeps_the_paillier_key(many_keys, monkeypatch):
    """export_state / import_state carry the key pair: the imported session
    has the same key and generates none; a layer that already holds another
    key pair refuses the state."""
    local = _local()
    roster, names, clients = _sessions(local, many_keys)
    server = _phe_server(roster, names)
    loop = Loopback(clients)
    out = server.start()
    for _ in range(3):
        out = server.receive(*loop(out))                     # keys, peers, step 0
    c0 = clients["client-0"]
    state = c0.export_state()
    monkeypatch.setattr(paillier, "keygen", lambda *a, **k: pytest.fail("a key was generated"))
    again = ClientSession.import_state(state, roster, c0.identity, local[0],
                                       layer=PaillierLayer(BITS, insecure_keys=True))
    assert again.layer.public_key == many_keys[0][0] == again.client.paillier_public_key
    assert again.client.can_decrypt and again.export_state() == state
    with pytest.raises(ValueError, match="another key pair"):
        ClientSession.import_state(state, roster, c0.identity, local[0],
                                   layer=PaillierLayer(BITS, insecure_keys=True, keypair=many_keys[1]))
    with pytest.raises(ValueError):
        ClientSession.import_state(state, roster, c0.identity, local[0])      # a plain SecEA session
