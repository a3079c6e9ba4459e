"""View tests for SecEA (Tang, Zhu, Li, Zhang, Sun, "Fully Privacy-Preserving
Federated Representation Learning via Secure Embedding Aggregation", 2022;
threat model of Sec. 2.2: an honest-but-curious server, or up to T < N/2
colluding clients, never both; Theorem 1 of Sec. 5.1).

* Server (exact, large fields): every message the server relays or sums
  in the entity union (eq. 4), the sharing (Remark 1 pads), the queries and
  the responses (eq. 20) over two rounds and two query blocks is traced to
  the keystreams that mask it (``_views.PadRecorder``, the AES keys actually
  derived by the code from (seed, domain)); the only mask-free linear
  combination of the whole view is the sum of one round's union uploads,
  which the protocol reveals (eq. 4).  Leaky controls: domain strings
  without the round, the direction or the block are detected, and the round
  one is shown to hand the server a client's entity set.
* Colluding client (statistical, p = 11): client 0's complete view of a
  round (all shares, queries and noised responses it receives, its own
  shares and query randomness, the union sum) for two private inputs of
  client 1 (different entity sets with the same union, different
  embeddings) is compared coordinate by coordinate and pair by pair.  Leaky
  controls: client 1 sharing without noise (eq. 10 with z = 0) and client 1
  reusing one z for every query row of a block (eq. 15) are detected.
  (Dropping the server noise of eqs. 17-20 is *not* visible in a view this
  small -- one query leaves the un-noised response polynomial masked by the
  share noise -- so the noise is covered by the exact rank check below.)
* Any T colluders, large p (exact): every T evaluations of the share and
  query polynomials are a bijective image of fresh randomness, and the
  server noise spans every response codeword that vanishes at the betas;
  the server's noise streams are fresh for every (round, querier, block).
"""
import numpy as np
import pytest

from secea_fast import poly
from secea_fast.protocols import secea
from secea_fast.protocols._secea_wire import pad_domain
from secea_fast.protocols.secea import PSU_PRIME, Client, SecEAParams, Server

from _views import PadRecorder, assert_views_same, attribute, mask_leaks, samples, view_pvalues, FAMILY_ALPHA

P = 11


# ----------------------------------------------------------------- a round, step by step
def _parties(sets, prm):
    clients = [Client(i, prm, s) for i, s in enumerate(sets)]
    keys = [c.public_key for c in clients]
    for c in clients:
        c.set_peer_keys(keys)
    return clients, Server(prm)


def _union(clients, server, rnd):
    k = max(len(c.ids) for c in clients)
    ups = [c.psu_upload(k, rnd) for c in clients]
    total = server.psu_sum(ups)
    for c in clients:
        c.psu_finish(total)
    return ups, total


def _round(clients, server, local, rnd, block_size=1, answered=None):
    """Sharing, queries, responses and noise of one round; returns the
    messages: shares[n][v], queries[(n, b)][v], responses[(n, b)][v]
    (before the server's noise) and noised[(n, b)][v].  ``answered``: the
    queriers whose blocks are answered and decoded (default all)."""
    N = len(clients)
    shares = [c.share(local[n], rnd) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([shares[n][v] for n in range(N)])
    queries, responses, noised = {}, {}, {}
    for n, c in enumerate(clients):
        for b, mem in enumerate(c.blocks(block_size)):
            qs = list(c.iter_queries(rnd, b, mem))
            queries[n, b] = qs
            if answered is not None and n not in answered:
                continue
            rs = [clients[v].answer(qs[v]) for v in range(N)]
            ys = [server.noise(r) for r in rs]
            responses[n, b], noised[n, b] = rs, ys
            c.decode(ys, mem)                  # the querier decodes (exercises the round)
    return shares, queries, responses, noised


# ----------------------------------------------------------------- server: exact
SETS = [["a", "b"], ["b", "c"], ["c", "d"]]


def _server_view_problems(rounds=(1, 2), union_rounds=(0,)):
    """Run union round(s) and query rounds under a PadRecorder; trace every
    message of the server's view to its pads; return mask_leaks' problems."""
    prm = SecEAParams(N=3, d=2, precision=2, bound=1.0)
    clients, server = _parties(SETS, prm)
    local = [{e: np.full(2, 0.25 * (n + 1)) for e in s} for n, s in enumerate(SETS)]
    msgs, allowed = [], []
    with PadRecorder() as rec:
        for r in union_rounds:
            ups, _ = _union(clients, server, r)
            allowed.append({len(msgs) + i: 1 for i in range(len(ups))})
            msgs += ups
        for r in rounds:
            shares, queries, responses, _ = _round(clients, server, local, r)
            msgs += [m for row in shares for m in row if m.sender != m.receiver]
            msgs += [m for qs in queries.values() for m in qs if m.sender != m.receiver]
            # every response passes the server (the querier's own one too)
            msgs += [m for rs in responses.values() for m in rs]
    masks = [attribute(rec.uses, m.data) for m in msgs]
    return mask_leaks(masks, allowed), msgs, masks


def test_server_view_every_message_has_its_own_pad():
    problems, msgs, masks = _server_view_problems()
    assert problems == []
    kinds = {m.kind for m in msgs}
    assert kinds == {"psu", "share", "query", "response"}
    # no keystream masks two messages (the union masks aside: each pair mask
    # is added by one client and subtracted by the other, by design)
    owner = {}
    for i, (m, uses) in enumerate(zip(msgs, masks)):
        assert uses, f"{m.kind} {m.sender}->{m.receiver} travels without a pad"
        for u in uses:
            if m.kind != "psu":
                assert (u.key, u.start) not in owner, (m.kind, owner.get((u.key, u.start)))
                owner[u.key, u.start] = (m.kind, m.sender, m.receiver, m.round, m.block)


def test_server_view_through_the_sessions(monkeypatch):
    """The same check on what the clients send the server in a round driven
    by the protocol's sessions (roster-signed keys, the loopback the Flower
    adapter mirrors): every relayed message is masked by pads of its own;
    the only mask-free combination is the sum of the union uploads (eq. 4).
    (Messages are traced as the client sessions serialise them: the pads'
    output arrays are theirs.)"""
    from secea_fast.protocols.common.roster import Roster
    from secea_fast.protocols.secea import Message
    from secea_fast.protocols.secea.loopback import Loopback, drive
    from secea_fast.protocols.secea.session import ClientSession, ServerSession
    names = [f"client-{i}" for i in range(3)]
    roster, ids = Roster.make([(x, "client") for x in names])
    local = [{e: np.full(2, 0.25 * (n + 1)) for e in s} for n, s in enumerate(SETS)]
    msgs = []
    to_bytes = Message.to_bytes

    class Traced(ClientSession):
        def receive(self, cfg, blobs):
            def keep(m):
                if m.sender != m.receiver or m.kind == "response":     # what goes to the server
                    msgs.append(m)
                return to_bytes(m)
            monkeypatch.setattr(Message, "to_bytes", keep)
            try:
                return super().receive(cfg, blobs)
            finally:
                monkeypatch.setattr(Message, "to_bytes", to_bytes)
    loop = Loopback({x: Traced(roster, ids[x], local[n]) for n, x in enumerate(names)})
    with PadRecorder() as rec:
        drive(ServerSession(roster, names, d=2, precision=2, bound=1.0, block_size=1), loop)
    assert not loop.refusals
    assert {m.kind for m in msgs} == {"psu", "share", "query", "response"}
    masks = [attribute(rec.uses, m.data) for m in msgs]
    assert all(masks)
    assert mask_leaks(masks, [{i: 1 for i, m in enumerate(msgs) if m.kind == "psu"}]) == []


def _leaky_domain(kind):
    def dom(rnd, purpose, a, b, block=0):
        if kind == "no-round":
            return f"secea/{purpose}/{a}->{b}/b{block}"
        if kind == "undirected":
            return f"secea/r{rnd}/{purpose}/{min(a, b)}-{max(a, b)}/b{block}"
        if kind == "no-block":
            return f"secea/r{rnd}/{purpose}/{a}->{b}"
        raise ValueError(kind)
    return dom


@pytest.mark.parametrize("kind", ["no-round", "undirected", "no-block"])
def test_server_view_check_detects_reused_pads(monkeypatch, kind):
    monkeypatch.setattr(secea.parties, "pad_domain", _leaky_domain(kind))
    problems, _, _ = _server_view_problems(union_rounds=(0, 1) if kind == "no-round" else (0,))
    assert problems, f"pad reuse ({kind}) was not detected"
    assert any("mask-free" in s for s in problems)


def test_union_masks_reused_across_rounds_reveal_an_entity_set(monkeypatch):
    """What the no-round control means: with the union masks of two rounds
    from one domain, the server subtracts client 0's two uploads, the pair
    masks cancel, and the difference (r - r')/f_0 (eq. 3) gives f_0 by
    rational reconstruction: client 0's entity set.  With the code's
    domains the same subtraction gives a uniform vector."""
    sets = [["a", "b", "e"], ["b", "c", "f"], ["c", "d", "g"]]
    prm = SecEAParams(N=3, d=1, precision=2, bound=1.0)

    def server_guess():
        clients, server = _parties(sets, prm)
        u0, _ = _union(clients, server, 0)
        u1, _ = _union(clients, server, 1)
        diff = (u0[0].data.reshape(-1).astype(object) - u1[0].data.reshape(-1).astype(object)) % PSU_PRIME
        _, L = poly.rational_reconstruct(np.array(diff, dtype=np.uint64), PSU_PRIME, laurent=True)
        return sorted(int(x) for x in poly.roots(L, PSU_PRIME)), sorted(clients[0].hashes.tolist())

    guess, truth = server_guess()
    assert guess != truth                   # private with round-separated masks
    monkeypatch.setattr(secea.parties, "pad_domain", _leaky_domain("no-round"))
    guess, truth = server_guess()
    assert guess == truth                   # the leak the check above detects


# ----------------------------------------------------------------- colluding client: statistical
# client 0 holds "a"; client 2 holds the whole union; client 1 holds "a" and
# one of "x" / "w" (input A / B) with different embeddings: the union, client
# 0's output (sum and count of "a") and client 1's set size are the same
INPUTS = {
    "A": [{"a": [1.0]}, {"a": [-1.0], "x": [0.0]}, {"a": [1.0], "x": [1.0], "w": [-1.0]}],
    "B": [{"a": [1.0]}, {"a": [-1.0], "w": [1.0]}, {"a": [1.0], "x": [1.0], "w": [-1.0]}],
}


def _params():
    return SecEAParams(N=3, d=1, T=1, precision=0, bound=1.0, p=P)


def _unpad_xor(c, peer, m, purpose):
    a, b = m.sender, m.receiver
    return c._pad(peer, pad_domain(m.round, purpose, a, b, m.block)).xor_into(
        np.empty_like(m.data), np.ascontiguousarray(m.data))


def coalition_view(inputs, member=0, rnd=1):
    """Client ``member``'s complete view of one union + round, as a vector
    of elements of F_P: the shares it receives (unpadded), the shares it
    sends (plaintext: with the evaluations of its own polynomial they fix
    its share noise), the queries it receives (unpadded), its own queries
    (they fix its z), the noised responses to its queries (unpadded) and two
    words of the union sum reduced mod P."""
    prm = _params()
    local = [{k: np.array(v) for k, v in d.items()} for d in inputs]
    clients, server = _parties([list(d) for d in local], prm)
    _, total = _union(clients, server, 0)
    shares, queries, _, noised = _round(clients, server, local, rnd, block_size=2, answered=(member,))
    c, N = clients[member], prm.N
    parts = []
    for n in range(N):                       # received shares y_{n,member}
        m = shares[n][member]
        parts.append(m.data if n == member else _unpad_xor(c, n, m, "share"))
    for v in range(N):                       # own shares y_{member,v}, plaintext
        if v != member:
            parts.append(_unpad_xor(c, v, shares[member][v], "share"))
    for (n, b), qs in sorted(queries.items()):
        if n == member:                      # own queries, plaintext
            parts += [q.data if v == member else _unpad_xor(c, v, q, "query") for v, q in enumerate(qs)]
        else:                                # received queries, unpadded
            parts.append(_unpad_xor(c, n, qs[member], "query"))
    for (n, b), ys in sorted(noised.items()):
        if n != member:
            continue
        for v, y in enumerate(ys):           # noised responses, pad removed
            out = np.empty_like(y.data)
            c._pad(v, pad_domain(y.round, "response", v, member, y.block)).field_into(
                out, prm.p, base=np.ascontiguousarray(y.data), negate=True)
            parts.append(out)
    parts.append(total.data.reshape(-1)[:2] % np.uint64(P))
    return np.concatenate([np.asarray(x, dtype=np.int64).reshape(-1) for x in parts])


def _sample(name, count, **kw):
    return np.stack([coalition_view(INPUTS[name], **kw) for _ in range(count)])


CONTROL = 200          # the leaky controls' sample size: the CI level's


def test_colluding_client_view_same_for_two_inputs_of_another_client():
    n = samples(800, ci=CONTROL)
    A, B = _sample("A", n), _sample("B", n)
    assert A.shape[1] > 40
    assert_views_same(A, B, P)


def _detected(A, B):
    pv, _ = view_pvalues(A, B, P)
    return pv.min() < FAMILY_ALPHA / len(pv)


def test_colluding_client_check_detects_shares_without_noise(monkeypatch):
    real = secea.parties.uniform

    def leaky_uniform(count, p):            # eq. (10) with the noise sub-vectors z = 0
        return np.zeros(count, dtype=np.uint64) if p == P else real(count, p)

    monkeypatch.setattr(secea.parties, "uniform", leaky_uniform)
    assert _detected(_sample("A", CONTROL), _sample("B", CONTROL))


def test_colluding_client_check_detects_z_reused_across_query_rows(monkeypatch):
    class LeakyPrg(secea.parties.Prg):
        """eq. (15) with one z row for every entity of a block"""
        __slots__ = ()

        def field_into(self, out, p, *a, **kw):
            res = super().field_into(out, p, *a, **kw)
            if b"query-z" in self.domain:
                M = len(INPUTS["A"][2])
                out.reshape(-1, M)[:] = out.reshape(-1, M)[0]
            return res

    monkeypatch.setattr(secea.parties, "Prg", LeakyPrg)
    assert _detected(_sample("A", CONTROL), _sample("B", CONTROL))


# ----------------------------------------------------------------- exact checks for any T, large p
def _rank(rows, p):
    from _views import _rank_mod
    return _rank_mod([[int(x) % p for x in r] for r in rows], p)


def _t_private(M, T, p):
    """Every T rows of M (one row per client, one column per fresh uniform
    coefficient) are linearly independent: any T colluders see T
    evaluations that are a bijective image of fresh randomness, whatever
    the secret (the LCC / Shamir argument of eqs. 10 and 15)."""
    from itertools import combinations
    return all(_rank([M[i] for i in S], p) == T for S in combinations(range(len(M)), T))


CONFIGS = [dict(N=3, T=1), dict(N=5, T=2), dict(N=5, T=1), dict(N=6, T=2), dict(N=7, T=3),
           dict(N=7, T=1, K=2)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_any_T_clients_see_uniform_shares_queries_and_responses(cfg):
    """Exact, for the default 50-bit prime and several (N, T, K):
    shares (eq. 10): the noise columns l_{K+t}(alpha_v) of ``share_matrix``
    restricted to any T clients have rank T; queries (eq. 15): the
    coefficients of z^{.,1..T} in the queries actually sent
    (``query_sent``) restricted to any T responders have rank T; responses
    (eqs. 17-22): the server noise adds a uniform element of the code
    space that vanishes at beta_1..beta_K (rank K + 2T - 1, and the decoder
    annihilates it), so the querier's N noised responses are uniform given
    the decoded values.  Leaky controls: one noise column fewer."""
    prm = SecEAParams(d=3, **cfg)
    p, K, T = prm.p, prm.K, prm.T
    S = prm.share_matrix[:, K:].tolist()
    Q = prm.query_sent[0].tolist()
    assert _t_private(S, T, p) and _t_private(Q, T, p)
    W = prm.noise_matrix
    assert _rank(W.T.tolist(), p) == prm.response_len - K == K + 2 * T - 1
    D = prm.decode_matrix
    assert not (np.array([[sum(int(D[k, v]) * int(W[v, i]) for v in range(prm.N)) % p
                           for i in range(W.shape[1])] for k in range(K)])).any()
    # the checks can fail: a polynomial with one random coefficient fewer
    assert not _t_private([r[:-1] for r in S], T, p)
    assert _rank(W[:, :-1].T.tolist(), p) < prm.response_len - K


def _psi_keys(domain=None):
    """Server noise streams per (round, querier, block) over two rounds."""
    prm = SecEAParams(N=3, d=2, precision=2, bound=1.0)
    clients, server = _parties(SETS, prm)
    local = [{e: np.full(2, 0.25 * (n + 1)) for e in s} for n, s in enumerate(SETS)]
    _union(clients, server, 0)
    with PadRecorder() as rec:
        for r in (1, 2):
            _, _, _, noised = _round(clients, server, local, r)
    keys = {u.key for u in rec.uses if b"/psi/" in u.domain}
    return keys, len(noised) * 2, noised


def test_server_noise_is_fresh_for_every_block(monkeypatch):
    """A psi reused for two blocks of one querier would hand it the
    difference of two un-noised responses; each (round, querier, block)
    gets its own stream.  Control: domains without the block collide."""
    keys, blocks, _ = _psi_keys()
    assert len(keys) == blocks
    monkeypatch.setattr(secea.parties, "pad_domain", _leaky_domain("no-block"))
    keys, blocks, _ = _psi_keys()
    assert len(keys) < blocks
