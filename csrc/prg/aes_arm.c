/* AES-128 (FIPS-197) with the ARMv8 Crypto Extensions: "armce" (AESE and
 * AESMC on 128-bit NEON registers, 8 blocks in flight).
 *
 * AESE(x, k) = SubBytes(ShiftRows(x xor k)) and AESMC = MixColumns, on the
 * state in FIPS-197 byte order (byte i of the register is input byte i), so
 * one encryption with the standard round keys rk[0..10] is
 *     x = AESMC(AESE(x, rk[r])) for r = 0..8,  x = AESE(x, rk[9]) xor rk[10].
 * Cores fuse an AESE with the AESMC right after it; eight independent blocks
 * cover the AESE+AESMC latency (2-4 cycles on Cortex-A7x / Neoverse cores
 * with one or two AES pipes).
 *
 * The key schedule (FIPS-197 Sec. 5.2) takes SubWord from AESE: with the
 * word copied to all four columns ShiftRows moves nothing, and with a zero
 * key AESE is SubBytes alone.  CTR mode (NIST SP 800-38A Sec. 6.5, the whole
 * 128-bit block as a big-endian counter): the counter is kept as the 64-bit
 * lanes (hi, lo), incremented with a vector add and byte-reversed per lane
 * (REV64) to give the big-endian block; the driver (aes_dispatch.c) never
 * lets lo wrap within one call.
 *
 * The AES instructions are constant time; there are no data-dependent
 * branches or addresses (ctr_field's rejection steers only which output slot
 * a word is written to and when the request is complete, as on x86).  Every
 * function using the AES intrinsics carries SECEA_TARGET_ARMCE, so the file
 * compiles with the package's baseline flags and runs only where dispatch
 * found the extension.  Non-temporal stores (SECEA_PRG_XOR_STREAM) are not
 * used here: the flag is accepted and ordinary stores are written. */
#include "aes_internal.h"
#include "secea.h"

#if SECEA_ARMCE
#include <arm_neon.h>

#define TGT SECEA_TARGET_ARMCE
#define W 8   /* blocks in flight */

/* ---------------------------------------------------------------- keys */

TGT static inline uint32_t sub_word(uint32_t w)
{
    uint8x16_t x = vaeseq_u8(vreinterpretq_u8_u32(vdupq_n_u32(w)), vdupq_n_u8(0));
    return vgetq_lane_u32(vreinterpretq_u32_u8(x), 0);
}

TGT static void expand_armce(uint8_t *rk, const uint8_t *key)
{
    static const uint8_t rcon[10] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36};
    uint32_t w[44];
    memcpy(w, key, 16);                          /* words as little-endian integers */
    for (int i = 4; i < 44; i++) {
        uint32_t t = w[i - 1];
        if (i % 4 == 0) {
            t = (t >> 8) | (t << 24);            /* RotWord: byte 0 moves to byte 3 */
            t = sub_word(t) ^ rcon[i / 4 - 1];   /* Rcon in the first byte */
        }
        w[i] = w[i - 4] ^ t;
    }
    memcpy(rk, w, SECEA_AES_RK_BYTES);
    secea_wipe(w, sizeof w);
}

/* ---------------------------------------------------------------- blocks */

TGT static inline void load_rk(uint8x16_t k[11], const uint8_t *rkb)
{
    for (int i = 0; i < 11; i++) k[i] = vld1q_u8(rkb + 16 * i);
}

TGT static inline uint8x16_t enc1(uint8x16_t x, const uint8x16_t k[11])
{
    for (int r = 0; r < 9; r++) x = vaesmcq_u8(vaeseq_u8(x, k[r]));
    return veorq_u8(vaeseq_u8(x, k[9]), k[10]);
}

/* W blocks in place, round by round (independent blocks interleaved) */
TGT static inline __attribute__((always_inline)) void enc8(uint8x16_t b[W], const uint8x16_t k[11])
{
    for (int r = 0; r < 9; r++)
        for (int j = 0; j < W; j++) b[j] = vaesmcq_u8(vaeseq_u8(b[j], k[r]));
    for (int j = 0; j < W; j++) b[j] = veorq_u8(vaeseq_u8(b[j], k[9]), k[10]);
}

/* counter lanes (hi, lo) -> the big-endian counter block */
static inline uint8x16_t ctr_block(uint64x2_t c)
{
    return vrev64q_u8(vreinterpretq_u8_u64(c));
}

static inline uint64x2_t ctr_init(uint64_t hi, uint64_t lo)
{
    return vcombine_u64(vcreate_u64(hi), vcreate_u64(lo));
}

static inline void wipe_blocks(uint8x16_t *b, size_t n)
{
    secea_wipe(b, n * sizeof *b);
}

/* W keystream blocks from counter c (advanced by W) */
TGT static inline __attribute__((always_inline)) void ks8(uint8x16_t b[W], uint64x2_t *c,
                                                          const uint8x16_t k[11])
{
    const uint64x2_t one = vcombine_u64(vcreate_u64(0), vcreate_u64(1));
    for (int j = 0; j < W; j++) {
        b[j] = ctr_block(*c);
        *c = vaddq_u64(*c, one);
    }
    enc8(b, k);
}

TGT static void ctr_armce(const uint8_t *rkb, uint8_t *out, size_t n, uint64_t hi, uint64_t lo)
{
    uint8x16_t k[11], b[W];
    load_rk(k, rkb);
    const uint64x2_t one = vcombine_u64(vcreate_u64(0), vcreate_u64(1));
    uint64x2_t c = ctr_init(hi, lo);
    while (n >= W) {
        ks8(b, &c, k);
        for (int j = 0; j < W; j++) vst1q_u8(out + 16 * j, b[j]);
        out += 16 * W;
        n -= W;
    }
    for (; n; n--) {
        vst1q_u8(out, enc1(ctr_block(c), k));
        c = vaddq_u64(c, one);
        out += 16;
    }
    wipe_blocks(k, 11);
}

TGT static void ecb_armce(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t n)
{
    uint8x16_t k[11], b[W];
    load_rk(k, rkb);
    while (n >= W) {
        for (int j = 0; j < W; j++) b[j] = vld1q_u8(in + 16 * j);   /* all loaded before any store: out may be in */
        enc8(b, k);
        for (int j = 0; j < W; j++) vst1q_u8(out + 16 * j, b[j]);
        in += 16 * W;
        out += 16 * W;
        n -= W;
    }
    for (; n; n--) {
        vst1q_u8(out, enc1(vld1q_u8(in), k));
        in += 16;
        out += 16;
    }
    wipe_blocks(k, 11);
}

/* fused CTR encryption (aes_internal.h, ctr_xor): out = in xor keystream;
 * with SECEA_PRG_XOR_CHECK the 64-bit words of the result are compared with p
 * (a lane-wise compare OR-ed into one accumulator, branch free) */
TGT static uint64_t ctr_xor_armce(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t n,
                                  uint64_t hi, uint64_t lo, uint64_t p, int flags)
{
    uint8x16_t k[11], b[W];
    load_rk(k, rkb);
    const uint64x2_t one = vcombine_u64(vcreate_u64(0), vcreate_u64(1));
    const uint64x2_t vp = vdupq_n_u64(p);
    const int check = (flags & SECEA_PRG_XOR_CHECK) != 0;
    uint64x2_t bad = vdupq_n_u64(0);
    uint64x2_t c = ctr_init(hi, lo);
    while (n >= W) {
        ks8(b, &c, k);
        for (int j = 0; j < W; j++) {
            uint8x16_t x = veorq_u8(b[j], vld1q_u8(in + 16 * j));
            bad = vorrq_u64(bad, vcgeq_u64(vreinterpretq_u64_u8(x), vp));
            vst1q_u8(out + 16 * j, x);
        }
        in += 16 * W;
        out += 16 * W;
        n -= W;
    }
    for (; n; n--) {
        uint8x16_t x = veorq_u8(enc1(ctr_block(c), k), vld1q_u8(in));
        bad = vorrq_u64(bad, vcgeq_u64(vreinterpretq_u64_u8(x), vp));
        vst1q_u8(out, x);
        c = vaddq_u64(c, one);
        in += 16;
        out += 16;
    }
    wipe_blocks(k, 11);
    wipe_blocks(b, W);
    uint64_t any = vgetq_lane_u64(bad, 0) | vgetq_lane_u64(bad, 1);
    return check ? any : 0;
}

/* rejection sampling (aes_internal.h, ctr_field): the keystream's
 * little-endian 64-bit words x & mask that are < p, in order, until count are
 * kept.  Each word is written to the next free slot and the slot advances by
 * (x < p), so the loop has no branch on the sampled value. */
TGT static size_t ctr_field_armce(const uint8_t *rkb, uint64_t *out, size_t count, size_t nblocks,
                                  uint64_t hi, uint64_t lo, uint64_t mask, uint64_t p, size_t *kept)
{
    uint8x16_t k[11], b[W];
    _Alignas(16) uint64_t w[2 * W];
    load_rk(k, rkb);
    const uint64x2_t one = vcombine_u64(vcreate_u64(0), vcreate_u64(1));
    const uint64x2_t vm = vdupq_n_u64(mask);
    uint64x2_t c = ctr_init(hi, lo);
    size_t got = 0, read = 0;
    while (nblocks && got < count) {
        size_t m = nblocks < W ? nblocks : W;
        if (m == W) {
            ks8(b, &c, k);
        } else {
            for (size_t j = 0; j < m; j++) {
                b[j] = enc1(ctr_block(c), k);
                c = vaddq_u64(c, one);
            }
        }
        for (size_t j = 0; j < m; j++) vst1q_u64(w + 2 * j, vandq_u64(vreinterpretq_u64_u8(b[j]), vm));
        size_t i = 0;
        for (; i < 2 * m && got < count; i++) {
            uint64_t x = w[i];
            out[got] = x;                        /* overwritten unless kept */
            got += x < p;
        }
        read += i;
        nblocks -= m;
    }
    wipe_blocks(k, 11);
    wipe_blocks(b, W);
    secea_wipe(w, sizeof w);
    *kept = got;
    return read;
}

const secea__aes_impl secea__aes_impl_armce = {
    "armce", expand_armce, ctr_armce, ecb_armce, ctr_xor_armce, ctr_field_armce
};

#else
/* Not AArch64, or a compiler that cannot build the Crypto Extensions code
 * with baseline flags (internal.h, SECEA_ARMCE): the portable (and x86)
 * variants only.  Keep the translation unit non-empty (ISO C). */
typedef int secea__aes_arm_unused;
#endif
