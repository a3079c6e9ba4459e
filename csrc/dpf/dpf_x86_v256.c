/* DPF primitives on VAES with 256-bit registers ("vaes256"): for x86 CPUs
 * with VAES and AVX2 but no AVX-512 (AMD Zen 3), where one VAESENC on a ymm
 * register does the rounds of two blocks in the time AES-NI does one, so the
 * AES ceiling is twice the AES-NI one.  8 ymm registers (16 blocks) in
 * flight cover the instruction latency.
 *
 *   expand:   one register per node, the node broadcast to both lanes and
 *             the lanes under [k_L, k_R], so the register is (L_i, R_i) and
 *             is stored as is (children in natural order); the control-bit
 *             correction is an AND with 0 - t (no branch on t).
 *   hash:     two blocks per register.
 *   hash_sel: two blocks per register, the round keys one of 4 lane mixes
 *             of k_L and k_R chosen by the two (public) branch bits.
 *   conversions: Convert blocks 2k and 2k + 1 of a leaf in register k;
 *             sigma is linear, so sigma(s xor j) = sigma(s) xor (0, j): one
 *             XOR of the leaf's broadcast sigma with a lane counter per
 *             register.  The correction (AND with 0 - t), the party's sign
 *             and the add into the output row happen in the same pass while
 *             the hash output is in the register (AVX2 adds, 64- or 32-bit
 *             lanes), no buffer.  A partial last register of a row (rows of
 *             d w bytes, a multiple of 4) is read and written with AVX2
 *             masked loads and stores.
 * The "aesni" table (dpf_x86.c) is the reference twin of this one: the
 * same functions, bit for bit (tests/test_dpf_vaes256.py).  Every function
 * carries a target attribute, so the file compiles with the package's
 * baseline flags; variants.c selects the table at run time (the dispatch
 * struct's vaes256 feature; the AVX2 ceiling hides it). */
#include "dpf_internal.h"

#if SECEA_X86
#include <immintrin.h>
#include <wmmintrin.h>
#include "aes_v256.h"

#define TGT_Y SECEA_TARGET("aes,sse4.1,avx2,vaes")
#define INL inline __attribute__((always_inline))
#define YW 8 /* ymm registers in flight */

typedef secea__dpf_blk blk;

TGT_Y static INL __m128i y_rk(int which, int r)
{
    return _mm_loadu_si128((const __m128i *)secea__dpf_rk[which] + r);
}

/* sigma in both lanes: (lo, hi) -> (hi, hi ^ lo) */
TGT_Y static INL __m256i y_sigma(__m256i s)
{
    const __m256i hi = _mm256_set_epi64x(-1, 0, -1, 0);
    return _mm256_xor_si256(_mm256_shuffle_epi32(s, 0x4E), _mm256_and_si256(s, hi));
}

/* all-ones in each 128-bit lane whose bit 0 is set, else zero */
TGT_Y static INL __m256i y_tmask(__m256i x)
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    return _mm256_shuffle_epi32(_mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(x, one)), 0x44);
}

/* c = 1 or 2 blocks at p into the low lanes (the other lane zero) */
TGT_Y static INL __m256i y_load(const blk *p, size_t c)
{
    if (c >= 2) return _mm256_loadu_si256((const __m256i *)p);
    return _mm256_inserti128_si256(_mm256_setzero_si256(), _mm_loadu_si128((const __m128i *)p), 0);
}

TGT_Y static INL void y_store(blk *p, __m256i v, size_t c)
{
    if (c >= 2) _mm256_storeu_si256((__m256i *)p, v);
    else _mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(v));
}

/* ------------------------------------------------------------ expansion */

/* m nodes from in (a constant YW after inlining, or the tail).  A pre-pass
 * makes sigma(s) and the control-bit mask of two nodes per ymm register
 * (on the stack, 16 bytes per node), so the rounds' loops only broadcast
 * them: about half the AVX2 operations of making both per node and lane
 * before and after the rounds, and AVX2 operations take issue slots from
 * VAESENC on this core (secea_dpf_convacc_peak, mixes 3-5).  The round keys
 * are read from memory once per round (the empty asm keeps the compiler
 * from holding all 11 in registers and spilling the chains). */
TGT_Y static INL void y_expand_group(blk *out, const blk *in, int m, const __m256i k[11], __m256i cwv)
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    const __m256i *kq = k;
    __asm__("" : "+r"(kq));
    __m256i sgv[YW / 2], tmv[YW / 2];
    for (int j = 0; 2 * j < m; j++) {
        __m256i x = y_load(in + 2 * j, (size_t)(m - 2 * j));
        sgv[j] = y_sigma(_mm256_andnot_si256(one, x));
        tmv[j] = y_tmask(x);
    }
    const __m128i *sg = (const __m128i *)sgv, *tm = (const __m128i *)tmv;
    __asm__("" : "+r"(sg), "+r"(tm));   /* broadcast from memory, not lane shuffles */
    __m256i b[YW];
    SECEA_V256_ROUNDS9(b, sg, m, kq);
    __m256i k10 = _mm256_loadu_si256(kq + 10);
    for (int j = 0; j < m; j++) {
        __m256i h = _mm256_aesenclast_epi128(
            b[j], _mm256_xor_si256(k10, _mm256_broadcastsi128_si256(_mm_load_si128(sg + j))));
        __m256i c = _mm256_and_si256(_mm256_broadcastsi128_si256(_mm_load_si128(tm + j)), cwv);
        _mm256_storeu_si256((__m256i *)(out + 2 * j), _mm256_xor_si256(h, c));
    }
}

TGT_Y static void expand_v256(blk *out, const blk *in, size_t n, const blk cw[2])
{
    __m256i k[11];
    secea__v256_keys_lr(k);
    const __m256i cwv = _mm256_loadu_si256((const __m256i *)cw);      /* lanes cw[0] (left), cw[1] (right) */
    for (; n >= YW; n -= YW, in += YW, out += 2 * YW) y_expand_group(out, in, YW, k, cwv);
    if (n) y_expand_group(out, in, (int)n, k, cwv);
}

/* ----------------------------------------------------------------- hash */

/* nz registers of up to 2 blocks: c blocks in all */
TGT_Y static INL void y_hash_group(blk *out, const blk *in, int nz, size_t c, const __m256i k[11], __m256i keep)
{
    __m256i b[YW], sg[YW];
    for (int j = 0; j < nz; j++) {
        sg[j] = y_sigma(_mm256_and_si256(y_load(in + 2 * j, c - 2 * (size_t)j), keep));
        b[j] = _mm256_xor_si256(sg[j], k[0]);
    }
    for (int r = 1; r < 10; r++)
        for (int j = 0; j < nz; j++) b[j] = _mm256_aesenc_epi128(b[j], k[r]);
    for (int j = 0; j < nz; j++)
        y_store(out + 2 * j, _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(k[10], sg[j])), c - 2 * (size_t)j);
}

TGT_Y static void hash_v256(blk *out, const blk *in, size_t n, int which, int clear)
{
    __m256i k[11];
    for (int r = 0; r < 11; r++) k[r] = _mm256_broadcastsi128_si256(y_rk(which, r));
    const __m256i keep = clear ? _mm256_set_epi64x(-1, -2, -1, -2) : _mm256_set1_epi64x(-1);
    for (; n >= 2 * YW; n -= 2 * YW, in += 2 * YW, out += 2 * YW) y_hash_group(out, in, YW, 2 * YW, k, keep);
    if (n) y_hash_group(out, in, (int)((n + 1) / 2), n, k, keep);
}

/* out[i] = H_{sel[i]}(in[i] & ~1): register j's keys are T[its 2 sel bits] */
TGT_Y static void hash_sel_v256(blk *out, const blk *in, const uint8_t *sel, size_t n)
{
    __m256i T[4][11];
    for (int r = 0; r < 11; r++) {
        __m128i kl = y_rk(DPF_KL, r), kr = y_rk(DPF_KR, r);
        for (int m = 0; m < 4; m++) T[m][r] = _mm256_set_m128i(m & 2 ? kr : kl, m & 1 ? kr : kl);
    }
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    while (n) {
        size_t c = n < 2 * YW ? n : 2 * YW;
        int nz = (int)((c + 1) / 2);
        __m256i b[YW], sg[YW];
        const __m256i *k[YW];
        for (int j = 0; j < nz; j++) {
            size_t cj = c - 2 * (size_t)j;
            unsigned m = (sel[2 * j] & 1u) | (cj >= 2 ? (sel[2 * j + 1] & 1u) << 1 : 0);   /* public */
            k[j] = T[m];
            sg[j] = y_sigma(_mm256_andnot_si256(one, y_load(in + 2 * j, cj)));
            b[j] = _mm256_xor_si256(sg[j], k[j][0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < nz; j++) b[j] = _mm256_aesenc_epi128(b[j], k[j][r]);
        for (int j = 0; j < nz; j++)
            y_store(out + 2 * j, _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(k[j][10], sg[j])),
                    c - 2 * (size_t)j);
        in += c;
        out += c;
        sel += c;
        n -= c;
    }
}

/* ---------------------------------------------------------- conversions */

/* conv_u64: two leaves per register, words = 1 or 2 per leaf */
TGT_Y static void conv_u64_v256(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[2], int party,
                                int words)
{
    __m256i k[11];
    for (int r = 0; r < 11; r++) k[r] = _mm256_broadcastsi128_si256(y_rk(DPF_KV, r));
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1);
    const __m256i cwv = _mm256_set_epi64x((long long)cw[1], (long long)cw[0], (long long)cw[1], (long long)cw[0]);
    const __m256i neg = party ? _mm256_set1_epi64x(-1) : _mm256_setzero_si256();
    while (n) {
        size_t c = n < 2 * YW ? n : 2 * YW;
        int nz = (int)((c + 1) / 2);
        __m256i b[YW], sg[YW];
        for (int j = 0; j < nz; j++) {
            sg[j] = y_sigma(_mm256_andnot_si256(one, y_load(leaves + 2 * j, c - 2 * (size_t)j)));
            b[j] = _mm256_xor_si256(sg[j], k[0]);
        }
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < nz; j++) b[j] = _mm256_aesenc_epi128(b[j], k[r]);
        for (int j = 0; j < nz; j++) {
            size_t cj = c - 2 * (size_t)j;
            __m256i h = _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(k[10], sg[j]));
            __m256i tm = y_tmask(y_load(leaves + 2 * j, cj));
            h = _mm256_add_epi64(h, _mm256_and_si256(tm, cwv));
            h = _mm256_sub_epi64(_mm256_xor_si256(h, neg), neg);            /* -h if party */
            if (words == 2) {
                y_store((blk *)(out + 4 * j), h, cj);
            } else {
                __m128i lo = _mm256_castsi256_si128(_mm256_permute4x64_epi64(h, 0x08));   /* words 0 and 2 */
                if (cj >= 2) _mm_storeu_si128((__m128i *)(out + 2 * j), lo);
                else out[2 * j] = (uint64_t)_mm_cvtsi128_si64(lo);
            }
        }
        leaves += c;
        out += (size_t)words * c;
        n -= c;
    }
}

/* Output rows of d elements of w bytes (rowb = d w bytes, nz registers of
 * 32 bytes, the last one `tail` 4-byte lanes of 8 if partial), the leaf's
 * Convert blocks 2k, 2k + 1 in register k:
 *     v = (word(Convert(s_i)) + t_i cw) ^ neg) - neg;  row = v, or row += v. */
typedef struct {
    const blk *leaves;
    uint8_t *out;
    const uint8_t *cw;
    size_t rowb, nz, i, k;   /* next task: leaf i, register k */
    __m256i tailm;           /* 4-byte lanes of a partial last register */
    int partial, accumulate;
} y_conv_state;

/* the add, sign and store of one register (w constant after inlining) */
TGT_Y static INL void y_conv_out(uint8_t *dst, const uint8_t *src, __m256i h, __m256i tm, __m256i neg, unsigned w,
                                 int accumulate, int part, __m256i tailm)
{
    __m256i c = part ? _mm256_maskload_epi32((const int *)src, tailm) : _mm256_loadu_si256((const __m256i *)src);
    c = _mm256_and_si256(c, tm);
    if (w == 8) {
        h = _mm256_sub_epi64(_mm256_xor_si256(_mm256_add_epi64(h, c), neg), neg);
        if (accumulate)
            h = _mm256_add_epi64(h, part ? _mm256_maskload_epi32((const int *)dst, tailm)
                                         : _mm256_loadu_si256((const __m256i *)dst));
    } else {
        h = _mm256_sub_epi32(_mm256_xor_si256(_mm256_add_epi32(h, c), neg), neg);
        if (accumulate)
            h = _mm256_add_epi32(h, part ? _mm256_maskload_epi32((const int *)dst, tailm)
                                         : _mm256_loadu_si256((const __m256i *)dst));
    }
    if (part) _mm256_maskstore_epi32((int *)dst, tailm, h);
    else _mm256_storeu_si256((__m256i *)dst, h);
}

/* nt tasks (leaf, register) of the flat list (YW after inlining, or the
 * remainder): any row length */
TGT_Y static INL void y_conv_tasks(y_conv_state *st, int nt, const unsigned w, __m256i neg, const __m256i k[11])
{
    __m256i b[YW], in[YW];
    uint8_t *dst[YW];
    const uint8_t *src[YW];
    long long tb[YW];
    int part[YW];
    for (int j = 0; j < nt; j++) {
        blk x = st->leaves[st->i];
        uint64_t lo = x.lo & ~(uint64_t)1;
        long long h0 = (long long)(x.hi ^ lo ^ (2 * st->k));               /* sigma(s xor 2k): (hi, hi ^ lo ^ 2k) */
        in[j] = _mm256_set_epi64x(h0 ^ 1, (long long)x.hi, h0, (long long)x.hi);
        b[j] = _mm256_xor_si256(in[j], k[0]);
        tb[j] = -(long long)(x.lo & 1);
        dst[j] = st->out + st->i * st->rowb + 32 * st->k;
        src[j] = st->cw + 32 * st->k;
        part[j] = st->partial && st->k + 1 == st->nz;
        if (++st->k == st->nz) {
            st->k = 0;
            st->i++;
        }
    }
    for (int r = 1; r < 10; r++)
        for (int j = 0; j < nt; j++) b[j] = _mm256_aesenc_epi128(b[j], k[r]);
    for (int j = 0; j < nt; j++) {
        __m256i h = _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(in[j], k[10]));
        y_conv_out(dst[j], src[j], h, _mm256_set1_epi64x(tb[j]), neg, w, st->accumulate, part[j], st->tailm);
    }
}

/* Rows of a whole multiple of YW registers (d = 64 over Z_2^32 or Z_2^64,
 * the SecEmb shape).  sigma is linear, sigma(s xor j) = sigma(s) xor (0, j),
 * so register q's first and last round keys are sigma(s) xor (0, 2o), o =
 * q - q mod 16 (one XOR per group of YW registers past the first 16; 2o is a
 * multiple of 32, so XOR is the add), XOR a table entry made once per call,
 * K0 or K10 xor ((0, 2j) | (0, 2j + 1)), j = q mod 16: one XOR with a memory
 * operand per register and end, no counters carried (the counter adds and
 * their spills cost 0.68 -> 0.78 of
 * the ceiling; secea_dpf_convacc_peak). */
/* 12 registers in flight over 256-byte rows (8 registers per leaf): nA
 * registers of leaf A from register kA, then 12 - nA of leaf B from kB
 * (constants after inlining); the row kernel's mix otherwise. */
TGT_Y static INL void y_conv_g12(__m256i sgA, __m256i tmA, uint8_t *rowA, const int kA, const int nA, __m256i sgB,
                                 __m256i tmB, uint8_t *rowB, const int kB, const uint8_t *cw, const unsigned w,
                                 __m256i neg, int accumulate, const __m256i *k, const __m256i (*kc)[2 * YW])
{
    const __m256i *kq = k, *t0 = kc[0], *t1 = kc[1];
    __asm__("" : "+r"(kq), "+r"(t0), "+r"(t1));
    __m256i b[12];
    for (int j = 0; j < 12; j++) b[j] = _mm256_xor_si256(j < nA ? sgA : sgB, t0[j < nA ? kA + j : kB + j - nA]);
    for (int r = 1; r < 10; r++) {
        __m256i kr = _mm256_loadu_si256(kq + r);
        for (int j = 0; j < 12; j++) b[j] = _mm256_aesenc_epi128(b[j], kr);
    }
    for (int j = 0; j < 12; j++) {
        int q = j < nA ? kA + j : kB + j - nA;
        __m256i h = _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(j < nA ? sgA : sgB, t1[q]));
        y_conv_out((j < nA ? rowA : rowB) + 32 * q, cw + 32 * q, h, j < nA ? tmA : tmB, neg, w, accumulate, 0,
                   _mm256_setzero_si256());
    }
}

TGT_Y static INL void y_conv_rows(const blk *leaves, size_t n, uint8_t *out, const uint8_t *cw, size_t nz,
                                  const unsigned w, __m256i neg, int accumulate, const __m256i k[11])
{
    __m256i kc[2][2 * YW];   /* K0 ^ ctr_j, K10 ^ ctr_j */
    for (int j = 0; j < 2 * YW; j++) {
        __m256i c = _mm256_set_epi64x(2 * j + 1, 0, 2 * j, 0);
        kc[0][j] = _mm256_xor_si256(k[0], c);
        kc[1][j] = _mm256_xor_si256(k[10], c);
    }
    /* rows of 8 registers (d = 64 over Z_2^32): 3 leaves in 2 groups of 12
     * registers, 12 chains in flight (slot 0.80 -> 0.87 of the ceiling
     * against groups of 8, secea_dpf_convacc_peak; the same path for rows
     * of 16 in this function made gcc's code for both slower, 0.59) */
    size_t i = 0;
    const __m256i(*kt)[2 * YW] = (const __m256i(*)[2 * YW])kc;
    if (nz == YW)
        for (; i + 3 <= n; i += 3) {
            __m256i sg[3], tm[3];
            for (int l = 0; l < 3; l++) {
                blk x = leaves[i + l];
                uint64_t lo = x.lo & ~(uint64_t)1;
                sg[l] = _mm256_set_epi64x((long long)(x.hi ^ lo), (long long)x.hi, (long long)(x.hi ^ lo),
                                          (long long)x.hi);
                tm[l] = _mm256_set1_epi64x(-(long long)(x.lo & 1));
            }
            size_t rb = 32 * nz;
            uint8_t *r0 = out + i * rb, *r1 = r0 + rb, *r2 = r1 + rb;
            y_conv_g12(sg[0], tm[0], r0, 0, 8, sg[1], tm[1], r1, 0, cw, w, neg, accumulate, k, kt);
            y_conv_g12(sg[1], tm[1], r1, 4, 4, sg[2], tm[2], r2, 0, cw, w, neg, accumulate, k, kt);
        }
    for (; i < n; i++) {
        blk x = leaves[i];
        uint64_t lo = x.lo & ~(uint64_t)1;
        const __m256i sg0 = _mm256_set_epi64x((long long)(x.hi ^ lo), (long long)x.hi, (long long)(x.hi ^ lo),
                                              (long long)x.hi);
        const __m256i tm = _mm256_set1_epi64x(-(long long)(x.lo & 1));
        uint8_t *row = out + i * nz * 32;
        for (size_t g = 0; g < nz; g += YW) {
            size_t g0 = g % (2 * YW), go = g - g0;
            const __m256i *kq = k, *t0 = kc[0] + g0, *t1 = kc[1] + g0;
            __asm__("" : "+r"(kq), "+r"(t0), "+r"(t1));   /* keys and tables stay memory operands */
            __m256i sg = go ? _mm256_xor_si256(sg0, _mm256_set_epi64x((long long)(2 * go), 0, (long long)(2 * go), 0))
                            : sg0;
            __m256i b[YW];
            for (int j = 0; j < YW; j++) b[j] = _mm256_xor_si256(sg, t0[j]);
            for (int r = 1; r < 10; r++) {
                __m256i kr = _mm256_loadu_si256(kq + r);
                for (int j = 0; j < YW; j++) b[j] = _mm256_aesenc_epi128(b[j], kr);
            }
            for (int j = 0; j < YW; j++) {
                __m256i h = _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(sg, t1[j]));
                y_conv_out(row + 32 * (g + (size_t)j), cw + 32 * (g + (size_t)j), h, tm, neg, w, accumulate, 0,
                           _mm256_setzero_si256());
            }
        }
    }
}

TGT_Y static INL void y_conv_run(const blk *leaves, size_t n, void *out, const void *cw, size_t d, const unsigned w,
                                 int party, int accumulate)
{
    __m256i k[11];
    for (int r = 0; r < 11; r++) k[r] = _mm256_broadcastsi128_si256(y_rk(DPF_KV, r));
    const __m256i neg = party ? _mm256_set1_epi64x(-1) : _mm256_setzero_si256();
    size_t rowb = d * w, nz = (rowb + 31) / 32, lanes = (rowb - 32 * (nz - 1)) / 4;
    if (rowb % 32 == 0 && nz % YW == 0) {
        if (accumulate) y_conv_rows(leaves, n, out, cw, nz, w, neg, 1, k);
        else y_conv_rows(leaves, n, out, cw, nz, w, neg, 0, k);
        return;
    }
    y_conv_state st;
    st.leaves = leaves;
    st.out = out;
    st.cw = cw;
    st.rowb = rowb;
    st.nz = nz;
    st.i = st.k = 0;
    st.partial = lanes < 8;
    st.tailm = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)lanes), _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    st.accumulate = accumulate;
    size_t total = n * nz, q = 0;
    for (; q + YW <= total; q += YW) y_conv_tasks(&st, YW, w, neg, k);
    if (q < total) y_conv_tasks(&st, (int)(total - q), w, neg, k);
}

TGT_Y static void conv_u64_vec_v256(uint64_t *out, const blk *leaves, size_t n, const uint64_t *cw, size_t d,
                                    int party, int accumulate)
{
    y_conv_run(leaves, n, out, cw, d, 8, party, accumulate);
}

TGT_Y static void conv_u64x4_v256(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[4], int party)
{
    y_conv_run(leaves, n, out, cw, 4, 8, party, 0);
}

TGT_Y static void conv_acc_v256(void *acc, const blk *leaves, size_t n, const void *cw, size_t d, unsigned w)
{
    if (w == 8) y_conv_run(leaves, n, acc, cw, d, 8, 0, 1);
    else y_conv_run(leaves, n, acc, cw, d, 4, 0, 1);
}

const secea__dpf_impl secea__dpf_impl_vaes256 = {
    "vaes256", expand_v256, hash_v256, hash_sel_v256, conv_u64_v256, conv_u64_vec_v256, conv_u64x4_v256,
    conv_acc_v256
};

/* The AES ceiling of this table (benchmarks): nblocks AES-128 encryptions
 * on registers only, 8 independent chains of 2 blocks (VAES on ymm), no
 * loads or stores, as secea_aes_peak does for the AES variants. */
TGT_Y uint64_t secea__dpf_aes_peak_v256(size_t nblocks)
{
    __m256i rk[11], b[YW];
    for (int r = 0; r < 11; r++) rk[r] = _mm256_set1_epi64x(0x0123456789abcdefLL * (r + 1));
    for (int j = 0; j < YW; j++) b[j] = _mm256_set1_epi64x(j);
    for (size_t i = 0; i < nblocks; i += 2 * YW) {
        for (int r = 0; r < 9; r++)
            for (int j = 0; j < YW; j++) b[j] = _mm256_aesenc_epi128(b[j], rk[r]);
        for (int j = 0; j < YW; j++) b[j] = _mm256_aesenclast_epi128(b[j], rk[10]);
    }
    __m256i x = b[0];
    for (int j = 1; j < YW; j++) x = _mm256_xor_si256(x, b[j]);
    return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(x));
}

#else
typedef int secea__dpf_x86_v256_unused;
#endif
