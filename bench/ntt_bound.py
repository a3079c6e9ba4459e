"""What bounds the Goldilocks NTT on this machine (the 4 ms target of bench/test_poly.py).

    python3 bench/ntt_bound.py [--logn 20] [--json bench/results/ntt_bound.json]

Builds bench/ntt_bound.c twice against the package's C sources (with the
flags of secea_fast/_native/build.py and the C compiler in $CC, default cc):
once counting the arithmetic parts one forward transform executes (adds,
subs, general products, power-of-two twiddles by shift class, 8 x 8
transposes), once timing each part alone on register-resident data and the
transform itself.  Prints, in cycles per 8 entries (one zmm register), the
count x cost of each part, their sum -- a floor for this arithmetic, since
it leaves out every load, store and loop instruction -- and the transform.
Needs an x86-64 CPU with AVX-512F/DQ (the kernels it times) and a source
checkout.  The clock is calibrated with a chain of dependent scalar adds.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from secea_fast._native.build import _cflags, _ldflags  # noqa: E402  (the package's own flags)
from secea_fast.field import GOLDILOCKS  # noqa: E402
from secea_fast.poly._core import root_of_unity  # noqa: E402

CSRC = ROOT / "csrc"
INCLUDES = [f"-I{CSRC / d}" for d in ("include", "common", "linalg", "poly")]


def _has_avx512():
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512f" in flags and " avx512dq" in flags


def _build(tmp: Path):
    cc = os.environ.get("CC", "cc")
    srcs = [s for s in sorted(CSRC.rglob("*.c")) if s.name != "ntt_avx512.c"]   # that one is included
    objs = [str(tmp / (s.parent.name + "_" + s.stem + ".o")) for s in srcs]

    def compile_one(pair):
        subprocess.run([cc, *_cflags, *INCLUDES, "-c", str(pair[0]), "-o", pair[1]], check=True)

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        list(pool.map(compile_one, zip(srcs, objs)))
    exes = {}
    for name, extra in (("count", ["-DNTT_COUNT"]), ("time", [])):
        exe = tmp / f"ntt_bound_{name}"
        subprocess.run([cc, *_cflags, *INCLUDES, *extra, str(ROOT / "bench" / "ntt_bound.c"), *objs,
                        "-o", str(exe), *_ldflags, "-lm"], check=True)
        exes[name] = exe
    return exes


def _run(exe, logn):
    out = subprocess.run([str(exe), str(logn), str(root_of_unity(GOLDILOCKS, logn))],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        *key, value = line.split()
        rows[" ".join(key)] = float(value)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logn", type=int, default=20)
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args(argv)
    if not 6 <= args.logn <= 24:
        ap.error("--logn must lie in 6..24")
    if not _has_avx512():
        print("this CPU has no AVX-512F/DQ: the vectorised NTT is not used here", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        exes = _build(Path(tmp))
        counts = _run(exes["count"], args.logn)
        timed = _run(exes["time"], args.logn)
    ghz = timed["ghz"]
    parts = []
    for key, count in counts.items():
        kind = key.split()[1]
        cost = timed[f"cost {kind}"]
        parts.append({"part": kind, "count_per_8": count, "cycles_each": cost, "cycles_per_8": count * cost})
    floor = sum(p["cycles_per_8"] for p in parts)
    vectors = (1 << args.logn) / 8
    floor_ms = floor * vectors / ghz / 1e6
    mix_parts = 4 * (timed["cost add"] + timed["cost sub"] + timed["cost mul"])
    print(f"Goldilocks forward NTT 2^{args.logn}, clock {ghz:.3f} GHz (dependent-add chain)")
    print(f"{'part':<12}{'per 8 entries':>14}{'cycles each':>13}{'cycles / 8':>12}")
    for p in parts:
        print(f"{p['part']:<12}{p['count_per_8']:>14.3f}{p['cycles_each']:>13.2f}{p['cycles_per_8']:>12.1f}")
    print(f"{'floor':<12}{'':>14}{'':>13}{floor:>12.1f}   = {floor_ms:.3f} ms")
    print(f"{'transform':<12}{'':>14}{'':>13}{timed['transform_cycles_per_8']:>12.1f}   = "
          f"{timed['transform_ms']:.3f} ms ({timed['transform_cycles_per_8'] / floor:.2f}x the floor)")
    print(f"mixing check: 4 butterflies with general twiddles {timed['mix4 bf+mul']:.1f} cycles, "
          f"their parts alone {mix_parts:.1f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "logn": args.logn, "ghz": ghz, "parts": parts, "floor_cycles_per_8": floor, "floor_ms": floor_ms,
            "transform_ms": timed["transform_ms"], "transform_cycles_per_8": timed["transform_cycles_per_8"],
            "mix4_bf_mul_cycles": timed["mix4 bf+mul"], "mix4_parts_cycles": mix_parts,
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
