/* DPF evaluation at given points: Eval(key, x) for a batch of keys and
 * points (point i on key i / per_key), PathEval (SecEmb Algorithm 6: the
 * leaf states alone) and ConvertEval (Algorithm 4: states to group
 * elements).  PT_CH points walk their paths level by level together, one
 * hash_sel call per level; the evaluation points are public and steer the
 * left/right choice, the control bits t only masks. */
#include <stdlib.h>
#include "dpf_tree.h"

#define PT_CH 256

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
    uint64_t *out;          /* values (eval) or NULL */
    uint8_t *states;        /* states (path eval) or NULL */
    const uint8_t *keys;
    size_t key_bytes, per_key;
    const uint8_t *party;
    const uint64_t *xs;
    size_t npoints;
    unsigned levels, e;
} pt_ctx;

static int pt_unit(void *vctx, size_t unit, void *scratch)
{
    pt_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    unsigned L = c->levels;
    size_t i0 = unit * PT_CH, n = c->npoints - i0 < PT_CH ? c->npoints - i0 : PT_CH;
    blk st[PT_CH], h[PT_CH];
    uint8_t sel[PT_CH];
    for (size_t i = 0; i < n; i++) st[i] = ld_blk(c->keys + ((i0 + i) / c->per_key) * c->key_bytes);
    for (unsigned dep = 0; dep < L; dep++) {
        for (size_t i = 0; i < n; i++) sel[i] = (uint8_t)(((c->xs[i0 + i] >> c->e) >> (L - 1 - dep)) & 1);
        im->hash_sel(h, st, sel, n);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *kb = c->keys + ((i0 + i) / c->per_key) * c->key_bytes;
            blk cw = ld_blk(kb + 16 + 16 * (size_t)dep);
            uint64_t tb = ld64(kb + (sel[i] ? 24 : 16) + 16 * (size_t)L);
            cw.lo = (cw.lo & ~(uint64_t)1) | ((tb >> dep) & 1);
            st[i] = blk_xor(h[i], blk_and(cw, 0 - (st[i].lo & 1)));
        }
    }
    if (c->states) {
        memcpy(c->states + 16 * i0, st, 16 * n);
        return 0;
    }
    const grp_t *g = &c->g;
    size_t nb = g->nb, ncw = g->ncw;
    blk *conv = scratch;                     /* PT_CH * nb blocks */
    uint64_t *cw = (uint64_t *)(conv + PT_CH * nb);   /* ncw */
    secea__dpf_conv_inputs(conv, st, n, nb);
    im->hash(conv, conv, n * nb, DPF_KV, 0);
    size_t last_key = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t key = (i0 + i) / c->per_key;
        if (key != last_key) {
            secea__dpf_load_fcw(g, c->keys + key * c->key_bytes + path_bytes(L), cw);
            last_key = key;
        }
        int party = c->party[key] & 1;
        uint64_t tm = 0 - (st[i].lo & 1);
        if (c->e) {
            size_t k = (size_t)(c->xs[i0 + i] & (((uint64_t)1 << c->e) - 1));
            uint64_t v = g_add(g, g_elem(g, conv + i * nb, k), cw[k] & tm);
            c->out[i0 + i] = party ? g_neg(g, v) : v;
        } else {
            for (size_t k = 0; k < ncw; k++) {
                uint64_t v = g_add(g, g_elem(g, conv + i * nb, k), cw[k] & tm);
                c->out[(i0 + i) * ncw + k] = party ? g_neg(g, v) : v;
            }
        }
    }
    return 0;
}

int secea_dpf_eval_points(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                          const uint64_t *xs, size_t npoints, size_t per_key, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE | SHAPE_CW | SHAPE_CONV)) return SECEA_EINVAL;
    pt_ctx c;
    memset(&c, 0, sizeof c);
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, shape->group, shape->modulus, shape->ncw);
    c.out = out;
    c.keys = keys;
    c.key_bytes = shape->stride;
    c.per_key = per_key ? per_key : 1;
    c.party = party;
    c.xs = xs;
    c.npoints = npoints;
    c.levels = shape->levels;
    c.e = shape->early;
    size_t scratch = 16 * PT_CH * c.g.nb + 8 * shape->ncw + 64;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, scratch, threads);
}

int secea_dpf_path_eval(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs,
                        size_t npoints, size_t per_key, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE)) return SECEA_EINVAL;
    pt_ctx c;
    memset(&c, 0, sizeof c);
    c.im = secea__dpf_impl_cur();
    c.states = states;
    c.keys = paths;
    c.key_bytes = shape->stride;
    c.per_key = per_key ? per_key : 1;
    c.xs = xs;
    c.npoints = npoints;
    c.levels = shape->levels;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, 0, threads);
}

int secea_dpf_convert_eval(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *states, size_t n, int party,
                           const uint64_t *cw, uint64_t domain)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_CONV)) return SECEA_EINVAL;
    const secea__dpf_impl *im = secea__dpf_impl_cur();
    size_t ncw = shape->ncw;
    grp_t g;
    secea__dpf_grp_init(&g, shape->group, shape->modulus, ncw);
    blk *conv = aligned_alloc(64, ((size_t)CONV_CH * g.nb * 16 + 63) & ~(size_t)63);
    blk leaves[CONV_CH];
    if (!conv) return SECEA_ENOMEM;
    for (size_t i0 = 0; i0 < n; i0 += CONV_CH) {
        size_t c = n - i0 < CONV_CH ? n - i0 : CONV_CH;
        memcpy(leaves, states + 16 * i0, 16 * c);
        for (size_t i = 0; i < c; i++) leaves[i].hi ^= domain;
        secea__dpf_leaf_values(im, &g, leaves, c, cw, party & 1, conv, out + i0 * ncw, c * ncw);
    }
    free(conv);
    return 0;
}
