"""SecEmb's Flower stages (secea_fast.flower.secemb): server 0's runner, the
users' and server 1's handlers, exchanging exactly the bytes Flower carries
through a loopback; server 0's whole view; the sealed channel.  Rounds in
Flower's simulation engine: tests/test_studies.py (the training example,
checked against its plaintext twin); across real processes:
tests/test_flower_local.py."""

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the flower extra is not installed (pip install -e '.[flower]')")

import _flower_loop  # noqa: E402
from secea_fast.flower import secemb as fsecemb  # noqa: E402
from secea_fast.flower.sealed import SealError, open_sealed, seal, sealed_key  # noqa: E402
from secea_fast.prg import X25519KeyPair  # noqa: E402
from secea_fast.protocols import secemb  # noqa: E402

S1 = 100


def _setup(n_users=4, m=50, d=4, seed=0, sizes=None):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(m, d))
    sizes = sizes or [int(rng.integers(2, 9)) for _ in range(n_users)]
    items = [sorted(rng.choice(m, size=s, replace=False).tolist()) for s in sizes]
    grads = [rng.normal(size=(len(it), d)) for it in items]
    return Q, items, grads


def _loop(items, grads, die=None, rows=None):
    rows = {} if rows is None else rows

    def user(u):
        def fn(r):
            rows[u] = r
            return grads[u]
        return lambda cfg, blobs, st: fsecemb.handle(cfg, blobs, st, "user", items[u], fn)
    handlers = {S1: lambda cfg, blobs, st: fsecemb.handle(cfg, blobs, st, "server1")}
    handlers.update({200 + u: user(u) for u in range(len(items))})
    return _flower_loop.Loopback(handlers, die), rows


def test_round_equals_in_process_round_and_plaintext():
    Q, items, grads = _setup()
    loop, rows = _loop(items, grads)
    runner = fsecemb.SecEmbStageRunner(loop, m_prime=6)
    res = runner.run(loop.nodes, Q)
    ref = secemb.run_round(Q, items, grads, 6, verify=True)
    assert np.array_equal(res.aggregate, ref.aggregate) and np.array_equal(res.dense, ref.dense)
    for u in range(len(items)):
        assert np.array_equal(rows[u], ref.retrieved[u], equal_nan=True)
    assert [s["stage"] for s in res.stages] == ["hello", "retrieve", "answer", "upload", "aggregate"]
    # a second round keeps server 1's key: no hello
    res2 = runner.run(loop.nodes, Q * 2, round_index=2)
    assert [s["stage"] for s in res2.stages] == ["retrieve", "answer", "upload", "aggregate"]
    assert np.array_equal(res2.aggregate, secemb.run_round(Q * 2, items, grads, 6).aggregate)


def test_dropouts_retrieve_and_upload():
    Q, items, grads = _setup(n_users=5)
    loop, rows = _loop(items, grads, die={201: ("retrieve", None), 203: ("upload", None)})
    res = fsecemb.SecEmbStageRunner(loop, m_prime=8, n_users=5).run(loop.nodes, Q)
    assert res.dropouts[201][0] == "retrieve" and res.dropouts[203][0] == "upload"
    kept = [0, 2, 3, 4]
    ref = secemb.run_round(Q, [items[u] for u in kept], [grads[u] for u in kept], 8, n_users=5,
                           dropouts=[2], verify=True)
    assert np.array_equal(res.aggregate, ref.aggregate)


def test_losing_server_1_is_a_clear_error():
    Q, items, grads = _setup()
    loop, _ = _loop(items, grads, die={S1: ("aggregate", None)})
    with pytest.raises(RuntimeError, match="server 1 .* lost in stage aggregate"):
        fsecemb.SecEmbStageRunner(loop, m_prime=6).run(loop.nodes, Q)


def test_exactly_one_server1_is_required():
    Q, items, grads = _setup(n_users=2)
    handlers = {200 + u: (lambda cfg, blobs, st: fsecemb.handle(cfg, blobs, st, "user", items[0], len))
                for u in range(2)}
    with pytest.raises(RuntimeError, match="exactly one node with role server1"):
        fsecemb.SecEmbStageRunner(_flower_loop.Loopback(handlers), m_prime=4).run([200, 201], Q)
    with pytest.raises(ValueError, match="role"):
        fsecemb.handle({"stage": "hello"}, [], None, "server2")


def _chunks(data: bytes, width=16):
    """Every width-byte window of ``data``."""
    return {data[i:i + width] for i in range(len(data) - width + 1)}


def _open_answer(s1, eph_public, box, uid, rnd=1):
    """Server 1's sealed answer, opened with server 1's key and the user's
    ephemeral public key (as the user would with its private key)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    key, ad = sealed_key(s1.exchange(eph_public), "response", rnd, uid)
    return AESGCM(key).decrypt(bytes(12), box[32:], ad)


def _server0_view_pieces(loop, strip=lambda box: box):
    """(pieces of server 1's plaintext exchanges not also in server 0's own
    parts, every 16-byte window of server 0's view, sealed lengths)."""
    s1 = fsecemb.node_keypair(loop.state[S1])
    ups = {(v[1], v[2]["stage"]): v[3] for v in loop.view if v[0] == "up"}
    secret, public, lengths = set(), set(), {}
    for node in loop.nodes:
        if node == S1:
            continue
        uid = node - 200
        r0, req = ups[(node, "retrieve")]
        up0, upl = ups[(node, "upload")]
        ans = ups[(S1, "answer")][uid]
        req, upl, ans = strip(req), strip(upl), strip(ans)
        secret |= _chunks(open_sealed(s1, req, "request", 1, uid)[0])
        secret |= _chunks(open_sealed(s1, upl, "upload", 1, uid)[0])
        secret |= _chunks(_open_answer(s1, req[:32], ans, uid))
        public |= _chunks(r0) | _chunks(up0)
        for what, box in (("request", req), ("upload", upl), ("answer", ans)):
            lengths.setdefault(what, set()).add(len(box))
    seen = [b for _, node, cfg, blobs in loop.view
            if not (node == S1 and cfg["stage"] == "aggregate") for b in blobs]
    seen += [repr(sorted(cfg.items())).encode() for _, _, cfg, _ in loop.view]
    # pieces with 12 or more zero bytes are two of the messages' small public integers
    # (counts, lengths) side by side, which also occur in server 0's view by chance (1 run
    # in 25); a window holding 4 or more bytes of a key, seed or share is kept
    secret = {c for c in secret if c.count(0) < 12}
    return secret - public, set().union(*map(_chunks, seen)), lengths


def test_server0_view_holds_nothing_of_server1():
    """Everything server 0 relays or receives (every blob and config value of
    every stage but server 1's final share, which SecEmb gives server 0)
    contains no 16-byte piece of the plaintexts users and server 1 exchange:
    server 1's retrieval keys, its answers, its aggregation uploads -- except
    pieces that server 0's own plaintext parts also hold (DPF keys of the two
    servers share their correction words, and both uploads carry the same
    CW^{n+1}: the paper's protocol gives them to server 0 too).  The sealed
    parts have one length for users with 3 and 8 real items."""
    Q, items, grads = _setup(n_users=2, sizes=[3, 8])
    loop, _ = _loop(items, grads)
    fsecemb.SecEmbStageRunner(loop, m_prime=8).run(loop.nodes, Q)
    private, windows, lengths = _server0_view_pieces(loop)
    assert len(private) > 500              # the search has material: about 960 pieces at this size
    found = private & windows
    assert not found, f"{len(found)} pieces of server 1's plaintext in server 0's view"
    assert all(len(v) == 1 for v in lengths.values()), lengths


def test_view_check_catches_an_unsealed_channel(monkeypatch):
    """The check above has power: a channel that also carries its plaintext
    after the ciphertext is caught."""
    real_seal, real_open = fsecemb.seal, fsecemb.open_sealed

    def strip(box):                  # the sealed part of ephemeral key | ct | tag | plaintext
        return box[:32 + (len(box) - 48) // 2 + 16]
    monkeypatch.setattr(fsecemb, "seal", lambda *a: real_seal(*a) + bytes(a[2]))
    monkeypatch.setattr(fsecemb, "open_sealed", lambda kp, box, *a: real_open(kp, strip(box), *a))
    Q, items, grads = _setup(n_users=2, sizes=[3, 8])
    loop, _ = _loop(items, grads)
    fsecemb.SecEmbStageRunner(loop, m_prime=8).run(loop.nodes, Q)
    private, windows, _ = _server0_view_pieces(loop, strip)
    assert len(private & windows) > 500


def test_sealed_channel_binds_purpose_round_and_user():
    s1, eph = X25519KeyPair(), X25519KeyPair()
    box = seal(eph, s1.public_bytes, b"secret request", "request", 3, 7)
    assert open_sealed(s1, box, "request", 3, 7)[0] == b"secret request"
    for args in (("upload", 3, 7), ("request", 4, 7), ("request", 3, 8)):
        with pytest.raises(SealError):
            open_sealed(s1, box, *args)
    with pytest.raises(SealError):
        open_sealed(s1, box[:-1] + bytes([box[-1] ^ 1]), "request", 3, 7)
    with pytest.raises(SealError, match="expected sender"):
        open_sealed(eph, seal(X25519KeyPair(), eph.public_bytes, b"x", "response", 1, 1), "response", 1, 1,
                    s1.public_bytes)


def test_user_state_round_trips_and_keeps_the_domain_guard():
    params = secemb.SecEmbParams(m=40, d=3, m_prime=4, n_users=2)
    u = secemb.User(params, [1, 5, 9])
    u.retrieval_request()
    v = secemb.User.import_state(params, [1, 5, 9], u.export_state())
    assert v.export_state() == u.export_state()
    with pytest.raises(ValueError, match="other items"):
        secemb.User.import_state(params, [1, 5], u.export_state())
    v.aggregation_upload(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="no retrieval in progress"):
        v.aggregation_upload(np.zeros((3, 3)))
