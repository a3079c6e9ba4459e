"""What SecEA's and SecEA-PHE's parties share below the message type and
users never call: the one-time-pad domain of each message (round,
purpose, sender -> receiver, block: a pad is never drawn twice) and the
uint64 view of a message's array.  Private to ``protocols``."""
from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def as_u64(a: np.ndarray) -> NDArray[np.uint64]:
    """A message array as C-contiguous uint64 (no copy when it already is)."""
    if not isinstance(a, np.ndarray) or a.dtype != np.uint64:
        raise TypeError("message data must be a uint64 NumPy array")
    return np.ascontiguousarray(a)


def pad_domain(rnd: int, purpose: str, a: int, b: int, block: int = 0) -> str:
    """The Prg domain of the pad of one message (round, purpose, sender -> receiver, block)."""
    return f"secea/r{rnd}/{purpose}/{a}->{b}/b{block}"
