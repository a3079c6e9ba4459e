/* DPF key generation (Boyle, Gilboa, Ishai, "Function Secret Sharing:
 * Improvements and Extensions", CCS 2016, Fig. 1), split as in SecEmb
 * (Appendix F, Algorithms 5 and 7): PathGen walks the two parties' trees
 * towards alpha and writes the per-level correction words, ConvertGen turns
 * the two final seeds into the final correction word CW^{n+1} in a
 * conversion domain.  GEN_CH keys advance level by level together, so one
 * expand call per level carries 4 GEN_CH AES blocks.
 *
 * Constant time: selections by masks derived from alpha, never branches on
 * alpha, beta or seeds; the secret working state is wiped. */
#include <stdlib.h>
#include "dpf_tree.h"

#define GEN_CH 32  /* keys per batch */

typedef uint64_t v2 __attribute__((vector_size(16)));     /* one block: lo, hi */

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
    uint8_t *keys0, *keys1, *finals;
    const uint64_t *alphas, *betas;
    const uint8_t *rand;
    size_t count, key_bytes;
    unsigned levels;
} gen_ctx;

/* cw = (-1)^{t_1} (beta - c0 + c1) for one key, c0 and c1 its two Convert
 * streams (nb blocks each), t1 = 0 - t_1: one loop per group, so that the
 * rings' loops are plain word arithmetic the compiler vectorises (the
 * negation is (v xor t1) - t1, no branch). */
static void cw_row(const grp_t *g, const blk *c0, const blk *c1, uint64_t t1, const uint64_t *beta, uint64_t *cw)
{
    size_t n = g->ncw;
    if (g->group == 0) {
        const uint64_t *a = (const uint64_t *)c0, *b = (const uint64_t *)c1;
        for (size_t k = 0; k < n; k++) cw[k] = ((beta[k] - a[k] + b[k]) ^ t1) - t1;
    } else if (g->group == 1) {
        const uint32_t *a = (const uint32_t *)c0, *b = (const uint32_t *)c1;
        uint32_t t = (uint32_t)t1;
        for (size_t k = 0; k < n; k++) cw[k] = (uint32_t)((((uint32_t)beta[k] - a[k] + b[k]) ^ t) - t);
    } else {
        for (size_t k = 0; k < n; k++) {
            uint64_t v = g_add(g, beta[k], g_neg(g, g_elem(g, c0, k)));
            v = g_add(g, v, g_elem(g, c1, k));
            cw[k] = g_cneg(g, v, t1);
        }
    }
}

/* cw rows of count keys from their finals (x0, x1 per key) in conversion
 * domain D: the Convert streams of CONVG_CH keys computed in one call, then
 * cw_row per key.  Over the rings with `zero` (ncw zero elements), the
 * variant's accumulating conversion writes the streams' words straight into
 * conv (zeroed first: acc += word + t * 0), without the Convert inputs in
 * memory; otherwise (F_p, or zero == NULL) the inputs are hashed in place.
 * conv: 2 CONVG_CH nb blocks of scratch. */
#define CONVG_CH 8
static void cw_from_finals(const secea__dpf_impl *im, const grp_t *g, const blk *finals, size_t count,
                           const uint64_t *betas, uint64_t *cw, size_t cw_stride, blk *conv, uint64_t domain,
                           const void *zero)
{
    size_t nb = g->nb, ncw = g->ncw;
    int words = zero && g->group < 2;
    size_t per = words ? ncw * g->w : 16 * nb;          /* bytes of one stream in conv */
    for (size_t i0 = 0; i0 < count; i0 += CONVG_CH) {
        size_t c = count - i0 < CONVG_CH ? count - i0 : CONVG_CH;
        blk x[2 * CONVG_CH];
        for (size_t i = 0; i < 2 * c; i++) {
            x[i] = finals[2 * i0 + i];
            x[i].hi ^= domain;
        }
        if (words) {
            memset(conv, 0, 2 * c * per);
            im->conv_acc(conv, x, 2 * c, zero, ncw, (unsigned)g->w);
        } else {
            secea__dpf_conv_inputs(conv, x, 2 * c, nb);
            im->hash(conv, conv, 2 * c * nb, DPF_KV, 0);
        }
        for (size_t i = 0; i < c; i++)
            cw_row(g, (const blk *)((const uint8_t *)conv + 2 * i * per),
                   (const blk *)((const uint8_t *)conv + (2 * i + 1) * per), 0 - (x[2 * i + 1].lo & 1),
                   betas + (i0 + i) * ncw, cw + (i0 + i) * cw_stride);
        secea_wipe(x, sizeof x);
    }
}

static int gen_unit(void *vctx, size_t unit, void *scratch)
{
    gen_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    size_t k0 = unit * GEN_CH, K = c->count - k0 < GEN_CH ? c->count - k0 : GEN_CH;
    unsigned L = c->levels;
    blk X[2 * GEN_CH], H[4 * GEN_CH];
    uint64_t tl[GEN_CH] = {0}, tr[GEN_CH] = {0};
    const blk zero[2] = {{0, 0}, {0, 0}};
    for (size_t k = 0; k < K; k++) {
        const uint8_t *r = c->rand + 32 * (k0 + k);
        blk x0 = ld_blk(r), x1 = ld_blk(r + 16);
        x1.lo = (x1.lo & ~(uint64_t)1) | ((x0.lo & 1) ^ 1);   /* t_1 = 1 - t_0 */
        X[2 * k] = x0;
        X[2 * k + 1] = x1;
        st_blk(c->keys0 + (k0 + k) * c->key_bytes, x0);
        st_blk(c->keys1 + (k0 + k) * c->key_bytes, x1);
    }
    for (unsigned dep = 0; dep < L; dep++) {
        /* H = L_0, R_0, L_1, R_1 per key (X's t bits meet a zero correction) */
        im->expand(H, X, 2 * K, zero);
        const unsigned sh = L - 1 - dep;
        const size_t off = 16 + 16 * (size_t)dep;
        for (size_t k = 0; k < K; k++) {
            /* 128-bit lanes (vector extensions: SSE2 / NEON), selections by
             * the mask of alpha's bit, never a branch */
            const v2 *h = (const v2 *)(H + 4 * k);
            v2 L0 = h[0], R0 = h[1], L1 = h[2], R1 = h[3];
            uint64_t a = (c->alphas[k0 + k] >> sh) & 1;
            v2 am = (v2){0 - a, 0 - a};
            v2 keep0 = (R0 & am) | (L0 & ~am), keep1 = (R1 & am) | (L1 & ~am);
            v2 scw = (keep0 ^ keep1 ^ L0 ^ L1 ^ R0 ^ R1) & (v2){~(uint64_t)1, ~(uint64_t)0};   /* the losing side */
            uint64_t tlc = (L0[0] ^ L1[0] ^ a ^ 1) & 1;
            uint64_t trc = (R0[0] ^ R1[0] ^ a) & 1;
            v2 ckeep = scw | (v2){((keep0[0] ^ keep1[0]) & 1) ^ 1, 0};          /* t_CW of the kept side */
            v2 *x = (v2 *)(X + 2 * k);
            v2 x0 = x[0], x1 = x[1];
            x[0] = keep0 ^ (ckeep & (v2){0 - (x0[0] & 1), 0 - (x0[0] & 1)});
            x[1] = keep1 ^ (ckeep & (v2){0 - (x1[0] & 1), 0 - (x1[0] & 1)});
            memcpy(c->keys0 + (k0 + k) * c->key_bytes + off, &scw, 16);
            memcpy(c->keys1 + (k0 + k) * c->key_bytes + off, &scw, 16);
            tl[k] |= tlc << dep;
            tr[k] |= trc << dep;
        }
    }
    uint64_t *cw = scratch;
    blk *conv = (blk *)((uint8_t *)scratch + ((8 * c->g.ncw + 63) & ~(size_t)63));
    for (size_t k = 0; k < K; k++) {
        for (int b = 0; b < 2; b++) {
            uint8_t *kb = (b ? c->keys1 : c->keys0) + (k0 + k) * c->key_bytes + 16 + 16 * (size_t)L;
            st64(kb, tl[k]);
            st64(kb + 8, tr[k]);
        }
        if (c->finals) {
            st_blk(c->finals + 32 * (k0 + k), X[2 * k]);
            st_blk(c->finals + 32 * (k0 + k) + 16, X[2 * k + 1]);
        }
        if (c->g.ncw) {
            cw_from_finals(im, &c->g, X + 2 * k, 1, c->betas + (k0 + k) * c->g.ncw, cw, 0, conv, 0, NULL);
            secea__dpf_store_fcw(&c->g, c->keys0 + (k0 + k) * c->key_bytes + path_bytes(L), cw);
            secea__dpf_store_fcw(&c->g, c->keys1 + (k0 + k) * c->key_bytes + path_bytes(L), cw);
        }
    }
    /* wipe the secret working state */
    secea_wipe(X, sizeof X);
    secea_wipe(H, sizeof H);
    return 0;
}

int secea_dpf_gen(const secea_dpf_shape *shape, uint8_t *keys0, uint8_t *keys1, uint8_t *finals,
                  const uint64_t *alphas, const uint64_t *betas, const uint8_t *rand, size_t count, int threads)
{
    /* ncw = 0 writes path bodies: no final correction word, any group */
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE | (shape && shape->ncw ? SHAPE_CW : 0))) return SECEA_EINVAL;
    gen_ctx c;
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, shape->group, shape->modulus, shape->ncw);
    c.keys0 = keys0;
    c.keys1 = keys1;
    c.finals = finals;
    c.alphas = alphas;
    c.betas = betas;
    c.rand = rand;
    c.count = count;
    c.levels = shape->levels;
    c.key_bytes = shape->stride;
    size_t units = (count + GEN_CH - 1) / GEN_CH;
    size_t scratch = ((8 * shape->ncw + 63) & ~(size_t)63) + 32 * c.g.nb + 64;
    return secea__pool_run(gen_unit, &c, units, scratch, threads);
}

int secea_dpf_gen_one(const secea_dpf_shape *shape, uint8_t *key0, uint8_t *key1, uint64_t alpha, uint64_t beta,
                      const uint8_t *rand)
{
    /* a scalar payload: ncw = 1, or 2^e with beta at alpha mod 2^e */
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE | SHAPE_CW)) return SECEA_EINVAL;
    size_t ncw = shape->ncw;
    if (shape->early ? ncw != (size_t)1 << shape->early : ncw != 1) return SECEA_EINVAL;
    uint64_t betas[DPF_MAX_EARLY_NCW] = {0};
    uint64_t a = alpha >> shape->early;
    betas[alpha & (ncw - 1)] = beta;
    gen_ctx c;
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, shape->group, shape->modulus, ncw);
    c.keys0 = key0;
    c.keys1 = key1;
    c.finals = NULL;
    c.alphas = &a;
    c.betas = betas;
    c.rand = rand;
    c.count = 1;
    c.levels = shape->levels;
    c.key_bytes = shape->stride;
    /* gen_unit's scratch: ncw words, then 2 nb Convert blocks (nb <= 16 here) */
    _Alignas(64) uint8_t scratch[((8 * DPF_MAX_EARLY_NCW + 63) & ~63) + 32 * 16 + 64];
    gen_unit(&c, 0, scratch);
    secea_wipe(betas, sizeof betas);
    secea_wipe(&a, sizeof a);
    secea_wipe(scratch, sizeof scratch);
    return 0;
}

int secea_dpf_convert_gen(const secea_dpf_shape *shape, uint64_t *cw, const uint8_t *finals,
                          const uint64_t *betas, size_t count, uint64_t domain)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_CONV)) return SECEA_EINVAL;
    const secea__dpf_impl *im = secea__dpf_impl_cur();
    size_t ncw = shape->ncw;
    if (!ncw || !count) return 0;
    grp_t g;
    secea__dpf_grp_init(&g, shape->group, shape->modulus, ncw);
    size_t cbytes = (32 * CONVG_CH * g.nb + 63) & ~(size_t)63, zbytes = (8 * ncw + 63) & ~(size_t)63;
    blk *conv = aligned_alloc(64, cbytes + 32 * CONVG_CH + zbytes);
    if (!conv) return SECEA_ENOMEM;
    blk *fin = (blk *)((uint8_t *)conv + cbytes);      /* the finals, aligned */
    void *zero = (uint8_t *)fin + 32 * CONVG_CH;
    memset(zero, 0, zbytes);
    for (size_t i0 = 0; i0 < count; i0 += CONVG_CH) {
        size_t c = count - i0 < CONVG_CH ? count - i0 : CONVG_CH;
        memcpy(fin, finals + 32 * i0, 32 * c);
        cw_from_finals(im, &g, fin, c, betas + i0 * ncw, cw + i0 * ncw, ncw, conv, domain, zero);
    }
    secea_wipe(conv, cbytes + 32 * CONVG_CH);
    free(conv);
    return 0;
}
