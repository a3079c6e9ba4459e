"""Tuning assumptions and measured crossovers, in one place.

Every figure below was measured on the project machine: 2 vCPUs of an AMD EPYC
Zen 5 under KVM (AVX-512 F/BW/VL/IFMA, VAES, AES-NI), Python 3.11, gcc 12,
2026-11-21, single thread unless stated, by the commands named.

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
"""

MATMUL_IFMA1_MAX_P = 2**52
MATMUL_MR, MATMUL_KC = 16, 512
MATMUL_NC = {"ifma1": 6, "ifma2": 4}

MATMUL_NOTES = __doc__
