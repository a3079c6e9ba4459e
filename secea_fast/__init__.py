"""secea_fast: fast, exact and private kernels for secure embedding aggregation.

Kernels (NumPy arrays in and out, explicit modulus):

* ``secea_fast.field``: vectorised F_p arithmetic for any prime p < 2^64;
* ``secea_fast.linalg``: exact matrix products mod p (AVX-512 IFMA / scalar);
* ``secea_fast.prg``: AES-128-CTR (VAES / AES-NI / portable constant-time C),
  uniform field elements by rejection sampling, X25519 + HKDF pairwise seeds;
* ``secea_fast.fixedpoint``: floats <-> field elements with capacity checks.

``backend_info()`` reports the variant each kernel uses;
``SECEA_FAST_BACKEND=portable`` forces the portable C path and
``SECEA_FAST_NUM_THREADS`` sets the thread count of parallel kernels.
``tune_memory()`` sets glibc's malloc thresholds in the calling process so
that freed NumPy buffers are reused instead of page-faulted in again
(``secea_fast._memory``); importing the package does not touch them.
"""
from ._memory import malloc_mode as _malloc_mode, tune_memory
from ._native import backend_info, get_backend, set_backend
from .field import EMBEDDING_PRIME, GOLDILOCKS
from . import field, fixedpoint, linalg, prg  # noqa: E402

__version__ = "0.1.0"

_malloc_mode()                  # SECEA_FAST_MALLOC: a bad value is refused at import

__all__ = ["GOLDILOCKS", "EMBEDDING_PRIME", "backend_info", "set_backend", "get_backend",
           "field", "linalg", "prg", "fixedpoint", "tune_memory", "__version__"]
