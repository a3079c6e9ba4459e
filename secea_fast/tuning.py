"""Tuning assumptions and measured crossovers, in one place.

Every figure below was measured on the project machine: 2 vCPUs of an AMD EPYC
under KVM reporting family 25 model 17 (Zen 4 "Genoa"; PERFORMANCE.md calls it
Zen 5), AVX-512 F/BW/DQ/VL/IFMA, VAES, AES-NI, Python 3.11, gcc 12, 2026-11-21,
single thread unless stated, by the commands named.  Zen 4 executes 512-bit
operations as two 256-bit halves, which is why the measured IFMA and VAES
ceilings below are half of PERFORMANCE.md's.

Matrix product (``secea_fast.linalg.matmul``, C: ``csrc/linalg/``)
-------------------------------------------------------------------
* Measured IFMA ceiling on this machine: 1 ``vpmadd52luq zmm`` per cycle,
  3.65 G instructions/s, latency 3.9 cycles (a 24-accumulator micro benchmark;
  ``../shared/docs/PERFORMANCE.md`` says 2/cycle, which this VM did not show).
  Hence ceilings of 3.65 * 8 / 7 = 4.2 G multiply-adds/s for a 64-bit prime
  (7 IFMA per 8 lanes) and 3.65 * 8 / 2 = 14.6 G/s for p <= 2^52.
* Route crossover by modulus, not by size: ``ifma1`` for p <= 2^52 (operands
  fit one 52-bit limb), ``ifma2`` above.  There is no size crossover: the
  packing cost is O(mk + kn) against O(mkn) and the IFMA kernels win from the
  smallest shapes tested (m = k = n = 8 upward).
* Blocking: MR = 16 rows (two zmm), NC = 4 columns (ifma2, 24 accumulators of
  3 words) or 6 columns (ifma1, 2 words), KC = 512 (a micro panel of A is 64 KB
  / 128 KB, the B panel of a k-block <= 560 KB: both stay in the 1 MB L2).
  KC = 512 also bounds every 64-bit register accumulator below 2^63.
* RNS over float64 BLAS (FFLAS-FFPACK style) was measured and left out on
  IFMA machines: one 1024x10000 by 10000x65 DGEMM through NumPy's OpenBLAS
  takes 37 ms (35.6 GFLOP/s); Goldilocks needs 7 residue primes of 21 bits
  (products < 2^142), i.e. >= 260 ms against 200 ms for ``ifma2``, and the
  embedding prime 6 primes (>= 225 ms against 62 ms for ``ifma1``).  On a CPU
  without IFMA it would beat the scalar route (1.46 G MAC/s, i.e. 455 ms for
  that shape); it is the candidate for an ``_rns`` variant there.

Measured results (``python bench/compare.py``, median of 5 alternating runs,
1024x10000 by 10000x65, load average < 0.6):

* Goldilocks, ``ifma2``: 3.38 G multiply-adds/s on one thread (81% of the 4.2
  G/s IFMA ceiling above), 6.34 G/s on two (1.88x); python-flint nmod_mat in
  the same run 1.33 G/s: 2.55x.
* Embedding prime, ``ifma1``: 10.6 G/s on one thread (73% of 14.6 G/s), 19.1
  G/s on two; python-flint 1.85 G/s: 5.7x.
* Scalar route (``SECEA_FAST_BACKEND=portable``): 1.46 G/s for both primes.

Field elementwise multiply (``secea_fast.field.mul``, C: ``csrc/field/``)
-------------------------------------------------------------------------
Raw kernel on 2^22 elements: Goldilocks 0.47 G/s (scalar, branch-free
reduction; the branchy version mispredicted to 0.15 G/s); p < 2^50 through the
double-precision quotient estimate 2.36 G/s with AVX-512DQ (NumPy's plain
wrapping uint64 multiply runs at 2.4 G/s on the same data: memory bound); other
primes (Moller-Granlund) 0.34-0.38 G/s.  ``F64_MAX_P = 2^50`` is a correctness
bound (the quotient estimate must be off by at most one), not a speed one.

AES-128-CTR (``secea_fast.prg``, C: ``csrc/prg/``)
--------------------------------------------------
* Measured VAES ceiling on this machine: one ``vaesenc zmm`` per cycle (and two
  ``xmm``/``ymm`` per cycle, the same bytes), so 10 rounds cost 10 cycles per 4
  blocks: 22.7 GB/s at 3.55 GHz.  The VAES kernel computes round 1 of a run of
  counters from a 256-entry table indexed by the public low counter byte
  (9 AES instructions per 4 blocks, ceiling about 25 GB/s); it is used from
  ``VAES_TABLE_MIN`` = 1024 blocks up, where building the table (256 rounds)
  is amortised.
* Measured: 22.6-24 GB/s for 1 MiB and 64 MiB into a preallocated buffer;
  OpenSSL 3 through ``cryptography`` 9.0-9.4 GB/s in the same runs (it has a
  VAES path here, unlike the 4.8 GB/s in PERFORMANCE.md): 2.5x.  A 3x ratio
  would need 27-28 GB/s, above the 25 GB/s ceiling: out of reach on this CPU.
* Small calls: a Python call costs about 0.8 us (0.4 us of it is
  ``ffi.from_buffer`` on a NumPy array); below 16 KiB OpenSSL's 0.25 us call
  wins.  Protocol code that draws many small streams should batch them or use
  the raw binding.
"""

MATMUL_IFMA1_MAX_P = 2**52
MATMUL_MR, MATMUL_KC = 16, 512
MATMUL_NC = {"ifma1": 6, "ifma2": 4}

FIELD_F64_MAX_P = 2**50
AES_VAES_TABLE_MIN_BLOCKS = 1024

MATMUL_NOTES = __doc__

# ---- polynomial kernels (secea_fast.poly) -------------------------------
POLY_NOTES = """
Polynomial kernels over Goldilocks, one thread (``python -m pytest
bench/test_poly.py --benchmark-only --benchmark-json=...``; python-flint 0.9
in the same run; last full run 2026-11-21, load average 0.7, figures min):

  NTT 2^20 (forward)                5.2-5.8 ms   (target 4 ms; see the NTT note)
  mul, degree 10^6                  42-44 ms     flint 811-898 ms (19-20x); target 30 ms
  from_roots 10^5                   31-39 ms     flint balanced product 261-436 ms (8.5-11x)
  inv_series 10^5                   7.5-8.5 ms   flint 115-193 ms (15-23x); target 8 ms
  half-GCD 10^5                     77-92 ms     flint xgcd 2.45-3.2 s; target 150 ms: met
  eval at 10^5 points               114-121 ms   flint fmpz_mod multipoint 2.4-3.0 s (20-26x)
  interpolate at 10^5 points        171-197 ms   target 100 ms each
  roots, degree 3000                27 ms        flint fmpz_mod 2.9 s, nmod 6.2 s (107x; target 30x)
  roots, degree 10^4                84 ms        target 0.1 s: met
  roots, degree 10^5                0.86 s       (median 0.91 s) target 1 s: met

Run of record, second session of 2026-11-21 (compile-time NTT pass A
exponents, fused AES, malloc tuned at import; load 0.9;
bench/results/poly.json, min): NTT 2^20 5.38 ms (the same code measured
4.86-5.06 ms in C an hour earlier: this VM's speed drifts by 10%), mul 10^6
39.2 ms (flint 745 ms, 19x), from_roots 10^5 22.8 ms (flint 258 ms, 11x),
inv_series 10^5 6.33 ms (flint 114 ms), half-GCD 10^5 72 ms, eval 10^5 60 ms
(flint 2.64 s), interpolate 10^5 90 ms, roots 3000 / 10^4 / 10^5: 25 ms / 78
ms / 0.75 s (flint fmpz_mod 1.73 s at 3000: 70x).  The run before malloc was
tuned at import, minutes earlier: inv_series 8.09 ms, eval 85 ms,
interpolate 94 ms, half-GCD 85 ms, mul 38.7 ms, NTT 5.31 ms.

Page faults: the poly kernels allocate fresh NumPy arrays per call (transforms,
products, tree levels); with glibc's adaptive thresholds many of them are
page-faulted in on every call, at 2-3 us per 4 KB page on this VM.  Measured
(/tmp, same process state, best / median of 20 or 5, two alternations):
inv_series 10^5 12.1-12.8 / 13.5-13.9 ms with 1884 faults per call, against
6.5-7.2 / 7.7-7.8 ms with none once ``_memory.tune_malloc`` has run; mul 10^6
42-48 -> 38-39 ms (1400 faults -> 0); eval 10^5 89-104 -> 79-85 ms;
interpolation 127-131 -> 114-124 ms (16051 -> 9377 faults: its tree's live
set still grows the heap).  ``import secea_fast`` now applies it (README,
"Memory"; SECEA_FAST_MALLOC=default opts out).

Second full run the same day (after the review fixes; load 0.8-0.9):
NTT 2^20 5.6 ms, mul 10^6 41 ms (flint 853 ms), inv_series 10^5 7.0 ms,
half-GCD 89 ms, eval 10^5 92 ms (flint 3.2 s), interpolate 10^5 114 ms
(the duplicate-point check by sorting: np.unique took 38 ms of it before),
roots 3000 / 10^4 / 10^5: 26 ms / 83 ms / 0.80 s (flint fmpz_mod 1.99 s at
3000: 76x).  Between the two runs the peers moved by up to 40% (flint
from_roots 10^5 0.44 -> 0.26 s): this VM's speed drifts.
Then (/tmp timing, min of 5, same session): secea_mod192's Goldilocks form
(classical products under the trees 25 -> 12 ms per interpolation), sibling
products in C without strided copies, and each tree level's products
reused as half of the next level's transforms: eval at 10^5 points 85-87 ms,
interpolation 121-123 ms (target 100 ms: still missed; the time is spread
over the tree, 25 ms, the scaled remainder tree for M', 55 ms, and the
combination, 35 ms, each NTT-bound), from_roots 10^5 24-25 ms.  Minutes
later the same commands gave 160-200 ms: runs on this VM need repeating.

NTT: Goldilocks butterflies are bound by the modular add/sub (7 integer ops
each, p being so close to 2^64) at two 512-bit integer ops per cycle on Zen 4;
every 64th root of unity is a power of two, so inside a 64-point block
twiddles are shifts.  Four-step stages sweep memory eight rows at a time
(the power-of-two stride otherwise thrashes one cache set: 7.5 -> 5.1 ms).

NTT, what bounds it (2026-11-21; /tmp microbenchmarks at 3.58 GHz, zmm
operations, eight independent chains): add/sub/logic/blend/masked add 2 per
cycle; shifts 1 per cycle; vpmuludq and vpmullq 1 per cycle, sharing their
ports with compares into mask registers; compare-to-mask then the masked op
7 cycles of latency.  A Goldilocks add is 4 ops, a sub 3, a power-of-two
twiddle 6-11, a general product 25 (7 shifts, 5 multiplies; 14.2 cycles per
8 entries measured).  The 2^20 forward transform issues about 200 ops per 8
entries (add/sub over 20 levels 70, power-of-two twiddles about 55, the
three general twiddle passes 75), so 3.7 ms is the floor of this arithmetic
at 2 ops per cycle, and 4 ms needs 1.83 ops per cycle sustained; the best
pass (radix 8 plus the general product) sustains 1.68.  Per stage, cycles
per 8 entries, before -> after the two changes below: top k = 6 stage 42.7
-> 42.9, k = 6 40.4 -> 39.3, k = 5 38.4 -> 35.5, last three levels 16.2 ->
14.5; the transform 5.05 -> 4.86 ms in C (2^21 11.4 -> 10.8 ms).
Kept: compile-time pass A exponents for the standard root (every plan from
secea_fast.poly has w^(n/64) = 2^39, so each inter-pass twiddle is an
immediate shift: k = 5 pass A 14.1 -> 10.3 cycles, k = 6 15.4 -> 14.4) and
two 64-entry groups per iteration of the last three levels (16.1 -> 14.4).
Tried, not kept: both passes of the top stage fused per column block through
an L1 tile (47.5 against 42.7 cycles: the 64 row streams defeat the
prefetchers); two column groups per iteration in passes A and B (3% and 1%);
the twiddles' high halves from a second table (no gain); vpmullq for the low
half of the product (3% here, but 3 uops and 15 cycles of latency on Intel);
radix-128 stages (sqrt 2 = 2^24 - 2^72) to drop one general pass: counted at
3-5% fewer ops, the sqrt 2 twiddles and lane-varying shifts of a 64-point
tail giving back most of the 25 saved.

NTT floor, measured (2026-11-21, third session; ``python3 bench/ntt_bound.py``,
bench/results/ntt_bound.json).  The tool counts the arithmetic parts one
forward 2^20 transform executes (NTT_PART hooks in ntt_avx512.c) and times
each part alone on register-resident data, eight independent registers, no
memory: per 8 entries, 10 adds at 2.85 cycles, 10 subs at 1.83, 2.94 general
products at 13.8, power-of-two twiddles 1.63 + 3.19 + 1.38 by shift class
(s <= 32: 3.85, 32 < s < 64: 5.79, s >= 64: 3.73), 0.25 8 x 8 transposes at
20.9.  Sum: 122.4 cycles per 8 entries = 4.37 ms at the calibrated 3.67 GHz;
the transform ran at 139.5 cycles (4.98 ms, 1.14x; 1.12-1.21x over five
runs).  The sum leaves out every load, store and loop instruction, and mixing
parts does not beat it: 4 butterflies with general twiddles take 80 cycles
against 74 for their parts alone.  So 4 ms (112 cycles at this clock) is
below what this arithmetic costs here even with no memory traffic at all.
At 2^21: floor 9.06 ms, transform 10.96 ms; the degree-10^6 product is three
such transforms plus a pointwise product (13.8 cycles per 8 entries, about
1 ms), a floor of 28.2 ms against the 30 ms target, which would leave 6% for
streaming three 16 MB arrays (the transforms run 14-21% over the floor).
Zmm compares into mask registers cost most: a compare and its masked add
sustain one pair per 1.6-1.75 cycles alone (ymm: 0.72 per pair, but ymm
butterflies took 24.9 cycles per 64 entries against 18.2 in zmm).
Tried the same day, not kept: recursing into each group of sub-blocks right
after pass B writes it (so stage 2 reads from L2; 5.16-5.39 ms against
5.01-5.16), software-pipelined pass B (the next column group's DFT beside
this group's products: 5.13-5.30 against 5.14-5.31), -funroll-loops
(4.95-5.02 against 5.00-5.13 ms, within noise), compare-free carries from
vpternlogq + vpsraq (butterflies 26.6 against 18.2 cycles; products 134
against 108), ymm throughout (above).

Crossovers (measured by sweeping the constant with the other paths fixed):
POLY_MUL_CLASSICAL_MAX = 64 / _BATCH = 24 (see above),
POLY_TREE_NTT_MIN = 64 (tree levels: 8..128 tried, 64 best, differences
within 10%), HGCD_CLASSICAL_MAX = 128 (64: 0.49 s, 128: 0.38 s, 256: 0.39 s,
512: 0.57 s at degree 10^5), ROOTS_CLASSICAL_MAX = 64 (32: 2.93 s, 64: 2.71 s,
128: 2.86 s, 256: 3.52 s for degree 10^4, Cantor-Zassenhaus).

Root finding over Goldilocks: tangent Graeffe transforms
(``poly/_graeffe.py``, csrc/poly/graeffe.c; Grenet, van der Hoeven, Lecerf
2015).  p - 1 = 2^32 * 3 * 5 * 17 * 257 * 65537: transforms of orders 3, 5,
17, 257 and 2^(32-j) take every root to mu_s, s = 65537 * 2^j, where A is
evaluated by 2^j Rader DFTs of length 65537 (cyclic convolutions of length
2^16).  A transform of odd order r is 2r NTTs of the degree's length D, so
the order-257 step is 80% of a round (degree 10^4: 50 ms of it, D = 2^14 at
64 us per NTT; the fused twist / accumulate passes are the rest).  Putting
257 into s instead would need evaluations on 1.7e7 points: 257 Rader DFTs
per polynomial, more than the step they replace at every degree measured.
ROOTS_GRAEFFE_POINTS_PER_ROOT = 8 (s >= 8 n; roots that collide go to the
next round): degree 10^5 0.5: 1.98 s, 1: 1.28, 2: 0.89, 4: 0.83, 8: 0.76-0.80,
16: 0.84, 32: 1.08; degree 10^4 flat within noise (80-90 ms) from 2 to 16.
ROOTS_GRAEFFE_MIN = 64 (Cantor-Zassenhaus below; 16: 0.12 s, 64: 0.097 s,
256: 0.098 s at 10^4; 3000: 42 / 28 / 45 ms).  The first round runs on f as
given; only the remainder is made squarefree (a gcd with f' at 10^5 cost
0.18 s, at the remainder's degree 0.02 s).  Cantor-Zassenhaus before this
(successive square roots of unity): degree 3000 0.31 s, 10^4 1.13 s.

LCC regime (``poly.eval`` / ``poly.interpolate`` at N <= 64 points, one
thread, 10^6 polynomials of k = ceil(N/2) coefficients, embedding prime,
warm buffers, best of 3):
  N = 5:  eval 22 ms (0.68 G MAC/s), interpolate 26 ms (0.98 G MAC/s)
  N = 16: eval 62 ms (2.1 G MAC/s),  interpolate 80 ms (3.2 G MAC/s)
  N = 64: eval 0.44 s (4.7 G MAC/s), interpolate 0.61 s (6.8 G MAC/s)
against 10.6 G MAC/s for the matmul kernel on its large shape: 6-64%.  At
small N the work per output is a handful of multiply-adds and the kernel is
bound by writing the outputs (N words per polynomial) and by the per-tile
finalisation; AMD's slow scatter stores were replaced by a scratch transpose
(157 -> 22 ms at N = 5), and the accumulator is initialised by the first
k-block instead of a memset.  A fresh output array adds page faults (about a
quarter more): ``linalg.matmul(..., out=)`` reuses one.
"""

# Products: classical C kernel while the shorter operand has at most this many
# coefficients, NTT above.  Measured (Goldilocks, equal lengths n): one product
# classical/NTT 4.0/5.9 us at n = 48, 5.5/6.0 at 64, 9.3/6.9 at 96 (Python
# overhead of the NTT route); 256 products at once 0.31/0.11 ms at n = 32,
# 0.11/0.19 at 16.  Karatsuba is not implemented: no band is left where it
# could save more than a microsecond.
POLY_MUL_CLASSICAL_MAX = 64
POLY_MUL_CLASSICAL_MAX_BATCH = 24
# Division / remainder: classical while the quotient or divisor is this short.
POLY_DIV_CLASSICAL_MAX = 48
# Subproduct-tree levels whose transform length is at least this use NTTs
# (middle products going down, combinations going up); smaller ones classical.
POLY_TREE_NTT_MIN = 64
# Remainder tree: stop at nodes of at most this many points and use Horner.
POLY_EVAL_LEAF = 32
# Half-GCD: classical Euclid (C) at and below this degree.
HGCD_CLASSICAL_MAX = 128
# Evaluation / interpolation at at most this many points use the matrix route
# (Vandermonde / Lagrange matrix on the matmul kernel): the LCC regime.
POLY_LCC_MAX_POINTS = 64
# Root finding: test every field element when p is at most this.
ROOTS_SMALL_FIELD = 1 << 16
ROOTS_BRUTE_MAX = 0
# Modular exponentiation in root finding: one classical C call up to this
# degree of the modulus, NTT-based Barrett reduction (Python driven) above.
ROOTS_CLASSICAL_MAX = 64
# Root finding over Goldilocks: tangent Graeffe rounds above this degree,
# Cantor-Zassenhaus at and below (measured: see POLY_NOTES).
ROOTS_GRAEFFE_MIN = 64
# Evaluation points per root in a tangent Graeffe round (s >= this * degree).
ROOTS_GRAEFFE_POINTS_PER_ROOT = 8
# Half-GCD in C (csrc/poly/hgcd.c, secea_fp_poly_hgcd): the whole recursion
# runs natively above this degree for Goldilocks and NTT-friendly primes
# p < 2^63 (see HGCD_NATIVE_NOTES); the Python recursion stays for the rest.
# The C route wins at every degree (n = 2: 6.9 vs 7.0 us, 64: 13 vs 29 us,
# 128: 28 vs 74 us, 1000: 0.35 vs 3.2 ms), so the crossover is 0.
HGCD_NATIVE_MIN = 0
# Classical Euclid inside the C recursion at and below this degree (degree
# 10^5: 32: 84 ms, 64: 77, 96: 77, 128: 77, 192: 78, 256: 80; flat 64..192
# at 3000, 3*10^4 and 3*10^5 too).
HGCD_NATIVE_BASE = 128
HGCD_NATIVE_NOTES = """
Half-GCD in C, Goldilocks, one thread, degree 10^5 (the command of
bench/test_poly.py::test_half_gcd, min of 15 in one process): 76-79 ms, a
single cold call (NTT plans created) 85-92 ms; the Python recursion took
313-353 ms, python-flint's xgcd 2.45-2.6 s.  Degree 3*10^4: 16 ms; 3*10^5:
285 ms.  Profile at 10^5: transforms 55%, base case (vector Euclid) 10%,
transform-domain products 9%, copies/zeroing 4%.  Design (hgcd.c header):
(c, d) = R (a, b) cyclically of length 2^ceil(log2 len c) (len c is known
from deg R11), the transforms of R reused for S R' (prefix of the
bit-reversed transform), fraction-free classical base case (no inversion per
step).  Callers: poly.gcd at 10^5 with a degree-1000 common factor 0.15 s
(was 0.67 s), rational_reconstruct of 2*10^5 terms 0.20 s (was 0.78-0.87 s),
roots of degree 10^4 2.2-2.3 s (was 2.4-2.7 s: now dominated by the
powmods, gcds are 0.6 s of it).  At n = 10^5 every level is unlucky for
power-of-two lengths (len c ~ 0.75 n: 57% fill); a length-3*2^k transform
would save roughly 10% of the transform time.
"""

# ---- Paillier (secea_fast.paillier) --------------------------------------------
# Batches of public-exponent powers (obfuscators r^n, scalar products) of at
# least this many bases go to the 8-lane IFMA kernel, fewer to gmpy2.powmod:
# one kernel call costs its 8 lanes whatever the batch (64-bit exponent mod a
# 4096-bit n^2: 1.1 ms per call against 0.31 ms per gmpy2.powmod; 2048-bit
# exponent: 27 ms against 7 ms), so the crossover is 4 bases.
PAILLIER_MB8_MIN_PUBLIC = 4
PAILLIER_NOTES = """
Paillier, 2048-bit keys, ``python -m pytest bench/test_paillier.py
--benchmark-only`` (phe 1.1 with gmpy2 in the same run; 2026-11-21, load
average 0.8; figures min of the rounds; bench/results/paillier.json):

  decrypt 64 ciphertexts      phe 0.164 s   ours 0.050 s (3.3x) one process,
                                            0.033 s (4.9x) two
  decrypt 62 packed values    phe 0.159 s   ours 3.0 ms (52x per value)
  mul_scalar, 64-bit r        phe 20.3 ms   ours 7.2 ms (2.8x), 5.3 ms two processes
  encrypt 64, fresh r         phe 0.573 s   ours 0.158 s one process (3.6x),
                                            0.102 s two (5.6x)
  encrypt 64, CRT obfuscators               ours 49 ms / 27 ms
  encrypt 64 from the pool                  ours 0.21 ms (2,700x)

Before the IFMA kernel (gmpy2.powmod_sec, GMP basecase Montgomery): decrypt
0.7x phe per ciphertext on one process, mul_scalar 1.3-1.9x.  The kernel
(csrc/bignum/mb8_powm.c) runs eight exponentiations in the eight 64-bit
lanes of AVX-512 in radix 2^52: an almost-Montgomery product of L limbs is
4 L^2 IFMA for 8 products, a squaring 3 L^2 (L = 40 for p^2, 79 for n^2).
Per exponentiation (/tmp microbenchmark, min of 3): c^(p-1) mod p^2
(1024-bit p) 0.41 ms (0.48 before the dedicated squaring) against 1.8 ms
powmod_sec and 1.3 ms powmod; r^n mod n^2 2.5 ms against 9.1 ms powmod;
c^r mod n^2 with a 64-bit r 0.14 ms against 0.31 ms.  Window: the W in 1..6
with the fewest products, 2^W + ceil(bits/W) (W + 1) (W = 4 for 64-bit
exponents, 5-6 for 1024-2048 bits).

Second run the same day (after the review fixes, a slower spell of the VM:
gmpy2's powmod 0.40-0.55 ms where it took 0.31): decrypt 64 phe 0.170 s, ours
0.061 s (2.8x) / 0.039 s two processes; mul_scalar phe 21.6 ms, ours 10.3 ms
(2.1x) / 4.7 ms two processes; encrypt 64 phe 0.586 s, ours 0.176 s / 0.087 s
(6.8x on two processes).

SecEA-PHE round at 1,000 entities (``python -m pytest bench/test_secea_phe.py
--benchmark-only -s``, 2 processes): 43.9 s wall (173.9 s with gmpy2),
against 0.20 s for the information-theoretic SecEA; 87 core-s of which 73 are
24,210 public-key obfuscators r^n mod n^2 (the responders' encryptions under
the querier's key and the server's Enc(psi): the private-key CRT shortcut is
not available to them) and 11.6 the querier's 12,105 decryptions.
"""

# ---- SecEA protocol driver (secea_fast.protocols.runner) -------------------
SECEA_NOTES = """
SecEA round (``secea_fast.protocols.runner.run_round``), MovieLens-1M shape
(M = 9,746, N = 5, T = 1, K = 2, d = 128 -> 65 columns per share, 33,560
queried entities), ``python -m pytest bench/test_secea.py -k ml1m
--benchmark-only -s``, load average about 1 (a helper running tests):

* response products: 1.06e11 multiply-adds, 8.9 s at the 11.9 G MAC/s the
  kernel reaches on the block shape in the same run (9.5 s measured inside
  the round);
* whole round without the one-time union, one process: 15.5 s; two
  processes: 8.4 s (1.85x); overhead beyond the products at kernel speed
  74-77%: queries 3.1 core-s (1.9 ns per query entry: AES-CTR pad with the
  scaling fused, AVX-512 rejection sampling for the noise rows), decryption
  before the product 1.8 core-s (1.1 ns per entry), sharing 0.47, server
  noise 0.48, decoding 0.16.  The query stream is DRAM bound: each entry is
  written by the querier, read and written by the decryption and read by the
  product (>= 32 bytes, 52 GB per round); fusing the decryption into the
  product's packing of A would remove a third of that.
* block size (one process, before the XOR pads): 192 rows (1.9 M entries)
  18.2 s, 96 rows 19.2 s, 48 rows 20.2 s, 32 rows 22.9 s: bigger blocks
  amortise packing y_v (M x 65, 5 MB) per product call.  Default: about
  2^21 entries per (block, responder), 16 to 512 rows.
* Census-Income shape (M = 48,842, d = 4 -> 3 columns, sample-level): 29.1-29.6 s
  wall per round on 2 processes (2^19 or 2^21-entry blocks; 16-row blocks
  32.8 s) (+ 5.7-6.0 s for the
  one-time union), peak RSS 137 MB; paper Table 4: 3,293 s.
* Entity union, N = 5 clients of 10^4 / 10^5 entities drawn from 3k ids:
  3.05 s / 33.0 s for all parties (roots of L evaluated once, as each client
  would in parallel).
* block size with processes (the per-block stage, one thread per product,
  /tmp sweep of run_round(block_size=...), load about 1): 208 rows 15.3 s on
  one process / 7.9 s on two (efficiency 0.97); 96 rows 15.4 / 9.1 s; 48 rows
  17.4 / 11.7 s.  Two processes contend for memory bandwidth, smaller blocks
  re-pack y_v more often: the default stays at 2^21 entries.
* server noise: one N-row product per block for psi at every alpha_v (was a
  1-row product and the K+2T-1 streams drawn again per responder): 0.48 ->
  0.20 core-s per round.
* fused query decryption (2026-11-21): the responder decrypts each query
  block 16 rows at a time into an L2 scratch and multiplies from there
  (``linalg.PackedRight.mul_decrypt``), y_v packed once per round.  Same
  command, seven runs over an hour (the VM drifted; one 2-process run had
  17.5 core-s against 14.7-15.9 in the others): one process 13.9-15.9 s
  wall, overhead beyond the products at the same run's kernel speed 49, 43,
  59, 45, 44, 47, 59% (median 47%); two processes 7.6-9.2 s, overhead 48,
  51, 45, 61, 79, 53, 60% (median 53%); 2 over 1: 1.91, 1.82, 1.97, 1.66,
  1.67, 1.79, 1.92x (median 1.82x).  ``secea-fast run``'s own table counts the fused
  decryption inside "product" (39% "beyond them").  Census shape 26.1 s wall
  (peak RSS 312 MB); entity union (tangent Graeffe roots) 0.44 s / 4.96 s
  for 10^4 / 10^5 entities per client (was 3.05 / 33.0 s).
* queries divided by c_v = l_{K+1}(alpha_v) (responders scale y_v once per
  round; T = 1 queries need no field multiplication, z drawn straight into
  the querier's own query) and written with non-temporal stores
  (2026-11-21, later; ``/tmp`` runs of ``run_round(upto="offline")``, four
  each, interleaved): offline phase one process 1.94-2.15 s with ordinary
  stores, 1.45-1.80 s with streaming ones; two processes 1.36-1.46 s ->
  0.99-1.18 s (the multiplication alone had cost 0.2 ns of the 1.3 ns per
  query word).  Whole round, same command as above: one process 12.99
  core-s, overhead 36, 37, 40% (median 37%); two processes 15.03 core-s,
  overhead 36, 67, 50% (median 50%; that run's kernel rate fell to 10.6 G
  MAC/s and the 2-process round walls spread by 25%), 2 over 1 1.66x.
  Tried and not kept: (a) the product reading B once per 4 row panels of 16
  (B's 270 KB k-panel reused from L2): 10.9 ms per 208-row block with or
  without, one or two processes, when one B is reused; cycling through 5
  B's as a round does, 12.7-13.3 ms on one process and 13.6-15.3 ms on two
  (B falls out of L3); (b) with (a), decrypting the queries per 16 x 512
  piece inside the kernel (key expanded once, the next piece prefetched,
  scratch rows padded off the 4 KB stride that made them share L1 sets):
  12.8 / 13.3 / 13.5 ms in those three cases, but whole rounds no better
  (products 10.9-11.8 core-s on one process against 10.1-10.4), and the
  4x larger accumulators slowed the wide products of the noise and decoding
  steps; (c) 32 or 64 decrypted rows per tile: 2-process round 14.2-15.1
  core-s against 14.1-14.2 for 16.
* responders' packed shares made in the parent before the workers fork
  (``Client.prepare_responses``), so both workers read one copy (N x 5 MB)
  instead of packing their own (2 x N x 5 MB, more than the 32 MB L3):
  /tmp decrypt-and-multiply of 208-row blocks cycling through 5 packed
  operands on two processes, five interleaved pairs, per-block times own
  copies 17.7/22.2, 17.1/15.6, 15.3/18.6, 13.8/14.3, 12.7/12.7 ms against
  shared 14.4/14.0, 14.5/14.7, 13.0/13.0, 13.1/12.7, 12.9/15.3 ms (medians
  15.5 and 13.5 ms); whole rounds are too noisy on this VM to show it.
* with the shared packed shares, ``python -m pytest bench/test_secea.py
  --benchmark-only -s`` (2026-11-21 18:08, load 1.2; bench/results/secea.json):
  one process 13.26 core-s, overhead 41, 35, 34% (median 35%); two
  processes 13.81 core-s, overhead 36, 49, 36% (median 36%); 2 over 1:
  1.86x from the medians of the two series, 1.82x with the rounds
  alternating (pairs 12.81/7.17, 12.38/6.81, 12.07/6.62 s); Census 19.9 s
  wall, 471 MB peak; union 0.42 s / 4.64 s.  Earlier the same day, before
  the shared operands: alternating 1.73x (1.69-1.82), and 1.58x in a run
  where the VM slowed by a third between pairs.
* with the pull-based fork workers (LocalExecutor), same command
  (2026-11-21 18:25, load 1.3): one process 12.76 core-s, overhead 35, 32,
  42% (median 35%); two processes 12.88 core-s, overhead 33, 31, 33%
  (median 33%); 2 over 1: 1.95x from the medians, 1.88x alternating (pairs
  12.96/6.88, 13.13/7.09, 12.69/6.76 s); Census 19.3 s wall, 464 MB peak.
* after the noise change, the tiled queries and tune_malloc:
  ``python -m pytest bench/test_secea.py -k ml1m --benchmark-only -s``:
  round 15.5 s on one process, 8.65 s on two; overhead beyond the products
  at kernel speed 59-60% (was 74-77%).
* 2026-11-21, second session: the pads and the queries' decryption became
  fused AES-CTR encryption (the keystream never written to memory: 16 MB
  streamed 5.14 -> 2.72 cycles per 16 bytes), z is sampled straight from
  the keystream (2.64 -> 1.35 cycles per word) into 4 MB tiles
  (SECEA_QUERY_TILE_ELEMS).  Same command (19:30, load 1.3;
  bench/results/secea.json): one process 11.03 core-s, overhead 21, 21, 18%
  (median 21%, was 35%); two processes 11.20 core-s, overhead 22, 20, 22%
  (median 22%, was 33%); 2 over 1: 1.85x alternating (pairs 11.16/5.88,
  10.99/6.04, 11.00/5.94 s); Census 13.1 s wall (was 19.3), 477 MB peak;
  union 0.40 s / 4.00 s.  Again at the end of the session (streamed pads
  on every tile, one fused call per message, malloc tuned at import; 20:09,
  load 1.25, the VM slower: products 10.7 against 11.6 G MAC/s): one process
  overhead 18, 39, 31% (median 31%), two processes 16, 30, 18% (median
  18%), 2 over 1 1.85x alternating (pairs 11.46/6.07, 11.37/6.16, 11.33/6.52
  s), Census 13.6 s wall, 472 MB; union 0.43 s / 4.35 s.
"""

EXECUTOR_NOTES = """
Executors (``secea_fast.executor``), MovieLens-1M shape, ``secea-fast bench
throughput --protocol secea --phase PHASE -P 2 --repeat 3 --executor
local,ray`` (bench/results/throughput_secea_*.json), seconds for 1 / 2
processes and the 2-process efficiency.

2026-11-21, after the fused query decryption (load about 1; this machine ran
5-15% slower than in earlier sessions, peers included):
* offline (queries only): pool 2.69 / 1.71 s (0.79), Ray 2.82 / 1.64 s
  (0.86; -4.0% against the pool at 2 processes);
* responses: pool 13.15 / 7.26 s (0.91), Ray 13.69 / 7.38 s (+1.7%);
* round: pool 13.52 / 7.82 s (0.86), Ray 13.73 / 7.67 s (0.90; -1.9%).
Earlier session (before it): offline pool 2.73 / 1.59 s (0.86), Ray 2.79 /
1.90 s (+19.8%); responses pool 14.14 / 7.71 s (0.92), Ray +1.9%; round
pool 14.54 / 8.06 s (0.90), Ray +1.6%.  Run-to-run spread on this VM is
about 5%: the offline phase's efficiency moved between 0.79 and 0.86 with no
change to its code.

2026-11-21, after the queries lost their multiplication and went to
memory with non-temporal stores (same command, load 1.0-1.8 before each
phase; bench/results/throughput_secea_*.json): offline pool 1.556 / 1.059 s
(0.73), Ray 1.794 / 1.195 s (0.75; +12.9% against the pool on 2 processes,
+15.3% on 1: Ray's fixed cost per call against a 1 s phase); after the
streaming stores' fence went from once per 32 KB chunk to once per call
(its effect alone not measured separately): offline pool 1.597 / 1.009 s
(0.79), Ray 1.946 / 1.143 s (0.85; +13.3% on 2 processes, +21.9% on 1).
With the packed shares shared by the workers (load 1.6-1.9 before each):
responses pool 11.99 / 5.94 s (1.01), Ray 11.66 / 6.14 s (0.95; +3.5%);
round pool 12.05 / 6.88 s (0.88), Ray 12.26 / 6.70 s (0.91; -2.6%).
Streaming stores write 9.4-10.6 GB/s per process into pages already
touched, one or two processes alike (ordinary stores 6.0-6.7 GB/s), but
1.2 GB/s into fresh pages: this VM's page faults cost 2-3 us (256 MB
first touched in 0.68-0.75 s, again after a free in 38 ms); responses
pool 11.77 / 6.36 s (0.93), Ray 13.01 / 6.43 s (+1.2%); round pool 12.84 /
7.20 s (0.89), Ray 12.69 / 6.91 s (0.92; -4.0%).  The offline phase,
taken apart per worker (/tmp instrumentation of the fork pool, 165 blocks
of about 10 ms): the workers' busy time on two processes adds up to the
one-process time within 5% (it was +11-15% before the streaming stores),
and the rest is fork and start (10-20 ms per worker), the first block's
page faults (64-72 ms before ``release_free_heap``, 23-31 ms after: this
VM pays 2-3 us per fault), 45-85 ms per worker of waits between blocks
(CPU time in those gaps 11-13 ms: the worker sleeps and is woken late
while the parent's pool threads run) and the tail.  Chunks of 4 blocks per
task changed nothing measurable (0.97-1.03 s against 0.95-1.10 s), so a
pull-based pool would not reach 0.9 either: on two vCPUs whose parent also
needs one, a phase of 1 s has about 10% fixed cost.  That last guess was
wrong: with workers pulling shard indices from a shared counter and no
pool threads in the parent (LocalExecutor since 2026-11-21), the waits
between blocks fell to 11-16 ms per worker (p90 0.24-0.28 ms, was 2.4-4.6
ms), the time inside blocks is all CPU time, and ``secea-fast bench
throughput --protocol secea --phase offline -P 2 --repeat 3`` gives 1.451 /
0.825 s (0.88) and 1.442 / 0.843 s (0.86); scheduling cost per shard
0.066-0.075 ms (was 0.12-0.18).  All three phases, local and Ray
(--executor local,ray, load 1.0-1.8): offline pool 1.479 / 0.863 s (0.86),
Ray 1.644 / 1.010 s (0.81; +17.0% against the now faster pool on 2
processes: Ray's fixed cost per call, state to the object store and into
each actor, is about 0.15 s against a 0.9 s phase); responses pool 11.76 /
6.35 s (0.93), Ray 11.91 / 6.27 s (0.95; -1.3%); round pool 12.40 / 6.13 s
(1.01), Ray 12.17 / 6.71 s (0.91; +9.5%).
RayExecutor then sent short shards in batches (tasks of about
RAY_TASK_TARGET_S = 25 ms of work, shard time estimated from finished
tasks; at most RAY_TASK_MAX_SHARDS = 64 per task and never more than
leaves two tasks per actor).  Offline phase, four runs of the same command
with --executor local,ray (load 1.0-1.3): pool 1.538 / 0.864 s (0.89),
1.453 / 0.801 s (0.91), 1.485 / 0.866 s (0.86), 1.533 / 0.862 s (0.89);
Ray over the pool on 2 processes +6.9%, +17.1%, +5.5%, +4.1% (on 1:
+2.8%, +10.2%, +2.6%, -0.2%), was +13 to +17%; Ray's scheduling cost per
shard 0.054-0.056 ms (was 0.43-0.58).  The second run is the one in
bench/results/throughput_secea_offline.json.
Then z went back to an L2 tile copied into the querier's own query with
streaming stores (``prg.copy_stream``): 80 instead of 96 MB of memory
traffic per block (two processes together need about 20 GB/s, what this
VM's memory gives them: 9.2-10.1 GB/s each in the streaming-store test).
Pool, two runs: 1.387 / 0.799 s (0.87), 1.368 / 0.779 s (0.88), about 7%
faster on one process and on two; what keeps two processes from 0.9 is
that per-block work grows 9-14% when both run (the memory traffic) plus
fork and first-block page faults (20-30 ms per worker).  With local,ray
(bench/results/throughput_secea_offline.json): pool 1.368 / 0.809 s (0.85),
Ray 1.487 / 0.867 s (0.86; +7.1% on 2 processes, +8.7% on 1).
Second session of 2026-11-21: the pads became fused AES-CTR encryption and
z is sampled straight from the keystream into 4 MB tiles (SECEA_NOTES).
--executor local,ray --repeat 3, load 0.7-1.6 before each phase
(bench/results/throughput_secea_*.json): offline pool 0.972 / 0.675 s
(0.72), Ray 1.047 / 0.748 s (0.70; +10.8% on 2 processes, +7.7% on 1);
responses pool 10.52 / 5.40 s (0.97), Ray 10.80 / 5.94 s (0.91; +9.9%,
+2.6%); round pool 10.95 / 5.75 s (0.95), Ray 10.91 / 5.98 s (0.91; +4.0%,
-0.4%); scheduling cost per shard: pool 0.077-0.097 ms, Ray 0.045-0.060 ms.
The offline phase is 29% faster on one process (1.37 -> 0.97 s) and 17% on
two (0.81 -> 0.675 s), so its efficiency fell.  It writes 13.4 GB of
queries per round, and this VM takes non-temporal writes at 28 GB/s from
one process but 29-32 GB/s from two together (/tmp test: five 16 MB
outputs per block written from a 4 MB z tile, 3.0 ms per block alone, 5.2-
5.8 ms with a second process doing the same).  Two independent processes
each generating a whole round's queries take 1.12-1.27 s alone and 1.38-
1.77 s side by side, so the loss is the memory system, not the pool (one
forked worker 1.03-1.13 s against 0.99-1.15 s inline; two forked workers
with half the blocks each 0.61-0.79 s).  At 30 GB/s the writes alone take
0.45 s of the 0.54 s that an efficiency of 0.9 would allow.  (An earlier
single run of the side-by-side test showed no slowdown: it did not repeat.)
A review then found that the fused pads streamed only when the output and
the counter happened to line up (most tiles used ordinary stores, with the
read-for-ownership traffic); with that fixed, offline phase, local pool:
1.014 / 0.598 s (0.85) and 0.963 / 0.670 s (0.72) in two runs, and with
local,ray (bench/results/throughput_secea_offline.json): pool 0.957 / 0.657
s (0.73), Ray 0.995 / 0.663 s (0.75; +0.9% on 2 processes, +4.0% on 1).
Aligning the query buffers to 64 bytes as well (the fused kernel then keeps
its first-round table while streaming): 0.970-1.004 s on one process against
0.975-1.018 s, four interleaved rounds; not kept.
Final runs of the session, after one fused call per message and malloc tuned
at import (20:02, load 0.7-1.4; bench/results/throughput_secea_*.json):
offline pool 0.880 / 0.604 s (0.73), Ray 0.928 / 0.631 s (0.74; +4.4% on 2
processes, +5.4% on 1); responses pool 10.38 / 5.43 s (0.96), Ray 10.70 /
5.50 s (0.97; +1.4%, +3.0%); round pool 10.82 / 5.68 s (0.95), Ray 11.48 /
6.80 s (0.84; +19.6% on 2 processes, +6.1% on 1).  The round was run again
at once: pool 11.17 / 6.24 s (0.90), Ray 11.52 / 6.31 s (0.91; +1.2%, +3.1%),
so the +19.6% (one slow Ray repeat set) is this VM's spread, which earlier
runs today put at +4.0% and +9.5%; the file keeps the first run.
Scheduling cost per shard: pool 0.061-0.106 ms, Ray 0.042-0.059 ms.
* scheduling cost per shard (a no-op shard's round trip): fork pool
  0.12-0.30 ms, Ray actors 0.43-0.69 ms.  A SecEA block is 20-90 ms of work,
  so scheduling is < 3% even on Ray; keep shards >= 100x the per-shard cost.
* Ray's fixed cost per map call is the state (parties and shares, ~20 MB)
  put into the object store and deserialised once per actor, ~0.3 s here.
* the query phase alone does not reach 0.9: two processes spend 3.4 core-s
  where one spends 2.7.  It writes the query stream (13 GB per round, AES-CTR
  pads over coefficient-scaled z tiles) at 5-8 GB/s, well under the DRAM
  limit (28-31 GB/s from one core); non-temporal stores for the pads were
  tried and changed nothing measurable (2.05-2.38 s either way on two
  processes), so the write allocation is not what bounds it.  Page faults
  were (``executor.tune_malloc``: 5.2 -> 2.9 s on one process).
"""
# RayExecutor: shards are sent in tasks of about this many seconds of work
# (shard time estimated from the tasks already done), at most this many
# shards per task; see EXECUTOR_NOTES.
RAY_TASK_TARGET_S = 0.025
RAY_TASK_MAX_SHARDS = 64
# Query rows per block: about this many query entries per (block, responder)
# (a multiple of 16 rows, the matmul row panel, between 16 and 512 rows).
SECEA_QUERY_BLOCK_ELEMS = 1 << 21
# Entries of the random rows z drawn per tile when building a block's queries
# (4 MB, read from L3 by every receiver's pad).  Measured 2026-11-21 after the
# pads became fused AES-CTR encryption (compute-bound, 2.7 cycles per 16 bytes):
# the whole offline phase at the ML-1M shape on one process, best of 3, three
# sweeps: 2^15 1.45-1.50 s, 2^16 1.29 s, 3 2^15 1.17-1.22 s, 2^17 1.13-1.18 s,
# 2^18 1.06-1.09 s, 2^19 1.03-1.04 s, 2^20 1.05-1.08 s (fewer, longer kernel
# calls; the 512 KB L2 tile chosen when the pads were memory-bound no longer
# pays).  See EXECUTOR_NOTES.
SECEA_QUERY_TILE_ELEMS = 1 << 19
SECEA_QUERY_BLOCK_MAX = 512
