/* Goldilocks arithmetic (p = 2^64 - 2^32 + 1) on 8 residues per AVX-512
 * register: static inline helpers shared by the field kernels
 * (csrc/field/fp_vec.c, through gl_avx512.c) and the transforms
 * (csrc/poly/ntt_avx512.c).  Only AVX-512F instructions, so callers compiled
 * for avx512f or a superset inline them.
 *
 * With eps = 2^32 - 1 = 2^64 mod p and 2^96 = -1 mod p:
 *   a + b:  t = p - b, s = a - t, + p if a < t            (4 operations)
 *   a - b:  d = a - b, + p if a < b                        (3 operations)
 *   a * b:  the 128-bit product hi 2^64 + lo from four 32 x 32 -> 64 bit
 *           vpmuludq partial products; then, with hi = hh 2^32 + hl,
 *           hi 2^64 = hl eps - hh, so  ab = (lo - hh) + hl eps  where
 *           lo - hh gets + p on borrow and the sum - p when it reaches p
 *           (t0 >= p - t1); hl eps is one more vpmuludq.  Both corrections
 *           are mask-register compares and masked adds, branch free. */
#ifndef SECEA_GL_AVX512_H
#define SECEA_GL_AVX512_H
#include "internal.h"

#if SECEA_X86
#include <immintrin.h>

#define SECEA_GLV_INL static inline __attribute__((always_inline)) SECEA_TARGET("avx512f")
#define SECEA_GLV_P _mm512_set1_epi64((long long)SECEA_GOLDILOCKS)
#define SECEA_GLV_EPS _mm512_set1_epi64(0xFFFFFFFFLL)

/* a + b mod p, canonical inputs */
SECEA_GLV_INL __m512i secea_glv_add(__m512i a, __m512i b)
{
    __m512i t = _mm512_sub_epi64(SECEA_GLV_P, b);
    __m512i s = _mm512_sub_epi64(a, t);
    return _mm512_mask_add_epi64(s, _mm512_cmplt_epu64_mask(a, t), s, SECEA_GLV_P);
}

/* a - b mod p, canonical inputs */
SECEA_GLV_INL __m512i secea_glv_sub(__m512i a, __m512i b)
{
    __m512i d = _mm512_sub_epi64(a, b);
    return _mm512_mask_add_epi64(d, _mm512_cmplt_epu64_mask(a, b), d, SECEA_GLV_P);
}

/* (hi 2^64 + lo) mod p, canonical, for any hi, lo */
SECEA_GLV_INL __m512i secea_glv_reduce(__m512i lo, __m512i hi)
{
    __m512i hh = _mm512_srli_epi64(hi, 32);
    __m512i t0 = _mm512_sub_epi64(lo, hh);
    t0 = _mm512_mask_add_epi64(t0, _mm512_cmplt_epu64_mask(lo, hh), t0, SECEA_GLV_P);
    __m512i t1 = _mm512_mul_epu32(hi, SECEA_GLV_EPS);
    __m512i r = _mm512_add_epi64(t0, t1);
    return _mm512_mask_sub_epi64(r, _mm512_cmpge_epu64_mask(t0, _mm512_sub_epi64(SECEA_GLV_P, t1)), r,
                                 SECEA_GLV_P);
}

/* a b mod p for any 64-bit a, b */
SECEA_GLV_INL __m512i secea_glv_mul(__m512i a, __m512i b)
{
    const __m512i E = SECEA_GLV_EPS;
    __m512i ah = _mm512_srli_epi64(a, 32), bh = _mm512_srli_epi64(b, 32);
    __m512i ll = _mm512_mul_epu32(a, b), lh = _mm512_mul_epu32(a, bh);
    __m512i hl = _mm512_mul_epu32(ah, b), hh = _mm512_mul_epu32(ah, bh);
    __m512i t = _mm512_add_epi64(lh, _mm512_srli_epi64(ll, 32));        /* < 2^64 */
    __m512i u = _mm512_add_epi64(hl, _mm512_and_si512(t, E));           /* < 2^64 */
    __m512i lo = _mm512_mask_blend_epi32(0xAAAA, ll, _mm512_slli_epi64(u, 32));
    __m512i hi = _mm512_add_epi64(hh, _mm512_add_epi64(_mm512_srli_epi64(t, 32), _mm512_srli_epi64(u, 32)));
    return secea_glv_reduce(lo, hi);
}
#endif
#endif
