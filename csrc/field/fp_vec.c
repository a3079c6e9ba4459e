/* Vectorised arithmetic in F_p for any prime 2 <= p < 2^64.
 *
 * Generic moduli reduce a 128-bit product by Moller-Granlund division with a
 * precomputed reciprocal (internal.h); the Goldilocks prime 2^64 - 2^32 + 1 has
 * a dedicated reduction using 2^64 = 2^32 - 1 and 2^96 = -1 (mod p).
 * Primes below 2^50 (the default embedding prime) multiply through a
 * double-precision quotient estimate (internal.h, secea_mulmod_f64).
 * Each loop body is written once (FP_VEC_BODIES) and instantiated three
 * times: portable, AVX2+BMI2 (mulx, vectorised add/sub) and AVX-512DQ
 * (vectorised 64-bit multiplies and conversions for the f64 path), chosen at
 * run time by secea__field_choose (one const ops table per variant).
 */
#include "secea.h"
#include "internal.h"

#define FP_VEC_BODIES(SFX, ATTR)                                                        \
ATTR static void add_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,         \
                           size_t n, uint64_t p)                                        \
{                                                                                       \
    for (size_t i = 0; i < n; i++) {                                                    \
        uint64_t s = a[i] + b[i];                                                       \
        out[i] = (s < a[i] || s >= p) ? s - p : s;                                      \
    }                                                                                   \
}                                                                                       \
ATTR static void sub_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,         \
                           size_t n, uint64_t p)                                        \
{                                                                                       \
    for (size_t i = 0; i < n; i++) {                                                    \
        uint64_t d = a[i] - b[i];                                                       \
        out[i] = a[i] >= b[i] ? d : d + p;                                              \
    }                                                                                   \
}                                                                                       \
ATTR static size_t first_ge_##SFX(const uint64_t *a, size_t n, uint64_t p)             \
{                                                                                       \
    /* branch-free OR of the comparisons (vectorised); the index only on failure */    \
    uint64_t bad = 0;                                                                   \
    for (size_t i = 0; i < n; i++) bad |= (uint64_t)(a[i] >= p);                        \
    if (!bad) return 0;                                                                 \
    for (size_t i = 0; i < n; i++) if (a[i] >= p) return i + 1;                         \
    return 0;                                                                           \
}                                                                                       \
/* add/sub/neg with the range check in the same loop (the managed API): */       \
/* 0, or 1 (a) / 2 (b) if that operand has an entry >= p; out then garbage */       \
ATTR static int add_chk_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,      \
                              size_t n, uint64_t p)                                     \
{                                                                                       \
    uint64_t bad = 0;                                                                   \
    for (size_t i = 0; i < n; i++) {                                                    \
        uint64_t x = a[i], y = b[i], s = x + y;                                         \
        bad |= (uint64_t)(x >= p) | (uint64_t)(y >= p);                                 \
        out[i] = (s < x || s >= p) ? s - p : s;                                         \
    }                                                                                   \
    return bad ? (first_ge_##SFX(a, n, p) ? 1 : 2) : 0;                                 \
}                                                                                       \
ATTR static int sub_chk_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,      \
                              size_t n, uint64_t p)                                     \
{                                                                                       \
    uint64_t bad = 0;                                                                   \
    for (size_t i = 0; i < n; i++) {                                                    \
        uint64_t x = a[i], y = b[i], d = x - y;                                         \
        bad |= (uint64_t)(x >= p) | (uint64_t)(y >= p);                                 \
        out[i] = x >= y ? d : d + p;                                                    \
    }                                                                                   \
    return bad ? (first_ge_##SFX(a, n, p) ? 1 : 2) : 0;                                 \
}                                                                                       \
ATTR static int neg_chk_##SFX(uint64_t *out, const uint64_t *a, size_t n, uint64_t p)   \
{                                                                                       \
    uint64_t bad = 0;                                                                   \
    for (size_t i = 0; i < n; i++) {                                                    \
        uint64_t x = a[i];                                                              \
        bad |= (uint64_t)(x >= p);                                                      \
        out[i] = x ? p - x : 0;                                                         \
    }                                                                                   \
    return bad ? 1 : 0;                                                                 \
}                                                                                       \
ATTR static int mul_chk_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,      \
                              size_t n, uint64_t p)                                     \
{                                                                                       \
    uint64_t bad = 0;                                                                   \
    if (p == SECEA_GOLDILOCKS) {                                                        \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i], y = b[i];                                                \
            bad |= (uint64_t)(x >= p) | (uint64_t)(y >= p);                             \
            out[i] = secea_gl_mul(x, y);                                                \
        }                                                                               \
    } else if (p < SECEA_F64_MAX_P) {                                                   \
        const double pinv = 1.0 / (double)p;                                            \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i], y = b[i];                                                \
            bad |= (uint64_t)(x >= p) | (uint64_t)(y >= p);                             \
            out[i] = secea_mulmod_f64(x, y, p, pinv);                                   \
        }                                                                               \
    } else {                                                                            \
        secea_modctx c; secea_modctx_init(&c, p);                                       \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i], y = b[i];                                                \
            bad |= (uint64_t)(x >= p) | (uint64_t)(y >= p);                             \
            out[i] = secea_mulmod(&c, x, y);                                            \
        }                                                                               \
    }                                                                                   \
    return bad ? (first_ge_##SFX(a, n, p) ? 1 : 2) : 0;                                 \
}                                                                                       \
ATTR static int mul_scalar_chk_##SFX(uint64_t *out, const uint64_t *a, uint64_t k,      \
                                     size_t n, uint64_t p)                              \
{                                                                                       \
    uint64_t bad = 0;                                                                   \
    if (k >= p) return 2;                                                               \
    if (p == SECEA_GOLDILOCKS) {                                                        \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i];                                                          \
            bad |= (uint64_t)(x >= p);                                                  \
            out[i] = secea_gl_mul(x, k);                                                \
        }                                                                               \
    } else if (p < SECEA_F64_MAX_P) {                                                   \
        const double pinv = 1.0 / (double)p;                                            \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i];                                                          \
            bad |= (uint64_t)(x >= p);                                                  \
            out[i] = secea_mulmod_f64(x, k, p, pinv);                                   \
        }                                                                               \
    } else {                                                                            \
        secea_modctx c; secea_modctx_init(&c, p);                                       \
        for (size_t i = 0; i < n; i++) {                                                \
            uint64_t x = a[i];                                                          \
            bad |= (uint64_t)(x >= p);                                                  \
            out[i] = secea_mulmod(&c, x, k);                                            \
        }                                                                               \
    }                                                                                   \
    return bad ? 1 : 0;                                                                 \
}                                                                                       \
ATTR static void neg_##SFX(uint64_t *out, const uint64_t *a, size_t n, uint64_t p)      \
{                                                                                       \
    for (size_t i = 0; i < n; i++) out[i] = a[i] ? p - a[i] : 0;                        \
}                                                                                       \
ATTR static void mul_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,         \
                           size_t n, uint64_t p)                                        \
{                                                                                       \
    if (p == SECEA_GOLDILOCKS) {                                                        \
        for (size_t i = 0; i < n; i++) out[i] = secea_gl_mul(a[i], b[i]);               \
        return;                                                                         \
    }                                                                                   \
    if (p < SECEA_F64_MAX_P) {                                                          \
        const double pinv = 1.0 / (double)p;                                            \
        for (size_t i = 0; i < n; i++) out[i] = secea_mulmod_f64(a[i], b[i], p, pinv);  \
        return;                                                                         \
    }                                                                                   \
    secea_modctx c; secea_modctx_init(&c, p);                                           \
    for (size_t i = 0; i < n; i++) out[i] = secea_mulmod(&c, a[i], b[i]);               \
}                                                                                       \
ATTR static void mul_scalar_##SFX(uint64_t *out, const uint64_t *a, uint64_t k,         \
                                  size_t n, uint64_t p)                                 \
{                                                                                       \
    if (p == SECEA_GOLDILOCKS) {                                                        \
        for (size_t i = 0; i < n; i++) out[i] = secea_gl_mul(a[i], k);                  \
        return;                                                                         \
    }                                                                                   \
    if (p < SECEA_F64_MAX_P) {                                                          \
        const double pinv = 1.0 / (double)p;                                            \
        for (size_t i = 0; i < n; i++) out[i] = secea_mulmod_f64(a[i], k, p, pinv);     \
        return;                                                                         \
    }                                                                                   \
    secea_modctx c; secea_modctx_init(&c, p);                                           \
    for (size_t i = 0; i < n; i++) out[i] = secea_mulmod(&c, a[i], k);                  \
}                                                                                       \
ATTR static void dot_rows_##SFX(uint64_t *out, const uint64_t *a, const uint64_t *b,    \
                                size_t rows, size_t len, size_t bs, uint64_t p)        \
{                                                                                       \
    secea_modctx c; secea_modctx_init(&c, p);                                           \
    for (size_t r = 0; r < rows; r++) {                                                 \
        const uint64_t *x = a + r * len, *y = b + r * bs;                               \
        secea_u128 acc0 = 0, acc1 = 0;                                                  \
        uint64_t top = 0;                                                               \
        size_t i = 0;                                                                   \
        for (; i + 1 < len; i += 2) {                                                   \
            secea_u128 t0 = (secea_u128)x[i] * y[i];                                    \
            secea_u128 t1 = (secea_u128)x[i + 1] * y[i + 1];                            \
            acc0 += t0; top += acc0 < t0;                                               \
            acc1 += t1; top += acc1 < t1;                                               \
        }                                                                               \
        if (i < len) {                                                                  \
            secea_u128 t0 = (secea_u128)x[i] * y[i];                                    \
            acc0 += t0; top += acc0 < t0;                                               \
        }                                                                               \
        acc0 += acc1; top += acc0 < acc1;                                               \
        out[r] = secea_mod192(&c, top, (uint64_t)(acc0 >> 64), (uint64_t)acc0);               \
    }                                                                                   \
}

FP_VEC_BODIES(portable, )
#if SECEA_X86
FP_VEC_BODIES(avx2, SECEA_TARGET("avx2,bmi2"))
FP_VEC_BODIES(avx512, SECEA_TARGET("avx512f,avx512dq,avx512vl,avx2,bmi2"))
#endif

typedef void (*binop_fn)(uint64_t *, const uint64_t *, const uint64_t *, size_t, uint64_t);
typedef void (*unop_fn)(uint64_t *, const uint64_t *, size_t, uint64_t);
typedef void (*scal_fn)(uint64_t *, const uint64_t *, uint64_t, size_t, uint64_t);
typedef void (*dot_fn)(uint64_t *, const uint64_t *, const uint64_t *, size_t, size_t, size_t, uint64_t);
typedef size_t (*scan_fn)(const uint64_t *, size_t, uint64_t);
typedef int (*binchk_fn)(uint64_t *, const uint64_t *, const uint64_t *, size_t, uint64_t);
typedef int (*unchk_fn)(uint64_t *, const uint64_t *, size_t, uint64_t);
typedef int (*scalchk_fn)(uint64_t *, const uint64_t *, uint64_t, size_t, uint64_t);

struct secea__field_ops {
    binop_fn add, sub, mul;
    unop_fn neg;
    scal_fn mul_scalar;
    dot_fn dot_rows;
    scan_fn first_ge;
    binchk_fn add_chk, sub_chk, mul_chk;
    unchk_fn neg_chk;
    scalchk_fn mul_scalar_chk;
    const char *name;
};

static const struct secea__field_ops fp_portable = {
    add_portable, sub_portable, mul_portable, neg_portable, mul_scalar_portable,
    dot_rows_portable, first_ge_portable, add_chk_portable, sub_chk_portable, mul_chk_portable,
    neg_chk_portable, mul_scalar_chk_portable, "portable"};

/* the ops of the table in force (internal.h, "run-time CPU dispatch") */
#define FP (*secea__kernels_now()->field)

#if SECEA_X86
#include <immintrin.h>
/* out = a k mod p for p < 2^50, k < p, a[i] < p, by Shoup's method in 52-bit
 * IFMA arithmetic (Harvey, J. Symb. Comp. 60, 2014): with k' = floor(k 2^52
 * / p) and q = floor(a k' / 2^52), a k - q p lies in [0, 2p) and 2p < 2^52,
 * so it is the low 52 bits of a k minus those of q p; one masked subtraction
 * makes it canonical.  Three IFMA per 8 products, against the double
 * quotient estimate's conversions (0.56 ns per product, measured on what
 * was then the SecEA query stream's scaling). */
SECEA_TARGET("avx512f,avx512ifma")
static void mul_scalar_shoup52(uint64_t *out, const uint64_t *a, uint64_t k, size_t n, uint64_t p)
{
    const uint64_t ks = (uint64_t)(((secea_u128)k << 52) / p);
    const __m512i kv = _mm512_set1_epi64((long long)k), ksv = _mm512_set1_epi64((long long)ks);
    const __m512i pv = _mm512_set1_epi64((long long)p), mask = _mm512_set1_epi64((long long)((1ULL << 52) - 1));
    const __m512i zero = _mm512_setzero_si512();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i x = _mm512_loadu_si512((const void *)(a + i));
        __m512i q = _mm512_madd52hi_epu64(zero, x, ksv);
        __m512i r = _mm512_sub_epi64(_mm512_madd52lo_epu64(zero, x, kv), _mm512_madd52lo_epu64(zero, q, pv));
        r = _mm512_and_si512(r, mask);
        r = _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(r, pv), r, pv);
        _mm512_storeu_si512((void *)(out + i), r);
    }
    const double pinv = 1.0 / (double)p;
    for (; i < n; i++) out[i] = secea_mulmod_f64(a[i], k, p, pinv);
}

/* The AVX-512 variant's products: Goldilocks through the 8-lane product of
 * csrc/common/gl_avx512.c (3.5x the scalar mulx loop of mul_avx512), other primes
 * through the generated bodies; by a scalar with IFMA, p < 2^50 by Shoup. */
static void mul_avx512_v(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p)
{
    if (p == SECEA_GOLDILOCKS) secea__gl_mul_avx512(out, a, b, n);
    else mul_avx512(out, a, b, n, p);
}

static void mul_scalar_avx512_v(uint64_t *out, const uint64_t *a, uint64_t k, size_t n, uint64_t p)
{
    if (p == SECEA_GOLDILOCKS) secea__gl_mul_scalar_avx512(out, a, k, n);
    else mul_scalar_avx512(out, a, k, n, p);
}

static void mul_scalar_avx512_ifma(uint64_t *out, const uint64_t *a, uint64_t k, size_t n, uint64_t p)
{
    if (p < SECEA_F64_MAX_P && k < p) mul_scalar_shoup52(out, a, k, n, p);
    else mul_scalar_avx512_v(out, a, k, n, p);
}
#endif

/* The AVX-512 variant's Goldilocks products and its scalar products go
 * through routes written outside the generated bodies (gl_avx512.c, Shoup in
 * IFMA): there the check scans each chunk of 2048 entries (16 KiB) just
 * before the product reads it, which keeps those routes (3.5x the fused
 * scalar loop for Goldilocks) at the cost of the scan.  Not measured on an
 * AVX-512 machine yet: the figures above are AVX2. */
#define FP_CHECK_CHUNK 2048

#if SECEA_X86
static int mul_scalar_chk_chunked(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p,
                                  scal_fn mul_scalar)
{
    if (c >= p) return 2;
    for (size_t i = 0; i < n; i += FP_CHECK_CHUNK) {
        size_t m = n - i < FP_CHECK_CHUNK ? n - i : FP_CHECK_CHUNK;
        if (first_ge_avx512(a + i, m, p)) return 1;
        mul_scalar(out + i, a + i, c, m, p);
    }
    return 0;
}

static int mul_scalar_chk_avx512_v(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p)
{
    return mul_scalar_chk_chunked(out, a, c, n, p, mul_scalar_avx512_v);
}

static int mul_scalar_chk_avx512_ifma(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p)
{
    return mul_scalar_chk_chunked(out, a, c, n, p, mul_scalar_avx512_ifma);
}

static int mul_chk_avx512_v(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p)
{
    if (p != SECEA_GOLDILOCKS) return mul_chk_avx512(out, a, b, n, p);
    for (size_t i = 0; i < n; i += FP_CHECK_CHUNK) {
        size_t m = n - i < FP_CHECK_CHUNK ? n - i : FP_CHECK_CHUNK;
        if (first_ge_avx512(a + i, m, p)) return 1;
        if (first_ge_avx512(b + i, m, p)) return 2;
        secea__gl_mul_avx512(out + i, a + i, b + i, m);
    }
    return 0;
}

static const struct secea__field_ops fp_avx512 = {
    add_avx512, sub_avx512, mul_avx512_v, neg_avx512, mul_scalar_avx512_v,
    dot_rows_avx512, first_ge_avx512, add_chk_avx512, sub_chk_avx512, mul_chk_avx512_v,
    neg_chk_avx512, mul_scalar_chk_avx512_v, "avx512"};
static const struct secea__field_ops fp_avx512_ifma = {     /* Shoup products by a scalar */
    add_avx512, sub_avx512, mul_avx512_v, neg_avx512, mul_scalar_avx512_ifma,
    dot_rows_avx512, first_ge_avx512, add_chk_avx512, sub_chk_avx512, mul_chk_avx512_v,
    neg_chk_avx512, mul_scalar_chk_avx512_ifma, "avx512"};
static const struct secea__field_ops fp_avx2 = {
    add_avx2, sub_avx2, mul_avx2, neg_avx2, mul_scalar_avx2,
    dot_rows_avx2, first_ge_avx2, add_chk_avx2, sub_chk_avx2, mul_chk_avx2,
    neg_chk_avx2, mul_scalar_chk_avx2, "avx2"};
#endif

void secea__field_choose(secea__kernels *k)
{
    const secea__cpu_features *c = &k->cpu;
    k->field = &fp_portable;
    k->field_avx512 = 0;
    if (k->portable) return;
#if SECEA_X86
    if (c->avx512dq && c->bmi2) {
        k->field = c->avx512ifma ? &fp_avx512_ifma : &fp_avx512;
        k->field_avx512 = 1;
    } else if (c->avx2 && c->bmi2) {
        k->field = &fp_avx2;
    }
#else
    (void)c;
#endif
}

const char *secea__field_variant(const secea__kernels *k) { return k->field->name; }

void secea_fp_add(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { FP.add(out, a, b, n, p); }
void secea_fp_sub(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { FP.sub(out, a, b, n, p); }
void secea_fp_neg(uint64_t *out, const uint64_t *a, size_t n, uint64_t p) { FP.neg(out, a, n, p); }
void secea_fp_mul(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { FP.mul(out, a, b, n, p); }
void secea_fp_mul_scalar(uint64_t *out, const uint64_t *a, uint64_t k, size_t n, uint64_t p) { FP.mul_scalar(out, a, k, n, p); }
void secea_fp_dot_rows(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t rows, size_t len, size_t b_stride, uint64_t p)
{
    FP.dot_rows(out, a, b, rows, len, b_stride, p);
}

/* ---- checked elementwise kernels (the managed Python API's one pass) ----
 * Validation fused with the work, so the range check costs no second trip
 * through memory: a separate scan of two 8 MB operands cost a third of
 * field.add's time, and scanning each 16 KiB chunk just before the kernel
 * read it from cache cost as much as two whole passes (measured on
 * Goldilocks products: raw 2.4 ms, chunked 3.5, fused 2.6).  The entry
 * points return 0, or 1 (a) / 2 (b, or c >= p) naming the first operand
 * with an entry >= p (out is then unspecified; Python rescans for the
 * message). */
size_t secea_fp_first_ge(const uint64_t *a, size_t n, uint64_t p) { return FP.first_ge(a, n, p); }

int secea_fp_add_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { return FP.add_chk(out, a, b, n, p); }
int secea_fp_sub_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { return FP.sub_chk(out, a, b, n, p); }
int secea_fp_neg_checked(uint64_t *out, const uint64_t *a, size_t n, uint64_t p) { return FP.neg_chk(out, a, n, p); }
int secea_fp_mul_checked(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p) { return FP.mul_chk(out, a, b, n, p); }
int secea_fp_mul_scalar_checked(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p) { return FP.mul_scalar_chk(out, a, c, n, p); }

/* ---- exponentiation and inversion (latency bound; one scalar path) ---- */
void secea_fp_pow(uint64_t *out, const uint64_t *a, const uint64_t *e, size_t n, uint64_t p)
{
    secea_modctx c; secea_modctx_init(&c, p);
    for (size_t i = 0; i < n; i++) out[i] = secea_powmod(&c, a[i], e[i]);
}

void secea_fp_pow_scalar(uint64_t *out, const uint64_t *a, uint64_t e, size_t n, uint64_t p)
{
    secea_modctx c; secea_modctx_init(&c, p);
    for (size_t i = 0; i < n; i++) out[i] = secea_powmod(&c, a[i], e);
}

size_t secea_fp_batch_inv(uint64_t *out, const uint64_t *a, size_t n, uint64_t p)
{
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] == 0) return i + 1;
    secea_modctx c; secea_modctx_init(&c, p);
    /* out[i] = a[0] * ... * a[i]  (prefix products; out may alias a, so
     * keep the running product and read a[i] before writing out[i]) */
    uint64_t run = 1;
    for (size_t i = 0; i < n; i++) {
        run = secea_mulmod_any(&c, run, a[i]);
        out[i] = run;
    }
    uint64_t inv = secea_powmod(&c, run, p - 2);   /* Fermat: run^(p-2) = run^-1 */
    for (size_t i = n - 1; i > 0; i--) {
        uint64_t ai = a[i];                     /* read before out[i] overwrites it */
        uint64_t r = secea_mulmod_any(&c, inv, out[i - 1]);
        inv = secea_mulmod_any(&c, inv, ai);
        out[i] = r;
    }
    out[0] = inv;
    return 0;
}

void secea_fp_reduce(uint64_t *out, const uint64_t *x, size_t n, uint64_t p)
{
    secea_modctx c; secea_modctx_init(&c, p);
    for (size_t i = 0; i < n; i++) out[i] = secea_mod64(&c, x[i]);
}
