/* Exact matrix product over F_p, p < 2^50 (the default embedding prime), on
 * 64-bit ARM with Advanced SIMD: variant "neon".
 *
 * NEON has no 64 x 64-bit multiply, but it has UMLAL: 32 x 32 -> 64-bit
 * products accumulated into two 64-bit lanes.  Entries x < p < 2^50 are split
 * into 25-bit limbs, x = x_h 2^25 + x_l, so
 *     a b = a_l b_l + (a_l b_h + a_h b_l) 2^25 + a_h b_h 2^50
 * and each limb product is < 2^50: one 64-bit lane holds the sum of 2^13 of
 * them (the cross terms, two per step, 2^12 steps), so sums run exactly over
 * chunks of KCH = 4096 terms, are then combined into a 128-bit integer and
 * reduced once per chunk (secea_mod192).  A tile is 2 rows x 4 columns: per
 * step, 3 loads and 16 UMLAL give 8 products (2 UMLAL per product, against
 * MUL + UMULH + 3 adds in the scalar kernel of matmul.c).  bench/arm_mca.py
 * estimates the inner loop at 2.0 cycles per product against 3.0 for the
 * scalar loop on llvm-mca's Cortex-A57 model (the one llvm 14 uses for
 * Cortex-A72 and Neoverse N1/V1), 1.0 against 2.45 on its Apple model;
 * nothing was measured on ARM hardware (docs/PERFORMANCE.md, "ARM (aarch64)").
 *
 * B is packed once per column group of 4 (n padded with zero columns): per
 * step t, the 4 low limbs then the 4 high limbs.  Each job packs the limbs of
 * its row pairs into a k x 4 scratch (wiped after: the fused-decryption path
 * multiplies plaintext queries). */
#include <stdlib.h>
#include <string.h>
#include "matmul_internal.h"

#if SECEA_ARM64
#include <arm_neon.h>

#define LIMB 25
#define LIMB_MASK ((1u << LIMB) - 1)
#define KCH 4096   /* steps per exact 64-bit lane sum: 2 * 2^12 * 2^50 = 2^63 */

static void *pack_b_neon(const uint64_t *B, size_t k, size_t n, uint64_t p)
{
    (void)p;
    size_t groups = (n + 3) / 4;
    uint32_t *Bp = malloc(groups * k * 8 * sizeof(uint32_t) + 1);
    if (!Bp) return NULL;
    for (size_t g = 0; g < groups; g++)
        for (size_t t = 0; t < k; t++) {
            uint32_t *d = Bp + (g * k + t) * 8;
            for (size_t c = 0; c < 4; c++) {
                size_t col = 4 * g + c;
                uint64_t v = col < n ? B[t * n + col] : 0;
                d[c] = (uint32_t)(v & LIMB_MASK);
                d[4 + c] = (uint32_t)(v >> LIMB);
            }
        }
    return Bp;
}

/* acc[6 r + 3 h + s]: row r, columns 2h and 2h + 1 (the lanes); s = 0 low
 * limb products, 1 cross products, 2 high limb products */
static inline void tile_steps(uint64x2_t acc[12], const uint32_t *ap, const uint32_t *bp, size_t steps)
{
    uint64x2_t c[12];
    for (int i = 0; i < 12; i++) c[i] = vdupq_n_u64(0);
    for (size_t t = 0; t < steps; t++) {
        uint32x4_t av = vld1q_u32(ap + 4 * t);
        uint32x4_t bl = vld1q_u32(bp + 8 * t), bh = vld1q_u32(bp + 8 * t + 4);
        uint32x2_t bl0 = vget_low_u32(bl), bl1 = vget_high_u32(bl);
        uint32x2_t bh0 = vget_low_u32(bh), bh1 = vget_high_u32(bh);
        uint32x2_t r0 = vget_low_u32(av), r1 = vget_high_u32(av);    /* (a_l, a_h) of rows 0, 1 */
#define ROW(r, ar)                                                                            \
        c[6 * r + 0] = vmlal_lane_u32(c[6 * r + 0], bl0, ar, 0);                              \
        c[6 * r + 1] = vmlal_lane_u32(vmlal_lane_u32(c[6 * r + 1], bh0, ar, 0), bl0, ar, 1);   \
        c[6 * r + 2] = vmlal_lane_u32(c[6 * r + 2], bh0, ar, 1);                              \
        c[6 * r + 3] = vmlal_lane_u32(c[6 * r + 3], bl1, ar, 0);                              \
        c[6 * r + 4] = vmlal_lane_u32(vmlal_lane_u32(c[6 * r + 4], bh1, ar, 0), bl1, ar, 1);   \
        c[6 * r + 5] = vmlal_lane_u32(c[6 * r + 5], bh1, ar, 1);
        ROW(0, r0)
        ROW(1, r1)
#undef ROW
    }
    for (int i = 0; i < 12; i++) acc[i] = c[i];
}

static inline uint64_t lane(uint64x2_t v, int l)
{
    return l ? vgetq_lane_u64(v, 1) : vgetq_lane_u64(v, 0);
}

static void run_neon(secea__mm_job *jb)
{
    const uint32_t *Bp = jb->Bpacked;
    size_t k = jb->k, n = jb->n, groups = (n + 3) / 4;
    secea_modctx mc;
    secea_modctx_init(&mc, jb->p);
    uint32_t *ap = malloc(4 * k * sizeof(uint32_t));
    if (!ap) {
        jb->status = -1;
        return;
    }
    for (size_t i = jb->row0; i < jb->row1; i += 2) {
        int two = i + 1 < jb->row1;
        const uint64_t *a0 = jb->A + i * k, *a1 = two ? a0 + k : a0;
        for (size_t t = 0; t < k; t++) {
            uint64_t x = a0[t], y = two ? a1[t] : 0;
            ap[4 * t] = (uint32_t)(x & LIMB_MASK);
            ap[4 * t + 1] = (uint32_t)(x >> LIMB);
            ap[4 * t + 2] = (uint32_t)(y & LIMB_MASK);
            ap[4 * t + 3] = (uint32_t)(y >> LIMB);
        }
        for (size_t g = 0; g < groups; g++) {
            uint64_t res[2][4] = {{0}};
            for (size_t t0 = 0; t0 < k; t0 += KCH) {
                size_t steps = k - t0 < KCH ? k - t0 : KCH;
                uint64x2_t acc[12];
                tile_steps(acc, ap + 4 * t0, Bp + (g * k + t0) * 8, steps);
                for (int r = 0; r < 2; r++)
                    for (int h = 0; h < 2; h++)
                        for (int l = 0; l < 2; l++) {
                            const uint64x2_t *s = acc + 6 * r + 3 * h;
                            secea_u128 v = (secea_u128)lane(s[0], l) + ((secea_u128)lane(s[1], l) << LIMB) +
                                           ((secea_u128)lane(s[2], l) << (2 * LIMB));
                            uint64_t m = secea_mod192(&mc, 0, (uint64_t)(v >> 64), (uint64_t)v);
                            res[r][2 * h + l] = secea_addmod(res[r][2 * h + l], m, jb->p);
                        }
            }
            for (int r = 0; r < 1 + two; r++)
                for (size_t c = 0; c < 4 && 4 * g + c < n; c++) jb->C[(i + (size_t)r) * n + 4 * g + c] = res[r][c];
        }
    }
    secea_wipe(ap, 4 * k * sizeof(uint32_t));
    free(ap);
    jb->status = 0;
}

const secea__mm_variant secea__mm_neon50 = {"neon", 2, pack_b_neon, run_neon};

#else
/* Not 64-bit ARM: keep the translation unit non-empty (ISO C). */
typedef int secea__mm_neon_unused;
#endif
