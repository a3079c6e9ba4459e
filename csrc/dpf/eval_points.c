/* DPF evaluation at given points: Eval(key, x) for a batch of keys and
 * points (point i on key i / per_key), PathEval (SecEmb Algorithm 6: the
 * leaf states alone) and ConvertEval (Algorithm 4: states to group
 * elements).  PT_CH points walk their paths together; the evaluation
 * points are public and steer the left/right choice, the control bits t
 * only masks.  Two walks:
 *  - the interleaved walk (secea__dpf_walk_fn, dpf_tree.h): each path's
 *    state stays in a register for the whole depth, many paths in flight
 *    (points_x86.c for AES-NI and VAES; on the other variants a plain-C walk
 *    on hash_sel, one call per level, without the per-level key lookups);
 *  - the reference walk (the _ref entry points): one hash_sel call per level
 *    through memory, each point's key and t_CW looked up per level.  Tests
 *    compare the two bit for bit. */
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
    int ref;                /* 1: the reference walk */
} pt_ctx;

/* bit i of x -> bit 63 - i */
static inline uint64_t rev64(uint64_t x)
{
    x = __builtin_bswap64(x);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((x & 0x0F0F0F0F0F0F0F0Full) << 4);
    x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
    return ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
}

/* the reference walk: st[0..n) for points i0.. */
static void pt_walk_ref(const pt_ctx *c, blk *st, size_t i0, size_t n)
{
    const secea__dpf_impl *im = c->im;
    unsigned L = c->levels;
    blk h[PT_CH];
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
}

/* the plain-C interleaved walk on a variant's hash_sel (variants without
 * their own walk): the same contract as secea__dpf_walk_fn, n <= PT_CH */
static void walk_sel(const secea__dpf_impl *im, blk *st, const uint8_t *const *kp, const uint64_t *xr,
                     const uint64_t *tsel, size_t n, unsigned L)
{
    blk h[PT_CH];
    uint8_t sel[PT_CH];
    for (size_t i = 0; i < n; i++) st[i] = ld_blk(kp[i]);
    for (unsigned dep = 0; dep < L; dep++) {
        for (size_t i = 0; i < n; i++) sel[i] = (uint8_t)((xr[i] >> dep) & 1);
        im->hash_sel(h, st, sel, n);
        for (size_t i = 0; i < n; i++) {
            blk cw = ld_blk(kp[i] + 16 + 16 * (size_t)dep);
            cw.lo = (cw.lo & ~(uint64_t)1) | ((tsel[i] >> dep) & 1);
            st[i] = blk_xor(h[i], blk_and(cw, 0 - (st[i].lo & 1)));
        }
    }
}

/* the interleaved walk: st[0..n) for points i0.. */
static void pt_walk(const pt_ctx *c, blk *st, size_t i0, size_t n)
{
    unsigned L = c->levels;
    const uint8_t *kp[PT_CH];
    uint64_t xr[PT_CH], tsel[PT_CH];
    size_t key = i0 / c->per_key, r = i0 % c->per_key;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *kb = c->keys + key * c->key_bytes;
        uint64_t x = rev64(c->xs[i0 + i] >> c->e) >> (64 - L);   /* bit dep: the branch at level dep + 1 */
        kp[i] = kb;
        xr[i] = x;
        tsel[i] = (ld64(kb + 16 + 16 * (size_t)L) & ~x) | (ld64(kb + 24 + 16 * (size_t)L) & x);
        if (++r == c->per_key) r = 0, key++;
    }
    secea__dpf_walk_fn walk = secea__dpf_points_walk_for(c->im);
    if (walk) walk(st, kp, xr, tsel, n, L);
    else walk_sel(c->im, st, kp, xr, tsel, n, L);
}

/* w bytes at p (8 or 4), zero-extended */
static inline uint64_t ld_w(const uint8_t *p, unsigned w)
{
    if (w == 8) return ld64(p);
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* The outputs of points i0..i0+n over Z_2^64 (w = 8) or Z_2^32 (w = 4), a
 * constant after inlining: the Convert element and the final correction
 * word read in place, (-1)^party (elem + t * cw) by masks (the general loop
 * of pt_unit copies each key's correction words out and calls the group's
 * add and negation per element: a third of the time beside the walk) */
static inline __attribute__((always_inline)) void pt_out_ring(const pt_ctx *c, const blk *st, const blk *conv,
                                                              size_t i0, size_t n, unsigned w)
{
    size_t nb = c->g.nb, ncw = c->g.ncw, key = i0 / c->per_key, r = i0 % c->per_key;
    uint64_t wm = w == 8 ? ~(uint64_t)0 : 0xFFFFFFFFu, em = ((uint64_t)1 << c->e) - 1;
    size_t fcw = path_bytes(c->levels);
    for (size_t i = 0; i < n; i++) {
        if (i && ++r == c->per_key) r = 0, key++;      /* key = (i0 + i) / per_key */
        const uint8_t *f = c->keys + key * c->key_bytes + fcw, *cv = (const uint8_t *)(conv + i * nb);
        uint64_t tm = 0 - (st[i].lo & 1), neg = 0 - (uint64_t)(c->party[key] & 1);
        if (c->e) {
            size_t k = (size_t)(c->xs[i0 + i] & em);
            uint64_t v = ld_w(cv + w * k, w) + (ld_w(f + w * k, w) & tm);
            c->out[i0 + i] = ((v ^ neg) - neg) & wm;
        } else {
            uint64_t *o = c->out + (i0 + i) * ncw;
            for (size_t k = 0; k < ncw; k++) {
                uint64_t v = ld_w(cv + w * k, w) + (ld_w(f + w * k, w) & tm);
                o[k] = ((v ^ neg) - neg) & wm;
            }
        }
    }
}

static int pt_unit(void *vctx, size_t unit, void *scratch)
{
    pt_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    unsigned L = c->levels;
    size_t i0 = unit * PT_CH, n = c->npoints - i0 < PT_CH ? c->npoints - i0 : PT_CH;
    blk st[PT_CH];
    if (!L) {
        for (size_t i = 0; i < n; i++) st[i] = ld_blk(c->keys + ((i0 + i) / c->per_key) * c->key_bytes);
    } else if (c->ref) {
        pt_walk_ref(c, st, i0, n);
    } else {
        pt_walk(c, st, i0, n);
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
    if (g->group == 0) {
        pt_out_ring(c, st, conv, i0, n, 8);
        return 0;
    }
    if (g->group == 1) {
        pt_out_ring(c, st, conv, i0, n, 4);
        return 0;
    }
    size_t last_key = (size_t)-1, key = i0 / c->per_key, r = i0 % c->per_key;
    for (size_t i = 0; i < n; i++) {
        if (i && ++r == c->per_key) r = 0, key++;      /* key = (i0 + i) / per_key */
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

static int eval_points(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                       const uint64_t *xs, size_t npoints, size_t per_key, int threads, int ref)
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
    c.ref = ref;
    size_t scratch = 16 * PT_CH * c.g.nb + 8 * shape->ncw + 64;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, scratch, threads);
}

static int path_eval(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs,
                     size_t npoints, size_t per_key, int threads, int ref)
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
    c.ref = ref;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, 0, threads);
}

int secea_dpf_eval_points(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                          const uint64_t *xs, size_t npoints, size_t per_key, int threads)
{
    return eval_points(shape, out, keys, party, xs, npoints, per_key, threads, 0);
}

int secea_dpf_eval_points_ref(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                              const uint64_t *xs, size_t npoints, size_t per_key, int threads)
{
    return eval_points(shape, out, keys, party, xs, npoints, per_key, threads, 1);
}

int secea_dpf_path_eval(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs,
                        size_t npoints, size_t per_key, int threads)
{
    return path_eval(shape, states, paths, xs, npoints, per_key, threads, 0);
}

int secea_dpf_path_eval_ref(const secea_dpf_shape *shape, uint8_t *states, const uint8_t *paths, const uint64_t *xs,
                            size_t npoints, size_t per_key, int threads)
{
    return path_eval(shape, states, paths, xs, npoints, per_key, threads, 1);
}

/* splitmix64 (the peak kernel's constants) */
static uint64_t pk_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The point walk's own ceiling (benchmarks): npoints paths of depth 32
 * walked by the interleaved walk secea_dpf_eval_points uses on the variant
 * in force, over 16 synthetic key bodies of constants (8.7 KiB, in L1), so
 * it issues the walk's instructions and loads per level with no key memory
 * traffic, no per-call preparation and no conversion. */
uint64_t secea_dpf_points_peak(size_t npoints)
{
    enum { PK_L = 32, PK_KEYS = 16, PK_BODY = 32 + 16 * PK_L };
    const secea__dpf_impl *im = secea__dpf_impl_cur();
    secea__dpf_walk_fn walk = secea__dpf_points_walk_for(im);
    _Alignas(64) uint8_t bodies[PK_KEYS][PK_BODY];
    const uint8_t *kp[PT_CH];
    uint64_t xr[PT_CH], tsel[PT_CH], acc = 0;
    blk st[PT_CH];
    for (size_t k = 0; k < PK_KEYS; k++)
        for (size_t i = 0; i < PK_BODY; i += 8) st64(&bodies[k][i], pk_mix(k * PK_BODY + i));
    for (size_t i = 0; i < PT_CH; i++) {
        kp[i] = bodies[i % PK_KEYS];
        xr[i] = pk_mix(~(uint64_t)i) >> 32;           /* the branches: PK_L bits */
        tsel[i] = pk_mix((uint64_t)i << 32);
    }
    for (size_t done = 0; done < npoints;) {
        size_t n = npoints - done < PT_CH ? npoints - done : PT_CH;
        if (walk) walk(st, kp, xr, tsel, n, PK_L);
        else walk_sel(im, st, kp, xr, tsel, n, PK_L);
        for (size_t i = 0; i < n; i++) acc += st[i].lo ^ st[i].hi;
        done += n;
    }
    return acc;
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
