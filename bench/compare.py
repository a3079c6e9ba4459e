"""Side-by-side comparison for the ratios quoted in docs/PERFORMANCE.md: ours and
the peer doing the same work on the same input in the same process, alternating,
median of several runs.

    python bench/compare.py            # both targets: matmul and AES
    python bench/compare.py matmul     # one of: matmul, aes
"""
import os
import statistics
import sys
import time

import numpy as np

import secea_fast
from secea_fast import linalg, prg


def alternate(fns, rounds):
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def matmul(rounds=5):
    import flint
    rng = np.random.default_rng(1)
    m, k, n = 1024, 10000, 65
    for pname, p in (("Goldilocks", secea_fast.GOLDILOCKS), ("embedding prime", secea_fast.EMBEDDING_PRIME)):
        A = rng.integers(0, p, (m, k), dtype=np.uint64)
        B = rng.integers(0, p, (k, n), dtype=np.uint64)
        FA, FB = flint.nmod_mat(A.tolist(), p), flint.nmod_mat(B.tolist(), p)
        C = linalg.matmul(A, B, p, threads=1)
        assert C.tolist() == (FA * FB).tolist(), "results differ from python-flint"
        med = alternate({"ours 1t": lambda: linalg.matmul(A, B, p, threads=1),
                         "ours 2t": lambda: linalg.matmul(A, B, p, threads=2),
                         "flint": lambda: FA * FB}, rounds)
        macs = m * k * n
        print(f"matmul {m}x{k} by {k}x{n} mod {pname} (median of {rounds}, alternating):")
        for name, t in med.items():
            print(f"  {name:8s} {t * 1e3:8.1f} ms  {macs / t / 1e9:6.2f} G multiply-adds/s")
        print(f"  ratio ours(1 thread)/flint: {med['flint'] / med['ours 1t']:.2f}x; "
              f"2 threads / 1 thread: {med['ours 1t'] / med['ours 2t']:.2f}x")


def aes(rounds=21):
    """AES-128-CTR, one thread, the same work on both sides (see bench/test_aes.py):
    keystream written into a preallocated buffer (OpenSSL: encrypting zeros read from the
    zero page, so neither side reads memory), and random data encrypted into a
    preallocated buffer (both read the data and write the output; ours with default and
    with non-temporal stores)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from conftest import zero_page
    for size in (1 << 20, 1 << 26):
        out = np.empty(size, dtype=np.uint8)
        out[:] = 1
        zeros = zero_page(size)
        data = np.frombuffer(os.urandom(size), dtype=np.uint8).copy()
        out64, data64 = out.view(np.uint64), data.view(np.uint64)
        key, iv = os.urandom(16), os.urandom(16)
        enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        check = np.empty(size, dtype=np.uint8)
        Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor().update_into(zeros, check)
        prg.aes128_ctr_into(key, iv, out)
        assert np.array_equal(out, check), "keystream differs from OpenSSL's"
        g = prg.Prg(os.urandom(32), "bench/compare")
        med = alternate({"ours keystream": lambda: prg.aes128_ctr_into(key, iv, out),
                         "openssl keystream": lambda: enc.update_into(zeros, out),
                         "ours encrypt": lambda: g.xor_into(out64, data64),
                         "ours encrypt stream": lambda: g.xor_into(out64, data64, stream=True),
                         "openssl encrypt": lambda: enc.update_into(data, out)}, rounds)
        gbs = {name: size / t / 1e9 for name, t in med.items()}
        print(f"AES-128-CTR {size >> 20} MiB, one thread (median of {rounds}, alternating):")
        print(f"  keystream into a preallocated buffer (write only; OpenSSL encrypts zero-page zeros): "
              f"ours {gbs['ours keystream']:.2f} GB/s, OpenSSL {gbs['openssl keystream']:.2f} GB/s, "
              f"ratio {med['openssl keystream'] / med['ours keystream']:.2f}x")
        print(f"  encrypt data into a preallocated buffer (read + write): "
              f"ours {gbs['ours encrypt']:.2f} GB/s (stream=True {gbs['ours encrypt stream']:.2f}), "
              f"OpenSSL {gbs['openssl encrypt']:.2f} GB/s, "
              f"ratio {med['openssl encrypt'] / med['ours encrypt']:.2f}x "
              f"(stream=True {med['openssl encrypt'] / med['ours encrypt stream']:.2f}x)")


if __name__ == "__main__":
    which = sys.argv[1:] or ["matmul", "aes"]
    print(f"backend: {secea_fast.backend_info()['kernels']}; load average: {os.getloadavg()}")
    for w in which:
        {"matmul": matmul, "aes": aes}[w]()
