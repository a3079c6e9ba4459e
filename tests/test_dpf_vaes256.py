"""The "vaes256" DPF variant (VAES on 256-bit registers with AVX2, for CPUs
without AVX-512) against its reference twin, the "aesni" variant: bit for
bit, through every slot of the variant table -- the tree expansion (path
walks, full-domain evaluation, the XOR retrieval), the hash and hash_sel
(interleaved top levels, point evaluation), and the conversions (the fused
aggregation over Z_2^32 and Z_2^64, the stored convert-accumulate, the leaf
values of 1, 2, 4 and d words) -- over key counts around the 8-register
groups, depths 1 to 13, rows with whole and partial 16-byte Convert blocks
and whole and partial 32-byte registers (and the 256-byte rows of the fast
path), default and early keys, 1 and 2 threads.  Skipped on CPUs that do
not run both variants."""
import os

import numpy as np
import pytest

import secea_fast
from secea_fast import dpf
from secea_fast._native import ffi, lib

COUNTS = (1, 3, 9, 17)
# (log_domain, m): one level, a partial domain, the MovieLens-1M shape, 13 levels
SHAPES = ((1, 2), (5, 19), (12, 3883), (13, 4500))


@pytest.fixture(autouse=True)
def both_variants():
    for name in (b"aesni", b"vaes256"):
        if lib.secea_dpf_select_variant(name) != 0:
            secea_fast.set_backend(secea_fast.get_backend())
            pytest.skip(f"this CPU does not run the {name.decode()} DPF variant")
    secea_fast.set_backend(secea_fast.get_backend())
    yield
    secea_fast.set_backend(secea_fast.get_backend())


def _twins(fn):
    """fn() under the reference variant "aesni", then under "vaes256"."""
    out = []
    for name in (b"aesni", b"vaes256"):
        assert lib.secea_dpf_select_variant(name) == 0
        out.append(fn())
    secea_fast.set_backend(secea_fast.get_backend())
    return out


def _same(fn):
    ref, new = _twins(fn)
    assert np.asarray(new).tobytes() == np.asarray(ref).tobytes()
    return new


# d over Z_2^32: 1, 3 (partial 16-byte block), 4, 5 (partial block), 8 (one
# register), 12 (partial register), 16, 64 and 128 (rows of 8 and 16
# registers); over Z_2^64 the same d are 1/2 block ... 8 and 16 registers
DS = (1, 3, 4, 5, 8, 12, 16, 64, 128)


@pytest.mark.parametrize("group, dtype", (("u32", np.uint32), ("u64", np.uint64)))
@pytest.mark.parametrize("d", DS)
@pytest.mark.parametrize("count", COUNTS)
def test_fused_aggregation_matches_the_aesni_twin(group, dtype, d, count):
    n, m = (12, 3883) if count <= 3 else (5, 19)
    rng = np.random.default_rng(1000 * d + count)
    alphas = rng.integers(0, m, count)
    k0, k1, sec = dpf.path_gen_batch(alphas, n)
    betas = rng.integers(0, 1 << 32, (count, d), dtype=np.uint64)
    cw = dpf.convert_gen_batch(sec, betas, group, domain=5)
    start = np.frombuffer(os.urandom(m * d * np.dtype(dtype).itemsize), dtype=dtype).reshape(m, d)
    outs = []
    for keys, party, threads in ((k0, 0, 1), (k1, 1, 2)):
        outs.append(_same(lambda: dpf.path_convert_accumulate(start.copy(), keys, party, cw, domain=5,
                                                              threads=threads)))
    want = np.zeros((m, d), dtype=np.uint64)
    np.add.at(want, alphas, betas)
    got = outs[0].astype(np.uint64) + outs[1].astype(np.uint64) - 2 * start.astype(np.uint64)
    mask = np.uint64(0xFFFFFFFF if dtype == np.uint32 else 2**64 - 1)
    assert np.array_equal(got & mask, want & mask)


@pytest.mark.parametrize("n, m", SHAPES)
@pytest.mark.parametrize("count", COUNTS)
def test_tree_walks_match_the_aesni_twin(n, m, count):
    rng = np.random.default_rng(7 * n + count)
    alphas = rng.integers(0, m, count)
    k0, k1, sec = dpf.path_gen_batch(alphas, n)
    table = np.frombuffer(os.urandom(8 * m * 6), dtype=np.uint64).reshape(m, 6)
    x0 = _same(lambda: dpf.path_xor_rows(k0, table, threads=1))
    x1 = _same(lambda: dpf.path_xor_rows(k1, table, threads=2))
    assert np.array_equal((x0 ^ x1).reshape(count, 6), table[alphas])
    s0 = _same(lambda: dpf.path_eval_full(k0, m, threads=2))
    s1 = _same(lambda: dpf.path_eval_full(k1, m, threads=1))
    # the stored convert-accumulate (Z_2^64, both parties' signs) on those leaf states
    d = 5
    cw = dpf.convert_gen_batch(sec, rng.integers(0, 1 << 40, (count, d), dtype=np.uint64), "u64", domain=2)
    parties = np.array([0] * count + [1] * count, dtype=np.uint8)
    states = np.concatenate([s0.reshape(count, m, 16), s1.reshape(count, m, 16)])
    _same(lambda: dpf.convert_accumulate(np.zeros((m, d), dtype=np.uint64), states, parties,
                                         np.concatenate([cw, cw]), domain=2, threads=2))
    # point walks (hash_sel and the interleaved point walk) on the path keys
    xs = rng.integers(0, m, 37)
    for key in (k0[0], k1[count - 1]):
        _same(lambda: np.concatenate([a.reshape(-1) for a in dpf.path_eval(key, xs, threads=1)]))


@pytest.mark.parametrize("early", (False, True))
@pytest.mark.parametrize("group", ("u64", "u32"))
@pytest.mark.parametrize("count", (1, 3, 17))
def test_scalar_keys_match_the_aesni_twin(early, group, count):
    n = 11
    rng = np.random.default_rng(count + 10 * early)
    alphas = rng.integers(0, 1 << n, count)
    betas = rng.integers(1, 1 << 31, count, dtype=np.uint64)
    k0, k1 = dpf.gen_batch(alphas, betas, n, group, early=early)
    f0 = _same(lambda: dpf.eval_full_batch(k0, threads=1))
    f1 = _same(lambda: dpf.eval_full_batch(k1, threads=2))
    mod = 1 << (64 if group == "u64" else 32)
    got = (f0.astype(object) + f1.astype(object)) % mod
    want = np.zeros_like(got)
    want[np.arange(count), alphas] = betas
    assert np.array_equal(got, want)
    xs = np.concatenate([alphas, rng.integers(0, 1 << n, 40)])
    for key in (k0, k1):
        _same(lambda: np.stack([dpf.eval_points(key[i], xs) for i in range(count)]))
    if group == "u64":
        table = np.frombuffer(os.urandom(8 * (1 << n) * 3), dtype=np.uint64).reshape(1 << n, 3)
        _same(lambda: dpf.eval_full_dot(k0, table, threads=2))


@pytest.mark.parametrize("d", (2, 3, 4, 5, 8, 9, 32, 64))
def test_vector_payload_leaf_values_match_the_aesni_twin(d):
    """Z_2^64 vector payloads: the leaf-value slots of 2 words (conv_u64),
    4 words (conv_u64x4) and d words (conv_u64_vec, its row kernel for d = 32
    and 64: rows of 8 and 16 registers, 3 leaves in groups of 12), both
    parties."""
    n = 9
    rng = np.random.default_rng(d)
    alphas = rng.integers(0, 1 << n, 5)
    betas = rng.integers(0, 1 << 63, (5, d), dtype=np.uint64)
    k0, k1 = dpf.gen_batch(alphas, betas, n, "u64", early=False)
    f0 = _same(lambda: dpf.eval_full_batch(k0, threads=2))
    f1 = _same(lambda: dpf.eval_full_batch(k1, threads=1))
    got = (f0 + f1).reshape(5, 1 << n, d)
    assert np.array_equal(got[np.arange(5), alphas], betas)


def test_hash_matches_the_aesni_twin():
    data = os.urandom(16 * 53)      # odd block counts, below and above one 16-block group
    for which in (0, 1, 2):
        for nb in (1, 2, 15, 16, 17, 53):
            def run():
                out = bytearray(16 * nb)
                lib.secea_dpf_hash(ffi.from_buffer(out), data[:16 * nb], nb, which)
                return np.frombuffer(bytes(out), dtype=np.uint8)
            _same(run)



def test_convacc_peak_runs_and_refuses_other_shapes():
    """The benchmarks' bound of the fused conversion (secea_dpf_convacc_peak:
    AES groups, the conversion's instruction mix, the real slot) runs on
    "vaes256" for 8, 12 and 16 chains, gives the same checksum twice, and
    refuses other chain counts, mixes and row counts."""
    assert lib.secea_dpf_select_variant(b"vaes256") == 0
    chk = ffi.new("uint64_t*")
    for mix in (0, 1, 2, 3, 4, 5):
        for chains in (8, 12, 16):
            got = []
            for _ in range(2):
                assert lib.secea_dpf_convacc_peak(4096, chains, mix, 16, chk) == 0
                got.append(chk[0])
            assert got[0] == got[1]
    for chains, mix, rows in ((7, 1, 16), (8, 6, 16), (8, -1, 16), (8, 1, 1), (8, 1, 4097)):
        assert lib.secea_dpf_convacc_peak(4096, chains, mix, rows, chk) == lib.SECEA_EINVAL
