"""Paillier kernel (secea_fast.paillier) against python-paillier (phe, on gmpy2)
in the same run, 2048-bit keys, one key pair shared by both libraries.

Every group processes the same number of plaintext values in each entry, so
``secea-fast bench summary`` ratios are per value.  ``threads`` in extra_info is the
``processes=`` argument (the calling process plus workers).  phe appears
twice where it has both: its public API (``encrypt`` / ``decrypt`` /
``EncryptedNumber * int``) and its raw kernel (``raw_encrypt`` /
``raw_decrypt`` / ``_raw_mul``); the ratio is taken to the faster one.

Targets (2048 bits): batch encryption with fresh randomness >= 1.5x phe (two
processes allowed); online encryption from the precomputed pool >= 100x;
decryption >= 1x per ciphertext (CRT + powmod_sec) and >= 10x per value
packed; scalar multiplication by a 64-bit r >= 2x per value; every
single-value call (one encryption, decryption, scalar multiplication,
addition) at least as fast as phe's (the "one value" groups).

    python -m pytest bench/test_paillier.py --benchmark-json=bench/results/paillier.json
    secea-fast bench summary bench/results/paillier.json
"""
import secrets

import pytest

from secea_fast import backend_info
from secea_fast import paillier as P

phe = pytest.importorskip("phe")

BITS = 2048
BATCH = 64
SLOT = 64                   # packed decryption: 64-bit values
R_BITS = 64                 # scalar multiplication by a 64-bit r
PHE_ROUNDS = 2              # phe encryption is ~0.6 s per batch: keep the file < 3 min
ROUNDS = 4
FAST_ROUNDS = 15          # short groups: medians over more rounds


@pytest.fixture(scope="module")
def keys():
    pk, sk = P.keygen(BITS)
    # start the worker process before any timing
    sk.decrypt(pk.encrypt([1, 2, 3, 4], processes=2), processes=2)
    yield pk, sk, pk.to_phe(), sk.to_phe()
    pk.clear_pool()


@pytest.fixture(scope="module")
def data(keys):
    pk, sk, ppk, psk = keys
    ms = [secrets.randbits(60) for _ in range(BATCH)]
    cts = pk.encrypt(ms)
    return ms, cts, [phe.EncryptedNumber(ppk, c) for c in cts]


def _mark(benchmark, group, impl, threads=1, values=BATCH, **extra):
    benchmark.group = f"paillier-{BITS} {group}"
    benchmark.extra_info.update(impl=impl, threads=threads, values=values, **extra)


# ---------------------------------------------------------------------------------- encryption

ENC = "encrypt 64 values, fresh randomness"
ENC_SK = "encrypt 64 values, with the private key (CRT obfuscators)"
ENC_POOL = "encrypt 64 values online (precomputed pool)"


@pytest.mark.parametrize("group", [ENC, ENC_SK, ENC_POOL])
def test_encrypt_phe_raw(benchmark, keys, data, group):
    ppk = keys[2]
    ms = data[0]
    _mark(benchmark, group, "phe (raw_encrypt)")
    benchmark.pedantic(lambda: [ppk.raw_encrypt(m) for m in ms], rounds=PHE_ROUNDS, iterations=1)


def test_encrypt_phe_api(benchmark, keys, data):
    ppk = keys[2]
    ms = data[0]
    _mark(benchmark, ENC, "phe (encrypt)")
    benchmark.pedantic(lambda: [ppk.encrypt(m) for m in ms], rounds=PHE_ROUNDS, iterations=1)


@pytest.mark.parametrize("processes", [1, 2])
def test_encrypt_ours(benchmark, keys, data, processes):
    pk = keys[0]
    pk.clear_pool()
    ms = data[0]
    _mark(benchmark, ENC, "secea_fast", processes)
    benchmark.pedantic(lambda: pk.encrypt(ms, processes=processes), rounds=ROUNDS, iterations=1)


@pytest.mark.parametrize("processes", [1, 2])
def test_encrypt_private_ours(benchmark, keys, data, processes):
    pk, sk = keys[:2]
    pk.clear_pool()
    ms = data[0]
    _mark(benchmark, ENC_SK, "secea_fast", processes)
    benchmark.pedantic(lambda: sk.encrypt(ms, processes=processes), rounds=ROUNDS, iterations=1)


def test_encrypt_online_ours(benchmark, keys, data):
    pk = keys[0]
    ms = data[0]
    pk.clear_pool()

    def refill():
        pk.precompute(BATCH, processes=2)       # offline, not timed

    def online():
        out = pk.encrypt(ms)
        assert pk.pool_size == 0                # every value used a pooled obfuscator
        return out

    _mark(benchmark, ENC_POOL, "secea_fast", 1)
    benchmark.pedantic(online, setup=refill, rounds=10, iterations=1)


# ---------------------------------------------------------------------------------- decryption

DEC = "decrypt 64 ciphertexts"


def test_decrypt_phe_raw(benchmark, keys, data):
    psk = keys[3]
    cts = data[1]
    _mark(benchmark, DEC, "phe (raw_decrypt)")
    benchmark.pedantic(lambda: [psk.raw_decrypt(c) for c in cts], rounds=7, iterations=1)


def test_decrypt_phe_api(benchmark, keys, data):
    psk = keys[3]
    encs = data[2]
    _mark(benchmark, DEC, "phe (decrypt)")
    benchmark.pedantic(lambda: [psk.decrypt(e) for e in encs], rounds=7, iterations=1)


@pytest.mark.parametrize("processes", [1, 2])
def test_decrypt_ours(benchmark, keys, data, processes):
    sk = keys[1]
    ms, cts = data[:2]
    _mark(benchmark, DEC, "secea_fast", processes)
    out = benchmark.pedantic(lambda: sk.decrypt(cts, processes=processes), rounds=7, iterations=1)
    assert out == ms


def _packed_count(pk):
    return 2 * pk.slots(SLOT)                    # two full ciphertexts


def test_decrypt_packed_phe(benchmark, keys):
    pk, _, ppk, psk = keys
    count = _packed_count(pk)
    cts = [ppk.raw_encrypt(secrets.randbits(SLOT)) for _ in range(count)]
    _mark(benchmark, f"decrypt {count} values ({SLOT}-bit, packed for secea_fast)", "phe (raw_decrypt)",
          values=count)
    benchmark.pedantic(lambda: [psk.raw_decrypt(c) for c in cts], rounds=ROUNDS, iterations=1)


def test_decrypt_packed_ours(benchmark, keys):
    pk, sk = keys[:2]
    count = _packed_count(pk)
    vals = [secrets.randbits(SLOT) for _ in range(count)]
    cts = pk.encrypt_packed(vals, SLOT)
    _mark(benchmark, f"decrypt {count} values ({SLOT}-bit, packed for secea_fast)", "secea_fast",
          values=count, ciphertexts=len(cts), slots=pk.slots(SLOT))
    out = benchmark.pedantic(lambda: sk.decrypt_packed(cts, SLOT, count), rounds=FAST_ROUNDS, iterations=1)
    assert out == vals


# ---------------------------------------------------------------------------------- scalar multiplication

MUL = f"mul_scalar 64 ciphertexts by one {R_BITS}-bit r"


@pytest.fixture(scope="module")
def r_scalar():
    return secrets.randbits(R_BITS) | (1 << (R_BITS - 1))


def test_mul_phe_api(benchmark, data, r_scalar):
    encs = data[2]
    _mark(benchmark, MUL, "phe (EncryptedNumber * int)")
    benchmark.pedantic(lambda: [e * r_scalar for e in encs], rounds=FAST_ROUNDS, iterations=1)


def test_mul_phe_raw(benchmark, data, r_scalar):
    encs = data[2]
    _mark(benchmark, MUL, "phe (_raw_mul)")
    benchmark.pedantic(lambda: [e._raw_mul(r_scalar) for e in encs], rounds=FAST_ROUNDS, iterations=1)


@pytest.mark.parametrize("processes", [1, 2])
def test_mul_ours(benchmark, keys, data, r_scalar, processes):
    pk = keys[0]
    cts = data[1]
    _mark(benchmark, MUL, "secea_fast", processes)
    out = benchmark.pedantic(lambda: pk.mul_scalar(cts, r_scalar, processes=processes),
                             rounds=FAST_ROUNDS, iterations=1)
    assert out[:2] == [pow(c, r_scalar, pk.nsquare) for c in cts[:2]]


# The protocol's use (eq. 13): 64-bit field elements times a 64-bit r plus one
# added noise term: slots of 64 + 64 + 1 bits keep every slot exact.
PACKED_SLOT = P.check_packing(64 + R_BITS + 1, 64, additions=2, scalar_bits=R_BITS)
MUL_PACKED = f"mul_scalar 64 values by one {R_BITS}-bit r (packed {PACKED_SLOT}-bit slots for secea_fast)"


def test_mul_packed_phe(benchmark, data, r_scalar):
    encs = data[2]
    _mark(benchmark, MUL_PACKED, "phe (EncryptedNumber * int)")
    benchmark.pedantic(lambda: [e * r_scalar for e in encs], rounds=FAST_ROUNDS, iterations=1)


def test_mul_packed_ours(benchmark, keys, data, r_scalar):
    pk, sk = keys[:2]
    ms = data[0]
    cts = pk.encrypt_packed(ms, PACKED_SLOT)
    _mark(benchmark, MUL_PACKED, "secea_fast", 1, ciphertexts=len(cts), slots=pk.slots(PACKED_SLOT))
    out = benchmark.pedantic(lambda: pk.mul_scalar(cts, r_scalar), rounds=FAST_ROUNDS, iterations=1)
    assert sk.decrypt_packed(out, PACKED_SLOT, len(ms)) == [m * r_scalar for m in ms]


# ---------------------------------------------------------------------------------- multi-exponentiation

MEXP = f"encrypted inner product of 64 ciphertexts with {R_BITS}-bit weights"


@pytest.fixture(scope="module")
def weights():
    return [secrets.randbits(R_BITS) for _ in range(BATCH)]


def test_multi_exp_phe(benchmark, data, weights):
    encs = data[2]

    def run():
        acc = encs[0] * weights[0]
        for e, k in zip(encs[1:], weights[1:]):
            acc = acc + e * k
        return acc

    _mark(benchmark, MEXP, "phe (sum of EncryptedNumber * int)")
    benchmark.pedantic(run, rounds=FAST_ROUNDS, iterations=1)


def test_multi_exp_ours(benchmark, keys, data, weights):
    pk, sk = keys[:2]
    ms, cts = data[:2]
    _mark(benchmark, MEXP, "secea_fast")
    out = benchmark.pedantic(lambda: pk.multi_exp(cts, weights), rounds=FAST_ROUNDS, iterations=1)
    assert sk.decrypt([out]) == [sum(k * m for k, m in zip(weights, ms)) % pk.n]


# ---------------------------------------------------------------------------------- one value per call
# A user who swaps phe for secea_fast one call at a time: each group is one
# value through each library's call for it (phe's API and raw kernel).

ONE = "one value per call: "


def test_one_encrypt_phe(benchmark, keys):
    ppk = keys[2]
    _mark(benchmark, ONE + "encrypt", "phe (raw_encrypt)", values=1)
    benchmark.pedantic(lambda: ppk.raw_encrypt(12345), rounds=FAST_ROUNDS, iterations=1)


def test_one_encrypt_ours(benchmark, keys):
    pk, sk = keys[:2]
    pk.clear_pool()
    _mark(benchmark, ONE + "encrypt", "secea_fast", values=1)
    out = benchmark.pedantic(lambda: pk.encrypt([12345]), rounds=FAST_ROUNDS, iterations=1)
    assert sk.decrypt(out) == [12345]


def test_two_encrypt_phe(benchmark, keys):
    ppk = keys[2]
    _mark(benchmark, "two values per call: encrypt", "phe (raw_encrypt)", values=2)
    benchmark.pedantic(lambda: [ppk.raw_encrypt(m) for m in (1, 2)], rounds=FAST_ROUNDS, iterations=1)


def test_two_encrypt_ours(benchmark, keys):
    pk, sk = keys[:2]
    pk.clear_pool()
    _mark(benchmark, "two values per call: encrypt", "secea_fast", values=2)
    out = benchmark.pedantic(lambda: pk.encrypt([1, 2]), rounds=FAST_ROUNDS, iterations=1)
    assert sk.decrypt(out) == [1, 2]


@pytest.mark.parametrize("api", [False, True])
def test_one_decrypt_phe(benchmark, keys, data, api):
    psk = keys[3]
    c, e = data[1][0], data[2][0]
    _mark(benchmark, ONE + "decrypt", "phe (decrypt)" if api else "phe (raw_decrypt)", values=1)
    if api:
        benchmark.pedantic(lambda: psk.decrypt(e), rounds=FAST_ROUNDS, iterations=5)
    else:
        benchmark.pedantic(lambda: psk.raw_decrypt(c), rounds=FAST_ROUNDS, iterations=5)


def test_one_decrypt_ours(benchmark, keys, data):
    sk = keys[1]
    ms, cts = data[:2]
    _mark(benchmark, ONE + "decrypt", "secea_fast", values=1, variant=backend_info()["kernels"]["bignum"])
    out = benchmark.pedantic(lambda: sk.decrypt([cts[0]]), rounds=FAST_ROUNDS, iterations=5)
    assert out == [ms[0]]


@pytest.mark.parametrize("api", [False, True])
def test_one_mul_scalar_phe(benchmark, data, r_scalar, api):
    c, e = data[1][0], data[2][0]
    _mark(benchmark, ONE + f"mul_scalar by a {R_BITS}-bit r", "phe (EncryptedNumber * int)" if api else
          "phe (_raw_mul)", values=1)
    if api:
        benchmark.pedantic(lambda: e * r_scalar, rounds=FAST_ROUNDS, iterations=50)
    else:
        benchmark.pedantic(lambda: e._raw_mul(r_scalar), rounds=FAST_ROUNDS, iterations=50)


def test_one_mul_scalar_ours(benchmark, keys, data, r_scalar):
    pk, sk = keys[:2]
    ms, cts = data[:2]
    _mark(benchmark, ONE + f"mul_scalar by a {R_BITS}-bit r", "secea_fast", values=1)
    out = benchmark.pedantic(lambda: P.mul_scalar(pk, cts[0], r_scalar), rounds=FAST_ROUNDS, iterations=50)
    assert sk.decrypt([out]) == [ms[0] * r_scalar % pk.n]


@pytest.mark.parametrize("api", [False, True])
def test_one_add_phe(benchmark, keys, data, api):
    ppk = keys[2]
    c, e = data[1][0], data[2][0]
    _mark(benchmark, ONE + "add two ciphertexts", "phe (EncryptedNumber + EncryptedNumber)" if api else
          "phe (_raw_add)", values=1)
    if api:
        benchmark.pedantic(lambda: e + e, rounds=FAST_ROUNDS, iterations=2000)
    else:
        benchmark.pedantic(lambda: e._raw_add(c, c), rounds=FAST_ROUNDS, iterations=2000)


def test_one_add_ours(benchmark, keys, data):
    pk, sk = keys[:2]
    ms, cts = data[:2]
    _mark(benchmark, ONE + "add two ciphertexts", "secea_fast", values=1)
    out = benchmark.pedantic(lambda: P.add(pk, cts[0], cts[1]), rounds=FAST_ROUNDS, iterations=2000)
    assert sk.decrypt([out]) == [(ms[0] + ms[1]) % pk.n]


# ---------------------------------------------------------------------------------- key generation


def test_keygen_phe(benchmark):
    _mark(benchmark, "keygen", "phe", values=1)
    benchmark.pedantic(lambda: phe.generate_paillier_keypair(n_length=BITS), rounds=8, iterations=1)


def test_keygen_ours(benchmark):
    _mark(benchmark, "keygen", "secea_fast", values=1)
    benchmark.pedantic(lambda: P.keygen(BITS), rounds=8, iterations=1)
