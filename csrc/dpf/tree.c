/* The evaluator layer's shared functions (dpf_tree.h): shape checks, group
 * set-up, correction-word bytes, the tree's correction words per level, the
 * pruned breadth-first descent, leaf conversion and the leaf-range walker.
 *
 * Full-domain walks are breadth first within cache-sized subtrees: a pruned
 * breadth-first pass computes the nodes SUB_LOG levels above the leaves,
 * then each subtree is expanded level by level in two ping-pong buffers and
 * converted (batched AES: 32 blocks in flight with VAES).  Threads take work
 * units (key, leaf range) from the atomic counter of secea__pool_run
 * (csrc/common/threads.c).  Expansion goes through secea__dpf_descend(), and
 * for the server kernels' top levels through secea__dpf_descend_multi()
 * (several keys' trees per hash batch) first. */
#include "dpf_tree.h"

int secea__dpf_shape_ok(const secea_dpf_shape *s, unsigned need)
{
    if (!s || s->group > SECEA_DPF_GROUP_FP) return 0;
    if (s->group == SECEA_DPF_GROUP_FP && s->modulus < 2) return 0;
    if (s->early > 4 || ((size_t)1 << s->early) > DPF_MAX_EARLY_NCW) return 0;
    /* key bodies carry ncw >= 1 final elements, 2^e of them for early keys */
    if ((need & SHAPE_CW) && (s->ncw == 0 || (s->early && s->ncw != ((size_t)1 << s->early)))) return 0;
    if (need & SHAPE_TREE) {
        if (s->levels > 64) return 0;
        size_t body = 32 + 16 * (size_t)s->levels;
        if (need & SHAPE_CW) body += s->ncw * (s->group == SECEA_DPF_GROUP_U32 ? 4 : 8);
        if (s->stride < body) return 0;
    }
    return 1;
}

void secea__dpf_grp_init(grp_t *g, unsigned group, uint64_t p, size_t ncw)
{
    memset(g, 0, sizeof *g);
    g->group = group;
    g->ncw = ncw;
    g->w = group == 1 ? 4 : 8;
    size_t per = group == 0 ? 2 : group == 1 ? 4 : 1;
    g->nb = (ncw + per - 1) / per;
    if (group == 2) {
        g->p = p;
        secea_modctx_init(&g->mc, p);
    }
}

void secea__dpf_load_fcw(const grp_t *g, const uint8_t *p, uint64_t *cw)
{
    for (size_t k = 0; k < g->ncw; k++) {
        if (g->w == 4) {
            uint32_t v;
            memcpy(&v, p + 4 * k, 4);
            cw[k] = v;
        } else {
            cw[k] = ld64(p + 8 * k);
        }
    }
}

void secea__dpf_store_fcw(const grp_t *g, uint8_t *p, const uint64_t *cw)
{
    for (size_t k = 0; k < g->ncw; k++) {
        if (g->w == 4) {
            uint32_t v = (uint32_t)cw[k];
            memcpy(p + 4 * k, &v, 4);
        } else {
            st64(p + 8 * k, cw[k]);
        }
    }
}

void secea__dpf_conv_inputs(blk *conv, const blk *x, size_t n, size_t nb)
{
    for (size_t i = 0; i < n; i++) {
        blk s = x[i];
        s.lo &= ~(uint64_t)1;
        for (size_t j = 0; j < nb; j++) {
            conv[i * nb + j].lo = s.lo ^ (uint64_t)j;
            conv[i * nb + j].hi = s.hi;
        }
    }
}
void secea__dpf_tree_load(tree_t *t, const uint8_t *body, unsigned levels)
{
    t->levels = levels;
    t->root = ld_blk(body);
    uint64_t tl = ld64(body + 16 + 16 * (size_t)levels), tr = ld64(body + 24 + 16 * (size_t)levels);
    for (unsigned i = 0; i < levels; i++) {
        blk s = ld_blk(body + 16 + 16 * (size_t)i);
        s.lo &= ~(uint64_t)1;
        t->cw[i][0] = s;
        t->cw[i][1] = s;
        t->cw[i][0].lo |= (tl >> i) & 1;
        t->cw[i][1].lo |= (tr >> i) & 1;
    }
}

const blk *secea__dpf_descend(const secea__dpf_impl *im, const tree_t *t, const blk *nodes, uint64_t a0,
                          unsigned d0, unsigned d1, uint64_t lo, uint64_t hi, blk *bufA, blk *bufB)
{
    const blk *cur = nodes;
    uint64_t a = a0;
    for (unsigned dep = d0; dep < d1; dep++) {
        unsigned rem = d1 - dep - 1;
        uint64_t plo = lo >> (rem + 1), phi = (hi - 1) >> (rem + 1);
        blk *dst = cur == bufA ? bufB : bufA;
        im->expand(dst, cur + (plo - a), (size_t)(phi - plo + 1), t->cw[dep]);
        cur = dst;
        a = plo << 1;
    }
    return cur + (lo - a);
}

static int interleave_on = 1;

int secea_dpf_set_interleave(int on)
{
    int prev = __atomic_load_n(&interleave_on, __ATOMIC_RELAXED);
    __atomic_store_n(&interleave_on, on ? 1 : 0, __ATOMIC_RELAXED);
    return prev;
}

int secea__dpf_interleave(void) { return __atomic_load_n(&interleave_on, __ATOMIC_RELAXED); }

unsigned secea__dpf_descend_multi(const secea__dpf_impl *im, const tree_t *t, size_t nk, const blk *start,
                                  uint64_t a0, unsigned d0, unsigned d1, uint64_t lo, uint64_t hi, blk *out,
                                  uint64_t *am, size_t *nm, blk *tmp)
{
    /* tmp: gathered parents | H_L | H_R (nk * MULTI_MIN each) | two child levels (2 nk MULTI_MIN each) */
    blk *par = tmp, *hl = tmp + MULTI_KEYS * MULTI_MIN, *hr = hl + MULTI_KEYS * MULTI_MIN;
    blk *lvA = hr + MULTI_KEYS * MULTI_MIN, *lvB = lvA + 2 * MULTI_KEYS * MULTI_MIN;
    const blk *cur = start;
    size_t cstride = 1;              /* nodes per tree in cur */
    uint64_t a = a0;
    unsigned dep = d0;
    for (; dep < d1; dep++) {
        unsigned rem = d1 - dep - 1;
        uint64_t plo = lo >> (rem + 1), phi = (hi - 1) >> (rem + 1);
        size_t n = (size_t)(phi - plo + 1);
        if (n >= MULTI_MIN) break;
        for (size_t k = 0; k < nk; k++) memcpy(par + k * n, cur + k * cstride + (plo - a), 16 * n);
        im->hash(hl, par, nk * n, DPF_KL, 1);
        im->hash(hr, par, nk * n, DPF_KR, 1);
        blk *dst = cur == lvA ? lvB : lvA;
        for (size_t k = 0; k < nk; k++) {
            blk cl = t[k].cw[dep][0], cr = t[k].cw[dep][1];
            for (size_t i = 0; i < n; i++) {
                size_t j = k * n + i;
                uint64_t tm = 0 - (par[j].lo & 1);
                dst[2 * j] = blk_xor(hl[j], blk_and(cl, tm));
                dst[2 * j + 1] = blk_xor(hr[j], blk_and(cr, tm));
            }
        }
        cur = dst;
        cstride = 2 * n;
        a = plo << 1;
    }
    uint64_t qlo = lo >> (d1 - dep), qhi = (hi - 1) >> (d1 - dep);
    size_t cnt = (size_t)(qhi - qlo + 1);
    for (size_t k = 0; k < nk; k++) memcpy(out + k * MULTI_OUT, cur + k * cstride + (qlo - a), 16 * cnt);
    *am = qlo;
    *nm = cnt;
    return dep;
}

void secea__dpf_leaf_values(const secea__dpf_impl *im, const grp_t *g, const blk *leaves, size_t cnt,
                        const uint64_t *cw, int party, blk *conv, uint64_t *out, size_t nout)
{
    size_t ncw = g->ncw, nb = g->nb;
    /* Z_2^64 through the variant's conversion slots (every table fills them);
     * Z_2^32, F_p and a partial last leaf of ncw >= 3 in plain C below */
    if (g->group == 0 && ncw <= 2) {
        uint64_t cw2[2] = {cw[0], ncw == 2 ? cw[1] : 0};
        int words = (int)ncw;
        size_t full = nout / ncw < cnt ? nout / ncw : cnt;
        im->conv_u64(out, leaves, full, cw2, party, words);
        if (full < cnt && nout > ncw * full) {
            uint64_t tmp[2];
            im->conv_u64(tmp, leaves + full, 1, cw2, party, words);
            out[ncw * full] = tmp[0];
        }
        return;
    }
    if (g->group == 0 && ncw == 4 && nout == cnt * ncw) {
        im->conv_u64x4(out, leaves, cnt, cw, party);
        return;
    }
    if (g->group == 0 && nout == cnt * ncw) {
        im->conv_u64_vec(out, leaves, cnt, cw, ncw, party, 0);
        return;
    }
    uint64_t neg = 0 - (uint64_t)(party & 1);
    for (size_t i0 = 0; i0 < cnt && i0 * ncw < nout; i0 += CONV_CH) {
        size_t c = cnt - i0 < CONV_CH ? cnt - i0 : CONV_CH;
        if (nb == 1) {
            im->hash(conv, leaves + i0, c, DPF_KV, 1);
        } else {
            secea__dpf_conv_inputs(conv, leaves + i0, c, nb);
            im->hash(conv, conv, c * nb, DPF_KV, 0);
        }
        for (size_t i = 0; i < c; i++) {
            uint64_t tm = 0 - (leaves[i0 + i].lo & 1);
            size_t base = (i0 + i) * ncw;
            if (base >= nout) break;
            size_t kmax = nout - base < ncw ? nout - base : ncw;
            uint64_t *o = out + base;
            if (g->group == 0) {
                const uint64_t *cv = (const uint64_t *)(conv + i * nb);
                for (size_t k = 0; k < kmax; k++) o[k] = ((cv[k] + (cw[k] & tm)) ^ neg) - neg;
            } else {
                for (size_t k = 0; k < kmax; k++) {
                    uint64_t v = g_add(g, g_elem(g, conv + i * nb, k), cw[k] & tm);
                    o[k] = party ? g_neg(g, v) : v;
                }
            }
        }
    }
}

void secea__dpf_walk_begin(walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t lo, uint64_t hi,
                       blk *topA, blk *topB)
{
    unsigned L = t->levels;
    w->b = L < SUB_LOG ? L : SUB_LOG;
    w->D = L - w->b;
    w->qlo = lo >> w->b;
    w->qhi = (hi - 1) >> w->b;
    w->top = secea__dpf_descend(im, t, &t->root, 0, 0, w->D, w->qlo, w->qhi + 1, topA, topB);
}

const blk *secea__dpf_walk_sub(const walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t q,
                           uint64_t lo, uint64_t hi, uint64_t *slo, uint64_t *shi, blk *subA, blk *subB)
{
    uint64_t a = q << w->b, z = (q + 1) << w->b;
    *slo = lo > a ? lo : a;
    *shi = hi < z ? hi : z;
    return secea__dpf_descend(im, t, w->top + (q - w->qlo), q, w->D, t->levels, *slo, *shi, subA, subB);
}

void secea__dpf_part_range(uint64_t nleaves, unsigned b, size_t parts, size_t r, uint64_t *lo, uint64_t *hi)
{
    uint64_t chunks = (nleaves + ((uint64_t)1 << b) - 1) >> b;
    uint64_t c0 = chunks * r / parts, c1 = chunks * (r + 1) / parts;
    *lo = c0 << b;
    *hi = c1 << b;
    if (*hi > nleaves) *hi = nleaves;
}

size_t secea__dpf_choose_parts(size_t count, int threads, uint64_t nleaves)
{
    if (threads < 1) threads = 1;
    size_t parts = count >= (size_t)threads ? 1 : ((size_t)threads + count - 1) / count;
    uint64_t chunks = (nleaves + ((uint64_t)1 << SUB_LOG) - 1) >> SUB_LOG;
    if (parts > chunks) parts = (size_t)(chunks ? chunks : 1);
    return parts;
}
