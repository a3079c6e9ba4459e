/* DPF primitives with the x86 AES instructions: "aesni" (128-bit AES-NI, 8
 * blocks in flight) and "vaes" (VAES on AVX-512 zmm registers: 4 blocks per
 * register, 8 registers = 32 blocks in flight).
 *
 * Tree expansion (expand_*): each node is loaded once and duplicated into
 * two 128-bit lanes; the lanes run AES under the two fixed keys at the same
 * time (VAES round keys are per lane: [k_L, k_R, k_L, k_R]), so a register
 * holds (L_0, R_0, L_1, R_1) and is stored as is: children land in natural
 * order.  The Matyas-Meyer-Oseas feed-forward is folded into the last round
 * key: AESENCLAST(x, k10) xor sigma = AESENCLAST(x, k10 xor sigma).  The
 * control-bit correction is a masked XOR (AVX-512 mask register, or an AND
 * with 0 - t for AES-NI): no branches on t.
 *
 * Every function carries a target attribute, so the file compiles with the
 * package's baseline flags; variants.c selects a table at run time.
 *
 * Length (about 700 lines): the AES-NI and VAES variants of every DPF
 * primitive share the sigma / control-bit helpers and the fixed-key
 * schedule loading at the top; splitting per variant would duplicate them. */
#include "dpf_internal.h"

#if SECEA_X86
#include <immintrin.h>
#include <wmmintrin.h>

#define TGT_NI SECEA_TARGET("aes,sse4.1")
#include "dpf_x86_ops.h"
#define TGT_VAES SECEA_TARGET("aes,sse4.1,avx2,vaes,avx512f,avx512bw,avx512vl,avx512dq")

typedef secea__dpf_blk blk;

/* ================================================================ AES-NI */

TGT_NI static inline void ni_load_rk(__m128i rk[11], int which)
{
    for (int i = 0; i < 11; i++) rk[i] = _mm_loadu_si128((const __m128i *)secea__dpf_rk[which] + i);
}


TGT_NI static void expand_aesni(blk *out, const blk *in, size_t n, const blk cw[2])
{
    __m128i kl[11], kr[11];
    ni_load_rk(kl, DPF_KL);
    ni_load_rk(kr, DPF_KR);
    const __m128i one = _mm_set_epi64x(0, 1);
    const __m128i cwl = _mm_loadu_si128((const __m128i *)&cw[0]);
    const __m128i cwr = _mm_loadu_si128((const __m128i *)&cw[1]);
    while (n) {
        int m = n >= 4 ? 4 : (int)n;
        __m128i sg[4], tm[4], b[8];
        for (int j = 0; j < m; j++) {
            __m128i x = _mm_loadu_si128((const __m128i *)(in + j));
            tm[j] = ni_tmask(x);
            sg[j] = ni_sigma(_mm_andnot_si128(one, x));
            b[2 * j] = _mm_xor_si128(sg[j], kl[0]);
            b[2 * j + 1] = _mm_xor_si128(sg[j], kr[0]);
        }
        for (int r = 1; r < 10; r++) {
            for (int j = 0; j < m; j++) {
                b[2 * j] = _mm_aesenc_si128(b[2 * j], kl[r]);
                b[2 * j + 1] = _mm_aesenc_si128(b[2 * j + 1], kr[r]);
            }
        }
        for (int j = 0; j < m; j++) {
            b[2 * j] = _mm_aesenclast_si128(b[2 * j], _mm_xor_si128(kl[10], sg[j]));
            b[2 * j + 1] = _mm_aesenclast_si128(b[2 * j + 1], _mm_xor_si128(kr[10], sg[j]));
            b[2 * j] = _mm_xor_si128(b[2 * j], _mm_and_si128(tm[j], cwl));
            b[2 * j + 1] = _mm_xor_si128(b[2 * j + 1], _mm_and_si128(tm[j], cwr));
            _mm_storeu_si128((__m128i *)(out + 2 * j), b[2 * j]);
            _mm_storeu_si128((__m128i *)(out + 2 * j + 1), b[2 * j + 1]);
        }
        in += m;
        out += 2 * m;
        n -= (size_t)m;
    }
}

TGT_NI static void hash_aesni(blk *out, const blk *in, size_t n, int which, int clear)
{
    __m128i rk[11];
    ni_load_rk(rk, which);
    const __m128i keep = clear ? _mm_set_epi64x(-1, -2) : _mm_set1_epi64x(-1);
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        __m128i sg[8], b[8];
        for (int j = 0; j < m; j++) {
            sg[j] = ni_sigma(_mm_and_si128(_mm_loadu_si128((const __m128i *)(in + j)), keep));
            b[j] = _mm_xor_si128(sg[j], rk[0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < m; j++) b[j] = _mm_aesenc_si128(b[j], rk[r]);
        for (int j = 0; j < m; j++)
            _mm_storeu_si128((__m128i *)(out + j), _mm_aesenclast_si128(b[j], _mm_xor_si128(rk[10], sg[j])));
        in += m;
        out += m;
        n -= (size_t)m;
    }
}

TGT_NI static void hash_sel_aesni(blk *out, const blk *in, const uint8_t *sel, size_t n)
{
    __m128i rk[2][11];
    ni_load_rk(rk[0], DPF_KL);
    ni_load_rk(rk[1], DPF_KR);
    const __m128i one = _mm_set_epi64x(0, 1);
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        __m128i sg[8], b[8];
        const __m128i *k[8];
        for (int j = 0; j < m; j++) {
            k[j] = rk[sel[j] & 1];      /* sel is the public evaluation point */
            sg[j] = ni_sigma(_mm_andnot_si128(one, _mm_loadu_si128((const __m128i *)(in + j))));
            b[j] = _mm_xor_si128(sg[j], k[j][0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < m; j++) b[j] = _mm_aesenc_si128(b[j], k[j][r]);
        for (int j = 0; j < m; j++)
            _mm_storeu_si128((__m128i *)(out + j), _mm_aesenclast_si128(b[j], _mm_xor_si128(k[j][10], sg[j])));
        in += m;
        out += m;
        sel += m;
        n -= (size_t)m;
    }
}

TGT_NI static void conv_u64_aesni(uint64_t *out, const blk *leaves, size_t n,
                                  const uint64_t cw[2], int party, int words)
{
    __m128i rk[11];
    ni_load_rk(rk, DPF_KV);
    const __m128i one = _mm_set_epi64x(0, 1);
    const __m128i cwv = _mm_set_epi64x((long long)cw[1], (long long)cw[0]);
    const __m128i neg = party ? _mm_set1_epi64x(-1) : _mm_setzero_si128();
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        __m128i sg[8], tm[8], b[8];
        for (int j = 0; j < m; j++) {
            __m128i x = _mm_loadu_si128((const __m128i *)(leaves + j));
            tm[j] = ni_tmask(x);
            sg[j] = ni_sigma(_mm_andnot_si128(one, x));
            b[j] = _mm_xor_si128(sg[j], rk[0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < m; j++) b[j] = _mm_aesenc_si128(b[j], rk[r]);
        for (int j = 0; j < m; j++) {
            __m128i h = _mm_aesenclast_si128(b[j], _mm_xor_si128(rk[10], sg[j]));
            h = _mm_add_epi64(h, _mm_and_si128(tm[j], cwv));
            h = _mm_sub_epi64(_mm_xor_si128(h, neg), neg);     /* -h if party */
            if (words == 2) _mm_storeu_si128((__m128i *)(out + 2 * j), h);
            else out[j] = (uint64_t)_mm_cvtsi128_si64(h);
        }
        leaves += m;
        out += (size_t)words * m;
        n -= (size_t)m;
    }
}

/* the slots without special code here: the plain-C conversions of
 * convert_hashed.c on this variant's own hash */

static void conv_u64_vec_aesni(uint64_t *out, const blk *leaves, size_t n, const uint64_t *cw, size_t d,
                             int party, int accumulate)
{
    secea__dpf_conv_u64_vec_hashed(hash_aesni, out, leaves, n, cw, d, party, accumulate);
}

static void conv_u64x4_aesni(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[4], int party)
{
    secea__dpf_conv_u64_vec_hashed(hash_aesni, out, leaves, n, cw, 4, party, 0);
}

static void conv_acc_aesni(void *acc, const blk *leaves, size_t n, const void *cw, size_t d, unsigned w)
{
    secea__dpf_conv_acc_hashed(hash_aesni, acc, leaves, n, cw, d, w);
}

const secea__dpf_impl secea__dpf_impl_aesni = {
    "aesni", expand_aesni, hash_aesni, hash_sel_aesni, conv_u64_aesni, conv_u64_vec_aesni, conv_u64x4_aesni,
    conv_acc_aesni
};

/* ================================================================ VAES */

#define VW 8  /* zmm registers in flight */
#ifndef EXW
#define EXW 4 /* expand: input registers (4 nodes each) per iteration */
#endif

TGT_VAES static inline __m512i v_rk1(int which, int r)
{
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)secea__dpf_rk[which] + r));
}

TGT_VAES static inline __m512i v_sigma(__m512i s)
{
    const __m512i hi = _mm512_set_epi64(-1, 0, -1, 0, -1, 0, -1, 0);
    /* sw ^ (s & hi) */
    return _mm512_ternarylogic_epi64(_mm512_shuffle_epi32(s, (_MM_PERM_ENUM)0x4E), s, hi, 0x78);
}

/* qword mask of the 128-bit lanes whose bit 0 is set */
TGT_VAES static inline __mmask8 v_tmask(__m512i x)
{
    const __m512i one = _mm512_set_epi64(0, 1, 0, 1, 0, 1, 0, 1);
    unsigned k = _mm512_test_epi64_mask(x, one);
    return (__mmask8)(k | (k << 1));
}

/* sigma(x with bit 0 cleared if clr = (1, 1, ...), x itself if clr = 0):
 * sw = (hi, lo); low words keep sw, high words get c ? x : sw ^ x bitwise, so
 * bit 64 becomes hi_0 (= hi_0 ^ (lo_0 & 0)) and the rest hi ^ lo. */
TGT_VAES static inline __m512i v_sigma_clr(__m512i x, __m512i clr)
{
    return _mm512_mask_ternarylogic_epi64(_mm512_shuffle_epi32(x, (_MM_PERM_ENUM)0x4E), (__mmask8)0xAA, x, clr,
                                          0x9C);
}

TGT_VAES static inline __mmask8 v_blocks_mask(size_t nblocks)
{
    return (__mmask8)((1u << (2 * (nblocks > 4 ? 4 : nblocks))) - 1);
}

/* nz registers of 4 nodes: hl holds the nodes on entry; on exit hl / hr hold
 * the corrected left / right children. */
TGT_VAES static inline void v_expand_core(__m512i *hl, __m512i *hr, int nz, const __m512i *kl,
                                          const __m512i *kr, __m512i cwl, __m512i cwr)
{
    const __m512i clr = _mm512_set1_epi64(1);
    __m512i sg[EXW];
    __mmask8 kt[EXW];
    for (int j = 0; j < nz; j++) {
        __m512i x = hl[j];
        kt[j] = v_tmask(x);
        sg[j] = v_sigma_clr(x, clr);
        hl[j] = _mm512_xor_si512(sg[j], kl[0]);
        hr[j] = _mm512_xor_si512(sg[j], kr[0]);
    }
    for (int r = 1; r < 10; r++) {
        for (int j = 0; j < nz; j++) {
            hl[j] = _mm512_aesenc_epi128(hl[j], kl[r]);
            hr[j] = _mm512_aesenc_epi128(hr[j], kr[r]);
        }
    }
    for (int j = 0; j < nz; j++) {
        hl[j] = _mm512_aesenclast_epi128(hl[j], _mm512_xor_si512(sg[j], kl[10]));
        hr[j] = _mm512_aesenclast_epi128(hr[j], _mm512_xor_si512(sg[j], kr[10]));
        hl[j] = _mm512_mask_xor_epi64(hl[j], kt[j], hl[j], cwl);
        hr[j] = _mm512_mask_xor_epi64(hr[j], kt[j], hr[j], cwr);
    }
}

/* Registers hold 4 nodes each; the left and right halves run under their own
 * broadcast keys and are interleaved into natural order (L0 R0 L1 R1 | L2 R2
 * L3 R3) on the way out. */
TGT_VAES static void expand_vaes(blk *out, const blk *in, size_t n, const blk cw[2])
{
    __m512i kl[11], kr[11];
    for (int r = 0; r < 11; r++) {
        kl[r] = v_rk1(DPF_KL, r);
        kr[r] = v_rk1(DPF_KR, r);
    }
    const __m512i cwl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)&cw[0]));
    const __m512i cwr = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)&cw[1]));
    const __m512i i0 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i i1 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    while (n >= 4 * EXW) {
        __m512i hl[EXW], hr[EXW];
        for (int j = 0; j < EXW; j++) hl[j] = _mm512_loadu_si512((const void *)(in + 4 * j));
        v_expand_core(hl, hr, EXW, kl, kr, cwl, cwr);
        for (int j = 0; j < EXW; j++) {
            _mm512_storeu_si512((void *)(out + 8 * j), _mm512_permutex2var_epi64(hl[j], i0, hr[j]));
            _mm512_storeu_si512((void *)(out + 8 * j + 4), _mm512_permutex2var_epi64(hl[j], i1, hr[j]));
        }
        in += 4 * EXW;
        out += 8 * EXW;
        n -= 4 * EXW;
    }
    if (n) {
        __m512i hl[EXW], hr[EXW];
        int nz = (int)((n + 3) / 4);
        for (int j = 0; j < nz; j++)
            hl[j] = _mm512_maskz_loadu_epi64(v_blocks_mask(n - 4 * (size_t)j), (const void *)(in + 4 * j));
        v_expand_core(hl, hr, nz, kl, kr, cwl, cwr);
        for (int j = 0; j < nz; j++) {
            size_t c = n - 4 * (size_t)j < 4 ? n - 4 * (size_t)j : 4;   /* nodes in this register */
            _mm512_mask_storeu_epi64((void *)(out + 8 * j), v_blocks_mask(2 * c),
                                     _mm512_permutex2var_epi64(hl[j], i0, hr[j]));
            if (c > 2)
                _mm512_mask_storeu_epi64((void *)(out + 8 * j + 4), v_blocks_mask(2 * c - 4),
                                         _mm512_permutex2var_epi64(hl[j], i1, hr[j]));
        }
    }
}


/* nz registers of 4 blocks: b holds the inputs on entry, H(inputs) on exit */
TGT_VAES static inline void v_hash_core(__m512i *b, int nz, const __m512i rk[11], const __m512i clr)
{
    __m512i sg[VW];
    for (int j = 0; j < nz; j++) {
        sg[j] = v_sigma_clr(b[j], clr);
        b[j] = _mm512_xor_si512(sg[j], rk[0]);
    }
    for (int r = 1; r < 10; r++)
        for (int j = 0; j < nz; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
    for (int j = 0; j < nz; j++) b[j] = _mm512_aesenclast_epi128(b[j], _mm512_xor_si512(sg[j], rk[10]));
}

TGT_VAES static void hash_vaes(blk *out, const blk *in, size_t n, int which, int clear)
{
    __m512i rk[11];
    for (int r = 0; r < 11; r++) rk[r] = v_rk1(which, r);
    const __m512i keep = clear ? _mm512_set1_epi64(1) : _mm512_setzero_si512();
    while (n >= 4 * VW) {
        __m512i b[VW];
        for (int j = 0; j < VW; j++) b[j] = _mm512_loadu_si512((const void *)(in + 4 * j));
        v_hash_core(b, VW, rk, keep);
        for (int j = 0; j < VW; j++) _mm512_storeu_si512((void *)(out + 4 * j), b[j]);
        in += 4 * VW;
        out += 4 * VW;
        n -= 4 * VW;
    }
    if (n) {
        int nz = (int)((n + 3) / 4);
        __m512i b[VW];
        for (int j = 0; j < nz; j++)
            b[j] = _mm512_maskz_loadu_epi64(v_blocks_mask(n - 4 * (size_t)j), (const void *)(in + 4 * j));
        v_hash_core(b, nz, rk, keep);
        for (int j = 0; j < nz; j++)
            _mm512_mask_storeu_epi64((void *)(out + 4 * j), v_blocks_mask(n - 4 * (size_t)j), b[j]);
    }
}

TGT_VAES static void hash_sel_vaes(blk *out, const blk *in, const uint8_t *sel, size_t n)
{
    __m512i kl[11], kr[11];
    for (int r = 0; r < 11; r++) {
        kl[r] = v_rk1(DPF_KL, r);
        kr[r] = v_rk1(DPF_KR, r);
    }
    const __m512i one = _mm512_set_epi64(0, 1, 0, 1, 0, 1, 0, 1);
    while (n) {
        size_t m = n >= 16 ? 16 : n;
        int nz = (int)((m + 3) / 4);
        __m512i sg[4], b[4];
        __mmask8 ks[4];
        for (int j = 0; j < nz; j++) {
            unsigned k = 0;
            for (size_t i = 0; i < 4 && 4 * (size_t)j + i < m; i++) k |= (unsigned)(sel[4 * j + i] & 1) * (3u << (2 * i));
            ks[j] = (__mmask8)k;
            __m512i x = _mm512_maskz_loadu_epi64(v_blocks_mask(m - 4 * (size_t)j), (const void *)(in + 4 * j));
            sg[j] = v_sigma(_mm512_andnot_si512(one, x));
            b[j] = _mm512_xor_si512(sg[j], _mm512_mask_blend_epi64(ks[j], kl[0], kr[0]));
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < nz; j++)
                b[j] = _mm512_aesenc_epi128(b[j], _mm512_mask_blend_epi64(ks[j], kl[r], kr[r]));
        for (int j = 0; j < nz; j++) {
            __m512i k10 = _mm512_mask_blend_epi64(ks[j], kl[10], kr[10]);
            b[j] = _mm512_aesenclast_epi128(b[j], _mm512_xor_si512(k10, sg[j]));
            _mm512_mask_storeu_epi64((void *)(out + 4 * j), v_blocks_mask(m - 4 * (size_t)j), b[j]);
        }
        in += m;
        out += m;
        sel += m;
        n -= m;
    }
}

/* b: leaves on entry, (-1)^party (H_V(s) + t * cw) in 64-bit lanes on exit */
TGT_VAES static inline void v_conv_core(__m512i *b, int nz, const __m512i rk[11], const __m512i cwv,
                                        const __m512i neg)
{
    const __m512i clr = _mm512_set1_epi64(1);
    __m512i sg[VW];
    __mmask8 kt[VW];
    for (int j = 0; j < nz; j++) {
        kt[j] = v_tmask(b[j]);
        sg[j] = v_sigma_clr(b[j], clr);
        b[j] = _mm512_xor_si512(sg[j], rk[0]);
    }
    for (int r = 1; r < 10; r++)
        for (int j = 0; j < nz; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
    for (int j = 0; j < nz; j++) {
        __m512i h = _mm512_aesenclast_epi128(b[j], _mm512_xor_si512(sg[j], rk[10]));
        h = _mm512_mask_add_epi64(h, kt[j], h, cwv);
        b[j] = _mm512_sub_epi64(_mm512_xor_si512(h, neg), neg);
    }
}

TGT_VAES static void conv_u64_vaes(uint64_t *out, const blk *leaves, size_t n,
                                   const uint64_t cw[2], int party, int words)
{
    __m512i rk[11];
    for (int r = 0; r < 11; r++) rk[r] = v_rk1(DPF_KV, r);
    const __m512i cwv = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)cw[1], (long long)cw[0]));
    const __m512i neg = party ? _mm512_set1_epi64(-1) : _mm512_setzero_si512();
    while (n >= 4 * VW) {
        __m512i b[VW];
        for (int j = 0; j < VW; j++) b[j] = _mm512_loadu_si512((const void *)(leaves + 4 * j));
        v_conv_core(b, VW, rk, cwv, neg);
        if (words == 2) {
            for (int j = 0; j < VW; j++) _mm512_storeu_si512((void *)(out + 8 * j), b[j]);
        } else {
            for (int j = 0; j < VW; j++)
                _mm256_storeu_si256((__m256i *)(out + 4 * j),
                                    _mm512_castsi512_si256(_mm512_maskz_compress_epi64(0x55, b[j])));
        }
        leaves += 4 * VW;
        out += (size_t)words * 4 * VW;
        n -= 4 * VW;
    }
    if (n) {
        int nz = (int)((n + 3) / 4);
        __m512i b[VW];
        for (int j = 0; j < nz; j++)
            b[j] = _mm512_maskz_loadu_epi64(v_blocks_mask(n - 4 * (size_t)j), (const void *)(leaves + 4 * j));
        v_conv_core(b, nz, rk, cwv, neg);
        for (int j = 0; j < nz; j++) {
            __mmask8 bm = v_blocks_mask(n - 4 * (size_t)j);
            if (words == 2) _mm512_mask_storeu_epi64((void *)(out + 8 * j), bm, b[j]);
            else _mm512_mask_compressstoreu_epi64((void *)(out + 4 * j), (__mmask8)(bm & 0x55), b[j]);
        }
    }
}

/* Four 64-bit words per leaf from Convert blocks H_V(s) and H_V(s xor 1),
 * laid out like the tree expansion: a register holds four leaves, two AES
 * chains per register compute block 0 and block 1 of each, and two
 * permutations interleave them into the leaves' 4-word outputs. */
#define X4W 6   /* registers of 4 leaves in flight (12 AES chains; 3, 4, 8 measured slower) */
TGT_VAES static void conv_u64x4_vaes(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[4],
                                     int party)
{
    __m512i rk[11];
    for (int r = 0; r < 11; r++) rk[r] = v_rk1(DPF_KV, r);
    const __m512i cwv = _mm512_set_epi64((long long)cw[3], (long long)cw[2], (long long)cw[1], (long long)cw[0],
                                         (long long)cw[3], (long long)cw[2], (long long)cw[1], (long long)cw[0]);
    const __m512i clear = _mm512_set_epi64(-1, -2, -1, -2, -1, -2, -1, -2);
    const __m512i lobit = _mm512_set_epi64(0, 1, 0, 1, 0, 1, 0, 1);
    const __m512i ctr1 = _mm512_set_epi64(1, 0, 1, 0, 1, 0, 1, 0);        /* sigma(1) = (0, 1) */
    const __m512i i0 = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    const __m512i i1 = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
    size_t i = 0;
    while (i < n) {
        size_t regs = (n - i + 3) / 4;
        int nz = regs < X4W ? (int)regs : X4W;
        __m512i xa[X4W], xb[X4W], a[X4W], b[X4W];
        unsigned tb[X4W];
        for (int j = 0; j < nz; j++) {
            __m512i L = _mm512_maskz_loadu_epi64(v_blocks_mask(n - i - 4 * (size_t)j),
                                                 (const void *)(leaves + i + 4 * (size_t)j));
            __m512i T = _mm512_and_si512(L, clear);
            xa[j] = _mm512_xor_si512(_mm512_unpackhi_epi64(T, T), _mm512_unpacklo_epi64(_mm512_setzero_si512(), T));
            xb[j] = _mm512_xor_si512(xa[j], ctr1);
            a[j] = _mm512_xor_si512(xa[j], rk[0]);
            b[j] = _mm512_xor_si512(xb[j], rk[0]);
            tb[j] = (unsigned)_mm512_test_epi64_mask(L, lobit);           /* bits 0, 2, 4, 6 */
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < nz; j++) {
                a[j] = _mm512_aesenc_epi128(a[j], rk[r]);
                b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
            }
        for (int j = 0; j < nz; j++) {
            __m512i ha = _mm512_aesenclast_epi128(a[j], _mm512_xor_si512(xa[j], rk[10]));
            __m512i hb = _mm512_aesenclast_epi128(b[j], _mm512_xor_si512(xb[j], rk[10]));
            unsigned t = tb[j];                      /* branch free: control bits are secret */
            __mmask8 m0 = (__mmask8)((t & 1) * 0x0F | ((t >> 2) & 1) * 0xF0);
            __mmask8 m1 = (__mmask8)(((t >> 4) & 1) * 0x0F | ((t >> 6) & 1) * 0xF0);
            __m512i o0 = _mm512_permutex2var_epi64(ha, i0, hb), o1 = _mm512_permutex2var_epi64(ha, i1, hb);
            o0 = _mm512_mask_add_epi64(o0, m0, o0, cwv);
            o1 = _mm512_mask_add_epi64(o1, m1, o1, cwv);
            if (party) {                             /* public: predictable */
                o0 = _mm512_sub_epi64(_mm512_setzero_si512(), o0);
                o1 = _mm512_sub_epi64(_mm512_setzero_si512(), o1);
            }
            size_t first = i + 4 * (size_t)j, live = n - first < 4 ? n - first : 4;
            uint64_t *dst = out + 4 * first;
            if (live == 4) {
                _mm512_storeu_si512((void *)dst, o0);
                _mm512_storeu_si512((void *)(dst + 8), o1);
            } else {
                _mm512_mask_storeu_epi64((void *)dst, live >= 2 ? 0xFF : 0x0F, o0);
                if (live > 2) _mm512_mask_storeu_epi64((void *)(dst + 8), 0x0F, o1);
            }
        }
        i += 4 * (size_t)nz;
    }
}


/* Counter-mode conversion of d words (w bytes each) per leaf, accumulated or
 * stored, optionally negated.  The work is a flat list of (leaf i, register
 * k) tasks, register k holding blocks 4k .. 4k+3 of leaf i's stream, VW tasks
 * in flight.  sigma is linear, so sigma(s xor j) = sigma(s) xor sigma(j) with
 * sigma(j) = (0, j): one broadcast of sigma(s) per task and a per-lane
 * counter in the high words. */
typedef struct {
    const blk *leaves;
    uint8_t *acc;                /* output rows of d elements */
    const uint8_t *cw;
    size_t d, per, nz, i, k;     /* next task: leaf i, register k */
    uint16_t tailmask;
    int accumulate;              /* acc += v, else acc = v */
} v_acc_state;

/* nt tasks of w-byte elements; inlined with constant nt (= VW: the task
 * registers stay in registers, or the remainder) and w; neg all ones: the
 * values are negated */
TGT_VAES static inline __attribute__((always_inline)) void
v_conv_acc_group(v_acc_state *st, int nt, const unsigned w, __m512i neg, const __m512i rk[11])
{
    const __m512i lane = _mm512_set_epi64(3, 0, 2, 0, 1, 0, 0, 0);    /* sigma(j) for j = 0..3 */
    __m512i b[VW], in[VW];
    size_t off[VW], coff[VW];
    long long tb[VW];
    uint16_t msk[VW];
    for (int j = 0; j < nt; j++) {
        blk x = st->leaves[st->i];
        uint64_t lo = x.lo & ~(uint64_t)1;
        __m512i sg = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)(x.hi ^ lo ^ (4 * st->k)), (long long)x.hi));
        in[j] = _mm512_xor_si512(sg, lane);
        b[j] = _mm512_xor_si512(in[j], rk[0]);
        tb[j] = -(long long)(x.lo & 1);
        msk[j] = st->k + 1 == st->nz ? st->tailmask : 0xFFFF;
        off[j] = (st->i * st->d + st->k * st->per) * w;
        coff[j] = st->k * st->per * w;
        if (++st->k == st->nz) {
            st->k = 0;
            st->i++;
        }
    }
    for (int r = 1; r < 10; r++)
        for (int j = 0; j < nt; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
    for (int j = 0; j < nt; j++) {
        __m512i h = _mm512_aesenclast_epi128(b[j], _mm512_xor_si512(in[j], rk[10]));
        __m512i tm = _mm512_set1_epi64(tb[j]);
        uint8_t *dst = st->acc + off[j];
        const uint8_t *src = st->cw + coff[j];
        if (w == 8) {
            __mmask8 m = (__mmask8)msk[j];
            h = _mm512_add_epi64(h, _mm512_and_si512(tm, _mm512_maskz_loadu_epi64(m, src)));
            h = _mm512_sub_epi64(_mm512_xor_si512(h, neg), neg);
            if (st->accumulate) h = _mm512_add_epi64(h, _mm512_maskz_loadu_epi64(m, dst));
            _mm512_mask_storeu_epi64(dst, m, h);
        } else {
            __mmask16 m = (__mmask16)msk[j];
            h = _mm512_add_epi32(h, _mm512_and_si512(tm, _mm512_maskz_loadu_epi32(m, src)));
            h = _mm512_sub_epi32(_mm512_xor_si512(h, neg), neg);
            if (st->accumulate) h = _mm512_add_epi32(h, _mm512_maskz_loadu_epi32(m, dst));
            _mm512_mask_storeu_epi32(dst, m, h);
        }
    }
}

/* the flat task list over n leaves (inlined with a constant w) */
TGT_VAES static inline __attribute__((always_inline)) void
v_conv_acc_run(const blk *leaves, size_t n, void *out, const void *cw, size_t d, const unsigned w, int party,
               int accumulate, const __m512i rk[11])
{
    size_t per = 64 / w;
    size_t nz = (d + per - 1) / per;
    size_t tail = d - (nz - 1) * per;
    v_acc_state st = {leaves, out, cw, d, per, nz, 0, 0, (uint16_t)(tail >= 16 ? 0xFFFF : (1u << tail) - 1),
                      accumulate};
    const __m512i neg = party ? _mm512_set1_epi64(-1) : _mm512_setzero_si512();
    size_t total = n * nz, q = 0;
    for (; q + VW <= total; q += VW) v_conv_acc_group(&st, VW, w, neg, rk);
    if (q < total) v_conv_acc_group(&st, (int)(total - q), w, neg, rk);
}

/* The common shapes: NZ registers per leaf with NZ dividing VW (d = 8, 16,
 * 32, 64 over Z_2^64; 16 .. 128 over Z_2^32) and no tail.  VW / NZ whole
 * leaves per group, so sigma(s) and the control-bit mask are made once per
 * leaf; per register the inputs of round 0 and of the last round (which
 * folds in the feed-forward) are one XOR each with precomputed
 * lane-counter constants, the correction is a masked add and the
 * accumulation one add: about four vector operations per ten AES rounds. */
TGT_VAES static inline void v_conv_acc_leaves(const blk *leaves, size_t n, uint8_t *acc, const uint8_t *cw,
                                              unsigned w, const int NZ, const __m512i rk[11])
{
    const int LPG = VW / NZ;            /* leaves per group */
    __m512i l0[8], l10[8];
    for (int k = 0; k < NZ; k++) {
        __m512i lane = _mm512_set_epi64(4 * k + 3, 0, 4 * k + 2, 0, 4 * k + 1, 0, 4 * k, 0);
        l0[k] = _mm512_xor_si512(lane, rk[0]);
        l10[k] = _mm512_xor_si512(lane, rk[10]);
    }
    size_t row = (size_t)NZ * 64;       /* accumulator bytes per leaf */
    for (size_t i = 0; i < n; i += (size_t)LPG) {
        int nl = n - i < (size_t)LPG ? (int)(n - i) : LPG;
        __m512i b[VW], sg[VW];
        __mmask16 tk[VW];
        for (int l = 0; l < LPG; l++) {
            blk x = leaves[i + (size_t)(l < nl ? l : 0)];
            uint64_t lo = x.lo & ~(uint64_t)1;
            sg[l] = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)(x.hi ^ lo), (long long)x.hi));
            tk[l] = (__mmask16)(0 - (x.lo & 1));
            for (int k = 0; k < NZ; k++) b[l * NZ + k] = _mm512_xor_si512(sg[l], l0[k]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < VW; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
        for (int l = 0; l < LPG; l++) {
            if (l >= nl) break;
            uint8_t *a = acc + (i + (size_t)l) * row;
            for (int k = 0; k < NZ; k++) {
                __m512i h = _mm512_aesenclast_epi128(b[l * NZ + k], _mm512_xor_si512(sg[l], l10[k]));
                __m512i c = _mm512_loadu_si512((const void *)(cw + 64 * k));
                if (w == 8) {
                    h = _mm512_mask_add_epi64(h, (__mmask8)tk[l], h, c);
                    h = _mm512_add_epi64(h, _mm512_loadu_si512((const void *)(a + 64 * k)));
                } else {
                    h = _mm512_mask_add_epi32(h, tk[l], h, c);
                    h = _mm512_add_epi32(h, _mm512_loadu_si512((const void *)(a + 64 * k)));
                }
                _mm512_storeu_si512((void *)(a + 64 * k), h);
            }
        }
    }
}

/* The fused aggregation's conversion (conv_acc of dpf_internal.h): a flat
 * list of (leaf, register) tasks, register k of a leaf holding its Convert
 * blocks 4k .. 4k+3 (8 words of Z_2^64 or 16 of Z_2^32), VW tasks in flight,
 * as conv_u64_vec_vaes; the control-bit correction is an AND with 0 - t (no
 * branch on t) and the result is added into the accumulator row.  Shapes
 * without a tail whose register count divides VW take v_conv_acc_leaves. */
TGT_VAES static void conv_acc_vaes(void *acc, const blk *leaves, size_t n, const void *cw, size_t d,
                                   unsigned w)
{
    __m512i rk[11];
    for (int r = 0; r < 11; r++) rk[r] = v_rk1(DPF_KV, r);
    size_t per = 64 / w;
    size_t nz = (d + per - 1) / per;
    size_t tail = d - (nz - 1) * per;
    if (tail == per) {
        switch (nz) {
        case 8: v_conv_acc_leaves(leaves, n, acc, cw, w, 8, rk); return;
        case 4: v_conv_acc_leaves(leaves, n, acc, cw, w, 4, rk); return;
        case 2: v_conv_acc_leaves(leaves, n, acc, cw, w, 2, rk); return;
        case 1: v_conv_acc_leaves(leaves, n, acc, cw, w, 1, rk); return;
        default: break;
        }
    }
    if (w == 8) v_conv_acc_run(leaves, n, acc, cw, d, 8, 0, 1, rk);
    else v_conv_acc_run(leaves, n, acc, cw, d, 4, 0, 1, rk);
}

/* conv_u64_vec of dpf_internal.h: the tasks of conv_acc over Z_2^64 with the
 * party's sign and a store or an accumulate */
TGT_VAES static void conv_u64_vec_vaes(uint64_t *out, const blk *leaves, size_t n, const uint64_t *cw,
                                       size_t d, int party, int accumulate)
{
    __m512i rk[11];
    for (int r = 0; r < 11; r++) rk[r] = v_rk1(DPF_KV, r);
    v_conv_acc_run(leaves, n, out, cw, d, 8, party, accumulate, rk);
}

const secea__dpf_impl secea__dpf_impl_vaes = {
    "vaes", expand_vaes, hash_vaes, hash_sel_vaes, conv_u64_vaes, conv_u64_vec_vaes, conv_u64x4_vaes,
    conv_acc_vaes
};

#else
typedef int secea__dpf_x86_unused;
#endif
