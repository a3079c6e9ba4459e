/* secea_fast C API.  This header is the whole C surface of the package and
 * also the cffi cdef source: the build script strips preprocessor lines, so
 * keep every declaration on plain C lines (no macros in prototypes).
 *
 * Conventions (docs/ARCHITECTURE.md, "Kernels"): every function here is
 * a raw kernel.  It assumes valid, allocated, non-overlapping buffers (unless
 * documented otherwise), a prime modulus p with 2 <= p < 2^64 and inputs
 * already reduced below p.  Validation happens once, in Python, except for
 * the range checks of the *_checked twins below (fused into the loop that
 * computes, so the managed API makes one pass through memory).
 */
#ifndef SECEA_H
#define SECEA_H
#include <stddef.h>
#include <stdint.h>

/* ---- status codes ----
 * Every int-returning entry point returns SECEA_OK (0) on success and one of
 * these negative codes on failure.  A positive value, where a function has
 * one, is a result documented with it (the operand out of range of the
 * *_checked kernels, SECEA_PRG_XOR_CHECK's failed range check).  Python maps
 * them in one place: secea_fast._native.check_status. */
enum secea_status {
    SECEA_OK = 0,
    SECEA_ENOMEM = -1,      /* working memory could not be allocated */
    SECEA_EINVAL = -2,      /* arguments outside what the kernel takes (shape, modulus, layout, CPU) */
    SECEA_EINTERNAL = -3    /* a kernel's internal bound was exceeded: a bug, never the caller's input */
};

/* Limits the Python layer checks before calling (declared to cffi, read as lib.SECEA_...). */
#define SECEA_MAX_THREADS 64        /* threads of one parallel kernel (csrc/common/threads.c) */
#define SECEA_HGCD_MAX_LOG 30       /* secea_fp_poly_hgcd's longest transform: 2^30 */

/* ---- runtime CPU dispatch (csrc/common/dispatch.c) ---- */
/* Re-selects every kernel variant.  level 0: the best the CPU runs; 1: the
 * portable C path everywhere (SECEA_FAST_BACKEND=portable); 2: at most
 * AVX2, BMI2 and AES-NI, as on a CPU without VAES and AVX-512
 * (SECEA_FAST_BACKEND=avx2). */
void secea_dispatch_init(int level);
/* Name of the variant currently used by a kernel family ("aes", "matmul",
 * "field", "dpf"), e.g. "vaes", "aesni", "armce", "ifma", "neon", "avx512", "avx2", "portable"; NULL if unknown. */
const char *secea_kernel_variant(const char *kernel);
/* 1 if the CPU supports the named feature ("aes", "vaes", "vaes256"
 * (VAES on ymm registers with AVX2, no AVX-512 needed), "avx2",
 * "avx512f", "avx512dq", "avx512ifma", "bmi2"; on 64-bit ARM "aes" (Crypto
 * Extensions), "asimd", "pmull"), else 0. */
int secea_cpu_supports(const char *feature);

/* ---- prime field vectors (csrc/field/fp_vec.c) ---- */
void secea_fp_add(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_sub(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_neg(uint64_t *out, const uint64_t *a, size_t n, uint64_t p);
void secea_fp_mul(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_mul_scalar(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p);
/* out[i] = a[i]^e[i]; exponents are plain integers (0^0 = 1). */
void secea_fp_pow(uint64_t *out, const uint64_t *a, const uint64_t *e, size_t n, uint64_t p);
void secea_fp_pow_scalar(uint64_t *out, const uint64_t *a, uint64_t e, size_t n, uint64_t p);
/* Montgomery's trick.  out must not alias a.  Returns 0 on success, or 1 + the
 * index of the first zero element (out is then unspecified). */
size_t secea_fp_batch_inv(uint64_t *out, const uint64_t *a, size_t n, uint64_t p);
/* out[r] = sum_i a[r*len + i] * b[r*b_stride + i] mod p, for r < rows.
 * b_stride = len: row-wise dot products; b_stride = 0: matrix-vector product. */
void secea_fp_dot_rows(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t rows, size_t len, size_t b_stride, uint64_t p);
/* out[i] = x[i] mod p for arbitrary uint64 x (used by samplers and codecs). */
void secea_fp_reduce(uint64_t *out, const uint64_t *x, size_t n, uint64_t p);
/* The range check of the managed API: 0 if every a[i] < p, else 1 + the
 * index of the first a[i] >= p.  Any p, any a. */
size_t secea_fp_first_ge(const uint64_t *a, size_t n, uint64_t p);
/* Checked twins of add/sub/mul/neg/mul_scalar for the managed Python API:
 * the operands need not be reduced; each chunk is range-checked just before
 * the kernel reads it (one pass through memory).  Return 0, or 1 if a (2 if
 * b, or c >= p) has an entry >= p; out is then unspecified.  p must still be
 * a prime (checked in Python, once per p). */
int secea_fp_add_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
int secea_fp_sub_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
int secea_fp_mul_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
int secea_fp_neg_checked(uint64_t *out, const uint64_t *a, size_t n, uint64_t p);
int secea_fp_mul_scalar_checked(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p);

/* ---- exact matrix product (csrc/linalg/) ---- */
/* C (m x n) = A (m x k) * B (k x n) mod p, all row-major and reduced.
 * threads >= 1.  Returns 0, or -1 if memory could not be allocated. */
int secea_fp_mat_mul(uint64_t *C, const uint64_t *A, const uint64_t *B,
                     size_t m, size_t k, size_t n, uint64_t p, int threads);
/* The right operand B (k x n, k, n >= 1, entries < p) packed once for many
 * products C = A B mod p with A of any row count m (same contract as
 * secea_fp_mat_mul).  pack returns NULL if memory runs out or k or n is 0. */
typedef struct secea_mat_packed secea_mat_packed;
secea_mat_packed *secea_fp_mat_pack(const uint64_t *B, size_t k, size_t n, uint64_t p);
void secea_fp_mat_pack_free(secea_mat_packed *h);
int secea_fp_mat_mul_packed(uint64_t *C, const uint64_t *A, const secea_mat_packed *h, size_t m, int threads);
/* C = D B mod p where D = A XOR the keystream of secea_prg_xor(key, block
 * block0 (big-endian counter), byte skip0 in {0, 8}): A decrypted 16 rows at
 * a time into cache and multiplied from there.  Returns 0, 1 if a decrypted
 * entry is >= p (C is then meaningless), -1 if memory runs out, -2 for a bad
 * skip0. */
int secea_fp_mat_mul_packed_xor(uint64_t *C, const uint64_t *A, const secea_mat_packed *h, size_t m, int threads,
                                const uint8_t *key, uint64_t block0, unsigned skip0);

/* ---- classical polynomial kernels (csrc/poly/poly_classical.c) ----
 * Coefficient arrays are lowest degree first; lengths count coefficients. */
/* Batched product: out[c] (length la+lb-1) = a[c] (length la) * b[c] (length lb)
 * for c < count; b_stride = lb for per-row b, 0 to share one b.  Exact
 * 192-bit sums, one reduction per coefficient. la, lb >= 1. */
void secea_fp_poly_mul_classical(uint64_t *out, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, size_t b_stride, size_t count, uint64_t p);
/* a = q b + r with deg r < deg b; needs la >= lb >= 1 and b[lb-1] != 0.
 * q has la-lb+1 entries, r has lb-1 entries (r may be NULL if lb == 1).
 * Returns 0, or -1 if memory runs out. */
int secea_fp_poly_divrem_classical(uint64_t *q, uint64_t *r, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, uint64_t p);
/* Batched middle products: out[c][k] = sum_{j < lm} m[c][j] a[c][k + j] for
 * k < la - lm + 1 (the coefficients lm-1 .. la-1 of a[c] * rev(m[c])), with
 * m_stride = lm per row or 0 for one shared m.  la >= lm >= 1. */
void secea_fp_poly_midprod_batch(uint64_t *out, const uint64_t *a, size_t la, const uint64_t *m, size_t lm, size_t m_stride, size_t count, uint64_t p);
/* out[c*npts + j] = f_c(x[c*npts + j]) for c < count, j < npts (Horner);
 * f_c = f + c*lf; x_stride = npts for per-row points, 0 to share one set. */
void secea_fp_poly_eval_horner(uint64_t *out, const uint64_t *f, size_t lf, const uint64_t *x, size_t npts, size_t x_stride, size_t count, uint64_t p);
/* Euclid on (a, b), deg a > deg b (la > lb, a[la-1] != 0, b trimmed), until
 * the remainder has degree < stop_deg.
 * Outputs consecutive remainders r0 (degree >= stop_deg), r1 (< stop_deg) and
 * the matrix M with M (a, b)^T = (r0, r1)^T; every buffer holds la entries.
 * lens[0..5] receive the trimmed lengths of r0, r1, m00, m01, m10, m11
 * (0 for the zero polynomial).  Returns 0, or -1 if memory runs out. */
int secea_fp_poly_hgcd_classical(uint64_t *r0, uint64_t *r1, uint64_t *m00, uint64_t *m01, uint64_t *m10, uint64_t *m11, size_t *lens, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, size_t stop_deg, uint64_t p);

/* out (length lg-1) = base^e mod g for monic g of length lg >= 2 and base of
 * length lb (any); classical products and reductions (small moduli, e.g. the
 * bottom of root finding).  Returns 0, or -1 if memory runs out. */
int secea_fp_poly_powmod_classical(uint64_t *out, const uint64_t *base, size_t lb, uint64_t e, const uint64_t *g, size_t lg, uint64_t p);

/* Subproduct-tree sibling products on rows of length N (csrc/poly/poly_classical.c):
 * pair_mul: out[2i] = a[i] * f[2i+1], out[2i+1] = a[i] * f[2i];
 * cross:    out[i] = t[2i] * f[2i+1] + t[2i+1] * f[2i] (returns -1 if memory runs out). */
void secea_fp_tree_pair_mul(uint64_t *out, const uint64_t *a, const uint64_t *f, size_t pairs, size_t N, uint64_t p);
int secea_fp_tree_cross(uint64_t *out, const uint64_t *t, const uint64_t *f, size_t pairs, size_t N, uint64_t p);

/* ---- number-theoretic transforms (csrc/poly/ntt*.c) ---- */
/* A plan for length-2^logn transforms over F_p, where w is a primitive
 * 2^logn-th root of unity mod p (logn <= 30).  Supported: p = Goldilocks
 * (vectorised fast path) and any prime p < 2^63 with 2^logn | p - 1.
 * Returns NULL if memory runs out or the arguments are unsupported. */
typedef struct secea_ntt_plan secea_ntt_plan;
secea_ntt_plan *secea_ntt_plan_new(uint64_t p, uint64_t w, unsigned logn);
void secea_ntt_plan_free(secea_ntt_plan *plan);
/* In place on `count` contiguous vectors of length 2^logn.
 * forward: natural order in, bit-reversed order out:  out[bitrev(j)] = sum_i a[i] w^(ij).
 * inverse: bit-reversed order in, natural order out, scaled by 2^-logn,
 * so inverse(forward(a)) = a.  Entries must be < p; outputs are canonical. */
void secea_ntt_forward(const secea_ntt_plan *plan, uint64_t *a, size_t count);
void secea_ntt_inverse(const secea_ntt_plan *plan, uint64_t *a, size_t count);
/* a[i] = a[i] * b[i] mod p for i < n (the pointwise step between transforms). */
void secea_ntt_pointwise(const secea_ntt_plan *plan, uint64_t *a, const uint64_t *b, size_t n);
/* Tangent Graeffe transforms over Goldilocks (csrc/poly/graeffe.c), in place
 * on coefficient arrays a, b of length plan->n (degree < n) holding A + eps B.
 * odd: order r (odd, r | p - 1) with zeta a primitive r-th root of unity;
 * 2: `steps` transforms of order 2.  Return 0, -1 if memory runs out, -2 if
 * the plan is not for Goldilocks (or r is not odd and >= 3). */
int secea_gl_graeffe_odd(const secea_ntt_plan *plan, uint64_t *a, uint64_t *b, unsigned r, uint64_t zeta);
int secea_gl_graeffe2(const secea_ntt_plan *plan, uint64_t *a, uint64_t *b, unsigned steps);
/* Chinese remaindering for the three-prime NTT product (secea_fast.poly):
 * out[i] = X mod p where X is the unique integer in [0, q0 q1 q2) with
 * X = r0[i] mod q0, X = r1[i] mod q1, X = r2[i] mod q2, for the fixed primes
 * q0 = Goldilocks, q1 = SECEA_NTT_Q1, q2 = SECEA_NTT_Q2 (secea_ntt_crt_primes). */
void secea_ntt_crt_primes(uint64_t out3[3]);
void secea_ntt_crt3(uint64_t *out, const uint64_t *r0, const uint64_t *r1, const uint64_t *r2, size_t n, uint64_t p);

/* ---- multi-precision exponentiation, 8 lanes (csrc/bignum/mb8_powm.c) ---- */
/* 1 if secea_mb8_powm runs here (AVX-512 IFMA, backend not portable). */
int secea_mb8_available(void);
/* out = base^exp mod mod in each of 8 lanes, constant time in the values:
 * 52-bit limbs, limb-major (x[j * 8 + lane]), L limbs (L <= 128); base < 2 mod;
 * rr = 2^(104 L) mod mod; k0 = -mod^-1 mod 2^52; mod odd, 4 mod < 2^(52 L);
 * exp: ewords words x 8 lanes, the low ebits bits used.  Returns 0, -1 if
 * memory runs out, -2 if unavailable or the sizes are out of range. */
int secea_mb8_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L);
/* The same on 4 lanes (ymm registers): x[j * 4 + lane], exp ewords x 4.  One
 * decryption's two exponentiations cost half of what 8 lanes cost them. */
int secea_mb4_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L);

/* ---- one or two exponentiations across zmm lanes (csrc/bignum/hz_powm.c) ---- */
/* out = base^exp mod mod for ONE number, constant time in the values: limbs
 * in natural order (x[j] = 52-bit limb j), L limbs (L <= 128); base < 2 mod;
 * rr = 2^(104 L) mod mod; k0 = -mod^-1 mod 2^52; mod odd, 4 mod < 2^(52 L);
 * exp: ewords little-endian words, the low ebits bits used.  Returns 0, -1
 * if memory runs out, -2 if IFMA is unavailable or the sizes are out of range. */
int secea_hz_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod, uint64_t k0,
                  const uint64_t *exp, size_t ewords, size_t ebits, size_t L);
/* Two independent exponentiations interleaved (the same L and ebits):
 * out, base, rr, mod: 2 x L limbs (number-major, out[p * L + j]); k0[2];
 * exp: 2 x ewords words (exp[p * ewords + w]). */
int secea_hz2_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L);

/* ---- fixed-base exponentiation (csrc/bignum/fb_powm.c, portable C) ---- */
/* out = h^exp_i mod mod for count secret exponents and one base h given by
 * its table: nwin windows of 2^W entries of L 64-bit limbs (little-endian;
 * entry d of window i at table[((i << W) + d) * L]) holding
 * h^(d 2^(W i)) R mod mod, R = 2^(64 L), each below mod; mod odd, L limbs;
 * k0 = -mod^-1 mod 2^64; exp: count x ewords little-endian words
 * (number-major), the low nwin W bits used; out: count x L limbs.
 * Constant time in the exponents.  W in 1..8, L <= 256.  Returns 0, -1 if
 * memory runs out, -2 if a size is out of range or mod is even. */
int secea_fb_powm(uint64_t *out, const uint64_t *table, unsigned W, size_t nwin, const uint64_t *mod,
                  uint64_t k0, const uint64_t *exp, size_t ewords, size_t count, size_t L);
/* reps chained Montgomery products of L limbs (the product secea_fb_powm is
 * built from, for measuring its rate); returns a limb of the result,
 * UINT64_MAX if L is out of range. */
uint64_t secea_fb_mul_bench(size_t L, size_t reps);
/* 1 if secea_fb4_powm can run here (x86-64 with AVX2); under the portable
 * backend Python does not call it (secea_fast.paillier._fixedbase). */
int secea_fb4_available(void);
/* secea_fb_powm on four AVX2 lanes (four exponents at once), limbs of 26
 * bits: table, mod: L limbs of 26 bits per number (one per uint64_t),
 * R = 2^(26 L) with 4 mod < R; k0 = -mod^-1 mod 2^26; L in 2..512; out:
 * count x L64 64-bit words (the canonical results, which must fit L64
 * words).  Constant time in the exponents.  Returns 0, -1, or -2 (AVX2
 * unavailable, sizes out of range, mod even). */
int secea_fb4_powm(uint64_t *out, const uint64_t *table, unsigned W, size_t nwin, const uint64_t *mod,
                   uint64_t k0, const uint64_t *exp, size_t ewords, size_t count, size_t L, size_t L64);
/* reps chained products of L 26-bit limbs on the four lanes; UINT64_MAX if unavailable. */
uint64_t secea_fb4_mul_bench(size_t L, size_t reps);
/* out_i = bases_i^exp mod mod for count bases, one modulus and one secret
 * exponent (a batch of decryption halves), four per AVX2 call, radix 2^26:
 * bases, mod, rr = R^2 mod mod (R = 2^(26 L), 4 mod < R): L limbs of 26
 * bits per number (bases number-major, each below mod); k0 = -mod^-1 mod
 * 2^26; exp: ewords words, the low ebits bits used; out: count x L64
 * 64-bit words.  Constant time in the bases and the exponent.  Returns 0,
 * -1, or -2 (AVX2 unavailable, sizes out of range, mod even). */
int secea_vb4_powm(uint64_t *out, const uint64_t *bases, size_t count, const uint64_t *mod, const uint64_t *rr,
                   uint64_t k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L, size_t L64);

/* ---- AES-128 (csrc/prg/) ---- */
/* Keystream of AES-128 in CTR mode (NIST SP 800-38A): block i is
 * AES_key(iv + i), the 16-byte iv read as a big-endian 128-bit counter that
 * wraps mod 2^128.  Writes nbytes bytes to out. */
void secea_aes128_ctr(uint8_t *out, size_t nbytes, const uint8_t *key, const uint8_t *iv);
/* count uniform elements of F_p from the keystream of (key, iv) read from
 * byte skip (0 or 8) of the first block, by rejection (Prg.field's rule);
 * with base: out = coef base + r (negate 0) or coef base - r (negate 1) mod p.
 * Returns the 8-byte words consumed, UINT64_MAX if a base entry is >= p
 * (csrc/prg/prg_field.c). */
uint64_t secea_prg_field(uint64_t *out, size_t count, const uint8_t *key, const uint8_t *iv, unsigned skip, uint64_t p, const uint64_t *base, uint64_t coef, int negate);
/* out = (in, or coef * in mod p if coef != 1) XOR keystream (64-bit words
 * from byte skip, 0 or 8, of block iv); flags: SECEA_PRG_XOR_CHECK returns 1
 * if a result word is >= p, SECEA_PRG_XOR_STREAM writes out with
 * non-temporal stores (csrc/prg/prg_field.c). */
#define SECEA_PRG_XOR_CHECK 1
#define SECEA_PRG_XOR_STREAM 2
int secea_prg_xor(uint64_t *out, const uint64_t *in, size_t nwords, const uint8_t *key, const uint8_t *iv, unsigned skip, uint64_t p, uint64_t coef, int flags);
/* out = in with non-temporal stores (csrc/prg/prg_field.c) */
void secea_copy_stream(uint64_t *out, const uint64_t *in, size_t nwords);
/* Fixed point into Z_2^b (csrc/field/fixed_rows.c): out[i*d + k] =
 * rint(x[r*d + k] * scale) mod 2^b (two's complement, masked by mask),
 * r = rows[i] (rows NULL: r = i); rows with r < 0 are encoded from zeros
 * with the same work.  Returns 1 if a rounded value is outside [-lim, lim]
 * or NaN, 0 if all fit, SECEA_EINVAL if a row index is >= nx (x has nx
 * rows), SECEA_ENOMEM. */
int secea_fixed_encode_rows(uint64_t *out, const double *x, size_t nx, const int64_t *rows, size_t nrows, size_t d, double scale, double lim, uint64_t mask);
/* A random mp-subset of [0, m) preferring the n marked items (distinct,
 * < m), from m + mp random words (csrc/prg/subset.c): the mp elements j of
 * smallest ((words[j] >> 1) | [j unmarked] << 63, j), in ascending order,
 * permuted by the stable ascending order of words[m .. m + mp); idx[i] the
 * element, pos[i] its position in items or -1.  Returns 0, 1 if items has
 * duplicates, SECEA_EINVAL if an item is outside [0, m) or not
 * 1 <= mp <= m <= 2^31, SECEA_ENOMEM. */
int secea_priority_subset(int64_t *idx, int64_t *pos, const int64_t *items, size_t n, uint64_t m, uint64_t mp, const uint64_t *words);
/* ECB encryption of nblocks independent 16-byte blocks (known-answer tests,
 * fixed-key hashing).  out may alias in. */
void secea_aes128_ecb_encrypt(uint8_t *out, const uint8_t *in, size_t nblocks, const uint8_t *key);
/* The AES ceiling of one core with the selected variant, for benchmarks:
 * about nblocks block encryptions on registers only (VAES / AES-NI: 8
 * independent chains, no memory traffic; other variants: their ECB kernel
 * on a cache-resident buffer).  Returns a value derived from the results. */
uint64_t secea_aes_peak(size_t nblocks);

/* ---- distributed point functions (csrc/dpf/) ----
 * Two-party DPF of Boyle, Gilboa, Ishai (CCS 2016) split as SecEmb's
 * PathGen / PathEval / ConvertGen / ConvertEval; secea_fast.dpf documents
 * the construction.  A key body (little endian) is
 *     root (16 B: seed, t^(0) in bit 0) | L x s_CW (16 B, bit 0 zero)
 *     | t_CW^L mask (8 B, bit i-1 = level i) | t_CW^R mask (8 B)
 *     | ncw x final CW element (4 B each for Z_2^32, else 8 B),
 * a path body the same without the final CW (32 + 16 L bytes).  A state (or
 * final) is one 16-byte block: seed with t in bit 0.
 *
 * Every entry point takes the shape of its keys as one const struct, by
 * pointer (cffi checks its fields by name; no positional layout integers).
 * Entry points return 0, -1 if memory could not be allocated, or -2 if the
 * shape is outside the kernels' limits (levels > 64, early > 4, an unknown
 * group, a stride shorter than the body, an F_p modulus < 2, or a shape the
 * function does not take). */
#define SECEA_DPF_GROUP_U64 0
#define SECEA_DPF_GROUP_U32 1
#define SECEA_DPF_GROUP_FP 2
typedef struct {
    unsigned levels;     /* tree depth L = log_domain - early */
    unsigned early;      /* e: levels cut by early termination (0: the depth-n tree) */
    unsigned group;      /* SECEA_DPF_GROUP_U64 (Z_2^64), _U32 (Z_2^32) or _FP (F_p) */
    uint64_t modulus;    /* the prime p < 2^64 of group F_p; ignored otherwise */
    size_t ncw;          /* group elements of the final correction word: the payload length d,
                          * 2^e for early keys, 0 for path bodies (keygen writes paths only) */
    size_t stride;       /* bytes from one key body to the next (at least the body: path
                          * functions also walk the path part of key bodies) */
} secea_dpf_shape;
/* Key generation for count keys: alphas are path indices (< 2^L), betas
 * count x ncw elements (reduced; for early keys beta sits at position
 * alpha mod 2^e), rand 32 fresh random bytes per key; bodies are written
 * shape->stride bytes apart.  ncw = 0 writes path bodies only.  finals (NULL
 * or 32 B per key) receives the two final states (party 0 then party 1),
 * i.e. PathGen's (s_0^(n), s_1^(n), t_1^(n)). */
int secea_dpf_gen(const secea_dpf_shape *shape, uint8_t *keys0, uint8_t *keys1, uint8_t *finals, const uint64_t *alphas, const uint64_t *betas, const uint8_t *rand, size_t count, int threads);
/* One key of a scalar payload (shape->ncw = 1, or 2^e for early keys), on
 * the calling thread: alpha < 2^(levels + early) is the point itself (the
 * kernel places beta at alpha mod 2^e), rand 32 fresh random bytes.  The
 * same keys as secea_dpf_gen on the same inputs; what a one-key call costs
 * without arrays to marshal. */
int secea_dpf_gen_one(const secea_dpf_shape *shape, uint8_t *key0, uint8_t *key1, uint64_t alpha, uint64_t beta, const uint8_t *rand);
/* Conversion domains.  Convert_D(s) is the stream of blocks
 * H_V(s xor (j + D 2^64)), j = 0, 1, ...: the public domain D sits in the
 * high word, the block counter j in the low word, so two domains never hash
 * the same input.  D = 0 is the conversion of secea_dpf_gen and every key
 * evaluation; a path that carries a second payload (SecEmb's aggregation on
 * its retrieval path) converts in another domain, so that the two final
 * correction words are masked by independent values and their difference
 * reveals nothing about the payloads. */
/* ConvertGen: cw (count x ncw) from finals (32 B per key) and betas, in
 * conversion domain `domain` (shape: group, modulus, ncw). */
int secea_dpf_convert_gen(const secea_dpf_shape *shape, uint64_t *cw, const uint8_t *finals, const uint64_t *betas, size_t count, uint64_t domain);
/* Point evaluation: point i uses key i / per_key and party[i / per_key]; out
 * has npoints x ncw values (npoints if early > 0). */
int secea_dpf_eval_points(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party, const uint64_t *xs, size_t npoints, size_t per_key, int threads);
/* PathEval: states (npoints x 16 B) of the leaves xs[i] (< 2^L); paths may
 * be path or key bodies (shape: levels, stride), point i uses i / per_key. */
int secea_dpf_path_eval(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs, size_t npoints, size_t per_key, int threads);
/* The two above on the reference walk (one hash_sel pass per tree level
 * through memory) instead of the interleaved one: the same outputs bit for
 * bit, for tests and benchmarks. */
int secea_dpf_eval_points_ref(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party, const uint64_t *xs, size_t npoints, size_t per_key, int threads);
int secea_dpf_path_eval_ref(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs, size_t npoints, size_t per_key, int threads);
/* ConvertEval: out (n x ncw) = (-1)^party (Convert_domain(s_i) + t_i * cw)
 * (shape: group, modulus, ncw). */
int secea_dpf_convert_eval(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *states, size_t n, int party, const uint64_t *cw, uint64_t domain);
/* Full-domain evaluation of count keys at x < m (m <= 2^(L+e)): out is
 * count x m x ncw (count x m if early > 0). */
int secea_dpf_eval_full(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party, size_t count, uint64_t m, int threads);
/* States of all leaves j < m (count x m x 16 B; shape: levels, stride). */
int secea_dpf_path_eval_full(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, size_t count, uint64_t m, int threads);
/* Over Z_2^64 (shape: group 0, ncw = d):
 * acc[j*d + k] += sum_c (-1)^party[c] (Convert_domain(s_cj)_k + t_cj * cws[c*d + k])
 * for j < m, k < d; states count x m x 16 B (from secea_dpf_path_eval_full). */
int secea_dpf_convert_accumulate(const secea_dpf_shape *shape, uint64_t *acc, const uint8_t *states, const uint8_t *party, const uint64_t *cws, size_t count, uint64_t m, uint64_t domain, int threads);
/* The aggregation fused: walks each path (shape: levels, stride) to its
 * leaves j < m and converts them at once, nothing stored: over Z_2^64
 * (group 0; acc uint64) or Z_2^32 (group 1; acc uint32, cws < 2^32), d = ncw:
 * acc[j*d + k] += (-1)^party sum_c (Convert_domain(s_cj)_k + t_cj * cws[c*d + k]). */
int secea_dpf_path_convert_accumulate(const secea_dpf_shape *shape, void *acc, const uint8_t *paths, int party, const uint64_t *cws, size_t count, uint64_t m, uint64_t domain, int threads);
/* Over Z_2^64, scalar keys (shape: group 0, ncw 1 or 2^e):
 * out[c*d + k] = sum_{x<m} Eval(key_c, x) * table[x*d + k]. */
int secea_dpf_eval_full_dot(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party, size_t count, const uint64_t *table, uint64_t m, size_t d, int threads);
/* Two-server PIR on path keys (Boyle, Gilboa, Ishai 2016): the control bits of
 * the leaves select rows, out[c*d + k] = XOR_{x<m, t_cx = 1} table[x*d + k];
 * the two servers' outputs XOR to row alpha (t_0x xor t_1x = [x = alpha]). */
int secea_dpf_path_xor_rows(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *paths, size_t count, const uint64_t *table, uint64_t m, size_t d, int threads);
/* The server kernels above (path_xor_rows, eval_full_dot,
 * path_convert_accumulate) walk the top levels of several keys' trees
 * interleaved (on = 1, the default) or one tree at a time (on = 0: the
 * reference walk, bit-identical; tests and benchmarks compare the two).
 * Process-wide; returns the previous setting. */
int secea_dpf_set_interleave(int on);
/* secea_dpf_path_xor_rows as a Four-Russians GF(2) product indexed by the
 * table's bits (csrc/dpf/xor4r.c; x86 with AVX2, interleaved walk on, the
 * table at most 256 MiB): mode 0 off (the masked-XOR kernels), 1 auto (the
 * default: whole 256-key batches and a last batch of at least 128 keys, on
 * CPUs without AVX-512), 2 every key where the CPU has AVX2 (tests); values
 * outside 0..2 are clamped.  The same outputs bit for bit.  Process-wide;
 * returns the previous mode. */
int secea_dpf_set_xor4r(int mode);
/* The Four-Russians kernel's leaf level under the "vaes256" DPF variant:
 * 1 (the default) hashes the last tree level straight into the control
 * bits the product consumes (no leaf stored), 0 the reference twin (the
 * variant's expand, then a gather of the leaves' bits).  The same outputs
 * bit for bit; other variants always take the twin.  Process-wide; returns
 * the previous setting (0 or 1). */
int secea_dpf_set_xor4r_walk(int fused);
/* The fixed-key hash H_which (0 = left, 1 = right, 2 = convert) on
 * nblocks 16-byte blocks (known answers against the Python twin). */
void secea_dpf_hash(uint8_t *out, const uint8_t *in, size_t nblocks, int which);
/* Selects the DPF variant by name ("vaes", "vaes256", "aesni", "armce",
 * "portable") if this CPU runs it (tests compare variants; secea_dispatch_init resets the choice).
 * Returns 0, or -1 with the selection unchanged. */
int secea_dpf_select_variant(const char *name);
/* The AES ceiling of one core for the DPF variant in force, for benchmarks:
 * for "vaes256" nblocks encryptions on ymm registers (8 chains of 2 blocks,
 * twice secea_aes_peak's AES-NI rate on such a CPU); else secea_aes_peak. */
uint64_t secea_dpf_aes_peak(size_t nblocks);
/* The point walk's ceiling on the DPF variant in force, for benchmarks:
 * npoints paths of depth 32 (32 AES blocks each) walked by the walk
 * secea_dpf_eval_points uses, over 16 synthetic key bodies that stay in L1
 * (the walk's instructions and loads per level, without key memory traffic,
 * per-call preparation or conversion).  Returns a checksum of the leaf
 * states (the same on every variant for the same npoints). */
uint64_t secea_dpf_points_peak(size_t npoints);
/* What bounds the "vaes256" fused conversion (benchmarks,
 * csrc/dpf/peak_x86_v256.c): nblocks AES blocks in independent groups of
 * `chains` ymm registers (8, 12 or 16), mix 0 AES only with the round keys
 * read from memory per round and group, mix 1 conv_acc_v256's per-register
 * instruction mix on `rows` accumulator rows of 256 bytes cycled (2..4096;
 * 16 rows stay in L1), mix 2 conv_acc_v256 itself on those rows, mixes 3,
 * 4 and 5 the AES ceiling's loop (round keys from memory) plus 0, 2 or 6
 * AVX2 operations per register.  *check receives a checksum.  SECEA_EINVAL for other
 * arguments or where the DPF variant "vaes256" cannot run. */
int secea_dpf_convacc_peak(size_t nblocks, int chains, int mix, size_t rows, uint64_t *check);

/* ---- half-GCD (csrc/poly/hgcd.c) ----
 * hgcd(a, b) for deg a = n > deg b (la >= 1, a[la-1] != 0, lb < la; b may
 * carry trailing zeros): the matrix M of the Euclidean steps with
 * M (a, b)^T = (c, d)^T, deg c >= ceil(n/2) > deg d (the identity if
 * deg b < ceil(n/2)).  m00..m11 hold at least la/2 + 1 entries each; lens[0..3]
 * receive their trimmed lengths.  If r0 and r1 are both non-NULL (la entries
 * each) they receive c and d, lengths in lens[4], lens[5].  base_deg: classical
 * Euclid at and below this degree (0 = built-in default).  Supported: p =
 * Goldilocks, or a prime p < 2^63 with 2^ceil(log2(2 la)) | p - 1; and
 * 2 la <= 2^30.  Returns 0, -1 if memory runs out, -2 if unsupported,
 * -3 on an internal inconsistency (a bug). */
int secea_fp_poly_hgcd(uint64_t *m00, uint64_t *m01, uint64_t *m10, uint64_t *m11, uint64_t *r0, uint64_t *r1, size_t *lens, const uint64_t *a, size_t la, const uint64_t *b, size_t lb, uint64_t p, size_t base_deg);

#endif
