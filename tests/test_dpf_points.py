"""DPF point evaluation: the interleaved walk (each path's state kept in a
register for the whole depth, many keys' paths in flight) against the
reference walk it replaced (one hash_sel pass per level through memory),
bit for bit, on every DPF variant this CPU runs (portable included): random
keys, batch sizes 1, odd and across the 256-point chunk, depths 1 to 63,
early and full-depth keys, several groups, one or several points per key,
and PathEval's states."""
import secrets

import numpy as np
import pytest

import secea_fast
from secea_fast import dpf
from secea_fast._native import lib
from secea_fast.dpf._layout import ptr, wptr
from secea_fast.dpf.eval import key_arrays

VARIANTS = ("portable", "aesni", "vaes256", "vaes", "armce")


@pytest.fixture
def variants():
    """The (backend, DPF variant) pairs this CPU runs: every variant under
    the default dispatch (portable always), and "aesni" again under the AVX2
    ceiling, where the point walk is the 128-bit AES-NI one instead of the
    256-bit VAES one; yields a function that selects a pair.  The selection
    is restored afterwards."""
    before = secea_fast.get_backend()
    pairs = []
    try:
        for backend in ("auto", "avx2"):
            secea_fast.set_backend(backend)
            for name in VARIANTS if backend == "auto" else ("aesni",):
                if lib.secea_dpf_select_variant(name.encode()) == 0:
                    pairs.append((backend, name))
        secea_fast.set_backend(before)

        def select(pair):
            secea_fast.set_backend(pair[0])
            assert lib.secea_dpf_select_variant(pair[1].encode()) == 0

        yield pairs, select
    finally:
        secea_fast.set_backend(before)


def _eval(fn, keys, xs, per_key):
    ref, bodies, parties, _ = key_arrays(keys)
    tail = (ref.d,) if ref.vector else ()
    out = np.full((xs.size,) + tail, 0xA5A5, dtype=np.uint64)
    x = np.ascontiguousarray(xs.reshape(-1))
    st = fn(ref.shape(bodies.shape[1]), wptr(out), ptr(bodies), ptr(parties), ptr(x, "uint64_t[]"), x.size,
            per_key, 1)
    assert st == 0
    return out


def _states(fn, keys, xs, per_key):
    ref, bodies, _, _ = key_arrays(keys)
    out = np.zeros((xs.size, 16), dtype=np.uint8)
    x = np.ascontiguousarray(xs.reshape(-1) >> np.uint64(ref.e))
    st = fn(ref.shape(bodies.shape[1]), wptr(out, "uint8_t[]"), ptr(bodies), ptr(x, "uint64_t[]"), x.size, per_key, 1)
    assert st == 0
    return out


def _points(alphas, n, per_key, rng):
    """per_key points per key: alpha itself, then random points (and alpha xor 1)."""
    xs = rng.integers(0, 2**n, size=(alphas.size, per_key), dtype=np.uint64, endpoint=False)
    xs[:, 0] = alphas
    if per_key > 1:
        xs[:, 1] = alphas ^ np.uint64(1)
    return xs


CASES = [  # (log_domain, group, d, early)
    (1, "u64", None, False), (2, "u64", None, None), (5, "u32", None, None), (17, "u64", None, False),
    (20, "u64", None, None), (32, "u64", None, False), (32, "u32", None, None), (33, 2**61 - 1, None, False),
    (40, "u64", 3, False), (63, "u64", None, False), (63, "u32", None, None), (24, 65537, 2, False),
]


@pytest.mark.parametrize("n, group, d, early", CASES)
def test_interleaved_walk_equals_reference(variants, n, group, d, early):
    rng = np.random.default_rng(secrets.randbits(64))
    M = {"u64": 2**64, "u32": 2**32}.get(group, group)
    pairs, select = variants
    for name in pairs:
        select(name)
        for count in (1, 3, 8, 9, 33, 261):
            alphas = rng.integers(0, 2**n, size=count, dtype=np.uint64, endpoint=False)
            if d is None:
                betas = rng.integers(1, min(M, 2**63), size=count, dtype=np.uint64)
            else:
                betas = rng.integers(1, min(M, 2**63), size=(count, d), dtype=np.uint64)
            k0, k1 = dpf.gen_batch(alphas, betas, n, group, early=early)
            for per_key in (1, 3):
                xs = _points(alphas, n, per_key, rng)
                a = _eval(lib.secea_dpf_eval_points, k0, xs, per_key)
                b = _eval(lib.secea_dpf_eval_points_ref, k0, xs, per_key)
                assert np.array_equal(a, b), (name, count, per_key)
                # and they are DPF shares: alpha gets beta, the others 0
                c = _eval(lib.secea_dpf_eval_points, k1, xs, per_key)
                tot = np.array([(int(u) + int(v)) % M for u, v in zip(a.ravel(), c.ravel())], dtype=object)
                tot = tot.reshape((count, per_key) + ((d,) if d else ()))
                hit = xs == alphas[:, None]
                b = betas.astype(object)
                want = np.where(hit, b[:, None], 0) if d is None else np.where(hit[..., None], b[:, None, :], 0)
                assert (tot == want).all(), (name, count, per_key)
                if not k0.early:
                    sa = _states(lib.secea_dpf_path_eval, k0, xs, per_key)
                    sb = _states(lib.secea_dpf_path_eval_ref, k0, xs, per_key)
                    assert np.array_equal(sa, sb), (name, count, per_key)


def test_comparison_has_power(variants):
    """The control: one flipped bit in the deepest correction word of one
    key, or one flipped branch bit, changes the walk's output at that key
    only -- so equality above is not two sides ignoring the same input."""
    rng = np.random.default_rng(secrets.randbits(64))
    n, count = 32, 37
    alphas = rng.integers(0, 2**n, size=count, dtype=np.uint64)
    k0, k1 = dpf.gen_batch(alphas, np.ones(count, dtype=np.uint64), n, early=False)
    base_states = {}
    pairs, select = variants
    for name in pairs:
        select(name)
        xs = alphas.reshape(-1, 1)
        base_states[name] = _states(lib.secea_dpf_path_eval, k0, xs, 1)
        changed = []
        for k in (k0, k1):
            # key 20, level n: a seed bit of s_CW; on alpha's path exactly one
            # party's t is 1 there, so exactly one party's share changes
            bad = dpf.KeyBatch(k.params, k.party, k.bodies.copy())
            bad.bodies[20, 16 + 16 * (n - 1) + 5] ^= 0x10
            got = _eval(lib.secea_dpf_eval_points, bad, xs, 1)
            assert np.array_equal(got, _eval(lib.secea_dpf_eval_points_ref, bad, xs, 1))
            changed.append(list(np.flatnonzero(got != _eval(lib.secea_dpf_eval_points, k, xs, 1))))
        assert sorted(changed) == [[], [20]], changed
        xs2 = xs.copy()
        xs2[11, 0] ^= np.uint64(1 << (n - 1))                   # point 11 branches the other way at the root
        got2 = _states(lib.secea_dpf_path_eval, k0, xs2, 1)
        assert np.array_equal(got2, _states(lib.secea_dpf_path_eval_ref, k0, xs2, 1))
        assert list(np.flatnonzero((got2 != base_states[name]).any(axis=1))) == [11]
    for name in pairs:
        assert np.array_equal(base_states[name], base_states[("auto", "portable")]), name


def test_points_peak_runs_the_same_walk_on_every_variant(variants):
    """The benchmarks' walk ceiling (secea_dpf_points_peak) walks its
    synthetic keys with the variant's walk: the same leaf checksum on every
    variant (the portable table's plain-C walk included), and a different
    one for another number of paths."""
    pairs, select = variants
    sums = {}
    for name in pairs:
        select(name)
        sums[name] = (lib.secea_dpf_points_peak(37), lib.secea_dpf_points_peak(300))
    assert len(set(sums.values())) == 1, sums
    a, b = sums[pairs[0]]
    assert a != b and lib.secea_dpf_points_peak(0) == 0


# ------------------------------------------------ one-key generation

@pytest.mark.parametrize("n, group, early", [(1, "u64", None), (20, "u64", None), (32, "u64", False),
                                              (63, "u64", None), (24, "u32", None), (9, "u32", False)])
def test_one_key_paths_give_the_batch_keys(monkeypatch, n, group, early):
    """gen's one-key kernel (its inline fast path for plain ints over u64,
    and the checked path) writes the bytes gen_batch writes for the same
    randomness."""
    from secea_fast.dpf import keys as keys_mod
    M = 2**64 if group == "u64" else 2**32
    for _ in range(5):
        alpha, beta, rand = secrets.randbelow(2**n), secrets.randbelow(M), secrets.token_bytes(32)
        b0, b1 = dpf.gen_batch(np.array([alpha], dtype=np.uint64), np.array([beta], dtype=np.uint64), n, group,
                               early=early, _rand=rand)
        k0, k1 = dpf.gen(alpha, beta, n, group, early=early, _rand=rand)
        assert (k0.to_bytes(), k1.to_bytes()) == (b0[0].to_bytes(), b1[0].to_bytes())
        if group == "u64" and early is None:
            monkeypatch.setattr(keys_mod.secrets, "token_bytes", lambda k: rand)
            f0, f1 = dpf.gen(alpha, beta, n)
            monkeypatch.undo()
            assert (f0.to_bytes(), f1.to_bytes()) == (k0.to_bytes(), k1.to_bytes())


@pytest.mark.parametrize("args, name", [((-1, 7, 20), "alpha"), ((2**20, 7, 20), "alpha"), ((3, -1, 20), "beta"),
                                        ((3, 2**64, 20), "beta"), ((3, 7, 0), "log_domain"),
                                        ((3, 7, 64), "log_domain")])
def test_one_key_fast_path_errors_name_the_argument(args, name):
    with pytest.raises(ValueError, match=name):
        dpf.gen(*args)
