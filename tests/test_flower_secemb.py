"""SecEmb's Flower stages (secea_fast.flower.secemb): server 0's runner, the
users' and server 1's handlers, exchanging exactly the bytes Flower carries
through a loopback; the roster admission; server 0's whole view.  The
attacks on the deployment: tests/test_attacks_secemb.py; across real
processes: tests/test_flower_local.py."""

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")

import _flower_loop  # noqa: E402
from secea_fast.executor import Executor, LocalExecutor  # noqa: E402
from secea_fast.flower import secemb as fsecemb  # noqa: E402
from secea_fast.flower.admission import AdmissionError, NodeIdentity  # noqa: E402
from secea_fast.protocols import secemb  # noqa: E402
from secea_fast.protocols.common.roster import Roster  # noqa: E402
from secea_fast.protocols.secemb.channel import derive  # noqa: E402

S1 = 100
RUN = 4242


class Loopback(_flower_loop.Loopback):
    """The loopback, with a handler's exception turned into a failed node
    (as Flower turns a ClientApp exception into an error reply)."""

    def __init__(self, handlers, die=None):
        wrapped = {x: self._guard(x, h) for x, h in handlers.items()}
        super().__init__(wrapped, die)
        self.errors = {}

    def _guard(self, node, h):
        def run(cfg, blobs, st):
            try:
                return h(cfg, blobs, st)
            except (ValueError, TypeError) as exc:
                self.errors[node] = exc
                raise _Failed(str(exc)) from None
        return run

    def __call__(self, outbox, work=None):
        res = None
        failed = {}
        box = dict(outbox)
        while True:
            try:
                res = super().__call__(box, work)
                break
            except _Failed as exc:
                node = next(x for x in box if x in self.errors and x not in failed)
                failed[node] = f"error reply: {exc}"
                box.pop(node)
                work = None
        res.failed.update(failed)
        return res


class _Failed(Exception):
    pass


def federation(n_users):
    roster, ids = Roster.make([("server1", "server1")] + [(f"user-{u}", "user") for u in range(n_users)])
    return roster, {name: NodeIdentity(roster, ident) for name, ident in ids.items()}


def _setup(n_users=4, m=50, d=4, seed=0, sizes=None):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(m, d))
    sizes = sizes or [int(rng.integers(2, 7)) for _ in range(n_users)]
    items = [sorted(rng.choice(m, size=s, replace=False).tolist()) for s in sizes]
    grads = [rng.normal(size=(len(it), d)) for it in items]
    return Q, items, grads


def node_handler(me, node, role, items=None, grads_fn=None, min_users=2):
    return lambda cfg, blobs, st: fsecemb.handle(cfg, blobs, st, role, items, grads_fn, me=me, node_id=node,
                                                 run=RUN, min_users=min_users)


def make_loop(items, grads, die=None, rows=None, override=None):
    """(loopback, roster, rows): server 1 is node 100, user u node 200 + u;
    ``override[node]``: a handler replacing that node's."""
    rows = {} if rows is None else rows
    roster, me = federation(len(items))

    def user(u):
        def fn(r):
            rows[u] = r
            return grads[u]
        return node_handler(me[f"user-{u}"], 200 + u, "user", items[u], fn)
    handlers = {S1: node_handler(me["server1"], S1, "server1")}
    handlers.update({200 + u: user(u) for u in range(len(items))})
    handlers.update(override or {})
    return Loopback(handlers, die), roster, rows, me


def runner(loop, roster, m_prime, **kw):
    return fsecemb.SecEmbStageRunner(loop, roster=roster, run=RUN, m_prime=m_prime, **kw)


def test_round_equals_in_process_round_and_plaintext():
    Q, items, grads = _setup()
    loop, roster, rows, _ = make_loop(items, grads)
    run = runner(loop, roster, 6)
    res = run.run(loop.nodes, Q)
    ref = secemb.run_round(Q, items, grads, 6, verify=True)
    assert np.array_equal(res.aggregate, ref.aggregate) and np.array_equal(res.dense, ref.dense)
    for u in range(len(items)):
        assert np.array_equal(rows[u], ref.retrieved[u], equal_nan=True)
    assert [s["stage"] for s in res.stages] == ["hello", "retrieve", "answer", "upload", "aggregate"]
    assert not any("seconds" in c for _, _, c, _ in loop.view if _ == "up")     # no timings reach server 0
    # a second round keeps the mapping and server 1's key: no hello
    res2 = run.run(loop.nodes, Q * 2, round_index=2)
    assert [s["stage"] for s in res2.stages] == ["retrieve", "answer", "upload", "aggregate"]
    assert np.array_equal(res2.aggregate, secemb.run_round(Q * 2, items, grads, 6).aggregate)


def test_dropouts_retrieve_and_upload():
    Q, items, grads = _setup(n_users=5)
    loop, roster, _, _ = make_loop(items, grads, die={201: ("retrieve", None), 203: ("upload", None)})
    res = runner(loop, roster, 8, n_users=5).run(loop.nodes, Q)
    assert res.dropouts[201][0] == "retrieve" and res.dropouts[203][0] == "upload"
    kept = [0, 2, 3, 4]
    ref = secemb.run_round(Q, [items[u] for u in kept], [grads[u] for u in kept], 8, n_users=5,
                           dropouts=[2], verify=True)
    assert np.array_equal(res.aggregate, ref.aggregate)


def test_losing_server_1_is_a_clear_error():
    Q, items, grads = _setup()
    loop, roster, _, _ = make_loop(items, grads, die={S1: ("aggregate", None)})
    with pytest.raises(RuntimeError, match="server 1 .* lost in stage aggregate"):
        runner(loop, roster, 6).run(loop.nodes, Q)


def test_runner_takes_exactly_the_roster_parties():
    Q, items, grads = _setup(n_users=3)
    loop, roster, _, me = make_loop(items, grads)
    # a stranger: a node with an identity of another federation
    other, ids = federation(3)
    loop.handlers[300] = loop._guard(300, node_handler(ids["user-0"], 300, "user", items[0], lambda r: grads[0]))
    with pytest.raises(AdmissionError, match="node 300 is not a roster party"):
        runner(loop, roster, 4).run(loop.nodes, Q)
    # a missing party
    loop2, roster2, _, _ = make_loop(items, grads)
    del loop2.handlers[202]
    with pytest.raises(AdmissionError, match="user-2 is not connected"):
        runner(loop2, roster2, 4).run(loop2.nodes, Q)


def test_handler_role_must_match_the_roster():
    _, me = federation(1)
    with pytest.raises(ValueError, match="role"):
        fsecemb.handle({"stage": "hello"}, [], None, "server2", me=me["server1"], node_id=1, run=RUN)
    with pytest.raises(ValueError, match="role"):
        fsecemb.handle({"stage": "hello"}, [], None, "server1", me=me["user-0"], node_id=1, run=RUN)


def _chunks(data: bytes, width=16):
    """Every width-byte window of ``data``."""
    return {data[i:i + width] for i in range(len(data) - width + 1)}


def _server1_plaintexts(loop, roster, me):
    """Every plaintext server 1 and the users exchanged, opened with server
    1's private key from its node state (as the endpoints do)."""
    s1 = secemb.Server1Session.import_state(roster, me["server1"].identity, loop.state[S1])
    run = secemb.session.run_binding(RUN)
    out = []
    for direction, node, cfg, blobs in loop.view:
        if node == S1 or not blobs or direction != "up" or cfg.get("stage") not in ("retrieve", "upload"):
            continue
        name = f"user-{node - 200}"
        sealed = blobs[1]
        if cfg["stage"] == "retrieve":
            from secea_fast.protocols.common.wire import Reader
            r = Reader(sealed, b"SESQ", "q", 1)
            rnd, _, eph, _, box = r.u64(), r.blob(), r.blob(), r.blob(), r.blob()
            key, nonce, ad = derive(s1.keypair.exchange(eph), run, rnd, "request", name, "server1")
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            out.append(AESGCM(key).decrypt(nonce, box, ad))
            ans = [b for d, x, c, bl in loop.view if d == "up" and x == S1 and c["stage"] == "answer"
                   for b in bl][node - 200]
            r = Reader(ans, b"SESA", "a", 1)
            rnd, _, box = r.u64(), r.blob(), r.blob()
            key, nonce, ad = derive(s1.keypair.exchange(eph), run, rnd, "answer", "server1", name)
            out.append(AESGCM(key).decrypt(nonce, box, ad))
    return out


def test_server0_view_holds_nothing_of_server1():
    """Everything server 0 relays or receives (every blob and config value of
    every stage but server 1's final share, which SecEmb gives server 0)
    contains no 16-byte piece of server 1's retrieval keys or answers that
    server 0's own parts do not also hold (the DPF keys of the two servers
    share their correction words).  The sealed parts have one length for
    users with 1 and 8 real items."""
    Q, items, grads = _setup(n_users=2, sizes=[1, 8])
    loop, roster, _, me = make_loop(items, grads)
    runner(loop, roster, 8).run(loop.nodes, Q)
    secret = set().union(*(_chunks(p) for p in _server1_plaintexts(loop, roster, me)))
    public = set()
    for d, node, cfg, blobs in loop.view:
        if d == "up" and node != S1 and cfg["stage"] in ("retrieve", "upload"):
            public |= _chunks(blobs[0])
    private = {c for c in secret - public if c.count(0) < 12}
    assert len(private) > 300
    seen = [b for _, node, cfg, blobs in loop.view if not (node == S1 and cfg["stage"] == "aggregate") for b in blobs]
    seen += [repr(sorted((k, v) for k, v in cfg.items())).encode() for _, _, cfg, _ in loop.view]
    windows = set().union(*map(_chunks, seen))
    assert not private & windows
    lengths = {}
    for d, node, cfg, blobs in loop.view:
        if d == "up" and node != S1:
            lengths.setdefault(cfg["stage"], set()).update((i, len(b)) for i, b in enumerate(blobs))
    assert all(len({i for i, _ in v}) == len(v) for v in lengths.values()), lengths   # one length per part


def test_view_check_catches_a_leaking_channel(monkeypatch):
    """The check above has power: a channel whose plaintexts also reach the
    relay (here in the replies' config) is caught."""
    from secea_fast.protocols.secemb import channel
    leaked = []
    real_seal = channel.SealedChannel.seal

    def seal(self, keypair, peer, rnd, stage, receiver, plaintext):
        leaked.append(bytes(plaintext))
        return real_seal(self, keypair, peer, rnd, stage, receiver, plaintext)
    monkeypatch.setattr(channel.SealedChannel, "seal", seal)
    real_handle = fsecemb.handle

    def handle(*a, **kw):
        rc, out, new, res = real_handle(*a, **kw)
        return dict(rc, leak=b"".join(leaked[-1:])), out, new, res
    monkeypatch.setattr(fsecemb, "handle", handle)
    Q, items, grads = _setup(n_users=2, sizes=[1, 8])
    loop, roster, _, me = make_loop(items, grads)
    runner(loop, roster, 8).run(loop.nodes, Q)
    secret = set().union(*(_chunks(p) for p in _server1_plaintexts(loop, roster, me)))
    seen = [repr(sorted((k, v) for k, v in cfg.items())).encode() for _, _, cfg, _ in loop.view]
    seen += [cfg["leak"] for _, _, cfg, _ in loop.view if "leak" in cfg]
    assert len(secret & set().union(*map(_chunks, seen))) > 300


def test_server1_noise_is_its_own_node_setting_not_server0s():
    """Server 0's runner asks for no noise; server 1's node setting
    (``noise_sigma`` of its handler, node config ``noise-sigma``) holds."""
    Q, items, grads = _setup()
    exact = secemb.run_round(Q, items, grads, 6).aggregate
    for sigma, noised in ((0.0, False), (5.0, True)):
        ids = {}
        s1 = (lambda cfg, blobs, st, sigma=sigma: fsecemb.handle(cfg, blobs, st, "server1", me=ids["server1"],
                                                                 node_id=S1, run=RUN, noise_sigma=sigma))
        loop, roster, _, me = make_loop(items, grads, override={S1: s1})
        ids.update(me)
        res = runner(loop, roster, 6, noise_sigma=0.0).run(loop.nodes, Q)
        assert (not np.array_equal(res.aggregate, exact)) == noised


class _Recording(Executor):
    """Workers simulated in this process, each ``map`` recorded (which
    server called it is checked by which object saw the calls)."""

    name = "recording-test"

    def __init__(self, processes):
        self.processes, self.calls = processes, 0

    def _run(self, fn, jobs, state, collect):
        self.calls += 1
        for job in reversed(list(jobs)):
            collect(fn(state, job))


def test_each_server_shards_over_its_own_executor():
    """Server 0 (the runner) and server 1 (its node handler) each shard their
    answers and aggregation over their own executor through the adapter;
    the round equals the in-process round bit for bit."""
    Q, items, grads = _setup(n_users=5)
    ex0, ex1 = _Recording(2), _Recording(3)
    roster, me = federation(len(items))
    rows = {}

    def user(u):
        def fn(r):
            rows[u] = r
            return grads[u]
        return node_handler(me[f"user-{u}"], 200 + u, "user", items[u], fn)
    handlers = {S1: lambda cfg, blobs, st: fsecemb.handle(cfg, blobs, st, "server1", me=me["server1"], node_id=S1,
                                                         run=RUN, min_users=2, executor=ex1)}
    handlers.update({200 + u: user(u) for u in range(len(items))})
    loop = Loopback(handlers)
    res = runner(loop, roster, 6, executor=ex0).run(loop.nodes, Q)
    ref = secemb.run_round(Q, items, grads, 6)
    assert np.array_equal(res.aggregate, ref.aggregate) and np.array_equal(res.dense, ref.dense)
    for u in range(len(items)):
        assert np.array_equal(rows[u], ref.retrieved[u], equal_nan=True)
    assert ex0.calls >= 2 and ex1.calls >= 2          # answers and aggregation, on each server's own


def test_server1_workers_come_from_its_node_config():
    assert fsecemb.server1_executor({}) is None
    assert fsecemb.server1_executor({"workers": 1}) is None
    ex = fsecemb.server1_executor({"workers": 3})
    assert isinstance(ex, LocalExecutor) and ex.processes == 3
    for bad in (0, "2", True, 1.5):
        with pytest.raises(ValueError, match="SecEmb node config: field 'workers'"):
            fsecemb.server1_executor({"workers": bad})
