"""Crossovers and block sizes the kernels and protocol drivers choose routes by.

One constant per line, with its reason.  None of them changes a result, only
which exact route computes it; they are read at call time, so a test or a
sweep may set them.  The measurements behind them, the machine they were taken
on and the commands that re-measure them are in docs/PERFORMANCE.md.  The C
kernels' own constants (matmul blocking, the float64 field bound, the VAES
table threshold) are ``#define``s next to their code in csrc/.
"""

# ---- polynomial kernels (secea_fast.poly) ----------------------------------
POLY_MUL_CLASSICAL_MAX = 64         # schoolbook below, NTT above: crossover of one product
POLY_MUL_CLASSICAL_MAX_BATCH = 24   # the same for 8 or more products at once (NTT overhead shared)
POLY_DIV_CLASSICAL_MAX = 48         # classical C division while the quotient or divisor is this short
POLY_TREE_NTT_MIN = 64              # subproduct-tree levels this long or longer use NTTs (best of 8..128)
POLY_EVAL_LEAF = 32                 # remainder tree stops at nodes of this many points and uses Horner
POLY_LCC_MAX_POINTS = 64            # eval / interpolate at this many points or fewer: matmul kernel
POLY_HORNER_MAX_WORK = 1 << 16      # eval of rows x points x length up to this: Horner (its crossover with the matmul route)
POLY_EVAL_HORNER_MAX_LEN = 128      # eval beyond POLY_LCC_MAX_POINTS of polynomials this short: Horner, not the remainder tree (tied or faster at every count of points)
HGCD_CLASSICAL_MAX = 128            # Python half-GCD: classical C Euclid at and below (best of 64..512)
HGCD_NATIVE_MIN = 0                 # whole half-GCD recursion in C above: it won at every degree
HGCD_NATIVE_BASE = 128              # classical Euclid inside the C recursion at and below (flat 64..192)
ROOTS_SMALL_FIELD = 1 << 16         # root finding tests every field element when p is at most this
ROOTS_BRUTE_MAX = 0                 # equal-degree factors this small are tested element-wise (0: never)
ROOTS_CLASSICAL_MAX = 64            # root-finding powmod: classical C up to this degree, NTT Barrett above
ROOTS_GRAEFFE_MIN = 64              # Goldilocks roots: tangent Graeffe above, Cantor-Zassenhaus at and below
ROOTS_GRAEFFE_POINTS_PER_ROOT = 8   # Graeffe points per root (s >= 8 n): fastest of 0.5..32 at degree 1e5

# ---- Paillier (secea_fast.paillier) ----------------------------------------
PAILLIER_MB_MIN_PUBLIC = 2          # batches of public powers this large: IFMA kernel (a 4-lane call costs under two gmpy2 powmods)
PAILLIER_HZ_MIN_EBITS = 128         # one public power with an exponent this long: IFMA across the lanes (shorter: gmpy2 wins)
PAILLIER_AVX2_MIN_SECRET = 3        # without IFMA, this many secret powers mod one p^2: four AVX2 lanes (a call costs four, 2.3 powmod_sec)

# ---- SecEA driver (secea_fast.protocols) -----------------------------------
SECEA_QUERY_BLOCK_ELEMS = 1 << 21   # query entries per (block, responder): big blocks amortise packing y_v
SECEA_QUERY_BLOCK_MAX = 512         # at most this many query rows per block (a multiple of the 16-row panel)
SECEA_QUERY_TILE_ELEMS = 1 << 19    # z entries per tile (4 MB, read from L3 by each pad): best of 2^15..2^20

# ---- one-shot FL (secea_fast.protocols.osfl) ------------------------------
OSFL_ROWS_MAX_COEFFS = 3            # share polynomials this short: row by row (the field kernels beat matmul's per-output reduction at 2-3 coefficients, not at 4)

# ---- executors (secea_fast.executor) ---------------------------------------
RAY_TASK_TARGET_S = 0.025           # RayExecutor: short shards go in tasks of about this many seconds
RAY_TASK_MAX_SHARDS = 64            # RayExecutor: at most this many shards per task

# ---- SecEmb servers on executors (secea_fast.protocols.secemb.sharded) ------
SECEMB_SHARDS_PER_WORKER = 4        # user shards per worker: a slow worker (a shared host) leaves less idle tail
SECEMB_USERS_PER_SHARD = 250        # at most this many users a shard: a worker's memory (about 57 MB of keys and uploads at the ML-1M shape) whatever the users

# ---- deployment on Flower (secea_fast.flower) ------------------------------
FLOWER_STAGE_QUERY_BYTES = 512 << 20  # coded queries in flight per SecEA stage: bounds memory; M = 2,000 fits one stage
