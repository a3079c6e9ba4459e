"""SecEA (Tang, Zhu, Li, Zhang, Sun, 2022), Sec. 4: exactness against the plaintext sums, the worked
example of Sec. 4.4, the entity union, robust decoding, malformed messages,
and statistical privacy checks in a small field."""
import secrets

import numpy as np
import pytest

from secea_fast import EMBEDDING_PRIME as P, GOLDILOCKS as GL, poly
from secea_fast.prg import Prg
from secea_fast.protocols import _secea_local, secea
from secea_fast.protocols._secea_wire import pad_domain
from secea_fast.protocols.secea import Client, Message, SecEAParams, Server


def make_local(rng, N, d, universe=80, lo=3, hi=30, bound=1.0):
    ids = [f"ent-{i}" for i in range(universe)]
    local = []
    for _ in range(N):
        pick = rng.choice(universe, int(rng.integers(lo, hi)), replace=False)
        local.append({ids[i]: rng.uniform(-bound, bound, d) for i in pick})
    return local


def test_paper_example_coefficients():
    """Sec. 4.4: N = 3, T = 1, alpha = (3, 4, 5), beta = (1, 2)."""
    prm = SecEAParams(N=3, d=2, T=1, alphas=(3, 4, 5), betas=(1, 2))
    assert prm.K == 1 and prm.response_len == 3 and prm.redundancy == 0
    neg = lambda x: (P - x) % P
    # y_{n,v} = -v h + (v+1) z
    assert prm.share_matrix.tolist() == [[neg(1), 2], [neg(2), 3], [neg(3), 4]]
    # q_v = (-v + (v+1) z_1, (v+1) z_2): one-hot coefficient -v, noise (v+1)
    assert prm.query_onehot.tolist() == [neg(1), neg(2), neg(3)]
    # server noise with z^i = 3 s_i: Y_1 = A_1 + 3 s_1, Y_2 = A_2 + 3 s_2,
    # Y_3 = A_3 - 6 s_1 + 8 s_2
    W = prm.noise_matrix.astype(object) * 3 % P
    assert W.tolist() == [[3, 0], [0, 3], [neg(6), 8]]
    # decoding: 6 Y_1 - 8 Y_2 + 3 Y_3
    assert prm.decode_matrix.tolist() == [[6, neg(8), 3]]


def test_paper_example_end_to_end():
    """E_1 = {e1}, E_2 = {e2}, E_3 = {e1}: clients 1 and 3 get (h_1 + h_3)/2."""
    h1, h2, h3 = np.array([0.5, -0.25]), np.array([0.75, 0.125]), np.array([-0.125, 1.0])
    local = [{"e1": h1}, {"e2": h2}, {"e1": h3}]
    prm = SecEAParams(N=3, d=2, T=1, alphas=(3, 4, 5), betas=(1, 2))
    res = secea.run_round(local, params=prm, verify=True)
    assert res.union_size == 2
    assert res.embeddings[0]["e1"].tolist() == ((h1 + h3) / 2).tolist()
    assert res.embeddings[2]["e1"].tolist() == ((h1 + h3) / 2).tolist()
    assert res.embeddings[1]["e2"].tolist() == h2.tolist()
    assert res.counts[0].tolist() == [2] and res.counts[1].tolist() == [1]


@pytest.mark.parametrize("N", [3, 4, 5, 6, 7, 8, 11,
                               pytest.param(20, marks=pytest.mark.slow)])   # N = 20: 12 s; .ci/run runs it
def test_exact_for_every_T(N):
    rng = np.random.default_rng(N)
    for T in range(1, (N + 1) // 2):
        d = int(rng.integers(1, 9))
        local = make_local(rng, N, d, universe=40, lo=2, hi=12)
        res = secea.run_round(local, T=T, precision=6, verify=True,
                               block_size=int(rng.integers(1, 8)))
        assert res.params.K == (N + 1) // 2 - T
        # the averages are the quantized sums over the holder count (eq. 5)
        for n, emb in enumerate(local):
            for i, key in enumerate(emb):
                want = res.sums[n][i] / 10**6 / res.counts[n][i]
                assert res.embeddings[n][key].tolist() == want.tolist()


def test_padding_when_K_does_not_divide_d_plus_1_and_multiprocess():
    rng = np.random.default_rng(3)
    local = make_local(rng, 7, 6, universe=50)          # K = 3, d + 1 = 7
    a = secea.run_round(local, T=1, verify=True, block_size=5)
    b = secea.run_round(local, T=1, verify=True, block_size=5, processes=2)
    assert a.params.K == 3 and a.params.sub == 3
    for n in range(7):
        assert np.array_equal(a.sums[n], b.sums[n]) and np.array_equal(a.counts[n], b.counts[n])


def test_aggregate_api_matches_float_mean():
    rng = np.random.default_rng(5)
    local = make_local(rng, 4, 5)
    out = secea.aggregate(local, T=1, precision=8)
    for n, emb in enumerate(local):
        assert set(out[n]) == set(emb)
        for key in emb:
            mean = np.mean([loc[key] for loc in local if key in loc], axis=0)
            assert np.allclose(out[n][key], mean, atol=1e-8)


def test_extremal_values_decode_exactly():
    N, d, bound = 5, 3, 100.0
    local = [{"x": np.full(d, bound), "y": np.full(d, -bound)} for _ in range(N)]
    res = secea.run_round(local, T=2, precision=8, bound=bound, verify=True)
    assert res.embeddings[0]["x"].tolist() == [bound] * d
    assert res.embeddings[4]["y"].tolist() == [-bound] * d


# ----------------------------------------------------------------- union
@pytest.mark.parametrize("sizes,overlap", [((5, 17, 1), 0.5), ((30, 30, 30, 30), 0.0),
                                           ((8, 40, 3, 22, 9), 0.9)])
def test_entity_union_unequal_sizes_and_overlaps(sizes, overlap):
    rng = np.random.default_rng(len(sizes))
    common = [f"c{i}" for i in range(10)]
    sets = []
    for n, s in enumerate(sizes):
        k_common = min(s, 10, int(round(overlap * s)))
        mine = list(rng.choice(common, k_common, replace=False)) + \
            [f"own-{n}-{i}" for i in range(s - k_common)]
        sets.append(mine)
    got = secea.entity_union(sets)
    want = np.unique(np.concatenate([secea.hash_ids(s) for s in sets]))
    assert got.tolist() == want.tolist()


def test_union_masked_uploads_hide_the_vector():
    rng = np.random.default_rng(0)
    prm = SecEAParams(N=3, d=1)
    sets = [["a", "b"], ["b", "c"], ["d", "a"]]
    clients, server = _secea_local.make_parties(sets, prm)
    ups = [c.psu_upload(2) for c in clients]
    # an upload alone is not the Laurent tail of its set: the masks are there
    f = poly.from_roots(secea.hash_ids(sets[0]), GL)
    tot = server.psu_sum(ups)
    assert len(server.union) == 4
    for c in clients:
        assert c.psu_finish(tot).tolist() == sorted(secea.hash_ids(["a", "b", "c", "d"]).tolist())
    # pads are one-time: a second upload in the same round is refused
    with pytest.raises(ValueError, match="already used"):
        clients[0].psu_upload(2)


def test_hash_ids_types_and_collisions():
    h = secea.hash_ids([1, "1", b"1", -1, 2**70])
    assert len(set(h.tolist())) == 5 and (h < np.uint64(GL)).all()
    assert secea.hash_ids(["x"]).tolist() == secea.hash_ids(["x"]).tolist()
    with pytest.raises(ValueError, match="repeated"):
        secea.hash_ids(["a", "b", "a"])
    with pytest.raises(TypeError):
        secea.hash_ids([1.5])
    with pytest.raises(TypeError):
        secea.hash_ids("abc")
    # a collision in a tiny field is reported with both ids
    ids = list(range(40))
    with pytest.raises(ValueError, match="collision"):
        secea.hash_ids(ids, p=31)


# ----------------------------------------------------------------- robustness
def test_dropped_and_corrupted_responses_within_and_beyond_the_bound():
    rng = np.random.default_rng(11)
    local = make_local(rng, 7, 3, universe=30)
    # N = 7, T = 1, K = 1: responses have degree 2, 4 redundant positions
    prm = SecEAParams(N=7, d=3, T=1, K=1)
    assert prm.redundancy == 4
    ok = secea.run_round(local, params=prm, verify=True, drop={(0, 1), (0, 2), (0, 3), (0, 4)})
    assert ok.faulty == []
    res = secea.run_round(local, params=prm, verify=True, corrupt={(2, 5), (2, 6), (3, 0)})
    assert res.faulty == [(2, 5), (2, 6), (3, 0)]
    res = secea.run_round(local, params=prm, verify=True, corrupt={(1, 0)}, drop={(1, 3), (1, 4)})
    assert res.faulty == [(1, 0)]
    with pytest.raises(secea.DecodingError):
        secea.run_round(local, params=prm, drop={(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)})
    with pytest.raises((secea.DecodingError, AssertionError)):
        secea.run_round(local, params=prm, verify=True, corrupt={(0, 1), (0, 2), (0, 3)})


def test_no_redundancy_drop_raises_and_even_N_tolerates_one():
    rng = np.random.default_rng(12)
    local5 = make_local(rng, 5, 2, universe=20, hi=15)
    with pytest.raises(secea.DecodingError, match="no redundancy"):
        secea.run_round(local5, drop={(0, 3)})
    local6 = make_local(rng, 6, 2, universe=20, hi=15)
    res = secea.run_round(local6, drop={(0, 3), (2, 1)}, verify=True)
    assert res.params.redundancy == 1


def test_parameter_validation():
    with pytest.raises(ValueError, match="too large"):
        SecEAParams(N=4, d=3, T=2)
    with pytest.raises(ValueError, match="N >= 2"):
        SecEAParams(N=1, d=3)
    with pytest.raises(ValueError, match="disjoint"):
        SecEAParams(N=3, d=2, alphas=(2, 4, 5), betas=(1, 2))
    with pytest.raises(ValueError, match="distinct"):
        SecEAParams(N=3, d=2, alphas=(3, 3, 5), betas=(1, 2))
    with pytest.raises(ValueError, match="nonzero"):
        SecEAParams(N=3, d=2, alphas=(0, 4, 5), betas=(1, 2))
    with pytest.raises(ValueError, match="K must be"):
        SecEAParams(N=5, d=2, K=3)
    with pytest.raises(ValueError, match="capacity"):   # 2 N B 10^13 > p ~ 1.1e15
        SecEAParams(N=5, d=2, precision=13, bound=100.0)
    SecEAParams(N=5, d=2, precision=12, bound=100.0)
    with pytest.raises(TypeError):
        SecEAParams(N=5.0, d=2)


def test_bad_inputs_raise_clear_errors():
    rng = np.random.default_rng(2)
    local = make_local(rng, 3, 4)
    with pytest.raises(ValueError, match="bound"):
        bad = [dict(x) for x in local]
        k = next(iter(bad[0]))
        bad[0][k] = np.full(4, 1e3)
        secea.run_round(bad)
    with pytest.raises(ValueError, match="shape"):
        bad = [dict(x) for x in local]
        bad[1][next(iter(bad[1]))] = np.zeros(5)
        secea.run_round(bad)
    with pytest.raises(ValueError, match="non-empty"):
        secea.run_round([local[0], {}, local[2]])
    with pytest.raises(TypeError):
        secea.run_round(local[0])


def _parties(local, **kw):
    prm = SecEAParams(N=len(local), d=len(next(iter(local[0].values()))), **kw)
    clients, server = _secea_local.make_parties([list(x) for x in local], prm)
    _secea_local.run_union(clients, server)
    return prm, clients, server


def test_malformed_messages_rejected():
    rng = np.random.default_rng(4)
    local = make_local(rng, 3, 2)
    prm, clients, server = _parties(local)
    msgs = clients[0].share(local[0], 1)
    raw = msgs[1].to_bytes()
    back = Message.from_bytes(raw)      # XOR-encrypted: words may exceed p
    assert back.kind == "share" and np.array_equal(back.data, msgs[1].data)
    assert msgs[1].nbytes == len(raw)
    for bad in (raw[:-1], raw + b"\0", b"XXXX" + raw[4:], raw[:4] + b"\x07" + raw[5:]):
        with pytest.raises(ValueError):
            Message.from_bytes(bad)
    with pytest.raises(TypeError):
        Message.from_bytes("text")
    # kind out of range
    with pytest.raises(ValueError, match="kind"):
        Message.from_bytes(raw[:8] + (99).to_bytes(8, "little") + raw[16:])
    # entries >= p
    big = Message("share", 0, 1, 1, 0, np.full((1, 1), P, dtype=np.uint64)).to_bytes()
    with pytest.raises(ValueError, match=">= p"):
        Message.from_bytes(big, P)
    # wrong receiver / kind / round
    with pytest.raises(ValueError):
        clients[2].receive_shares([msgs[1]] * 3)
    with pytest.raises(ValueError, match="already used"):
        clients[0].share(local[0], 1)
    # a query before shares of that round
    q = clients[0].queries(7, 0, [0])
    with pytest.raises(ValueError, match="no shares"):
        clients[1].answer(q[1])
    with pytest.raises(ValueError, match="noises responses only"):
        server.noise(q[1])


def test_secrets_refuse_insecure_rng(no_insecure_rng):
    local = [{"a": np.array([0.5, 0.25]), "b": np.array([0.0, 1.0])}, {"b": np.array([1.0, 0.5])},
             {"a": np.array([0.125, 0.0])}]
    res = secea.run_round(local, verify=True)
    assert res.embeddings[0]["a"].tolist() == [0.3125, 0.125]


# ----------------------------------------------------------------- privacy
SMALL_P = 7


def _chi2_two_sample(a, b, cells):
    ca = np.bincount(a, minlength=cells).astype(float)
    cb = np.bincount(b, minlength=cells).astype(float)
    tot = ca + cb
    keep = tot > 0
    ca, cb, tot = ca[keep], cb[keep], tot[keep]
    na, nb = ca.sum(), cb.sum()
    ea, eb = tot * na / (na + nb), tot * nb / (na + nb)
    return float((((ca - ea) ** 2 / ea) + ((cb - eb) ** 2 / eb)).sum()), int(keep.sum()) - 1


def _views(entity_of_client0, emb_value, rounds):
    """Client 1's view (T = 1) of client 0: its share y_{0,1} and its query
    q_{0,1,e}, over many rounds, as cell indices in F_7^2."""
    prm = SecEAParams(N=3, d=1, T=1, precision=0, bound=1.0, p=SMALL_P)
    sets = [[entity_of_client0], ["a", "b"], ["a", "b"]]
    clients, server = _secea_local.make_parties(sets, prm)
    _secea_local.run_union(clients, server)
    c0 = clients[0]
    # positions of "a" / "b" in the union are fixed by their hashes
    shares, queries = [], []
    for r in range(1, rounds + 1):
        y = c0.share({entity_of_client0: np.array([emb_value])}, r)[1]
        # remove the relay pad as client 1 does
        yy = clients[1]._pad(0, pad_domain(r, "share", 0, 1)).xor_into(
            np.empty_like(y.data), y.data, SMALL_P, check=True)
        q = c0.queries(r, 0, [0])[1]
        qq = clients[1]._pad(0, pad_domain(r, "query", 0, 1, 0)).xor_into(
            np.empty_like(q.data), q.data, SMALL_P, check=True)
        # shares: (M = 2, sub = 2) -> the two coordinates of the entity rows
        shares.append(int(yy[0, 0]) * SMALL_P + int(yy[1, 0]))
        queries.append(int(qq[0, 0]) * SMALL_P + int(qq[0, 1]))
    return np.array(shares), np.array(queries)


def test_colluder_view_independent_of_entity_set_and_embedding():
    R = 2500
    s_a, q_a = _views("a", 1, R)
    s_b, q_b = _views("b", -1, R)
    cells = SMALL_P ** 2
    # df = 48: mean 48, sd 9.8; 48 + 6 sd ~ 107 (false alarm < 1e-6)
    for x, y in ((s_a, s_b), (q_a, q_b)):
        stat, df = _chi2_two_sample(x, y, cells)
        assert df == cells - 1
        assert stat < 110, stat
    # power check: the same test flags the query's one-hot part without its noise
    onehot_a = np.zeros(R, dtype=np.int64) + 1 * SMALL_P
    onehot_b = np.zeros(R, dtype=np.int64) + 1
    stat, _ = _chi2_two_sample(onehot_a, onehot_b, cells)
    assert stat > 1000


# ----------------------------------------------------------------- baselines, workloads, CLI
def test_baselines_embavg_and_psi_sa():
    from secea_fast import workloads
    from secea_fast.protocols import baselines
    local = workloads.workload("tiny", N=3, seed=1)
    emb = baselines.embavg_round(local)
    res = secea.run_round(local, verify=True)
    for n in range(3):
        for k in local[n]:
            assert np.allclose(emb["embeddings"][n][k], res.embeddings[n][k], atol=1e-8)
    psi = baselines.psi_sa_round(local, precision=8)
    inter = set(local[0]) & set(local[1]) & set(local[2])
    assert psi["intersection"] == len(inter) > 0
    for n in range(3):
        for k in local[n]:
            want = np.mean([loc[k] for loc in local], axis=0) if k in inter else local[n][k]
            assert np.allclose(psi["embeddings"][n][k], want, atol=1e-8)


@pytest.mark.parametrize("processes", [None, 2])
def test_a_kept_union_is_not_rerun_and_a_wrong_one_is_refused(processes):
    """run_round(union=...) reuses an earlier round's union (no union
    uploads: the union phase's bytes are the key exchange alone, 0 on the
    executor path) with the same sums; a union missing an entity fails
    (the control: the reuse is checked, not trusted)."""
    from secea_fast import workloads
    from secea_fast.protocols.secea.session import RoundFailed
    local = workloads.workload("tiny", N=3, d=2, seed=4)
    first = secea.run_round(local, verify=True)
    again = secea.run_round(local, verify=True, rnd=2, union=first.union, processes=processes)
    assert np.array_equal(again.union, first.union) and again.union_size == first.union_size
    assert again.bytes["union"] < first.bytes["union"] / 4
    assert all(np.array_equal(a, b) for a, b in zip(again.sums, first.sums))
    with pytest.raises((ValueError, RoundFailed), match="does not contain this client.s entities"):
        secea.run_round(local, rnd=3, union=first.union[1:], processes=processes)
    with pytest.raises(TypeError, match="union must be a 1-D uint64 array"):
        secea.run_round(local, union=first.union.astype(np.int64))


def test_one_embavg_is_secea_bit_for_bit_and_checks_its_arrays():
    """The one plaintext EmbAvg: on the fixed-point rows it is SecEA's output
    bit for bit (two digits fewer is caught: the check has power); in floats
    it is the sum over holders in client order divided by their count; the
    array form equals the dict form; bad arrays are refused by name."""
    from secea_fast import workloads
    from secea_fast.protocols import baselines
    local = workloads.workload("tiny", N=3, d=4, seed=2)
    got = secea.aggregate(local, precision=8)
    fixed, weak = baselines.embavg(local, precision=8), baselines.embavg(local, precision=6)
    assert all(np.array_equal(g[k], f[k]) for g, f in zip(got, fixed) for k in g)
    assert not all(np.array_equal(g[k], w[k]) for g, w in zip(got, weak) for k in g)
    plain = baselines.embavg(local)
    for n, emb in enumerate(plain):
        for k, v in emb.items():
            rows = [loc[k] for loc in local if k in loc]
            tot = rows[0].astype(np.float64)
            for r in rows[1:]:
                tot = tot + r
            assert np.array_equal(v, tot / len(rows))
    ids = [np.array([0, 2]), np.array([2, 1])]
    rows = [np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[5.0, 6.0], [7.0, 8.0]])]
    out = baselines.embavg_rows(ids, rows, 3)
    assert out[0].tolist() == [[1.0, 2.0], [4.0, 5.0]] and out[1].tolist() == [[4.0, 5.0], [7.0, 8.0]]
    assert [a.tolist() for a in baselines.embavg_rows(ids, rows, 3, precision=0)] == [a.tolist() for a in out]
    with pytest.raises(ValueError, match=r"ids\[0\] must lie in \[0, n_entities = 2\)"):
        baselines.embavg_rows(ids, rows, 2)
    with pytest.raises(ValueError, match=r"rows\[1\] must have shape"):
        baselines.embavg_rows(ids, [rows[0], rows[1][:1]], 3)
    with pytest.raises(TypeError, match=r"ids\[0\] must be a 1-D integer array"):
        baselines.embavg_rows([np.array([0.0, 2.0]), ids[1]], rows, 3)
    with pytest.raises(ValueError, match="ids and rows"):
        baselines.embavg_rows(ids, rows[:1], 3)
    with pytest.raises(ValueError, match=r"rows\[0\] times 10\^8"):
        baselines.embavg_rows(ids, [rows[0] * 1e12, rows[1]], 3, precision=8)


def test_workload_shapes_and_movielens_loader(tmp_path):
    from secea_fast import workloads
    loc = workloads.workload("movielens-100k", N=5, d=4)
    union = set().union(*(set(x) for x in loc))
    assert len(union) <= 943 + 1682 and len(union) > 2000
    assert all(len(v) == 4 for x in loc for v in x.values())
    cen = workloads.workload("soybean", N=3)
    assert sum(len(x) for x in cen) == 307            # sample level: disjoint
    f = tmp_path / "ratings.dat"
    f.write_text("1::10::5::0\n1::11::3::0\n2::10::4::0\n3::12::1::0\n4::13::2::0\n4::14::2::0\n")
    ml = workloads.load_movielens(str(f), N=2, d=3)
    assert set().union(*(set(x) for x in ml)) >= {"u1", "i10"}
    with pytest.raises(ValueError):
        workloads.load_movielens(str(tmp_path / "missing.dat"))
    bad = tmp_path / "bad.dat"
    bad.write_text("a::b\nc::d\n")
    with pytest.raises(ValueError, match="parse"):
        workloads.load_movielens(str(bad))
    with pytest.raises(ValueError, match="unknown workload"):
        workloads.workload("nope")


def test_cli_run_tiny(tmp_path, capsys):
    import json
    from secea_fast import cli
    out = tmp_path / "r.json"
    assert cli.main(["run", "--workload", "tiny", "-N", "4", "--processes", "1", "--quiet",
                     "--json", str(out)]) == 0
    rep = json.loads(out.read_text())
    assert rep["verified"] is True and rep["N"] == 4 and rep["M"] > 0
    assert set(rep["core_seconds"]) >= {"union", "encode", "offline", "responses", "decode"}
    assert cli.main(["run", "--workload", "tiny", "-N", "4", "-T", "3"]) == 2
    assert "-T must be <= 1 for -N 4" in capsys.readouterr().err


def _parties_after_union(prm, ids_of, k):
    """Clients holding entities e<i> for i in ids_of(n), after the union with
    padding size k (round 1)."""
    cs = [secea.Client(n, prm, [f"e{i}" for i in ids_of(n)]) for n in range(prm.N)]
    srv = secea.Server(prm)
    keys = [c.public_key for c in cs]
    for c in cs:
        c.set_peer_keys(keys)
    tot = srv.psu_sum([c.psu_upload(k, 1) for c in cs])
    for c in cs:
        c.psu_finish(tot)
    return cs


@pytest.mark.parametrize("T,N", [(1, 5), (2, 6)])
def test_queries_do_not_depend_on_the_tile_size(monkeypatch, T, N):
    """iter_queries draws z and the pads tile by tile; every tile size gives
    the same queries (the streams are consumed in order); the rounds above
    check that the queries decode exactly."""
    from secea_fast import tuning
    prm = secea.SecEAParams(N=N, d=5, T=T)
    cs = _parties_after_union(prm, lambda n: range(n, 60 + 3 * n), 80)
    outs = []
    for tile in (1, 7 * cs[1].M + 3, 1 << 20):
        monkeypatch.setattr(tuning, "SECEA_QUERY_TILE_ELEMS", tile)
        cs[1]._used.clear()
        outs.append([q.data.copy() for q in cs[1].iter_queries(1, 0, list(range(2, 19)))])
    for other in outs[1:]:
        for a, b in zip(outs[0], other):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("N,T", [(3, 1), (6, 2)])
def test_queries_are_sent_divided_by_c_v_and_answered_exactly(N, T):
    """Deviation pinned: the query sent to v is eq. (16)'s q_{n,v,e} divided
    by c_v = l_{K+1}(alpha_v), and v's answer (pads removed) is still
    <q_{n,v,e}, y_v> of eq. (20) for the paper's q and v's own share."""
    prm = secea.SecEAParams(N=N, d=3, T=T)
    cs = _parties_after_union(prm, lambda n: range(n, 9 + 2 * n), 20)
    rng = np.random.default_rng(N)
    locs = [{k: rng.uniform(-1, 1, 3) for k in c.ids} for c in cs]
    msgs = [c.share(locs[i], 1) for i, c in enumerate(cs)]
    for v, c in enumerate(cs):
        c.receive_shares([msgs[n][v] for n in range(N)])
    n, members, K = 1, [0, 2, 3], prm.K
    q0 = cs[n]
    B, M = len(members), q0.M
    # the paper's query (eq. 15-16) from the same z streams
    Z = np.empty((T, B * M), dtype=np.uint64)
    for t in range(T):
        Prg(q0._query_seed, pad_domain(1, "query-z" + (str(t) if t else ""), n, n, 0)).field_into(Z[t], P)
    onehot = np.zeros(B * M, dtype=object)
    onehot[np.arange(B) * M + q0.positions[members]] = 1
    for v, msg in enumerate(q0.queries(1, 0, members)):
        c = [int(x) for x in prm.share_matrix[v, K:]]
        paper = (int(prm.query_onehot[v]) * onehot + sum(c[t] * Z[t].astype(object) for t in range(T))) % P
        sent = msg.data.reshape(-1)
        if v != n:
            sent = q0._pad(v, pad_domain(1, "query", n, v, 0)).xor_into(np.empty_like(sent), sent, P)
        assert c[0] == int(prm.query_scale[v]) != 0
        assert np.array_equal(sent.astype(object) * c[0] % P, paper)
        A = cs[v].answer(msg).data
        pad = cs[v]._pad(n, pad_domain(1, "response", v, n, 0)).field_into(np.empty_like(A), P)
        got = (A.astype(object) - pad.astype(object)) % P
        want = paper.reshape(B, M).dot(cs[v]._y.astype(object)) % P
        assert np.array_equal(got, want)


# ----------------------------------------------------------------- edge inputs
def test_complex_and_non_numeric_embeddings_refused():
    """NumPy would keep only the real part (a ComplexWarning) or fail deep
    inside; the error names the argument and the entity."""
    rng = np.random.default_rng(21)
    local = make_local(rng, 3, 2, universe=10, hi=8)
    key = next(iter(local[1]))
    for bad, what in ((np.array([1 + 2j, 0.5]), "complex"), (np.array(["a", "b"]), "non-numeric"),
                      (np.array([1.0, None], dtype=object), "non-numeric")):
        loc = [dict(x) for x in local]
        loc[1][key] = bad
        with pytest.raises(TypeError, match=rf"local\[1\]\[{key!r}\].*{what}"):
            secea.aggregate(loc)
    prm, clients, server = _parties(local)
    with pytest.raises(TypeError, match="complex"):
        clients[0].encode_embeddings({k: v.astype(complex) for k, v in local[0].items()})
    # real inputs of other dtypes still work
    loc = [{k: v.astype(np.float32) for k, v in x.items()} for x in local]
    secea.run_round(loc, verify=True)


def test_single_string_is_not_a_set_of_entities():
    prm = SecEAParams(N=3, d=1)
    for bad in ("abc", b"abc"):
        with pytest.raises(TypeError, match="entities must be a collection"):
            Client(0, prm, bad)
        with pytest.raises(TypeError, match=r"sets\[1\]"):
            secea.entity_union([["a"], bad, ["c"]])
    with pytest.raises(TypeError, match="collection"):
        Client(0, prm, 5)
    assert Client(0, prm, ["abc"]).ids == ["abc"]
    assert Client(0, prm, {"x": 1, "y": 2}).ids == ["x", "y"]


def test_drop_and_corrupt_pairs_naming_unknown_clients_refused():
    rng = np.random.default_rng(22)
    local = make_local(rng, 5, 2, universe=12, hi=8)
    key = next(iter(local[0]))
    prm = SecEAParams(N=5, d=2, K=1)
    for arg, pairs, unknown in (("drop", {(0, 5)}, "5"), ("corrupt", {(-1, 2)}, "-1"),
                                ("drop", {(0, key)}, repr(key)), ("corrupt", {(1.0, 2)}, "1.0")):
        with pytest.raises(ValueError, match=rf"{arg}: .*unknown client {unknown}"):
            secea.run_round(local, params=prm, **{arg: pairs})
    with pytest.raises(ValueError, match="drop: .* not a .* pair"):
        secea.run_round(local, params=prm, drop={(0, 1, 2)})
    with pytest.raises(TypeError, match="corrupt must be a set"):
        secea.run_round(local, params=prm, corrupt="01")
    with pytest.raises(ValueError, match="drop: .*unknown client 7"):
        secea.aggregate(local, K=1, drop=[(7, 0)])
    # valid pairs as lists or NumPy ints are accepted
    res = secea.run_round(local, params=prm, verify=True, drop=[[0, 1], (np.int64(2), 3)])
    assert res.faulty == []


@pytest.mark.parametrize("sets", [[["a", "b", 1], ["b", "c"]], [["x"], ["x"]], [[b"z"], ["q", "r", "s"]]])
def test_entity_union_of_two_clients(sets):
    """Sec. 4.1 has no collusion threshold: N = 2 works (SecEAParams(T=1)
    is invalid for N = 2, and the union used to build it)."""
    got = secea.entity_union(sets)
    want = np.unique(np.concatenate([secea.hash_ids(s) for s in sets]))
    assert got.tolist() == want.tolist()
    with pytest.raises(ValueError, match="N >= 2"):
        secea.entity_union([["a"]])


def test_decoding_without_redundancy_is_reported_unchecked():
    """Responses are a Reed-Solomon codeword of dimension k = 2(K+T-1)+1:
    with redundancy a corrupted (non-count) entry is corrected and its
    sender named; with exactly k responses nothing can detect it, so the
    result says it is unchecked and verify=True refuses it."""
    rng = np.random.default_rng(23)
    local = make_local(rng, 5, 2, universe=12, lo=4, hi=8)
    prm, clients, server = _parties(local, K=1)
    assert prm.response_len == 3 and prm.redundancy == 2 and prm.sub == 3   # count at column 2
    out = [c.share(local[n], 1) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([out[n][v] for n in range(5)])
    (members,) = clients[0].blocks(64)
    resps = [server.noise(clients[v].answer(q)) for v, q in enumerate(clients[0].queries(1, 0, members))]
    ref_sums, ref_counts = secea.plaintext_sums(local, prm)[0]

    def corrupt(msgs, v):
        m = msgs[v]
        data = m.data.copy()
        data[:, 0] = (data[:, 0] + np.uint64(1)) % np.uint64(P)      # entry 0 of each embedding
        return msgs[:v] + [Message(m.kind, m.sender, m.receiver, m.round, m.block, data)] + msgs[v + 1:]

    res = clients[0].decode(resps, members)
    sums, counts, faulty = res                                          # still the 3-tuple
    assert res.checked and res.redundancy == 2 and faulty == []
    assert np.array_equal(sums, ref_sums) and np.array_equal(counts, ref_counts)
    # with redundancy: corrected, and the faulty party named (also with verify=True)
    res = clients[0].decode(corrupt(resps, 3), members, verify=True)
    assert res.checked and res.faulty == [3] and np.array_equal(res.sums, ref_sums)
    # s = 1, e = 1: 2e + s = 3 > N - k = 2, one redundant response: detected, not corrected
    with pytest.raises(secea.DecodingError):
        clients[0].decode(corrupt(resps, 3)[:4] + [None], members)
    # exactly k = 3 responses, one corrupted: wrong, and reported unchecked
    few = corrupt(resps, 3)
    few[1] = few[2] = None
    res = clients[0].decode(few, members)
    assert not res.checked and res.redundancy == 0 and res.faulty == []
    assert not np.array_equal(res.sums[:, 0], ref_sums[:, 0])         # silently wrong entry 0...
    assert np.array_equal(res.sums[:, 1], ref_sums[:, 1]) and np.array_equal(res.counts, ref_counts)
    with pytest.raises(ValueError, match="no redundancy"):
        clients[0].decode(few, members, verify=True)
    # the same without corruption: right, but equally unchecked
    honest = list(resps)
    honest[1] = honest[2] = None
    res = clients[0].decode(honest, members)
    assert not res.checked and np.array_equal(res.sums, ref_sums)
    with pytest.raises(secea.DecodingError, match="no redundancy"):
        clients[0].decode(honest, members, verify=True)


def test_round_reports_blocks_decoded_without_redundancy():
    rng = np.random.default_rng(24)
    local5 = make_local(rng, 5, 2, universe=12, hi=8)
    res = secea.run_round(local5, verify=True)                 # default K: N = k, no redundancy
    assert res.params.redundancy == 0 and not res.checked
    assert res.unchecked == [(n, 0) for n in range(5)]
    with pytest.raises(secea.DecodingError, match="no redundancy"):
        secea.run_round(local5, require_checked=True)
    with pytest.raises(secea.DecodingError, match="no redundancy"):
        secea.aggregate(local5, require_checked=True)
    local7 = make_local(rng, 7, 2, universe=12, hi=8)
    prm = SecEAParams(N=7, d=2, K=1)                            # k = 3, 4 redundant responses
    res = secea.run_round(local7, params=prm, verify=True, require_checked=True, corrupt={(2, 4)})
    assert res.checked and res.unchecked == [] and res.faulty == [(2, 4)]
    res = secea.run_round(local7, params=prm, verify=True, drop={(1, 0), (1, 2), (1, 3), (1, 5)})
    assert res.unchecked == [(1, 0)] and not res.checked


def test_a_query_block_is_answered_once():
    """The response pad is per (round, querier, block): a second answer would
    reuse it, so a client refuses to answer the same block twice."""
    rng = np.random.default_rng(29)
    local = make_local(rng, 3, 2, universe=8, lo=2, hi=5)
    prm, clients, server = _parties(local)
    out = [c.share(local[n], 1) for n, c in enumerate(clients)]
    for v, c in enumerate(clients):
        c.receive_shares([out[n][v] for n in range(3)])
    (members,) = clients[0].blocks(64)
    queries = clients[0].queries(1, 0, members)
    clients[1].answer(queries[1])
    with pytest.raises(ValueError, match="already used"):
        clients[1].answer(queries[1])
