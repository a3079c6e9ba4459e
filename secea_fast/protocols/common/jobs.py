"""Shared plumbing of the protocols' ``main_job`` functions (the
``secea-fast run --protocol ...`` jobs): option merging and JSON output."""
from __future__ import annotations

import math
import numbers

import numpy as np


def job_options(defaults: dict, args, kwargs: dict, name: str, flags=()) -> dict:
    """``defaults`` updated from the dict ``args`` and then ``kwargs`` (keys
    with '-' or '_'; None values keep the default).  Unknown keys raise
    ValueError naming the ``name`` job's options; the options in ``flags``
    must be bools."""
    opts = dict(defaults)
    merged = {}
    if args is not None:
        if not isinstance(args, dict):
            raise TypeError(f"args must be a dict or None, got {type(args).__name__}")
        merged.update(args)
    merged.update(kwargs)
    for key, val in merged.items():
        k = str(key).replace("-", "_")
        if k not in opts:
            raise ValueError(f"unknown {name} option {key!r}; known: {sorted(opts)}")
        if val is not None:
            opts[k] = val
    for k in flags:
        if not isinstance(opts[k], bool):
            raise TypeError(f"{k} must be a bool, got {type(opts[k]).__name__}")
    return opts


def jsonable(x):
    """``x`` with dict keys as str, tuples as lists, NumPy / numbers scalars
    as Python ones, and non-finite floats as None."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        v = float(x)
        return v if math.isfinite(v) else None
    return x
