/* Goldilocks vector products, 8 lanes at a time with the helpers of
 * gl_avx512.h: the Goldilocks paths of secea_fp_mul / secea_fp_mul_scalar
 * (csrc/field/fp_vec.c) and the pointwise products of the transforms
 * (csrc/poly/ntt_avx512.c).  Callers check avx512f + avx512dq. */
#include "gl_avx512.h"

#if SECEA_X86
#define ATTR SECEA_TARGET("avx512f,avx512dq")

/* out[i] = a[i] b[i] mod Goldilocks (out may be a or b): 3.5x the scalar
 * mulx loop of fp_vec.c at 2^14 entries. */
ATTR void secea__gl_mul_avx512(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_si512((void *)(out + i), secea_glv_mul(_mm512_loadu_si512((const void *)(a + i)),
                                                             _mm512_loadu_si512((const void *)(b + i))));
    for (; i < n; i++) out[i] = secea_gl_mul(a[i], b[i]);
}

/* out[i] = a[i] k mod Goldilocks. */
ATTR void secea__gl_mul_scalar_avx512(uint64_t *out, const uint64_t *a, uint64_t k, size_t n)
{
    const __m512i kv = _mm512_set1_epi64((long long)k);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_si512((void *)(out + i), secea_glv_mul(_mm512_loadu_si512((const void *)(a + i)), kv));
    for (; i < n; i++) out[i] = secea_gl_mul(a[i], k);
}
#endif
