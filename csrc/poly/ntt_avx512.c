/* AVX-512 transforms: the Goldilocks stage algorithm of ntt.c vectorised
 * over 8 consecutive columns j (one zmm register = 8 residues); the radix-2
 * algorithm for other primes (second half of this file, body in
 * ntt_avx512_r2.h); vectorised pointwise products.
 *
 * Arithmetic mod p = 2^64 - 2^32 + 1 on canonical residues, with
 * eps = 2^32 - 1 = 2^64 mod p and 2^96 = -1 mod p: a + b, a - b and a * b
 * are the shared helpers of csrc/common/gl_avx512.h (see there), and
 *   x * 2^s (0 < s < 96, the 64-th roots of unity and their products):
 *           with 2^96 = -1 every such root is +-2^s; -1 is folded into the
 *           preceding subtraction (DIF) or the following add/sub pair (DIT).
 *           Write x 2^s = w0 + w1 2^64 + w2 2^128 (w0 = x << s,
 *           w1 = x >> (64 - s) or x << (s - 64), w2 = x >> (128 - s)); then
 *           x 2^s = w0 - B + (w1 mod 2^32) eps with B = x >> (96 - s) the bits
 *           of x 2^s above 2^96 (B < 2^63).  For s <= 32, B = 0 (7 ops); for
 *           s >= 64, w0 = 0 and the result is (w1 mod 2^32) eps - B, + p on
 *           borrow (6 ops); otherwise 11 ops.  Exponents only known at run
 *           time (the inter-pass twiddles w_R^(m0 q1)) use register shift
 *           counts and a branch on the class of s, which is loop invariant
 *           in the sweeps below (so always predicted).
 *
 * Layout: a stage reads R rows of stride M at columns j .. j+7 (M >= 8).
 * Pass A (radix R1) sweeps the block once, R1 rows at a time, then pass B
 * (radix R2, then the general twiddles w_N^(jq) from the plan table
 * [R1][M/8][R2][8]) sweeps it R2 rows at a time: 8 sequential streams
 * instead of R rows at a power-of-two stride, which would all fall into
 * one cache set.  The last three levels load 8 blocks of 8, transpose the
 * 8 x 8 tile (24 shuffles), run 8-point DFTs across registers and
 * transpose back.  The inner DFTs are specialised for the four possible
 * exponents of w_8 = 2^e8 (e8 in {24, 72, 120, 168}).
 *
 * Length (about 640 lines): the Goldilocks stage kernels and the radix-2
 * kernels for other primes share the vector helpers of this file.
 */
#include "ntt_internal.h"
#include "gl_avx512.h"

#if SECEA_X86
#include <immintrin.h>

#define ATTR SECEA_TARGET("avx512f,avx512dq")
#define INL static inline __attribute__((always_inline)) ATTR

typedef __m512i V;

/* Part counters: bench/ntt_bound.c defines NTT_PART to count how many of
 * each arithmetic part a transform executes; compiled out everywhere else. */
#ifndef NTT_PART
#define NTT_PART(kind) ((void)0)
#endif

#define CP _mm512_set1_epi64((long long)SECEA_GOLDILOCKS)
#define CE _mm512_set1_epi64(0xFFFFFFFFLL)

INL V v_load(const uint64_t *p) { return _mm512_loadu_si512((const void *)p); }
INL void v_store(uint64_t *p, V x) { _mm512_storeu_si512((void *)p, x); }

/* the shared Goldilocks helpers, counted for bench/ntt_bound.c */
INL V v_add(V a, V b)
{
    NTT_PART(NTT_P_ADD);
    return secea_glv_add(a, b);
}

INL V v_sub(V a, V b)
{
    NTT_PART(NTT_P_SUB);
    return secea_glv_sub(a, b);
}

/* a b mod p for any 64-bit a, b */
INL V v_mul(V a, V b)
{
    NTT_PART(NTT_P_MUL);
    return secea_glv_mul(a, b);
}

/* x 2^s mod p for a compile-time 0 < s < 96, any 64-bit x */
INL V v_shl(V x, const unsigned s)
{
    NTT_PART(s <= 32 ? NTT_P_SHL_LO : s >= 64 ? NTT_P_SHL_HI : NTT_P_SHL_MID);
    if (s <= 32) {
        V w0 = _mm512_slli_epi64(x, s);
        V t1 = _mm512_mul_epu32(_mm512_srli_epi64(x, 64 - s), CE);
        V r = _mm512_add_epi64(w0, t1);
        return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(w0, _mm512_sub_epi64(CP, t1)), r, CP);
    }
    if (s >= 64) {
        V w1 = s == 64 ? x : _mm512_slli_epi64(x, s - 64);
        V t1 = _mm512_mul_epu32(w1, CE);
        V B = _mm512_srli_epi64(x, 96 - s);
        V r = _mm512_sub_epi64(t1, B);
        return _mm512_mask_add_epi64(r, _mm512_cmplt_epu64_mask(t1, B), r, CP);
    }
    V w0 = _mm512_slli_epi64(x, s);
    V t1 = _mm512_mul_epu32(_mm512_srli_epi64(x, 64 - s), CE);
    V B = _mm512_srli_epi64(x, 96 - s);
    V t0 = _mm512_sub_epi64(w0, B);
    t0 = _mm512_mask_add_epi64(t0, _mm512_cmplt_epu64_mask(w0, B), t0, CP);
    V r = _mm512_add_epi64(t0, t1);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(t0, _mm512_sub_epi64(CP, t1)), r, CP);
}

/* run-time exponent 0 <= e < 192, by class of s = e mod 96 (the class is
 * loop invariant in the passes below, so the branch is predicted) */
typedef struct {
    __m128i cs, c96, c64, cm64;
    __mmask8 neg;
    int cls;            /* 0: s = 0, 1: s <= 32, 2: 32 < s < 64, 3: s >= 64 */
} shr_t;

static inline void shr_init(shr_t *c, unsigned e)
{
    c->neg = e >= 96 ? 0xFF : 0;
    uint64_t s = e % 96;
    c->cls = s == 0 ? 0 : s <= 32 ? 1 : s < 64 ? 2 : 3;
    c->cs = _mm_cvtsi64_si128((long long)s);
    c->c96 = _mm_cvtsi64_si128((long long)(96 - s));
    c->c64 = _mm_cvtsi64_si128((long long)(64 - s));
    c->cm64 = _mm_cvtsi64_si128((long long)(s - 64));
}

INL V v_shl_rt(V x, const shr_t *c)
{
    NTT_PART(NTT_P_SHL_RT);
    switch (c->cls) {
    case 1: {
        x = _mm512_mask_sub_epi64(x, c->neg, CP, x);       /* -x: any 64-bit value is fine */
        V w0 = _mm512_sll_epi64(x, c->cs);
        V t1 = _mm512_mul_epu32(_mm512_srl_epi64(x, c->c64), CE);
        V r = _mm512_add_epi64(w0, t1);
        return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(w0, _mm512_sub_epi64(CP, t1)), r, CP);
    }
    case 2: {
        x = _mm512_mask_sub_epi64(x, c->neg, CP, x);
        V w0 = _mm512_sll_epi64(x, c->cs);
        V t1 = _mm512_mul_epu32(_mm512_srl_epi64(x, c->c64), CE);
        V B = _mm512_srl_epi64(x, c->c96);
        V t0 = _mm512_sub_epi64(w0, B);
        t0 = _mm512_mask_add_epi64(t0, _mm512_cmplt_epu64_mask(w0, B), t0, CP);
        V r = _mm512_add_epi64(t0, t1);
        return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(t0, _mm512_sub_epi64(CP, t1)), r, CP);
    }
    case 3: {
        /* r = t1 - B, or B - t1 for -x 2^s; + p on borrow (both < p) */
        V t1 = _mm512_mul_epu32(_mm512_sll_epi64(x, c->cm64), CE);
        V B = _mm512_srl_epi64(x, c->c96);
        V u = _mm512_mask_blend_epi64(c->neg, t1, B), v = _mm512_mask_blend_epi64(c->neg, B, t1);
        V r = _mm512_sub_epi64(u, v);
        return _mm512_mask_add_epi64(r, _mm512_cmplt_epu64_mask(u, v), r, CP);
    }
    default: {
        /* s = 0: x or -x, canonical */
        V r = _mm512_mask_sub_epi64(x, c->neg, CP, x);
        return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(r, CP), r, CP);
    }
    }
}

/* -x mod p, canonical */
INL V v_neg(V x) { NTT_PART(NTT_P_NEG); return _mm512_mask_sub_epi64(x, _mm512_test_epi64_mask(x, x), CP, x); }

/* x 2^e mod p for a compile-time 0 <= e < 192 (2^96 = -1); for e > 96 the
 * negation comes first: p - x lies in [1, p], which v_shl accepts */
INL V v_pow2(V x, const unsigned e)
{
    if (e == 0) return x;
    if (e < 96) return v_shl(x, e);
    if (e == 96) return v_neg(x);
    return v_shl(_mm512_sub_epi64(CP, x), e - 96);
}

/* ---- butterflies with power-of-two twiddle 2^t, t < 192 compile time ---- */

/* DIF: (u, v) -> (u + v, (u - v) 2^t) */
INL void bf_dif(V *a, V *b, const unsigned t)
{
    V u = *a, v = *b;
    *a = v_add(u, v);
    if (t == 0) *b = v_sub(u, v);
    else if (t < 96) *b = v_shl(v_sub(u, v), t);
    else if (t == 96) *b = v_sub(v, u);
    else *b = v_shl(v_sub(v, u), t - 96);
}

/* DIT: (u, v) -> (u + v 2^t, u - v 2^t) */
INL void bf_dit(V *a, V *b, const unsigned t)
{
    V u = *a, v = *b;
    if (t == 0 || t == 96) {
        *a = t ? v_sub(u, v) : v_add(u, v);
        *b = t ? v_add(u, v) : v_sub(u, v);
        return;
    }
    if (t < 96) {
        v = v_shl(v, t);
        *a = v_add(u, v);
        *b = v_sub(u, v);
    } else {
        v = v_shl(v, t - 96);
        *a = v_sub(u, v);
        *b = v_add(u, v);
    }
}

#define MOD192(x) ((x) % 192u)

/* R-point DFTs in registers, R = 2^k <= 8; e8: w_8 = 2^e8 (w_4 = 2^(2 e8)).
 * Forward: DIF, natural in, register s holds output bitrev(s).
 * Inverse: DIT with w^-1 (ei = 192 - e8), bit-reversed in, natural out. */
INL void dft_fwd(V *x, const unsigned k, const unsigned e8)
{
    const unsigned e4 = MOD192(2 * e8);
    if (k == 3) {
        bf_dif(&x[0], &x[4], 0);
        bf_dif(&x[1], &x[5], e8);
        bf_dif(&x[2], &x[6], e4);
        bf_dif(&x[3], &x[7], MOD192(3 * e8));
        bf_dif(&x[0], &x[2], 0);
        bf_dif(&x[1], &x[3], e4);
        bf_dif(&x[4], &x[6], 0);
        bf_dif(&x[5], &x[7], e4);
        bf_dif(&x[0], &x[1], 0);
        bf_dif(&x[2], &x[3], 0);
        bf_dif(&x[4], &x[5], 0);
        bf_dif(&x[6], &x[7], 0);
    } else if (k == 2) {
        bf_dif(&x[0], &x[2], 0);
        bf_dif(&x[1], &x[3], e4);
        bf_dif(&x[0], &x[1], 0);
        bf_dif(&x[2], &x[3], 0);
    } else if (k == 1) {
        bf_dif(&x[0], &x[1], 0);
    }
}

INL void dft_inv(V *x, const unsigned k, const unsigned e8)
{
    const unsigned ei = MOD192(192 - e8), ei4 = MOD192(2 * ei);
    if (k == 3) {
        bf_dit(&x[0], &x[1], 0);
        bf_dit(&x[2], &x[3], 0);
        bf_dit(&x[4], &x[5], 0);
        bf_dit(&x[6], &x[7], 0);
        bf_dit(&x[0], &x[2], 0);
        bf_dit(&x[1], &x[3], ei4);
        bf_dit(&x[4], &x[6], 0);
        bf_dit(&x[5], &x[7], ei4);
        bf_dit(&x[0], &x[4], 0);
        bf_dit(&x[1], &x[5], ei);
        bf_dit(&x[2], &x[6], ei4);
        bf_dit(&x[3], &x[7], MOD192(3 * ei));
    } else if (k == 2) {
        bf_dit(&x[0], &x[1], 0);
        bf_dit(&x[2], &x[3], 0);
        bf_dit(&x[0], &x[2], 0);
        bf_dit(&x[1], &x[3], ei4);
    } else if (k == 1) {
        bf_dit(&x[0], &x[1], 0);
    }
}

static const uint8_t BR[4][8] = {
    {0}, {0, 1}, {0, 2, 1, 3}, {0, 4, 2, 6, 1, 5, 3, 7},
};

/* ---- one stage (see ntt.c).  Pass A (radix R1, twiddles w_R^(m0 q1)) and
 * pass B (radix R2, twiddles w_N^(jq)) each sweep the block once, 8 rows
 * at a time with j innermost: the rows are sequential streams (prefetch
 * friendly, no cache-set thrashing from the power-of-two stride) and the
 * pass A exponents are loop invariant. ---- */
/* Pass A of a stage: radix-R1 DFTs over rows m0 + R2 m1 (forward: DFT then
 * the twiddles w_R^(m0 q1); inverse: their inverses then the DFT), with
 * compile-time exponents (eR >= 0, the standard root) or the plan's
 * run-time ones (eR < 0). */
INL void stage_pass_a(const secea__ntt_stage *st, uint64_t *a, const unsigned k1, const unsigned k2,
                      const unsigned e8, const int eR, const int inverse)
{
    const unsigned R1 = 1u << k1, R2 = 1u << k2;
    const size_t M = st->M;
    V x[8];
    if (R1 == 1) return;
    if (eR >= 0) {
#pragma GCC unroll 8
        for (unsigned m0 = 0; m0 < R2; m0++) {
            uint64_t *io = a + (size_t)m0 * M;
            for (size_t jv = 0; jv < M; jv += 8) {
#pragma GCC unroll 8
                for (unsigned s = 0; s < R1; s++) x[s] = v_load(io + (size_t)s * R2 * M + jv);
                if (!inverse) dft_fwd(x, k1, e8);
#pragma GCC unroll 8
                for (unsigned s = 1; s < R1; s++) {
                    const unsigned e = MOD192((unsigned)eR * m0 * BR[k1][s]);
                    x[s] = v_pow2(x[s], inverse ? MOD192(192 - e) : e);
                }
                if (inverse) dft_inv(x, k1, e8);
#pragma GCC unroll 8
                for (unsigned s = 0; s < R1; s++) v_store(io + (size_t)s * R2 * M + jv, x[s]);
            }
        }
        return;
    }
    for (unsigned m0 = 0; m0 < R2; m0++) {
        shr_t sh[8];
        for (unsigned s = 0; s < R1; s++) shr_init(&sh[s], (inverse ? st->ea_i : st->ea_f)[m0 * R1 + s]);
        uint64_t *io = a + (size_t)m0 * M;
        for (size_t jv = 0; jv < M; jv += 8) {
#pragma GCC unroll 8
            for (unsigned s = 0; s < R1; s++) x[s] = v_load(io + (size_t)s * R2 * M + jv);
            if (!inverse) dft_fwd(x, k1, e8);
            if (m0) {
#pragma GCC unroll 8
                for (unsigned s = 1; s < R1; s++) x[s] = v_shl_rt(x[s], &sh[s]);
            }
            if (inverse) dft_inv(x, k1, e8);
#pragma GCC unroll 8
            for (unsigned s = 0; s < R1; s++) v_store(io + (size_t)s * R2 * M + jv, x[s]);
        }
    }
}

INL void stage_fwd_body(const secea__ntt_stage *st, uint64_t *a, const unsigned k1, const unsigned k2,
                        const unsigned e8, const int eR)
{
    const unsigned R1 = 1u << k1, R2 = 1u << k2;
    const size_t M = st->M;
    V x[8];
    stage_pass_a(st, a, k1, k2, e8, eR, 0);
    for (unsigned s1 = 0; s1 < R1; s1++) {
        const unsigned q1 = BR[k1][s1];
        uint64_t *c = a + (size_t)s1 * R2 * M;
        const uint64_t *tw = st->tf + (size_t)q1 * M * R2;
        for (size_t jv = 0; jv < M; jv += 8, tw += 8 * R2) {
#pragma GCC unroll 8
            for (unsigned m0 = 0; m0 < R2; m0++) x[m0] = v_load(c + (size_t)m0 * M + jv);
            dft_fwd(x, k2, e8);
#pragma GCC unroll 8
            for (unsigned s2 = 0; s2 < R2; s2++) {
                const unsigned q2 = BR[k2][s2];
                V y = x[s2];
                if (q1 || q2) y = v_mul(y, v_load(tw + (size_t)q2 * 8));
                v_store(c + (size_t)s2 * M + jv, y);
            }
        }
    }
}

INL void stage_inv_body(const secea__ntt_stage *st, uint64_t *a, const unsigned k1, const unsigned k2,
                        const unsigned e8, const int eR)
{
    const unsigned R1 = 1u << k1, R2 = 1u << k2;
    const size_t M = st->M;
    const int sc = st->scale_q0;
    V x[8];
    for (unsigned s1 = 0; s1 < R1; s1++) {
        const unsigned q1 = BR[k1][s1];
        uint64_t *c = a + (size_t)s1 * R2 * M;
        const uint64_t *tw = st->ti + (size_t)q1 * M * R2;
        for (size_t jv = 0; jv < M; jv += 8, tw += 8 * R2) {
#pragma GCC unroll 8
            for (unsigned s2 = 0; s2 < R2; s2++) {
                const unsigned q2 = BR[k2][s2];
                V y = v_load(c + (size_t)s2 * M + jv);
                if (q1 || q2 || sc) y = v_mul(y, v_load(tw + (size_t)q2 * 8));
                x[s2] = y;
            }
            dft_inv(x, k2, e8);
#pragma GCC unroll 8
            for (unsigned m0 = 0; m0 < R2; m0++) v_store(c + (size_t)m0 * M + jv, x[m0]);
        }
    }
    stage_pass_a(st, a, k1, k2, e8, eR, 1);
}

/* 8 x 8 transpose of 64-bit entries */
INL void transpose8(V *r)
{
    NTT_PART(NTT_P_T8);
    V t0 = _mm512_unpacklo_epi64(r[0], r[1]), t1 = _mm512_unpackhi_epi64(r[0], r[1]);
    V t2 = _mm512_unpacklo_epi64(r[2], r[3]), t3 = _mm512_unpackhi_epi64(r[2], r[3]);
    V t4 = _mm512_unpacklo_epi64(r[4], r[5]), t5 = _mm512_unpackhi_epi64(r[4], r[5]);
    V t6 = _mm512_unpacklo_epi64(r[6], r[7]), t7 = _mm512_unpackhi_epi64(r[6], r[7]);
    V u0 = _mm512_shuffle_i64x2(t0, t2, 0x88), u1 = _mm512_shuffle_i64x2(t0, t2, 0xDD);
    V u2 = _mm512_shuffle_i64x2(t1, t3, 0x88), u3 = _mm512_shuffle_i64x2(t1, t3, 0xDD);
    V u4 = _mm512_shuffle_i64x2(t4, t6, 0x88), u5 = _mm512_shuffle_i64x2(t4, t6, 0xDD);
    V u6 = _mm512_shuffle_i64x2(t5, t7, 0x88), u7 = _mm512_shuffle_i64x2(t5, t7, 0xDD);
    r[0] = _mm512_shuffle_i64x2(u0, u4, 0x88);
    r[4] = _mm512_shuffle_i64x2(u0, u4, 0xDD);
    r[2] = _mm512_shuffle_i64x2(u1, u5, 0x88);
    r[6] = _mm512_shuffle_i64x2(u1, u5, 0xDD);
    r[1] = _mm512_shuffle_i64x2(u2, u6, 0x88);
    r[5] = _mm512_shuffle_i64x2(u2, u6, 0xDD);
    r[3] = _mm512_shuffle_i64x2(u3, u7, 0x88);
    r[7] = _mm512_shuffle_i64x2(u3, u7, 0xDD);
}

/* the last three levels on a[0, len), len a multiple of 64, in groups of
 * 64 entries, NG groups at a time: two interleaved groups give the
 * out-of-order core independent chains to overlap (compare-to-mask latency
 * is 6-7 cycles on Zen 4): 16.1 -> 14.4 cycles per 8 entries at 2^14 */
INL void final_groups(uint64_t *a, V (*x)[8], const unsigned ng, const int inverse, const unsigned e8)
{
#pragma GCC unroll 2
    for (unsigned h = 0; h < ng; h++) {
#pragma GCC unroll 8
        for (unsigned i = 0; i < 8; i++) x[h][i] = v_load(a + 64 * h + 8 * i);
    }
#pragma GCC unroll 2
    for (unsigned h = 0; h < ng; h++) transpose8(x[h]);
#pragma GCC unroll 2
    for (unsigned h = 0; h < ng; h++) {
        if (inverse) dft_inv(x[h], 3, e8);
        else dft_fwd(x[h], 3, e8);
    }
#pragma GCC unroll 2
    for (unsigned h = 0; h < ng; h++) transpose8(x[h]);
#pragma GCC unroll 2
    for (unsigned h = 0; h < ng; h++) {
#pragma GCC unroll 8
        for (unsigned i = 0; i < 8; i++) v_store(a + 64 * h + 8 * i, x[h][i]);
    }
}

INL void final_body(uint64_t *a, size_t len, const int inverse, const unsigned e8)
{
    V x[2][8];
    size_t g = 0;
    for (; g + 128 <= len; g += 128) final_groups(a + g, x, 2, inverse, e8);
    if (g < len) final_groups(a + g, x, 1, inverse, e8);
}

/* ---- instantiation per (k1, k2) and e8 ----
 * Rows 0-3: any primitive root, pass A exponents read from the plan at run
 * time (v_shl_rt).  Row 4: the standard root, the one secea_fast.poly always
 * uses (root_of_unity: w = w32^(2^(32 - logn)) for one fixed primitive
 * 2^32-th root w32), for which w^(n/64) = 2^STD_E64 whatever n is; every
 * pass A exponent is then a compile-time constant and each twiddle an
 * immediate-count v_shl, with no class dispatch and no per-row setup.
 * Measured at 2^14 (pass A, cycles per 8 entries): k = 5 blocks 14.1 -> 10.3,
 * k = 6 blocks 15.4 -> 14.4. */
#define STD_E64 39u
#define STD_E8 120u                  /* 8 STD_E64 mod 192 */
#define STD_ER(K) ((int)MOD192(STD_E64 * (64u >> (K))))

typedef void (*stage_fn)(const secea__ntt_stage *, uint64_t *);
typedef void (*final_fn)(uint64_t *, size_t);

#define INST_STAGE(K1, K2, E8, SFX, ER)                                                     \
    ATTR static void sf_##K1##K2##_##SFX(const secea__ntt_stage *st, uint64_t *a)           \
    { stage_fwd_body(st, a, K1, K2, E8, ER); }                                             \
    ATTR static void si_##K1##K2##_##SFX(const secea__ntt_stage *st, uint64_t *a)           \
    { stage_inv_body(st, a, K1, K2, E8, ER); }
#define INST_E8(E8)                                                                         \
    INST_STAGE(1, 2, E8, E8, -1) INST_STAGE(2, 2, E8, E8, -1)                              \
    INST_STAGE(2, 3, E8, E8, -1) INST_STAGE(3, 3, E8, E8, -1)                              \
    ATTR static void ff_##E8(uint64_t *a, size_t len) { final_body(a, len, 0, E8); }       \
    ATTR static void fi_##E8(uint64_t *a, size_t len) { final_body(a, len, 1, E8); }
INST_E8(24)
INST_E8(72)
INST_E8(120)
INST_E8(168)
INST_STAGE(1, 2, STD_E8, std, STD_ER(3))
INST_STAGE(2, 2, STD_E8, std, STD_ER(4))
INST_STAGE(2, 3, STD_E8, std, STD_ER(5))
INST_STAGE(3, 3, STD_E8, std, STD_ER(6))

#define ROW(X) {sf_12_##X, sf_22_##X, sf_23_##X, sf_33_##X}
#define ROWI(X) {si_12_##X, si_22_##X, si_23_##X, si_33_##X}
static const stage_fn SF[5][4] = {ROW(24), ROW(72), ROW(120), ROW(168), ROW(std)};
static const stage_fn SI[5][4] = {ROWI(24), ROWI(72), ROWI(120), ROWI(168), ROWI(std)};
static const final_fn FF[5] = {ff_24, ff_72, ff_120, ff_168, ff_120};
static const final_fn FI[5] = {fi_24, fi_72, fi_120, fi_168, fi_120};

/* row of SF/SI/FF/FI: 4 for the standard root, else by e8 (24, 72, 120, 168 -> 0..3) */
static unsigned variant_index(const secea_ntt_plan *pl)
{
    return pl->e64 == STD_E64 ? 4 : ((pl->e64 * 8) % 192) / 48;
}
static unsigned cfg_index(const secea__ntt_stage *st) { return st->k - 3; }                  /* k = 3..6 */

static void fwd_rec(const secea_ntt_plan *pl, uint64_t *a, unsigned s, unsigned ie)
{
    const secea__ntt_stage *st = &pl->st[s];
    SF[ie][cfg_index(st)](st, a);
    if (s + 1 < pl->nstages) {
        for (size_t r = 0; r < ((size_t)1 << st->k); r++) fwd_rec(pl, a + r * st->M, s + 1, ie);
    } else {
        FF[ie](a, st->N);
    }
}

static void inv_rec(const secea_ntt_plan *pl, uint64_t *a, unsigned s, unsigned ie)
{
    const secea__ntt_stage *st = &pl->st[s];
    if (s + 1 < pl->nstages) {
        for (size_t r = 0; r < ((size_t)1 << st->k); r++) inv_rec(pl, a + r * st->M, s + 1, ie);
    } else {
        FI[ie](a, st->N);
    }
    SI[ie][cfg_index(st)](st, a);
}

void secea__ntt_gl_forward_avx512(const secea_ntt_plan *pl, uint64_t *a) { fwd_rec(pl, a, 0, variant_index(pl)); }
void secea__ntt_gl_inverse_avx512(const secea_ntt_plan *pl, uint64_t *a) { inv_rec(pl, a, 0, variant_index(pl)); }

/* ==================================================================
 * Generic primes p < 2^63: radix 2 with Shoup multiplication, vectorised
 * over 8 consecutive butterflies (levels h >= 8) or, for the last three
 * levels, over 8 blocks of 8 after an 8 x 8 transpose.
 *   x w mod p:  q = floor(x w' / 2^64) from four vpmuludq partial
 *               products, r = x w - q p (vpmullq, mod 2^64) in [0, 2p),
 *               r = min(r, r - p) (unsigned: r - p wraps when r < p).
 *   a + b:      s = a + b < 2p < 2^64, min(s, s - p);
 *   a - b:      d = a - b, min(d, d + p).
 * ================================================================== */

INL V s_add(V a, V b, V P)
{
    V s = _mm512_add_epi64(a, b);
    return _mm512_min_epu64(s, _mm512_sub_epi64(s, P));
}

INL V s_sub(V a, V b, V P)
{
    V d = _mm512_sub_epi64(a, b);
    return _mm512_min_epu64(d, _mm512_add_epi64(d, P));
}

/* x w mod p for any x < 2^64, w < p, ws = floor(w 2^64 / p) */
INL V s_mul(V x, V w, V ws, V P)
{
    V xh = _mm512_srli_epi64(x, 32), sh = _mm512_srli_epi64(ws, 32);
    V ll = _mm512_mul_epu32(x, ws), lh = _mm512_mul_epu32(x, sh);
    V hl = _mm512_mul_epu32(xh, ws), hh = _mm512_mul_epu32(xh, sh);
    V t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));
    V u = _mm512_add_epi64(hl, _mm512_and_si512(t, CE));
    V q = _mm512_add_epi64(hh, _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_srli_epi64(u, 32)));
    V r = _mm512_sub_epi64(_mm512_mullo_epi64(x, w), _mm512_mullo_epi64(q, P));
    return _mm512_min_epu64(r, _mm512_sub_epi64(r, P));
}

/* x w mod p for p < 2^51 with 52-bit IFMA: w52 = floor(w 2^52 / p) =
 * floor(ws / 2^12); q = floor(x w52 / 2^52) (vpmadd52huq), r = (x w - q p)
 * mod 2^52 (two vpmadd52luq) lies in [0, 2p) for x < 2^52. */
#define ATTR_IFMA SECEA_TARGET("avx512f,avx512dq,avx512ifma")
static inline __attribute__((always_inline)) ATTR_IFMA V s_mul52(V x, V w, V ws, V P)
{
    const V z = _mm512_setzero_si512();
    V q = _mm512_madd52hi_epu64(z, x, _mm512_srli_epi64(ws, 12));
    V r = _mm512_sub_epi64(_mm512_madd52lo_epu64(z, x, w), _mm512_madd52lo_epu64(z, q, P));
    r = _mm512_and_si512(r, _mm512_set1_epi64((1LL << 52) - 1));
    return _mm512_min_epu64(r, _mm512_sub_epi64(r, P));
}

#define R2V_BLOCK 4096

#define R2V(name) r2v_##name
#define R2V_ATTR ATTR
#define R2V_MUL s_mul
#include "ntt_avx512_r2.h"
#undef R2V
#undef R2V_ATTR
#undef R2V_MUL

#define R2V(name) r2i_##name
#define R2V_ATTR ATTR_IFMA
#define R2V_MUL s_mul52
#include "ntt_avx512_r2.h"
#undef R2V
#undef R2V_ATTR
#undef R2V_MUL

/* generic primes, logn >= 6 (IFMA variant: p < 2^51) */
void secea__ntt_r2_forward_avx512(const secea_ntt_plan *pl, uint64_t *a) { r2v_fwd_rec(pl, a, pl->n); }
void secea__ntt_r2_inverse_avx512(const secea_ntt_plan *pl, uint64_t *a) { r2v_inv_rec(pl, a, pl->n); }
void secea__ntt_r2_forward_ifma(const secea_ntt_plan *pl, uint64_t *a) { r2i_fwd_rec(pl, a, pl->n); }
void secea__ntt_r2_inverse_ifma(const secea_ntt_plan *pl, uint64_t *a) { r2i_inv_rec(pl, a, pl->n); }

/* a[i] = a[i] b[i] mod p for odd 2^50 <= p < 2^63: Montgomery reduction
 * (P. L. Montgomery, Math. Comp. 44, 1985) with R = 2^64, then the factor
 * R^-1 is undone by a Shoup multiplication by R mod p.
 *   T = ab (hi, lo); m = lo p^-1 mod 2^64; T - m p = (hi - hi(m p)) 2^64
 *   exactly, and hi - hi(m p) lies in (-p, p): one min() correction. */
INL V v_mulhi64(V x, V y)
{
    V xh = _mm512_srli_epi64(x, 32), yh = _mm512_srli_epi64(y, 32);
    V ll = _mm512_mul_epu32(x, y), lh = _mm512_mul_epu32(x, yh);
    V hl = _mm512_mul_epu32(xh, y), hh = _mm512_mul_epu32(xh, yh);
    V t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));
    V u = _mm512_add_epi64(hl, _mm512_and_si512(t, CE));
    return _mm512_add_epi64(hh, _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_srli_epi64(u, 32)));
}

ATTR void secea__ntt_pointwise_mont_avx512(uint64_t *a, const uint64_t *b, size_t n, uint64_t p,
                                           uint64_t pinv, uint64_t r1, uint64_t r1s)
{
    const V P = _mm512_set1_epi64((long long)p), PI = _mm512_set1_epi64((long long)pinv);
    const V R1 = _mm512_set1_epi64((long long)r1), R1S = _mm512_set1_epi64((long long)r1s);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        V x = v_load(a + i), y = v_load(b + i);
        V hi = v_mulhi64(x, y), lo = _mm512_mullo_epi64(x, y);
        V m = _mm512_mullo_epi64(lo, PI);
        V t = _mm512_sub_epi64(hi, v_mulhi64(m, P));
        t = _mm512_min_epu64(t, _mm512_add_epi64(t, P));
        v_store(a + i, s_mul(t, R1, R1S, P));
    }
    for (; i < n; i++) {
        secea_u128 T = (secea_u128)a[i] * b[i];
        uint64_t m = (uint64_t)T * pinv;
        uint64_t t = (uint64_t)(T >> 64) - (uint64_t)(((secea_u128)m * p) >> 64);
        t += p & (0 - (uint64_t)(t >= p));          /* wrapped negative: + p */
        t = (uint64_t)(((secea_u128)t * r1) % p);
        a[i] = t;
    }
}

ATTR void secea__ntt_gl_pointwise_avx512(uint64_t *a, const uint64_t *b, size_t n)
{
    secea__gl_mul_avx512(a, a, b, n);
}

/* Odd-order tangent Graeffe step (csrc/poly/graeffe.c), one pass each:
 * twist: ac = a tw, bc = b tw, tw = tw step;
 * acc:   Q = Q ac + P bc, P = P ac.  n a multiple of 8. */
ATTR void secea__gl_graeffe_twist_avx512(uint64_t *ac, uint64_t *bc, const uint64_t *a, const uint64_t *b,
                                         uint64_t *tw, const uint64_t *step, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        V t = v_load(tw + i);
        v_store(ac + i, v_mul(v_load(a + i), t));
        v_store(bc + i, v_mul(v_load(b + i), t));
        v_store(tw + i, v_mul(t, v_load(step + i)));
    }
}

ATTR void secea__gl_graeffe_acc_avx512(uint64_t *P, uint64_t *Q, const uint64_t *ac, const uint64_t *bc, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        V p = v_load(P + i), x = v_load(ac + i);
        v_store(Q + i, v_add(v_mul(v_load(Q + i), x), v_mul(p, v_load(bc + i))));
        v_store(P + i, v_mul(p, x));
    }
}

#endif
