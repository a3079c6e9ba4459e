/* Candidate NEON field kernels for 64-bit ARM next to the scalar C they would
 * replace, for bench/arm_mca.py: it cross-compiles this file, has llvm-mca
 * estimate each inner loop's cycles on several ARM core models, and runs
 * main() under qemu-aarch64, which checks every candidate against its scalar
 * twin bit for bit (a candidate that is wrong is not worth timing).
 *
 * Each kernel is one loop; *_neon loops take 2 elements (one 128-bit
 * register of 64-bit lanes) per iteration, n even.  The scalar twins are
 * written as in csrc/ (no restrict: out may alias an input), so gcc compiles
 * them as it compiles the package.
 *   add       a + b mod p                       (csrc/field/fp_vec.c add_*)
 *   glmul     a b mod 2^64 - 2^32 + 1           (internal.h secea_gl_mul)
 *   f64mul    a b mod p, p < 2^50               (internal.h secea_mulmod_f64);
 *             NEON: the product split exactly by FMA, hi = fl(ab),
 *             lo = fma(a, b, -hi), q = floor(hi / p) from a reciprocal,
 *             r = fma(-q, p, hi) + lo in (-p, 2p), all exact in doubles
 *   mm        the matrix product's multiply-accumulate (csrc/linalg/matmul.c
 *             SCALAR_KERNEL): scalar 2 x 2 blocks of 192-bit sums (4
 *             products per iteration); NEON, p < 2^50: 25-bit limbs,
 *             UMLAL into 64-bit lanes, 2 rows x 4 columns (8 products per
 *             iteration; exact for up to 2^13 terms). */
#include <arm_neon.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;
#define GL 0xFFFFFFFF00000001ULL
#define NOINL __attribute__((noinline))

/* ------------------------------------------------------------------ add */
NOINL void add_scalar(uint64_t *o, const uint64_t *a, const uint64_t *b, size_t n,
                      uint64_t p)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t s = a[i] + b[i];
        o[i] = (s < a[i] || s >= p) ? s - p : s;
    }
}

NOINL void add_neon(uint64_t *restrict o, const uint64_t *restrict a, const uint64_t *restrict b, size_t n,
                    uint64_t p)
{
    const uint64x2_t vp = vdupq_n_u64(p);
    for (size_t i = 0; i < n; i += 2) {
        uint64x2_t x = vld1q_u64(a + i), y = vld1q_u64(b + i), s = vaddq_u64(x, y);
        uint64x2_t m = vorrq_u64(vcltq_u64(s, x), vcgeq_u64(s, vp));
        vst1q_u64(o + i, vsubq_u64(s, vandq_u64(m, vp)));
    }
}

/* ---------------------------------------------------------------- glmul */
static inline uint64_t gl_reduce(u128 x)
{
    const uint64_t eps = 0xFFFFFFFFULL;
    uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    uint64_t hh = hi >> 32, hl = hi & eps;
    uint64_t t0 = lo - hh;
    t0 -= eps & (0 - (uint64_t)(lo < hh));
    uint64_t t1 = hl * eps;
    uint64_t t2 = t0 + t1;
    t2 += eps & (0 - (uint64_t)(t2 < t1));
    t2 -= GL & (0 - (uint64_t)(t2 >= GL));
    return t2;
}

NOINL void glmul_scalar(uint64_t *o, const uint64_t *a, const uint64_t *b, size_t n,
                        uint64_t p)
{
    (void)p;
    for (size_t i = 0; i < n; i++) o[i] = gl_reduce((u128)a[i] * b[i]);
}

NOINL void glmul_neon(uint64_t *restrict o, const uint64_t *restrict a, const uint64_t *restrict b, size_t n,
                      uint64_t p)
{
    (void)p;
    const uint64x2_t eps = vdupq_n_u64(0xFFFFFFFFULL), vp = vdupq_n_u64(GL);
    for (size_t i = 0; i < n; i += 2) {
        uint64x2_t x = vld1q_u64(a + i), y = vld1q_u64(b + i);
        uint32x2_t xl = vmovn_u64(x), xh = vshrn_n_u64(x, 32), yl = vmovn_u64(y), yh = vshrn_n_u64(y, 32);
        uint64x2_t ll = vmull_u32(xl, yl), lh = vmull_u32(xl, yh), hl = vmull_u32(xh, yl), hh = vmull_u32(xh, yh);
        uint64x2_t mid = vaddq_u64(lh, hl);
        uint64x2_t c1 = vcltq_u64(mid, lh);                         /* all ones on carry */
        uint64x2_t lo = vaddq_u64(ll, vshlq_n_u64(mid, 32));
        uint64x2_t c2 = vcltq_u64(lo, ll);
        uint64x2_t hi = vaddq_u64(hh, vshrq_n_u64(mid, 32));
        hi = vaddq_u64(hi, vandq_u64(c1, vdupq_n_u64(1ULL << 32)));
        hi = vsubq_u64(hi, c2);                                     /* + 1 on carry */
        /* reduce hi 2^64 + lo as gl_reduce */
        uint64x2_t h_hi = vshrq_n_u64(hi, 32), h_lo = vandq_u64(hi, eps);
        uint64x2_t t0 = vsubq_u64(lo, h_hi);
        t0 = vsubq_u64(t0, vandq_u64(eps, vcltq_u64(lo, h_hi)));
        uint64x2_t t1 = vsubq_u64(vshlq_n_u64(h_lo, 32), h_lo);
        uint64x2_t t2 = vaddq_u64(t0, t1);
        t2 = vaddq_u64(t2, vandq_u64(eps, vcltq_u64(t2, t1)));
        t2 = vsubq_u64(t2, vandq_u64(vp, vcgeq_u64(t2, vp)));
        vst1q_u64(o + i, t2);
    }
}

/* --------------------------------------------------------------- f64mul */
NOINL void f64mul_scalar(uint64_t *o, const uint64_t *a, const uint64_t *b, size_t n,
                         uint64_t p)
{
    const double pinv = 1.0 / (double)p;
    for (size_t i = 0; i < n; i++) {
        uint64_t q = (uint64_t)((double)a[i] * (double)b[i] * pinv);
        int64_t r = (int64_t)(a[i] * b[i] - q * p);
        r += (int64_t)p & -(int64_t)(r < 0);
        r -= (int64_t)p & -(int64_t)(r >= (int64_t)p);
        o[i] = (uint64_t)r;
    }
}

NOINL void f64mul_neon(uint64_t *restrict o, const uint64_t *restrict a, const uint64_t *restrict b, size_t n,
                       uint64_t p)
{
    const float64x2_t fp = vdupq_n_f64((double)p), pinv = vdupq_n_f64(1.0 / (double)p);
    for (size_t i = 0; i < n; i += 2) {
        float64x2_t x = vcvtq_f64_u64(vld1q_u64(a + i)), y = vcvtq_f64_u64(vld1q_u64(b + i));
        float64x2_t hi = vmulq_f64(x, y);
        float64x2_t lo = vfmaq_f64(vnegq_f64(hi), x, y);            /* ab - hi, exact */
        float64x2_t q = vrndmq_f64(vmulq_f64(hi, pinv));
        float64x2_t r = vaddq_f64(vfmsq_f64(hi, q, fp), lo);        /* ab - q p, exact */
        r = vbslq_f64(vcltzq_f64(r), vaddq_f64(r, fp), r);
        r = vbslq_f64(vcgeq_f64(r, fp), vsubq_f64(r, fp), r);
        vst1q_u64(o + i, vcvtq_u64_f64(r));
    }
}

/* ------------------------------------------------------------------- mm */
/* acc[0..3] += a0.b0, a0.b1, a1.b0, a1.b1 over k terms, 192-bit sums */
NOINL void mm_scalar(u128 acc[4], uint64_t top[4], const uint64_t *a0, const uint64_t *a1, const uint64_t *b0,
                     const uint64_t *b1, size_t k)
{
    u128 s00 = acc[0], s01 = acc[1], s10 = acc[2], s11 = acc[3];
    uint64_t t00 = top[0], t01 = top[1], t10 = top[2], t11 = top[3];
#define ACC(s, t, x, y) do { u128 m_ = (u128)(x) * (y); s += m_; t += s < m_; } while (0)
    for (size_t t = 0; t < k; t++) {
        ACC(s00, t00, a0[t], b0[t]); ACC(s01, t01, a0[t], b1[t]);
        ACC(s10, t10, a1[t], b0[t]); ACC(s11, t11, a1[t], b1[t]);
    }
#undef ACC
    acc[0] = s00, acc[1] = s01, acc[2] = s10, acc[3] = s11;
    top[0] = t00, top[1] = t01, top[2] = t10, top[3] = t11;
}

/* A packed per t as {a0 lo, a0 hi, a1 lo, a1 hi} (25-bit limbs of rows 0 and
 * 1), B per t as {4 low limbs of columns 0..3, 4 high limbs}.  acc[3 (r * 2 +
 * c2) + s], s = 0 (lo x lo), 1 (cross terms), 2 (hi x hi), lanes = columns
 * 2 c2 and 2 c2 + 1. */
NOINL void mm_neon(uint64x2_t acc[12], const uint32_t *ap, const uint32_t *bp, size_t k)
{
    uint64x2_t c[12];
    for (int i = 0; i < 12; i++) c[i] = acc[i];
    for (size_t t = 0; t < k; t++) {
        uint32x4_t av = vld1q_u32(ap + 4 * t);
        uint32x4_t bl = vld1q_u32(bp + 8 * t), bh = vld1q_u32(bp + 8 * t + 4);
        uint32x2_t bl0 = vget_low_u32(bl), bl1 = vget_high_u32(bl), bh0 = vget_low_u32(bh), bh1 = vget_high_u32(bh);
        uint32x2_t ar0 = vget_low_u32(av), ar1 = vget_high_u32(av);
#define ROW(r, ar)                                                                          \
        c[6 * r + 0] = vmlal_lane_u32(c[6 * r + 0], bl0, ar, 0);                            \
        c[6 * r + 1] = vmlal_lane_u32(vmlal_lane_u32(c[6 * r + 1], bh0, ar, 0), bl0, ar, 1); \
        c[6 * r + 2] = vmlal_lane_u32(c[6 * r + 2], bh0, ar, 1);                            \
        c[6 * r + 3] = vmlal_lane_u32(c[6 * r + 3], bl1, ar, 0);                            \
        c[6 * r + 4] = vmlal_lane_u32(vmlal_lane_u32(c[6 * r + 4], bh1, ar, 0), bl1, ar, 1); \
        c[6 * r + 5] = vmlal_lane_u32(c[6 * r + 5], bh1, ar, 1);
        ROW(0, ar0)
        ROW(1, ar1)
#undef ROW
    }
    for (int i = 0; i < 12; i++) acc[i] = c[i];
}

/* ------------------------------------------------------------ the check */
static uint64_t st = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    uint64_t z = (st += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t p) { return (uint64_t)(((u128)rnd() * p) >> 64); }

typedef void (*kfn)(uint64_t *restrict, const uint64_t *restrict, const uint64_t *restrict, size_t, uint64_t);

int main(void)
{
    enum { N = 4096, K = 257 };
    static uint64_t a[N], b[N], o1[N], o2[N];
    int fail = 0;
    const struct { const char *name; kfn s, v; uint64_t p; } ks[] = {
        {"add", add_scalar, add_neon, GL}, {"add", add_scalar, add_neon, 63ULL * (1ULL << 44) + 1},
        {"glmul", glmul_scalar, glmul_neon, GL},
        {"f64mul", f64mul_scalar, f64mul_neon, 63ULL * (1ULL << 44) + 1},
        {"f64mul", f64mul_scalar, f64mul_neon, (1ULL << 50) - 27}, {"f64mul", f64mul_scalar, f64mul_neon, 97},
    };
    for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        for (int i = 0; i < N; i++) {
            a[i] = i % 17 ? below(ks[j].p) : ks[j].p - 1;
            b[i] = i % 13 ? below(ks[j].p) : (i & 1 ? 0 : ks[j].p - 1);
        }
        ks[j].s(o1, a, b, N, ks[j].p);
        ks[j].v(o2, a, b, N, ks[j].p);
        int ok = !memcmp(o1, o2, sizeof o1);
        int is_add = ks[j].s == add_scalar;
        for (int i = 0; ok && i < N; i++)
            ok = o1[i] == (uint64_t)((is_add ? (u128)a[i] + b[i] : (u128)a[i] * b[i]) % ks[j].p);
        printf("%-7s p = %-20llu %s\n", ks[j].name, (unsigned long long)ks[j].p, ok ? "ok" : "MISMATCH");
        fail |= !ok;
    }
    /* mm: a 2 x 4 block over K terms, p < 2^50 */
    const uint64_t p = 63ULL * (1ULL << 44) + 1, M25 = (1u << 25) - 1;
    static uint64_t A[2][K], B[4][K];
    static uint32_t ap[4 * K], bp[8 * K];
    for (int t = 0; t < K; t++) {
        for (int r = 0; r < 2; r++) A[r][t] = t % 7 ? below(p) : p - 1;
        for (int c = 0; c < 4; c++) B[c][t] = t % 5 ? below(p) : p - 1;
        for (int r = 0; r < 2; r++) ap[4 * t + 2 * r] = (uint32_t)(A[r][t] & M25), ap[4 * t + 2 * r + 1] = (uint32_t)(A[r][t] >> 25);
        for (int c = 0; c < 4; c++) bp[8 * t + c] = (uint32_t)(B[c][t] & M25), bp[8 * t + 4 + c] = (uint32_t)(B[c][t] >> 25);
    }
    uint64x2_t acc[12];
    for (int i = 0; i < 12; i++) acc[i] = vdupq_n_u64(0);
    mm_neon(acc, ap, bp, K);
    int ok = 1;
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c += 2) {
            u128 s4[4] = {0};
            uint64_t tp[4] = {0};
            mm_scalar(s4, tp, A[r], A[r], B[c], B[c + 1], K);
            for (int l = 0; l < 2; l++) {
                uint64_t lo, mid, hi;
                uint64x2_t v0 = acc[6 * r + 3 * (c / 2)], v1 = acc[6 * r + 3 * (c / 2) + 1], v2 = acc[6 * r + 3 * (c / 2) + 2];
                lo = l ? vgetq_lane_u64(v0, 1) : vgetq_lane_u64(v0, 0);
                mid = l ? vgetq_lane_u64(v1, 1) : vgetq_lane_u64(v1, 0);
                hi = l ? vgetq_lane_u64(v2, 1) : vgetq_lane_u64(v2, 0);
                u128 v = (u128)lo + ((u128)mid << 25) + ((u128)hi << 50);
                u128 want = s4[l];                      /* top is 0: K p^2 < 2^128 */
                ok &= tp[l] == 0 && v == want;
            }
        }
    printf("%-7s p = %-20llu %s\n", "mm", (unsigned long long)p, ok ? "ok" : "MISMATCH");
    fail |= !ok;
    return fail;
}
