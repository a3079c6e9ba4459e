/* One (or two interleaved) modular exponentiations with the number spread
 * across the lanes of zmm registers ("horizontal" layout, radix 2^52, IFMA):
 * a single Paillier encryption r^n mod n^2 or the pair of a decryption
 * (mod p^2 and q^2), where the lane-parallel kernel of mb8_powm.c would leave
 * most lanes empty.
 *
 * A number of L limbs occupies NR = ceil(L / 8) registers, limb j in lane
 * j % 8 of register j / 8; lanes beyond L hold 0.
 *
 * Almost Montgomery multiplication, one reduction digit per limb b_i of b
 * (the bounds of mb8_powm.c: a, b < 2m and 4m < R = 2^(52 L) give a result
 * below 2m):
 *   acc += lo(a b_i); y = (acc_0 k0) mod 2^52; acc += lo(m y);
 *   acc = (acc shifted down one limb) + hi(a b_i) + hi(m y) + (acc_0 >> 52).
 * The high halves do not depend on the previous accumulator, so they are
 * collected in a side vector while the serial part (acc_0 -> y) runs; limb 0
 * of the accumulator is followed in a scalar register (it is extracted once
 * per limb of b and never written back: the shift drops it).  Each slot
 * receives at most 4 terms below 2^52 per limb of b, so 64-bit slots hold
 * for L <= 128; one scalar carry pass at the end of each product gives 52-bit
 * limbs (no branch, no value-dependent address).
 *
 * The x2 variant runs the same steps for two independent products in one
 * loop, so that one product's scalar chain overlaps the other's vector work.
 *
 * Exponentiation: the fixed windows of mb8_powm.c (width from the public
 * exponent length), every table entry read at every window with a mask from
 * a vector compare, squarings by the same product, the last product by 1 and
 * a masked subtraction of m for a canonical result.
 */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "internal.h"

#define HZ_MAX_LIMBS 128
#define HZ_MAX_NR (HZ_MAX_LIMBS / 8)

#if SECEA_X86
#include <immintrin.h>

#define M52 0xFFFFFFFFFFFFFULL
#define ATTR SECEA_TARGET("avx512f,avx512ifma")

/* r[p] = a[p] b[p] R^-1 mod m[p] (up to one m[p]) for p < NP: every operand
 * NR * 8 words, 64-byte aligned, limbs L.. zero.  r may alias a or b. */
ATTR static inline __attribute__((always_inline)) void
amm_core(uint64_t *const r[2], const uint64_t *const a[2], const uint64_t *const b[2],
         const uint64_t *const m[2], const uint64_t k0[2], size_t L, const int NR, const int NP)
{
    __m512i acc[2][HZ_MAX_NR], hi[2][HZ_MAX_NR];
    const __m512i zero = _mm512_setzero_si512();
    uint64_t acc0[2] = {0, 0}, a0[2], m0[2];
    for (int p = 0; p < NP; p++) {
        a0[p] = a[p][0];
        m0[p] = m[p][0];
        for (int k = 0; k < NR; k++) acc[p][k] = zero;
    }
    for (size_t i = 0; i < L; i++) {
        uint64_t y[2], carry[2];
        __m512i bv[2], yv[2];
        for (int p = 0; p < NP; p++) {
            const uint64_t bi = b[p][i];
            bv[p] = _mm512_set1_epi64((long long)bi);
            acc0[p] += (a0[p] * bi) & M52;                 /* limb 0 after lo(a b_i) */
            y[p] = (acc0[p] * k0[p]) & M52;
            carry[p] = (acc0[p] + ((m0[p] * y[p]) & M52)) >> 52;   /* limb 0 is 0 mod 2^52 now */
            yv[p] = _mm512_set1_epi64((long long)y[p]);
        }
        for (int p = 0; p < NP; p++)
            for (int k = 0; k < NR; k++) {
                const __m512i ak = _mm512_load_si512((const void *)(a[p] + 8 * k));
                const __m512i mk = _mm512_load_si512((const void *)(m[p] + 8 * k));
                acc[p][k] = _mm512_madd52lo_epu64(acc[p][k], ak, bv[p]);
                hi[p][k] = _mm512_madd52hi_epu64(_mm512_madd52hi_epu64(zero, ak, bv[p]), mk, yv[p]);
                acc[p][k] = _mm512_madd52lo_epu64(acc[p][k], mk, yv[p]);
            }
        for (int p = 0; p < NP; p++) {
            for (int k = 0; k + 1 < NR; k++)
                acc[p][k] = _mm512_add_epi64(_mm512_alignr_epi64(acc[p][k + 1], acc[p][k], 1), hi[p][k]);
            acc[p][NR - 1] = _mm512_add_epi64(_mm512_alignr_epi64(zero, acc[p][NR - 1], 1), hi[p][NR - 1]);
            acc0[p] = (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(acc[p][0])) + carry[p];
        }
    }
    for (int p = 0; p < NP; p++) {
        uint64_t t[HZ_MAX_NR * 8] __attribute__((aligned(64)));
        for (int k = 0; k < NR; k++) _mm512_store_si512((void *)(t + 8 * k), acc[p][k]);
        t[0] = acc0[p];
        /* the value is below 2m < 2^(52 L): the last carry is 0 */
        uint64_t c = 0;
        for (size_t j = 0; j < L; j++) {
            const uint64_t x = t[j] + c;
            r[p][j] = x & M52;
            c = x >> 52;
        }
        secea_wipe(t, sizeof t);
    }
}

typedef void (*amm_fn)(uint64_t *const r[2], const uint64_t *const a[2], const uint64_t *const b[2],
                       const uint64_t *const m[2], const uint64_t k0[2], size_t L);

#define HZ_AMM(n)                                                                                     \
    ATTR static void amm1_##n(uint64_t *const r[2], const uint64_t *const a[2], const uint64_t *const b[2], \
                              const uint64_t *const m[2], const uint64_t k0[2], size_t L)             \
    { amm_core(r, a, b, m, k0, L, n, 1); }                                                            \
    ATTR static void amm2_##n(uint64_t *const r[2], const uint64_t *const a[2], const uint64_t *const b[2], \
                              const uint64_t *const m[2], const uint64_t k0[2], size_t L)             \
    { amm_core(r, a, b, m, k0, L, n, 2); }
HZ_AMM(1) HZ_AMM(2) HZ_AMM(3) HZ_AMM(4) HZ_AMM(5) HZ_AMM(6) HZ_AMM(7) HZ_AMM(8)
HZ_AMM(9) HZ_AMM(10) HZ_AMM(11) HZ_AMM(12) HZ_AMM(13) HZ_AMM(14) HZ_AMM(15) HZ_AMM(16)

static const amm_fn amm1_for[HZ_MAX_NR + 1] = {
    NULL, amm1_1, amm1_2, amm1_3, amm1_4, amm1_5, amm1_6, amm1_7, amm1_8,
    amm1_9, amm1_10, amm1_11, amm1_12, amm1_13, amm1_14, amm1_15, amm1_16};
static const amm_fn amm2_for[HZ_MAX_NR + 1] = {
    NULL, amm2_1, amm2_2, amm2_3, amm2_4, amm2_5, amm2_6, amm2_7, amm2_8,
    amm2_9, amm2_10, amm2_11, amm2_12, amm2_13, amm2_14, amm2_15, amm2_16};

/* the W-bit digit of exp at bit pos (bits beyond the words read as 0) */
static inline uint64_t digit_at(const uint64_t *exp, size_t ewords, size_t pos, unsigned W)
{
    size_t w = pos / 64, s = pos % 64;
    uint64_t lo = w < ewords ? exp[w] >> s : 0;
    uint64_t hi = (s && w + 1 < ewords) ? exp[w + 1] << (64 - s) : 0;
    return (lo | hi) & ((1u << W) - 1);
}

/* sel = table[d] (S words per entry), reading every entry */
ATTR static void ct_select(uint64_t *sel, const uint64_t *table, uint64_t d, size_t S, unsigned W)
{
    const __m512i dv = _mm512_set1_epi64((long long)d);
    for (size_t j = 0; j < S; j += 8) {
        __m512i s = _mm512_setzero_si512();
        for (unsigned k = 0; k < (1u << W); k++) {
            const __mmask8 hit = _mm512_cmpeq_epu64_mask(dv, _mm512_set1_epi64((long long)k));
            s = _mm512_mask_mov_epi64(s, hit, _mm512_load_si512((const void *)(table + (size_t)k * S + j)));
        }
        _mm512_store_si512((void *)(sel + j), s);
    }
}

/* x = x - m where x >= m (x <= m here), kept by a mask: no branch */
static void canonical(uint64_t *x, const uint64_t *m, size_t L)
{
    uint64_t d[HZ_MAX_LIMBS], borrow = 0;
    for (size_t j = 0; j < L; j++) {
        uint64_t t = x[j] - m[j] - borrow;
        borrow = t >> 63;
        d[j] = t & M52;
    }
    const uint64_t keep = borrow - 1;                    /* all ones: no borrow, x >= m */
    for (size_t j = 0; j < L; j++) x[j] = (d[j] & keep) | (x[j] & ~keep);
    secea_wipe(d, sizeof d);
}

/* NP exponentiations; arrays problem-major (p * L limbs, p * ewords words).
 * mem: NP * S * (6 + 2^W) words, 64-byte aligned, S = 8 NR. */
ATTR static void powm_hz(unsigned NP, uint64_t *out, const uint64_t *base, const uint64_t *rr,
                         const uint64_t *mod, const uint64_t *k0, const uint64_t *exp, size_t ewords,
                         size_t ebits, size_t L, unsigned W, uint64_t *mem)
{
    const size_t NR = (L + 7) / 8, S = 8 * NR, per = S * (6 + ((size_t)1 << W));
    const amm_fn amm = NP == 2 ? amm2_for[NR] : amm1_for[NR];
    uint64_t *m[2], *rrv[2], *x[2], *sel[2], *one[2], *tab[2], *tk[2], *tp[2], *t1[2];
    memset(mem, 0, NP * per * sizeof(uint64_t));
    for (unsigned p = 0; p < NP; p++) {
        uint64_t *b = mem + p * per;
        m[p] = b; rrv[p] = b + S; x[p] = b + 2 * S; sel[p] = b + 3 * S; one[p] = b + 4 * S;
        tab[p] = b + 6 * S;                               /* 2^W entries of S words */
        memcpy(m[p], mod + p * L, L * 8);
        memcpy(rrv[p], rr + p * L, L * 8);
        memcpy(x[p], base + p * L, L * 8);
        one[p][0] = 1;
        t1[p] = tab[p] + S;
    }
    if (NP == 1) { m[1] = m[0]; rrv[1] = rrv[0]; x[1] = x[0]; sel[1] = sel[0]; one[1] = one[0]; tab[1] = tab[0]; t1[1] = t1[0]; }
    amm(tab, (const uint64_t *const *)rrv, (const uint64_t *const *)one, (const uint64_t *const *)m, k0, L);
    amm(t1, (const uint64_t *const *)x, (const uint64_t *const *)rrv, (const uint64_t *const *)m, k0, L);
    for (size_t k = 2; k < ((size_t)1 << W); k++) {
        for (int p = 0; p < 2; p++) { tk[p] = tab[p] + k * S; tp[p] = tab[p] + (k - 1) * S; }
        amm(tk, (const uint64_t *const *)tp, (const uint64_t *const *)t1, (const uint64_t *const *)m, k0, L);
    }
    const size_t nwin = (ebits + W - 1) / W;
    if (nwin == 0) {
        for (unsigned p = 0; p < NP; p++) memcpy(x[p], tab[p], S * 8);
    } else {
        for (unsigned p = 0; p < NP; p++)
            ct_select(x[p], tab[p], digit_at(exp + p * ewords, ewords, (nwin - 1) * W, W), S, W);
        for (size_t w = nwin - 1; w-- > 0;) {
            for (unsigned s = 0; s < W; s++)
                amm(x, (const uint64_t *const *)x, (const uint64_t *const *)x, (const uint64_t *const *)m, k0, L);
            for (unsigned p = 0; p < NP; p++)
                ct_select(sel[p], tab[p], digit_at(exp + p * ewords, ewords, w * W, W), S, W);
            amm(x, (const uint64_t *const *)x, (const uint64_t *const *)sel, (const uint64_t *const *)m, k0, L);
        }
    }
    amm(x, (const uint64_t *const *)x, (const uint64_t *const *)one, (const uint64_t *const *)m, k0, L);
    for (unsigned p = 0; p < NP; p++) {
        canonical(x[p], m[p], L);
        memcpy(out + p * L, x[p], L * 8);
    }
}
#endif

static int hz_run(unsigned NP, uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                  const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
#if SECEA_X86
    if (!secea_mb8_available() || L == 0 || L > HZ_MAX_LIMBS || ebits > 64 * ewords) return -2;
    const unsigned W = secea__powm_window(ebits);
    const size_t words = NP * 8 * ((L + 7) / 8) * (6 + ((size_t)1 << W));
    void *raw = NULL;
    if (posix_memalign(&raw, 64, words * 8)) return -1;
    uint64_t kk[2] = {k0[0], k0[NP - 1]};
    powm_hz(NP, out, base, rr, mod, kk, exp, ewords, ebits, L, W, (uint64_t *)raw);
    /* the table and accumulators held secret powers: clear before freeing */
    secea_wipe(raw, words * 8);
    free(raw);
    return 0;
#else
    (void)NP; (void)out; (void)base; (void)rr; (void)mod; (void)k0; (void)exp; (void)ewords; (void)ebits; (void)L;
    return -2;
#endif
}

int secea_hz_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod, uint64_t k0,
                  const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
    return hz_run(1, out, base, rr, mod, &k0, exp, ewords, ebits, L);
}

int secea_hz2_powm(uint64_t *out, const uint64_t *base, const uint64_t *rr, const uint64_t *mod,
                   const uint64_t *k0, const uint64_t *exp, size_t ewords, size_t ebits, size_t L)
{
    return hz_run(2, out, base, rr, mod, k0, exp, ewords, ebits, L);
}
