"""cffi build script (out-of-line API mode) for ``secea_fast._native._lib``.

The cdef is the public header ``csrc/include/secea.h`` with its preprocessor
lines removed except integer constants (``#define SECEA_X 1``, which cffi
checks against the compiled header and exposes as ``lib.SECEA_X``); every ``.c`` file under ``csrc/`` is compiled into the one
extension.  Flags are a portable baseline: hot kernels carry their own
``__attribute__((target(...)))`` variants and are chosen at run time, so the
wheel runs on any x86-64 (or other) CPU.  Never add ``-march=native`` here.

``SECEA_FAST_SANITIZE=1`` at build time adds AddressSanitizer + UBSan (see
README, "Sanitizers").
"""
import os
import re
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
HEADER = CSRC / "include" / "secea.h"


# integer constants of the header (``#define SECEA_NAME 123``) go to cffi as
# they are, so Python reads them as ``lib.SECEA_NAME`` instead of re-typing
# them; every other preprocessor line is dropped
_CONSTANT = re.compile(r"\s*#define\s+SECEA_\w+\s+\d+\s*$")


def _cdef_source() -> str:
    text = HEADER.read_text()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line for line in text.splitlines()
                     if not line.lstrip().startswith("#") or _CONSTANT.match(line))


def _sources() -> list:
    # relative paths keep the build machine's absolute paths out of the binary
    return sorted(str(p.relative_to(ROOT)) for p in CSRC.rglob("*.c"))


_cflags = ["-O3", "-std=gnu11", "-fno-strict-aliasing", "-pthread", "-Wall", "-Wno-unused-function"]
_ldflags = ["-pthread"]
if os.environ.get("SECEA_FAST_SANITIZE"):
    _cflags += ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-O1", "-g"]
    _ldflags += ["-fsanitize=address,undefined"]

ffibuilder = FFI()
ffibuilder.cdef(_cdef_source())
ffibuilder.set_source(
    "secea_fast._native._lib",
    '#include "secea.h"',
    sources=_sources(),
    include_dirs=[str(Path("csrc") / "include"), str(Path("csrc") / "common"), str(Path("csrc") / "linalg")],
    extra_compile_args=_cflags,
    extra_link_args=_ldflags,
)

if __name__ == "__main__":  # pragma: no cover - manual build
    os.chdir(ROOT)
    ffibuilder.compile(verbose=True)
