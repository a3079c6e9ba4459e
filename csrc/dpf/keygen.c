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

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
    uint8_t *keys0, *keys1, *finals;
    const uint64_t *alphas, *betas;
    const uint8_t *rand;
    size_t count, key_bytes;
    unsigned levels;
} gen_ctx;

/* cw = (-1)^{t_1} (beta - Convert_D(s_0) + Convert_D(s_1)) for one key;
 * conv: 2 * nb blocks of scratch. */
static void cw_from_finals(const secea__dpf_impl *im, const grp_t *g, blk x0, blk x1,
                           const uint64_t *beta, uint64_t *cw, blk *conv, uint64_t domain)
{
    x0.hi ^= domain;
    x1.hi ^= domain;
    blk x[2] = {x0, x1};
    size_t nb = g->nb;
    secea__dpf_conv_inputs(conv, x, 2, nb);
    im->hash(conv, conv, 2 * nb, DPF_KV, 0);
    uint64_t t1 = 0 - (x1.lo & 1);
    for (size_t k = 0; k < g->ncw; k++) {
        uint64_t v = g_add(g, beta[k], g_neg(g, g_elem(g, conv, k)));
        v = g_add(g, v, g_elem(g, conv + nb, k));
        cw[k] = g_cneg(g, v, t1);
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
        for (size_t k = 0; k < K; k++) {
            uint64_t a = (c->alphas[k0 + k] >> (L - 1 - dep)) & 1;
            uint64_t am = 0 - a;
            blk L0 = H[4 * k], R0 = H[4 * k + 1], L1 = H[4 * k + 2], R1 = H[4 * k + 3];
            blk lose = blk_xor(blk_sel(am, L0, R0), blk_sel(am, L1, R1));
            blk scw = lose;
            scw.lo &= ~(uint64_t)1;
            uint64_t tlc = (L0.lo ^ L1.lo ^ a ^ 1) & 1;
            uint64_t trc = (R0.lo ^ R1.lo ^ a) & 1;
            blk ckeep = scw;
            ckeep.lo |= (trc & am) | (tlc & ~am);
            blk keep0 = blk_sel(am, R0, L0), keep1 = blk_sel(am, R1, L1);
            X[2 * k] = blk_xor(keep0, blk_and(ckeep, 0 - (X[2 * k].lo & 1)));
            X[2 * k + 1] = blk_xor(keep1, blk_and(ckeep, 0 - (X[2 * k + 1].lo & 1)));
            st_blk(c->keys0 + (k0 + k) * c->key_bytes + 16 + 16 * (size_t)dep, scw);
            st_blk(c->keys1 + (k0 + k) * c->key_bytes + 16 + 16 * (size_t)dep, scw);
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
            cw_from_finals(im, &c->g, X[2 * k], X[2 * k + 1], c->betas + (k0 + k) * c->g.ncw, cw, conv, 0);
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
    grp_t g;
    secea__dpf_grp_init(&g, shape->group, shape->modulus, ncw);
    blk *conv = aligned_alloc(64, (32 * g.nb + 63) & ~(size_t)63);
    if (!conv) return SECEA_ENOMEM;
    for (size_t i = 0; i < count; i++)
        cw_from_finals(im, &g, ld_blk(finals + 32 * i), ld_blk(finals + 32 * i + 16), betas + i * ncw,
                       cw + i * ncw, conv, domain);
    memset(conv, 0, 32 * g.nb);
    free(conv);
    return 0;
}
