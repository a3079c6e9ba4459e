"""AES-128-CTR bulk keystream: secea_fast vs OpenSSL through `cryptography`,
both writing into a preallocated buffer (no allocation, no page faults).

Target: >= 3x OpenSSL, one thread.

Also the bytes-returning one-shot call ``prg.aes128_ctr(key, iv, n)`` against
its OpenSSL equivalent, ``Cipher(AES(key), CTR(iv)).encryptor().update(zeros)``
(key schedule included on both sides, the zeros preallocated), for 16 B,
4 KiB, 1 MiB and 64 MiB: both allocate their result, so this includes page
faults (target: at least as fast as OpenSSL at every size).
"""
import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from secea_fast import prg

SIZES = [1 << 14, 1 << 20, 1 << 26]


@pytest.fixture(scope="module")
def bufs():
    return {n: (np.empty(n, dtype=np.uint8), np.zeros(n, dtype=np.uint8)) for n in SIZES}


@pytest.mark.parametrize("nbytes", SIZES)
def test_ctr_ours(benchmark, bufs, nbytes):
    out, _ = bufs[nbytes]
    key, iv = os.urandom(16), os.urandom(16)
    benchmark.group = f"aes128-ctr {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl="secea_fast")
    benchmark(prg.aes128_ctr_into, key, iv, out)


@pytest.mark.parametrize("nbytes", SIZES)
def test_ctr_openssl(benchmark, bufs, nbytes):
    out, zeros = bufs[nbytes]
    key, iv = os.urandom(16), os.urandom(16)
    enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
    benchmark.group = f"aes128-ctr {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl="openssl (cryptography)")
    benchmark(enc.update_into, zeros, out)


# ---- the bytes-returning call, side by side
ONESHOT_SIZES = [16, 1 << 12, 1 << 20, 1 << 26]


@pytest.mark.parametrize("nbytes", ONESHOT_SIZES)
def test_ctr_bytes_ours(benchmark, nbytes):
    key, iv = os.urandom(16), os.urandom(16)
    benchmark.group = f"aes128-ctr bytes {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl="secea_fast prg.aes128_ctr")
    out = benchmark(prg.aes128_ctr, key, iv, nbytes)
    assert type(out) is bytes and len(out) == nbytes


@pytest.mark.parametrize("nbytes", ONESHOT_SIZES)
def test_ctr_bytes_openssl(benchmark, nbytes):
    key, iv = os.urandom(16), os.urandom(16)
    zeros = bytes(nbytes)
    benchmark.group = f"aes128-ctr bytes {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl="openssl (cryptography) encryptor().update(zeros)")
    out = benchmark(lambda: Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update(zeros))
    assert len(out) == nbytes


# ---- protocol uses of the keystream (SecEA relay pads and field sampling) --
# Peer: the same job done with OpenSSL's AES-CTR through `cryptography` plus
# NumPy, in the same run: XOR-encrypting a message of 2^20 field elements, and
# drawing 2^20 uniform elements of the embedding prime by rejection.
P_EMB = 63 * 2**44 + 1
WORDS = 1 << 20


@pytest.fixture(scope="module")
def message():
    return prg.uniform(WORDS, P_EMB)


def test_pad_xor_ours(benchmark, message):
    out = np.empty_like(message)
    benchmark.group = "relay pad: XOR 2^20 words"
    benchmark.extra_info.update(impl="secea_fast Prg.xor_into")
    benchmark(lambda: prg.Prg(bytes(32), "bench").xor_into(out, message))


def test_pad_xor_openssl(benchmark, message):
    src = message.view(np.uint8)
    out = np.empty_like(src)
    benchmark.group = "relay pad: XOR 2^20 words"
    benchmark.extra_info.update(impl="openssl AES-CTR encrypt (cryptography)")
    benchmark(lambda: Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor()
              .update_into(src, out))


def test_field_sample_ours(benchmark):
    out = np.empty(WORDS, dtype=np.uint64)
    benchmark.group = "uniform field elements: 2^20 mod 63*2^44+1"
    benchmark.extra_info.update(impl="secea_fast Prg.field_into")
    benchmark(lambda: prg.Prg(bytes(32), "bench").field_into(out, P_EMB))


def test_field_sample_openssl_numpy(benchmark):
    zeros = np.zeros(8 * (WORDS + WORDS // 32 + 64), dtype=np.uint8)
    ks = np.empty_like(zeros)
    mask = np.uint64((1 << 50) - 1)

    def draw():
        Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor().update_into(zeros, ks)
        w = ks.view("<u8") & mask
        return w[w < np.uint64(P_EMB)][:WORDS]

    benchmark.group = "uniform field elements: 2^20 mod 63*2^44+1"
    benchmark.extra_info.update(impl="openssl keystream + NumPy rejection")
    benchmark(draw)
