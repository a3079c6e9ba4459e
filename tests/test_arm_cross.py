"""The C kernels on 64-bit ARM under emulation: runs ``.ci/arm-check``, which
cross-compiles tests/c/arm_check.c with every csrc/ source for aarch64 and
runs it under qemu-aarch64 (Crypto Extensions present: the "armce" AES and
DPF variants must be chosen and agree with the portable twins and the known
answers; once more built with AddressSanitizer and UBSan; and with
SECEA_FAST_BACKEND=portable), then builds and runs the same driver natively.
About a minute (three full C builds), so slow; CI runs the script as its own
step.  Never installs anything: without the cross toolchain and qemu it skips
and says which tool is missing."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "arm-check"
SYSROOT = Path("/usr/aarch64-linux-gnu")


def _missing():
    if not SCRIPT.exists():
        return ".ci/arm-check is not in this tree (an sdist)"
    if shutil.which("bash") is None:
        return "bash is not installed"
    tools = {"aarch64-linux-gnu-gcc": "gcc-aarch64-linux-gnu", "qemu-aarch64": "qemu-user"}
    for tool, pkg in tools.items():
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {pkg})"
    if not (SYSROOT / "include" / "stdio.h").exists():
        return f"no aarch64 C library headers in {SYSROOT} (apt-get install libc6-dev-arm64-cross)"
    return None


@pytest.mark.slow
@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_arm_kernels_agree_with_portable_and_known_answers_under_qemu():
    env = dict(os.environ, ARM_CHECK_NO_INSTALL="1")
    env.pop("SECEA_FAST_BACKEND", None)
    r = subprocess.run(["bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    # the Crypto Extensions path was the one exercised, and the portable cap held
    assert "selected aes=armce dpf=armce" in out, out[-4000:]
    assert "backend portable; selected aes=portable dpf=portable" in out, out[-4000:]
    assert "AES variants run: portable armce" in out
    assert " 0 failed" in out and "all runs passed" in out
