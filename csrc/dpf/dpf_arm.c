/* DPF primitives with the ARMv8 Crypto Extensions: "armce" (AESE/AESMC on
 * 128-bit NEON registers, 8 blocks in flight), the counterpart of dpf_x86.c's
 * "aesni".
 *
 * One AES-128 encryption is AESMC(AESE(x, rk[r])) for r = 0..8, then
 * AESE(x, rk[9]) xor rk[10] (aes_arm.c).  The Matyas-Meyer-Oseas
 * feed-forward of the fixed-key hash H_k(x) = AES_k(sigma(x)) xor sigma(x)
 * (dpf_internal.h) is folded into that last XOR: rk[10] xor sigma(x).  Tree
 * expansion runs the two halves of G (keys k_L and k_R) on the same node as
 * two independent blocks, so four nodes give eight blocks in flight and the
 * children are stored in natural order.  Control-bit corrections are ANDs
 * with 0 - t: no branches on t or on seeds.
 *
 * Every function using the AES intrinsics carries SECEA_TARGET_ARMCE, so the
 * file compiles with the baseline flags; variants.c selects it at run time. */
#include "dpf_internal.h"

#if SECEA_ARMCE
#include <arm_neon.h>

#define TGT SECEA_TARGET_ARMCE

typedef secea__dpf_blk blk;

TGT static inline void load_rk(uint8x16_t k[11], int which)
{
    for (int i = 0; i < 11; i++) k[i] = vld1q_u8(secea__dpf_rk[which] + 16 * i);
}

static inline uint64x2_t ld(const blk *b)
{
    return vld1q_u64((const uint64_t *)b);
}

static inline void st(blk *b, uint8x16_t x)
{
    vst1q_u64((uint64_t *)b, vreinterpretq_u64_u8(x));
}

/* sigma(lo, hi) = (hi, hi xor lo) */
static inline uint64x2_t sigma(uint64x2_t s)
{
    const uint64x2_t hi = vcombine_u64(vcreate_u64(0), vcreate_u64(~(uint64_t)0));
    return veorq_u64(vextq_u64(s, s, 1), vandq_u64(s, hi));
}

/* all ones in both lanes if bit 0 of x is set, else zero */
static inline uint64x2_t tmask(uint64x2_t x)
{
    int64x2_t t = vreinterpretq_s64_u64(vandq_u64(x, vcombine_u64(vcreate_u64(1), vcreate_u64(0))));
    return vdupq_laneq_u64(vreinterpretq_u64_s64(vnegq_s64(t)), 0);
}

static inline uint64x2_t clear_t(uint64x2_t x)
{
    return vandq_u64(x, vcombine_u64(vcreate_u64(~(uint64_t)1), vcreate_u64(~(uint64_t)0)));
}

#define U8(x) vreinterpretq_u8_u64(x)
#define U64(x) vreinterpretq_u64_u8(x)

/* the nine rounds before the last one, on m blocks */
#define ROUNDS9(b, m, KEY)                                                    \
    do {                                                                      \
        for (int r_ = 0; r_ < 9; r_++)                                        \
            for (int j_ = 0; j_ < (m); j_++) (b)[j_] = vaesmcq_u8(vaeseq_u8((b)[j_], KEY(j_)[r_])); \
    } while (0)

TGT static void expand_armce(blk *out, const blk *in, size_t n, const blk cw[2])
{
    uint8x16_t kl[11], kr[11];
    load_rk(kl, DPF_KL);
    load_rk(kr, DPF_KR);
    const uint64x2_t cwl = ld(&cw[0]), cwr = ld(&cw[1]);
    while (n) {
        int m = n >= 4 ? 4 : (int)n;
        uint64x2_t sg[4], tm[4];
        uint8x16_t b[8];
        for (int j = 0; j < m; j++) {
            uint64x2_t x = ld(in + j);
            tm[j] = tmask(x);
            sg[j] = sigma(clear_t(x));
            b[2 * j] = U8(sg[j]);
            b[2 * j + 1] = U8(sg[j]);
        }
#define KEY_LR(j) (((j) & 1) ? kr : kl)
        ROUNDS9(b, 2 * m, KEY_LR);
#undef KEY_LR
        for (int j = 0; j < m; j++) {
            uint8x16_t l = veorq_u8(vaeseq_u8(b[2 * j], kl[9]), veorq_u8(kl[10], U8(sg[j])));
            uint8x16_t r = veorq_u8(vaeseq_u8(b[2 * j + 1], kr[9]), veorq_u8(kr[10], U8(sg[j])));
            st(out + 2 * j, veorq_u8(l, U8(vandq_u64(tm[j], cwl))));
            st(out + 2 * j + 1, veorq_u8(r, U8(vandq_u64(tm[j], cwr))));
        }
        in += m;
        out += 2 * m;
        n -= (size_t)m;
    }
}

TGT static void hash_armce(blk *out, const blk *in, size_t n, int which, int clear)
{
    uint8x16_t k[11];
    load_rk(k, which);
    const uint64x2_t keep = clear ? vcombine_u64(vcreate_u64(~(uint64_t)1), vcreate_u64(~(uint64_t)0))
                                  : vdupq_n_u64(~(uint64_t)0);
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        uint8x16_t sg[8], b[8];
        for (int j = 0; j < m; j++) {
            sg[j] = U8(sigma(vandq_u64(ld(in + j), keep)));
            b[j] = sg[j];
        }
#define KEY_ONE(j) k
        ROUNDS9(b, m, KEY_ONE);
#undef KEY_ONE
        for (int j = 0; j < m; j++) st(out + j, veorq_u8(vaeseq_u8(b[j], k[9]), veorq_u8(k[10], sg[j])));
        in += m;
        out += m;
        n -= (size_t)m;
    }
}

TGT static void hash_sel_armce(blk *out, const blk *in, const uint8_t *sel, size_t n)
{
    uint8x16_t rk[2][11];
    load_rk(rk[0], DPF_KL);
    load_rk(rk[1], DPF_KR);
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        uint8x16_t sg[8], b[8];
        const uint8x16_t *k[8];
        for (int j = 0; j < m; j++) {
            k[j] = rk[sel[j] & 1];       /* sel is the public evaluation point */
            sg[j] = U8(sigma(clear_t(ld(in + j))));
            b[j] = sg[j];
        }
#define KEY_SEL(j) k[j]
        ROUNDS9(b, m, KEY_SEL);
#undef KEY_SEL
        for (int j = 0; j < m; j++)
            st(out + j, veorq_u8(vaeseq_u8(b[j], k[j][9]), veorq_u8(k[j][10], sg[j])));
        in += m;
        out += m;
        sel += m;
        n -= (size_t)m;
    }
}

TGT static void conv_u64_armce(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[2], int party,
                               int words)
{
    uint8x16_t k[11];
    load_rk(k, DPF_KV);
    const uint64x2_t cwv = vcombine_u64(vcreate_u64(cw[0]), vcreate_u64(cw[1]));
    const uint64x2_t neg = vdupq_n_u64(party ? ~(uint64_t)0 : 0);
    while (n) {
        int m = n >= 8 ? 8 : (int)n;
        uint64x2_t tm[8];
        uint8x16_t sg[8], b[8];
        for (int j = 0; j < m; j++) {
            uint64x2_t x = ld(leaves + j);
            tm[j] = tmask(x);
            sg[j] = U8(sigma(clear_t(x)));
            b[j] = sg[j];
        }
#define KEY_ONE(j) k
        ROUNDS9(b, m, KEY_ONE);
#undef KEY_ONE
        for (int j = 0; j < m; j++) {
            uint64x2_t h = U64(veorq_u8(vaeseq_u8(b[j], k[9]), veorq_u8(k[10], sg[j])));
            h = vaddq_u64(h, vandq_u64(tm[j], cwv));
            h = vsubq_u64(veorq_u64(h, neg), neg);          /* -h if party */
            if (words == 2) vst1q_u64(out + 2 * j, h);
            else out[j] = vgetq_lane_u64(h, 0);
        }
        leaves += m;
        out += (size_t)words * m;
        n -= (size_t)m;
    }
}

/* the slots without special code here: the plain-C conversions of
 * convert_hashed.c on this variant's own hash */

static void conv_u64_vec_armce(uint64_t *out, const blk *leaves, size_t n, const uint64_t *cw, size_t d,
                             int party, int accumulate)
{
    secea__dpf_conv_u64_vec_hashed(hash_armce, out, leaves, n, cw, d, party, accumulate);
}

static void conv_u64x4_armce(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[4], int party)
{
    secea__dpf_conv_u64_vec_hashed(hash_armce, out, leaves, n, cw, 4, party, 0);
}

static void conv_acc_armce(void *acc, const blk *leaves, size_t n, const void *cw, size_t d, unsigned w)
{
    secea__dpf_conv_acc_hashed(hash_armce, acc, leaves, n, cw, d, w);
}

const secea__dpf_impl secea__dpf_impl_armce = {
    "armce", expand_armce, hash_armce, hash_sel_armce, conv_u64_armce, conv_u64_vec_armce, conv_u64x4_armce,
    conv_acc_armce
};

#else
/* Not AArch64 or no SECEA_ARMCE: keep the translation unit non-empty (ISO C). */
typedef int secea__dpf_arm_unused;
#endif
