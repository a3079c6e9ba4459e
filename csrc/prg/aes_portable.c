/* AES-128 (FIPS-197), portable constant-time variant.
 *
 * Construction.  Four blocks (64 bytes) are processed together.  The state is
 * kept as 16 little-endian 32-bit column words (byte r of a word = row r, as
 * in FIPS-197 Sec. 3.4).  For SubBytes the 64 bytes are viewed as eight
 * 64-bit words and bit-transposed (three SWAP-MOVE stages) into eight bit
 * planes: plane j holds bit j of every byte.  The S-box is then evaluated on
 * all 64 bytes at once with a straight-line boolean circuit:
 *   - inversion in GF(2^8) = GF(2)[x]/(x^8+x^4+x^3+x+1) as a^254 (0 -> 0),
 *     via the chain a^2, a^3, a^6, a^12, a^15, a^240, a^252, a^254
 *     (4 bitsliced schoolbook multiplications, 7 squarings; squaring is
 *     linear over GF(2));
 *   - the affine map of FIPS-197 Sec. 5.1.1 (eq. 5.1), constant 0x63.
 * The planes are transposed back (the transpose is an involution).
 * ShiftRows is a byte-mask merge of column words, MixColumns uses rotations
 * and a SWAR xtime.
 *
 * Constant time: there are no table look-ups and no branches or memory
 * addresses that depend on the key or the data; only AND/XOR/shift/rotate
 * and multiplications of 0/1 bytes by the constant 0x1b.  Run time depends
 * on the lengths only.  The key schedule uses the same bitsliced S-box.
 */
#include <string.h>
#include "aes_internal.h"

typedef uint64_t u64;
typedef uint32_t u32;

static inline u32 ld32le(const uint8_t *p)
{
    return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static inline void st32le(uint8_t *p, u32 v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static inline u32 rotr32(u32 x, unsigned n) { return (x >> n) | (x << (32 - n)); }

/* Exchange the bits of a at positions p + n (p in mask) with the bits of b
 * at positions p. */
static inline void swapmove(u64 *a, u64 *b, u64 mask, unsigned n)
{
    u64 t = ((*a >> n) ^ *b) & mask;
    *b ^= t;
    *a ^= t << n;
}

/* Exchanges the 3-bit word index with the 3-bit bit-in-byte index: afterwards
 * w[j] holds bit j of all 64 bytes.  Applying it twice is the identity. */
static inline void transpose8(u64 w[8])
{
    swapmove(&w[0], &w[1], 0x5555555555555555ULL, 1);
    swapmove(&w[2], &w[3], 0x5555555555555555ULL, 1);
    swapmove(&w[4], &w[5], 0x5555555555555555ULL, 1);
    swapmove(&w[6], &w[7], 0x5555555555555555ULL, 1);
    swapmove(&w[0], &w[2], 0x3333333333333333ULL, 2);
    swapmove(&w[1], &w[3], 0x3333333333333333ULL, 2);
    swapmove(&w[4], &w[6], 0x3333333333333333ULL, 2);
    swapmove(&w[5], &w[7], 0x3333333333333333ULL, 2);
    swapmove(&w[0], &w[4], 0x0F0F0F0F0F0F0F0FULL, 4);
    swapmove(&w[1], &w[5], 0x0F0F0F0F0F0F0F0FULL, 4);
    swapmove(&w[2], &w[6], 0x0F0F0F0F0F0F0F0FULL, 4);
    swapmove(&w[3], &w[7], 0x0F0F0F0F0F0F0F0FULL, 4);
}

/* Reduce a 15-coefficient bitsliced polynomial modulo x^8+x^4+x^3+x+1:
 * x^k = x^(k-4) + x^(k-5) + x^(k-7) + x^(k-8), from the top down. */
static inline void gf_reduce(u64 r[8], u64 c[15])
{
    for (int k = 14; k >= 8; k--) {
        c[k - 4] ^= c[k];
        c[k - 5] ^= c[k];
        c[k - 7] ^= c[k];
        c[k - 8] ^= c[k];
    }
    for (int i = 0; i < 8; i++) r[i] = c[i];
}

static inline void gf_mul(u64 r[8], const u64 a[8], const u64 b[8])
{
    u64 c[15];
    for (int k = 0; k < 15; k++) c[k] = 0;
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) c[i + j] ^= a[i] & b[j];
    }
    gf_reduce(r, c);
}

static inline void gf_sqr(u64 r[8], const u64 a[8])
{
    u64 c[15];
    for (int k = 0; k < 15; k++) c[k] = (k & 1) ? 0 : a[k >> 1];
    gf_reduce(r, c);
}

/* S-box on 64 bytes in bit-plane form. */
static void sbox_planes(u64 x[8])
{
    u64 x2[8], x3[8], x12[8], t[8], u[8];
    gf_sqr(x2, x);          /* a^2 */
    gf_mul(x3, x2, x);      /* a^3 */
    gf_sqr(t, x3);          /* a^6 */
    gf_sqr(x12, t);         /* a^12 */
    gf_mul(t, x12, x3);     /* a^15 */
    gf_sqr(u, t);           /* a^30 */
    gf_sqr(t, u);           /* a^60 */
    gf_sqr(u, t);           /* a^120 */
    gf_sqr(t, u);           /* a^240 */
    gf_mul(u, t, x12);      /* a^252 */
    gf_mul(t, u, x2);       /* a^254 = a^-1 */
    /* b'_i = b_i ^ b_{i+4} ^ b_{i+5} ^ b_{i+6} ^ b_{i+7} ^ c_i (indices mod 8),
     * c = 0x63 (bits 0, 1, 5, 6). */
    for (int i = 0; i < 8; i++)
        x[i] = t[i] ^ t[(i + 4) & 7] ^ t[(i + 5) & 7] ^ t[(i + 6) & 7] ^ t[(i + 7) & 7];
    x[0] = ~x[0]; x[1] = ~x[1]; x[5] = ~x[5]; x[6] = ~x[6];
}

/* SubBytes on 16 column words (4 blocks). */
static void sub_bytes16(u32 s[16])
{
    u64 w[8];
    for (int i = 0; i < 8; i++) w[i] = (u64)s[2 * i] | (u64)s[2 * i + 1] << 32;
    transpose8(w);
    sbox_planes(w);
    transpose8(w);
    for (int i = 0; i < 8; i++) {
        s[2 * i] = (u32)w[i];
        s[2 * i + 1] = (u32)(w[i] >> 32);
    }
}

static inline u32 xtime4(u32 v)
{
    return ((v & 0x7F7F7F7FU) << 1) ^ (((v >> 7) & 0x01010101U) * 0x1BU);
}

/* ShiftRows (and MixColumns if mix) on one block of 4 column words. */
static inline void shift_mix(u32 s[4], int mix)
{
    u32 t[4];
    for (int c = 0; c < 4; c++)
        t[c] = (s[c] & 0x000000FFU) | (s[(c + 1) & 3] & 0x0000FF00U) |
               (s[(c + 2) & 3] & 0x00FF0000U) | (s[(c + 3) & 3] & 0xFF000000U);
    for (int c = 0; c < 4; c++) {
        u32 x = t[c];
        if (mix) {
            /* s'_r = 2 s_r ^ 3 s_{r+1} ^ s_{r+2} ^ s_{r+3} */
            u32 y = rotr32(x, 8);
            x = xtime4(x ^ y) ^ y ^ rotr32(x, 16) ^ rotr32(x, 24);
        }
        s[c] = x;
    }
}

/* Encrypts 4 blocks held as 16 column words, round keys as 44 words. */
static void encrypt4(u32 s[16], const u32 rk[44])
{
    for (int i = 0; i < 16; i++) s[i] ^= rk[i & 3];
    for (int r = 1; r <= 10; r++) {
        sub_bytes16(s);
        for (int b = 0; b < 4; b++) {
            shift_mix(s + 4 * b, r != 10);
            for (int c = 0; c < 4; c++) s[4 * b + c] ^= rk[4 * r + c];
        }
    }
}

static void load_rk(u32 w[44], const uint8_t *rk)
{
    for (int i = 0; i < 44; i++) w[i] = ld32le(rk + 4 * i);
}

static void expand_portable(uint8_t *rk, const uint8_t *key)
{
    u32 w[44];
    u32 rcon = 1;
    for (int i = 0; i < 4; i++) w[i] = ld32le(key + 4 * i);
    for (int i = 4; i < 44; i++) {
        u32 t = w[i - 1];
        if ((i & 3) == 0) {
            u64 p[8] = {0};
            p[0] = rotr32(t, 8);           /* RotWord */
            transpose8(p);
            sbox_planes(p);                /* SubWord (other bytes unused) */
            transpose8(p);
            t = (u32)p[0] ^ rcon;
            rcon = xtime4(rcon);
        }
        w[i] = w[i - 4] ^ t;
    }
    for (int i = 0; i < 44; i++) st32le(rk + 4 * i, w[i]);
    secea_wipe(w, sizeof w);
}

static void ctr_portable(const uint8_t *rkb, uint8_t *out, size_t nblocks,
                         uint64_t hi, uint64_t lo)
{
    u32 rk[44], s[16];
    uint8_t ctrb[16];
    secea_u128 ctr = ((secea_u128)hi << 64) | lo;
    load_rk(rk, rkb);
    while (nblocks) {
        size_t m = nblocks < 4 ? nblocks : 4;
        for (size_t b = 0; b < 4; b++) {
            secea_u128 c = ctr + b;     /* wraps mod 2^128 */
            for (int i = 0; i < 16; i++) ctrb[i] = (uint8_t)(c >> (8 * (15 - i)));
            for (int i = 0; i < 4; i++) s[4 * b + i] = ld32le(ctrb + 4 * i);
        }
        encrypt4(s, rk);
        for (size_t b = 0; b < m; b++)
            for (int i = 0; i < 4; i++) st32le(out + 16 * b + 4 * i, s[4 * b + i]);
        ctr += m;
        out += 16 * m;
        nblocks -= m;
    }
    secea_wipe(rk, sizeof rk);
}

static void ecb_portable(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t nblocks)
{
    u32 rk[44], s[16];
    load_rk(rk, rkb);
    while (nblocks) {
        size_t m = nblocks < 4 ? nblocks : 4;
        for (size_t i = 0; i < 16; i++) s[i] = i < 4 * m ? ld32le(in + 4 * i) : 0;
        encrypt4(s, rk);
        for (size_t i = 0; i < 4 * m; i++) st32le(out + 4 * i, s[i]);
        in += 16 * m;
        out += 16 * m;
        nblocks -= m;
    }
    secea_wipe(rk, sizeof rk);
}

const secea__aes_impl secea__aes_impl_portable = {
    "portable", expand_portable, ctr_portable, ecb_portable, NULL, NULL
};
