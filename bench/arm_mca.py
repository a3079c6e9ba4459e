"""Would NEON make the field kernels faster on 64-bit ARM?  A static estimate.

    python3 bench/arm_mca.py [--json bench/results/arm_mca.json]

No ARM hardware is available to this project, and qemu timings mean nothing,
so this estimates instead of measuring: bench/arm_mca.c holds candidate NEON
kernels next to the scalar C they would replace; the script cross-compiles it
(``aarch64-linux-gnu-gcc -O3 -std=gnu11``, the package's optimisation level),
runs it under ``qemu-aarch64`` (every candidate must agree with its scalar
twin bit for bit), takes each kernel's inner loop from the assembly and has
``llvm-mca`` simulate it on several core models.  Prints cycles per element
(per product for ``mm``) for each kernel and core, and the scalar / NEON
ratio (> 1: NEON faster).  A model's estimate is only as good as the model;
it ignores memory, so read it for in-cache data.

Needs gcc-aarch64-linux-gnu, qemu-user and llvm-mca (Debian's llvm).
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "bench" / "arm_mca.c"
# the core models llvm-mca has for AArch64: in-order little cores, the Cortex-A57
# model (also used for A72), Neoverse-class, Apple (Cyclone model), A64FX
CPUS = ["cortex-a55", "cortex-a57", "cortex-a72", "neoverse-n1", "neoverse-v1", "apple-a14", "a64fx"]
# kernel -> (the package's scalar code: C file, function, which of its innermost loops;
#            products or elements per scalar iteration; NEON candidate in bench/arm_mca.c,
#            elements per NEON iteration)
KERNELS = {
    "add": (("csrc/field/fp_vec.c", "add_portable", lambda ops: True), 1, "add_neon", 2),
    "glmul": (("csrc/field/fp_vec.c", "mul_portable", lambda ops: ops.count("umulh") == 1 and "ucvtf" not in ops),
              1, "glmul_neon", 2),
    "f64mul": (("csrc/field/fp_vec.c", "mul_portable", lambda ops: "ucvtf" in ops), 1, "f64mul_neon", 2),
    "mm": (("csrc/linalg/matmul.c", "run_portable", lambda ops: ops.count("umulh") == 4), 4, "mm_neon", 8),
}
BRANCH = re.compile(r"(b\.?(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|cbnz|cbz|tbnz|tbz|b)\s+"
                    r"(?:.*,\s*)?(\.L\w+)$")


def inner_loops(asm: str, fn: str) -> list:
    """fn's innermost loops: runs of instructions from a label to a conditional
    branch back to it, with no other branch in between."""
    body = asm.split(f"\n{fn}:\n", 1)[1].split(f".size\t{fn},", 1)[0]
    lines = [ln.strip() for ln in body.splitlines()]
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if re.fullmatch(r"\.L\w+:", ln)}
    loops = []
    for i, ln in enumerate(lines):
        m = BRANCH.match(ln)
        if m and m.group(1) != "b" and m.group(2) in labels and labels[m.group(2)] < i:
            ins = [x for x in lines[labels[m.group(2)] + 1:i + 1]
                   if x and not x.startswith(".") and not x.endswith(":")]
            if not any(BRANCH.match(x) or x == "ret" for x in ins[:-1]):
                loops.append(ins)
    return loops


def pick(asm: str, fn: str, want) -> list:
    """The largest innermost loop of fn whose mnemonics satisfy want."""
    loops = [ins for ins in inner_loops(asm, fn) if want([x.split()[0] for x in ins])]
    if not loops:
        raise RuntimeError(f"no matching loop in {fn}")
    return max(loops, key=len)


def vectorised(ins: list) -> bool:
    return any(".2d" in x for x in ins)


def mca_cycles(ins: list, cpu: str) -> float:
    """Simulated cycles per loop iteration (steady state over 300 iterations)."""
    r = subprocess.run(["llvm-mca", "-mtriple=aarch64", f"-mcpu={cpu}", "-iterations=300"],
                       input="\n".join(ins) + "\n", capture_output=True, text=True, check=True)
    total = int(re.search(r"Total Cycles:\s+(\d+)", r.stdout).group(1))
    iters = int(re.search(r"Iterations:\s+(\d+)", r.stdout).group(1))
    return total / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    for tool in ("aarch64-linux-gnu-gcc", "qemu-aarch64", "llvm-mca"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found (apt-get install gcc-aarch64-linux-gnu qemu-user llvm)")
    with tempfile.TemporaryDirectory() as tmp:
        exe, asm = Path(tmp) / "arm_mca", Path(tmp) / "arm_mca.s"
        cc = ["aarch64-linux-gnu-gcc", "-O3", "-std=gnu11"]
        subprocess.run(cc + [str(SRC), "-o", str(exe)], check=True)
        subprocess.run(cc + ["-S", str(SRC), "-o", str(asm)], check=True)
        chk = subprocess.run(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "max", str(exe)],
                             capture_output=True, text=True)
        print(chk.stdout, end="")
        if chk.returncode != 0:
            sys.exit("a NEON candidate disagrees with its scalar twin")
        cand = asm.read_text()
        pkg = {}
        for rel in sorted({v[0][0] for v in KERNELS.values()}):
            out_s = Path(tmp) / (Path(rel).stem + ".s")
            # the package's own flags (secea_fast/_native/build.py), for aarch64
            subprocess.run(cc + ["-fno-strict-aliasing", "-pthread", "-I", str(ROOT / "csrc/include"),
                                 "-I", str(ROOT / "csrc/common"), "-I", str(ROOT / "csrc/linalg"),
                                 "-S", str(ROOT / rel), "-o", str(out_s)], check=True)
            pkg[rel] = out_s.read_text()
    out = {}
    print(f"{'kernel':8} {'core':12} {'scalar':>8} {'NEON':>8}  scalar/NEON  (cycles per element or product)")
    for name, ((rel, fn, want), es, fv, ev) in KERNELS.items():
        ls, lv = pick(pkg[rel], fn, want), pick(cand, fv, lambda ops: True)
        if vectorised(ls):
            es *= 2                  # gcc vectorised the package's loop itself (2 lanes)
        for cpu in CPUS:
            cs, cv = mca_cycles(ls, cpu) / es, mca_cycles(lv, cpu) / ev
            out.setdefault(name, {})[cpu] = {"scalar": round(cs, 3), "neon": round(cv, 3),
                                             "ratio": round(cs / cv, 2)}
            print(f"{name:8} {cpu:12} {cs:8.2f} {cv:8.2f}  {cs / cv:6.2f}")
        out[name]["package_loop"] = {"file": rel, "function": fn, "instructions": len(ls),
                                     "gcc_vectorised": vectorised(ls)}
        print(f"{name:8} package loop: {rel} {fn}, {len(ls)} instructions"
              f"{', vectorised by gcc' if vectorised(ls) else ''}; NEON loop {len(lv)} instructions")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
