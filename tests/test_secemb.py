import numpy as np
import pytest

from secea_fast.protocols import secemb
from secea_fast.protocols.secemb import (AggregationUpload, RetrievalRequest, RetrievalResponse,
                                         SecEmbParams, Server, User)


def quant(x, P):
    return np.rint(np.asarray(x, dtype=np.float64) * P.scale) / P.scale


def expected_aggregate(items, grads, retrieved, m, d, P, drop=()):
    agg = np.zeros((m, d), dtype=np.int64)
    for u, (it, g) in enumerate(zip(items, grads)):
        if u in drop:
            continue
        kept = ~np.isnan(retrieved[u][:, 0])
        np.add.at(agg, np.asarray(it)[kept], np.rint(np.asarray(g)[kept] * P.scale).astype(np.int64))
    return agg / P.scale


@pytest.mark.parametrize("m, d, mp", [(2, 1, 1), (100, 4, 8), (257, 3, 40)])
def test_round_exact_with_padding_truncation_and_dropout(m, d, mp):
    rng = np.random.default_rng(m + d)
    nu = 6
    Q = rng.normal(size=(m, d)) * 3
    items = [rng.choice(m, size=int(rng.integers(1, min(m, 2 * mp) + 1)), replace=False) for _ in range(nu)]
    grads = [rng.normal(size=(len(it), d)) for it in items]
    dense = [rng.normal(size=5) for _ in range(nu)]
    drop = {1} if nu > 2 else set()
    rep = secemb.run_round(Q, items, grads, mp, dense=dense, dropouts=drop, verify=True)
    assert rep.verified is True
    for field in ("aggregate", "dense"):                 # plaintext_check is not blind
        bad = secemb.run_round(Q, items, grads, mp, dense=dense, dropouts=drop)
        getattr(bad, field).flat[0] += 1.0 / bad.params.scale
        ok, what = secemb.plaintext_check(Q, items, grads, bad.params, bad, dense=dense, dropouts=drop)
        assert not ok and field in what
    P = SecEmbParams(m=m, d=d, m_prime=mp, n_users=nu, dense_size=5)
    for u in range(nu):
        got = rep.retrieved[u]
        kept = ~np.isnan(got[:, 0])
        assert kept.sum() == min(len(items[u]), mp)
        assert np.array_equal(got[kept], quant(Q[items[u]][kept], P))      # bit exact after quantization
    assert np.array_equal(rep.aggregate, expected_aggregate(items, grads, rep.retrieved, m, d, P, drop))
    exp_dense = sum(np.rint(dense[u] * P.scale).astype(np.int64) for u in range(nu) if u not in drop) / P.scale
    assert np.array_equal(rep.dense, exp_dense)
    assert rep.bytes_up["aggregation"] > 0 and rep.bytes_down["retrieval"] > 0


def test_run_round_returns_rows_and_sum():
    rng = np.random.default_rng(1)
    m, d = 64, 4
    Q = rng.normal(size=(m, d))
    items = [np.array([1, 5, 7]), np.array([5, 60])]
    grads = [np.ones((3, d)), 2 * np.ones((2, d))]
    res = secemb.run_round(Q, items, grads, m_prime=4, verify=True)
    assert res.verified is True
    retrieved, agg = res.retrieved, res.aggregate
    P = SecEmbParams(m=m, d=d, m_prime=4, n_users=2)
    assert np.array_equal(retrieved[0], quant(Q[[1, 5, 7]], P))
    assert agg[5].tolist() == [3.0] * d and agg[1].tolist() == [1.0] * d and agg[0].tolist() == [0.0] * d


def test_range_check_refuses_overflowing_updates():
    P = SecEmbParams(m=16, d=2, m_prime=2, frac_bits=16, n_users=1000)
    rng = np.random.default_rng(2)
    table = secemb.encode_table(rng.normal(size=(16, 2)), P)
    u = User(P, [3])
    u.retrieval_request()
    with pytest.raises(ValueError, match="per-user range"):
        u.aggregation_upload(np.array([[P.user_bound * 1.01, 0.0]]))
    with pytest.raises(ValueError, match="NaN"):
        u.aggregation_upload(np.array([[np.nan, 0.0]]))


def test_dp_noise_is_added_and_zero_mean():
    rng = np.random.default_rng(3)
    m, d = 32, 8
    Q = rng.normal(size=(m, d))
    items = [np.array([0, 1])]
    grads = [np.zeros((2, d))]
    rep = secemb.run_round(Q, items, grads, 2, noise_sigma=1.0, min_users=1)
    noise = rep.aggregate.ravel()
    assert noise.std() > 0.8 and noise.std() < 2.0 and abs(noise.mean()) < 0.5   # two servers: var 2
    assert secemb.gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(np.sqrt(np.log(1.25e5)))


def test_messages_round_trip_and_reject_garbage():
    P = SecEmbParams(m=50, d=3, m_prime=4, n_users=3)
    u = User(P, [1, 2])
    r0, r1 = u.retrieval_request()
    b = r0.to_bytes()
    assert RetrievalRequest.from_bytes(b).to_bytes() == b
    for bad in (b[:-1], b + b"\0", b"XXXX" + b[4:], b[:4] + bytes([9]) + b[5:]):
        with pytest.raises(ValueError):
            RetrievalRequest.from_bytes(bad)
    with pytest.raises(TypeError):
        RetrievalRequest.from_bytes("text")
    up = AggregationUpload(0, np.zeros((4, 3), dtype=np.uint64), np.zeros(0, dtype=np.uint64))
    assert AggregationUpload.from_bytes(up.to_bytes()).cws.shape == (4, 3)
    resp = RetrievalResponse(1, np.arange(12, dtype=np.uint64).reshape(4, 3))
    assert RetrievalResponse.from_bytes(resp.to_bytes()).shares.tolist() == resp.shares.tolist()


def test_server_refuses_bad_requests_and_uploads():
    P = SecEmbParams(m=50, d=3, m_prime=4, n_users=3)
    table = secemb.encode_table(np.zeros((50, 3)), P)
    s0 = Server(0, P, table)
    u = User(P, [1])
    r0, r1 = u.retrieval_request()
    with pytest.raises(ValueError, match="server 0"):
        s0.answer("u", r1)
    with pytest.raises(ValueError, match="without a retrieval"):
        s0.aggregate({"v": AggregationUpload(0, np.zeros((4, 3), dtype=np.uint64), np.zeros(0, dtype=np.uint64))})
    s0.answer("u", r0)
    with pytest.raises(ValueError, match="shapes"):
        s0.aggregate({"u": AggregationUpload(0, np.zeros((3, 3), dtype=np.uint64), np.zeros(0, dtype=np.uint64))})


def test_pad_or_trunc_idx():
    idx, pos = secemb.pad_or_trunc_idx([3, 9], 20, 5)
    assert len(idx) == 5 and len(set(idx.tolist())) == 5 and {3, 9} <= set(idx.tolist())
    assert sorted(pos[pos >= 0].tolist()) == [0, 1]
    idx, pos = secemb.pad_or_trunc_idx(list(range(10)), 20, 4)
    assert len(idx) == 4 and set(idx.tolist()) <= set(range(10)) and (pos >= 0).all()
    with pytest.raises(ValueError, match="duplicates"):
        secemb.pad_or_trunc_idx([1, 1], 20, 4)
    with pytest.raises(ValueError):
        secemb.pad_or_trunc_idx([25], 20, 4)


def test_pad_or_trunc_draws_uniformly():
    """The padding is a uniform subset of the unrated items, the kept items
    a uniform subset of the rated ones, and every real item lands in every
    slot equally often (the slot order hides which keys are padding):
    frequencies over 6,000 draws within 5 standard deviations."""
    draws = 6000
    pad_count, slot_count, keep_count = np.zeros(8), np.zeros((2, 5)), np.zeros(6)
    for _ in range(draws):
        idx, pos = secemb.pad_or_trunc_idx([3, 6], 8, 5)    # 3 pads among the 6 unrated items
        for j in idx[pos < 0]:
            pad_count[j] += 1
        for slot, k in enumerate(pos):
            if k >= 0:
                slot_count[k, slot] += 1
        _, kept = secemb.pad_or_trunc_idx([0, 1, 2, 4, 5, 7], 8, 2)
        keep_count[kept] += 1

    def near(count, p):
        sd = np.sqrt(draws * p * (1 - p))
        return np.all(np.abs(count - draws * p) < 5 * sd), count / draws
    assert pad_count[3] == pad_count[6] == 0
    ok, freq = near(np.delete(pad_count, [3, 6]), 3 / 6)
    assert ok, freq
    ok, freq = near(slot_count, 1 / 5)
    assert ok, freq
    ok, freq = near(keep_count, 2 / 6)
    assert ok, freq


def test_user_secrets_use_no_insecure_rng(no_insecure_rng):
    P = SecEmbParams(m=40, d=2, m_prime=3, n_users=2)
    u = User(P, [1, 2])
    u.retrieval_request()
    u.aggregation_upload(np.zeros((2, 2)))


def test_baseline_secure_fedrec_matches_secemb():
    from secea_fast.protocols import baselines
    rng = np.random.default_rng(5)
    m, d = 40, 3
    Q = rng.normal(size=(m, d))
    items = [rng.choice(m, 4, replace=False) for _ in range(3)]
    grads = [rng.normal(size=(4, d)) for _ in range(3)]
    fr = baselines.secure_fedrec_round(Q, items, grads)
    r1, a1 = fr.retrieved, fr.aggregate
    res2 = secemb.run_round(Q, items, grads, m_prime=4)
    r2, a2 = res2.retrieved, res2.aggregate
    assert np.array_equal(a1, a2)
    assert all(np.array_equal(x, y) for x, y in zip(r1, r2))


def test_federated_mf_on_secemb_equals_plaintext_bit_for_bit():
    from secea_fast.studies import fedrec
    R, mask = fedrec.make_ratings(24, 60, rank=3, density=0.15, seed=1)
    kw = dict(d=4, rounds=4, users_per_round=8, lr=0.05, seed=3)
    sec = fedrec.train_mf(R, mask, secure=True, **kw)
    plain = fedrec.train_mf(R, mask, secure=False, **kw)
    assert np.array_equal(sec["Q"], plain["Q"]) and np.array_equal(sec["P"], plain["P"])
    assert sec["loss"] == plain["loss"] and sec["loss"][-1] < sec["loss"][0]
    assert sec["bytes"] > 0


def test_unified_m_prime_from_shared_counts():
    counts = [3, 10, 50, 7]
    shares = [secemb.count_shares(c) for c in counts]
    s0 = [a for a, _ in shares]
    s1 = [b for _, b in shares]
    assert any(int(x) > 2**40 for x in s0)          # individual shares look random
    assert secemb.unified_m_prime(s0, s1, 4, 1.5, 1000) == round(1.5 * 70 / 4)
    assert secemb.unified_m_prime(s0, s1, 4, 100.0, 30) == 30
    with pytest.raises(ValueError):
        secemb.count_shares(-1)


# ------------------------------------------------------------ bad input
def _small_round_args():
    rng = np.random.default_rng(11)
    Q = rng.normal(size=(16, 2))
    items = [np.array([1, 2]), np.array([3])]
    grads = [rng.normal(size=(2, 2)), rng.normal(size=(1, 2))]
    return Q, items, grads


@pytest.mark.parametrize("clip, exc", [(-10.0, ValueError), (0.0, ValueError), (float("nan"), ValueError),
                                       (float("inf"), ValueError), ("1", TypeError), (True, TypeError)])
def test_clip_must_be_a_positive_finite_number(clip, exc):
    Q, items, grads = _small_round_args()
    with pytest.raises(exc, match="clip"):
        secemb.run_round(Q, items, grads, 2, clip=clip)
    P = SecEmbParams(m=16, d=2, m_prime=2)
    u = User(P, [1, 2])
    u.retrieval_request()
    with pytest.raises(exc, match="clip"):
        u.aggregation_upload(grads[0], clip=clip)


def test_clip_scales_rows_down_only():
    Q, items, grads = _small_round_args()
    g = [np.array([[3.0, 4.0], [0.3, 0.4]]), np.array([[0.0, 0.5]])]
    agg = secemb.run_round(Q, items, g, 2, clip=1.0, verify=True).aggregate
    P = SecEmbParams(m=16, d=2, m_prime=2)
    assert np.array_equal(agg[1], quant([0.6, 0.8], P))          # norm 5 -> 1
    assert np.array_equal(agg[2], quant([0.3, 0.4], P))          # norm 0.5 stays
    assert np.array_equal(agg[3], quant([0.0, 0.5], P))


@pytest.mark.parametrize("sigma, exc", [(float("nan"), ValueError), (-1.0, ValueError),
                                        (float("inf"), ValueError), ("0.5", TypeError), (None, TypeError)])
def test_noise_sigma_must_be_finite_and_non_negative(sigma, exc):
    Q, items, grads = _small_round_args()
    with pytest.raises(exc, match="noise_sigma"):
        secemb.run_round(Q, items, grads, 2, noise_sigma=sigma)
    P = SecEmbParams(m=16, d=2, m_prime=2)
    s = Server(0, P, secemb.encode_table(Q, P))
    with pytest.raises(exc, match="noise_sigma"):
        s.aggregate({}, noise_sigma=sigma)


@pytest.mark.parametrize("items", [[1.9], [1.0, 2.0], np.array([0.5]), ["a"], "ab", [[1, 2]], [True, 2.5]])
def test_item_ids_must_be_integers(items):
    P = SecEmbParams(m=16, d=2, m_prime=2)
    with pytest.raises((TypeError, ValueError), match="item"):
        User(P, items)
    with pytest.raises((TypeError, ValueError), match="item"):
        secemb.pad_or_trunc_idx(items, 16, 2)


def test_item_ids_out_of_range_or_duplicated_are_refused_at_once():
    P = SecEmbParams(m=16, d=2, m_prime=2)
    for items in ([16], [-1], [3, 3], np.array([2**64 - 1], dtype=np.uint64)):
        with pytest.raises(ValueError):
            User(P, items)
    assert User(P, []).items.dtype == np.int64


@pytest.mark.parametrize("drop, exc", [([2], ValueError), ([-1], ValueError), (["0"], TypeError),
                                       ([0.0], TypeError), (5, TypeError)])
def test_unknown_dropout_ids_are_refused(drop, exc):
    Q, items, grads = _small_round_args()
    with pytest.raises(exc, match="dropouts"):
        secemb.run_round(Q, items, grads, 2, dropouts=drop)


@pytest.mark.parametrize("cls, magic", [(RetrievalResponse, b"SERS"), (AggregationUpload, b"SEUP"),
                                        (secemb.AggregateShare, b"SEAG"), (RetrievalRequest, b"SERQ")])
def test_parsers_refuse_parties_other_than_the_two_servers(cls, magic):
    from secea_fast.protocols.common.wire import Writer
    version = {AggregationUpload: secemb.UPLOAD_VERSION, RetrievalRequest: secemb.REQUEST_VERSION}.get(cls, 1)
    for party in (2, 7, 2**64 - 1):
        w = Writer(magic, version).u64(party)
        if cls is RetrievalRequest:
            w.blob(b"")
        elif cls is RetrievalResponse:
            w.array(np.zeros((1, 1), dtype=np.uint64))
        else:
            w.array(np.zeros((1, 1), dtype=np.uint64)).array(np.zeros(0, dtype=np.uint64))
        with pytest.raises(ValueError, match="party"):
            cls.from_bytes(w.bytes())


@pytest.mark.parametrize("old", [1, 2])
def test_older_uploads_are_refused(old):
    """Version-1 uploads converted in the retrieval's domain and version-2
    uploads carry no ring width: a server of this version would sum them
    into garbage, so it refuses them."""
    P = SecEmbParams(m=16, d=2, m_prime=2)
    u = User(P, [1])
    u.retrieval_request()
    up0, _ = u.aggregation_upload(np.ones((1, 2)))
    raw = bytearray(up0.to_bytes())
    assert raw[4] == 3
    raw[4] = old
    with pytest.raises(ValueError, match="version"):
        AggregationUpload.from_bytes(bytes(raw))


@pytest.mark.parametrize("dense", [False, True])
def test_aggregation_over_z_2_32_is_exact_and_half_the_upload(dense):
    """agg_bits = 32 (the paper's b = 32): the round is bit for bit equal to
    plaintext fixed point, the uploads take 4 bytes per element, a server
    refuses an upload of the other ring width, and a value outside the
    32-bit per-user range is refused before anything is sent."""
    Q, items, grads = _small_round_args()
    m, d = Q.shape
    dn = [np.full(3, 0.25 * (u + 1)) for u in range(len(items))] if dense else None
    r64 = secemb.run_round(Q, items, grads, 3, dense=dn, verify=True)
    r32 = secemb.run_round(Q, items, grads, 3, dense=dn, verify=True, agg_bits=32)
    assert r32.verified and np.array_equal(r32.aggregate, r64.aggregate)
    if dense:
        assert np.array_equal(r32.dense, r64.dense)
    m, d = Q.shape
    # each of the m' x d correction elements and dense shares: 4 bytes instead of 8
    assert r64.bytes_up["aggregation"] - r32.bytes_up["aggregation"] == 4 * (3 * d + (3 if dense else 0))
    P32 = SecEmbParams(m=m, d=d, m_prime=3, agg_bits=32)
    P64 = SecEmbParams(m=m, d=d, m_prime=3)
    u = User(P64, items[0])
    table = secemb.encode_table(Q, P32)
    srv = secemb.Server(0, P32, table)
    srv.answer(0, u.retrieval_request()[0])
    with pytest.raises(ValueError, match="Z_2"):
        srv.aggregate({0: u.aggregation_upload(grads[0])[0]})
    u32 = User(P32, items[0])
    u32.retrieval_request()
    with pytest.raises(ValueError, match="range"):
        u32.aggregation_upload(np.full((len(items[0]), d), P32.user_bound * 2))
    with pytest.raises(ValueError, match="agg_bits"):
        SecEmbParams(m=m, d=d, m_prime=3, agg_bits=16)
