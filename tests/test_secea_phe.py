"""SecEA-PHE (Tang, Zhu, Li, Sun, 2022), Sec. III-B/C: exactness against the plaintext sums and
against SecEA, the worked example, what the querier can and cannot read (the
r-scaling, the server noise and the smudging deviation), the capacity checks,
malformed ciphertext messages, and CSPRNG-only randomness.  Keys are small
insecure test keys (512 bits) for speed."""
import json
import secrets
from fractions import Fraction

import numpy as np
import pytest

from secea_fast import EMBEDDING_PRIME as P, paillier
from secea_fast import jobs, workloads
from secea_fast.protocols import secea, secea_phe
from secea_fast.protocols.secea import DecodingError, Message, SecEAParams
from secea_fast.protocols.secea_phe import CipherMessage, Client, PHEParams, Server

BITS = 512


@pytest.fixture(scope="module")
def keys():
    return [paillier.keygen(BITS, insecure=True) for _ in range(6)]


def make_local(rng, N, d, universe=30, lo=2, hi=10, bound=1.0):
    ids = [f"ent-{i}" for i in range(universe)]
    local = []
    for _ in range(N):
        pick = rng.choice(universe, int(rng.integers(lo, hi)), replace=False)
        local.append({ids[i]: rng.uniform(-bound, bound, d) for i in pick})
    return local


def phe_params(N, d, T=1, **kw):
    return PHEParams(SecEAParams(N=N, d=d, T=T, **kw), key_bits=BITS, insecure_keys=True)


def setup_parties(local, params, keys, rnd=1):
    """Parties after the union and the sharing of round ``rnd``."""
    N = len(local)
    clients = [Client(n, params, list(local[n]), keys[n]) for n in range(N)]
    server = Server(params)
    for c in clients:
        c.set_peer_keys([x.public_key for x in clients])
        c.set_paillier_keys([x.paillier_public_key for x in clients])
    server.set_paillier_keys([x.paillier_public_key for x in clients])
    k = max(len(c.ids) for c in clients)
    total = server.psu_sum([c.psu_upload(k, rnd) for c in clients])
    for c in clients:
        c.psu_finish(total)
    out = [c.share(local[n], rnd) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([out[n][v] for n in range(N)])
    return clients, server


def exact_mean_floats(local, params):
    """Correctly rounded S / (c scale) per client from the plaintext sums."""
    scale = params.base.fx.scale
    out = []
    for s, c in secea.plaintext_sums(local, params.base):
        out.append(np.array([[float(Fraction(int(x), int(cc) * scale)) for x in row]
                             for row, cc in zip(s, c)]).reshape(s.shape))
    return out


# ----------------------------------------------------------------- parameters
def test_capacity_layout_and_parameter_checks():
    prm = PHEParams(SecEAParams(N=5, d=8))                  # 2048-bit default
    p = prm.p
    assert prm.key_bits == 2048 and prm.stat_bits == 80
    assert prm.slot_bits == 2 * p.bit_length() + 80 + 1 == 181
    assert prm.slots == (2048 - 1 - paillier.GUARD_BITS) // 181 == 11
    assert prm.base.sub == 5 and prm.cols == 1 and prm.row_values == 11
    # r A + psi + p u at their maxima fits the slot, and the slot is not wastefully wide
    vmax = (p - 1) ** 2 + (p - 1) + p * (2 ** prm.smudge_bits - 1)
    assert 2 ** (prm.slot_bits - 2) < vmax < 2 ** prm.slot_bits
    assert prm.slots * prm.slot_bits <= 2048 - 1 - paillier.GUARD_BITS
    assert phe_params(3, 4).cols == 3                       # 5 values, 2 slots of a 512-bit key
    with pytest.raises(ValueError, match="insecure_keys"):
        PHEParams(SecEAParams(N=3, d=2), key_bits=1024)
    with pytest.raises(ValueError, match="slot"):
        PHEParams(SecEAParams(N=3, d=2), key_bits=200, insecure_keys=True)
    with pytest.raises(ValueError, match="stat_bits"):
        PHEParams(SecEAParams(N=3, d=2), stat_bits=20)
    # SecEA's capacity holds (p > 2 N B scale) but the mean is ambiguous (p <= 2 N^2 B scale)
    base = SecEAParams(N=5, d=2, precision=13, bound=3.0)
    with pytest.raises(ValueError, match="rational reconstruction"):
        PHEParams(base)
    with pytest.raises(TypeError):
        PHEParams(SecEAParams(N=3, d=2), insecure_keys=1)


# ----------------------------------------------------------------- correctness
def test_paper_example_sec_3c(keys):
    """N = 3, K = T = 1, alpha = (3, 4, 5), beta = (1, 2), E_1 = {e1}, E_2 =
    {e2}, E_3 = {e1}: 6 Y_1 - 8 Y_2 + 3 Y_3 = (r (h_1 + h_3), 2 r) and client 1
    gets (h_1 + h_3) / 2."""
    h1, h2, h3 = np.array([0.5, -0.25]), np.array([0.75, 0.125]), np.array([-0.125, 1.0])
    local = [{"e1": h1}, {"e2": h2}, {"e1": h3}]
    base = SecEAParams(N=3, d=2, T=1, alphas=(3, 4, 5), betas=(1, 2))
    assert base.K == 1 and base.decode_matrix.tolist() == [[6, P - 8, 3]]
    prm = PHEParams(base, key_bits=BITS, insecure_keys=True)
    res = secea_phe.run_round(local, params=prm, keys=keys[:3], verify=True)
    assert res.union_size == 2
    assert res.embeddings[0]["e1"].tolist() == ((h1 + h3) / 2).tolist()
    assert res.embeddings[2]["e1"].tolist() == ((h1 + h3) / 2).tolist()
    assert res.embeddings[1]["e2"].tolist() == h2.tolist()

    # the example's retrieval by hand, for client 1 (index 0)
    clients, server = setup_parties(local, prm, keys, rnd=2)
    q = list(clients[0].queries(2, 0, [0]))
    Y = [clients[0].decrypt(server.noise(clients[v].answer(q[v])), 1) for v in range(3)]
    comb = (6 * Y[0].astype(object) - 8 * Y[1].astype(object) + 3 * Y[2].astype(object)) % P
    r = server._r(2, 0, 0, 1)[0]
    S = [int(round(x * 1e8)) for x in h1 + h3]
    assert comb[0].tolist() == [r * S[0] % P, r * S[1] % P, 2 * r % P]


@pytest.mark.parametrize("N,T", [(3, 1), (4, 1), (5, 1), (5, 2), (6, 2)])
def test_exact_against_plaintext_sums(keys, N, T):
    rng = np.random.default_rng(100 * N + T)
    d = int(rng.integers(1, 6))
    local = make_local(rng, N, d)
    prm = phe_params(N, d, T, precision=6)
    res = secea_phe.run_round(local, params=prm, keys=keys[:N], verify=True,
                              block_size=int(rng.integers(1, 6)))
    ref = secea.plaintext_sums(local, prm.base)
    assert res.matches([s for s, _ in ref], [c for _, c in ref])
    # numerators / denominators are the mean in lowest terms
    for (s, c), a, b in zip(ref, res.numerators, res.denominators):
        for i in range(len(c)):
            for j in range(d):
                f = Fraction(int(s[i, j]), int(c[i]))
                assert (int(a[i, j]), int(b[i, j])) == (f.numerator, f.denominator)
    # floats: the correctly rounded quantized mean, bit for bit
    for n, want in enumerate(exact_mean_floats(local, prm)):
        got = np.array([res.embeddings[n][k] for k in local[n]])
        assert got.tobytes() == want.tobytes()


@pytest.mark.slow     # about 5 s; .ci/run runs it
def test_equals_secea_and_multiprocess(keys):
    local = workloads.workload("tiny", N=4, d=5, seed=3)
    prm = phe_params(4, 5)
    res = secea_phe.run_round(local, params=prm, keys=keys[:4], verify=True, block_size=8)
    it = secea.run_round(local, params=prm.base, verify=True)
    assert res.union_size == it.union_size
    assert res.matches(it.sums, it.counts)          # the same rational means
    for n in range(4):
        a = np.array([res.embeddings[n][k] for k in local[n]])
        b = np.array([it.embeddings[n][k] for k in local[n]])
        # SecEA rounds S/scale/c twice, SecEA-PHE once: at most a last-bit difference
        np.testing.assert_array_max_ulp(a, b, maxulp=2)
    res2 = secea_phe.run_round(local, params=prm, keys=keys[:4], processes=2, block_size=8)
    for x, y in zip(res.numerators + res.denominators, res2.numerators + res2.denominators):
        assert np.array_equal(x, y)
    assert res2.processes == 2 and res2.ciphertexts == res.ciphertexts
    assert res.ciphertexts == sum(len(x) for x in local) * 4 * prm.cols
    table = res.table()
    for ph in ("keygen", "union", "encode", "offline", "responses", "encrypt", "noise",
               "decrypt", "decode"):
        assert ph in table and ph in res.seconds
    assert res.bytes["responses"] > 0 and res.bytes["offline"] > 0


def test_aggregate_api_and_dropped_responses(keys):
    rng = np.random.default_rng(5)
    local = make_local(rng, 5, 3)
    emb = secea_phe.aggregate(local, key_bits=BITS, insecure_keys=True, precision=6)
    want = exact_mean_floats(local, phe_params(5, 3, precision=6))
    for n in range(5):
        assert np.array([emb[n][k] for k in local[n]]).tobytes() == want[n].tobytes()
    # K = 1 < eq. (4)'s 2 leaves N - 3 = 2 redundant responses: erasures are decoded
    prm = PHEParams(SecEAParams(N=5, d=3, K=1, precision=6), key_bits=BITS, insecure_keys=True)
    res = secea_phe.run_round(local, params=prm, keys=keys[:5], drop={(0, 1), (2, 4), (3, 0)},
                              verify=True)
    assert res.faulty == []
    with pytest.raises(DecodingError):
        secea_phe.run_round(local[:3], key_bits=BITS, insecure_keys=True, keys=keys[:3],
                            drop={(0, 1)})


# ----------------------------------------------------------------- privacy of the response path
def test_querier_sees_only_scaled_noised_smudged_responses(keys):
    rng = np.random.default_rng(9)
    local = make_local(rng, 3, 4, universe=12, lo=4, hi=8)
    prm = phe_params(3, 4)
    clients, server = setup_parties(local, prm, keys)
    lay, p = prm, prm.p
    members = np.arange(len(clients[0].ids))
    B = len(members)
    server.prepare(0, 1, 0, B)
    r = server._r(1, 0, 0, B)
    assert all(1 <= x < p for x in r) and len(set(r)) == B      # r_{n,e} nonzero, per entity
    Ys = []
    for v, q in enumerate(clients[0].iter_queries(1, 0, members)):
        A = clients[v].answer_plain(q)
        c = clients[v].encrypt_response(A, q)
        assert c.pk == clients[0].paillier_public_key             # under the querier's key
        y = server.noise(c)
        assert not set(y.cts) & set(c.cts)                        # re-randomized by Enc(psi + p u)
        # what client 0 decrypts: the integers V = r A + psi + p u, never A itself
        raw = clients[0]._sk.decrypt_packed(y.cts, lay.slot_bits, B * lay.row_values)
        V = np.array(raw, dtype=object).reshape(B, lay.row_values)
        assert (V[:, prm.base.sub:] == 0).all()                   # padding slots
        V = V[:, :prm.base.sub]
        Ao = A.astype(object)
        psi = server.psi(1, 0, v, 0, B).astype(object)
        rr = np.array(r, dtype=object).reshape(-1, 1)
        assert ((V - (rr * Ao + psi)) % p == 0).all()             # eq. (13) mod p, exactly
        assert (V % p != Ao).all() and (V != Ao).all()            # A itself is not visible
        # smudging (deviation): the quotient by p is not the small carry of r A + psi
        assert all(x > p * p for x in V.ravel()) and all(int(x).bit_length() <= lay.slot_bits
                                                          for x in V.ravel())
        Ys.append(clients[0].decrypt(y, B))
        assert np.array_equal(Ys[-1], (V % p).astype(np.uint64))
    # interpolation gives (r S, r c): the count is scaled by the unknown r
    S = (prm.base.decode_matrix.astype(object) @ np.stack(Ys).reshape(3, -1).astype(object)) % p
    full = S.reshape(B, -1)
    (sums, counts), = [secea.plaintext_sums(local, prm.base)[0]]
    assert [int(x) for x in full[:, prm.base.d]] == [rr_ * int(c) % p for rr_, c in zip(r, counts)]
    assert any(int(x) != int(c) for x, c in zip(full[:, prm.base.d], counts))
    res = clients[0].decode_values(Ys, members)
    num, den, _ = res
    # N = 3 = k = 2(K+T-1)+1: no redundancy, so nothing could detect a corrupted response
    assert not res.checked and res.redundancy == 0
    with pytest.raises(secea_phe.DecodingError, match="no redundancy"):
        clients[0].decode_values(Ys, members, verify=True)
    assert all(Fraction(int(a), int(b)) == Fraction(int(s), int(c))
               for ar, br, sr, c in zip(num, den, sums, counts) for a, b, s in zip(ar, br, sr))


def test_secrets_refuse_insecure_rng(no_insecure_rng):
    local = [{"a": np.array([0.5, 0.25]), "b": np.array([0.0, 1.0])}, {"b": np.array([1.0, 0.5])},
             {"a": np.array([0.125, 0.0])}]
    res = secea_phe.run_round(local, key_bits=BITS, insecure_keys=True, verify=True)
    assert res.embeddings[0]["a"].tolist() == [0.3125, 0.125]
    assert res.embeddings[1]["b"].tolist() == [0.5, 0.75]


# ----------------------------------------------------------------- messages and keys
def test_malformed_ciphertext_messages_rejected(keys):
    rng = np.random.default_rng(11)
    local = make_local(rng, 3, 2, universe=8, lo=2, hi=5)
    prm = phe_params(3, 2)
    clients, server = setup_parties(local, prm, keys)
    members = np.arange(len(clients[0].ids))
    q = list(clients[0].queries(1, 0, members))
    c = clients[1].answer(q[1])
    pk = clients[0].paillier_public_key
    raw = c.to_bytes()
    assert len(raw) == c.nbytes
    back = CipherMessage.from_bytes(raw, pk)
    assert (back.kind, back.sender, back.receiver, back.rows, back.cols, back.cts) == \
        (c.kind, 1, 0, c.rows, c.cols, c.cts)
    width = 2 * ((BITS + 7) // 8)
    bad = [raw[:-1], raw + b"\0", b"XXXX" + raw[4:], raw[:4] + b"\x09" + raw[5:], raw[:20],
           raw[:8] + (7).to_bytes(8, "little") + raw[16:],                      # unknown kind
           raw[:48] + (0).to_bytes(8, "little") + raw[56:],                     # rows = 0
           raw[:56] + (c.cols + 1).to_bytes(8, "little") + raw[64:],            # rows x cols vs blob
           raw[:72] + bytes(width) + raw[72 + width:],                          # ciphertext 0
           raw[:72] + b"\xff" * width + raw[72 + width:]]                       # ciphertext >= n^2
    for b in bad:
        with pytest.raises(ValueError):
            CipherMessage.from_bytes(b, pk)
    with pytest.raises(ValueError):
        CipherMessage.from_bytes(raw, paillier.keygen(768, insecure=True)[0])   # other key width
    with pytest.raises(TypeError):
        CipherMessage.from_bytes("text", pk)
    with pytest.raises(ValueError):
        CipherMessage("enc_response", 1, 0, 1, 0, 2, 1, [1], pk)
    with pytest.raises(ValueError):
        CipherMessage("other", 1, 0, 1, 0, 1, 1, [1], pk)

    # the server: wrong kind, wrong key, wrong shape, the same response twice
    y = server.noise(c)
    with pytest.raises(ValueError, match="already noised"):
        server.noise(c)
    with pytest.raises(ValueError):
        server.noise(y)
    with pytest.raises(ValueError):
        server.noise(Message("response", 1, 0, 1, 0, np.zeros((1, 1), dtype=np.uint64)))
    c2 = clients[2].answer(q[2])
    wrong_key = CipherMessage(c2.kind, 2, 0, 1, 0, c2.rows, c2.cols, c2.cts,
                              clients[1].paillier_public_key)
    with pytest.raises(ValueError, match="key"):
        server.noise(wrong_key)
    with pytest.raises(ValueError, match="rows"):
        server.noise(CipherMessage(c2.kind, 2, 0, 1, 0, c2.rows - 1 or 2, c2.cols,
                                   (c2.cts * 2)[:(c2.rows - 1 or 2) * c2.cols], pk))

    # the querier: not its message, not a unit, plaintext overflowing the slots
    with pytest.raises(ValueError):
        clients[1].decrypt(y)
    with pytest.raises(ValueError):
        clients[0].decrypt(c)
    with pytest.raises(ValueError):
        clients[0].decrypt(y, y.rows + 1)
    sk = keys[0][1]
    for ct in (sk.p, secrets.randbelow(pk.nsquare - 2) + 2):
        forged = CipherMessage("noised_response", 1, 0, 1, 0, y.rows, y.cols,
                               [ct] + y.cts[1:], pk)
        with pytest.raises(ValueError):
            clients[0].decrypt(forged)
    assert clients[0].decrypt(y).shape == (y.rows, prm.base.sub)


def test_key_handling_errors(keys):
    local = [{"a": np.zeros(2)}, {"a": np.ones(2)}, {"b": np.ones(2)}]
    with pytest.raises(ValueError, match="insecure_keys"):
        secea_phe.run_round(local, key_bits=1024)
    prm = phe_params(3, 2)
    with pytest.raises(ValueError, match="keypair"):
        Client(0, prm, ["a"], (keys[0][0], keys[1][1]))
    with pytest.raises(ValueError, match="bits"):
        Client(0, prm, ["a"], paillier.keygen(768, insecure=True))
    c = Client(0, prm, ["a"], keys[0])
    with pytest.raises(ValueError):
        c.set_paillier_keys([keys[0][0], keys[1][0]])
    with pytest.raises(ValueError, match="own"):
        c.set_paillier_keys([keys[1][0], keys[1][0], keys[2][0]])
    c.set_paillier_keys([k[0].to_bytes() for k in keys[:3]])      # wire form accepted
    with pytest.raises(TypeError):
        Client(0, prm.base, ["a"], keys[0])
    with pytest.raises(ValueError, match="2 key pairs|3 key pairs"):
        secea_phe.run_round(local, key_bits=BITS, insecure_keys=True, keys=keys[:2])


def test_run_job_is_json_serializable():
    out = jobs.secea_phe_job({"N": 3, "key-bits": BITS}, insecure_keys=True, processes=1)
    text = json.dumps(out)
    assert json.loads(text)["verified"] is True
    assert out["protocol"] == "secea-phe" and out["key_bits"] == BITS and out["M"] > 0
    assert out["secea"]["same_means"] is True
    assert set(out["core_seconds"]) >= {"union", "encode", "offline", "responses", "encrypt",
                                        "noise", "decrypt", "decode"}
    with pytest.raises(ValueError, match="unknown"):
        jobs.secea_phe_job(bogus=1)
    with pytest.raises(TypeError):
        jobs.secea_phe_job(compare="yes")
    with pytest.raises(TypeError):
        jobs.secea_phe_job([1, 2])


def test_a_query_block_is_answered_once(keys):
    """As in SecEA: a second answer to one (round, querier, block) is refused,
    so a relay that alters a query cannot have the querier and the server
    difference two answers of one block (same server noise) into y_v times
    the change."""
    rng = np.random.default_rng(31)
    local = make_local(rng, 3, 2, universe=8, lo=2, hi=5)
    clients, _ = setup_parties(local, phe_params(3, 2), keys)
    members = np.arange(len(clients[0].ids))
    queries = clients[0].queries(1, 0, members)
    clients[1].answer_plain(queries[1])
    with pytest.raises(ValueError, match="already used"):
        clients[1].answer_plain(queries[1])
    with pytest.raises(ValueError, match="already used"):
        clients[1].answer(queries[1])
    clients[2].answer(queries[2])           # other responders and blocks are unaffected


@pytest.fixture(scope="module")
def short_keys():
    return [paillier.keygen(BITS, insecure=True, variant=paillier.SHORT_EXPONENT) for _ in range(4)]


@pytest.mark.parametrize("processes", [1, 2])
def test_short_exponent_variant_is_exact(short_keys, processes):
    """The session option ``variant="short-exponent"``: the same means bit for
    bit, in the sessions (one process) and with the parties in worker
    processes."""
    rng = np.random.default_rng(77 + processes)
    local = make_local(rng, 4, 3)
    prm = PHEParams(SecEAParams(N=4, d=3, precision=6), key_bits=BITS, insecure_keys=True,
                    variant=paillier.SHORT_EXPONENT)
    res = secea_phe.run_round(local, params=prm, keys=short_keys, verify=True, processes=processes,
                              block_size=4)
    ref = secea.plaintext_sums(local, prm.base)
    assert res.matches([s for s, _ in ref], [c for _, c in ref])
    for n, want in enumerate(exact_mean_floats(local, prm)):
        got = np.array([res.embeddings[n][k] for k in local[n]])
        assert got.tobytes() == want.tobytes()
    # fresh keys of the variant when none are given
    res2 = secea_phe.run_round(local[:3], key_bits=BITS, insecure_keys=True, precision=6,
                               variant=paillier.SHORT_EXPONENT, verify=True)
    assert res2.verified


def test_variants_never_mix_in_a_session(keys, short_keys):
    local = [{"a": np.zeros(2)}, {"a": np.ones(2)}, {"b": np.ones(2)}]
    short = PHEParams(SecEAParams(N=3, d=2), key_bits=BITS, insecure_keys=True, variant=paillier.SHORT_EXPONENT)
    with pytest.raises(ValueError, match="variant"):
        Client(0, short, ["a"], keys[0])                          # a textbook key in a short-exponent round
    with pytest.raises(ValueError, match="variant"):
        Client(0, phe_params(3, 2), ["a"], short_keys[0])         # and the reverse
    c = Client(0, short, ["a"], short_keys[0])
    with pytest.raises(ValueError, match="textbook public key"):
        c.set_paillier_keys([short_keys[0][0].to_bytes()] + [k[0].to_bytes() for k in keys[1:3]])
    with pytest.raises(ValueError, match="variant"):
        secea_phe.run_round(local, key_bits=BITS, insecure_keys=True, keys=keys[:3],
                            variant=paillier.SHORT_EXPONENT)
    with pytest.raises(ValueError, match="variant"):
        PHEParams(SecEAParams(N=3, d=2), key_bits=BITS, insecure_keys=True, variant="fast")
