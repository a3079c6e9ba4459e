import json
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

import secea_fast
from secea_fast import prg

VECTORS = json.loads((Path(__file__).parent / "vectors" / "aes.json").read_text())


def openssl_ctr(key, iv, n):
    return Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(bytes(n))


def test_fips197_known_answers(backend):
    for v in VECTORS["fips197_ecb"]:
        assert prg.aes128_ecb(bytes.fromhex(v["key"]), bytes.fromhex(v["plaintext"])).hex() == v["ciphertext"]


def test_sp800_38a_ctr(backend):
    v = VECTORS["sp800_38a_ctr"]
    ks = prg.aes128_ctr(bytes.fromhex(v["key"]), bytes.fromhex(v["init_counter"]), 64)
    assert ks.hex() == "".join(v["output_blocks"])
    pt = bytes.fromhex("".join(v["plaintext"]))
    assert bytes(x ^ y for x, y in zip(pt, ks)).hex() == "".join(v["ciphertext"])


@pytest.mark.parametrize("n", [0, 1, 7, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1024 + 3, 70001])
def test_ctr_matches_openssl(n, backend):
    key, iv = os.urandom(16), os.urandom(16)
    assert prg.aes128_ctr(key, iv, n) == openssl_ctr(key, iv, n)


@pytest.mark.parametrize("iv_int", [2**64 - 3, 2**64 - 1, 2**128 - 5, 2**128 - 1, (2**64 - 2) * 2**64 + 2**64 - 7])
def test_ctr_counter_wrap(iv_int, backend):
    key = os.urandom(16)
    iv = iv_int.to_bytes(16, "big")
    for n in (16 * 9 + 5, 16 * 40):
        assert prg.aes128_ctr(key, iv, n) == openssl_ctr(key, iv, n)


def test_bulk_equals_block_by_block(backend):
    key, iv = os.urandom(16), os.urandom(16)
    bulk = prg.aes128_ctr(key, iv, 16 * 50)
    c = int.from_bytes(iv, "big")
    blocks = b"".join(prg.aes128_ecb(key, ((c + i) % 2**128).to_bytes(16, "big")) for i in range(50))
    assert bulk == blocks


# the portable AES encrypts 8 blocks per batch (aes_portable.c, 2 lanes x 4
# blocks): every count up to two batches and a partial third, then the DPF's
# 64-block calls and a long odd one
PORTABLE_BATCH = 8
BLOCK_COUNTS = list(range(1, 2 * PORTABLE_BATCH + 4)) + [63, 64, 65, 200]


def test_block_counts_and_alignments_match_openssl(backend):
    """ECB and CTR for every block count through two batches and a partial
    third, against OpenSSL: input and output at every byte offset mod 16
    (ECB also in place), CTR with a partial last block and with the low
    counter word wrapping inside a batch."""
    from secea_fast._native import ffi, lib
    key = os.urandom(16)
    enc = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    for n in BLOCK_COUNTS:
        data = os.urandom(16 * n)
        want = enc.update(data)
        for off in (0, 1, 3, 8, 15):
            src = np.zeros(16 * n + 32, dtype=np.uint8)
            dst = np.full(16 * n + 32, 0xA5, dtype=np.uint8)
            src[off:off + 16 * n] = np.frombuffer(data, dtype=np.uint8)
            lib.secea_aes128_ecb_encrypt(ffi.from_buffer("uint8_t[]", dst) + off,
                                         ffi.from_buffer("uint8_t[]", src) + off, n, key)
            assert dst[off:off + 16 * n].tobytes() == want, (n, off)
            assert (dst[:off] == 0xA5).all() and (dst[off + 16 * n:] == 0xA5).all(), (n, off)
            lib.secea_aes128_ecb_encrypt(ffi.from_buffer("uint8_t[]", src) + off,   # in place
                                         ffi.from_buffer("uint8_t[]", src) + off, n, key)
            assert src[off:off + 16 * n].tobytes() == want, (n, off)
        for iv_int in (int.from_bytes(os.urandom(16), "big"), 2**64 - 5):
            iv = iv_int.to_bytes(16, "big")
            for nbytes in (16 * n, 16 * n - 7):
                ref = openssl_ctr(key, iv, nbytes)
                off = n % 16
                buf = np.full(nbytes + 32, 0x5A, dtype=np.uint8)
                prg.aes128_ctr_into(key, iv, buf[off:off + nbytes])
                assert buf[off:off + nbytes].tobytes() == ref, (n, nbytes, iv_int)
                assert (buf[:off] == 0x5A).all() and (buf[off + nbytes:] == 0x5A).all()


def test_ctr_into_buffers(backend):
    key, iv = os.urandom(16), os.urandom(16)
    out = np.empty(1000, dtype=np.uint8)
    prg.aes128_ctr_into(key, iv, out)
    assert out.tobytes() == openssl_ctr(key, iv, 1000)
    with pytest.raises(TypeError):
        prg.aes128_ctr_into(key, iv, b"read-only")


def test_aes_bad_input():
    with pytest.raises(ValueError, match="16 bytes"):
        prg.aes128_ctr(bytes(15), bytes(16), 3)
    with pytest.raises(ValueError, match="16 bytes"):
        prg.aes128_ctr(bytes(16), bytes(17), 3)
    with pytest.raises(TypeError):
        prg.aes128_ctr("0" * 16, bytes(16), 3)
    with pytest.raises(ValueError):
        prg.aes128_ctr(bytes(16), bytes(16), -1)
    with pytest.raises(ValueError, match="multiple of 16"):
        prg.aes128_ecb(bytes(16), bytes(17))


def test_prg_deterministic_and_domain_separated():
    seed = bytes(range(32))
    a = prg.Prg(seed, "mask/round-1").bytes(100)
    assert a == prg.Prg(seed, "mask/round-1").bytes(100)
    assert a != prg.Prg(seed, "mask/round-2").bytes(100)
    assert a != prg.Prg(seed[::-1], "mask/round-1").bytes(100)
    # forward only: successive draws are consecutive pieces of one stream
    g = prg.Prg(seed, "mask/round-1")
    assert g.bytes(7) + g.bytes(30) + g.bytes(63) == a
    assert "key" not in repr(g) and seed.hex() not in repr(g)


def test_field_sampling_is_canonical_stream_use():
    seed = os.urandom(32)
    p = 2**61 - 1
    whole = prg.Prg(seed, "x").field(1000, p)
    g = prg.Prg(seed, "x")
    parts = np.concatenate([g.field(1, p), g.field(333, p), g.field(666, p)])
    assert (whole == parts).all()
    # rejection: the accepted words are exactly the masked stream words below p
    words = prg.Prg(seed, "x").uint64(3000) & np.uint64(2**61 - 1)
    assert (whole == words[words < np.uint64(p)][:1000]).all()


@pytest.mark.parametrize("p", [2, 3, 5, 257, 2**31 - 1, secea_fast.EMBEDDING_PRIME, secea_fast.GOLDILOCKS])
def test_field_sampling_range(p):
    x = prg.Prg(os.urandom(32), "r").field(5000, p)
    assert x.dtype == np.uint64 and x.size == 5000 and (x < np.uint64(p)).all()


def test_field_sampling_chi_square():
    """Uniformity of Prg.field on F_p, p = 257 (acceptance 257/511): chi-square
    with 256 degrees of freedom; 99.9% critical value 330.5."""
    p, n = 257, 257 * 400
    x = prg.Prg(os.urandom(32), "chi2").field(n, p)
    counts = np.bincount(x.astype(np.int64), minlength=p)
    expected = n / p
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 330.5, chi2
    # and a 64-bit prime: the top bit-bucket distribution over 16 buckets
    y = prg.Prg(os.urandom(32), "chi2-64").field(64000, secea_fast.GOLDILOCKS)
    buckets = Counter((int(v) * 16) // secea_fast.GOLDILOCKS for v in y)
    chi2 = sum((buckets[i] - 4000) ** 2 / 4000 for i in range(16))
    assert chi2 < 37.7  # 15 dof, 99.9%


def test_secret_apis_use_no_insecure_rng(no_insecure_rng):
    s = prg.random_seed()
    assert len(s) == 32
    x = prg.uniform(100, secea_fast.GOLDILOCKS)
    assert x.size == 100
    a, b = prg.X25519KeyPair(), prg.X25519KeyPair()
    assert prg.pairwise_seed(a, b.public_bytes, b"ctx") == prg.pairwise_seed(b, a.public_bytes, b"ctx")


def test_pairwise_seed_context_and_errors():
    a, b, c = prg.X25519KeyPair(), prg.X25519KeyPair(), prg.X25519KeyPair()
    ab = prg.pairwise_seed(a, b.public_bytes, b"round-1/0-1")
    assert ab != prg.pairwise_seed(a, b.public_bytes, b"round-2/0-1")
    assert ab != prg.pairwise_seed(a, c.public_bytes, b"round-1/0-1")
    with pytest.raises(ValueError, match="32 bytes"):
        prg.pairwise_seed(a, b.public_bytes[:31], b"x")
    with pytest.raises(ValueError, match="invalid peer"):
        prg.pairwise_seed(a, bytes(32), b"x")  # small-order point
    with pytest.raises(TypeError):
        prg.pairwise_seed("not a key", b.public_bytes, b"x")
    import pickle
    with pytest.raises(TypeError):
        pickle.dumps(a)
    with pytest.raises(TypeError):
        pickle.dumps(prg.Prg(bytes(16), "x"))


def test_prg_bad_input():
    with pytest.raises(ValueError, match="at least 16"):
        prg.Prg(bytes(8), "x")
    with pytest.raises(TypeError):
        prg.Prg(bytes(16), 3)
    with pytest.raises(ValueError, match="not prime"):
        prg.Prg(bytes(16), "x").field(3, 10)
    with pytest.raises(ValueError):
        prg.random_seed(8)


def _field_twin(seed, domain, n, p, skip_bytes=0):
    """NumPy twin of Prg.field: the stream as LE words, masked, kept if < p."""
    g = prg.Prg(seed, domain)
    if skip_bytes:
        g.bytes(skip_bytes)
    words = np.frombuffer(g.bytes(8 * (3 * n + 64)), dtype="<u8").astype(np.uint64)
    words &= np.uint64((1 << (p - 1).bit_length()) - 1)
    return words[words < np.uint64(p)][:n]


@pytest.mark.parametrize("p", [2, 101, 2**61 - 1, 63 * 2**44 + 1, 2**64 - 2**32 + 1, 2**64 - 59])
@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 70001])
@pytest.mark.parametrize("skip", [0, 8, 3])
def test_field_sampler_matches_numpy_twin(backend, p, n, skip):
    seed = prg.random_seed()
    g = prg.Prg(seed, "twin")
    if skip:
        g.bytes(skip)
    got = g.field(n, p)
    assert got.tolist() == _field_twin(seed, "twin", n, p, skip).tolist()
    # the stream continues canonically after the call
    assert g.field(3, p).tolist() == _field_twin(seed, "twin", n + 3, p, skip)[n:].tolist()


@pytest.mark.parametrize("p", [101, 63 * 2**44 + 1, 2**64 - 2**32 + 1])
def test_field_into_masks_and_unmasks(p):
    seed = prg.random_seed()
    base = prg.uniform(9000, p)
    masked = prg.Prg(seed, "pad").field_into(np.empty_like(base), p, base=base)
    r = prg.Prg(seed, "pad").field(9000, p)
    assert masked.tolist() == [(int(b) + int(x)) % p for b, x in zip(base, r)]
    back = prg.Prg(seed, "pad").field_into(masked, p, base=masked, negate=True)
    assert back.tolist() == base.tolist()
    with pytest.raises(TypeError):
        prg.Prg(seed, "pad").field_into(np.empty(3, dtype=np.int64), p)
    with pytest.raises(ValueError):
        prg.Prg(seed, "pad").field_into(np.empty(1, np.uint64), p, base=np.array([p], np.uint64))


@pytest.mark.parametrize("n", [1, 2, 4095, 4097, 70001])
@pytest.mark.parametrize("skip", [0, 3, 8])
def test_xor_into_is_aes_ctr_encryption(backend, n, skip):
    p = 63 * 2**44 + 1
    seed = prg.random_seed()
    x = prg.uniform(n, p)
    g = prg.Prg(seed, "xor")
    g.bytes(skip)
    enc = g.xor_into(np.empty_like(x), x)
    # the keystream words after realignment to a word boundary
    h = prg.Prg(seed, "xor")
    h.bytes(skip + (-skip) % 8)
    ks = np.frombuffer(h.bytes(8 * n), dtype="<u8").astype(np.uint64)
    assert (enc == (x ^ ks)).all()
    # scaled variant encrypts coef * x mod p
    g2 = prg.Prg(seed, "xor")
    g2.bytes(skip)
    enc2 = g2.xor_into(np.empty_like(x), x, p, coef=12345)
    assert ((enc2 ^ ks) == ((x.astype(object) * 12345) % p).astype(np.uint64)).all()
    # decryption with the range check
    g3 = prg.Prg(seed, "xor")
    g3.bytes(skip)
    assert g3.xor_into(enc, enc, p, check=True).tolist() == x.tolist()


@pytest.mark.parametrize("offset", [0, 1, 5, 7])
@pytest.mark.parametrize("n", [3, 8, 4100, 70001])
def test_xor_into_stream_writes_the_same_words(backend, offset, n):
    """stream=True (non-temporal stores from the first 64-byte boundary of
    out) gives the same output as ordinary stores at any alignment, with the
    scaling and the range check."""
    p = 63 * 2**44 + 1
    seed = prg.random_seed()
    x = prg.uniform(n, p)
    buf = np.zeros(n + 16, dtype=np.uint64)
    out = buf[offset:offset + n]
    for coef in (1, 777):
        want = prg.Prg(seed, "s").xor_into(np.empty_like(x), x, p, coef=coef)
        got = prg.Prg(seed, "s").xor_into(out, x, p, coef=coef, stream=True)
        assert got is out and np.array_equal(out, want)
        assert not buf[:offset].any() and not buf[offset + n:].any()
    enc = prg.Prg(seed, "s").xor_into(np.empty_like(x), x)
    assert np.array_equal(prg.Prg(seed, "s").xor_into(out, enc, p, check=True, stream=True), x)
    enc[n // 2] ^= np.uint64(1 << 62)                    # decrypts to a word >= p
    with pytest.raises(ValueError, match=">= p"):
        prg.Prg(seed, "s").xor_into(out, enc, p, check=True, stream=True)


@pytest.mark.parametrize("iv_int", [0, 1, 31, 255, 2**64 - 3, 2**64 - 1500, 2**128 - 40])
@pytest.mark.parametrize("stream", [False, True])
def test_prg_xor_matches_openssl_ctr(backend, iv_int, stream):
    """secea_prg_xor against OpenSSL's AES-128-CTR: counters that wrap the
    low word, start off the fused kernel's 32-block and 256-block alignments,
    lengths around its table threshold (1024 blocks) and chunk (4096 words),
    odd word counts, a byte-8 start, output aliasing the input, output 0, 8,
    16, 32 and 48 bytes past a 64-byte boundary (the streamed route's ordinary-
    store head, and the buffer route for 8-byte aligned output), the range
    check and the scaled input."""
    from secea_fast._native import ffi, lib
    rng = np.random.default_rng(iv_int % 1000)
    key, iv = os.urandom(16), iv_int.to_bytes(16, "big")
    flags = 2 if stream else 0
    for n in (2, 7, 62, 2047, 2048, 2049, 4096, 4097, 9001):
        for skip in (0, 8):
            ks = np.frombuffer(openssl_ctr(key, iv, 8 * n + 16)[skip:skip + 8 * n], dtype="<u8").astype(np.uint64)
            x = rng.integers(0, 2**63, n, dtype=np.uint64)
            buf = np.zeros(n + 16, dtype=np.uint64)
            at = (-buf.ctypes.data // 8) % 8                 # buf[at:] is 64-byte aligned
            for shift in (0, 1, 2, 4, 6):                   # out at 0, 8, 16, 32, 48 mod 64
                buf[:] = 0
                out = buf[at + shift:at + shift + n]
                bad = lib.secea_prg_xor(ffi.from_buffer("uint64_t[]", out), ffi.from_buffer("uint64_t[]", x), n,
                                        key, iv, skip, 2**63, 1, flags | 1)
                assert np.array_equal(out, x ^ ks), (n, skip, shift)
                assert not buf[:at + shift].any() and not buf[at + shift + n:].any()
                assert bad == int(((x ^ ks) >= 2**63).any())
            y = x.copy()                                  # in place
            lib.secea_prg_xor(ffi.from_buffer("uint64_t[]", y), ffi.from_buffer("uint64_t[]", y), n,
                              key, iv, skip, 0, 1, flags)
            assert np.array_equal(y, x ^ ks), (n, skip)
            q = 2**61 - 1                                 # scaled: (777 x mod q) XOR keystream
            xq = x % np.uint64(q)
            lib.secea_prg_xor(ffi.from_buffer("uint64_t[]", y), ffi.from_buffer("uint64_t[]", xq), n,
                              key, iv, skip, q, 777, flags)
            assert np.array_equal(y, ((xq.astype(object) * 777) % q).astype(np.uint64) ^ ks), (n, skip)


@pytest.mark.parametrize("iv_int", [0, 5, 2**64 - 3, 2**64 - 700, 2**128 - 9])
@pytest.mark.parametrize("p", [101, 257, 2**32 + 15, 2**64 - 2**32 + 1])
def test_prg_field_matches_openssl_ctr(backend, iv_int, p):
    """secea_prg_field without a base (the fused sampler's route) against
    rejection sampling of OpenSSL's CTR keystream: the words kept and the
    words read, across low-word wraps and from byte 8 of a block, with
    acceptance near 1/2 (257, 2^32 + 15: the sampler's later, larger calls)."""
    from secea_fast._native import ffi, lib
    key, iv = os.urandom(16), iv_int.to_bytes(16, "big")
    mask = (1 << (p - 1).bit_length()) - 1
    for n in (1, 2, 7, 2047, 5000):
        for skip in (0, 8):
            words = np.frombuffer(openssl_ctr(key, iv, 8 * (4 * n + 64) + 16)[skip:], dtype="<u8")
            words = words[: len(words) // 8 * 8].astype(np.uint64) & np.uint64(mask)
            keep = np.nonzero(words < np.uint64(p))[0][:n]
            out = np.zeros(n + 1, dtype=np.uint64)
            used = lib.secea_prg_field(ffi.from_buffer("uint64_t[]", out), n, key, iv, skip, p, ffi.NULL, 1, 0)
            assert out[:n].tolist() == words[keep].tolist() and out[n] == 0, (n, skip)
            assert used == keep[-1] + 1, (n, skip)


@pytest.mark.parametrize("offset", [0, 3])
@pytest.mark.parametrize("n", [1, 9, 4096, 9001])
def test_copy_stream(backend, offset, n):
    src = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    buf = np.zeros(n + 8, dtype=np.uint64)
    out = buf[offset:offset + n]
    assert prg.copy_stream(out, src) is out and np.array_equal(out, src)
    assert not buf[:offset].any() and not buf[offset + n:].any()
    with pytest.raises(ValueError):
        prg.copy_stream(out[:-1], src)
    with pytest.raises(TypeError):
        prg.copy_stream(out, src.astype(np.int64))


def test_xor_into_check_rejects_non_field_words():
    seed = prg.random_seed()
    junk = np.full(10, 2**63, dtype=np.uint64)
    enc = prg.Prg(seed, "j").xor_into(np.empty_like(junk), junk)
    with pytest.raises(ValueError, match=">= p"):
        prg.Prg(seed, "j").xor_into(enc, enc, 101, check=True)
    with pytest.raises(ValueError):
        prg.Prg(seed, "j").xor_into(enc, enc, check=True)
    with pytest.raises(TypeError):
        prg.Prg(seed, "j").xor_into(enc, enc.astype(np.int64))


@pytest.mark.parametrize("nbytes", [0, 1, 2, 15, 16, 17, 4096, (1 << 20) + 3, (32 << 20) + 13])
def test_aes128_ctr_bytes_equal_openssl(nbytes):
    """The one-shot call writes into a new uninitialised bytearray (and
    advises huge pages from 32 MiB): same bytes as OpenSSL, type bytearray
    (never a bytes object written in place), and independent objects
    (nothing cached or shared between calls)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    key, iv = bytes(range(16)), bytes(range(16, 32))
    out = prg.aes128_ctr(key, iv, nbytes)
    assert type(out) is bytearray and len(out) == nbytes
    assert out == Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(bytes(nbytes))
    again = prg.aes128_ctr(key, iv, nbytes)
    assert again == out and (nbytes == 0 or again is not out)


def test_aes_peak_runs_on_every_variant(backend):
    """The benchmarks' AES ceiling (secea_aes_peak) runs on the selected
    variant and depends on the work done (the result is not optimised away)."""
    from secea_fast._native import lib
    a, b = lib.secea_aes_peak(4096), lib.secea_aes_peak(8192)
    assert isinstance(a, int) and isinstance(b, int) and a != b


# ------------------------------------------------------------ priority_subset
def _subset_case(rng, m, mp, n, ties=False):
    items = rng.choice(m, n, replace=False).astype(np.int64)
    words = rng.integers(0, 2**64, m + mp, dtype=np.uint64)
    if ties:                      # few random bits: equal keys and equal slot words are common
        words &= np.uint64(0x3F)
    return items, words


@pytest.mark.parametrize("ties", [False, True])
def test_priority_subset_matches_numpy_twin(ties):
    """The C kernel against its NumPy twin on the same words, bit for bit
    (sizes from 1 to past the histogram's and the insertion sort's limits,
    every |items| regime: none, fewer than m', more, all)."""
    rng = np.random.default_rng(11 + ties)
    cases = [(1, 1, 0), (1, 1, 1), (2, 1, 1), (8, 8, 3), (40, 33, 0), (40, 33, 40), (300, 40, 39),
             (300, 40, 41), (3883, 300, 120), (3883, 300, 1500), (5000, 4000, 100)]
    cases += [(m, int(rng.integers(1, m + 1)), int(rng.integers(0, m + 1)))
              for m in rng.integers(1, 700, 40)]
    for m, mp, n in cases:
        items, words = _subset_case(rng, int(m), mp, n, ties)
        a = prg.priority_subset(items, int(m), mp, words)
        b = prg.priority_subset(items, int(m), mp, words, impl="numpy")
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]), (m, mp, n)
        idx, pos = a
        assert len(set(idx.tolist())) == mp
        kept = pos >= 0
        assert kept.sum() == min(n, mp) and np.array_equal(items[pos[kept]], idx[kept])


def test_priority_subset_refuses_bad_input():
    w = np.zeros(12, dtype=np.uint64)
    for impl in ("c", "numpy"):
        with pytest.raises(ValueError, match="duplicates"):
            prg.priority_subset(np.array([1, 1]), 10, 2, w, impl=impl)
        for bad in ([10], [-1], [3, 12], list(range(10)) + [10]):     # the last: more items than m, one out of range
            with pytest.raises(ValueError, match=r"item ids must be in \[0, 10\)"):
                prg.priority_subset(np.array(bad), 10, 2, w, impl=impl)
        with pytest.raises(ValueError, match="item ids"):
            prg.priority_subset(np.array([2**63 + 1], dtype=np.uint64), 10, 2, w, impl=impl)
    with pytest.raises(TypeError, match="words"):
        prg.priority_subset(np.array([1]), 10, 3, w)
    with pytest.raises(TypeError, match="items"):
        prg.priority_subset([1], 10, 2, w)
    with pytest.raises(ValueError, match="m_prime"):
        prg.priority_subset(np.array([1]), 10, 11, np.zeros(21, dtype=np.uint64))
    with pytest.raises(ValueError, match="impl"):
        prg.priority_subset(np.array([1]), 10, 2, w, impl="fast")
