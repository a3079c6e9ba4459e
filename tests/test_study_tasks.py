"""The tasks of secea_fast.studies, one per family of SecEA's Table 3: at a
small size each learns, is deterministic given its seed, and trained with
SecEA equals its fixed-point twin bit for bit and plaintext EmbAvg to the
quantization error at every round; their loaders read the real formats."""
import numpy as np
import pytest

from secea_fast.studies import framework as fw


def _lightgcn():
    from secea_fast.studies import lightgcn, recsys
    return lightgcn.LightGCNTask(recsys.synthetic_ratings(120, 150, 4000, seed=1), 3, d=8, seed=0)


BUILDERS = {"lightgcn": _lightgcn}


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def task(request):
    pytest.importorskip("scipy")
    return BUILDERS[request.param]()


def test_secea_equals_fixed_twin_and_plaintext_every_round(task):
    sec = fw.run(task, fw.SecEAAvg(8), 2, evaluate_init=True)
    fix = fw.run(task, fw.FixedAvg(8), 2, evaluate_init=True)
    plain = fw.run(task, fw.PlainAvg(), 2, evaluate_init=True)
    for a, b, c in zip(sec, fix, plain):
        assert a.metrics == b.metrics
        for k in a.metrics:
            assert abs(a.metrics[k] - c.metrics[k]) <= 1e-3, (a.round, k)
    assert all(r.bytes > 0 for r in sec[1:])


def test_learns_and_is_deterministic(task):
    a = fw.run(task, fw.PlainAvg(), 3, evaluate_init=True)
    b = fw.run(task, fw.PlainAvg(), 3, evaluate_init=True)
    assert [r.metrics for r in a] == [r.metrics for r in b]
    m = task.metrics[0]
    assert a[-1].metrics[m] > a[0].metrics[m] + 0.02
