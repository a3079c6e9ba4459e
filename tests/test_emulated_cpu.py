"""The package on an emulated AVX2-only CPU (qemu-user, ``-cpu Haswell``):
the real run-time dispatch picks the AES-NI / AVX2 variants, and they agree
with OpenSSL and with Python integers there.  On an emulated CPU without
AES-NI (``-cpu Nehalem``: SSE4.2, no AES, no AVX) the dispatch falls back to
the portable C by itself, not because a setting forced it.  ``SECEA_FAST_BACKEND=avx2``
reaches the same variants on any x86 (tests/test_native.py); this checks
that it is what an actual AVX2-only CPU gets.  Needs ``qemu-x86_64``
(Debian's qemu-user, which .ci/run installs)."""
import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

QEMU = shutil.which("qemu-x86_64")
pytestmark = [
    pytest.mark.slow,     # two qemu runs of the package (about 7 s); .ci/run runs them
    pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86-64 hosts only"),
    pytest.mark.skipif(QEMU is None, reason="qemu-x86_64 is not installed (apt-get install qemu-user)"),
]

CODE = r"""
import json, os, secrets
import numpy as np
import secea_fast as sf
from secea_fast import dpf, field, linalg, prg
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
out = {"kernels": sf.backend_info()["kernels"], "cpu": sf.backend_info()["cpu"]}
key, iv = secrets.token_bytes(16), secrets.token_bytes(16)
enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
out["aes_ok"] = bytes(prg.aes128_ctr(key, iv, 4096)) == enc.update(bytes(4096)) + enc.finalize()
rng = np.random.default_rng(1)
ok = True
for p in (sf.GOLDILOCKS, sf.EMBEDDING_PRIME):
    a = rng.integers(0, p, 2000, dtype=np.uint64); b = rng.integers(0, p, 2000, dtype=np.uint64)
    ok &= [int(x) for x in field.mul(a, b, p)] == [int(x) * int(y) % p for x, y in zip(a, b)]
    A = rng.integers(0, p, (5, 40), dtype=np.uint64); B = rng.integers(0, p, (40, 3), dtype=np.uint64)
    C = linalg.matmul(A, B, p)
    ok &= all(int(C[i, j]) == sum(int(A[i, k]) * int(B[k, j]) for k in range(40)) % p
              for i in range(5) for j in range(3))
out["field_matmul_ok"] = bool(ok)
k0, k1 = dpf.gen(77, 5, 10)
full = (dpf.eval_full(k0).astype(object) + dpf.eval_full(k1).astype(object)) % 2**64
out["dpf_ok"] = [int(x) for x in full] == [5 if i == 77 else 0 for i in range(1024)]
print(json.dumps(out))
"""


def _emulated(cpu: str) -> dict:
    env = dict(os.environ)
    env.pop("SECEA_FAST_BACKEND", None)
    # this environment's interpreter, emulated: its venv and the installed package as here
    r = subprocess.run([QEMU, "-cpu", cpu, sys.executable, "-c", CODE],
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_cpu_without_aesni_falls_back_to_the_portable_kernels():
    out = _emulated("Nehalem")
    assert not any(out["cpu"].values()), out["cpu"]
    assert set(out["kernels"].values()) == {"portable"}, out["kernels"]
    assert out["aes_ok"] and out["field_matmul_ok"] and out["dpf_ok"], out


def test_avx2_only_cpu_runs_the_aesni_and_avx2_kernels():
    out = _emulated("Haswell")
    assert out["cpu"]["avx2"] and out["cpu"]["aes"] and not out["cpu"]["avx512f"] and not out["cpu"]["vaes"]
    assert out["kernels"] == {"aes": "aesni", "bignum": "portable", "dpf": "aesni", "field": "avx2",
                              "matmul": "portable", "ntt": "portable"}
    assert out["aes_ok"] and out["field_matmul_ok"] and out["dpf_ok"], out
