"""set_backend while kernels run in other threads.

cffi releases the GIL around every C call, so a kernel can be running while
another thread calls ``set_backend`` (or picks an AES or DPF variant by
name).  The dispatch publishes each choice as one immutable table with a
single atomic store (csrc/common/internal.h, "run-time CPU dispatch"), and a
kernel reads that table once per call: every result must stay exact whatever
the interleaving.
"""
import threading
import time

import numpy as np

import secea_fast
from secea_fast import dpf, field, linalg, poly, prg
from secea_fast._native import ffi, lib

P = (1 << 61) - 1                      # generic prime: the Moller-Granlund paths
GL = 0xFFFFFFFF00000001                # Goldilocks: its own reductions and the NTT stages
DURATION = 1.5                         # seconds of flipping


def _workloads():
    """(name, run) pairs: each run() recomputes a kernel result; expected is taken once."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, P, 4096, dtype=np.uint64)
    b = rng.integers(0, P, 4096, dtype=np.uint64)
    ga = rng.integers(0, GL, 4096, dtype=np.uint64)
    gb = rng.integers(0, GL, 4096, dtype=np.uint64)
    A = rng.integers(0, P, (24, 40), dtype=np.uint64)
    B = rng.integers(0, P, (40, 16), dtype=np.uint64)
    f = rng.integers(0, GL, 300, dtype=np.uint64)
    g = rng.integers(0, GL, 300, dtype=np.uint64)
    key, iv = bytes(range(16)), bytes(range(16, 32))
    k0, k1 = dpf.gen(5, 9, 10)
    return [
        ("field.add", lambda: field.add(a, b, P)),
        ("field.mul", lambda: field.mul(a, b, P)),
        ("field.mul gl", lambda: field.mul(ga, gb, GL)),
        ("field.mul_scalar", lambda: field.mul(a, 12345, P)),
        ("matmul", lambda: linalg.matmul(A, B, P)),
        ("poly.mul ntt", lambda: poly.mul(f, g, GL)),
        ("aes ctr", lambda: np.frombuffer(prg.aes128_ctr(key, iv, 4099), dtype=np.uint8)),
        ("prg field", lambda: prg.Prg(key * 2, "threads").field(2000, P)),
        ("dpf eval_full", lambda: dpf.eval_full(k0) + dpf.eval_full(k1)),
    ]


def _flipper(stop: threading.Event, flips: list) -> None:
    names = ["auto", "portable", "avx2"]
    i = 0
    while not stop.is_set():
        secea_fast.set_backend(names[i % 3])
        lib.secea_dpf_select_variant(b"portable" if i % 2 else b"aesni")   # unknown names: no-op
        lib.secea_dpf_select_variant(b"armce")
        lib.secea_dispatch_init(i % 3)
        i += 1
        flips.append(i)


def test_set_backend_while_kernels_run_keeps_results_exact():
    before = secea_fast.get_backend()
    work = _workloads()
    expected = [np.array(run()) for _, run in work]
    stop = threading.Event()
    flips: list = []
    errors: list = []
    runs = [0] * 3

    def worker(t: int) -> None:
        i = t
        try:
            while not stop.is_set():
                name, run = work[i % len(work)]
                got = np.array(run())
                if not np.array_equal(got, expected[i % len(work)]):
                    errors.append(name)
                runs[t] += 1
                i += 1
        except Exception as exc:                      # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(3)]
    flip = threading.Thread(target=_flipper, args=(stop, flips))
    try:
        for t in threads:
            t.start()
        flip.start()
        time.sleep(DURATION)
    finally:
        stop.set()
        for t in threads:
            t.join()
        flip.join()
        secea_fast.set_backend(before)
    assert not errors, errors[:5]
    assert len(flips) > 50 and min(runs) > 10, (len(flips), runs)
    # the variants really changed under the workers
    assert secea_fast.backend_info()["kernels"]["dpf"] != "unknown"
    assert ffi.string(lib.secea_kernel_variant(b"field")) != b""
