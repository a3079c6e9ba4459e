import os
import platform
import subprocess
import sys

import pytest

import secea_fast
from secea_fast import _native


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
        assert info["kernels"]["aes"] == "aesni"
    if cpu["avx512ifma"]:
        assert info["kernels"]["matmul"] == "ifma"
    with pytest.raises(ValueError):
        secea_fast.set_backend("turbo")
    with pytest.raises(TypeError):
        secea_fast.set_backend(1)


def _run(code, **env):
    e = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True)


def test_env_forces_portable_path():
    r = _run("import secea_fast, json; print(json.dumps(secea_fast.backend_info()))",
             SECEA_FAST_BACKEND="portable", SECEA_FAST_NUM_THREADS="3")
    assert r.returncode == 0, r.stderr
    assert '"aes": "portable"' in r.stdout and '"matmul": "portable"' in r.stdout
    assert '"threads": 3' in r.stdout


def test_import_tunes_malloc_unless_told_not_to():
    """import secea_fast sets glibc's thresholds (mallopt succeeded: True);
    SECEA_FAST_MALLOC=default leaves glibc's adaptive ones (never called:
    None), also when an executor runs shards; other values are refused."""
    code = "import secea_fast, secea_fast._memory as m; print(m._MALLOC_TUNED)"
    r = _run(code, SECEA_FAST_MALLOC="")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("True", "False")      # tried (False: mallopt refused)
    if platform.libc_ver()[0] == "glibc" and not os.environ.get("LD_PRELOAD"):
        assert r.stdout.strip() == "True"             # (a preloaded allocator, e.g. ASan's, refuses)
    code = ("import secea_fast, secea_fast._memory as m\n"
            "from secea_fast.executor import LocalExecutor\n"
            "LocalExecutor(1).map(lambda s, j: j, [1, 2], None, lambda r: None)\n"
            "print(m._MALLOC_TUNED)")
    r = _run(code, SECEA_FAST_MALLOC="default")
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stderr
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
