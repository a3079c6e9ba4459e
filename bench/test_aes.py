"""AES-128-CTR bulk keystream: secea_fast vs OpenSSL through `cryptography`,
both writing into a preallocated buffer (no allocation, no page faults).

Target (issue 2): >= 3x OpenSSL, one thread.
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
