"""View tests for SecEA-PHE (Tang, Zhu, Li, Sun, "Secure Embedding Aggregation
for Federated Representation Learning", 2023, Sec. III-B, eqs. 11-16) and
the Paillier layer under it (Paillier, "Public-Key Cryptosystems Based on
Composite Degree Residuosity Classes", 1999, Sec. 4).

* Server: the queries it relays keep SecEA's one-time pads (traced with
  ``_views.PadRecorder``: no mask-free combination); every ciphertext it
  sees or makes under one key has its own obfuscator r^n.  The public check
  is c mod n = r^n mod n (since (1 + m n) = 1 mod n) and r -> r^n is a
  bijection of Z_n^*: two ciphertexts share an obfuscator iff their
  residues mod n are equal, and then c1 / c2 = 1 + (m1 - m2) n mod n^2
  gives the server m1 - m2.  Control: a pool holding one obfuscator twice
  is detected and the difference is recovered.  Worker processes never
  inherit a pool (control: without ``clear_pool`` they would).
* Querier (statistical, p = 23): the decrypted integers
  V_v = r A_v + psi(alpha_v) + p u_v (eq. 13 with the smudging deviation)
  of one block, for two response vectors (A_v) with the same decoded value
  A(beta_1): residues and quotients by p, per coordinate and pairwise.
  Control: without the smudging u the quotients betray A (the leak the
  deviation closes).
"""
import numpy as np
import pytest

from secea_fast import paillier
from secea_fast.executor import LocalExecutor
from secea_fast.protocols import secea_phe
from secea_fast.protocols.secea import Message, SecEAParams
from secea_fast.protocols.secea_phe import Client, PHEParams, Server

from _views import PadRecorder, assert_views_same, attribute, mask_leaks, samples, view_pvalues, FAMILY_ALPHA

BITS = 512
P = 23


@pytest.fixture(scope="module")
def keys():
    return [paillier.keygen(BITS, insecure=True) for _ in range(3)]


def _parties(sets, prm, keys):
    clients = [Client(n, prm, s, keys[n]) for n, s in enumerate(sets)]
    server = Server(prm)
    for c in clients:
        c.set_peer_keys([x.public_key for x in clients])
        c.set_paillier_keys([x.paillier_public_key for x in clients])
    server.set_paillier_keys([x.paillier_public_key for x in clients])
    return clients, server


def _fresh_keys(keys):
    """Key pairs with their own PublicKey objects (empty pools)."""
    return [(paillier.PublicKey(pk.n, insecure=True),) + (sk,) for pk, sk in keys]


def obfuscator_collisions(cts, pk):
    """Pairs of ciphertexts (indices) under ``pk`` with one obfuscator:
    equal residues mod n.  Computable by anyone holding the ciphertexts."""
    seen, out = {}, []
    for i, c in enumerate(cts):
        r = int(c) % pk.n
        if r in seen:
            out.append((seen[r], i))
        seen.setdefault(r, i)
    return out


def _phe_round(keys, sets, rnd=1):
    prm = PHEParams(SecEAParams(N=3, d=2, precision=2, bound=1.0), key_bits=BITS, insecure_keys=True)
    clients, server = _parties(sets, prm, keys)
    local = [{e: np.full(2, 0.25 * (n + 1)) for e in s} for n, s in enumerate(sets)]
    k = max(len(c.ids) for c in clients)
    total = server.psu_sum([c.psu_upload(k, rnd) for c in clients])
    for c in clients:
        c.psu_finish(total)
    out = [c.share(local[n], rnd) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([out[n][v] for n in range(3)])
    queries, enc, noised = [], [], []
    with PadRecorder() as rec:
        for n, c in enumerate(clients):
            for b, mem in enumerate(c.blocks(1)):
                server.prepare(n, rnd, b, len(mem))
                for v, q in enumerate(c.iter_queries(rnd, b, mem)):
                    queries.append(q)
                    e = clients[v].answer(q)
                    enc.append(e)
                    y = server.noise(e)
                    noised.append(y)
                    c.decrypt(y, len(mem))
    return clients, server, queries, enc, noised, rec


SETS = [["a", "b"], ["b", "c"], ["c", "d"]]


def test_server_view_queries_padded_and_obfuscators_distinct(keys):
    clients, server, queries, enc, noised, rec = _phe_round(_fresh_keys(keys), SETS)
    relayed = [q for q in queries if q.sender != q.receiver]
    assert mask_leaks([attribute(rec.uses, q.data) for q in relayed]) == []
    for n, c in enumerate(clients):
        pk = c.paillier_public_key
        # what the server sees under pk_n (responders' Enc(A)) and what it
        # sends (its own Enc(psi + p u) folded into the noised responses)
        mine = [x for m in enc if m.receiver == n for x in m.cts]
        mine += [x for m in noised if m.receiver == n for x in m.cts]
        assert len(mine) > 4 and obfuscator_collisions(mine, pk) == []


def test_obfuscator_check_detects_a_reused_pool_entry(keys):
    """Control: a pool that hands one obfuscator out twice (what a pool
    copied into two forked workers would do) is caught by the residue check,
    and the server then reads the difference of the plaintexts."""
    pk, sk = _fresh_keys(keys)[0]
    pk.precompute(1, processes=1)
    x = pk._pool[0]
    pk._pool.append(x)
    c1, c2 = pk.encrypt([1234, 1000])
    assert obfuscator_collisions([c1, c2], pk) == [(0, 1)]
    ratio = c1 * pow(c2, -1, pk.nsquare) % pk.nsquare
    assert ratio % pk.n == 1 and (ratio - 1) // pk.n == 234
    # fresh obfuscators: no collision, and the ratio is no plaintext encoding
    d1, d2 = pk.encrypt([1234, 1000])
    assert obfuscator_collisions([d1, d2], pk) == []
    assert d1 * pow(d2, -1, pk.nsquare) % pk.nsquare % pk.n != 1


class _CheckingExecutor(LocalExecutor):
    """Records the Paillier pools present when the per-block jobs start
    (where a fork would copy them)."""

    def __init__(self, pks):
        super().__init__(1)
        self.pks, self.pools = pks, None

    def map(self, fn, jobs, state=None, collect=None):
        self.pools = [pk.pool_size for pk in self.pks]
        return super().map(fn, jobs, state, collect)


def _run_with_pool(keys, monkeypatch=None):
    keys = _fresh_keys(keys)
    for pk, _ in keys:
        pk.precompute(3, processes=1)
    local = [{e: np.full(1, 0.5) for e in s} for s in SETS]
    ex = _CheckingExecutor([pk for pk, _ in keys])
    secea_phe.run_round(local, key_bits=BITS, insecure_keys=True, keys=keys, executor=ex,
                        precision=2, bound=1.0)
    return ex.pools


def test_no_pooled_obfuscator_reaches_the_block_workers(keys, monkeypatch):
    assert _run_with_pool(keys) == [0, 0, 0]
    monkeypatch.setattr(paillier.PublicKey, "clear_pool", lambda self: None)     # control
    assert _run_with_pool(keys) == [3, 3, 3]


# ----------------------------------------------------------------- querier: statistical
def _querier_setup(keys):
    prm = PHEParams(SecEAParams(N=3, d=1, T=1, precision=0, bound=1.0, p=P), key_bits=BITS,
                    insecure_keys=True)
    clients, server = _parties([["a"], ["a"], ["a"]], prm, keys)
    return prm, clients, server


def _responses(prm, a0):
    """Two un-noised response vectors (A_v)_v, each coordinate a polynomial
    of degree <= 2(K+T-1) over alpha_1..alpha_3 with the value a0 at beta_1:
    constant, and one that vanishes at alpha_1."""
    b, al = prm.base.betas[0], prm.base.alphas
    k = (-a0) * pow(al[0] - b, -1, P) % P
    flat = [a0 % P] * 3
    slope = [(a0 + k * (x - b)) % P for x in al]
    return {"A": flat, "B": slope}


def querier_view(prm, clients, server, A, block, rnd=1):
    """Querier 0's view of one block: for every responder v and coordinate,
    V mod p and floor(V / p) mod p of the decrypted integer V."""
    lay, sub = prm, prm.base.sub
    server.prepare(0, rnd, block, 1)
    out = []
    for v in range(3):
        q = Message("query", 0, v, rnd, block, np.zeros((1, 1), dtype=np.uint64))
        vals = np.full((1, sub), A[v], dtype=np.uint64)
        y = server.noise(clients[v].encrypt_response(vals, q))
        V = clients[0]._sk.decrypt_packed(y.cts, lay.slot_bits, lay.row_values)[:sub]
        out += [x % P for x in V] + [(x // P) % P for x in V]
    return out


def _querier_samples(keys, count):
    prm, clients, server = _querier_setup(keys)
    ins = _responses(prm, 5)
    views = {name: [] for name in ins}
    for i in range(count):
        for name, A in ins.items():
            views[name].append(querier_view(prm, clients, server, A, block=2 * i + (name == "B")))
    return np.array(views["A"]), np.array(views["B"])


CONTROL = 150          # the leaky control's sample size: the CI level's


def test_querier_view_same_for_two_responses_with_the_same_output(keys):
    A, B = _querier_samples(keys, samples(700, ci=CONTROL))
    assert_views_same(A, B, P)


def test_querier_check_detects_missing_smudging(keys, monkeypatch):
    monkeypatch.setattr(Server, "_smudge", lambda self, rnd, n, v, block, count: [0] * count)
    A, B = _querier_samples(keys, CONTROL)
    pv, _ = view_pvalues(A, B, P)
    assert pv.min() < FAMILY_ALPHA / len(pv)
