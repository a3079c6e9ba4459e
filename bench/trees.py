"""Before/after figures of two source trees in one session: the same key kernels
timed in a long-lived worker process per tree (``PYTHONPATH`` = the tree, its
own built extension), alternating A B / B A every round, so both trees see the
same load.  Each entry is the median over rounds of each round's best process
CPU time (one thread per call).

    python bench/trees.py OLD_TREE NEW_TREE [--rounds 5] [--only NAME ...]

Each tree must have its extension built (``python3 secea_fast/_native/build.py``
in it).  Only public calls present in both trees are timed: field add (16 and
2^20 entries, Goldilocks), a Goldilocks matmul, AES-128-CTR keystream (1 MiB),
DPF full-domain evaluation (2^20, u64, default early termination), DPF batch
key generation (10,000 keys, domain 2^20) and a SecEmb round (1 thread).
"""
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

BENCHES = ("field_add_16", "field_add_2^20", "matmul_1024x4096x65", "aes_ctr_1MiB", "dpf_full_2^20",
           "dpf_keygen_10000", "secemb_round")


def _best(fn, reps, inner=1):
    """Best of ``reps`` in process CPU time (every call runs one thread, so a
    loaded machine's waiting for a core is not counted)."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        for _ in range(inner):
            fn()
        best = min(best, (time.process_time() - t0) / inner)
    return best


def _setup():
    """The operands, built once per worker (not timed)."""
    import secea_fast
    from secea_fast import dpf, field, linalg, prg
    from secea_fast.protocols import secemb
    p = secea_fast.GOLDILOCKS
    rng = np.random.default_rng(1)
    a16, b16 = (rng.integers(0, p, 16, dtype=np.uint64) for _ in range(2))
    a20, b20 = (rng.integers(0, p, 1 << 20, dtype=np.uint64) for _ in range(2))
    A = rng.integers(0, p, (1024, 4096), dtype=np.uint64)
    B = rng.integers(0, p, (4096, 65), dtype=np.uint64)
    out = np.zeros(1 << 20, dtype=np.uint8)
    key, iv = bytes(range(16)), bytes(16)
    k0 = dpf.gen(12345, 7, 20)[0]
    dout = np.zeros(1 << 20, dtype=np.uint64)
    alphas = np.arange(10000, dtype=np.uint64) * np.uint64(97) % np.uint64(1 << 20)
    betas = np.arange(10000, dtype=np.uint64)
    M, D = 3883, 64
    Q = rng.normal(size=(M, D)) * 0.1
    sizes = np.clip((rng.pareto(1.2, 4) + 1) * 40, 20, 1500).astype(int)
    items = [rng.choice(M, size=int(s), replace=False) for s in sizes]
    grads = [rng.normal(size=(len(it), D)) * 0.01 for it in items]
    return {
        "field_add_16": lambda: _best(lambda: field.add(a16, b16, p), 5, 2000),
        "field_add_2^20": lambda: _best(lambda: field.add(a20, b20, p), 20),
        "matmul_1024x4096x65": lambda: _best(lambda: linalg.matmul(A, B, p, threads=1), 3),
        "aes_ctr_1MiB": lambda: _best(lambda: prg.aes128_ctr_into(key, iv, out), 30),
        "dpf_full_2^20": lambda: _best(lambda: dpf.eval_full(k0, out=dout, threads=1), 20),
        "dpf_keygen_10000": lambda: _best(lambda: dpf.gen_batch(alphas, betas, 20, threads=1), 5),
        "secemb_round": lambda: _best(lambda: secemb.run_round(Q, items, grads, 100, threads=1), 1),
    }


def _worker():
    import secea_fast
    benches = _setup()
    print(json.dumps({"ready": secea_fast.__file__}), flush=True)
    for line in sys.stdin:
        name = line.strip()
        print(json.dumps({name: benches[name]()}), flush=True)


def main(argv):
    args = list(argv)
    rounds, only = 5, []
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    if "--only" in args:
        i = args.index("--only")
        only, args = args[i + 1:], args[:i]
    if len(args) != 2:
        sys.exit(__doc__)
    names = only or list(BENCHES)
    unknown = sorted(set(names) - set(BENCHES))
    if unknown:
        sys.exit(f"--only: unknown bench {unknown}; one of {', '.join(BENCHES)}")
    workers = {}
    for tag, tree in zip(("before", "after"), args):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1")
        w = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker"], cwd=tree, env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = json.loads(w.stdout.readline())["ready"]
        if not ready.startswith(os.path.abspath(tree)):
            sys.exit(f"{tag}: imported {ready}, not the tree {tree}")
        workers[tag] = w
    times = {n: {"before": [], "after": []} for n in names}
    for r in range(rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for n in names:
            for tag in order:
                workers[tag].stdin.write(n + "\n")
                workers[tag].stdin.flush()
                times[n][tag].append(json.loads(workers[tag].stdout.readline())[n])
    for w in workers.values():
        w.stdin.close()
        w.wait()
    print(f"| kernel | before | after | after / before |")
    print(f"|---|---|---|---|")
    for n in names:
        b, a = statistics.median(times[n]["before"]), statistics.median(times[n]["after"])
        unit, k = ("us", 1e6) if b < 1e-3 else ("ms", 1e3)
        print(f"| {n} | {b * k:.2f} {unit} | {a * k:.2f} {unit} | {a / b:.2f} |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        _worker()
    else:
        main(sys.argv[1:])
