/* AES-128 (FIPS-197), portable constant-time variant: bitsliced, 8 blocks
 * at a time.
 *
 * Representation.  A batch is 4 * AES_LANES blocks.  The state of a batch is
 * eight words q[0..7] of type vw: q[j] holds bit j of every byte of every
 * block.  vw is a GCC/Clang vector of AES_LANES 64-bit lanes: plain C that
 * compiles to baseline SSE2 on x86-64 and to NEON on aarch64, no intrinsics
 * and no target attributes.  Lane l holds blocks 4l .. 4l+3, and inside a
 * lane the byte at row r, column c (FIPS-197 Sec. 3.4) of block b is bit
 *     16 r + 4 c + b:
 * a row is a 16-bit field, and in it a column is a nibble.  Every operation
 * below acts on each 64-bit lane (or on its 16-bit fields) alone.
 *   - Loading: each column word (byte r = row r) is spread so byte r lands
 *     at bit 16 r; blocks 0..3 with columns 0/2 interleaved and columns 1/3
 *     interleaved give eight 64-bit words whose 8x8 bit-matrix transpose
 *     (three SWAP-MOVE stages; an involution) is the layout above.  This
 *     layout is that of T. Pornin's BearSSL "ct64" AES, the 64-bit form of
 *     the bitslicing of E. Kaesper and P. Schwabe, "Faster and
 *     timing-attack resistant AES-GCM", CHES 2009.
 *   - SubBytes: the 113-gate S-box circuit (32 AND, 77 XOR, 4 XNOR) of
 *     J. Boyar and R. Peralta, "A new combinational logic minimization
 *     technique with applications to cryptology", SEA 2010, LNCS 6049,
 *     pp. 178-189 (IACR ePrint 2009/191), on the eight bit planes.  The four
 *     XNORs (the affine constant 0x63) are left out and 0x63 is folded into
 *     round keys 1..10 instead: ShiftRows permutes bytes and MixColumns maps
 *     a column of four equal bytes c to itself (2c + 3c + c + c = c), so the
 *     constant passes through both unchanged.
 *   - ShiftRows is not computed per round ("fixslicing": A. Adomnicai and
 *     T. Peyrin, "Fixslicing AES-like ciphers: new bitsliced AES speed
 *     records on ARM-Cortex M and RISC-V", IACR TCHES 2021(1), Sec. 3): after
 *     round i the state is kept as SR^-(i mod 4) of the true state, MixColumns
 *     takes its columns where they lie in that form (mix_columns_k), round
 *     key i is stored in that form, and the last round applies the SR^2 that
 *     remains.  Row rotations are 16-bit element shuffles of the lane,
 *     column rotations 16-bit element rotates.
 *   - MixColumns (FIPS-197 eq. 5.6): see mix_columns_k; the doubling is a
 *     shift of the bit planes with the reduction x^8 = x^4 + x^3 + x + 1.
 *
 * Round keys are bitsliced from the standard 176-byte expanded key at the
 * start of each call (about 0.18 us on the machine of docs/PERFORMANCE.md)
 * and wiped at the end; the interface of aes_internal.h is unchanged.  The
 * key expansion (FIPS-197 Sec. 5.2) uses the same circuit for SubWord.
 * ctr_xor fuses the CTR keystream with secea_prg_xor's XOR (and its range
 * check); non-temporal stores have no portable form, so it ignores
 * SECEA_PRG_XOR_STREAM.
 *
 * Constant time: there are no table look-ups and no branches or memory
 * addresses that depend on the key or the data; only AND/XOR/OR, shifts and
 * shuffles by constant amounts, and (round keys) multiplications of 0/1
 * bytes by constants.  Run time depends on the lengths only.  A partial
 * final batch is padded with zero blocks (encrypted and discarded). */
#include <string.h>
#include "secea.h"
#include "aes_internal.h"

typedef uint64_t u64;
typedef uint32_t u32;

/* GCC/Clang vector extensions (the package is built with GCC or Clang:
 * gnu11, unsigned __int128).  AES_LANES: 2 (8 blocks a batch) measured
 * faster than 4 on x86-64 baseline SSE2 (0.40 against 0.25 GB/s; 16
 * registers), and 128-bit vectors are what NEON has. */
#ifndef AES_LANES
#define AES_LANES 2
#endif
typedef u64 vw __attribute__((vector_size(8 * AES_LANES)));
typedef uint16_t vh __attribute__((vector_size(8 * AES_LANES)));
typedef uint32_t vs __attribute__((vector_size(8 * AES_LANES)));
#define AES_BATCH (4 * AES_LANES)   /* blocks per batch */

/* bitsliced round keys: 11 rounds x 8 planes, every lane alike */
typedef struct {
    vw k[11][8];
} bs_keys;

static inline u32 ld32le(const uint8_t *p)
{
    return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static inline void st32le(uint8_t *p, u32 v)
{
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

static inline u32 bswap32(u32 x)
{
    return (x >> 24) | ((x >> 8) & 0xFF00U) | ((x << 8) & 0xFF0000U) | (x << 24);
}

static inline vw vload(const u64 *p)
{
    vw v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vstore(u64 *p, vw v)
{
    memcpy(p, &v, sizeof v);
}

static inline vw vbcast(u64 x)
{
    u64 t[AES_LANES];
    for (int l = 0; l < AES_LANES; l++) t[l] = x;
    return vload(t);
}

/* byte r of x to byte 2r of the result (the odd bytes zero) */
static inline u64 spread(u32 x)
{
    u64 v = x;
    v = (v | v << 16) & 0x0000FFFF0000FFFFULL;
    return (v | v << 8) & 0x00FF00FF00FF00FFULL;
}

/* the inverse: byte 2r of v to byte r (the odd bytes ignored) */
static inline u32 unspread(u64 v)
{
    v &= 0x00FF00FF00FF00FFULL;
    v = (v | v >> 8) & 0x0000FFFF0000FFFFULL;
    return (u32)(v | v >> 16);
}

/* Exchange the bits of a at positions p + n (p in mask) with the bits of b
 * at positions p. */
#define SWAPMOVE(a, b, mask, n) do {                   \
        vw t_ = (((a) >> (n)) ^ (b)) & (u64)(mask);    \
        (b) ^= t_;                                      \
        (a) ^= t_ << (n);                               \
    } while (0)

/* 8x8 bit transpose inside every byte position: afterwards bit i of byte p
 * of q[j] is bit j of byte p of the former q[i].  An involution. */
static inline void ortho(vw q[8])
{
    SWAPMOVE(q[0], q[1], 0x5555555555555555ULL, 1);
    SWAPMOVE(q[2], q[3], 0x5555555555555555ULL, 1);
    SWAPMOVE(q[4], q[5], 0x5555555555555555ULL, 1);
    SWAPMOVE(q[6], q[7], 0x5555555555555555ULL, 1);
    SWAPMOVE(q[0], q[2], 0x3333333333333333ULL, 2);
    SWAPMOVE(q[1], q[3], 0x3333333333333333ULL, 2);
    SWAPMOVE(q[4], q[6], 0x3333333333333333ULL, 2);
    SWAPMOVE(q[5], q[7], 0x3333333333333333ULL, 2);
    SWAPMOVE(q[0], q[4], 0x0F0F0F0F0F0F0F0FULL, 4);
    SWAPMOVE(q[1], q[5], 0x0F0F0F0F0F0F0F0FULL, 4);
    SWAPMOVE(q[2], q[6], 0x0F0F0F0F0F0F0F0FULL, 4);
    SWAPMOVE(q[3], q[7], 0x0F0F0F0F0F0F0F0FULL, 4);
}

/* The AES S-box minus its constant 0x63 on the eight bit planes: the
 * circuit of Boyar and Peralta (see the header), their names; u0 is the
 * most significant bit (plane 7), s0 likewise. */
static inline __attribute__((always_inline)) void sbox_planes(vw q[8])
{
    const vw u0 = q[7], u1 = q[6], u2 = q[5], u3 = q[4];
    const vw u4 = q[3], u5 = q[2], u6 = q[1], u7 = q[0];

    /* top linear layer: 23 XOR */
    vw y14 = u3 ^ u5, y13 = u0 ^ u6, y9 = u0 ^ u3, y8 = u0 ^ u5;
    vw t0 = u1 ^ u2;
    vw y1 = t0 ^ u7, y4 = y1 ^ u3, y12 = y13 ^ y14, y2 = y1 ^ u0;
    vw y5 = y1 ^ u6, y3 = y5 ^ y8;
    vw t1 = u4 ^ y12;
    vw y15 = t1 ^ u5, y20 = t1 ^ u1, y6 = y15 ^ u7, y10 = y15 ^ t0;
    vw y11 = y20 ^ y9, y7 = u7 ^ y11, y17 = y10 ^ y11, y19 = y10 ^ y8;
    vw y16 = t0 ^ y11, y21 = y13 ^ y16, y18 = u0 ^ y16;

    /* middle non-linear layer: inversion in GF(2^8) as GF((2^4)^2) */
    vw t2 = y12 & y15, t3 = y3 & y6, t4 = t3 ^ t2;
    vw t5 = y4 & u7, t6 = t5 ^ t2;
    vw t7 = y13 & y16, t8 = y5 & y1, t9 = t8 ^ t7;
    vw t10 = y2 & y7, t11 = t10 ^ t7;
    vw t12 = y9 & y11, t13 = y14 & y17, t14 = t13 ^ t12;
    vw t15 = y8 & y10, t16 = t15 ^ t12;
    vw t17 = t4 ^ t14, t18 = t6 ^ t16, t19 = t9 ^ t14, t20 = t11 ^ t16;
    vw t21 = t17 ^ y20, t22 = t18 ^ y19, t23 = t19 ^ y21, t24 = t20 ^ y18;
    vw t25 = t21 ^ t22, t26 = t21 & t23, t27 = t24 ^ t26;
    vw t28 = t25 & t27, t29 = t28 ^ t22;
    vw t30 = t23 ^ t24, t31 = t22 ^ t26, t32 = t31 & t30, t33 = t32 ^ t24;
    vw t34 = t23 ^ t33, t35 = t27 ^ t33, t36 = t24 & t35;
    vw t37 = t36 ^ t34, t38 = t27 ^ t36, t39 = t29 & t38, t40 = t25 ^ t39;
    vw t41 = t40 ^ t37, t42 = t29 ^ t33, t43 = t29 ^ t40;
    vw t44 = t33 ^ t37, t45 = t42 ^ t41;
    vw z0 = t44 & y15, z1 = t37 & y6, z2 = t33 & u7, z3 = t43 & y16;
    vw z4 = t40 & y1, z5 = t29 & y7, z6 = t42 & y11, z7 = t45 & y17;
    vw z8 = t41 & y10, z9 = t44 & y12, z10 = t37 & y3, z11 = t33 & y4;
    vw z12 = t43 & y13, z13 = t40 & y5, z14 = t29 & y2, z15 = t42 & y9;
    vw z16 = t45 & y14, z17 = t41 & y8;

    /* bottom linear layer (XNOR -> XOR: the 0x63 is in the round keys) */
    vw t46 = z15 ^ z16, t47 = z10 ^ z11, t48 = z5 ^ z13, t49 = z9 ^ z10;
    vw t50 = z2 ^ z12, t51 = z2 ^ z5, t52 = z7 ^ z8, t53 = z0 ^ z3;
    vw t54 = z6 ^ z7, t55 = z16 ^ z17, t56 = z12 ^ t48, t57 = t50 ^ t53;
    vw t58 = z4 ^ t46, t59 = z3 ^ t54, t60 = t46 ^ t57, t61 = z14 ^ t57;
    vw t62 = t52 ^ t58, t63 = t49 ^ t58, t64 = z4 ^ t59, t65 = t61 ^ t62;
    vw t66 = z1 ^ t63, t67 = t64 ^ t65;
    vw s3 = t53 ^ t66;
    q[7] = t59 ^ t63;       /* s0 */
    q[6] = t64 ^ s3;        /* s1 (XNOR in the circuit) */
    q[5] = t55 ^ t67;       /* s2 (XNOR) */
    q[4] = s3;
    q[3] = t51 ^ t66;       /* s4 */
    q[2] = t47 ^ t65;       /* s5 */
    q[1] = t56 ^ t62;       /* s6 (XNOR) */
    q[0] = t48 ^ t60;       /* s7 (XNOR) */
}

/* every 16-bit field (row) rotated right by n bits: column p + n/4 to p */
static inline vw field_rot(vw x, int n)
{
    vh h = (vh)x;
    n &= 15;
    return n ? (vw)((h >> n) | (h << (16 - n))) : x;
}

/* ShiftRows^k (k mod 4): row r's field rotated right by 4 k r bits */
static inline void shift_rows_pow(vw q[8], int k)
{
    for (int j = 0; j < 8; j++) {
        vw x = q[j];
        q[j] = (x & (u64)0x000000000000FFFFULL) |
               (field_rot(x, 4 * k) & (u64)0x00000000FFFF0000ULL) |
               (field_rot(x, 8 * k) & (u64)0x0000FFFF00000000ULL) |
               (field_rot(x, 12 * k) & (u64)0xFFFF000000000000ULL);
    }
}

/* the word rotated right by 16 bits (row r + 1 to row r) and by 32 */
static inline vw rot16(vw x)
{
#if AES_LANES == 2 && defined(__clang__)
    vh h = (vh)x;
    return (vw)__builtin_shufflevector(h, h, 1, 2, 3, 0, 5, 6, 7, 4);
#elif AES_LANES == 2
    return (vw)__builtin_shuffle((vh)x, (vh){1, 2, 3, 0, 5, 6, 7, 4});
#else
    return (x >> 16) | (x << 48);
#endif
}

static inline vw rot32(vw x)
{
#if AES_LANES == 2 && defined(__clang__)
    vs s = (vs)x;
    return (vw)__builtin_shufflevector(s, s, 1, 0, 3, 2);
#elif AES_LANES == 2
    return (vw)__builtin_shuffle((vs)x, (vs){1, 0, 3, 2});
#else
    return (x >> 32) | (x << 32);
#endif
}

/* MixColumns on a state kept as SR^-k(true state) without ShiftRows (the
 * "fixslicing" of A. Adomnicai and T. Peyrin, "Fixslicing AES-like
 * ciphers", TCHES 2021(1)).  Input Q = SubBytes output in that form; the
 * true state is SR^k(Q), so a column of it is Q(r, p + k r), and
 *     out(r, p) = 2 Q(r, p) + 3 Q(r+1, p+k) + Q(r+2, p+2k) + Q(r+3, p+3k)
 * (FIPS-197 eq. 5.6), which is again SR^-k of the true MixColumns output.
 * With a1 = Q(r+1, p+k) (rows rotated by one, columns by k) and
 * s = Q + a1: out = 2 s + a1 + s(r+2, p+2k); 2 s shifts the bit planes,
 * reducing by x^8 = x^4 + x^3 + x + 1. */
static inline __attribute__((always_inline)) void mix_columns_k(vw q[8], int k)
{
    vw a1[8], s[8], s2[8];
    for (int j = 0; j < 8; j++) {
        a1[j] = k ? field_rot(rot16(q[j]), 4 * k) : rot16(q[j]);
        s[j] = q[j] ^ a1[j];
        s2[j] = (k & 1) ? field_rot(rot32(s[j]), 8) : rot32(s[j]);
    }
    q[0] = s[7] ^ a1[0] ^ s2[0];
    q[1] = s[0] ^ s[7] ^ a1[1] ^ s2[1];
    q[2] = s[1] ^ a1[2] ^ s2[2];
    q[3] = s[2] ^ s[7] ^ a1[3] ^ s2[3];
    q[4] = s[3] ^ s[7] ^ a1[4] ^ s2[4];
    q[5] = s[4] ^ a1[5] ^ s2[5];
    q[6] = s[5] ^ a1[6] ^ s2[6];
    q[7] = s[6] ^ a1[7] ^ s2[7];
}

static inline void add_round_key(vw q[8], const vw k[8])
{
    for (int j = 0; j < 8; j++) q[j] ^= k[j];
}

/* round i < 10 on a state kept as SR^-(i-1 mod 4), leaving SR^-(i mod 4) */
static inline __attribute__((always_inline)) void round_k(vw q[8], const vw k[8], int shift)
{
    sbox_planes(q);
    mix_columns_k(q, shift);
    add_round_key(q, k);
}

/* AES-128 of one batch in bitsliced form (loaded, not yet transposed).
 * After round i the state is SR^-(i mod 4) of the true one; round key i
 * was stored in that form (bitslice_keys).  The last round's ShiftRows
 * makes up the difference: SR(SR^1(SubBytes)) = SR^2, a byte swap in the
 * fields of rows 1 and 3. */
static void encrypt_batch(vw q[8], const bs_keys *sk)
{
    ortho(q);
    add_round_key(q, sk->k[0]);
    for (int r = 1; r < 9; r += 4) {
        round_k(q, sk->k[r], 1);
        round_k(q, sk->k[r + 1], 2);
        round_k(q, sk->k[r + 2], 3);
        round_k(q, sk->k[r + 3], 0);
    }
    round_k(q, sk->k[9], 1);
    sbox_planes(q);
    for (int j = 0; j < 8; j++) {
        vw t = (q[j] ^ (q[j] >> 8)) & (u64)0x00FF000000FF0000ULL;
        q[j] ^= t ^ (t << 8) ^ sk->k[10][j];
    }
    ortho(q);
}

/* the pre-transpose words of block b (column words c[0..3]) into w[b], w[b+4] */
static inline void load_cols(u64 w[8][AES_LANES], int b, int l, const u32 c[4])
{
    w[b][l] = spread(c[0]) | spread(c[2]) << 8;
    w[b + 4][l] = spread(c[1]) | spread(c[3]) << 8;
}

static inline void store_cols(u32 c[4], const u64 w[8][AES_LANES], int b, int l)
{
    c[0] = unspread(w[b][l]);
    c[2] = unspread(w[b][l] >> 8);
    c[1] = unspread(w[b + 4][l]);
    c[3] = unspread(w[b + 4][l] >> 8);
}

/* Round keys in the form encrypt_batch wants: round key r < 10 as
 * SR^-(r mod 4) of itself (a fixed byte permutation, done on the bytes),
 * round key 10 as it is; bitsliced for four equal blocks per lane; 0x63
 * folded into rounds 1..10.  In the bitsliced form byte p of plane j is
 * 0x0F times bit j of byte p of the even-column word plus 0xF0 times that
 * of the odd-column word (the transpose of four equal words and four equal
 * words). */
static void bitslice_keys(bs_keys *sk, const uint8_t *rk)
{
    for (int r = 0; r < 11; r++) {
        const uint8_t *k = rk + 16 * r;
        int sh = r < 10 ? 4 - (r & 3) : 0;     /* SR^-r = SR^(4 - r mod 4) */
        /* SR^sh: byte (row, col) <- (row, col + sh row); byte index 4 col + row */
        u32 col[4];
        for (int c = 0; c < 4; c++) {
            col[c] = 0;
            for (int row = 0; row < 4; row++)
                col[c] |= (u32)k[4 * ((c + sh * row) & 3) + row] << (8 * row);
        }
        u64 ev = spread(col[0]) | spread(col[2]) << 8;
        u64 od = spread(col[1]) | spread(col[3]) << 8;
        for (int j = 0; j < 8; j++) {
            u64 x = ((ev >> j) & 0x0101010101010101ULL) * 0x0F |
                    ((od >> j) & 0x0101010101010101ULL) * 0xF0;
            /* 0x63 (bits 0, 1, 5, 6) for the S-box's constant, rounds 1..10 */
            if (r > 0 && ((0x63 >> j) & 1)) x = ~x;
            sk->k[r][j] = vbcast(x);
        }
    }
}

/* the scratch of encrypt_cols, wiped by its caller at the end */
typedef struct {
    u64 w[8][AES_LANES];
    u32 c[4 * AES_BATCH];
} bs_work;

/* encrypts n <= AES_BATCH blocks of 4 column words each: c[4 i .. 4 i + 3] */
static inline void encrypt_cols(bs_work *ws, size_t n, const bs_keys *sk)
{
    static const u32 zero[4] = {0, 0, 0, 0};
    for (int i = 0; i < AES_BATCH; i++)
        load_cols(ws->w, i & 3, i >> 2, (size_t)i < n ? ws->c + 4 * i : zero);
    vw q[8];    /* registers and spill slots (the drivers scrub the stack) */
    for (int j = 0; j < 8; j++) q[j] = vload(ws->w[j]);
    encrypt_batch(q, sk);
    for (int j = 0; j < 8; j++) vstore(ws->w[j], q[j]);
    for (size_t i = 0; i < n; i++) store_cols(ws->c + 4 * i, ws->w, (int)(i & 3), (int)(i >> 2));
}

static void expand_portable(uint8_t *rk, const uint8_t *key)
{
    u32 w[44];
    u32 rcon = 1;
    for (int i = 0; i < 4; i++) w[i] = ld32le(key + 4 * i);
    for (int i = 4; i < 44; i++) {
        u32 t = w[i - 1];
        if ((i & 3) == 0) {
            vw p[8];
            p[0] = vbcast((u64)((t >> 8) | (t << 24)));    /* RotWord */
            for (int j = 1; j < 8; j++) p[j] = vbcast(0);
            ortho(p);
            sbox_planes(p);                                 /* SubWord, less 0x63 */
            ortho(p);
            u64 s[AES_LANES];
            vstore(s, p[0]);
            t = (u32)s[0] ^ 0x63636363U ^ rcon;
            rcon = (rcon << 1) ^ ((rcon >> 7) * 0x11BU);
            secea_wipe(p, sizeof p);
            secea_wipe(s, sizeof s);
        }
        w[i] = w[i - 4] ^ t;
    }
    for (int i = 0; i < 44; i++) st32le(rk + 4 * i, w[i]);
    secea_wipe(w, sizeof w);
}

/* CTR blocks (hi, lo + i), i < nblocks, into out; XOR'ed with in unless in
 * is NULL (in may alias out exactly).  With check, returns nonzero iff some
 * little-endian 64-bit output word is >= p (branch-free compare). */
static uint64_t ctr_run(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t nblocks,
                        uint64_t hi, uint64_t lo, uint64_t p, int check)
{
    bs_keys sk;
    bs_work ws;
    const u32 c0 = bswap32((u32)(hi >> 32)), c1 = bswap32((u32)hi);
    uint64_t bad = 0;
    bitslice_keys(&sk, rkb);
    while (nblocks) {
        size_t m = nblocks < AES_BATCH ? nblocks : AES_BATCH;
        for (size_t i = 0; i < m; i++) {
            u64 v = lo + i;         /* no wrap inside a call (the caller's guarantee) */
            ws.c[4 * i] = c0;
            ws.c[4 * i + 1] = c1;
            ws.c[4 * i + 2] = bswap32((u32)(v >> 32));
            ws.c[4 * i + 3] = bswap32((u32)v);
        }
        encrypt_cols(&ws, m, &sk);
        if (in) {
            for (size_t i = 0; i < 2 * m; i++) {
                u32 x0 = ld32le(in + 8 * i) ^ ws.c[2 * i], x1 = ld32le(in + 8 * i + 4) ^ ws.c[2 * i + 1];
                st32le(out + 8 * i, x0);
                st32le(out + 8 * i + 4, x1);
                if (check) bad |= (uint64_t)(((u64)x1 << 32 | x0) >= p);
            }
            in += 16 * m;
        } else {
            for (size_t i = 0; i < 4 * m; i++) st32le(out + 4 * i, ws.c[i]);
        }
        lo += m;
        out += 16 * m;
        nblocks -= m;
    }
    secea_wipe(&ws, sizeof ws);
    secea_wipe(&sk, sizeof sk);
    return bad;
}

static void ctr_portable(const uint8_t *rkb, uint8_t *out, size_t nblocks,
                         uint64_t hi, uint64_t lo)
{
    ctr_run(rkb, out, NULL, nblocks, hi, lo, 0, 0);
}

/* the fused CTR encryption (secea_prg_xor's bulk); SECEA_PRG_XOR_STREAM's
 * non-temporal stores have no portable form: ordinary stores */
static uint64_t ctr_xor_portable(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t nblocks,
                                 uint64_t hi, uint64_t lo, uint64_t p, int flags)
{
    return ctr_run(rkb, out, in, nblocks, hi, lo, p, (flags & SECEA_PRG_XOR_CHECK) != 0);
}

static void ecb_portable(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t nblocks)
{
    bs_keys sk;
    bs_work ws;
    bitslice_keys(&sk, rkb);
    while (nblocks) {
        size_t m = nblocks < AES_BATCH ? nblocks : AES_BATCH;
        for (size_t i = 0; i < 4 * m; i++) ws.c[i] = ld32le(in + 4 * i);
        encrypt_cols(&ws, m, &sk);
        for (size_t i = 0; i < 4 * m; i++) st32le(out + 4 * i, ws.c[i]);
        in += 16 * m;
        out += 16 * m;
        nblocks -= m;
    }
    secea_wipe(&ws, sizeof ws);
    secea_wipe(&sk, sizeof sk);
}

const secea__aes_impl secea__aes_impl_portable = {
    "portable", expand_portable, ctr_portable, ecb_portable, ctr_xor_portable, NULL
};
