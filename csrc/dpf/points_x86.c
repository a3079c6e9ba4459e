/* Interleaved point walks with the x86 AES instructions: many keys' single
 * root-to-leaf paths advance level by level together, each path's state
 * kept in a register for the whole walk, so that enough independent AES
 * chains are in flight to cover the instruction latency (the reference
 * walk of eval_points.c makes one hash_sel call per level through memory).
 *
 *   AES-NI:    8 chains of one block each; a chain's round keys are k_L
 *              or k_R by the (public) branch bit, chosen by address.
 *   VAES, 256-bit registers (a CPU with VAES and AVX2, with or without
 *              AVX-512: Zen 3 has no AVX-512): 8 ymm registers of 2 paths
 *              (16 chains, twice the AES-NI rounds per instruction); a
 *              register's round keys are one of 4 lane mixes of k_L and k_R
 *              from a table built once per call, indexed by its 2 branch
 *              bits.
 * Both serve the "aesni", "vaes256" and "vaes" tables: the 256-bit walk wherever the
 * CPU has VAES and the dispatch ceiling allows it (SECEA_FAST_BACKEND=avx2
 * hides it), else the AES-NI walk.
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
#include "dpf_x86_ops.h"
#define INL inline __attribute__((always_inline))

/* ================================================================ AES-NI */

#define NI_W 8 /* chains per group */


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
            b[j] = _mm_xor_si128(ni_sigma(_mm_andnot_si128(one, s[j])), k[j][0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < m; j++) b[j] = _mm_aesenc_si128(b[j], k[j][r]);
        for (int j = 0; j < m; j++) {
            /* sigma recomputed from s (16 xmm registers: 8 states, 8 chains) */
            __m128i h = _mm_xor_si128(_mm_aesenclast_si128(b[j], k[j][10]),
                                      ni_sigma(_mm_andnot_si128(one, s[j])));
            __m128i cw = _mm_loadu_si128((const __m128i *)(kp[j] + 16 + 16 * (size_t)dep));
            cw = _mm_or_si128(_mm_andnot_si128(one, cw), _mm_cvtsi64_si128((long long)((tsel[j] >> dep) & 1)));
            s[j] = _mm_xor_si128(h, _mm_and_si128(ni_tmask(s[j]), cw));
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

/* ====================================================== VAES, 256 bits */

#define TGT_V256 SECEA_TARGET("aes,sse4.1,avx,avx2,vaes")
#define V2 8 /* ymm registers of 2 paths per group */

/* 2 blocks from 2 addresses, lane i from p[i] + off */
TGT_V256 static INL __m256i y_ld2(const uint8_t *const *p, size_t off)
{
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(p[0] + off))),
                                   _mm_loadu_si128((const __m128i *)(p[1] + off)), 1);
}

/* sigma(s with bit 0 cleared), per 128-bit lane */
TGT_V256 static INL __m256i y_sigma0(__m256i s)
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    const __m256i hi = _mm256_set_epi64x(-1, 0, -1, 0);
    __m256i x = _mm256_andnot_si256(one, s);
    return _mm256_xor_si256(_mm256_shuffle_epi32(x, 0x4E), _mm256_and_si256(x, hi));
}

/* bits 0..31 of x to the even bits 0, 2, .., 62 (the two paths of a
 * register interleaved: 2 bits per level, one shift and mask per level) */
static INL uint64_t spread32(uint64_t x)
{
    x &= 0xFFFFFFFFull;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFull;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFull;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0Full;
    x = (x | (x << 2)) & 0x3333333333333333ull;
    return (x | (x << 1)) & 0x5555555555555555ull;
}

/* nz (a constant after inlining) registers of 2 paths, the whole depth;
 * T[r][m]: round key r with lane i under k_R if bit i of m is set.  A
 * register's 2 branch bits per level come from z, both paths' bits
 * interleaved once per 32 levels (the per-level extraction from the two
 * xr words cost about 11 scalar instructions per register and level, and
 * the walk is bound by the instructions and loads it issues, not by AES
 * latency: 6 to 12 registers measured no faster than 8) */
TGT_V256 static INL void y_walk_group(blk *st, const uint8_t *const *kp, const uint64_t *xr, const uint64_t *tsel,
                                      int nz, unsigned L, const __m256i (*T)[4])
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    __m256i s[V2], P[V2];
    uint64_t z[V2];
    for (int j = 0; j < nz; j++) {
        s[j] = y_ld2(kp + 2 * j, 0);
        P[j] = _mm256_set_epi64x(0, (long long)tsel[2 * j + 1], 0, (long long)tsel[2 * j]);
    }
    for (unsigned d0 = 0; d0 < L; d0 += 32) {
        unsigned d1 = L - d0 < 32 ? L : d0 + 32;
        for (int j = 0; j < nz; j++) z[j] = spread32(xr[2 * j] >> d0) | (spread32(xr[2 * j + 1] >> d0) << 1);
        for (unsigned dep = d0; dep < d1; dep++) {
            /* everything but the rounds at the head of the level: the
             * correction folded into the last round key (AESENCLAST xors its
             * key last), so only the chains b stay in registers across the
             * rounds and kx is read back as a memory operand */
            __m256i b[V2], kx[V2];
            unsigned sel[V2];
            for (int j = 0; j < nz; j++) {
                sel[j] = (unsigned)(z[j] >> (2 * (dep - d0))) & 3;   /* the public branch bits */
                __m256i sg = y_sigma0(s[j]);
                b[j] = _mm256_xor_si256(sg, T[0][sel[j]]);
                /* s_CW with bit 0 := this level's t_CW of the branch taken (bit 0 of P) */
                __m256i cw = _mm256_or_si256(_mm256_andnot_si256(one, y_ld2(kp + 2 * j, 16 + 16 * (size_t)dep)),
                                             _mm256_and_si256(P[j], one));
                __m256i tm = _mm256_shuffle_epi32(
                    _mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(s[j], one)), 0x44);
                kx[j] = _mm256_xor_si256(_mm256_xor_si256(T[10][sel[j]], sg), _mm256_and_si256(tm, cw));
                P[j] = _mm256_srli_epi64(P[j], 1);
            }
            for (int r = 1; r < 10; r++)
                for (int j = 0; j < nz; j++) b[j] = _mm256_aesenc_epi128(b[j], T[r][sel[j]]);
            /* AES_k(x) xor x xor (t ? cw : 0) */
            for (int j = 0; j < nz; j++) s[j] = _mm256_aesenclast_epi128(b[j], kx[j]);
        }
    }
    for (int j = 0; j < nz; j++) _mm256_storeu_si256((__m256i *)(st + 2 * j), s[j]);
}

TGT_V256 static void walk_vaes256(blk *st, const uint8_t *const *kp, const uint64_t *xr, const uint64_t *tsel,
                                  size_t n, unsigned L)
{
    __m256i T[11][4];
    for (int r = 0; r < 11; r++) {
        __m128i kl = _mm_loadu_si128((const __m128i *)secea__dpf_rk[DPF_KL] + r);
        __m128i kr = _mm_loadu_si128((const __m128i *)secea__dpf_rk[DPF_KR] + r);
        for (int m = 0; m < 4; m++) T[r][m] = _mm256_set_m128i(m & 2 ? kr : kl, m & 1 ? kr : kl);
    }
    for (; n >= 2 * V2; n -= 2 * V2, st += 2 * V2, kp += 2 * V2, xr += 2 * V2, tsel += 2 * V2)
        y_walk_group(st, kp, xr, tsel, V2, L, (const __m256i (*)[4])T);
    if (n) {
        /* the tail padded with copies of its first path to whole registers
         * of 1, 2, 4 or 8 (the copies' states are dropped) */
        blk sp[2 * V2];
        const uint8_t *kq[2 * V2];
        uint64_t xq[2 * V2], tq[2 * V2];
        size_t regs = (n + 1) / 2;
        int nz = regs <= 1 ? 1 : regs <= 2 ? 2 : regs <= 4 ? 4 : V2;
        for (size_t i = 0; i < 2 * (size_t)nz; i++) {
            size_t from = i < n ? i : 0;
            kq[i] = kp[from];
            xq[i] = xr[from];
            tq[i] = tsel[from];
        }
        if (nz == 1) y_walk_group(sp, kq, xq, tq, 1, L, (const __m256i (*)[4])T);
        else if (nz == 2) y_walk_group(sp, kq, xq, tq, 2, L, (const __m256i (*)[4])T);
        else if (nz == 4) y_walk_group(sp, kq, xq, tq, 4, L, (const __m256i (*)[4])T);
        else y_walk_group(sp, kq, xq, tq, V2, L, (const __m256i (*)[4])T);
        memcpy(st, sp, 16 * n);
        secea_wipe(sp, sizeof sp);
    }
}

secea__dpf_walk_fn secea__dpf_points_walk_for(const secea__dpf_impl *im)
{
    /* VAES on ymm wherever the CPU has it (under the AVX2 ceiling it does
     * not); the VAES table's CPU has AES-NI and 256-bit VAES too */
    if (im != &secea__dpf_impl_vaes && im != &secea__dpf_impl_vaes256 && im != &secea__dpf_impl_aesni) return NULL;
    return secea__kernels_now()->cpu.vaes256 ? walk_vaes256 : walk_aesni;
    return NULL;
}

#else

secea__dpf_walk_fn secea__dpf_points_walk_for(const secea__dpf_impl *im)
{
    (void)im;
    return NULL;
}

#endif
