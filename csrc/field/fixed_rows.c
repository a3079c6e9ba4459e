/* Fixed-point encoding of rows of reals into Z_2^b (secea_fast.fixedpoint
 * encode_rows): out[i*d + k] = rint(x[r_i*d + k] * scale) mod 2^b in two's
 * complement, r_i = rows[i] (or i if rows is NULL); a row with r_i < 0 is
 * encoded from zeros, with the same work as any other row (the caller's
 * padding rows: which rows are padding must not show in the time).
 * Rounding is to nearest, ties to even (numpy.rint), by adding 1.5 2^52
 * (below), so the baseline build needs no SSE4.1 round instruction, no
 * libm call and no conversion per element.
 * Returns 1 if some rounded value is outside [-lim, lim] or not a number
 * (out is then unspecified), else 0; SECEA_EINVAL if a row index is >= nx
 * (the rows of x), SECEA_ENOMEM. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline double rint_even(double v)
{
    const double big = 4503599627370496.0;      /* 2^52 */
    double a = fabs(v);
    double r = (a + big) - big;
    r = a < big ? r : a;
    return copysign(r, v);
}

/* The fast pass: for |rint(v)| < 2^51, t = v + 1.5 2^52 rounds v to an
 * integer (ties to even) held in t's low mantissa bits, so the two's
 * complement value is bits(t) - bits(1.5 2^52): vectorisable word
 * arithmetic, no conversion instruction.  Returns 1 if some value is not
 * within [-lim, lim] with lim < 2^51 (then the exact pass decides). */
static int encode_row_fast(uint64_t *o, const double *src, size_t d, double scale, double lim, uint64_t mask)
{
    const double magic = 6755399441055744.0;           /* 1.5 2^52 */
    const uint64_t magic_bits = 0x4338000000000000ull;
    size_t k = 0;
    int bad = 0;
#if defined(__SSE2__)
    /* two lanes a step (SSE2 is the x86-64 baseline; the compiler does not
     * vectorise the scalar loop below because of its range flag) */
    const __m128d vs = _mm_set1_pd(scale), vm = _mm_set1_pd(magic), vlo = _mm_set1_pd(-lim),
                  vhi = _mm_set1_pd(lim);
    const __m128i vb = _mm_set1_epi64x((long long)magic_bits), vk = _mm_set1_epi64x((long long)mask);
    __m128d ok = _mm_cmpeq_pd(vm, vm);
    for (; k + 2 <= d; k += 2) {
        __m128d t = _mm_add_pd(_mm_mul_pd(_mm_loadu_pd(src + k), vs), vm);
        __m128d q = _mm_sub_pd(t, vm);
        ok = _mm_and_pd(ok, _mm_and_pd(_mm_cmpge_pd(q, vlo), _mm_cmple_pd(q, vhi)));     /* false for NaN */
        _mm_storeu_si128((__m128i *)(o + k), _mm_and_si128(_mm_sub_epi64(_mm_castpd_si128(t), vb), vk));
    }
    bad = _mm_movemask_pd(ok) != 3;
#endif
    for (; k < d; k++) {
        double t = src[k] * scale + magic, q = t - magic;
        uint64_t b;
        memcpy(&b, &t, 8);
        bad |= !(q >= -lim && q <= lim);
        o[k] = (b - magic_bits) & mask;
    }
    return bad;
}

/* The exact pass (any |value| up to lim < 2^63): rint by the 2^52 trick on
 * |v| and a conversion per element. */
static int encode_row_exact(uint64_t *o, const double *src, size_t d, double scale, double lim, uint64_t mask)
{
    int bad = 0;
    for (size_t k = 0; k < d; k++) {
        double q = rint_even(src[k] * scale);
        int ok = q >= -lim && q <= lim;           /* false for NaN */
        bad |= !ok;
        o[k] = (uint64_t)(int64_t)(ok ? q : 0.0) & mask;
    }
    return bad;
}

int secea_fixed_encode_rows(uint64_t *out, const double *x, size_t nx, const int64_t *rows, size_t nrows, size_t d,
                            double scale, double lim, uint64_t mask)
{
    if (rows) {             /* every row index below nx (one flag, no early exit) */
        uint64_t over = 0;
        for (size_t i = 0; i < nrows; i++) over |= (uint64_t)(rows[i] >= 0 && (uint64_t)rows[i] >= nx);
        if (over) return SECEA_EINVAL;
    } else if (nrows > nx) {
        return SECEA_EINVAL;
    }
    double *zero = calloc(d ? d : 1, sizeof(double));
    if (!zero) return SECEA_ENOMEM;
    /* every row through the fast pass; only if some value is beyond 2^51 (or
     * beyond lim) all rows again through the exact one: that takes
     * |values| above 2^51 / scale, not a property of the rows chosen */
    const double fast_lim = lim < 2251799813685247.0 ? lim : 2251799813685247.0;     /* 2^51 - 1 */
    int slow = 0;
    for (size_t i = 0; i < nrows; i++) {
        int64_t r = rows ? rows[i] : (int64_t)i;
        slow |= encode_row_fast(out + i * d, r >= 0 ? x + (size_t)r * d : zero, d, scale, fast_lim, mask);
    }
    int bad = 0;
    if (slow)
        for (size_t i = 0; i < nrows; i++) {
            int64_t r = rows ? rows[i] : (int64_t)i;
            bad |= encode_row_exact(out + i * d, r >= 0 ? x + (size_t)r * d : zero, d, scale, lim, mask);
        }
    free(zero);
    return bad;
}
