"""Managed field calls against the raw C call they wrap, side by side.

Target: ``field.add`` within 1.5x of the bare C call (``np.empty`` for the
result, three ``ffi.from_buffer`` and ``lib.secea_fp_add``) on 16 entries and
within 1.1x on 2^20.  The managed call validates the modulus (a set lookup
once a prime was accepted) and the operands (type, dtype, shape, and the
range inside the C loop that adds); ``field.raw.add`` skips all of it.  Group =
operation + size, so each group holds the three side by side.

    python -m pytest bench/test_field.py --benchmark-only --benchmark-timer=time.thread_time

(thread CPU time: on a loaded machine the wall clock mostly measures the
scheduler).
"""
import numpy as np
import pytest

import secea_fast
from secea_fast import field
from secea_fast._native import lib, u64ptr
from secea_fast.field import raw

from conftest import uniform

P = secea_fast.GOLDILOCKS
SIZES = {"16": 16, "2^20": 1 << 20}
OPS = {
    "add": (field.add, raw.add, lib.secea_fp_add),
    "mul": (field.mul, raw.mul, lib.secea_fp_mul),
}


def _bare(kernel):
    def call(a, b, p):
        out = np.empty(a.shape, dtype=np.uint64)
        kernel(u64ptr(out), u64ptr(a), u64ptr(b), a.size, p)
        return out
    return call


@pytest.fixture(scope="module")
def operands(rng):
    return {k: (uniform(rng, P, n), uniform(rng, P, n)) for k, n in SIZES.items()}


@pytest.mark.parametrize("impl", ["secea_fast", "field.raw", "raw C call"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("op", list(OPS))
def test_field_managed_vs_raw(benchmark, operands, op, size, impl):
    managed, raw_fn, kernel = OPS[op]
    fn = {"secea_fast": managed, "field.raw": raw_fn, "raw C call": _bare(kernel)}[impl]
    a, b = operands[size]
    benchmark.group = f"field.{op} {size} entries, Goldilocks"
    benchmark.extra_info.update(impl=impl, kernel=f"field.{op}", n=SIZES[size])
    out = benchmark(fn, a, b, P)
    assert out.tolist() == managed(a, b, P).tolist()
