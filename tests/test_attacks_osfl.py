"""Attacks on one-shot FL with objective hiding (Egger, Urbanke, Bitar 2025)
at the session layer: a curious federator asking a client twice, a replayed
answer, an answer relabelled as another client's, reconstruction from too
few answers, plus the stage table, reordering, corruption and state export.
Each attack test also runs a weakened session (a subclass defined here, used
only by the test) on which the attack succeeds, so the test has power."""
import pickle

import numpy as np
import pytest

from secea_fast.protocols import osfl
from secea_fast.protocols.common.roster import Roster
from secea_fast.protocols.osfl.session import (ANSWER, FEDERATOR, QUERY, SHARE, ClientSession, FaultyLoopback,
                                               FederatorSession, Frame, Loopback, ProtocolError, drive)

N, T, RHO, Z, S, C = 5, 2, 3, 1, 3, 2


def _labels(seed=0):
    return np.random.default_rng(seed).integers(0, 7, size=(N, T, S, C))


def _want(labels, asg, j):
    return labels[list(asg.clients(j)), j].sum(axis=0)


def _scheme_sessions(labels, j, round_id=b"round-1", fed_cls=FederatorSession, client_cls=ClientSession,
                     auth=None):
    asg = osfl.Assignment.cyclic(N, T, RHO)
    params = osfl.OSFLParams(asg, Z, Z, S, C)
    kw = lambda name: {} if auth is None else {"roster": auth[0], "identity": auth[1][name]}
    clients = [client_cls(osfl.Client(i, params, labels[i]), round_id=round_id, **kw(f"client-{i}"))
               for i in range(N)]
    fed = fed_cls(osfl.Federator(params, j), round_id=round_id, **kw("federator"))
    return asg, params, clients, fed


def _gxstpir_sessions(labels, j, round_id=b"round-1", client_cls=ClientSession, fed_cls=FederatorSession):
    asg = osfl.Assignment.cyclic(N, T, RHO)
    scheme = osfl.GXSTPIR(asg, S, C, Z, Z)
    clients = [client_cls(scheme.client(i, {t: labels[i, t] for t in asg.objectives(i)}), round_id=round_id)
               for i in range(N)]
    return asg, scheme, clients, fed_cls(scheme.federator(j), round_id=round_id)


def _share_all(clients, fed):
    lb = Loopback({**{c.index: c for c in clients}, FEDERATOR: fed})
    for c in clients:
        lb.deliver(c.start())
    return lb


# ----------------------------------------------------------------- weakened sessions (controls)
class NoAnswerOnce(ClientSession):
    """Forgets that it answered: a second query is answered."""
    def receive(self, data):
        self._answered = False
        return super().receive(data)


class NoRoundOrReplayCheck(FederatorSession):
    """Takes answers from any round, replays included (the last one wins)."""
    def _check(self, f):
        f.round_id = self.round_id
        super()._check(f)

    def receive(self, data):
        f = self.parse(data)
        self.answers.pop(f.sender, None)
        return super().receive(f)


class NoSignatureCheck(FederatorSession):
    """Does not verify signatures."""
    def _check(self, f):
        roster, self.roster = self.roster, None
        try:
            super()._check(f)
        finally:
            self.roster = roster


class NoSenderBinding(FederatorSession):
    """Trusts the answer's own client field over the frame's sender."""
    def receive(self, data):
        f = self.parse(data)
        f.sender = f.body.client
        return super().receive(f)


class ZeroFillsMissing(FederatorSession):
    """Reconstructs with zeros in place of missing answers."""
    def result(self):
        for i in self.missing:
            shape = next(iter(self.answers.values())).values.shape
            self.answers[i] = osfl.Answer(i, np.zeros(shape, dtype=np.uint64))
        return super().result()


# ----------------------------------------------------------------- answer-once
def test_second_query_in_a_round_is_refused():
    labels = _labels()
    asg, params, clients, fed = _scheme_sessions(labels, 0)
    lb = _share_all(clients, fed)
    lb.deliver(fed.start())
    assert (fed.result() == _want(labels, asg, 0)).all()
    # a curious federator asks again, for objective 1, in the same round
    fed2 = FederatorSession(osfl.Federator(params, 1), round_id=b"round-1")
    q = fed2.start()[0]
    with pytest.raises(ProtocolError, match="second query"):
        clients[q.receiver].receive(q)


@pytest.mark.parametrize("weak", [False, True])
def test_second_query_control_leaks_another_objective(weak):
    """GXSTPIR's scheme has no guard of its own: only the session stops the
    federator from retrieving objective 1 after objective 0."""
    labels = _labels(1)
    asg, scheme, clients, fed = _gxstpir_sessions(labels, 0, client_cls=NoAnswerOnce if weak else ClientSession)
    lb = _share_all(clients, fed)
    lb.deliver(fed.start())
    assert (fed.result() == _want(labels, asg, 0)).all()
    fed2 = FederatorSession(scheme.federator(1), round_id=b"round-1")
    lb2 = Loopback({**{c.index: c for c in clients}, FEDERATOR: fed2}, keep_going=True)
    lb2.deliver(fed2.start())
    if weak:
        assert (fed2.result() == _want(labels, asg, 1)).all()          # the leak the rule prevents
    else:
        assert len(lb2.refused) == N and all("second query" in r[3] for r in lb2.refused)
        with pytest.raises(ProtocolError, match="missing"):
            fed2.result()


# ----------------------------------------------------------------- replay
@pytest.mark.parametrize("weak", [False, True])
def test_answer_replayed_from_another_round_is_refused(weak):
    labels = _labels(2)
    _, _, old_clients, old_fed = _scheme_sessions(labels, 0, round_id=b"round-1")
    old = {}
    lb = Loopback({**{c.index: c for c in old_clients}, FEDERATOR: old_fed},
                  on_deliver=lambda f: old.setdefault(f.sender, f.to_bytes()) if f.stage == ANSWER else None)
    for c in old_clients:
        lb.deliver(c.start())
    lb.deliver(old_fed.start())
    # round 2: client 1's answer is lost and the attacker replays its round-1 answer
    asg, _, clients, fed = _scheme_sessions(labels, 0, round_id=b"round-2",
                                            fed_cls=NoRoundOrReplayCheck if weak else FederatorSession)
    lb2 = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                         drop=lambda st, s, r: st == ANSWER and s == 1)
    for c in clients:
        lb2.deliver(c.start())
    lb2.deliver(fed.start())
    attacker = Loopback(lb2.sessions, keep_going=True)                 # injects past the lossy link
    attacker.deliver([old[1]])
    if weak:
        assert not (fed.result() == _want(labels, asg, 0)).all()        # accepted: a wrong result
    else:
        assert "round" in attacker.refused[-1][3]
        with pytest.raises(ProtocolError, match=r"missing \[1\]"):
            fed.result()


@pytest.mark.parametrize("weak", [False, True])
def test_answer_replayed_in_the_same_round_is_refused(weak):
    labels = _labels(3)
    asg, _, clients, fed = _scheme_sessions(labels, 1, fed_cls=NoRoundOrReplayCheck if weak else FederatorSession)
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                        replay=lambda st, s, r: st == ANSWER and s == 2)
    for c in clients:
        lb.deliver(c.start())
    lb.deliver(fed.start())
    refused = [r for r in lb.refused if "replayed answer" in r[3]]
    assert len(refused) == (0 if weak else 1)
    assert (fed.result() == _want(labels, asg, 1)).all()


def test_replayed_share_and_query_are_refused():
    labels = _labels(4)
    asg, _, clients, fed = _scheme_sessions(labels, 0)
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed}, replay=lambda st, s, r: True)
    for c in clients:
        lb.deliver(c.start())
    lb.deliver(fed.start())
    kinds = {r[0] for r in lb.refused}
    assert kinds == {SHARE, QUERY, ANSWER}
    assert all("replayed" in r[3] or "second query" in r[3] for r in lb.refused)
    assert (fed.result() == _want(labels, asg, 0)).all()


# ----------------------------------------------------------------- relabelling
def _relabel(data, sender):
    f = Frame.from_bytes(data)
    f.sender = sender
    f.body = osfl.Answer(sender, f.body.values)
    f._raw = None
    return f.to_bytes()


@pytest.mark.parametrize("weak", [False, True])
def test_answer_relabelled_as_another_clients_is_refused(weak):
    """Authenticated: client 2's answer is lost; client 1's answer, relabelled
    as client 2's (frame and body), is refused (its signature is client 1's)."""
    labels = _labels(5)
    roster, ids = Roster.make([(f"client-{i}", "client") for i in range(N)] + [("federator", "federator")])
    asg, _, clients, fed = _scheme_sessions(labels, 0, auth=(roster, ids),
                                            fed_cls=NoSignatureCheck if weak else FederatorSession)
    got = {}
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                        drop=lambda st, s, r: st == ANSWER and s == 2,
                        on_deliver=lambda f: got.setdefault(f.sender, f.to_bytes()) if f.stage == ANSWER else None)
    for c in clients:
        lb.deliver(c.start())
    lb.deliver(fed.start())
    attacker = Loopback(lb.sessions, keep_going=True)
    attacker.deliver([_relabel(got[1], 2)])
    if weak:
        assert not (fed.result() == _want(labels, asg, 0)).all()
    else:
        assert "does not verify" in attacker.refused[-1][3]
        with pytest.raises(ProtocolError, match=r"missing \[2\]"):
            fed.result()


@pytest.mark.parametrize("weak", [False, True])
def test_answer_body_naming_another_client_is_refused(weak):
    """Unauthenticated: a frame from client 1 whose answer names client 2."""
    labels = _labels(6)
    asg, _, clients, fed = _scheme_sessions(labels, 0, fed_cls=NoSenderBinding if weak else FederatorSession)
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                        drop=lambda st, s, r: st == ANSWER and s == 2)
    sent = {}
    for c in clients:
        lb.deliver(c.start())
    qs = fed.start()
    for q in qs:
        for a in clients[q.receiver].receive(q):
            sent[a.sender] = a
    for i, a in sent.items():
        if i != 2:
            fed.receive(a)
    forged = Frame(ANSWER, b"round-1", 1, FEDERATOR, osfl.Answer(2, sent[1].body.values))
    if weak:
        fed.receive(forged)
        assert not (fed.result() == _want(labels, asg, 0)).all()
    else:
        with pytest.raises(ProtocolError, match="relabelled"):
            fed.receive(forged)


# ----------------------------------------------------------------- minimum set
@pytest.mark.parametrize("weak", [False, True])
def test_reconstruction_with_too_few_answers_is_refused(weak):
    labels = _labels(7)
    asg, _, clients, fed = _scheme_sessions(labels, 1, fed_cls=ZeroFillsMissing if weak else FederatorSession)
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                        drop=lambda st, s, r: st == ANSWER and s == 3)
    for c in clients:
        lb.deliver(c.start())
    lb.deliver(fed.start())
    if weak:
        assert not (fed.result() == _want(labels, asg, 1)).all()       # a wrong result, silently
    else:
        with pytest.raises(ProtocolError, match=r"missing \[3\]"):
            fed.result()
        _, _, cl2, fed2 = _scheme_sessions(labels, 1)
        lossy = FaultyLoopback({**{c.index: c for c in cl2}, FEDERATOR: fed2},
                               drop=lambda st, s, r: st == ANSWER and s == 0)
        with pytest.raises(ProtocolError, match=r"missing \[0\]"):
            drive(cl2, fed2, lossy)


# ----------------------------------------------------------------- stage table, order, corruption
def test_stage_table_and_binding():
    labels = _labels(8)
    _, params, clients, fed = _scheme_sessions(labels, 0)
    share = clients[0].start()[0]
    q = osfl.Query(0, np.array(params.objectives(0), dtype=np.uint64), np.zeros(len(params.objectives(0)), np.uint64))
    cases = [
        (fed, Frame(SHARE, b"round-1", 0, FEDERATOR, share.body), "goes client -> client"),   # to the federator
        (clients[1], Frame(QUERY, b"round-1", 2, 1, q), "goes federator -> client"),  # a client posing as federator
        (clients[1], Frame(SHARE, b"round-0", 0, 1, share.body), "round"),            # another round
        (clients[2], share, "addressed to"),                                         # another receiver
        (clients[share.receiver], Frame(QUERY, b"round-1", FEDERATOR, share.receiver, share.body), "carries a Query"),
        (clients[0], Frame(QUERY, b"round-1", FEDERATOR, 0, q), "before all its shares"),   # reordered
        (fed, Frame(ANSWER, b"round-1", 0, FEDERATOR, osfl.Answer(0, np.zeros((1, C), np.uint64))), "before any query"),
    ]
    for sess, msg, what in cases:
        with pytest.raises(ProtocolError, match=what):
            sess.receive(msg)
    with pytest.raises(ProtocolError, match="already shared"):
        clients[0].start()


def test_corrupted_or_delayed_frames():
    labels = _labels(9)
    asg, _, clients, fed = _scheme_sessions(labels, 0)
    lb = FaultyLoopback({**{c.index: c for c in clients}, FEDERATOR: fed},
                        corrupt=lambda st, s, r: st == ANSWER and s == 4,
                        delay=lambda st, s, r: st == SHARE and s == 0)
    for c in clients:
        lb.deliver(c.start())
    lb.deliver(fed.start())
    assert any(r[1] == 4 for r in lb.refused)
    with pytest.raises(ProtocolError, match=r"missing \[4\]"):
        fed.result()


def test_authenticated_round_and_a_stranger():
    labels = _labels(10)
    parties = [(f"client-{i}", "client") for i in range(N)] + [("federator", "federator")]
    roster, ids = Roster.make(parties)
    asg, _, clients, fed = _scheme_sessions(labels, 1, auth=(roster, ids))
    rep = drive(clients, fed)
    assert (rep.sums == _want(labels, asg, 1)).all()
    # a federator outside the roster (its own key) cannot query
    other, oids = Roster.make(parties)
    _, _, clients2, _ = _scheme_sessions(labels, 1, auth=(roster, ids))
    _, _, _, stranger = _scheme_sessions(labels, 1, auth=(other, oids))
    _share_all(clients2, FederatorSession(osfl.Federator(clients2[0].engine.params, 1), round_id=b"round-1",
                                          roster=roster, identity=ids["federator"]))
    with pytest.raises(ProtocolError, match="does not verify"):
        clients2[0].receive(stranger.start()[0])


# ----------------------------------------------------------------- state
@pytest.mark.parametrize("kind", ["scheme", "gxstpir"])
def test_export_import_keeps_the_secrets(kind):
    """A client restored from its exported state answers exactly as the
    original (same shares, same mask seed): nothing regenerated."""
    labels = _labels(11)
    if kind == "scheme":
        asg = osfl.Assignment.cyclic(N, T, RHO)
        params = osfl.OSFLParams(asg, Z, Z, S, C)
        clients = [ClientSession(osfl.Client(i, params, labels[i], shared_seed=b"k" * 32, session=b"r1"),
                                 round_id=b"round-1") for i in range(N)]
        fed = FederatorSession(osfl.Federator(params, 0), round_id=b"round-1")
    else:
        asg, params, clients, fed = _gxstpir_sessions(labels, 0)
    _share_all(clients, fed)
    qs = fed.start()
    for q in qs:
        c = clients[q.receiver]
        state = c.export_state()
        back = ClientSession.import_state(state, params)
        assert back.export_state() == state
        a1, a2 = c.receive(q)[0], back.receive(q)[0]
        assert (a1.body.values == a2.body.values).all()
        fed.receive(a1)
        again = ClientSession.import_state(back.export_state(), params)
        with pytest.raises(ProtocolError, match="second query"):
            again.receive(q)
    fstate = fed.export_state()
    fback = FederatorSession.import_state(fstate, params)
    assert (fback.result() == fed.result()).all() and (fed.result() == _want(labels, asg, 0)).all()
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(clients[0])


def test_every_cell_of_the_stage_table():
    """Each stage between each ordered pair of roles: only share client ->
    client, query federator -> client and answer client -> federator pass the
    table; every other cell is refused naming the stage's direction."""
    labels = _labels(12)
    _, params, clients, fed = _scheme_sessions(labels, 0)
    vals = np.zeros((params.n_partitions, C), np.uint64)
    bodies = {SHARE: osfl.ShareMessage(0, 1, 0, vals), QUERY: osfl.Query(1, np.zeros(1, np.uint64),
                                                                        np.zeros(1, np.uint64)),
              ANSWER: osfl.Answer(0, vals)}
    allowed = {(SHARE, "client", "client"), (QUERY, "federator", "client"), (ANSWER, "client", "federator")}
    ends = {"client": (0, clients[1]), "federator": (FEDERATOR, fed)}
    for stage, body in bodies.items():
        for srole, (sender, _) in ends.items():
            for rrole, (_, sess) in ends.items():
                if (stage, srole, rrole) in allowed:
                    continue
                f = Frame(stage, b"round-1", sender, sess.party, body)
                with pytest.raises(ProtocolError, match="goes"):
                    sess.receive(f)
