/* SecEmb's aggregation on the servers: convert-accumulate of leaf states
 * kept from path_eval_full, and the fused form that walks each path key's
 * tree to a range of leaves and converts them into the accumulator at once
 * (nothing stored).  Over Z_2^64 and, fused, Z_2^32; the conversion domain
 * is XORed into the leaves' high words before the variant's conversion
 * slot (conv_u64_vec / conv_acc) runs.  Control bits only mask. */
#include "dpf_tree.h"

#define ACC_CH 128

typedef struct {
    const secea__dpf_impl *im;
    uint64_t *acc;
    const uint8_t *states, *party;
    const uint64_t *cws;
    size_t count, d;
    uint64_t m, domain;
} acc_ctx;

static int acc_unit(void *vctx, size_t unit, void *scratch)
{
    acc_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    size_t d = c->d;
    uint64_t j0 = (uint64_t)unit * ACC_CH;
    size_t n = c->m - j0 < ACC_CH ? (size_t)(c->m - j0) : ACC_CH;
    blk st[ACC_CH];
    (void)scratch;
    uint64_t *acc = c->acc + j0 * d;
    for (size_t key = 0; key < c->count; key++) {
        memcpy(st, c->states + 16 * (key * c->m + j0), 16 * n);
        for (size_t i = 0; i < n; i++) st[i].hi ^= c->domain;
        const uint64_t *cw = c->cws + key * d;
        im->conv_u64_vec(acc, st, n, cw, d, c->party[key] & 1, 1);
    }
    return 0;
}

int secea_dpf_convert_accumulate(const secea_dpf_shape *shape, uint64_t *acc, const uint8_t *states,
                                 const uint8_t *party, const uint64_t *cws, size_t count, uint64_t m,
                                 uint64_t domain, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_CONV) || shape->group != SECEA_DPF_GROUP_U64) return SECEA_EINVAL;
    size_t d = shape->ncw;
    if (count == 0 || m == 0 || d == 0) return 0;
    acc_ctx c;
    c.im = secea__dpf_impl_cur();
    c.acc = acc;
    c.states = states;
    c.party = party;
    c.cws = cws;
    c.count = count;
    c.d = d;
    c.m = m;
    c.domain = domain;
    size_t units = (size_t)((m + ACC_CH - 1) / ACC_CH);
    return secea__pool_run(acc_unit, &c, units, 0, threads);
}

/* ------------------------------------ fused path walk + convert-accumulate */

#define PCA_LEAVES 512   /* leaves per work unit: 512 d w bytes of accumulator stay in L2, and the
                            walk from the root is paid once per key and 512 leaves */

typedef struct {
    const secea__dpf_impl *im;
    uint8_t *acc;
    const uint8_t *paths;
    const uint64_t *cws;
    size_t path_stride, count, d;
    unsigned levels, w;
    int party;
    int multi;            /* MULTI_KEYS keys' top levels interleaved (secea__dpf_descend_multi) */
    uint64_t m, domain;
} pca_ctx;

static void negate_rows(uint8_t *acc, size_t nelem, unsigned w)
{
    if (w == 8)
        for (size_t k = 0; k < nelem; k++) ((uint64_t *)acc)[k] = 0 - ((uint64_t *)acc)[k];
    else
        for (size_t k = 0; k < nelem; k++) ((uint32_t *)acc)[k] = 0 - ((uint32_t *)acc)[k];
}

static int pca_unit(void *vctx, size_t unit, void *scratch)
{
    pca_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    uint64_t lo = (uint64_t)unit * PCA_LEAVES, hi = lo + PCA_LEAVES < c->m ? lo + PCA_LEAVES : c->m;
    size_t n = (size_t)(hi - lo), d = c->d, w = c->w;
    uint8_t *p = scratch;
    tree_t *trees = (tree_t *)p;                   p += (MULTI_KEYS * sizeof(tree_t) + 63) & ~(size_t)63;
    blk *bufA = (blk *)p;                          p += 16 * (PCA_LEAVES + 4);
    blk *bufB = (blk *)p;                          p += 16 * (PCA_LEAVES + 4);
    blk *mout = (blk *)p;                          p += 16 * (size_t)MULTI_OUT * MULTI_KEYS;
    blk *mtmp = (blk *)p;                          p += 16 * (size_t)MULTI_TMP;
    uint8_t *cw = p;
    uint8_t *acc = c->acc + lo * d * w;
    size_t kg = c->multi ? MULTI_KEYS : 1;         /* keys whose top levels descend together */
    uint64_t am = 0;
    size_t nm = 0;
    unsigned dm = 0;
    /* acc += (-1)^party S  ==  acc = -(-acc + S) for party 1 */
    if (c->party) negate_rows(acc, n * d, (unsigned)w);
    for (size_t key = 0; key < c->count; key++) {
        size_t kk = key % kg;
        blk *leaves;
        if (c->multi) {
            if (kk == 0) {
                size_t nk = c->count - key < kg ? c->count - key : kg;
                blk start[MULTI_KEYS];
                for (size_t k = 0; k < nk; k++) {
                    secea__dpf_tree_load(&trees[k], c->paths + (key + k) * c->path_stride, c->levels);
                    start[k] = trees[k].root;
                }
                dm = secea__dpf_descend_multi(im, trees, nk, start, 0, 0, c->levels, lo, hi, mout, &am, &nm, mtmp);
            }
            leaves = (blk *)secea__dpf_descend(im, &trees[kk], mout + kk * MULTI_OUT, am, dm, c->levels, lo, hi,
                                               bufA, bufB);
        } else {
            secea__dpf_tree_load(&trees[0], c->paths + key * c->path_stride, c->levels);
            leaves = (blk *)secea__dpf_descend(im, &trees[0], &trees[0].root, 0, 0, c->levels, lo, hi, bufA, bufB);
        }
        for (size_t i = 0; i < n; i++) leaves[i].hi ^= c->domain;
        const uint64_t *cwk = c->cws + key * d;
        if (w == 8) memcpy(cw, cwk, 8 * d);
        else
            for (size_t k = 0; k < d; k++) ((uint32_t *)cw)[k] = (uint32_t)cwk[k];
        im->conv_acc(acc, leaves, n, cw, d, (unsigned)w);
    }
    if (c->party) negate_rows(acc, n * d, (unsigned)w);
    secea_wipe(bufA, 32 * (PCA_LEAVES + 4));
    secea_wipe(mout, 16 * ((size_t)MULTI_OUT * MULTI_KEYS + MULTI_TMP));
    return 0;
}

int secea_dpf_path_convert_accumulate(const secea_dpf_shape *shape, void *acc, const uint8_t *paths, int party,
                                      const uint64_t *cws, size_t count, uint64_t m, uint64_t domain, int threads)
{
    if (!secea__dpf_shape_ok(shape, SHAPE_TREE | SHAPE_CONV) || shape->group > SECEA_DPF_GROUP_U32) return SECEA_EINVAL;
    size_t d = shape->ncw;
    if (count == 0 || m == 0 || d == 0) return 0;
    pca_ctx c;
    c.im = secea__dpf_impl_cur();
    c.acc = acc;
    c.paths = paths;
    c.path_stride = shape->stride;
    c.cws = cws;
    c.count = count;
    c.d = d;
    c.levels = shape->levels;
    c.w = shape->group == SECEA_DPF_GROUP_U32 ? 4 : 8;
    c.party = party & 1;
    c.m = m;
    c.domain = domain;
    c.multi = secea__dpf_interleave();
    size_t scratch = ((MULTI_KEYS * sizeof(tree_t) + 63) & ~(size_t)63) + 32 * (PCA_LEAVES + 4) +
                     16 * ((size_t)MULTI_OUT * MULTI_KEYS + MULTI_TMP) + 8 * d + 64;
    size_t units = (size_t)((m + PCA_LEAVES - 1) / PCA_LEAVES);
    return secea__pool_run(pca_unit, &c, units, scratch, threads);
}
