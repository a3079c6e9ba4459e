/* Interleaved point walks with the x86 AES instructions: many keys' single
 * root-to-leaf paths advance level by level together, each path's state
 * kept in a register for the whole walk, so that enough independent AES
 * chains are in flight to cover the instruction latency (the reference
 * walk of eval_points.c makes one hash_sel call per level through memory).
 *
 *   "aesni" (and "vaes"): 8 chains of one block each; a chain's round
 *            keys are k_L or k_R by the (public) branch bit, chosen by
 *            address.
 * Per level and path: H_b(s) = AES_b(sigma(s & ~1)) xor sigma(s & ~1), then
 * xor (t ? s_CW | t_CW^b : 0) by a mask derived from the state's t bit: no
 * branch on t.  Bit-exact with the reference walk (tests/test_dpf_points.py).
 *
 * Every function carries a target attribute, so the file compiles with the
 * package's baseline flags; secea__dpf_points_walk_for picks a walk for the
 * variant in use (NULL off x86 and for the portable table). */
#include "dpf_tree.h"

#if SECEA_X86
#include <immintrin.h>
#include <wmmintrin.h>

#define TGT_NI SECEA_TARGET("aes,sse4.1")
#define INL inline __attribute__((always_inline))

/* ================================================================ AES-NI */

#define NI_W 8 /* chains per group */

TGT_NI static INL __m128i pw_ni_sigma(__m128i s)
{
    const __m128i hi = _mm_set_epi64x(-1, 0);
    return _mm_xor_si128(_mm_shuffle_epi32(s, 0x4E), _mm_and_si128(s, hi));
}

TGT_NI static INL __m128i pw_ni_tmask(__m128i x)
{
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i m = _mm_sub_epi64(_mm_setzero_si128(), _mm_and_si128(x, one));
    return _mm_shuffle_epi32(m, 0x44);
}

/* m (a constant after inlining) paths of one group, the whole depth */
TGT_NI static INL void ni_walk_group(blk *st, const uint8_t *const *kp, const uint64_t *xr, const uint64_t *tsel,
                                     int m, unsigned L, const __m128i rk[2][11])
{
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i s[NI_W];
    for (int j = 0; j < m; j++) s[j] = _mm_loadu_si128((const __m128i *)kp[j]);
    for (unsigned dep = 0; dep < L; dep++) {
        __m128i b[NI_W];
        const __m128i *k[NI_W];
        for (int j = 0; j < m; j++) {
            k[j] = rk[(xr[j] >> dep) & 1];          /* the public branch bit */
            b[j] = _mm_xor_si128(pw_ni_sigma(_mm_andnot_si128(one, s[j])), k[j][0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < m; j++) b[j] = _mm_aesenc_si128(b[j], k[j][r]);
        for (int j = 0; j < m; j++) {
            /* sigma recomputed from s (16 xmm registers: 8 states, 8 chains) */
            __m128i h = _mm_xor_si128(_mm_aesenclast_si128(b[j], k[j][10]),
                                      pw_ni_sigma(_mm_andnot_si128(one, s[j])));
            __m128i cw = _mm_loadu_si128((const __m128i *)(kp[j] + 16 + 16 * (size_t)dep));
            cw = _mm_or_si128(_mm_andnot_si128(one, cw), _mm_cvtsi64_si128((long long)((tsel[j] >> dep) & 1)));
            s[j] = _mm_xor_si128(h, _mm_and_si128(pw_ni_tmask(s[j]), cw));
        }
    }
    for (int j = 0; j < m; j++) _mm_storeu_si128((__m128i *)(st + j), s[j]);
}

TGT_NI static void walk_aesni(blk *st, const uint8_t *const *kp, const uint64_t *xr, const uint64_t *tsel, size_t n,
                              unsigned L)
{
    __m128i rk[2][11];
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < 11; i++) rk[w][i] = _mm_loadu_si128((const __m128i *)secea__dpf_rk[w] + i);
    for (; n >= NI_W; n -= NI_W, st += NI_W, kp += NI_W, xr += NI_W, tsel += NI_W)
        ni_walk_group(st, kp, xr, tsel, NI_W, L, rk);
    if (n >= 4) {
        ni_walk_group(st, kp, xr, tsel, 4, L, rk);
        n -= 4, st += 4, kp += 4, xr += 4, tsel += 4;
    }
    if (n >= 2) {
        ni_walk_group(st, kp, xr, tsel, 2, L, rk);
        n -= 2, st += 2, kp += 2, xr += 2, tsel += 2;
    }
    if (n) ni_walk_group(st, kp, xr, tsel, 1, L, rk);
}

secea__dpf_walk_fn secea__dpf_points_walk_for(const secea__dpf_impl *im)
{
    /* the VAES table's CPU has AES-NI: its paths walk 8 chains of 128-bit blocks too */
    if (im == &secea__dpf_impl_vaes || im == &secea__dpf_impl_aesni) return walk_aesni;
    return NULL;
}

#else

secea__dpf_walk_fn secea__dpf_points_walk_for(const secea__dpf_impl *im)
{
    (void)im;
    return NULL;
}

#endif
