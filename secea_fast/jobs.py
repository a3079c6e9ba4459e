"""The ``secea-fast run --protocol osfl / secea-phe`` jobs as functions: the
options merged over their defaults, the data made, the round run and
checked, and a JSON-serializable report.  Drivers of the protocols (like
the command line that calls them), so they live above ``protocols``."""
from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from . import workloads
from ._native import available_cpus
from .field import EMBEDDING_PRIME
from .protocols import osfl, secea, secea_phe

__all__ = ["osfl_job", "secea_phe_job", "jsonable"]


def _options(defaults: dict, args: Any, kwargs: dict, name: str, flags: tuple = ()) -> dict:
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


def jsonable(x: Any) -> Any:
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


_OSFL_DEFAULTS = {"n": 20, "T": 5, "rho": 11, "z_s": 2, "z_q": 2, "s": 5000, "classes": 5, "dim": 20,
                 "levels": 17, "n_train": 60, "n_test": 2000, "j": 0, "symmetric": True, "noise": 1.0,
                 "seed": 0, "p": EMBEDDING_PRIME, "approach1": True}


def osfl_job(args: dict[str, Any] | None = None, *, on_stage: Callable[[str], None] | None = None,
             **kwargs: Any) -> dict[str, Any]:
    """The ``secea-fast run --protocol osfl`` job: the distillation example
    (defaults: n = 20, T = 5, rho = 11, z_s = z_q = 2, s = 5000 public samples,
    5 classes, 17 levels, symmetric privacy; about a second) plus, on the same
    labels, Approach 1 (Sec. IV) and the Table I rates.  ``args``: a dict of the
    options (keys as in ``osfl.distillation_example``, '-' or '_'; extra key
    ``approach1``: bool) and/or keyword arguments.  Returns a JSON-serializable
    dict of per-phase seconds, bytes, field elements, rates and accuracies.
    ``on_stage(name)`` is called as each part of the job starts."""
    opts = _options(_OSFL_DEFAULTS, args, kwargs, "osfl", ("symmetric", "approach1"))
    do_a1 = opts.pop("approach1")
    t0 = time.perf_counter()
    res = osfl.distillation_example(**opts, on_stage=on_stage)
    labels, asg = res.pop("_labels"), res.pop("_assignment")
    out = {"protocol": "osfl", **res}
    if do_a1:
        if on_stage is not None:
            on_stage("Approach 1 (Sec. IV) on the same labels")
        lab = labels * asg.incidence[:, :, None, None]          # unassigned objectives contribute 0
        rep1 = osfl.approach1(lab, opts["j"], opts["z_s"], opts["z_q"], p=opts["p"])
        s1 = rep1.sums
        out["approach1"] = {
            "exact_sum": bool((s1 == labels[list(asg.clients(opts["j"])), opts["j"]].sum(axis=0)).all()),
            "seconds": {k: float(v) for k, v in rep1.seconds.items()},
            "bytes": {k: int(v) for k, v in rep1.bytes.items()},
            "field_elements": {k: int(v) for k, v in rep1.elements.items()}}
    out["seconds"]["total"] = time.perf_counter() - t0
    out["table_I"] = jsonable(osfl.rates(opts["n"], opts["T"], opts["rho"], opts["z_s"], opts["z_q"],
                                     s=opts["s"], c=opts["classes"]))
    return jsonable(out)


_PHE_DEFAULTS = {"workload": "tiny", "N": 3, "T": 1, "d": None, "precision": 8,
                 "key_bits": secea_phe.DEFAULT_KEY_BITS, "insecure_keys": False, "stat_bits": secea_phe.DEFAULT_STAT_BITS,
                 "processes": None, "block_size": None, "seed": 0, "compare": True}


def secea_phe_job(args: dict[str, Any] | None = None, *, on_stage: Callable[[str], None] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """The ``secea-fast run --protocol secea-phe`` job: one verified SecEA-PHE
    round on a small workload (default: the "tiny" shape, N = 3, T = 1,
    2048-bit keys, every CPU up to 4; well under a minute) and, with
    ``compare``, the information-theoretic SecEA round on the same data.
    ``args``: dict of options (keys of ``_PHE_DEFAULTS``, '-' or '_') and/or
    keyword arguments.  Returns a JSON-serializable dict of per-phase
    core/wall seconds and bytes.  ``on_stage(name)`` is called as each part
    of the job starts (progress for a command)."""
    opts = _options(_PHE_DEFAULTS, args, kwargs, "secea-phe", ("insecure_keys", "compare"))
    stage = on_stage if on_stage is not None else (lambda name: None)
    procs = opts["processes"]
    if procs is None:
        procs = min(4, available_cpus())
    stage("generate the workload")
    t0 = time.perf_counter()
    local = workloads.workload(opts["workload"], N=opts["N"], d=opts["d"], seed=opts["seed"])
    t_gen = time.perf_counter() - t0
    stage("the round (Paillier keys, then every party in this process)")
    res = secea_phe.run_round(local, T=opts["T"], precision=opts["precision"], key_bits=opts["key_bits"],
                    insecure_keys=opts["insecure_keys"], stat_bits=opts["stat_bits"],
                    processes=procs, block_size=opts["block_size"])
    stage("verify against the plaintext sums")
    ref = secea.plaintext_sums(local, res.params.base)
    out = {"protocol": "secea-phe", "workload": opts["workload"], "seed": opts["seed"],
           "workload_seconds": t_gen, **res.as_dict(),
           "verified": res.matches([s for s, _ in ref], [c for _, c in ref]),
           "table": res.table()}
    if opts["compare"]:
        stage("SecEA on the same data (comparison)")
        it = secea.run_round(local, T=opts["T"], precision=opts["precision"], processes=procs,
                              params=res.params.base)
        out["secea"] = {"core_seconds": {k: float(v) for k, v in it.seconds.items()},
                        "wall_seconds": {k: float(v) for k, v in it.wall.items()},
                        "bytes_via_server": {k: int(v) for k, v in it.bytes.items()},
                        "same_means": res.matches(it.sums, it.counts)}
    return jsonable(out)
