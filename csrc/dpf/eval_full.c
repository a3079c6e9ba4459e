/* Full-domain DPF evaluation: every output x < m of each key (values), or
 * the packed leaf states of a path (path_eval_full, kept for a later
 * convert_accumulate).  Work units are (key, leaf range); each walks the
 * top of the tree once (pruned to its range), then its 2^SUB_LOG-leaf
 * subtrees level by level (tree.c) and converts the leaves of each. */
#include "dpf_tree.h"

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
    const uint8_t *keys;
    size_t key_bytes;
    const uint8_t *party;
    unsigned levels;
    uint64_t nleaves;       /* leaves needed */
    uint64_t nout;          /* output elements per key */
    size_t parts;
    uint64_t *out;          /* values, or NULL */
    uint8_t *states;        /* leaf states (path_eval_full), or NULL */
    size_t topcap;
} full_ctx;

typedef struct {
    blk *topA, *topB, *subA, *subB, *conv;
    uint64_t *cw;
    tree_t tree;
} full_scratch;

static size_t full_scratch_bytes(size_t topcap, size_t nb, size_t ncw, full_scratch *lay)
{
    size_t off = (sizeof(full_scratch) + 63) & ~(size_t)63;
    size_t o_topA = off; off += 16 * topcap;
    size_t o_topB = off; off += 16 * topcap;
    size_t o_subA = off; off += 16 * sub_cap();
    size_t o_subB = off; off += 16 * sub_cap();
    size_t o_conv = off; off += 16 * (size_t)CONV_CH * nb;
    size_t o_cw = off; off += 8 * ncw + 64;
    if (lay) {
        lay->topA = (blk *)o_topA;
        lay->topB = (blk *)o_topB;
        lay->subA = (blk *)o_subA;
        lay->subB = (blk *)o_subB;
        lay->conv = (blk *)o_conv;
        lay->cw = (uint64_t *)o_cw;
    }
    return off;
}

static full_scratch *scratch_bind(void *scratch, size_t topcap, size_t nb, size_t ncw)
{
    full_scratch lay, *s = scratch;
    full_scratch_bytes(topcap, nb, ncw, &lay);
    uint8_t *base = scratch;
    s->topA = (blk *)(base + (size_t)lay.topA);
    s->topB = (blk *)(base + (size_t)lay.topB);
    s->subA = (blk *)(base + (size_t)lay.subA);
    s->subB = (blk *)(base + (size_t)lay.subB);
    s->conv = (blk *)(base + (size_t)lay.conv);
    s->cw = (uint64_t *)(base + (size_t)lay.cw);
    return s;
}

static int full_unit(void *vctx, size_t unit, void *scratch)
{
    full_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    const grp_t *g = &c->g;
    size_t key = unit / c->parts, r = unit % c->parts;
    unsigned L = c->levels;
    full_scratch *s = scratch_bind(scratch, c->topcap, g->nb, g->ncw);
    uint64_t lo, hi;
    secea__dpf_part_range(c->nleaves, L < SUB_LOG ? L : SUB_LOG, c->parts, r, &lo, &hi);
    if (lo >= hi) return 0;
    const uint8_t *kb = c->keys + key * c->key_bytes;
    secea__dpf_tree_load(&s->tree, kb, L);
    int party = c->party ? c->party[key] & 1 : 0;
    if (c->out) secea__dpf_load_fcw(g, kb + path_bytes(L), s->cw);
    walk_t w;
    secea__dpf_walk_begin(&w, im, &s->tree, lo, hi, s->topA, s->topB);
    for (uint64_t q = w.qlo; q <= w.qhi; q++) {
        uint64_t slo, shi;
        const blk *leaves = secea__dpf_walk_sub(&w, im, &s->tree, q, lo, hi, &slo, &shi, s->subA, s->subB);
        size_t cnt = (size_t)(shi - slo);
        if (c->states) {
            memcpy(c->states + 16 * (key * c->nleaves + slo), leaves, 16 * cnt);
        } else {
            uint64_t first = slo * g->ncw;
            uint64_t avail = c->nout - first;
            size_t nout = avail < (uint64_t)cnt * g->ncw ? (size_t)avail : cnt * g->ncw;
            secea__dpf_leaf_values(im, g, leaves, cnt, s->cw, party, s->conv, c->out + key * c->nout + first, nout);
        }
    }
    return 0;
}

static int full_run(full_ctx *c, size_t count, int threads)
{
    unsigned L = c->levels;
    unsigned b = L < SUB_LOG ? L : SUB_LOG;
    c->parts = secea__dpf_choose_parts(count, threads, c->nleaves);
    uint64_t chunks = (c->nleaves + ((uint64_t)1 << b) - 1) >> b;
    c->topcap = walk_top_cap(chunks / c->parts + 2);
    size_t bytes = full_scratch_bytes(c->topcap, c->g.nb, c->g.ncw, NULL);
    return secea__pool_run(full_unit, c, count * c->parts, bytes, threads);
}

int secea_dpf_eval_full(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                        size_t count, uint64_t m, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE | SHAPE_CW | SHAPE_CONV)) return SECEA_EINVAL;
    if (count == 0 || m == 0) return 0;
    unsigned e = shape->early;
    full_ctx c;
    memset(&c, 0, sizeof c);
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, shape->group, shape->modulus, shape->ncw);
    c.keys = keys;
    c.key_bytes = shape->stride;
    c.party = party;
    c.levels = shape->levels;
    c.nleaves = (m + ((uint64_t)1 << e) - 1) >> e;
    c.nout = e ? m : m * shape->ncw;
    c.out = out;
    return full_run(&c, count, threads);
}

int secea_dpf_path_eval_full(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, size_t count,
                             uint64_t m, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE)) return SECEA_EINVAL;
    if (count == 0 || m == 0) return 0;
    full_ctx c;
    memset(&c, 0, sizeof c);
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, 0, 0, 0);
    c.keys = paths;
    c.key_bytes = shape->stride;
    c.levels = shape->levels;
    c.nleaves = m;
    c.states = states;
    return full_run(&c, count, threads);
}
