"""Admission folded into SecEA's first stage on Flower (in process, over the
loopback transport of ``_flower_loop``: no Flower processes).

The runner sends attempt 1's ``keys`` envelope, the same for every
connected node and with a fresh admission challenge, instead of a separate
``hello`` stage.  Attacks, each refused before any further stage, naming
the node or party:

* a stranger (a key the roster does not hold, under its own name or under
  a roster client's name), a node relaying another node's answer, a party
  of a role SecEA does not take;
* a missing party (not connected, or silent in the first stage);
* two nodes claiming one party;
* a forged signature.  Control (weakened admission that believes a claimed
  name without checking its signature): the forger is admitted under
  client-2's name, so the signature check is what refuses it.

And what must not change: an admitted client whose keys reply is bad is a
dropout (the round restarts without it), not an admission failure; the
envelope every node gets holds only public parameters and roster names.
"""
import secrets

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")

import _flower_loop  # noqa: E402
from secea_fast.flower import admission  # noqa: E402
from secea_fast.flower import secea as fsecea  # noqa: E402
from secea_fast.flower.admission import AdmissionError, NodeIdentity  # noqa: E402
from secea_fast.protocols import secea  # noqa: E402
from secea_fast.protocols.common.roster import Roster  # noqa: E402
from secea_fast.protocols.secea.session import ClientSession, ProtocolError, RoundFailed  # noqa: E402

N = 4


@pytest.fixture(scope="module")
def fed():
    """A roster of four SecEA clients and a party of role server."""
    return Roster.make([(f"client-{i}", "client") for i in range(N)] + [("server", "server")])


@pytest.fixture(scope="module")
def local():
    rng = np.random.default_rng(3)
    out = []
    for _ in range(N):
        own = rng.choice(30, size=8, replace=False)
        out.append({f"e{i}": rng.uniform(-1, 1, 4) for i in own})
    return out


def _node(me, emb, node_id, change=None):
    """A node running the real handler as ``me`` (signing for ``node_id``);
    ``change(cfg, reply_cfg, blobs)`` alters its reply."""
    def h(cfg, blobs, state):
        rcfg, out, new, result = fsecea.handle(cfg, blobs, state, emb, me, node_id)
        if change is not None:
            rcfg, out = change(cfg, rcfg, out)
        return rcfg, out, new, result
    return h


def _honest(roster, ids, local):
    return {101 + i: _node(NodeIdentity(roster, ids[f"client-{i}"]), local[i], 101 + i) for i in range(N)}


def _run(handlers, roster, nodes=None):
    loop = _flower_loop.Loopback(handlers, catch=True)
    res = fsecea.SecEAStageRunner(loop, roster, d=4).run(loop.nodes if nodes is None else nodes)
    return loop, res


def _refused(handlers, roster, match):
    loop = _flower_loop.Loopback(handlers, catch=True)
    with pytest.raises(AdmissionError, match=match) as err:
        fsecea.SecEAStageRunner(loop, roster, d=4).run(loop.nodes)
    # refused before any further stage: every node got the first keys stage and nothing else
    assert {(cfg["stage"], cfg["attempt"]) for d, _, cfg, _ in loop.view if d == "down"} == {("keys", 1)}
    return str(err.value)


def test_folded_round_maps_nodes_and_equals_in_process(fed, local):
    roster, ids = fed
    loop, res = _run(_honest(roster, ids, local), roster)
    assert res.names == {101 + i: f"client-{i}" for i in range(N)}
    assert res.parties == {101 + i: i for i in range(N)}
    assert [s["stage"] for s in res.stages][:2] == ["keys", "peers"]        # no stage of its own
    expect = secea.aggregate(local)
    for i in range(N):
        got = loop.results[101 + i]
        assert set(got) == set(expect[i]) and all(np.array_equal(got[k], expect[i][k]) for k in got)
    # the first stage is one envelope for every node: public parameters, roster names, the challenge
    first = [cfg for d, _, cfg, blobs in loop.view if d == "down" and cfg["stage"] == "keys"]
    assert len(first) == N and all(c == first[0] for c in first)
    assert set(first[0]) == {"stage", "round", "attempt", "N", "d", "T", "K", "precision", "bound", "parties",
                             "salt", "challenge"}
    assert first[0]["parties"] == roster.names("client")
    assert not [b for d, _, cfg, b in loop.view if d == "down" and cfg["stage"] == "keys" and b]
    # the replies' admission fields do not reach the session (it reads the stage's own fields)
    up = [cfg for d, _, cfg, _ in loop.view if d == "up" and cfg["stage"] == "keys"]
    assert all({"name", "role", "admission", "k"} <= set(c) for c in up)


@pytest.mark.parametrize("claim", ["client-9", "client-1"])
def test_stranger_is_refused(fed, local, claim):
    """Node 150 holds a key the roster does not hold, under a name of its own
    or under client-1's (whose real node is connected too)."""
    roster, ids = fed
    other, other_ids = Roster.make([("client-1", "client"), ("client-9", "client")])
    handlers = _honest(roster, ids, local)
    handlers[150] = _node(NodeIdentity(other, other_ids[claim]), local[0], 150)
    text = _refused(handlers, roster, r"node 150 is not a roster party")
    assert "node 101" not in text and "node 102" not in text


def test_relayed_answer_is_refused(fed, local):
    """Node 103 answers with client-2's signature made for node 99: the
    signature binds the node id."""
    roster, ids = fed
    handlers = _honest(roster, ids, local)
    handlers[103] = _node(NodeIdentity(roster, ids["client-2"]), local[2], 99)
    _refused(handlers, roster, r"node 103 is not a roster party.*client-2 is not connected")


def test_party_of_another_role_is_refused(fed, local):
    roster, ids = fed
    handlers = _honest(roster, ids, local)
    handlers[20] = _node(NodeIdentity(roster, ids["server"]), {}, 20)
    _refused(handlers, roster, r"node 20 is roster party 'server' of role 'server'")
    # it answered the challenge only: it made no SecEA key
    loop = _flower_loop.Loopback({20: handlers[20]}, catch=True)
    with pytest.raises(AdmissionError):
        fsecea.SecEAStageRunner(loop, roster, d=4).run([20])
    assert [b for d, _, cfg, b in loop.view if d == "up"] == [[]]


@pytest.mark.parametrize("how", ["not connected", "silent"])
def test_missing_party_is_refused(fed, local, how):
    roster, ids = fed
    handlers = _honest(roster, ids, local)
    if how == "not connected":
        del handlers[103]
        _refused(handlers, roster, r"roster party client-2 is not connected")
    else:
        loop = _flower_loop.Loopback(handlers, die={103: ("keys", None)}, catch=True)
        with pytest.raises(AdmissionError, match=r"node 103 did not answer.*client-2 is not connected"):
            fsecea.SecEAStageRunner(loop, roster, d=4).run(loop.nodes)


def test_two_nodes_claiming_one_party_are_refused(fed, local):
    """Node 150 holds a copy of client-0's identity (each node signs its own id)."""
    roster, ids = fed
    handlers = _honest(roster, ids, local)
    handlers[150] = _node(NodeIdentity(roster, ids["client-0"]), local[0], 150)
    _refused(handlers, roster, r"node 150 claims party 'client-0', which another node already proved")


def _forged(cfg, rcfg, out):
    return dict(rcfg, admission=secrets.token_bytes(64)), out


class _Believing:
    """The weakened control: a roster whose admission check believes any
    claimed name (no signature check)."""

    def __init__(self, roster):
        self.roster = roster

    def names(self, *a):
        return self.roster.names(*a)

    def role(self, name):
        return self.roster.role(name)

    def verify(self, *a):
        return None


def test_forged_signature_is_refused_and_control(fed, local, monkeypatch):
    """A stranger (its own key for the name client-2) sends client-2's name
    with a random signature, the real client-2 not connected."""
    roster, ids = fed
    other, other_ids = Roster.make([(f"client-{i}", "client") for i in range(N)])

    def handlers():
        h = _honest(roster, ids, local)
        h[103] = _node(NodeIdentity(other, other_ids["client-2"]), local[2], 103, _forged)
        return h
    _refused(handlers(), roster, r"node 103 is not a roster party.*client-2 is not connected")
    # control: admission that does not check the signature admits the forger as client-2
    real = admission.admit
    monkeypatch.setattr(fsecea, "admit", lambda r, ros, *a, **k: real(r, _Believing(ros), *a, **k))
    # (its pairwise seeds come from a key the roster does not hold, so they match no peer's: the
    # union does not reconstruct and the round fails, revealing nothing)
    with pytest.raises(RoundFailed, match="do not reconstruct a union"):
        _run(handlers(), roster)


def test_admitted_client_with_a_bad_key_is_a_dropout(fed, local):
    """Past admission the session's rules hold: a key part where the roster
    gives the seeds (nothing is due) drops its sender and restarts the round
    without it."""
    roster, ids = fed
    handlers = _honest(roster, ids, local)
    handlers[103] = _node(NodeIdentity(roster, ids["client-2"]), local[2], 103,
                          lambda cfg, rc, out: (rc, [bytes(31)]) if cfg["stage"] == "keys" else (rc, out))
    loop, res = _run(handlers, roster)
    assert res.names[103] == "client-2" and res.attempts == 2 and res.dropped[103][1] == "keys"
    # attempt 2 goes to the admitted nodes with their explicit index, without a challenge
    second = [(x, cfg) for d, x, cfg, _ in loop.view if d == "down" and cfg["attempt"] == 2 and cfg["stage"] == "keys"]
    assert sorted(x for x, _ in second) == [101, 102, 104]
    assert all("challenge" not in cfg and cfg["parties"][cfg["party"]] == res.names[x] for x, cfg in second)


def test_client_session_finds_its_index_or_refuses(fed, local):
    roster, ids = fed
    cfg = {"stage": "keys", "round": 1, "attempt": 1, "N": 3, "d": 4, "T": 1, "K": 0, "precision": 8,
           "bound": 100.0, "parties": ["client-2", "client-0", "client-1"], "salt": bytes(32)}
    s = ClientSession(roster, ids["client-0"], local[0])
    s.receive(cfg, [])
    assert s.client is not None and s.client.index == 1
    with pytest.raises(ProtocolError, match="client-3.*not in field 'parties'"):
        ClientSession(roster, ids["client-3"], local[3]).receive(cfg, [])
    with pytest.raises(ProtocolError, match="field 'party' is missing"):
        ClientSession(None, None, local[0]).receive(cfg, [])
    # the handler: a challenge outside the first keys stage, or to a node without an identity
    me = NodeIdentity(roster, ids["client-0"])
    with pytest.raises(ValueError, match="'challenge' in a 'step' stage"):
        fsecea.handle(dict(cfg, stage="step", challenge=b"c" * 32), [], None, local[0], me, 1)
    with pytest.raises(ValueError, match="no roster identity"):
        fsecea.handle(dict(cfg, challenge=b"c" * 32), [], None, local[0], None, 1)
    with pytest.raises(ValueError, match="'challenge' must be 32 bytes"):
        fsecea.handle(dict(cfg, challenge=b"c" * 31), [], None, local[0], me, 1)


def test_unauthenticated_measurement_run(local):
    """roster=None (the benchmarks' baseline): no admission, nodes are
    parties in id order, keys unsigned; the same result."""
    handlers = {201 + i: _node(None, local[i], 201 + i) for i in range(N)}
    loop, res = _run(handlers, None)
    assert res.names == {201 + i: f"node-{201 + i}" for i in range(N)}
    assert not [cfg for d, _, cfg, _ in loop.view if "challenge" in cfg]
    expect = secea.aggregate(local)
    for i in range(N):
        assert all(np.array_equal(loop.results[201 + i][k], expect[i][k]) for k in expect[i])
