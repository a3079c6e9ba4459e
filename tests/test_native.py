import json
import os
import platform
import subprocess
import sys

import pytest

import secea_fast
from secea_fast import _native

# 64-bit ARM: the AES and DPF kernels' hardware variant is "armce" (ARMv8 Crypto Extensions)
AES_HW = "armce" if platform.machine().lower() in ("aarch64", "arm64") else "aesni"


def test_backend_info_and_switch():
    info = secea_fast.backend_info()
    assert set(info["kernels"]) == {"aes", "bignum", "dpf", "field", "matmul", "ntt"}
    secea_fast.set_backend("portable")
    try:
        assert set(secea_fast.backend_info()["kernels"].values()) == {"portable"}
    finally:
        secea_fast.set_backend("auto")
    cpu = info["cpu"]
    if cpu["vaes"]:
        assert info["kernels"]["aes"] == "vaes"
    elif cpu["aes"]:
        assert info["kernels"]["aes"] == AES_HW
    if cpu["avx512ifma"]:
        assert info["kernels"]["matmul"] == "ifma"
    with pytest.raises(ValueError):
        secea_fast.set_backend("turbo")
    with pytest.raises(TypeError):
        secea_fast.set_backend(1)



def test_backend_matrix_leaves_out_only_a_repeat():
    """tests/conftest.py runs a kernel module's tests on "avx2" only where
    that differs from "auto" for the module's kernel families: where it
    leaves it out, both select the same kernels for those families, and every
    family is some module's."""
    from conftest import MODULE_FAMILIES, backend_kernels, kernel_backends
    chosen = backend_kernels()
    assert set().union(*MODULE_FAMILIES.values()) == set(chosen["auto"])
    for module, families in MODULE_FAMILIES.items():
        kept = kernel_backends(module)
        assert kept[:2] == ["auto", "portable"]
        if "avx2" not in kept:
            assert all(chosen["avx2"][f] == chosen["auto"][f] for f in families), module
    assert chosen["portable"] != chosen["auto"] or not secea_fast.backend_info()["cpu"]["aes"]


def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True)


def test_env_caps_at_avx2():
    """SECEA_FAST_BACKEND=avx2: no kernel runs a VAES or AVX-512 variant,
    whatever the CPU has; on a CPU with AVX2 and AES-NI, those run."""
    r = _run("import secea_fast, json; print(json.dumps(secea_fast.backend_info()))",
             SECEA_FAST_BACKEND="avx2")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["backend"] == "avx2"
    k = info["kernels"]
    assert not any(v in ("vaes", "vaes256", "ifma", "avx512", "avx512ifma") for v in k.values()), k
    if info["cpu"]["avx2"] and info["cpu"]["bmi2"]:
        assert k["field"] == "avx2"
    assert k["matmul"] == "portable"       # the scalar kernel: mulx was no faster
    if info["cpu"]["aes"]:
        assert k["aes"] == AES_HW and k["dpf"] == AES_HW
    assert k["ntt"] == "portable" and k["bignum"] == "portable"


def test_env_forces_portable_path():
    r = _run("import secea_fast, json; print(json.dumps(secea_fast.backend_info()))",
             SECEA_FAST_BACKEND="portable", SECEA_FAST_NUM_THREADS="3")
    assert r.returncode == 0, r.stderr
    assert '"aes": "portable"' in r.stdout and '"matmul": "portable"' in r.stdout
    assert '"threads": 3' in r.stdout


def test_malloc_tuning_is_an_explicit_call():
    """import secea_fast leaves glibc's malloc settings alone (never called:
    None), also when the inline executor runs shards in the caller's
    process; secea_fast.tune_memory() sets them (True); the fork workers set
    their own and leave the caller's; SECEA_FAST_MALLOC=default turns both
    off; other values are refused at import."""
    glibc = platform.libc_ver()[0] == "glibc" and not os.environ.get("LD_PRELOAD")
    code = ("import secea_fast, secea_fast._memory as m\n"
            "from secea_fast.executor import LocalExecutor\n"
            "LocalExecutor(1).map(lambda s, j: j, [1, 2], None, lambda r: None)\n"
            "print(m._MALLOC_TUNED)\n"
            "out = []\n"
            "LocalExecutor(2).map(lambda s, j: m._MALLOC_TUNED, [1, 2, 3], None, out.append)\n"
            "print(sorted(set(map(str, out))), m._MALLOC_TUNED)\n"
            "print(secea_fast.tune_memory(), m._MALLOC_TUNED)")
    r = _run(code, SECEA_FAST_MALLOC="")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    assert lines[0] == "None"
    if glibc:                                          # (a preloaded allocator, e.g. ASan's, refuses)
        assert lines[1] == "['True'] None" and lines[2] == "True True", r.stdout
    r = _run(code, SECEA_FAST_MALLOC="default")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["None", "['None'] None", "False None"], r.stdout
    r = _run("import secea_fast", SECEA_FAST_MALLOC="off")
    assert r.returncode != 0 and "SECEA_FAST_MALLOC" in r.stderr


def test_env_bad_values_raise_clearly():
    r = _run("import secea_fast", SECEA_FAST_BACKEND="fastest")
    assert r.returncode != 0 and "SECEA_FAST_BACKEND" in r.stderr
    r = _run("import secea_fast; secea_fast.backend_info()", SECEA_FAST_NUM_THREADS="zero")
    assert r.returncode != 0 and "SECEA_FAST_NUM_THREADS" in r.stderr


def test_resolve_threads():
    assert _native.resolve_threads(None) >= 1
    assert _native.resolve_threads(2) == 2
    with pytest.raises(ValueError):
        _native.resolve_threads(65)


def test_header_constants_reach_python_through_cffi():
    """Every integer constant of the C header (``#define SECEA_X 123``) is
    declared to cffi by the build script, which checks it against the
    compiled header, so Python reads ``lib.SECEA_X`` instead of re-typing it."""
    import re
    from pathlib import Path
    header = Path(__file__).resolve().parents[1] / "csrc" / "include" / "secea.h"
    if not header.is_file():
        pytest.skip("needs the source tree's csrc/")
    consts = dict(re.findall(r"^\s*#define\s+(SECEA_\w+)\s+(\d+)\s*$", header.read_text(), flags=re.M))
    assert consts, "the header declares no integer constant"
    for name, value in consts.items():
        assert getattr(_native.lib, name) == int(value), name


def test_status_codes_are_one_enum_mapped_in_one_place():
    """``enum secea_status`` reaches Python through cffi, and
    ``_native.check_status`` is the one mapping of a code to an exception."""
    lib = _native.lib
    assert (lib.SECEA_OK, lib.SECEA_ENOMEM, lib.SECEA_EINVAL, lib.SECEA_EINTERNAL) == (0, -1, -2, -3)
    _native.check_status(lib.SECEA_OK, "op")
    with pytest.raises(MemoryError, match="op: could not allocate"):
        _native.check_status(lib.SECEA_ENOMEM, "op")
    with pytest.raises(ValueError, match="op: skip must be 0 or 8"):
        _native.check_status(lib.SECEA_EINVAL, "op", "skip must be 0 or 8")
    for code in (lib.SECEA_EINTERNAL, 1, -7):
        with pytest.raises(RuntimeError, match=f"status {code}"):
            _native.check_status(code, "op")


def test_kernel_status_reaches_the_caller_as_value_error():
    """A kernel's SECEA_EINVAL (the fused-decryption product's stream skip)
    comes back as a ValueError naming the argument, not a MemoryError."""
    import numpy as np
    from secea_fast import linalg
    B = linalg.PackedRight(np.ones((3, 2), dtype=np.uint64), 101)
    A = np.zeros((2, 3), dtype=np.uint64)
    C = np.zeros((2, 2), dtype=np.uint64)
    rc = _native.lib.secea_fp_mat_mul_packed_xor(_native.u64ptr(C), _native.u64ptr(A), B.handle, 2, 1,
                                                 bytes(16), 0, 3)
    with pytest.raises(ValueError, match="skip"):
        B._status(rc, 2)


def test_cpu_is_probed_in_one_place_and_families_read_flags():
    """Only csrc/common/dispatch.c asks the CPU (so every probe goes through
    the ceiling), and no kernel compares another family's variant name."""
    from pathlib import Path
    csrc = Path(__file__).resolve().parents[1] / "csrc"
    if not csrc.is_dir():
        pytest.skip("needs the source tree's csrc/")
    probing, by_name = [], []
    for f in sorted(csrc.rglob("*.[ch]")):
        text = f.read_text()
        rel = f.relative_to(csrc).as_posix()
        if rel != "common/dispatch.c" and ("__builtin_cpu_supports" in text or "getauxval" in text):
            probing.append(rel)
        if f.suffix == ".c" and rel != "common/dispatch.c" and "secea_kernel_variant(" in text:
            by_name.append(rel)
    assert not probing, f"CPU probed outside dispatch.c: {probing}"
    assert not by_name, f"variant names compared outside backend_info: {by_name}"
