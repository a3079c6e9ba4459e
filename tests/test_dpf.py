"""Distributed point functions: correctness in every group, C kernel versus
the pure-Python twin bit for bit, portable versus accelerated, key format,
SecEmb path / convert split and the fused server reductions."""
import hashlib
import os
import secrets

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import secea_fast
from secea_fast import dpf
from secea_fast._native import ffi, lib
from secea_fast.dpf import _layout
from secea_fast.dpf import reference as ref

P61 = 2**61 - 1
P_BIG = 2**64 - 59
GROUPS = ["u64", "u32", P61, P_BIG, 65537]


def modulus(group):
    return {"u64": 2**64, "u32": 2**32}.get(group, group)


def combine(a, b, group):
    """Reconstruct: a + b in the group (uint64 arrays in, Python ints out)."""
    M = modulus(group)
    return [(int(x) + int(y)) % M for x, y in zip(np.ravel(a).tolist(), np.ravel(b).tolist())]


def rand_beta(group, d=None):
    M = modulus(group)
    if d is None:
        return secrets.randbelow(M - 1) + 1
    return np.array([secrets.randbelow(M - 1) + 1 for _ in range(d)], dtype=np.uint64)


def ref_bodies(alpha, beta, n, group, early, rand):
    """Bodies from the Python twin, for the same inputs as dpf.gen(_rand=rand)."""
    g = _layout.group_of(group)
    b = [beta] if np.isscalar(beta) or isinstance(beta, int) else [int(v) for v in beta]
    e = _layout.early_e(g, n) if early else 0
    if early:
        placed = [0] * (1 << e)
        placed[alpha & ((1 << e) - 1)] = b[0]
        b = placed
    return ref.gen(alpha >> e, b, n - e, g.gid, g.p, rand)


# ------------------------------------------------------------- primitives

def test_fixed_keys_are_the_documented_hashes():
    labels = (b"secea_fast.dpf.v1/prg-left", b"secea_fast.dpf.v1/prg-right", b"secea_fast.dpf.v1/convert")
    assert ref.FIXED_KEY_LABELS == labels
    assert ref.FIXED_KEYS == tuple(hashlib.sha256(lbl).digest()[:16] for lbl in labels)


def test_sigma_is_the_orthomorphism():
    M = 2**64 - 1
    for _ in range(50):
        x, y = secrets.randbits(128), secrets.randbits(128)
        lo, hi = x & M, x >> 64
        assert ref.sigma(x) == hi | ((hi ^ lo) << 64)
        assert ref.sigma(x ^ y) == ref.sigma(x) ^ ref.sigma(y)            # linear
        assert ref.sigma(x) ^ x == (lo ^ hi) | (lo << 64)                 # invertible: an orthomorphism


@pytest.mark.parametrize("which", [0, 1, 2])
def test_hash_matches_reference(which, backend):
    blocks = os.urandom(16 * 37)
    out = bytearray(len(blocks))
    lib.secea_dpf_hash(ffi.from_buffer("uint8_t[]", out), blocks, 37, which)
    for i in range(37):
        x = int.from_bytes(blocks[16 * i:16 * i + 16], "little")
        assert int.from_bytes(out[16 * i:16 * i + 16], "little") == ref.H(which, x)


# ----------------------------------------------------- C versus the twin

# (group, vector payload, early termination)
CASES = [("u64", False, False), ("u64", True, False), ("u64", False, True), ("u32", False, False),
         ("u32", True, False), ("u32", False, True), (P61, False, False), (P61, True, False),
         (P_BIG, True, False), (65537, False, False)]


@pytest.mark.parametrize("group,vector,early", CASES)
@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_gen_and_eval_bit_identical_to_twin(group, vector, early, n, backend):
    alpha = secrets.randbelow(2**n)
    beta = rand_beta(group, 3 if vector else None)
    rand = os.urandom(32)
    k0, k1 = dpf.gen(alpha, beta, n, group=group, early=early, _rand=rand)
    b0, b1, _ = ref_bodies(alpha, beta, n, group, early, rand)
    assert k0._body == b0 and k1._body == b1
    g = _layout.group_of(group)
    xs = sorted({0, alpha, 2**n - 1, secrets.randbelow(2**n)})
    for key, body in ((k0, b0), (k1, b1)):
        got = dpf.eval_points(key, np.array(xs, dtype=np.uint64))
        for x, v in zip(xs, got.reshape(len(xs), -1).tolist()):
            want = ref.eval_point(body, key.party, x, key.levels, key.e, g.gid, g.p, key.ncw)
            assert v == want


def _variant_outputs(rand, alphas):
    k0, k1 = dpf.gen_batch(alphas, np.arange(1, len(alphas) + 1, dtype=np.uint64), 10, early=False, _rand=rand)
    e0, _ = dpf.gen_batch(alphas, np.arange(1, len(alphas) + 1, dtype=np.uint64), 10, early=True, _rand=rand)
    v0, _ = dpf.gen_batch(alphas, np.ones((len(alphas), 5), dtype=np.uint64), 10, group="u32", _rand=rand)
    f0, _ = dpf.gen_batch(alphas, np.ones((len(alphas), 3), dtype=np.uint64), 10, group=P61, _rand=rand)
    xs = np.array([[a, a ^ 1, 0, 1023] for a in alphas.tolist()], dtype=np.uint64)
    table = np.arange(1000 * 3, dtype=np.uint64).reshape(1000, 3)
    states = dpf.path_eval_full(k1)
    acc = np.zeros((1024, 4), dtype=np.uint64)
    dpf.convert_accumulate(acc, states, 1, np.arange(len(alphas) * 4, dtype=np.uint64).reshape(-1, 4))
    acc_d = np.zeros((1024, 5), dtype=np.uint64)     # a second conversion domain, odd d
    dpf.convert_accumulate(acc_d, states, 0, np.arange(len(alphas) * 5, dtype=np.uint64).reshape(-1, 5),
                           domain=2**63 + 5)
    return [acc_d.tobytes(), k0._bodies.tobytes(), k1._bodies.tobytes(), e0._bodies.tobytes(), v0._bodies.tobytes(),
            f0._bodies.tobytes(), dpf.eval_full_batch(k0).tobytes(), dpf.eval_full_batch(e0).tobytes(),
            dpf.eval_full_batch(v0).tobytes(), dpf.eval_full_batch(f0).tobytes(), states.tobytes(),
            dpf.eval_points(k0, xs).tobytes(), dpf.eval_points(e0, xs).tobytes(),
            dpf.eval_points(v0, xs).tobytes(), dpf.eval_full_dot(k0, table).tobytes(),
            dpf.eval_full_dot(e0, table).tobytes(), acc.tobytes()]


def test_every_variant_gives_the_same_bits():
    """portable, AES-NI, VAES and ARMv8 Crypto Extensions (those this CPU
    runs) agree bit for bit."""
    rand = os.urandom(32 * 37)
    alphas = np.array([0, 1, 77, 1000, 1023] + [secrets.randbelow(1024) for _ in range(32)], dtype=np.uint64)
    results = {}
    try:
        for name in ("portable", "aesni", "vaes256", "vaes", "armce"):
            if lib.secea_dpf_select_variant(name.encode()) == 0:
                results[name] = _variant_outputs(rand, alphas)
    finally:
        secea_fast.set_backend(secea_fast.get_backend())
    assert "portable" in results
    for name, r in results.items():
        assert r == results["portable"], name
    assert lib.secea_dpf_select_variant(b"turbo") == -1


# ----------------------------------------------------------- correctness

def _alphas(n):
    return sorted({0, 1 % 2**n, 2**n - 1, secrets.randbelow(2**n)})


@pytest.mark.parametrize("n", [1, 2, 4, 10, 16])
@pytest.mark.parametrize("group", GROUPS)
def test_full_domain_scalar(n, group):
    M = modulus(group)
    for alpha in _alphas(n):
        beta = rand_beta(group)
        k0, k1 = dpf.gen(alpha, beta, n, group=group)
        f0, f1 = dpf.eval_full(k0), dpf.eval_full(k1)
        assert f0.shape == (2**n,)
        if M == 2**64:
            s = f0 + f1
            expect = np.zeros(2**n, dtype=np.uint64)
            expect[alpha] = beta
            assert np.array_equal(s, expect)
        else:
            assert (f0 < M).all() and (f1 < M).all()
            s = combine(f0, f1, group)
            assert s[alpha] == beta and sum(1 for v in s if v) == 1


@pytest.mark.parametrize("n", [1, 2, 4, 10, 16])
@pytest.mark.parametrize("group", ["u64", "u32"])
def test_full_domain_early(n, group, backend):
    for alpha in _alphas(n):
        beta = rand_beta(group)
        k0, k1 = dpf.gen(alpha, beta, n, group=group, early=True)
        s = combine(dpf.eval_full(k0), dpf.eval_full(k1), group)
        assert s[alpha] == beta and sum(1 for v in s if v) == 1
        # early keys are shorter: 2^e outputs per leaf
        assert k0.levels == n - min(3 if group == "u64" else 4, n)


@pytest.mark.parametrize("n", [1, 4, 10])
@pytest.mark.parametrize("group", GROUPS)
def test_full_domain_vector(n, group, backend):
    d = 5
    for alpha in _alphas(n):
        beta = rand_beta(group, d)
        k0, k1 = dpf.gen(alpha, beta, n, group=group)
        f0, f1 = dpf.eval_full(k0), dpf.eval_full(k1)
        assert f0.shape == (2**n, d)
        s = np.array(combine(f0, f1, group), dtype=object).reshape(2**n, d)
        assert s[alpha].tolist() == [int(v) for v in beta]
        s[alpha] = 0
        assert not s.any()


@pytest.mark.parametrize("group,d", [("u64", 512), ("u64", 600), ("u32", 1024), ("u32", 1100)])
def test_full_domain_long_payload(group, d, backend):
    """Payloads on both sides of the plain-C converter's 256 blocks per hash
    call (a leaf's blocks in one call, or split over several)."""
    n = 3
    alpha, beta = secrets.randbelow(2**n), rand_beta(group, d)
    k0, k1 = dpf.gen(alpha, beta, n, group=group)
    f0, f1 = dpf.eval_full(k0), dpf.eval_full(k1)
    assert np.array_equal(f0, dpf.eval_points(k0, np.arange(2**n, dtype=np.uint64)))
    s = np.array(combine(f0, f1, group), dtype=object).reshape(2**n, d)
    assert s[alpha].tolist() == [int(v) for v in beta]
    s[alpha] = 0
    assert not s.any()


@pytest.mark.parametrize("group,early", [("u64", False), ("u64", True), ("u32", False), ("u32", True),
                                         (P61, False)])
def test_sampled_points_n20(group, early):
    n = 20
    for alpha in _alphas(n):
        beta = rand_beta(group)
        k0, k1 = dpf.gen(alpha, beta, n, group=group, early=early)
        xs = np.array(sorted({alpha, alpha ^ 1, alpha ^ 2, alpha ^ (1 << 19), 0, 2**n - 1}
                             | {secrets.randbelow(2**n) for _ in range(200)}), dtype=np.uint64)
        s = combine(dpf.eval_points(k0, xs), dpf.eval_points(k1, xs), group)
        for x, v in zip(xs.tolist(), s):
            assert v == (beta if x == alpha else 0)


def test_full_domain_n20_u64():
    alpha, beta = secrets.randbelow(2**20), rand_beta("u64")
    for early in (False, True):
        k0, k1 = dpf.gen(alpha, beta, 20, early=early)
        s = dpf.eval_full(k0) + dpf.eval_full(k1)
        assert int(s[alpha]) == beta and np.count_nonzero(s) == 1


@pytest.mark.parametrize("n", [33, 40, 63])
def test_point_eval_large_domains(n):
    alpha = secrets.randbelow(2**n)
    k0, k1 = dpf.gen(alpha, 5, n)
    xs = np.array([alpha, alpha ^ 1, 0, 2**n - 1], dtype=np.uint64)
    s = dpf.eval_points(k0, xs) + dpf.eval_points(k1, xs)
    assert s.tolist() == [5 if x == alpha else 0 for x in xs.tolist()]
    with pytest.raises(ValueError, match="log_domain"):
        dpf.eval_full(k0)


@pytest.mark.parametrize("group,early,vector", [("u64", False, False), ("u64", True, False), ("u32", True, False),
                                                (P61, False, True), ("u32", False, True)])
def test_full_domain_equals_pointwise(group, early, vector, backend):
    n = 9
    k0, _ = dpf.gen(secrets.randbelow(2**n), rand_beta(group, 4 if vector else None), n, group=group, early=early)
    full = dpf.eval_full(k0)
    pts = dpf.eval_points(k0, np.arange(2**n, dtype=np.uint64))
    assert np.array_equal(full, pts)
    assert int(dpf.eval_points(k0, 7).reshape(-1)[0]) == int(full[7].reshape(-1)[0])


def test_batch_equals_single():
    n, count = 11, 13
    alphas = np.array([secrets.randbelow(2**n) for _ in range(count)], dtype=np.uint64)
    betas = np.array([rand_beta("u64") for _ in range(count)], dtype=np.uint64)
    for early in (False, True):
        K0, K1 = dpf.gen_batch(alphas, betas, n, early=early)
        assert len(K0) == count and K0.party == 0 and K1.party == 1
        F0 = dpf.eval_full_batch(K0)
        F1 = dpf.eval_full_batch(K1, threads=1)
        assert F0.shape == (count, 2**n)
        for i in range(count):
            assert np.array_equal(F0[i], dpf.eval_full(K0[i]))
            s = F0[i] + F1[i]
            assert int(s[alphas[i]]) == int(betas[i]) and np.count_nonzero(s) == 1
        # a list of keys works like the batch; threads do not change results
        assert np.array_equal(dpf.eval_full_batch(list(K0), threads=2), F0)
        xs = np.stack([alphas, alphas ^ np.uint64(1)], axis=1)
        pts = dpf.eval_points(K0, xs) + dpf.eval_points(K1, xs)
        assert np.array_equal(pts[:, 0], betas) and not pts[:, 1].any()
    # vector payloads in a batch
    V = np.array([[rand_beta("u32") for _ in range(3)] for _ in range(count)], dtype=np.uint64)
    K0, K1 = dpf.gen_batch(alphas, V, n, group="u32")
    F = (dpf.eval_full_batch(K0) + dpf.eval_full_batch(K1)) % np.uint64(2**32)
    assert F.shape == (count, 2**n, 3)
    for i in range(count):
        assert np.array_equal(F[i, alphas[i]], V[i])
        assert np.count_nonzero(F[i]) == np.count_nonzero(V[i])
    # scalar beta broadcast to all keys
    K0, K1 = dpf.gen_batch(alphas, 9, n)
    assert (dpf.eval_points(K0, alphas) + dpf.eval_points(K1, alphas) == 9).all()


def test_full_out_buffer_and_threads():
    k0, k1 = dpf.gen(123, 77, 12, early=True)
    out = np.empty(2**12, dtype=np.uint64)
    r = dpf.eval_full(k0, out=out, threads=2)
    assert r is out and np.array_equal(out, dpf.eval_full(k0, threads=1))
    with pytest.raises(ValueError, match="shape"):
        dpf.eval_full(k0, out=np.empty(10, dtype=np.uint64))
    with pytest.raises(TypeError):
        dpf.eval_full(k0, out=np.empty(2**12, dtype=np.int64))


# ------------------------------------------------ paper algorithms (SecEmb)

def test_algorithm6_takes_the_right_seed_on_the_right_branch():
    """Algorithm 6 as printed sets s <- s^L on the right branch; the correct
    walk (BGI16, Fig. 1) takes s^R.  Pin the correct one against the literal."""
    n = 6
    for alpha in (0b101101, 0b111111, 0b000001):
        p0, p1, secret = dpf.path_gen(alpha, n)
        cw = dpf.convert_gen(secret, 1234)
        k0, k1 = dpf.Key.from_path(p0, cw), dpf.Key.from_path(p1, cw)

        def literal_state(body, x):   # the printed Algorithm 6: seed always from the left half
            st = int.from_bytes(body[:16], "little")
            off = 16 + 16 * n
            tl = int.from_bytes(body[off:off + 8], "little")
            tr = int.from_bytes(body[off + 8:off + 16], "little")
            for i in range(n):
                bit = (x >> (n - 1 - i)) & 1
                L, R = ref.G(st)
                scw = int.from_bytes(body[16 + 16 * i:32 + 16 * i], "little")
                t = st & 1
                s_new = (L & ~1) ^ (scw if t else 0)
                t_new = ((R if bit else L) & 1) ^ (t * (((tr if bit else tl) >> i) & 1))
                st = s_new | t_new
            return st

        lit = [ref.convert_eval(b, literal_state(k._body, alpha), [int(cw[0])], 0, 0)[0] for b, k in ((0, k0), (1, k1))]
        ok = [int(dpf.eval_points(k, alpha)) for k in (k0, k1)]
        assert sum(ok) % 2**64 == 1234
        assert sum(lit) % 2**64 != 1234      # the printed variant breaks correctness on right turns


def test_path_and_convert_split():
    n, d = 10, 4
    alpha = secrets.randbelow(2**n)
    p0, p1, secret = dpf.path_gen(alpha, n)
    assert repr(secret) == f"PathSecret(log_domain={n})"
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(secret)
    xs = np.array([alpha, alpha ^ 1, 0, 2**n - 1], dtype=np.uint64)
    t0, s0 = dpf.path_eval(p0, xs)
    t1, s1 = dpf.path_eval(p1, xs)
    assert t0.shape == (4,) and s0.shape == (4, 16)
    # on the path the control bits differ and the seeds differ; elsewhere equal
    assert t0[0] != t1[0] and not np.array_equal(s0[0], s1[0])
    for i in range(1, 4):
        if xs[i] != alpha:
            assert t0[i] == t1[i] and np.array_equal(s0[i], s1[i])
    # the same path serves many payloads, each in its own conversion domain
    for domain, group in enumerate(("u64", "u32", P61)):
        beta = rand_beta(group, d)
        cw = dpf.convert_gen(secret, beta, group, domain=domain)
        assert cw.shape == (d,) and cw.dtype == np.uint64
        v0 = dpf.convert_eval(0, t0, s0, cw, group, domain=domain)
        v1 = dpf.convert_eval(1, t1, s1, cw, group, domain=domain)
        s = np.array(combine(v0, v1, group), dtype=object).reshape(4, d)
        for i, x in enumerate(xs.tolist()):
            assert s[i].tolist() == ([int(b) for b in beta] if x == alpha else [0] * d)
        if domain:
            continue
        # a full key from path + CW (keys convert in domain 0)
        k0, k1 = dpf.Key.from_path(p0, cw, group), dpf.Key.from_path(p1, cw, group)
        assert k0.path_key() == p0 and k1.path_key() == p1
        f = np.array(combine(dpf.eval_full(k0), dpf.eval_full(k1), group), dtype=object).reshape(2**n, d)
        assert f[alpha].tolist() == [int(b) for b in beta] and f.sum() == sum(int(b) for b in beta)


def test_gen_is_path_gen_plus_convert_gen():
    """gen's keys carry the depth-n path: their path keys are PathKeys."""
    k0, k1 = dpf.gen(321, np.array([1, 2, 3], dtype=np.uint64), 9)
    p0 = k0.path_key()
    assert dpf.PathKey.from_bytes(p0.to_bytes()) == p0
    assert dpf.Key.from_path(p0, k0.correction_word, vector=True) == k0
    t, s = dpf.path_eval(k0, np.array([321]))
    t2, s2 = dpf.path_eval(p0, np.array([321]))
    assert np.array_equal(t, t2) and np.array_equal(s, s2)
    e0, _ = dpf.gen(321, 5, 9, early=True)
    with pytest.raises(ValueError, match="early"):
        e0.path_key()


# --------------------------------------------------------- fused kernels

@pytest.mark.parametrize("early", [False, True])
def test_eval_full_dot_equals_unfused(early, backend):
    n, d, count = 11, 7, 11
    m = 2**n - 5                    # a partial last subtree, odd for early keys
    rng = np.random.default_rng(1)  # public test data only
    table = rng.integers(0, 2**64, size=(m, d), dtype=np.uint64, endpoint=False)
    alphas = rng.integers(0, m, size=count).astype(np.uint64)
    K0, K1 = dpf.gen_batch(alphas, np.ones(count, dtype=np.uint64), n, early=early)
    for K in (K0, K1):
        F = dpf.eval_full_batch(K)[:, :m]
        want = np.zeros((count, d), dtype=np.uint64)
        for i in range(count):                                   # uint64 wraps: Z_2^64
            want[i] = (F[i][:, None] * table).sum(axis=0, dtype=np.uint64)
        for th in (1, 2):
            assert np.array_equal(dpf.eval_full_dot(K, table, threads=th), want)
        assert np.array_equal(dpf.eval_full_dot(K[3], table), want[3])
    got = dpf.eval_full_dot(K0, table) + dpf.eval_full_dot(K1, table)
    assert np.array_equal(got, table[alphas.astype(np.intp)])   # private retrieval (eq. 3-4)


def test_eval_full_dot_wide_rows():
    n, d = 9, 37
    rng = np.random.default_rng(2)
    table = rng.integers(0, 2**64, size=(2**n, d), dtype=np.uint64, endpoint=False)
    k0, k1 = dpf.gen(200, 3, n)
    got = dpf.eval_full_dot(k0, table) + dpf.eval_full_dot(k1, table)
    assert np.array_equal(got, table[200] * np.uint64(3))


@pytest.mark.parametrize("group,dtype", [("u64", np.uint64), ("u32", np.uint32)])
@pytest.mark.parametrize("n,m,d", [(10, 1000, 64), (6, 64, 16), (9, 300, 5), (1, 2, 1), (12, 2100, 8)])
def test_path_convert_accumulate_equals_unfused(backend, group, dtype, n, m, d):
    """The fused walk + conversion (SecEmb's aggregation kernel) equals
    path_eval_full + convert_eval summed, onto a nonzero accumulator, for both
    parties, both groups and shapes of the specialised (d*w a multiple of 64
    bytes) and the generic kernel; the two servers' sums reconstruct the
    payloads at their points."""
    users, dom = 4, 3
    alphas = [secrets.randbelow(m) for _ in range(users)]
    p0, p1, sec = dpf.path_gen_batch(alphas, n)
    top = 1 << (64 if group == "u64" else 32)
    betas = np.array([[secrets.randbelow(top) for _ in range(d)] for _ in range(users)], dtype=np.uint64)
    cws = dpf.convert_gen_batch(sec, betas, group=group, domain=dom)
    sums = []
    for b, keys in ((0, p0), (1, p1)):
        start = np.array([[secrets.randbelow(top) for _ in range(d)] for _ in range(m)], dtype=np.uint64)
        want = start.copy()
        for u in range(users):
            t, s = dpf.split_states(dpf.path_eval_full(keys[u], m))
            want += dpf.convert_eval(b, t, s, cws[u], group=group, domain=dom)
        acc = start.astype(dtype)
        dpf.path_convert_accumulate(acc, keys, b, cws, domain=dom, threads=2)
        assert np.array_equal(acc, want.astype(dtype))
        sums.append(acc - start.astype(dtype))
    expect = np.zeros((m, d), dtype=dtype)
    for a, bt in zip(alphas, betas):
        expect[a] += bt.astype(dtype)
    assert np.array_equal(sums[0] + sums[1], expect)


@pytest.mark.parametrize("n,m,d", [(12, 3883, 64), (6, 40, 3), (1, 2, 1), (9, 512, 17)])
def test_path_xor_rows_is_the_xor_pir(backend, n, m, d):
    """Each server's answer is the XOR of the rows whose leaf has t = 1 (its
    twin from path_eval_full), and the two answers XOR to the selected rows."""
    alphas = [secrets.randbelow(m) for _ in range(11)]
    p0, p1, _ = dpf.path_gen_batch(alphas, n)
    table = np.array([[secrets.randbits(64) for _ in range(d)] for _ in range(m)], dtype=np.uint64)
    answers = []
    for keys in (p0, p1):
        got = dpf.path_xor_rows(keys, table, threads=2)
        t = dpf.path_eval_full(keys, m)[..., 0] & 1
        twin = np.array([np.bitwise_xor.reduce(table[tk == 1], axis=0) if tk.any() else np.zeros(d, np.uint64)
                         for tk in t], dtype=np.uint64)
        assert np.array_equal(got, twin)
        assert np.array_equal(dpf.path_xor_rows(keys[3], table), twin[3])
        answers.append(got)
    assert np.array_equal(answers[0] ^ answers[1], table[alphas])


def test_path_xor_rows_bad_input():
    p0, _, _ = dpf.path_gen_batch([1, 2], 4)
    with pytest.raises(TypeError, match="table"):
        dpf.path_xor_rows(p0, np.zeros((16, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="rows"):
        dpf.path_xor_rows(p0, np.zeros((17, 3), dtype=np.uint64))
    with pytest.raises(ValueError, match="2-D"):
        dpf.path_xor_rows(p0, np.zeros(16, dtype=np.uint64))


def test_path_convert_accumulate_bad_input():
    p0, _, sec = dpf.path_gen_batch([1, 2], 4)
    cws = dpf.convert_gen_batch(sec, np.ones((2, 3), dtype=np.uint64), domain=1)
    with pytest.raises(TypeError, match="acc"):
        dpf.path_convert_accumulate(np.zeros((16, 3), dtype=np.int64), p0, 0, cws)
    with pytest.raises(ValueError, match="acc"):
        dpf.path_convert_accumulate(np.zeros((16, 3), dtype=np.uint64)[:, :2], p0, 0, cws[:, :2])
    with pytest.raises(ValueError, match="rows"):
        dpf.path_convert_accumulate(np.zeros((17, 3), dtype=np.uint64), p0, 0, cws)
    with pytest.raises(ValueError, match="party"):
        dpf.path_convert_accumulate(np.zeros((16, 3), dtype=np.uint64), p0, 2, cws)
    with pytest.raises(ValueError, match="cw"):
        dpf.path_convert_accumulate(np.zeros((16, 3), dtype=np.uint64), p0, 0, cws[:1])
    with pytest.raises(ValueError, match="cw"):
        dpf.path_convert_accumulate(np.zeros((16, 3), dtype=np.uint32), p0, 0, cws | np.uint64(1 << 40))


def test_path_states_and_convert_accumulate(backend):
    n, d, users = 10, 6, 5
    m = 1000
    alphas = [secrets.randbelow(m) for _ in range(users)]
    paths = [dpf.path_gen(a, n) for a in alphas]
    betas = [rand_beta("u64", d) for _ in range(users)]
    cws = np.stack([dpf.convert_gen(p[2], b) for p, b in zip(paths, betas)])
    acc = [np.zeros((m, d), dtype=np.uint64), np.zeros((m, d), dtype=np.uint64)]
    for b in (0, 1):
        keys = [p[b] for p in paths]
        states = dpf.path_eval_full(keys, m)
        assert states.shape == (users, m, 16)
        # equals path_eval at every leaf
        t, s = dpf.split_states(states[2])
        t2, s2 = dpf.path_eval(keys[2], np.arange(m))
        assert np.array_equal(t, t2) and np.array_equal(s, s2)
        assert np.array_equal(dpf.path_eval_full(keys[2], m), states[2])
        # unfused: convert_eval per user, summed
        want = np.zeros((m, d), dtype=np.uint64)
        for u in range(users):
            t, s = dpf.split_states(states[u])
            want += dpf.convert_eval(b, t, s, cws[u])
        dpf.convert_accumulate(acc[b], states, b, cws, threads=2)
        assert np.array_equal(acc[b], want)
        # one key at a time accumulates the same
        acc1 = np.zeros((m, d), dtype=np.uint64)
        for u in range(users):
            dpf.convert_accumulate(acc1, states[u], b, cws[u], threads=1)
        assert np.array_equal(acc1, want)
    total = acc[0] + acc[1]
    expect = np.zeros((m, d), dtype=np.uint64)
    for a, bt in zip(alphas, betas):
        expect[a] += bt
    assert np.array_equal(total, expect)


# ---------------------------------------------------------- key format

@pytest.mark.parametrize("group,vector,early", CASES)
def test_key_bytes_round_trip(group, vector, early):
    k0, k1 = dpf.gen(5, rand_beta(group, 3 if vector else None), 7, group=group, early=early)
    for k in (k0, k1):
        b = k.to_bytes()
        assert b[:4] == b"SDPF" and b[4] == 1 and b[5] == k.party and b[6] == 7
        k2 = dpf.Key.from_bytes(b)
        assert k2 == k and k2.to_bytes() == b and hash(k2) == hash(k)
        assert (k2.group, k2.d, k2.vector, k2.early) == (k.group, k.d, k.vector, k.early)
        assert dpf.Key.from_bytes(bytearray(b)) == k
    K0, _ = dpf.gen_batch(np.array([1, 2, 3]), np.array([4, 5, 6], dtype=np.uint64), 6)
    assert dpf.KeyBatch.from_keys(list(K0))._bodies.tobytes() == K0._bodies.tobytes()
    p0, _, _ = dpf.path_gen(3, 8)
    assert dpf.PathKey.from_bytes(p0.to_bytes()) == p0


def _mutate(b, off, value):
    b = bytearray(b)
    b[off] = value
    return bytes(b)


@pytest.mark.parametrize("group", ["u64", "u32", P61])
@pytest.mark.parametrize("vector", [False, True])
def test_early_termination_is_the_default_where_the_payload_allows(group, vector):
    """Scalar Z_2^64 / Z_2^32 keys are early by default (both the one-key and
    the batch call); vector and F_p keys keep the full tree; early=False
    keeps the depth-n path for SecEmb's path reuse.  Either way the shares
    reconstruct the point function."""
    beta = rand_beta(group, 3 if vector else None)
    k0, k1 = dpf.gen(9, beta, 8, group=group)
    b0, b1 = dpf.gen_batch([9, 200], [beta, beta] if not vector else np.stack([beta, beta]), 8, group=group)
    expect = group != P61 and not vector
    assert k0.early == k1.early == b0.early == expect
    g = _layout.group_of(group)
    for a, b in ((k0, k1), (b0[0], b1[0])):
        full = (dpf.eval_full(a).astype(object) + dpf.eval_full(b).astype(object)) % g.modulus
        want = np.zeros_like(full)
        want[9] = np.asarray(beta, dtype=object) % g.modulus
        assert (full == want).all()
    if expect:
        with pytest.raises(ValueError, match="depth-n path"):
            k0.path_key()
    assert not dpf.gen(9, beta, 8, group=group, early=False)[0].early


def test_malformed_keys_raise_value_error():
    k0, _ = dpf.gen(5, 9, 6, early=False)
    good = k0.to_bytes()
    L = 6
    cases = {
        "truncated": good[:-1],
        "header": good[:10],
        "padded": good + b"\0",
        "magic": b"XXXX" + good[4:],
        "version": _mutate(good, 4, 2),
        "party": _mutate(good, 5, 2),
        "log_domain": _mutate(good, 6, 0),
        "flag": _mutate(good, 7, 0x80),
        "group id": _mutate(good, 8, 7),
        "reserved": _mutate(good, 9, 1),
        "d = 1": _mutate(good, 12, 2),
        "modulus": _mutate(good, 16, 1),
        "bit 0": _mutate(good, 24 + 16, good[24 + 16] | 1),
        "mask": _mutate(good, 24 + 16 + 16 * L + 7, 0x80),
        "early": _mutate(_mutate(good, 7, 3), 12, 1),    # early + vector flag
    }
    for what, data in cases.items():
        with pytest.raises(ValueError):
            dpf.Key.from_bytes(data)
    with pytest.raises(ValueError, match="truncated"):
        dpf.Key.from_bytes(good[:-1])
    with pytest.raises(ValueError, match="padded"):
        dpf.Key.from_bytes(good + b"\0")
    with pytest.raises(ValueError, match="magic"):
        dpf.Key.from_bytes(b"XXXX" + good[4:])
    with pytest.raises(ValueError, match="bit 0"):
        dpf.Key.from_bytes(cases["bit 0"])
    with pytest.raises(TypeError):
        dpf.Key.from_bytes("not bytes")
    # F_p: a non-prime modulus and an unreduced correction word
    kp, _ = dpf.gen(5, 9, 6, group=P61)
    b = kp.to_bytes()
    with pytest.raises(ValueError, match="prime"):
        dpf.Key.from_bytes(b[:16] + (2**61).to_bytes(8, "little") + b[24:])
    with pytest.raises(ValueError, match=">= p"):
        dpf.Key.from_bytes(b[:-8] + (2**64 - 1).to_bytes(8, "little"))
    # a path key is not a key and vice versa
    p0, _, _ = dpf.path_gen(1, 6)
    with pytest.raises(ValueError, match="magic"):
        dpf.Key.from_bytes(p0.to_bytes())
    with pytest.raises(ValueError, match="magic"):
        dpf.PathKey.from_bytes(good)


_SAMPLE_KEYS = [dpf.gen(3, 7, 5)[0].to_bytes(), dpf.gen(3, 7, 5, early=True)[1].to_bytes(),
                dpf.gen(3, np.array([1, 2], dtype=np.uint64), 4, group=P61)[0].to_bytes(),
                dpf.gen(1, 2, 3, group="u32", early=True)[0].to_bytes()]


def _check_parse(data):
    try:
        k = dpf.Key.from_bytes(data)
    except ValueError:
        return
    # whatever parses is a well-formed key: it evaluates without crashing
    xs = np.array([0, 2**k.log_domain - 1], dtype=np.uint64)
    dpf.eval_points(k, xs)
    if k.log_domain <= 12:
        dpf.eval_full(k)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_from_bytes_random_bytes_never_crash(data):
    _check_parse(data)
    _check_parse(b"SDPF\x01" + data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SAMPLE_KEYS), st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=4),
       st.integers(-3, 3))
def test_from_bytes_mutated_keys_never_crash(key, edits, resize):
    b = bytearray(key)
    for off, v in edits:
        b[off % len(b)] = v
    if resize > 0:
        b += bytes(resize)
    elif resize < 0:
        del b[resize:]
    _check_parse(bytes(b))


# ------------------------------------------------------------ validation

def test_input_validation():
    with pytest.raises(ValueError, match="alpha"):
        dpf.gen(16, 1, 4)
    with pytest.raises(ValueError, match="alpha"):
        dpf.gen(-1, 1, 4)
    with pytest.raises(TypeError, match="alpha"):
        dpf.gen(1.0, 1, 4)
    for n in (0, 64):
        with pytest.raises(ValueError, match="log_domain"):
            dpf.gen(0, 1, n)
    with pytest.raises(ValueError, match="beta"):
        dpf.gen(0, 2**64, 4)
    with pytest.raises(ValueError, match="beta"):
        dpf.gen(0, 2**32, 4, group="u32")
    with pytest.raises(ValueError, match="beta"):
        dpf.gen(0, P61, 4, group=P61)
    with pytest.raises(TypeError, match="dtype"):
        dpf.gen(0, np.array([1, 2], dtype=np.int64), 4)
    with pytest.raises(ValueError, match="1-D"):
        dpf.gen(0, np.ones((2, 2), dtype=np.uint64), 4)
    with pytest.raises(ValueError):
        dpf.gen(0, np.ones(0, dtype=np.uint64), 4)
    with pytest.raises(TypeError):
        dpf.gen(0, "7", 4)
    with pytest.raises(ValueError, match="group"):
        dpf.gen(0, 1, 4, group="u16")
    with pytest.raises(ValueError, match="prime"):
        dpf.gen(0, 1, 4, group=2**61)
    with pytest.raises(TypeError):
        dpf.gen(0, 1, 4, group=1.5)
    with pytest.raises(ValueError, match="early"):
        dpf.gen(0, 1, 4, group=P61, early=True)
    with pytest.raises(ValueError, match="early"):
        dpf.gen(0, np.array([1, 2], dtype=np.uint64), 4, early=True)
    with pytest.raises(TypeError):
        dpf.gen(0, 1, 4, early=1)
    k0, _ = dpf.gen(3, 1, 4, early=False)
    with pytest.raises(ValueError, match="xs"):
        dpf.eval_points(k0, [16])
    with pytest.raises(ValueError, match="negative"):
        dpf.eval_points(k0, np.array([-1]))
    with pytest.raises(TypeError):
        dpf.eval_points(k0, np.array([1.0]))
    with pytest.raises(TypeError):
        dpf.eval_full([1, 2])
    with pytest.raises(ValueError, match="rows"):
        dpf.gen_batch([1, 2], [1, 2, 3], 4)
    with pytest.raises(ValueError, match="alphas"):
        dpf.gen_batch([1, 99], [1, 2], 4)
    with pytest.raises(ValueError, match="threads"):
        dpf.eval_full(k0, threads=0)
    K0, _ = dpf.gen_batch([1, 2], [1, 2], 4)
    with pytest.raises(ValueError, match="rows"):
        dpf.eval_points(K0, [1, 2, 3])
    mixed = [dpf.gen(1, 1, 4)[0], dpf.gen(1, 1, 5)[0]]
    with pytest.raises(ValueError, match="share"):
        dpf.eval_full_batch(mixed)
    # fused kernels
    with pytest.raises(TypeError, match="table"):
        dpf.eval_full_dot(k0, np.ones((16, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="rows"):
        dpf.eval_full_dot(k0, np.ones((17, 2), dtype=np.uint64))
    with pytest.raises(ValueError, match="2-D"):
        dpf.eval_full_dot(k0, np.ones(16, dtype=np.uint64))
    with pytest.raises(ValueError, match="u64"):
        dpf.eval_full_dot(dpf.gen(1, 1, 4, group="u32")[0], np.ones((16, 2), dtype=np.uint64))
    states = dpf.path_eval_full(k0, 10)
    with pytest.raises(ValueError, match="rows"):
        dpf.convert_accumulate(np.zeros((9, 2), dtype=np.uint64), states, 0, np.ones(2, dtype=np.uint64))
    with pytest.raises(ValueError, match="cw"):
        dpf.convert_accumulate(np.zeros((10, 2), dtype=np.uint64), states, 0, np.ones(3, dtype=np.uint64))
    with pytest.raises(ValueError, match="party"):
        dpf.convert_accumulate(np.zeros((10, 2), dtype=np.uint64), states, 2, np.ones(2, dtype=np.uint64))
    with pytest.raises(ValueError, match="m must"):
        dpf.path_eval_full(k0, 17)
    with pytest.raises(ValueError, match="party"):
        dpf.convert_eval(3, np.zeros(1, dtype=np.uint8), np.zeros((1, 16), dtype=np.uint8), [1])
    with pytest.raises(ValueError, match="bits"):
        dpf.convert_eval(0, np.full(1, 2, dtype=np.uint8), np.zeros((1, 16), dtype=np.uint8), [1])
    with pytest.raises(TypeError):
        dpf.convert_gen(b"secret", 1)


# ------------------------------------------------------------ randomness

def test_secrets_apis_avoid_insecure_rng(no_insecure_rng):
    k0, k1 = dpf.gen(3, 4, 8)
    assert (int(dpf.eval_points(k0, 3)) + int(dpf.eval_points(k1, 3))) % 2**64 == 4
    dpf.gen(3, 4, 8, early=True)
    dpf.gen(3, np.array([1, 2], dtype=np.uint64), 8, group=P61)
    dpf.gen_batch([1, 2, 3], [4, 5, 6], 8)
    p0, p1, secret = dpf.path_gen(3, 8)
    dpf.convert_gen(secret, 5)


def test_keys_are_fresh():
    a = dpf.gen(3, 4, 8)[0].to_bytes()
    b = dpf.gen(3, 4, 8)[0].to_bytes()
    assert a != b
    k0, k1 = dpf.gen(3, 4, 8)
    t0, t1 = k0._body[0] & 1, k1._body[0] & 1
    assert t0 ^ t1 == 1                 # t_1^(0) = 1 - t_0^(0)


def test_backend_reports_dpf():
    info = secea_fast.backend_info()
    assert "dpf" in info["kernels"]
    if info["cpu"]["vaes"]:
        assert info["kernels"]["dpf"] == "vaes"


def test_path_gen_batch_and_convert_gen_batch_compose():
    n = 9
    alphas = np.array([0, 5, 511, 300], dtype=np.uint64)
    p0, p1, secs = dpf.path_gen_batch(alphas, n)
    betas = np.arange(1, 13, dtype=np.uint64).reshape(4, 3)
    cws = dpf.convert_gen_batch(secs, betas)
    assert cws.shape == (4, 3)
    for i, a in enumerate(alphas):
        twin = dpf.PathSecret(n, secs[i]._finals)          # the same path, not yet converted
        assert cws[i].tolist() == dpf.convert_gen(twin, betas[i]).tolist()
        k0 = dpf.Key.from_path(p0[i], cws[i])
        k1 = dpf.Key.from_path(p1[i], cws[i])
        f = dpf.eval_full(k0) + dpf.eval_full(k1)
        assert f[int(a)].tolist() == betas[i].tolist()
        f[int(a)] = 0
        assert not f.any()
    with pytest.raises(ValueError, match="domain 0"):
        dpf.convert_gen_batch(secs, betas)                # a second payload in domain 0
    with pytest.raises(ValueError):
        dpf.convert_gen_batch(secs, betas[:2])
    with pytest.raises(TypeError):
        dpf.convert_gen_batch(secs, betas.astype(np.float64))


@pytest.mark.parametrize("n", [1, 3, 9, 13])
def test_four_word_payload_path(n, backend):
    """d = 4 over Z_2^64 takes the two-block conversion kernel (conv_u64x4)."""
    beta = np.array([1, 2**63, 5, 2**64 - 1], dtype=np.uint64)
    alpha = (1 << n) - 1
    k0, k1 = dpf.gen(alpha, beta, n)
    s = dpf.eval_full(k0) + dpf.eval_full(k1)
    assert s[alpha].tolist() == beta.tolist()
    assert not np.delete(s, alpha, axis=0).any()
    pts = np.array([0, alpha], dtype=np.uint64)
    assert (dpf.eval_points(k0, pts) + dpf.eval_points(k1, pts))[1].tolist() == beta.tolist()


# ------------------------------------------------------ conversion domains

@pytest.mark.parametrize("group", ["u64", "u32", P61])
@pytest.mark.parametrize("domain", [0, 1, 2**64 - 1])
def test_convert_domains_match_the_twin(group, domain, backend):
    """Convert_D(s) block j = H_V(s xor (j + D 2^64)): C and twin agree, and
    the payload is recovered in its own domain only."""
    n, d = 7, 5
    alpha = secrets.randbelow(2**n)
    p0, p1, secret = dpf.path_gen(alpha, n)
    finals = secret._finals
    x0, x1 = int.from_bytes(finals[:16], "little"), int.from_bytes(finals[16:], "little")
    g = _layout.group_of(group)
    beta = [int(b) for b in rand_beta(group, d)]
    cw = dpf.convert_gen(secret, np.array(beta, dtype=np.uint64), group, domain=domain)
    assert cw.tolist() == ref.convert_gen(x0, x1, beta, g.gid, g.p, domain)
    xs = np.array([alpha, alpha ^ 1], dtype=np.uint64)
    vals = []
    for b, pk in ((0, p0), (1, p1)):
        t, s = dpf.path_eval(pk, xs)
        v = dpf.convert_eval(b, t, s, cw, group, domain=domain)
        st = int.from_bytes(bytes(s[0]), "little") | int(t[0])
        assert v[0].tolist() == ref.convert_eval(b, st, [int(c) for c in cw], g.gid, g.p, domain)
        vals.append(v)
        wrong = dpf.convert_eval(b, t, s, cw, group, domain=domain ^ 1)
        vals.append(wrong)
    got = combine(vals[0][0], vals[2][0], group)
    assert [int(x) for x in got] == beta
    assert [int(x) for x in combine(vals[1][0], vals[3][0], group)] != beta
    assert not any(int(x) for x in combine(vals[0][1], vals[2][1], group))


def test_one_payload_per_domain_on_a_path():
    """Two correction words in one domain on one path would reveal the
    difference of their payloads to either server; refused."""
    _, _, secret = dpf.path_gen(5, 6)
    cw_a = dpf.convert_gen(secret, 1)
    with pytest.raises(ValueError, match="conversion domain 0"):
        dpf.convert_gen(secret, 2)
    with pytest.raises(ValueError, match="conversion domain 0"):
        dpf.convert_gen_batch([secret], np.array([[3]], dtype=np.uint64))
    cw_b = dpf.convert_gen(secret, 2, domain=1)
    assert cw_a.shape == cw_b.shape == (1,)
    _, _, s2 = dpf.path_gen(5, 6)
    with pytest.raises(ValueError, match="same path twice"):
        dpf.convert_gen_batch([s2, s2], np.ones((2, 1), dtype=np.uint64))
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="domain"):
            dpf.convert_gen(s2, 1, domain=bad)
    with pytest.raises(TypeError, match="domain"):
        dpf.convert_gen(s2, 1, domain=1.5)
    with pytest.raises(ValueError, match="domain"):
        dpf.convert_accumulate(np.zeros((4, 1), dtype=np.uint64), np.zeros((4, 16), dtype=np.uint8), 0,
                               np.ones(1, dtype=np.uint64), domain=-3)


def test_params_is_the_one_description_of_a_key():
    """Every key type carries a Params; equal parameters compare equal, and the
    body size, depth and correction-word length derive from it alone."""
    k0, _ = dpf.gen(5, 42, 10)
    assert k0.params == dpf.Params(10, early=True) and k0.params.levels == 7 and k0.params.ncw == 8
    assert k0.params.body_size == len(k0.to_bytes()) - 24
    f0, _ = dpf.gen(5, np.arange(1, 4, dtype=np.uint64), 10, group="u32")
    assert f0.params == dpf.Params(10, "u32", 3) and f0.params != dpf.Params(10, "u32", 4)
    p0, _, _ = dpf.path_gen(5, 10)
    assert p0.params == dpf.Params.path(10) and p0.params.is_path and p0.params.body_size == 32 + 16 * 10
    assert dpf.KeyBatch.from_keys([k0, k0]).params is k0.params
    with pytest.raises(ValueError, match="d"):
        dpf.Params(10, "u64", 3, vector=False)
    with pytest.raises(ValueError, match="early"):
        dpf.Params(10, "u64", 3, early=True)


def test_kernels_refuse_a_shape_outside_their_limits():
    """The C entry points take the key shape as a struct checked by field name,
    and refuse (status -2, nothing written) a shape outside the kernels'
    limits.  Control: the same call with the valid shape succeeds."""
    k0, _ = dpf.gen_batch([3, 9], [1, 2], 8, early=False)
    bodies, size = k0.bodies, k0.params.body_size
    party = np.zeros(2, dtype=np.uint8)

    def run(**changes):
        fields = {"levels": 8, "early": 0, "group": 0, "modulus": 0, "ncw": 1, "stride": size}
        fields.update(changes)
        out = np.full((2, 256), 7, dtype=np.uint64)
        st = lib.secea_dpf_eval_full(ffi.new("secea_dpf_shape *", fields),
                                     ffi.from_buffer("uint64_t[]", out, require_writable=True),
                                     ffi.from_buffer("uint8_t[]", bodies), ffi.from_buffer("uint8_t[]", party), 2, 256, 1)
        return st, out

    st, out = run()
    assert st == 0 and not (out == 7).all()                      # the control: a valid shape evaluates
    for bad in ({"levels": 65}, {"early": 5}, {"group": 3}, {"group": 2, "modulus": 1}, {"stride": size - 1},
                {"ncw": 0}, {"early": 2, "ncw": 1}):
        st, out = run(**bad)
        assert st == -2 and (out == 7).all(), bad
    with pytest.raises(ValueError, match="layout"):
        dpf.eval_full_batch(dpf.KeyBatch(dpf.Params(8, early=False), 0, bodies[:, :size - 8]))


# ------------------------------------------- batched PathGen / ConvertGen vs the twin
def test_path_gen_batch_matches_python_twin(backend):
    """path_gen_batch on given roots, bit for bit ref.gen's path bodies and
    final states: depths 1 to 20, batches around gen_unit's 32 keys."""
    for n, count in ((1, 3), (5, 33), (12, 70), (20, 31)):
        alphas = [secrets.randbelow(2**n) for _ in range(count)]
        rand = secrets.token_bytes(32 * count)
        p0, p1, sec = dpf.path_gen_batch(alphas, n, _rand=rand)
        finals = sec.export_secret()[24:24 + 32 * count]
        for k, a in enumerate(alphas):
            b0, b1, (x0, x1) = ref.gen(a, [], n, 0, 0, rand[32 * k:32 * k + 32])
            assert p0.bodies[k].tobytes() == b0 and p1.bodies[k].tobytes() == b1, (n, k)
            assert finals[32 * k:32 * k + 32] == x0.to_bytes(16, "little") + x1.to_bytes(16, "little")
    with pytest.raises(ValueError, match="_rand"):
        dpf.path_gen_batch([1, 2], 4, _rand=bytes(32))


@pytest.mark.parametrize("group", GROUPS)
def test_convert_gen_batch_matches_python_twin(backend, group):
    """convert_gen_batch (the Convert streams of 8 keys a call, the rings'
    words from the variant's accumulating conversion) against
    ref.convert_gen: rows of 1 to 65 elements, counts around the 8-key
    chunks, conversion domains 0, 1 and 5."""
    g = _layout.group_of(group)
    M = modulus(group)
    for d, count, dom in ((1, 1, 0), (3, 9, 1), (8, 8, 5), (64, 17, 1), (65, 20, 0)):
        alphas = [secrets.randbelow(2**6) for _ in range(count)]
        rand = secrets.token_bytes(32 * count)
        _, _, sec = dpf.path_gen_batch(alphas, 6, _rand=rand)
        betas = np.array([[secrets.randbelow(M) for _ in range(d)] for _ in range(count)], dtype=np.uint64)
        cws = dpf.convert_gen_batch(sec, betas, group=group, domain=dom)
        for k, a in enumerate(alphas):
            _, _, (x0, x1) = ref.gen(a, [], 6, 0, 0, rand[32 * k:32 * k + 32])
            want = ref.convert_gen(x0, x1, [int(v) for v in betas[k]], g.gid, g.p, dom)
            assert cws[k].tolist() == want, (d, count, dom, k)
