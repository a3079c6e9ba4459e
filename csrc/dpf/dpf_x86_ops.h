/* The two 128-bit helpers of the DPF tree step on x86 (AES-NI + SSE4.1),
 * shared by dpf_x86.c (the hash variants) and points_x86.c (the point walk).
 * The includer defines TGT_NI (its target attribute) before including this. */
#ifndef SECEA_DPF_X86_OPS_H
#define SECEA_DPF_X86_OPS_H

#include <immintrin.h>

/* sigma(x) = (hi, hi ^ lo) as (lo', hi') */
TGT_NI static inline __attribute__((always_inline)) __m128i ni_sigma(__m128i s)
{
    const __m128i hi = _mm_set_epi64x(-1, 0);
    return _mm_xor_si128(_mm_shuffle_epi32(s, 0x4E), _mm_and_si128(s, hi));
}

/* all-ones if bit 0 of x is set, else zero (both qwords) */
TGT_NI static inline __attribute__((always_inline)) __m128i ni_tmask(__m128i x)
{
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i m = _mm_sub_epi64(_mm_setzero_si128(), _mm_and_si128(x, one));
    return _mm_shuffle_epi32(m, 0x44);
}

#endif
