/* The XOR retrieval (secea_dpf_path_xor_rows) as a GF(2) matrix product
 * with the Four-Russians method, transposed so that the table, not the keys,
 * supplies the lookup index (AVX2; retrieve.c's xor_avx2 / xor_plain are
 * the reference twins, secea_dpf_set_xor4r selects).
 *
 * The retrieval is Y = B x T over GF(2): B (K x m) the keys' leaf control
 * bits -- the server's share, secret -- and T (m x W, W = 64 d) the table's
 * bits, public to the server.  A Four-Russians table (Arlazarov, Dinic,
 * Kronrod, Faradzev 1970: docs/papers.md) indexed by B's bits
 * would address memory by secret bits; here, for a batch of X4_KEYS = 256
 * keys, c_j is the 256-bit vector of the keys' control bits at row j, and
 * for every group of 8 rows the 256 XOR combinations of c_{8g..8g+7} are
 * built in a fixed order (combo[i] = combo[i & (i - 1)] ^ c[ctz i]: every
 * address a loop counter).  Then for every output bit w,
 *     Y[w] ^= combo_g[idx[g][w]],  idx[g][w] = bits w of rows 8g..8g+7 of T,
 * the index a byte of the table transposed 8 x 8 (computed once per call).
 * The control bits only enter as data XORed into registers and memory at
 * addresses fixed by the table and the loop counters: the server's share
 * never steers an address or a branch.  Y (W x 256 bits) is transposed back
 * to 256 rows of d words at the end.  Per 8 rows, 256 keys and output bit:
 * one byte load and one 32-byte load and XOR, where xor_avx2 does 8 ANDs and
 * 8 XORs (per key, row and 4 words: one of each) -- about 8x less work.
 *
 * The walk that produces the leaves is the server kernels' walk
 * (secea__dpf_descend_multi for 8 keys' subtree tops, then
 * secea__dpf_descend per key); under the "vaes256" variant its last two
 * levels are fused here (leaf_bits2_v256: the parents stay in registers,
 * only the leaves' control bits come out, no leaf is stored), else (and
 * with secea_dpf_set_xor4r_walk(0), the twin) the leaves are stored and
 * their control bits gathered with movemask.  Each key's bits are then
 * transposed 8 x 8 into the c_j.  Work units are (batch of 256
 * keys, leaf range), as in retrieve.c; a partial last batch has zero
 * control bits for its absent keys. */
#include <stdlib.h>
#include "dpf_tree.h"

static int xor4r_mode = 1;   /* 0 off, 1 auto (batches of at least X4_MIN keys), 2 always (tests) */
static int xor4r_walk = 1;   /* 1: the leaf level's control bits straight from the hash (vaes256); 0: the twin */

int secea_dpf_set_xor4r_walk(int fused)
{
    int prev = __atomic_load_n(&xor4r_walk, __ATOMIC_RELAXED);
    __atomic_store_n(&xor4r_walk, fused ? 1 : 0, __ATOMIC_RELAXED);
    return prev;
}

int secea_dpf_set_xor4r(int mode)
{
    int prev = __atomic_load_n(&xor4r_mode, __ATOMIC_RELAXED);
    __atomic_store_n(&xor4r_mode, mode < 0 ? 0 : mode > 2 ? 2 : mode, __ATOMIC_RELAXED);
    return prev;
}

#if SECEA_X86
#include <immintrin.h>
#include "aes_v256.h"

#define X4_KEYS 256      /* keys per batch: one control bit per key in a 256-bit register */
#define X4_NB 4          /* row groups per pass over Y: 4 x 8 KiB of combinations, L1's size */
#define X4_UN 8          /* outputs per step (W = 64 d is a multiple of 64) */
#define X4_MIN 128       /* auto mode: a batch of fewer keys takes xor_avx2 (a batch costs about 110 keys of it) */
#define X4_MAX_IDX ((size_t)256 << 20)   /* the table's index (its size) is built only up to 256 MiB */
#define X4_MAX_D 4096    /* Y is 2 KiB per word of a row and thread: rows of at most 4,096 words (8 MiB of Y) */
#define TGT_X4 SECEA_TARGET("avx2")

size_t secea__dpf_xor4r_keys(size_t count, int mac512, uint64_t m, size_t d)
{
    int mode = __atomic_load_n(&xor4r_mode, __ATOMIC_RELAXED);
    const secea__kernels *kn = secea__kernels_now();
    if (mode == 0 || !secea__dpf_interleave() || kn->portable || !kn->cpu.avx2) return 0;
    if (d == 0 || d > X4_MAX_D || (m + 7) / 8 > X4_MAX_IDX / 64 / d) return 0;
    if (mode == 2) return count;
    if (mac512) return 0;
    return count % X4_KEYS >= X4_MIN ? count : count - count % X4_KEYS;
}

/* 8 x 8 bit transpose: bit 8i + j -> bit 8j + i (Hacker's Delight, 7-3) */
static inline uint64_t t8x8(uint64_t x)
{
    uint64_t t;
    t = (x ^ (x >> 7)) & 0x00AA00AA00AA00AAull;
    x ^= t ^ (t << 7);
    t = (x ^ (x >> 14)) & 0x0000CCCC0000CCCCull;
    x ^= t ^ (t << 14);
    t = (x ^ (x >> 28)) & 0x00000000F0F0F0F0ull;
    x ^= t ^ (t << 28);
    return x;
}

typedef struct {
    const secea__dpf_impl *im;
    const uint8_t *keys;
    size_t key_bytes, count, parts, d, W;
    unsigned levels;
    uint64_t m;
    const uint8_t *idx;    /* ceil(m / 8) x W: bit r of idx[g W + w] = bit w of row 8g + r */
    uint64_t *out;         /* count x d (parts == 1) */
    uint64_t *partial;     /* units x X4_KEYS x d (parts > 1) */
} x4_ctx;

/* bit i of bits[i / 64] = control bit of leaves[i], i < n; the rest of the
 * words up to nw cleared */
TGT_X4 static void leaf_bits(uint64_t *bits, size_t nw, const blk *leaves, size_t n)
{
    memset(bits, 0, 8 * nw);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(leaves + i));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(leaves + i + 2));
        /* low words of leaves i, i+2, i+1, i+3, put in order */
        __m256i u = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(v0, v1), 0xD8);
        unsigned b = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(u, 63)));
        bits[i >> 6] |= (uint64_t)b << (i & 63);
    }
    for (; i < n; i++) bits[i >> 6] |= (leaves[i].lo & 1) << (i & 63);
}

/* The leaf level's control bits, fused (the "vaes256" variant): the leaves'
 * seeds are never used by the retrieval, only their t bits, so the last
 * level is hashed as expand_v256 does (one register per parent, lanes k_L
 * and k_R on the broadcast sigma(s)) and only bit 0 of each lane is kept:
 * unpacklo of two registers, shift and movemask give the 4 bits of two
 * parents.  The rest of H and of the correction is bit 0 of the parents'
 * words (one more movemask of the parents' registers): bit 0 of H_c(s) = bit 0 of AES_c(sigma(s))
 * ^ bit 0 of s.hi (sigma(s).lo = s.hi; the last round key's XOR is
 * linear), and the correction t_s & t_CW^c, as masks (no branch; pext and
 * pdep with constant masks, fixed-latency instructions on every CPU
 * with VAES, unlike the microcoded ones of earlier AMD cores).  No leaf
 * is stored, and leaf_bits' gather is gone.  Bit-identical to expand_v256
 * followed by leaf_bits (tests/test_dpf_xor4r.py, secea_dpf_set_xor4r_walk). */
#define TGT_X4V SECEA_TARGET("aes,sse4.1,avx2,vaes,bmi2")
#define LB_W 8   /* parents (registers) per group */

/* the parents in registers xs[j] (parents 2j, 2j + 1), m of them: sgv[j]
 * = their sigma(s) with t cleared; returns X, bits 4j .. 4j + 3: t, hi bit
 * 0 of parent 2j, then of 2j + 1 */
TGT_X4V static inline __attribute__((always_inline)) unsigned lb_sigma(const __m256i *xs, const int m, __m256i *sgv)
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1), hm = _mm256_set_epi64x(-1, 0, -1, 0);
    unsigned X = 0;
    for (int j = 0; 2 * j < m; j++) {
        __m256i x = xs[j];
        X |= (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(x, 63))) << (4 * j);
        x = _mm256_andnot_si256(one, x);
        sgv[j] = _mm256_xor_si256(_mm256_shuffle_epi32(x, 0x4E), _mm256_and_si256(x, hm));   /* sigma */
    }
    return X;
}

/* the children's control bits (bit 2i + c: child c of parent i) from X
 * (lb_sigma) and Z, bits 4j .. 4j + 3: bit 0 of AES_L of parents 2j,
 * 2j + 1, then of AES_R.  Per parent: H = bit 0 of s.hi, T = t_s; child
 * c's bit = AES_c ^ H ^ (T & t_CW^c), mL and mR the masks of t_CW^c */
TGT_X4V static inline __attribute__((always_inline)) unsigned lb_children(unsigned X, unsigned Z, unsigned mL,
                                                                          unsigned mR)
{
    unsigned T = (unsigned)_pext_u32(X, 0x55555555u), H = (unsigned)_pext_u32(X, 0xAAAAAAAAu);
    unsigned Lb = (unsigned)_pext_u32(Z, 0x33333333u) ^ H ^ (T & mL);
    unsigned Rb = (unsigned)_pext_u32(Z, 0xCCCCCCCCu) ^ H ^ (T & mR);
    return (unsigned)_pdep_u32(Lb, 0x55555555u) | (unsigned)_pdep_u32(Rb, 0xAAAAAAAAu);
}

/* bit 2i + c = control bit of child c of parents par[i], i < m <= LB_W */
/* the parents in registers: xs[j] = parents 2j, 2j + 1 (a lone last one in the low lane, the high lane zero) */
TGT_X4V static inline __attribute__((always_inline)) unsigned
lb_core(const __m256i *xs, const int m, const __m256i *k, unsigned mL, unsigned mR)
{
    __m256i sgv[(LB_W + 1) / 2];
    unsigned X = lb_sigma(xs, m, sgv);
    const __m128i *sg = (const __m128i *)sgv;
    const __m256i *kq = k;
    __asm__("" : "+r"(sg), "+r"(kq));   /* broadcasts from memory; round keys as memory operands */
    __m256i b[LB_W];
    SECEA_V256_ROUNDS9(b, sg, m, kq);
    __m256i k10 = _mm256_loadu_si256(kq + 10);
    for (int j = 0; j < m; j++) b[j] = _mm256_aesenclast_epi128(b[j], k10);
    unsigned Z = 0;   /* bits 4j .. 4j + 3: bit 0 of AES_L of parents 2j, 2j + 1, then of AES_R */
    for (int j = 0; j < m; j += 2) {
        __m256i u = j + 1 < m ? _mm256_unpacklo_epi64(b[j], b[j + 1]) : b[j];
        unsigned z = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(u, 63)));
        Z |= (j + 1 < m ? z : z & 5u) << (2 * j);   /* a last lone parent: its high words dropped */
    }
    return lb_children(X, Z, mL, mR);
}

TGT_X4V static inline __attribute__((always_inline)) unsigned
lb_group(const blk *par, const int m, const __m256i *k, unsigned mL, unsigned mR)
{
    __m256i xs[(LB_W + 1) / 2];
    for (int j = 0; 2 * j < m; j++)
        xs[j] = 2 * j + 1 < m ? _mm256_loadu_si256((const __m256i *)(par + 2 * j))
                              : _mm256_inserti128_si256(_mm256_setzero_si256(),
                                                        _mm_loadu_si128((const __m128i *)(par + 2 * j)), 0);
    return lb_core(xs, m, k, mL, mR);
}

/* The last two levels fused and pipelined: stage 1 expands LB_W / 2
 * grandparents as expand_v256 does (one register per grandparent: its two
 * children, the parents, corrected with cwv = level L - 1's correction
 * words) into registers xs (lb_core's input: the parents' level is never
 * stored); stage 2 is lb_core on the previous group's xs, its rounds
 * interleaved with stage 1's (12 chains in flight). */
enum { S1 = LB_W / 2 };

TGT_X4V static inline __attribute__((always_inline)) void
lb_s1_pre(const blk *gp, __m256i *sgv, __m256i *tmv)
{
    const __m256i one = _mm256_set_epi64x(0, 1, 0, 1), hm = _mm256_set_epi64x(-1, 0, -1, 0);
    for (int j = 0; j < S1 / 2; j++) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(gp + 2 * j));
        __m256i s = _mm256_andnot_si256(one, x);
        sgv[j] = _mm256_xor_si256(_mm256_shuffle_epi32(s, 0x4E), _mm256_and_si256(s, hm));
        tmv[j] = _mm256_shuffle_epi32(_mm256_sub_epi64(_mm256_setzero_si256(), _mm256_and_si256(x, one)), 0x44);
    }
}

/* stage 2 on xs (its bits returned) and, if do1, stage 1 of gp into xn */
TGT_X4V static inline __attribute__((always_inline)) unsigned
lb_step(const __m256i *xs, const int do1, const blk *gp, __m256i *xn, const __m256i *k, __m256i cwv, unsigned mL,
        unsigned mR)
{
    __m256i sgv[LB_W / 2], sgv1[S1 / 2], tmv1[S1 / 2];
    unsigned X = lb_sigma(xs, LB_W, sgv);
    if (do1) lb_s1_pre(gp, sgv1, tmv1);
    const __m128i *sg = (const __m128i *)sgv, *sg1 = (const __m128i *)sgv1, *tm1 = (const __m128i *)tmv1;
    const __m256i *kq = k;
    __asm__("" : "+r"(sg), "+r"(sg1), "+r"(tm1), "+r"(kq));
    __m256i b[LB_W], c[S1];
    __m256i k0 = _mm256_loadu_si256(kq);
    for (int j = 0; j < LB_W; j++) b[j] = _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_load_si128(sg + j)), k0);
    if (do1)
        for (int j = 0; j < S1; j++)
            c[j] = _mm256_xor_si256(_mm256_broadcastsi128_si256(_mm_load_si128(sg1 + j)), k0);
    for (int r = 1; r < 10; r++) {
        __m256i kr = _mm256_loadu_si256(kq + r);
        for (int j = 0; j < LB_W; j++) b[j] = _mm256_aesenc_epi128(b[j], kr);
        if (do1)
            for (int j = 0; j < S1; j++) c[j] = _mm256_aesenc_epi128(c[j], kr);
    }
    __m256i k10 = _mm256_loadu_si256(kq + 10);
    for (int j = 0; j < LB_W; j++) b[j] = _mm256_aesenclast_epi128(b[j], k10);
    if (do1)
        for (int j = 0; j < S1; j++) {
            __m256i h = _mm256_aesenclast_epi128(
                c[j], _mm256_xor_si256(k10, _mm256_broadcastsi128_si256(_mm_load_si128(sg1 + j))));
            xn[j] = _mm256_xor_si256(h, _mm256_and_si256(_mm256_broadcastsi128_si256(_mm_load_si128(tm1 + j)), cwv));
        }
    unsigned Z = 0;
    for (int j = 0; j < LB_W; j += 2) {
        __m256i u = _mm256_unpacklo_epi64(b[j], b[j + 1]);
        Z |= (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_slli_epi64(u, 63))) << (2 * j);
    }
    return lb_children(X, Z, mL, mR);
}

/* ORs the 2 LB_W bits v in at bit position pos (public) */
static inline void lb_put(uint64_t *bits, size_t pos, uint64_t v)
{
    unsigned sh = (unsigned)(pos & 63);
    bits[pos >> 6] |= v << sh;
    if (sh + 2 * LB_W > 64) bits[(pos >> 6) + 1] |= v >> (64 - sh);
}

/* bits past the first n cleared */
static inline void lb_clear(uint64_t *bits, size_t nw, size_t n)
{
    if (n & 63) bits[n >> 6] &= ((uint64_t)1 << (n & 63)) - 1;
    for (size_t w = (n + 63) >> 6; w < nw; w++) bits[w] = 0;
}

/* bits (nw words): bit i = control bit of leaf i, the children of parents
 * par[0 .. np) in order, i < n <= 2 np; the rest cleared.  cw: the leaf
 * level's correction words (cw[0] left, cw[1] right) */
TGT_X4V static void leaf_bits_v256(uint64_t *bits, size_t nw, const blk *par, size_t np, size_t n, const blk cw[2])
{
    __m256i k[11];
    secea__v256_keys_lr(k);
    unsigned cwl = 0u - ((unsigned)cw[0].lo & 1u), cwr = 0u - ((unsigned)cw[1].lo & 1u);   /* masks */
    memset(bits, 0, 8 * nw);
    size_t i = 0;
    for (; i + LB_W <= np; i += LB_W) lb_put(bits, 2 * i, lb_group(par + i, LB_W, k, cwl, cwr));
    if (i < np) lb_put(bits, 2 * i, lb_group(par + i, (int)(np - i), k, cwl, cwr));
    lb_clear(bits, nw, n);
}

/* The same from the grandparents gp[] (level L - 2, gp[0] the grandparent
 * of leaf 0; as many as n leaves need), the parents' correction words cw1,
 * the leaves' cw.  Whole groups of LB_W / 2 grandparents in lb_group2; the
 * rest expanded into tmp (LB_W blocks) and hashed by lb_group. */
TGT_X4V static void leaf_bits2_v256(uint64_t *bits, size_t nw, const blk *gp, size_t n, const blk cw1[2],
                                    const blk cw[2], const secea__dpf_impl *im, blk *tmp)
{
    __m256i k[11];
    secea__v256_keys_lr(k);
    unsigned cwl = 0u - ((unsigned)cw[0].lo & 1u), cwr = 0u - ((unsigned)cw[1].lo & 1u);   /* masks */
    const __m256i cwv = _mm256_loadu_si256((const __m256i *)cw1);
    memset(bits, 0, 8 * nw);
    size_t np = (n + 1) / 2;   /* parents */
    size_t i = 0;
    if (np >= LB_W) {
        __m256i xs[S1], xn[S1];
        im->expand((blk *)xs, gp, S1, cw1);   /* the first group's parents */
        for (; i + 2 * LB_W <= np; i += LB_W) {
            lb_put(bits, 2 * i, lb_step(xs, 1, gp + (i + LB_W) / 2, xn, k, cwv, cwl, cwr));
            memcpy(xs, xn, sizeof xs);
        }
        lb_put(bits, 2 * i, lb_step(xs, 0, gp, xn, k, cwv, cwl, cwr));
        i += LB_W;
    }
    if (i < np) {
        size_t g = (np - i + 1) / 2;
        im->expand(tmp, gp + i / 2, g, cw1);
        lb_put(bits, 2 * i, lb_group(tmp, (int)(np - i), k, cwl, cwr));
    }
    lb_clear(bits, nw, n);
}


/* Y[w] ^= XOR_{j < nb} combo_j[ix_j[w]] for w < W (a multiple of X4_UN),
 * the nb (a constant) combination tables at comb + 256 j.  X4_UN outputs
 * per step: independent XOR chains in flight. */
TGT_X4 static inline __attribute__((always_inline)) void
acc_groups(__m256i *Y, const __m256i *comb, const uint8_t *const *ix, size_t W, const int nb)
{
    for (size_t w = 0; w < W; w += X4_UN) {
        __m256i y[X4_UN];
        for (int u = 0; u < X4_UN; u++) {
            y[u] = _mm256_load_si256(Y + w + u);
            for (int j = 0; j < nb; j++)
                y[u] = _mm256_xor_si256(y[u], _mm256_load_si256(comb + 256 * j + ix[j][w + u]));
        }
        for (int u = 0; u < X4_UN; u++) _mm256_store_si256(Y + w + u, y[u]);
    }
}

/* Y ^= product of the rows' control-bit vectors cv[0 .. 8 G) (zero past the
 * rows) with the table's row groups g0 .. g0 + G - 1 */
TGT_X4 static void product(__m256i *Y, __m256i *comb, const __m256i *cv, size_t G, const uint8_t *idx, size_t g0,
                           size_t W)
{
    for (size_t g = 0; g < G; g += X4_NB) {
        size_t nb = G - g < X4_NB ? G - g : X4_NB;
        const uint8_t *ix[X4_NB];
        for (size_t j = 0; j < nb; j++) {
            const __m256i *c = cv + 8 * (g + j);
            __m256i *t = comb + 256 * j;
            t[0] = _mm256_setzero_si256();
            for (unsigned i = 1; i < 256; i++)
                t[i] = _mm256_xor_si256(t[i & (i - 1)], _mm256_load_si256(c + __builtin_ctz(i)));
            ix[j] = idx + (g0 + g + j) * W;
        }
        if (nb == X4_NB) acc_groups(Y, comb, ix, W, X4_NB);
        else                                   /* the last groups of a subtree */
            for (size_t j = 0; j < nb; j++) acc_groups(Y, comb + 256 * j, ix + j, W, 1);
    }
}

/* out[k d + t] for k < nk = bits 64 t .. 64 t + 63 of key k in Y */
static void y_to_rows(uint64_t *out, const uint8_t *Y, size_t nk, size_t d)
{
    for (size_t t = 0; t < d; t++)
        for (size_t kb = 0; kb < X4_KEYS / 8 && 8 * kb < nk; kb++) {
            uint64_t byte_of[8] = {0};
            for (size_t bb = 0; bb < 8; bb++) {
                uint64_t x = 0;
                for (unsigned r = 0; r < 8; r++) x |= (uint64_t)Y[32 * (64 * t + 8 * bb + r) + kb] << (8 * r);
                byte_of[bb] = t8x8(x);   /* byte i: key 8 kb + i, bit r: output bit 64 t + 8 bb + r */
            }
            for (unsigned i = 0; i < 8 && 8 * kb + i < nk; i++) {
                uint64_t v = 0;
                for (size_t bb = 0; bb < 8; bb++) v |= ((byte_of[bb] >> (8 * i)) & 0xFF) << (8 * bb);
                out[(8 * kb + i) * d + t] = v;
            }
        }
}

static int x4_unit(void *vctx, size_t unit, void *scratch)
{
    x4_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    size_t bat = unit / c->parts, r = unit % c->parts, d = c->d, W = c->W;
    unsigned L = c->levels;
    unsigned b = L < SUB_LOG ? L : SUB_LOG;
    size_t nk_all = c->count - bat * X4_KEYS < X4_KEYS ? c->count - bat * X4_KEYS : X4_KEYS;
    size_t rows_cap = ((((size_t)1 << b) + 7) & ~(size_t)7);
    size_t nw = rows_cap / 64 + 1;
    uint64_t lo, hi;
    secea__dpf_part_range(c->m, b, c->parts, r, &lo, &hi);
    uint64_t *dst = c->parts == 1 ? c->out + bat * X4_KEYS * d : c->partial + unit * X4_KEYS * d;
    if (lo >= hi) {
        if (c->parts > 1) memset(dst, 0, 8 * X4_KEYS * d);
        return 0;
    }
    /* scratch (64-byte aligned): Y, combinations, control-bit vectors, then the walk's */
    uint8_t *p = scratch;
    __m256i *Y = (__m256i *)p;                        p += 32 * W;
    __m256i *comb = (__m256i *)p;                     p += 32 * 256 * X4_NB;
    __m256i *cv = (__m256i *)p;                       p += 32 * rows_cap;
    tree_t *trees = (tree_t *)p;                      p += sizeof(tree_t) * MULTI_KEYS;
    blk *tA = (blk *)p;                               p += 16 * walk_top_cap(1);
    blk *tB = (blk *)p;                               p += 16 * walk_top_cap(1);
    blk *sA = (blk *)p;                               p += 16 * sub_cap();
    blk *sB = (blk *)p;                               p += 16 * sub_cap();
    blk *mout = (blk *)p;                             p += 16 * (size_t)MULTI_OUT * MULTI_KEYS;
    blk *mtmp = (blk *)p;                             p += 16 * (size_t)MULTI_TMP;
    uint64_t *bits = (uint64_t *)p;                   p += 8 * nw * MULTI_KEYS;
    memset(Y, 0, 32 * W);
    const int fused = im == &secea__dpf_impl_vaes256 && secea__kernels_now()->cpu.bmi2 &&
                      __atomic_load_n(&xor4r_walk, __ATOMIC_RELAXED);
    walk_t w[MULTI_KEYS];
    for (uint64_t q = lo >> b; q <= (hi - 1) >> b; q++) {
        uint64_t a = q << b, z = (q + 1) << b;
        uint64_t slo = lo > a ? lo : a, shi = hi < z ? hi : z;   /* shi <= m; slo a multiple of 8 or 0 */
        size_t nrows = (size_t)(shi - slo), G = (nrows + 7) / 8;
        memset(cv, 0, 32 * 8 * G);
        for (size_t k0 = 0; k0 < nk_all; k0 += MULTI_KEYS) {
            size_t nk = nk_all - k0 < MULTI_KEYS ? nk_all - k0 : MULTI_KEYS;
            blk start[MULTI_KEYS];
            for (size_t k = 0; k < nk; k++) {
                secea__dpf_tree_load(&trees[k], c->keys + (bat * X4_KEYS + k0 + k) * c->key_bytes, L);
                secea__dpf_walk_begin(&w[k], im, &trees[k], slo, shi, tA, tB);
                start[k] = w[k].top[0];
            }
            uint64_t am = 0;
            size_t nm = 0;
            unsigned dm = secea__dpf_descend_multi(im, trees, nk, start, q, w[0].D, L, slo, shi, mout, &am, &nm,
                                                   mtmp);
            /* the leaf range starts at the subtree's first leaf (slo even): parents slo / 2 .. */
            if (fused && dm + 1 < L) {   /* L >= 2: b >= 2, slo a multiple of 4 */
                uint64_t glo = slo >> 2, ghi = (shi - 1) >> 2;
                for (size_t k = 0; k < nk; k++) {
                    const blk *gp = secea__dpf_descend(im, &trees[k], mout + k * MULTI_OUT, am, dm, L - 2, glo,
                                                       ghi + 1, sA, sB);
                    leaf_bits2_v256(bits + k * nw, nw, gp, nrows, trees[k].cw[L - 2], trees[k].cw[L - 1], im,
                                    mtmp);
                }
            } else if (fused && dm < L) {
                uint64_t plo = slo >> 1, phi = (shi - 1) >> 1;
                for (size_t k = 0; k < nk; k++) {
                    const blk *par = secea__dpf_descend(im, &trees[k], mout + k * MULTI_OUT, am, dm, L - 1, plo,
                                                        phi + 1, sA, sB);
                    leaf_bits_v256(bits + k * nw, nw, par, (size_t)(phi - plo + 1), nrows, trees[k].cw[L - 1]);
                }
            } else
            for (size_t k = 0; k < nk; k++) {
                const blk *leaves = secea__dpf_descend(im, &trees[k], mout + k * MULTI_OUT, am, dm, L, slo, shi,
                                                       sA, sB);
                leaf_bits(bits + k * nw, nw, leaves, nrows);
            }
            if (nk < MULTI_KEYS) memset(bits + nk * nw, 0, 8 * nw * (MULTI_KEYS - nk));
            /* keys k0 .. k0 + 7 are byte k0 / 8 of each c_j */
            uint8_t *cb = (uint8_t *)cv + k0 / 8;
            for (size_t jb = 0; jb < G; jb++) {
                uint64_t x = 0;
                for (unsigned i = 0; i < MULTI_KEYS; i++)
                    x |= ((bits[i * nw + jb / 8] >> (8 * (jb % 8))) & 0xFF) << (8 * i);
                x = t8x8(x);   /* byte r: row 8 jb + r, bit i: key k0 + i */
                for (unsigned rr = 0; rr < 8; rr++) cb[32 * (8 * jb + rr)] = (uint8_t)(x >> (8 * rr));
            }
        }
        product(Y, comb, cv, G, c->idx, (size_t)(slo / 8), W);
    }
    if (c->parts > 1) memset(dst, 0, 8 * X4_KEYS * d);
    y_to_rows(dst, (const uint8_t *)Y, c->parts > 1 ? X4_KEYS : nk_all, d);
    return 0;
}

/* idx[g W + w], bit r = bit w of table row 8 g + r (rows >= m zero) */
static void build_idx(uint8_t *idx, const uint64_t *table, uint64_t m, size_t d)
{
    size_t G = (size_t)((m + 7) / 8), W = 64 * d;
    for (size_t g = 0; g < G; g++) {
        size_t nr = m - 8 * g < 8 ? (size_t)(m - 8 * g) : 8;
        for (size_t t = 0; t < d; t++) {
            uint64_t rw[8] = {0};
            for (size_t r = 0; r < nr; r++) rw[r] = table[(8 * g + r) * d + t];
            for (unsigned bb = 0; bb < 8; bb++) {
                uint64_t x = 0;
                for (unsigned r = 0; r < 8; r++) x |= ((rw[r] >> (8 * bb)) & 0xFF) << (8 * r);
                x = t8x8(x);   /* byte i: output bit 64 t + 8 bb + i, bit r: row 8 g + r */
                memcpy(idx + g * W + 64 * t + 8 * bb, &x, 8);
            }
        }
    }
}

int secea__dpf_xor4r_rows(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *paths, size_t count,
                          const uint64_t *table, uint64_t m, size_t d, int threads)
{
    x4_ctx c;
    memset(&c, 0, sizeof c);
    c.im = secea__dpf_impl_cur();
    c.keys = paths;
    c.key_bytes = shape->stride;
    c.count = count;
    c.levels = shape->levels;
    c.m = m;
    c.d = d;
    c.W = 64 * d;
    size_t nbat = (count + X4_KEYS - 1) / X4_KEYS;
    c.parts = secea__dpf_choose_parts(nbat, threads, m);
    size_t G = (size_t)((m + 7) / 8);
    if (d == 0 || d > X4_MAX_D || G > X4_MAX_IDX / 64 / d) return SECEA_EINVAL;   /* callers ask secea__dpf_xor4r_keys first */
    uint8_t *idx = malloc(G * c.W);
    if (!idx) return SECEA_ENOMEM;
    build_idx(idx, table, m, d);
    c.idx = idx;
    c.out = out;
    size_t units = nbat * c.parts;
    if (c.parts > 1) {
        c.partial = malloc(8 * units * X4_KEYS * d);
        if (!c.partial) {
            free(idx);
            return SECEA_ENOMEM;
        }
    }
    unsigned b = c.levels < SUB_LOG ? c.levels : SUB_LOG;
    size_t rows_cap = ((((size_t)1 << b) + 7) & ~(size_t)7);
    size_t nw = rows_cap / 64 + 1;
    size_t scratch = 32 * c.W + 32 * 256 * X4_NB + 32 * rows_cap + sizeof(tree_t) * MULTI_KEYS +
                     16 * walk_top_cap(1) * 2 + 32 * sub_cap() +
                     16 * ((size_t)MULTI_OUT * MULTI_KEYS + MULTI_TMP) + 8 * nw * MULTI_KEYS + 64;
    int status = secea__pool_run(x4_unit, &c, units, scratch, threads);
    if (status == 0 && c.parts > 1) {
        memset(out, 0, 8 * count * d);
        for (size_t u = 0; u < units; u++) {
            size_t bat = u / c.parts;
            size_t nk = count - bat * X4_KEYS < X4_KEYS ? count - bat * X4_KEYS : X4_KEYS;
            const uint64_t *src = c.partial + u * X4_KEYS * d;
            uint64_t *o = out + bat * X4_KEYS * d;
            for (size_t i = 0; i < nk * d; i++) o[i] ^= src[i];
        }
    }
    free(c.partial);
    free(idx);
    return status;
}

#else   /* not x86: the portable and ARM paths keep retrieve.c's kernels */

size_t secea__dpf_xor4r_keys(size_t count, int mac512, uint64_t m, size_t d)
{
    (void)count, (void)mac512, (void)m, (void)d;
    return 0;
}

int secea__dpf_xor4r_rows(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *paths, size_t count,
                          const uint64_t *table, uint64_t m, size_t d, int threads)
{
    (void)shape, (void)out, (void)paths, (void)count, (void)table, (void)m, (void)d, (void)threads;
    return SECEA_EINVAL;
}
#endif
