"""AES-128-CTR: secea_fast vs OpenSSL through `cryptography`, one thread, the same
work on both sides in every group (group and test names say which work):

* ``aes128-ctr keystream N B``: the keystream written into a preallocated
  buffer.  Ours: ``prg.aes128_ctr_into``.  OpenSSL has no keystream call: it
  encrypts a buffer of zeros that is a read-only mapping of the kernel's zero
  page (``conftest.zero_page``), so it reads no memory either; both write N
  bytes.
* ``aes128-ctr encrypt N B``: N bytes of random data encrypted into a
  preallocated buffer, both reading the data and writing the output.  Ours:
  ``Prg.xor_into`` (the CTR keystream XORed into the data in one pass),
  default stores; ``..., ours stream=True``: the same with non-temporal stores
  (``Prg.xor_into(..., stream=True)``, for outputs larger than the caches),
  with its own OpenSSL run.  OpenSSL: ``encryptor().update_into(data, out)``.
  Key setup is outside the timing on both sides.
* ``aes128-ctr bytes N B``: the one-shot call returning the keystream as a new
  bytearray (a bytes object until 2026-11-27), ``prg.aes128_ctr(key, iv, n)`` against
  ``Cipher(AES(key), CTR(iv)).encryptor().update(zeros)`` with the zeros from
  the zero page: key schedule, allocation and page faults on both sides, for
  16 B, 4 KiB, 1 MiB and 64 MiB.

Targets (the project's): keystream >= 3x OpenSSL, one thread; the bytes call at
least as fast as OpenSSL at every size.

Until 2026-11-24 OpenSSL's side of the keystream groups encrypted an ordinary
buffer of zeros (one read more than ours) and there was no encrypt group:
measured ratios are in docs/PERFORMANCE.md, "AES-128-CTR".
"""
import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from secea_fast import prg

from conftest import zero_page

SIZES = [1 << 14, 1 << 20, 1 << 26]
OURS = "secea_fast"
OPENSSL = "openssl (cryptography)"


@pytest.fixture(scope="module")
def bufs():
    """Per size: a preallocated output (pages touched), random data, zeros on the zero page."""
    out = {}
    for n in SIZES:
        o = np.empty(n, dtype=np.uint8)
        o[:] = 1
        out[n] = (o, np.frombuffer(os.urandom(n), dtype=np.uint8).copy(), zero_page(n))
    return out


def _openssl(key=None, iv=None):
    return Cipher(algorithms.AES(key or os.urandom(16)), modes.CTR(iv or os.urandom(16))).encryptor()


# ---- keystream into a preallocated buffer: write N bytes, read nothing
@pytest.mark.parametrize("nbytes", SIZES)
def test_keystream_ours(benchmark, bufs, nbytes):
    out = bufs[nbytes][0]
    key, iv = os.urandom(16), os.urandom(16)
    benchmark.group = f"aes128-ctr keystream {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl=OURS, threads=1, api="prg.aes128_ctr_into")
    benchmark(prg.aes128_ctr_into, key, iv, out)


@pytest.mark.parametrize("nbytes", SIZES)
def test_keystream_openssl_zero_page(benchmark, bufs, nbytes):
    out, _, zeros = bufs[nbytes]
    key, iv = os.urandom(16), os.urandom(16)
    enc = _openssl(key, iv)
    enc.update_into(zeros[:16], out[:16])               # the same stream as ours, checked once
    assert bytes(out[:16]) == prg.aes128_ctr(key, iv, 16)
    benchmark.group = f"aes128-ctr keystream {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl=OPENSSL, threads=1,
                                api="encryptor().update_into(zero page, out)")
    benchmark(enc.update_into, zeros, out)


# ---- encrypt N bytes of data into a preallocated buffer: read N, write N
def _encrypt_group(nbytes, stream):
    return f"aes128-ctr encrypt {nbytes} B" + (", ours stream=True" if stream else "")


@pytest.mark.parametrize("stream", [False, True], ids=["default", "stream"])
@pytest.mark.parametrize("nbytes", SIZES)
def test_encrypt_ours(benchmark, bufs, nbytes, stream):
    out, data, _ = bufs[nbytes]
    out64, data64 = out.view(np.uint64), data.view(np.uint64)
    g = prg.Prg(os.urandom(32), "bench/aes-encrypt")
    benchmark.group = _encrypt_group(nbytes, stream)
    benchmark.extra_info.update(bytes=nbytes, impl=OURS, threads=1,
                                api=f"Prg.xor_into(out, data, stream={stream})")
    benchmark(lambda: g.xor_into(out64, data64, stream=stream))


@pytest.mark.parametrize("stream", [False, True], ids=["default", "stream"])
@pytest.mark.parametrize("nbytes", SIZES)
def test_encrypt_openssl(benchmark, bufs, nbytes, stream):
    out, data, _ = bufs[nbytes]
    enc = _openssl()
    benchmark.group = _encrypt_group(nbytes, stream)
    benchmark.extra_info.update(bytes=nbytes, impl=OPENSSL, threads=1,
                                api="encryptor().update_into(data, out)")
    benchmark(enc.update_into, data, out)


# ---- the bytes-returning call, side by side
ONESHOT_SIZES = [16, 1 << 12, 1 << 20, 1 << 26]


@pytest.mark.parametrize("nbytes", ONESHOT_SIZES)
def test_keystream_bytes_ours(benchmark, nbytes):
    key, iv = os.urandom(16), os.urandom(16)
    benchmark.group = f"aes128-ctr bytes {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl=OURS, threads=1, api="prg.aes128_ctr")
    out = benchmark(prg.aes128_ctr, key, iv, nbytes)
    assert type(out) is bytearray and len(out) == nbytes


@pytest.mark.parametrize("nbytes", ONESHOT_SIZES)
def test_keystream_bytes_openssl_zero_page(benchmark, nbytes):
    key, iv = os.urandom(16), os.urandom(16)
    zeros = zero_page(nbytes)
    benchmark.group = f"aes128-ctr bytes {nbytes} B"
    benchmark.extra_info.update(bytes=nbytes, impl=OPENSSL, threads=1,
                                api="Cipher(...).encryptor().update(zero page)")
    out = benchmark(lambda: _openssl(key, iv).update(zeros))
    assert len(out) == nbytes and out[:16] == prg.aes128_ctr(key, iv, min(16, nbytes))


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
    benchmark.extra_info.update(impl=OURS, threads=1, api="Prg.xor_into")
    benchmark(lambda: prg.Prg(bytes(32), "bench").xor_into(out, message))


def test_pad_xor_openssl(benchmark, message):
    src = message.view(np.uint8)
    out = np.empty_like(src)
    benchmark.group = "relay pad: XOR 2^20 words"
    benchmark.extra_info.update(impl=OPENSSL, threads=1, api="encryptor().update_into(message, out)")
    benchmark(lambda: Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor()
              .update_into(src, out))


def test_field_sample_ours(benchmark):
    out = np.empty(WORDS, dtype=np.uint64)
    benchmark.group = "uniform field elements: 2^20 mod 63*2^44+1"
    benchmark.extra_info.update(impl=OURS, threads=1, api="Prg.field_into")
    benchmark(lambda: prg.Prg(bytes(32), "bench").field_into(out, P_EMB))


def test_field_sample_openssl_numpy(benchmark):
    zeros = zero_page(8 * (WORDS + WORDS // 32 + 64))     # a keystream write, as ours
    ks = np.empty_like(zeros)
    mask = np.uint64((1 << 50) - 1)

    def draw():
        Cipher(algorithms.AES(bytes(16)), modes.CTR(bytes(16))).encryptor().update_into(zeros, ks)
        w = ks.view("<u8") & mask
        return w[w < np.uint64(P_EMB)][:WORDS]

    benchmark.group = "uniform field elements: 2^20 mod 63*2^44+1"
    benchmark.extra_info.update(impl="openssl keystream (zero page) + NumPy rejection", threads=1)
    benchmark(draw)
