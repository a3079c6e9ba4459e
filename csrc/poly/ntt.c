/* Number-theoretic transforms over F_p: plans, the portable kernels, runtime
 * variant selection, and the three-prime Chinese remaindering.
 *
 * Transform.  For n = 2^logn and a primitive n-th root of unity w,
 *     forward:  A[ntt_bitrev(k)] = sum_i a[i] w^(ik)            (natural in)
 *     inverse:  a[i] = n^-1 sum_k A[ntt_bitrev(k)] w^(-ik)       (natural out)
 * so that inverse(forward(a) .* forward(b)) is the cyclic convolution of a
 * and b (Cooley & Tukey, Math. Comp. 19, 1965; Pollard, Math. Comp. 25,
 * 1971).  The forward transform is decimation in frequency (Gentleman-Sande
 * butterflies (x, y) -> (x + y, (x - y) w)), the inverse decimation in time
 * ((x, y) -> (x + y w, x - y w)) with the inverse twiddles: it undoes the
 * forward butterflies in reverse order, so no bit-reversal permutation is
 * ever performed.
 *
 * Two algorithms:
 *
 * 1. Radix 2 (any prime p < 2^63 with 2^logn | p - 1; Goldilocks for
 *    logn < 6).  Twiddles per level: fw[h + j] = w_{2h}^j for the butterflies
 *    of half-span h, plus Shoup quotients w' = floor(w 2^64 / p) (V. Shoup,
 *    NTL; D. Harvey, "Faster arithmetic for number-theoretic transforms",
 *    J. Symb. Comp. 60, 2014): for any x < 2^64,
 *        q = floor(x w' / 2^64),  r = x w - q p  (mod 2^64)  lies in [0, 2p),
 *    so one multiply-high, two low multiplies and one correction give x w mod
 *    p; p < 2^63 keeps 2p and every butterfly intermediate below 2^64.  Large
 *    transforms recurse depth first (one level over the block, then each
 *    half) until a block fits in L1, where the remaining levels run
 *    iteratively.  n^-1 is folded into the last inverse level.  For
 *    logn >= 6, ntt_avx512.c vectorises this (two levels per sweep on large
 *    blocks; for p < 2^51 the Shoup product runs in 52-bit IFMA arithmetic).
 *
 * 2. Goldilocks stages (p = 2^64 - 2^32 + 1, logn >= 6).  2 has order 192
 *    mod p (2^96 = -1), so every 64-th root of unity is a power of two and
 *    multiplying by it is a shift plus the Goldilocks reduction
 *    (2^64 = 2^32 - 1, 2^96 = -1) instead of a full 64 x 64 multiplication.
 *    The transform is factored Cooley-Tukey style ("four-step", Bailey,
 *    J. Supercomputing 4, 1990; radix-64 use of 2^(3k) roots: R. Bloemen,
 *    "The Goldilocks prime", 2022) into stages of k <= 6 levels: a block of
 *    N = R M entries, R = 2^k, is split into R rows of stride M, and
 *        b_q[j] = w_N^(jq) sum_m a[j + m M] w_R^(mq)      (j < M, q < R)
 *    is stored at row bitrev_k(q); then each row (length M) is transformed
 *    recursively.  The inner R-point DFT (R = R1 R2) is two passes of
 *    radix-R1 then radix-R2 with the inter-pass twiddles w_R^(m0 q1), all
 *    powers of two; only w_N^(jq) needs general multiplications (one per
 *    entry per stage, instead of one per entry per two levels in radix 2).
 *    The last three levels are 8-point DFTs on consecutive blocks.  Stages
 *    run depth first, so after the first stage a row fits in L2.  The
 *    portable variant runs the same algorithm one entry at a time (so both
 *    variants share the plan's tables); ntt_avx512.c vectorises it over 8
 *    consecutive j.  n^-1 is folded into the twiddles of the top inverse
 *    stage.
 *
 * Pointwise products: Goldilocks as above; p < 2^50 through a double-
 * precision quotient estimate (internal.h); other p by Moller-Granlund
 * division, or (AVX-512) Montgomery reduction with R = 2^64 followed by a
 * Shoup multiplication by R mod p.
 *
 * Plan memory: generic primes 4n words (forward/inverse twiddles and their
 * Shoup quotients); Goldilocks about 2n words (the top stage's table has
 * n entries per direction, the lower stages N << n).
 *
 * Chinese remaindering (secea_ntt_crt3): Garner's algorithm (H. L. Garner,
 * IRE Trans. EC-8, 1959) with q0 = Goldilocks and the primes q1, q2 of
 * ntt_internal.h:
 *     x0 = r0,  x1 = (r1 - x0) q0^-1 mod q1,
 *     x2 = (r2 - x0 - x1 q0) (q0 q1)^-1 mod q2,
 *     X  = x0 + x1 q0 + x2 q0 q1  in [0, q0 q1 q2),
 * and X mod p = (x0 + x1 (q0 mod p) + x2 (q0 q1 mod p)) mod p.  With x1 < q1,
 * x2 < q2 and q1 + q2 < 2^64 - 2^33, that sum is below p 2^64, so it is one
 * 128-bit value reduced by a single Moller-Granlund division (internal.h).
 * The constant multiplications mod q1, q2 use Shoup's method.
 *
 * Length (about 740 lines): plans, portable kernels and their selection
 * must agree on one twiddle layout; the AVX-512 kernels are in ntt_avx512.c.
 */
#include <stdlib.h>
#include <string.h>
#include "ntt_internal.h"

#define GL SECEA_GOLDILOCKS
#define SECEA_NTT_IFMA_MAX_P (1ULL << 51)   /* 52-bit Shoup needs 2p < 2^52 */

/* ------------------------------------------------------------------ */
/* scalar helpers                                                      */

static inline uint64_t ntt_shoup_pre(uint64_t w, uint64_t p)
{
    return (uint64_t)(((secea_u128)w << 64) / p);
}

/* x w mod p for any x < 2^64 (p < 2^63, w < p, ws = ntt_shoup_pre(w, p)) */
static inline uint64_t ntt_shoup_mul(uint64_t x, uint64_t w, uint64_t ws, uint64_t p)
{
    uint64_t q = (uint64_t)(((secea_u128)x * ws) >> 64);
    uint64_t r = x * w - q * p;
    return r - (p & (0 - (uint64_t)(r >= p)));
}

/* branch free (data-dependent branches mispredict half the time) */
static inline uint64_t ntt_sub_p(uint64_t a, uint64_t b, uint64_t p)   /* any p */
{
    return a - b + (p & (0 - (uint64_t)(a < b)));
}

static inline uint64_t ntt_gl_add(uint64_t a, uint64_t b)
{
    uint64_t t = GL - b;                 /* in (0, p] */
    return a - t + (GL & (0 - (uint64_t)(a < t)));
}

static inline uint64_t ntt_gl_sub(uint64_t a, uint64_t b) { return ntt_sub_p(a, b, GL); }

/* a + b mod p for canonical inputs, any p < 2^64 */
static inline uint64_t ntt_addmod(uint64_t a, uint64_t b, uint64_t p)
{
    uint64_t t = p - b;
    return a - t + (p & (0 - (uint64_t)(a < t)));
}

static uint64_t ntt_powmod(const secea_modctx *c, uint64_t a, uint64_t e)
{
    uint64_t r = 1 % c->p;
    a = secea_mod64(c, a);
    while (e) {
        if (e & 1) r = secea_mulmod(c, r, a);
        a = secea_mulmod(c, a, a);
        e >>= 1;
    }
    return r;
}

/* deterministic Miller-Rabin for 64-bit n (the first 12 prime bases suffice
 * below 3.3 * 10^24: Sorenson & Webster, Math. Comp. 86, 2017) */
static int ntt_is_prime(uint64_t n)
{
    static const uint64_t bases[12] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
    if (n < 2) return 0;
    for (int i = 0; i < 12; i++) {
        if (n == bases[i]) return 1;
        if (n % bases[i] == 0) return 0;
    }
    secea_modctx c;
    secea_modctx_init(&c, n);
    uint64_t d = n - 1;
    unsigned s = 0;
    while (!(d & 1)) { d >>= 1; s++; }
    for (int i = 0; i < 12; i++) {
        uint64_t x = ntt_powmod(&c, bases[i], d);
        if (x == 1 || x == n - 1) continue;
        unsigned r = 1;
        for (; r < s; r++) {
            x = secea_mulmod(&c, x, x);
            if (x == n - 1) break;
        }
        if (r == s) return 0;
    }
    return 1;
}

static unsigned ntt_bitrev(unsigned x, unsigned bits)
{
    unsigned r = 0;
    for (unsigned i = 0; i < bits; i++) r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

/* ------------------------------------------------------------------ */
/* plan                                                                */

static size_t ntt_round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

secea_ntt_plan *secea_ntt_plan_new(uint64_t p, uint64_t w, unsigned logn)
{
    if (logn > SECEA_NTT_MAX_LOGN || p < 2 || w >= p) return NULL;
    int gold = p == GL;
    if (!gold && p >= (1ULL << 63)) return NULL;
    size_t n = (size_t)1 << logn;
    if (((p - 1) & (uint64_t)(n - 1)) != 0) return NULL;
    if (!gold && !ntt_is_prime(p)) return NULL;
    secea_modctx c;
    secea_modctx_init(&c, p);
    /* w of exact order n: w^(n/2) = -1 (n >= 2), w = 1 (n = 1) */
    if (logn == 0) {
        if (w != 1) return NULL;
    } else if (ntt_powmod(&c, w, n / 2) != p - 1) {
        return NULL;
    }

    secea_ntt_plan *pl = calloc(1, sizeof *pl);
    if (!pl) return NULL;
    pl->p = p;
    pl->w = w;
    pl->logn = logn;
    pl->n = n;
    pl->winv = ntt_powmod(&c, w, n - 1);
    pl->ninv = p - (p - 1) / n;                  /* n (p - (p-1)/n) = 1 mod p */
    pl->gold_stages = gold && logn >= 6;

    if (!pl->gold_stages) {
        int shoup = !gold;
        size_t words = n * (shoup ? 4 : 2);
        uint64_t *m = aligned_alloc(64, ntt_round64(words * 8));
        if (!m) { free(pl); return NULL; }
        pl->mem = m;
        pl->fw = m;
        pl->iw = m + n;
        pl->fws = shoup ? m + 2 * n : NULL;
        pl->iws = shoup ? m + 3 * n : NULL;
        pl->fw[0] = pl->iw[0] = 0;
        if (n >= 2) {
            size_t h = n / 2;
            uint64_t x = 1, y = 1;
            for (size_t j = 0; j < h; j++) {
                pl->fw[h + j] = x;
                pl->iw[h + j] = y;
                x = secea_mulmod(&c, x, w);
                y = secea_mulmod(&c, y, pl->winv);
            }
            for (h = n / 4; h >= 1; h /= 2)
                for (size_t j = 0; j < h; j++) {
                    pl->fw[h + j] = pl->fw[2 * h + 2 * j];
                    pl->iw[h + j] = pl->iw[2 * h + 2 * j];
                }
            for (size_t j = 0; j < n / 2; j++)          /* fold n^-1 into the last level */
                pl->iw[n / 2 + j] = secea_mulmod(&c, pl->iw[n / 2 + j], pl->ninv);
        }
        if (shoup) {
            for (size_t i = 0; i < n; i++) {
                pl->fws[i] = ntt_shoup_pre(pl->fw[i], p);
                pl->iws[i] = ntt_shoup_pre(pl->iw[i], p);
            }
            pl->ninv_s = ntt_shoup_pre(pl->ninv, p);
        }
        return pl;
    }

    /* Goldilocks stages: logn - 3 levels in stages of <= 6 levels (the
     * smaller ones last, each >= 3 levels), then 8-point blocks. */
    unsigned rest = logn - 3, ns = (rest + 5) / 6;
    pl->nstages = ns;
    size_t words = 0;
    {
        unsigned left = rest;
        size_t N = n;
        for (unsigned s = 0; s < ns; s++) {
            unsigned k = (left + (ns - s) - 1) / (ns - s);   /* ceil: larger first */
            secea__ntt_stage *st = &pl->st[s];
            if (k < 3 || k > 6) { free(pl); return NULL; }   /* cannot happen */
            st->k = k;
            st->k1 = k / 2;
            st->k2 = k - k / 2;
            st->N = N;
            st->M = N >> k;
            words += 2 * N;
            N = st->M;
            left -= k;
        }
    }
    uint64_t *m = aligned_alloc(64, ntt_round64(words * 8));
    if (!m) { free(pl); return NULL; }
    pl->mem = m;
    /* w64 = w^(n/64) = 2^e64 */
    uint64_t w64 = ntt_powmod(&c, w, n / 64);
    unsigned e64 = 0;
    {
        uint64_t x = 1;
        while (x != w64 && e64 < 192) { x = ntt_gl_add(x, x); e64++; }
    }
    if (e64 >= 192) { free(m); free(pl); return NULL; }   /* cannot happen */
    pl->e64 = e64;
    pl->pow2[0] = 1;
    for (unsigned e = 1; e < 192; e++) pl->pow2[e] = ntt_gl_add(pl->pow2[e - 1], pl->pow2[e - 1]);
    for (unsigned s = 0; s < ns; s++) {
        secea__ntt_stage *st = &pl->st[s];
        size_t R = (size_t)1 << st->k, M = st->M, N = st->N;
        st->eR = (unsigned)((e64 * (64 / R)) % 192);
        st->tf = m;
        st->ti = m + N;
        st->scale_q0 = s == 0;
        {
            unsigned R1 = 1u << st->k1, R2 = 1u << st->k2;
            for (unsigned m0 = 0; m0 < R2; m0++)
                for (unsigned t = 0; t < R1; t++) {
                    unsigned e = (st->eR * m0 * ntt_bitrev(t, st->k1)) % 192;
                    st->ea_f[m0 * R1 + t] = (uint8_t)e;
                    st->ea_i[m0 * R1 + t] = (uint8_t)((192 - e) % 192);
                }
        }
        m += 2 * N;
        /* w_N = w^(n/N) */
        uint64_t wN = ntt_powmod(&c, w, n / N), wNi = ntt_powmod(&c, pl->winv, n / N);
        uint64_t sc = s == 0 ? pl->ninv : 1;
        uint64_t wj = 1, wji = 1;
        for (size_t j = 0; j < M; j++) {
            uint64_t x = 1, y = sc;
            for (unsigned q = 0; q < R; q++) {
                st->tf[secea__ntt_tw_index(st, j, q)] = x;
                st->ti[secea__ntt_tw_index(st, j, q)] = y;
                x = secea_gl_mul(x, wj);
                y = secea_gl_mul(y, wji);
            }
            wj = secea_gl_mul(wj, wN);
            wji = secea_gl_mul(wji, wNi);
        }
    }
    return pl;
}

void secea_ntt_plan_free(secea_ntt_plan *pl)
{
    if (!pl) return;
    free(pl->mem);
    free(pl);
}

/* ------------------------------------------------------------------ */
/* radix 2, scalar                                                     */

#define R2_BLOCK 4096   /* entries per L1-resident block */

static inline __attribute__((always_inline))
uint64_t r2_mul(uint64_t x, const uint64_t *t, const uint64_t *ts, size_t i, uint64_t p, int gold)
{
    return gold ? secea_gl_mul(x, t[i]) : ntt_shoup_mul(x, t[i], ts[i], p);
}

/* DIF levels h = hmax, hmax/2, .., hmin on the blocks of length 2 hmax of a[0, len) */
static inline __attribute__((always_inline))
void r2_fwd_levels(const secea_ntt_plan *pl, uint64_t *a, size_t len, size_t hmax, size_t hmin, int gold)
{
    const uint64_t p = pl->p, *t = pl->fw, *ts = pl->fws;
    for (size_t h = hmax; h >= hmin && h >= 1; h /= 2) {
        for (size_t b = 0; b < len; b += 2 * h) {
            uint64_t *x = a + b, *y = a + b + h;
            if (h == 1) {                       /* twiddle 1 */
                uint64_t u = x[0], v = y[0];
                x[0] = ntt_addmod(u, v, p);
                y[0] = ntt_sub_p(u, v, p);
                continue;
            }
            for (size_t j = 0; j < h; j++) {
                uint64_t u = x[j], v = y[j];
                x[j] = ntt_addmod(u, v, p);
                /* generic: u - v + p in [1, 2p) < 2^64 is a valid Shoup input */
                uint64_t d = gold ? ntt_sub_p(u, v, p) : u - v + p;
                y[j] = r2_mul(d, t, ts, h + j, p, gold);
            }
        }
    }
}

/* DIT levels h = hmin, 2 hmin, .., hmax on a[0, len); the level h = n/2
 * (twiddles pre-scaled by n^-1) also scales the upper input by n^-1. */
static inline __attribute__((always_inline))
void r2_inv_levels(const secea_ntt_plan *pl, uint64_t *a, size_t len, size_t hmin, size_t hmax, int gold)
{
    const uint64_t p = pl->p, *t = pl->iw, *ts = pl->iws;
    const size_t hlast = pl->n / 2;
    for (size_t h = hmin; h <= hmax; h *= 2) {
        for (size_t b = 0; b < len; b += 2 * h) {
            uint64_t *x = a + b, *y = a + b + h;
            if (h == hlast) {
                for (size_t j = 0; j < h; j++) {
                    uint64_t u = gold ? secea_gl_mul(x[j], pl->ninv) : ntt_shoup_mul(x[j], pl->ninv, pl->ninv_s, p);
                    uint64_t v = r2_mul(y[j], t, ts, h + j, p, gold);
                    x[j] = ntt_addmod(u, v, p);
                    y[j] = ntt_sub_p(u, v, p);
                }
            } else if (h == 1) {
                uint64_t u = x[0], v = y[0];
                x[0] = ntt_addmod(u, v, p);
                y[0] = ntt_sub_p(u, v, p);
            } else {
                for (size_t j = 0; j < h; j++) {
                    uint64_t u = x[j], v = r2_mul(y[j], t, ts, h + j, p, gold);
                    x[j] = ntt_addmod(u, v, p);
                    y[j] = ntt_sub_p(u, v, p);
                }
            }
        }
    }
}

#define R2_DEFINE(NAME, GOLD)                                                  \
static void r2_fwd_##NAME(const secea_ntt_plan *pl, uint64_t *a, size_t len)  \
{                                                                              \
    if (len <= R2_BLOCK) { r2_fwd_levels(pl, a, len, len / 2, 1, GOLD); return; } \
    r2_fwd_levels(pl, a, len, len / 2, len / 2, GOLD);                         \
    r2_fwd_##NAME(pl, a, len / 2);                                             \
    r2_fwd_##NAME(pl, a + len / 2, len / 2);                                   \
}                                                                              \
static void r2_inv_##NAME(const secea_ntt_plan *pl, uint64_t *a, size_t len)  \
{                                                                              \
    if (len <= R2_BLOCK) { r2_inv_levels(pl, a, len, 1, len / 2, GOLD); return; } \
    r2_inv_##NAME(pl, a, len / 2);                                             \
    r2_inv_##NAME(pl, a + len / 2, len / 2);                                   \
    r2_inv_levels(pl, a, len, len / 2, len / 2, GOLD);                         \
}
R2_DEFINE(generic, 0)
R2_DEFINE(gold, 1)

/* ------------------------------------------------------------------ */
/* Goldilocks stages, scalar (the portable variant)                    */

/* R-point DFT (R <= 8) in place, DIF: natural in, bit-reversed out;
 * wp[i] = w_R^i for i < R/2 (inlined with constant R) */
static inline __attribute__((always_inline)) void gl_dft_fwd(uint64_t *x, unsigned R, const uint64_t *wp)
{
    for (unsigned h = R / 2; h >= 1; h /= 2)
        for (unsigned b = 0; b < R; b += 2 * h)
            for (unsigned i = 0; i < h; i++) {
                uint64_t u = x[b + i], v = x[b + i + h];
                x[b + i] = ntt_gl_add(u, v);
                x[b + i + h] = i ? secea_gl_mul(ntt_gl_sub(u, v), wp[i * (R / (2 * h))]) : ntt_gl_sub(u, v);
            }
}

/* the inverse (unscaled), DIT: bit-reversed in, natural out; wp[i] = w_R^-i */
static inline __attribute__((always_inline)) void gl_dft_inv(uint64_t *x, unsigned R, const uint64_t *wp)
{
    for (unsigned h = 1; h < R; h *= 2)
        for (unsigned b = 0; b < R; b += 2 * h)
            for (unsigned i = 0; i < h; i++) {
                uint64_t u = x[b + i], v = x[b + i + h];
                if (i) v = secea_gl_mul(v, wp[i * (R / (2 * h))]);
                x[b + i] = ntt_gl_add(u, v);
                x[b + i + h] = ntt_gl_sub(u, v);
            }
}

/* the power-of-two twiddles of one stage: w_R1^i, w_R2^i and w_R^(m0 q1)
 * (index m0 R1 + s with q1 = ntt_bitrev(s)), forward or inverse */
typedef struct { uint64_t w1[4], w2[4], tA[64]; } gl_stage_pows;

static void gl_stage_pows_init(gl_stage_pows *sp, const secea_ntt_plan *pl, const secea__ntt_stage *st, int inverse)
{
    unsigned R1 = 1u << st->k1, R2 = 1u << st->k2;
    unsigned e = inverse ? (192 - st->eR) % 192 : st->eR;
    for (unsigned i = 0; i < 4; i++) {
        sp->w1[i] = pl->pow2[(e * R2 * i) % 192];
        sp->w2[i] = pl->pow2[(e * R1 * i) % 192];
    }
    for (unsigned i = 0; i < R1 * R2; i++)
        sp->tA[i] = pl->pow2[inverse ? st->ea_i[i] : st->ea_f[i]];
}

/* one stage, same sweeps as ntt_avx512.c (pass A rows m0 + R2 m1, pass B
 * rows s1 R2 + m0), one column j at a time */
static inline __attribute__((always_inline))
void gl_stage_fwd_body(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a,
                       const unsigned k1, const unsigned k2)
{
    const unsigned R1 = 1u << k1, R2 = 1u << k2;
    const size_t M = st->M;
    gl_stage_pows sp;
    gl_stage_pows_init(&sp, pl, st, 0);
    uint64_t x[8];
    if (R1 > 1)
        for (unsigned m0 = 0; m0 < R2; m0++) {
            uint64_t *io = a + (size_t)m0 * M;
            const uint64_t *t = sp.tA + m0 * R1;
            for (size_t j = 0; j < M; j++) {
                for (unsigned m1 = 0; m1 < R1; m1++) x[m1] = io[(size_t)R2 * m1 * M + j];
                gl_dft_fwd(x, R1, sp.w1);
                if (m0)
                    for (unsigned s = 1; s < R1; s++) x[s] = secea_gl_mul(x[s], t[s]);
                for (unsigned s = 0; s < R1; s++) io[(size_t)s * R2 * M + j] = x[s];
            }
        }
    for (unsigned s1 = 0; s1 < R1; s1++) {
        const unsigned q1 = ntt_bitrev(s1, k1);
        uint64_t *c = a + (size_t)s1 * R2 * M;
        const uint64_t *tw = st->tf + (size_t)q1 * M * R2;
        for (size_t jv = 0; jv < M; jv += 8, tw += 8 * R2)
            for (size_t j = jv; j < jv + 8; j++) {
                for (unsigned m0 = 0; m0 < R2; m0++) x[m0] = c[(size_t)m0 * M + j];
                gl_dft_fwd(x, R2, sp.w2);
                for (unsigned s2 = 0; s2 < R2; s2++) {
                    const unsigned q2 = ntt_bitrev(s2, k2);
                    uint64_t y = x[s2];
                    if (q1 || q2) y = secea_gl_mul(y, tw[q2 * 8 + (j - jv)]);
                    c[(size_t)s2 * M + j] = y;
                }
            }
    }
}

static inline __attribute__((always_inline))
void gl_stage_inv_body(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a,
                       const unsigned k1, const unsigned k2)
{
    const unsigned R1 = 1u << k1, R2 = 1u << k2;
    const size_t M = st->M;
    const int sc = st->scale_q0;
    gl_stage_pows sp;
    gl_stage_pows_init(&sp, pl, st, 1);
    uint64_t x[8];
    for (unsigned s1 = 0; s1 < R1; s1++) {
        const unsigned q1 = ntt_bitrev(s1, k1);
        uint64_t *c = a + (size_t)s1 * R2 * M;
        const uint64_t *tw = st->ti + (size_t)q1 * M * R2;
        for (size_t jv = 0; jv < M; jv += 8, tw += 8 * R2)
            for (size_t j = jv; j < jv + 8; j++) {
                for (unsigned s2 = 0; s2 < R2; s2++) {
                    const unsigned q2 = ntt_bitrev(s2, k2);
                    uint64_t y = c[(size_t)s2 * M + j];
                    if (q1 || q2 || sc) y = secea_gl_mul(y, tw[q2 * 8 + (j - jv)]);
                    x[s2] = y;
                }
                gl_dft_inv(x, R2, sp.w2);
                for (unsigned m0 = 0; m0 < R2; m0++) c[(size_t)m0 * M + j] = x[m0];
            }
    }
    if (R1 > 1)
        for (unsigned m0 = 0; m0 < R2; m0++) {
            uint64_t *io = a + (size_t)m0 * M;
            const uint64_t *t = sp.tA + m0 * R1;
            for (size_t j = 0; j < M; j++) {
                for (unsigned s = 0; s < R1; s++) x[s] = io[(size_t)s * R2 * M + j];
                if (m0)
                    for (unsigned s = 1; s < R1; s++) x[s] = secea_gl_mul(x[s], t[s]);
                gl_dft_inv(x, R1, sp.w1);
                for (unsigned m1 = 0; m1 < R1; m1++) io[(size_t)R2 * m1 * M + j] = x[m1];
            }
        }
}

#define GL_STAGE_INST(K1, K2)                                                                   \
static void gl_sf_##K1##K2(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a)  \
{ gl_stage_fwd_body(pl, st, a, K1, K2); }                                                      \
static void gl_si_##K1##K2(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a)  \
{ gl_stage_inv_body(pl, st, a, K1, K2); }
GL_STAGE_INST(1, 2)
GL_STAGE_INST(2, 2)
GL_STAGE_INST(2, 3)
GL_STAGE_INST(3, 3)

typedef void (*gl_stage_fn)(const secea_ntt_plan *, const secea__ntt_stage *, uint64_t *);
static const gl_stage_fn GL_SF[4] = {gl_sf_12, gl_sf_22, gl_sf_23, gl_sf_33};
static const gl_stage_fn GL_SI[4] = {gl_si_12, gl_si_22, gl_si_23, gl_si_33};

static void gl_stage_fwd_scalar(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a)
{
    GL_SF[st->k - 3](pl, st, a);
}

static void gl_stage_inv_scalar(const secea_ntt_plan *pl, const secea__ntt_stage *st, uint64_t *a)
{
    GL_SI[st->k - 3](pl, st, a);
}

/* the last three levels: 8-point DFTs of consecutive blocks */
static void gl_final_scalar(const secea_ntt_plan *pl, uint64_t *a, size_t len, int inverse)
{
    unsigned e8 = (pl->e64 * 8) % 192;
    if (inverse) e8 = (192 - e8) % 192;
    uint64_t wp[4];
    for (unsigned i = 0; i < 4; i++) wp[i] = pl->pow2[(e8 * i) % 192];
    if (inverse)
        for (size_t b = 0; b < len; b += 8) gl_dft_inv(a + b, 8, wp);
    else
        for (size_t b = 0; b < len; b += 8) gl_dft_fwd(a + b, 8, wp);
}

static void gl_fwd_rec_scalar(const secea_ntt_plan *pl, uint64_t *a, unsigned s)
{
    const secea__ntt_stage *st = &pl->st[s];
    gl_stage_fwd_scalar(pl, st, a);
    if (s + 1 < pl->nstages) {
        for (size_t r = 0; r < ((size_t)1 << st->k); r++) gl_fwd_rec_scalar(pl, a + r * st->M, s + 1);
    } else {
        gl_final_scalar(pl, a, st->N, 0);
    }
}

static void gl_inv_rec_scalar(const secea_ntt_plan *pl, uint64_t *a, unsigned s)
{
    const secea__ntt_stage *st = &pl->st[s];
    if (s + 1 < pl->nstages) {
        for (size_t r = 0; r < ((size_t)1 << st->k); r++) gl_inv_rec_scalar(pl, a + r * st->M, s + 1);
    } else {
        gl_final_scalar(pl, a, st->N, 1);
    }
    gl_stage_inv_scalar(pl, st, a);
}

static void gl_forward_portable(const secea_ntt_plan *pl, uint64_t *a) { gl_fwd_rec_scalar(pl, a, 0); }
static void gl_inverse_portable(const secea_ntt_plan *pl, uint64_t *a) { gl_inv_rec_scalar(pl, a, 0); }

static void gl_pointwise_portable(uint64_t *a, const uint64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) a[i] = secea_gl_mul(a[i], b[i]);
}

/* ------------------------------------------------------------------ */
/* variant selection and the public entry points                       */

typedef void (*gl_xform_fn)(const secea_ntt_plan *, uint64_t *);
typedef void (*gl_pw_fn)(uint64_t *, const uint64_t *, size_t);

static void r2_forward_portable(const secea_ntt_plan *pl, uint64_t *a) { r2_fwd_generic(pl, a, pl->n); }
static void r2_inverse_portable(const secea_ntt_plan *pl, uint64_t *a) { r2_inv_generic(pl, a, pl->n); }

struct secea__ntt_ops {
    gl_xform_fn fwd, inv;       /* Goldilocks stages */
    gl_xform_fn r2fwd, r2inv;   /* generic primes, logn >= 6 */
    gl_xform_fn r52fwd, r52inv; /* generic primes p < 2^51, logn >= 6 */
    gl_pw_fn pw;
    const char *name;
};

static const struct secea__ntt_ops ntt_portable = {
    gl_forward_portable, gl_inverse_portable, r2_forward_portable, r2_inverse_portable,
    r2_forward_portable, r2_inverse_portable, gl_pointwise_portable, "portable"};
#if SECEA_X86
static const struct secea__ntt_ops ntt_avx512 = {
    secea__ntt_gl_forward_avx512, secea__ntt_gl_inverse_avx512,
    secea__ntt_r2_forward_avx512, secea__ntt_r2_inverse_avx512,
    secea__ntt_r2_forward_avx512, secea__ntt_r2_inverse_avx512,
    secea__ntt_gl_pointwise_avx512, "avx512"};
static const struct secea__ntt_ops ntt_avx512ifma = {
    secea__ntt_gl_forward_avx512, secea__ntt_gl_inverse_avx512,
    secea__ntt_r2_forward_avx512, secea__ntt_r2_inverse_avx512,
    secea__ntt_r2_forward_ifma, secea__ntt_r2_inverse_ifma,
    secea__ntt_gl_pointwise_avx512, "avx512ifma"};
#endif

void secea__ntt_choose(secea__kernels *k)
{
    k->ntt = &ntt_portable;
    k->ntt_avx512 = 0;
#if SECEA_X86
    if (!k->portable && k->cpu.avx512dq) {          /* avx512dq: with F and VL */
        k->ntt = k->cpu.avx512ifma ? &ntt_avx512ifma : &ntt_avx512;
        k->ntt_avx512 = 1;
    }
#endif
}

const char *secea__ntt_variant(const secea__kernels *k) { return k->ntt->name; }

void secea_ntt_forward(const secea_ntt_plan *pl, uint64_t *a, size_t count)
{
    const size_t n = pl->n;
    if (n == 1) return;
    const struct secea__ntt_ops *ops = secea__kernels_now()->ntt;
    for (size_t c = 0; c < count; c++, a += n) {
        if (pl->gold_stages) ops->fwd(pl, a);
        else if (pl->p == GL) r2_fwd_gold(pl, a, n);
        else if (pl->logn >= 6) (pl->p < SECEA_NTT_IFMA_MAX_P ? ops->r52fwd : ops->r2fwd)(pl, a);
        else r2_fwd_generic(pl, a, n);
    }
}

void secea_ntt_inverse(const secea_ntt_plan *pl, uint64_t *a, size_t count)
{
    const size_t n = pl->n;
    if (n == 1) return;
    const struct secea__ntt_ops *ops = secea__kernels_now()->ntt;
    for (size_t c = 0; c < count; c++, a += n) {
        if (pl->gold_stages) ops->inv(pl, a);
        else if (pl->p == GL) r2_inv_gold(pl, a, n);
        else if (pl->logn >= 6) (pl->p < SECEA_NTT_IFMA_MAX_P ? ops->r52inv : ops->r2inv)(pl, a);
        else r2_inv_generic(pl, a, n);
    }
}

/* p < 2^50: double-precision quotient estimate (internal.h); the AVX-512DQ
 * copy is auto-vectorised (vcvtuqq2pd, vpmullq) */
#define PW_F64_BODY                                                             \
    {                                                                           \
        const double pinv = 1.0 / (double)p;                                    \
        for (size_t i = 0; i < n; i++) a[i] = secea_mulmod_f64(a[i], b[i], p, pinv); \
    }
static void pw_f64_portable(uint64_t *a, const uint64_t *b, size_t n, uint64_t p) PW_F64_BODY
#if SECEA_X86
SECEA_TARGET("avx512f,avx512dq,avx512vl")
static void pw_f64_avx512(uint64_t *a, const uint64_t *b, size_t n, uint64_t p) PW_F64_BODY
#endif

void secea_ntt_pointwise(const secea_ntt_plan *pl, uint64_t *a, const uint64_t *b, size_t n)
{
    const uint64_t p = pl->p;
    const secea__kernels *k = secea__kernels_now();
    if (p == GL) { k->ntt->pw(a, b, n); return; }
    if (p < SECEA_F64_MAX_P) {
#if SECEA_X86
        if (k->ntt_avx512) { pw_f64_avx512(a, b, n, p); return; }
#endif
        pw_f64_portable(a, b, n, p);
        return;
    }
#if SECEA_X86
    if (k->ntt_avx512 && (p & 1) && p < (1ULL << 63)) {
        uint64_t pinv = p;                           /* Newton: p^-1 mod 2^64 */
        for (int i = 0; i < 6; i++) pinv *= 2 - p * pinv;
        uint64_t r1 = (uint64_t)(((secea_u128)1 << 64) % p);
        secea__ntt_pointwise_mont_avx512(a, b, n, p, pinv, r1, ntt_shoup_pre(r1, p));
        return;
    }
#endif
    secea_modctx c;
    secea_modctx_init(&c, p);
    for (size_t i = 0; i < n; i++) a[i] = secea_mulmod(&c, a[i], b[i]);
}

/* ------------------------------------------------------------------ */
/* three-prime Chinese remaindering                                    */

void secea_ntt_crt_primes(uint64_t out3[3])
{
    out3[0] = GL;
    out3[1] = SECEA_NTT_Q1;
    out3[2] = SECEA_NTT_Q2;
}

void secea_ntt_crt3(uint64_t *out, const uint64_t *r0, const uint64_t *r1, const uint64_t *r2, size_t n, uint64_t p)
{
    const uint64_t q0 = GL, q1 = SECEA_NTT_Q1, q2 = SECEA_NTT_Q2;
    secea_modctx c1, c2, cp;
    secea_modctx_init(&c1, q1);
    secea_modctx_init(&c2, q2);
    secea_modctx_init(&cp, p);
    /* constants (cheap to recompute per call; Fermat inverses) */
    const uint64_t q0m1 = secea_mod64(&c1, q0);                     /* q0 mod q1 */
    const uint64_t i01 = ntt_powmod(&c1, q0m1, q1 - 2);             /* q0^-1 mod q1 */
    const uint64_t q0m2 = secea_mod64(&c2, q0);                     /* q0 mod q2 */
    const uint64_t q01m2 = secea_mulmod(&c2, q0m2, secea_mod64(&c2, q1));
    const uint64_t i012 = ntt_powmod(&c2, q01m2, q2 - 2);           /* (q0 q1)^-1 mod q2 */
    const uint64_t i01s = ntt_shoup_pre(i01, q1), q0m2s = ntt_shoup_pre(q0m2, q2), i012s = ntt_shoup_pre(i012, q2);
    const uint64_t c1p = secea_mod64(&cp, q0);                      /* q0 mod p */
    const uint64_t c2p = secea_mulmod(&cp, c1p, secea_mod64(&cp, q1)); /* q0 q1 mod p */
    for (size_t i = 0; i < n; i++) {
        uint64_t x0 = r0[i];
        /* x0 mod q1, x0 mod q2: q0 < 3 q, at most two subtractions */
        uint64_t a1 = x0 >= q1 ? x0 - q1 : x0;
        a1 = a1 >= q1 ? a1 - q1 : a1;
        uint64_t a2 = x0 >= q2 ? x0 - q2 : x0;
        a2 = a2 >= q2 ? a2 - q2 : a2;
        uint64_t x1 = ntt_shoup_mul(r1[i] - a1 + q1, i01, i01s, q1);       /* (r1 - x0) / q0 */
        uint64_t s = ntt_shoup_mul(x1, q0m2, q0m2s, q2);                   /* x1 q0 mod q2 */
        uint64_t d = r2[i] - a2 + q2;                                  /* < 2 q2 */
        d = d >= s ? d - s : d - s + q2;                               /* r2 - x0 - x1 q0 */
        uint64_t x2 = ntt_shoup_mul(d, i012, i012s, q2);
        secea_u128 acc = (secea_u128)x1 * c1p + (secea_u128)x2 * c2p + x0;   /* < p 2^64 */
        out[i] = secea_mod128(&cp, acc);
    }
}
