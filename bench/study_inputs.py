"""What a study round spends converting around the SecEA protocol: the dict form
(a dict per client built from the arrays, checked, matched by id, and the result
dicts read back into arrays) against EntityRows (arrays in, rows out), for N = 3
clients of M entities, d = 16, on the same parties; alternating, median.  The
fixed-point expansion of the rows (eq. 6) is in both.

    python bench/study_inputs.py M UNIVERSE ROUNDS     # e.g. 2000 3000 15
"""
import sys, time
import numpy as np
from secea_fast.protocols import secea
from secea_fast.protocols._inputs import check_local

N, M, E, d = 3, int(sys.argv[1]), int(sys.argv[2]), 16
rng = np.random.default_rng(0)
ids = [np.sort(rng.choice(E, M, replace=False)).astype(np.int64) for _ in range(N)]
rows = [rng.normal(size=(M, d)) for _ in range(N)]
prm = secea.SecEAParams(N=N, d=d, precision=6, bound=10.0)
union = secea.entity_union([i.tolist() for i in ids])
clients = [secea.Client(n, prm, i.tolist()) for n, i in enumerate(ids)]
for c in clients:
    c.set_union(union)
sums = [np.ones((M, d), dtype=np.int64) for _ in range(N)]
cnts = [np.ones(M, dtype=np.int64) for _ in range(N)]

def dicts():
    local = [dict(zip(i.tolist(), r)) for i, r in zip(ids, rows)]
    check_local(local)
    H = [c.encode_embeddings(x) for c, x in zip(clients, local)]
    emb = [c.finish(s, k) for c, s, k in zip(clients, sums, cnts)]
    return H, [np.array([e[k] for k in i.tolist()]) for e, i in zip(emb, ids)]

def arrays():
    local = [secea.EntityRows(i, r) for i, r in zip(ids, rows)]
    check_local(local, arrays=True)
    H = [c.encode_embeddings(x) for c, x in zip(clients, local)]
    out = [c.finish_rows(s, k) for c, s, k in zip(clients, sums, cnts)]
    [dict(zip(c.ids, r)) for c, r in zip(clients, out)]      # the result's embeddings, still built
    return H, out

a, b = dicts(), arrays()
assert all(np.array_equal(x, y) for x, y in zip(a[0] + a[1], b[0] + b[1]))
t = {"dicts": [], "arrays": []}
for _ in range(int(sys.argv[3])):
    for name, f in (("dicts", dicts), ("arrays", arrays)):
        t0 = time.perf_counter(); f(); t[name].append(time.perf_counter() - t0)
md, ma = np.median(t["dicts"]), np.median(t["arrays"])
print(f"N={N} M={M} d={d}: dicts {md*1e3:.1f} ms, arrays {ma*1e3:.1f} ms per round ({md/ma:.1f}x)")
