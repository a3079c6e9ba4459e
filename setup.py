"""Build hook: the C kernels are compiled by cffi (out-of-line API mode).

All metadata lives in pyproject.toml; this file wires cffi_modules and
makes a rebuild of an unchanged extension a copy.  ``pip install -e
".[extra]"`` runs the whole build again (pip cannot know that nothing
changed), and compiling the kernels costs 40-70 s of CPU.  So after a
build, a stamp beside the extension in the source tree
(``secea_fast/_native/<name>.build-stamp``) records the hash of the binary
built and a hash of everything it depends on: every file under ``csrc/``, the cffi build script,
this file, the cffi, setuptools and Python versions, the platform and the
compiler environment (``CC``, ``CFLAGS``, ``LDFLAGS``, ``CPPFLAGS``,
``SECEA_FAST_SANITIZE``).  When the stamp matches and the extension is
there (the same binary), the build copies it instead of compiling; any change to those
inputs compiles again.  ``SECEA_FAST_REBUILD=1`` always compiles.
"""
import hashlib
import os
import platform
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
_ENV = ("CC", "CFLAGS", "LDFLAGS", "CPPFLAGS", "SECEA_FAST_SANITIZE")


def _stamp() -> str:
    import cffi
    import setuptools
    h = hashlib.sha256()
    files = sorted(p for p in (ROOT / "csrc").rglob("*") if p.is_file())
    files += [ROOT / "secea_fast" / "_native" / "build.py", ROOT / "setup.py"]
    for p in files:
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    meta = [cffi.__version__, setuptools.__version__, sys.version, sys.implementation.cache_tag or "",
            platform.machine(), platform.system()] + [f"{k}={os.environ.get(k, '')}" for k in _ENV]
    h.update("\0".join(meta).encode())
    return h.hexdigest()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class BuildOnce(build_ext):
    """``build_ext`` that reuses the source tree's extension when its stamp
    matches (module docstring)."""

    def _in_tree(self, ext):
        so = ROOT / self.get_ext_filename(self.get_ext_fullname(ext.name))
        return so, so.with_name(ext.name.rsplit(".", 1)[-1] + ".build-stamp")

    def build_extension(self, ext):
        so, stamp = self._in_tree(ext)
        dest = Path(self.get_ext_fullpath(ext.name))
        want = _stamp()
        # the stamp: the inputs' hash, then the hash of the binary built from them
        rec = stamp.read_text().split() if stamp.is_file() else []
        if (not os.environ.get("SECEA_FAST_REBUILD") and so.is_file() and len(rec) == 2
                and rec[0] == want and rec[1] == _sha(so)):
            print(f"secea_fast: C extension unchanged (inputs match {stamp.name}): reusing {so.name}, "
                  f"no compile")
            if dest.resolve() != so.resolve():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(so, dest)
            return
        super().build_extension(ext)
        try:
            stamp.write_text(f"{want} {_sha(dest)}\n")
        except OSError:
            pass                            # a read-only tree: compile every time


setup(cffi_modules=["secea_fast/_native/build.py:ffibuilder"], cmdclass={"build_ext": BuildOnce})
