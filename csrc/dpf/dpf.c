/* Two-party distributed point functions (Boyle, Gilboa, Ishai, "Function
 * Secret Sharing: Improvements and Extensions", CCS 2016, Fig. 1), split as
 * in SecEmb (Appendix E/F, Algorithms 4-7): PathGen / PathEval walk the
 * binary tree of seeds and control bits, ConvertGen / ConvertEval turn the
 * final seed into group elements with the final correction word CW^{n+1}.
 *
 * Conventions (see secea.h for the key layout):
 *  - a tree node is one 128-bit block: seed = block with bit 0 cleared
 *    (127 bits), control bit t = bit 0;
 *  - G(s) = H_L(s) || H_R(s) with the fixed-key hash of dpf_internal.h; the
 *    child's t is bit 0 of the hash output and its seed the other 127 bits;
 *  - tree level i (1-based) consumes bit L - i of the path index (most
 *    significant first), so leaves appear in natural order;
 *  - Convert_D(s) = stream of blocks H_V(s xor (j + D 2^64)), j = 0, 1, ...,
 *    for the public conversion domain D (0 for keys; secea.h): Z_2^64 takes
 *    its 64-bit words, Z_2^32 its 32-bit words, F_p reduces each whole block
 *    (a 128-bit integer) mod p (statistical distance <= p / 2^128 from
 *    uniform);
 *  - early termination (the optimisation of Boyle et al. 2016): the tree stops e levels
 *    early and Convert of a leaf holds the 2^e outputs x = leaf * 2^e + k;
 *  - evaluation: party b outputs (-1)^b (Convert(s) + t * CW^{n+1}).
 *
 * Full-domain walks are breadth first within cache-sized subtrees: a pruned
 * breadth-first pass computes the nodes SUB_LOG levels above the leaves,
 * then each subtree is expanded level by level in two ping-pong buffers and
 * converted (batched AES: 32 blocks in flight with VAES).  Threads take work
 * units (key, leaf range) from the atomic counter of secea__pool_run
 * (csrc/common/threads.c).
 *
 * Constant time: key generation selects with masks derived from alpha, never
 * branches on alpha, beta or seeds; evaluation corrects with masks derived
 * from t.  Only lengths, the party bit and the (public) evaluation points
 * steer control flow.
 *
 * Length (about 1,180 lines): key generation and every evaluator share the
 * private tree-walk state and the correction-word layout of dpf_internal.h;
 * the x86 AES-NI/VAES variants live in dpf_x86.c, the ARMv8 Crypto
 * Extensions one in dpf_arm.c.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "dpf_internal.h"
#include "../prg/aes_internal.h"

typedef secea__dpf_blk blk;

/* ------------------------------------------------------------------ keys */

/* The public fixed AES-128 keys, nothing up the sleeve:
 * SHA-256(label)[0:16] for the labels "secea_fast.dpf.v1/prg-left",
 * "secea_fast.dpf.v1/prg-right" and "secea_fast.dpf.v1/convert"
 * (tests/test_dpf.py recomputes them). */
static const uint8_t DPF_FIXED_KEYS[3][16] = {
    {0x3b, 0xdb, 0x5f, 0x2a, 0x9f, 0x17, 0x49, 0x8a, 0x5a, 0x6e, 0x63, 0xf8, 0x1b, 0xe8, 0x91, 0xe7},
    {0x63, 0x48, 0x03, 0x7c, 0x9b, 0x25, 0x67, 0xe2, 0x69, 0x65, 0xf2, 0x3d, 0x6a, 0x5d, 0xcd, 0xac},
    {0x54, 0x10, 0xf3, 0x74, 0xa3, 0x13, 0x23, 0x29, 0x37, 0xb0, 0x56, 0xb9, 0x60, 0xdb, 0x3d, 0x47},
};

_Alignas(64) uint8_t secea__dpf_rk[3][176];
static pthread_once_t keys_once = PTHREAD_ONCE_INIT;

static void keys_init_once(void)
{
    for (int i = 0; i < 3; i++) secea__aes_impl_portable.expand(secea__dpf_rk[i], DPF_FIXED_KEYS[i]);
}

void secea__dpf_keys_init(void)
{
    pthread_once(&keys_once, keys_init_once);
}

/* -------------------------------------------------------------- dispatch */

/* the variant of the kernel table in force (internal.h, "run-time CPU dispatch") */
static inline const secea__dpf_impl *impl_cur(void)
{
    secea__dpf_keys_init();
    return (const secea__dpf_impl *)secea__kernels_now()->dpf;
}

/* the variant named, if the features c allow it, else NULL */
static const secea__dpf_impl *dpf_by_name(const secea__cpu_features *c, const char *name)
{
    if (!strcmp(name, "portable")) return &secea__dpf_impl_portable;
#if SECEA_X86
    if (!strcmp(name, "aesni") && c->aes) return &secea__dpf_impl_aesni;
    if (!strcmp(name, "vaes") && c->vaes) return &secea__dpf_impl_vaes;
#endif
#if SECEA_ARMCE
    if (!strcmp(name, "armce") && c->aes) return &secea__dpf_impl_armce;
#endif
    (void)c;
    return NULL;
}

void secea__dpf_choose(secea__kernels *k)
{
    const secea__dpf_impl *p = &secea__dpf_impl_portable;
    static const char *const best[] = {"vaes", "aesni", "armce"};
    for (int i = 0; i < 3 && !k->portable && p == &secea__dpf_impl_portable; i++) {
        const secea__dpf_impl *q = dpf_by_name(&k->cpu, best[i]);
        if (q) p = q;
    }
    k->dpf = p;
}

int secea_dpf_select_variant(const char *name)
{
    secea__dpf_keys_init();
    const secea__dpf_impl *p = dpf_by_name(&secea__kernels_now()->cpu, name);
    if (!p) return -1;
    return secea__kernels_override(NULL, p);
}

const char *secea__dpf_variant(const secea__kernels *k)
{
    return ((const secea__dpf_impl *)k->dpf)->name;
}

/* --------------------------------------------------------------- helpers */

static inline blk ld_blk(const uint8_t *p)
{
    blk b;
    memcpy(&b, p, 16);
    return b;
}

static inline void st_blk(uint8_t *p, blk b) { memcpy(p, &b, 16); }

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline size_t path_bytes(unsigned levels) { return 32 + 16 * (size_t)levels; }

static inline blk blk_xor(blk a, blk b)
{
    blk r = {a.lo ^ b.lo, a.hi ^ b.hi};
    return r;
}

static inline blk blk_and(blk a, uint64_t m)
{
    blk r = {a.lo & m, a.hi & m};
    return r;
}

/* mask ? a : b, mask all-ones or zero */
static inline blk blk_sel(uint64_t mask, blk a, blk b)
{
    blk r = {(a.lo & mask) | (b.lo & ~mask), (a.hi & mask) | (b.hi & ~mask)};
    return r;
}

/* ---------------------------------------------------------------- groups */

typedef struct {
    unsigned group;     /* 0: Z_2^64, 1: Z_2^32, 2: F_p */
    uint64_t p;
    secea_modctx mc;
    size_t ncw;         /* group elements per leaf */
    size_t nb;          /* Convert blocks per leaf */
    size_t w;           /* bytes per element in a key */
} grp_t;

static void grp_init(grp_t *g, unsigned group, uint64_t p, size_t ncw)
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

static inline uint64_t ct_nonzero_mask(uint64_t x)
{
    return 0 - ((x | (0 - x)) >> 63);
}

static inline uint64_t g_add(const grp_t *g, uint64_t a, uint64_t b)
{
    if (g->group == 0) return a + b;
    if (g->group == 1) return (a + b) & 0xFFFFFFFFu;
    uint64_t s = a + b, p = g->p;
    uint64_t over = 0 - (uint64_t)((s < a) | (s >= p));   /* a, b < p: one subtraction */
    return s - (p & over);
}

static inline uint64_t g_neg(const grp_t *g, uint64_t a)
{
    if (g->group == 0) return 0 - a;
    if (g->group == 1) return (0 - a) & 0xFFFFFFFFu;
    return (g->p - a) & ct_nonzero_mask(a);
}

/* mask ? -a : a */
static inline uint64_t g_cneg(const grp_t *g, uint64_t a, uint64_t mask)
{
    uint64_t n = g_neg(g, a);
    return (n & mask) | (a & ~mask);
}

/* element k of the Convert stream held in blocks */
static inline uint64_t g_elem(const grp_t *g, const blk *blocks, size_t k)
{
    if (g->group == 0) return ((const uint64_t *)blocks)[k];
    if (g->group == 1) return ((const uint32_t *)blocks)[k];
    uint64_t r = secea_mod64(&g->mc, blocks[k].hi);
    return secea_mod128(&g->mc, ((secea_u128)r << 64) | blocks[k].lo);
}

static void load_fcw(const grp_t *g, const uint8_t *p, uint64_t *cw)
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

static void store_fcw(const grp_t *g, uint8_t *p, const uint64_t *cw)
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

/* Convert inputs: conv[i*nb + j] = (x_i & ~1) xor j */
static void conv_inputs(blk *conv, const blk *x, size_t n, size_t nb)
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

/* ------------------------------------------------------------ the tree */

typedef struct {
    unsigned levels;
    blk root;
    blk cw[64][2];   /* per level: s_CW | t_CW^L, s_CW | t_CW^R */
} tree_t;

static void tree_load(tree_t *t, const uint8_t *body, unsigned levels)
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

/* nodes[0..] are the nodes of depth d0 with indices a0, a0 + 1, ...;
 * returns the nodes of depth d1 with indices [lo, hi) (descendants of the
 * given ones), expanding only what is needed.  bufA/bufB hold hi - lo + 4
 * blocks each and must differ from nodes. */
static const blk *descend(const secea__dpf_impl *im, const tree_t *t, const blk *nodes, uint64_t a0,
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

#define SUB_LOG 12        /* subtree height: 2^12 leaves = 64 KiB per ping-pong buffer (L2) */
#define CONV_CH 256       /* leaves per conversion batch */

/* Writes the values of leaves[0..cnt) (out[i*ncw + k]), at most nout of
 * them.  conv: CONV_CH * nb blocks of scratch. */
static void leaf_values(const secea__dpf_impl *im, const grp_t *g, const blk *leaves, size_t cnt,
                        const uint64_t *cw, int party, blk *conv, uint64_t *out, size_t nout)
{
    size_t ncw = g->ncw, nb = g->nb;
    if (g->group == 0 && ncw <= 2 && im->conv_u64) {
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
    if (g->group == 0 && ncw == 4 && im->conv_u64x4 && nout == cnt * ncw) {
        im->conv_u64x4(out, leaves, cnt, cw, party);
        return;
    }
    if (g->group == 0 && im->conv_u64_vec && nout == cnt * ncw) {
        im->conv_u64_vec(out, leaves, cnt, cw, ncw, party, 0);
        return;
    }
    uint64_t neg = 0 - (uint64_t)(party & 1);
    for (size_t i0 = 0; i0 < cnt && i0 * ncw < nout; i0 += CONV_CH) {
        size_t c = cnt - i0 < CONV_CH ? cnt - i0 : CONV_CH;
        if (nb == 1) {
            im->hash(conv, leaves + i0, c, DPF_KV, 1);
        } else {
            conv_inputs(conv, leaves + i0, c, nb);
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

/* A leaf-range walker: top nodes (depth L - b) for [lo, hi), then subtrees. */
typedef struct {
    unsigned b, D;        /* subtree height, depth of the top nodes */
    uint64_t qlo, qhi;    /* top node indices [qlo, qhi] */
    const blk *top;
} walk_t;

static size_t walk_top_cap(uint64_t chunks) { return (size_t)chunks + 4; }

static void walk_begin(walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t lo, uint64_t hi,
                       blk *topA, blk *topB)
{
    unsigned L = t->levels;
    w->b = L < SUB_LOG ? L : SUB_LOG;
    w->D = L - w->b;
    w->qlo = lo >> w->b;
    w->qhi = (hi - 1) >> w->b;
    w->top = descend(im, t, &t->root, 0, 0, w->D, w->qlo, w->qhi + 1, topA, topB);
}

/* leaves [slo, shi) of top node q */
static const blk *walk_sub(const walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t q,
                           uint64_t lo, uint64_t hi, uint64_t *slo, uint64_t *shi, blk *subA, blk *subB)
{
    uint64_t a = q << w->b, z = (q + 1) << w->b;
    *slo = lo > a ? lo : a;
    *shi = hi < z ? hi : z;
    return descend(im, t, w->top + (q - w->qlo), q, w->D, t->levels, *slo, *shi, subA, subB);
}

static size_t sub_cap(void) { return ((size_t)1 << SUB_LOG) + 4; }

/* split [0, nleaves) into `parts` chunk-aligned ranges; part r -> [lo, hi) */
static void part_range(uint64_t nleaves, unsigned b, size_t parts, size_t r, uint64_t *lo, uint64_t *hi)
{
    uint64_t chunks = (nleaves + ((uint64_t)1 << b) - 1) >> b;
    uint64_t c0 = chunks * r / parts, c1 = chunks * (r + 1) / parts;
    *lo = c0 << b;
    *hi = c1 << b;
    if (*hi > nleaves) *hi = nleaves;
}

static size_t choose_parts(size_t count, int threads, uint64_t nleaves)
{
    if (threads < 1) threads = 1;
    size_t parts = count >= (size_t)threads ? 1 : ((size_t)threads + count - 1) / count;
    uint64_t chunks = (nleaves + ((uint64_t)1 << SUB_LOG) - 1) >> SUB_LOG;
    if (parts > chunks) parts = (size_t)(chunks ? chunks : 1);
    return parts;
}

/* ------------------------------------------------------------ hash (test) */

void secea_dpf_hash(uint8_t *out, const uint8_t *in, size_t nblocks, int which)
{
    const secea__dpf_impl *im = impl_cur();
    blk tmp[64];
    while (nblocks) {
        size_t m = nblocks < 64 ? nblocks : 64;
        memcpy(tmp, in, 16 * m);
        im->hash(tmp, tmp, m, which, 0);
        memcpy(out, tmp, 16 * m);
        in += 16 * m;
        out += 16 * m;
        nblocks -= m;
    }
}

/* ------------------------------------------------------------ generation */

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
    conv_inputs(conv, x, 2, nb);
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
            store_fcw(&c->g, c->keys0 + (k0 + k) * c->key_bytes + path_bytes(L), cw);
            store_fcw(&c->g, c->keys1 + (k0 + k) * c->key_bytes + path_bytes(L), cw);
        }
    }
    /* wipe the secret working state */
    secea_wipe(X, sizeof X);
    secea_wipe(H, sizeof H);
    return 0;
}

int secea_dpf_gen(uint8_t *keys0, uint8_t *keys1, uint8_t *finals, const uint64_t *alphas,
                  const uint64_t *betas, const uint8_t *rand, size_t count, unsigned levels,
                  unsigned group, uint64_t modulus, size_t ncw, int threads)
{
    gen_ctx c;
    c.im = impl_cur();
    grp_init(&c.g, group, modulus, ncw);
    c.keys0 = keys0;
    c.keys1 = keys1;
    c.finals = finals;
    c.alphas = alphas;
    c.betas = betas;
    c.rand = rand;
    c.count = count;
    c.levels = levels;
    c.key_bytes = path_bytes(levels) + ncw * c.g.w;
    size_t units = (count + GEN_CH - 1) / GEN_CH;
    size_t scratch = ((8 * ncw + 63) & ~(size_t)63) + 32 * c.g.nb + 64;
    return secea__pool_run(gen_unit, &c, units, scratch, threads);
}

int secea_dpf_convert_gen(uint64_t *cw, const uint8_t *finals, const uint64_t *betas, size_t count,
                          unsigned group, uint64_t modulus, size_t ncw, uint64_t domain)
{
    const secea__dpf_impl *im = impl_cur();
    grp_t g;
    grp_init(&g, group, modulus, ncw);
    blk *conv = aligned_alloc(64, (32 * g.nb + 63) & ~(size_t)63);
    if (!conv) return -1;
    for (size_t i = 0; i < count; i++)
        cw_from_finals(im, &g, ld_blk(finals + 32 * i), ld_blk(finals + 32 * i + 16), betas + i * ncw,
                       cw + i * ncw, conv, domain);
    memset(conv, 0, 32 * g.nb);
    free(conv);
    return 0;
}

/* ------------------------------------------------------ point evaluation */

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
    conv_inputs(conv, st, n, nb);
    im->hash(conv, conv, n * nb, DPF_KV, 0);
    size_t last_key = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t key = (i0 + i) / c->per_key;
        if (key != last_key) {
            load_fcw(g, c->keys + key * c->key_bytes + path_bytes(L), cw);
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

int secea_dpf_eval_points(uint64_t *out, const uint8_t *keys, size_t key_bytes, const uint8_t *party,
                          const uint64_t *xs, size_t npoints, size_t per_key, unsigned levels, unsigned e,
                          unsigned group, uint64_t modulus, size_t ncw, int threads)
{
    pt_ctx c;
    memset(&c, 0, sizeof c);
    c.im = impl_cur();
    grp_init(&c.g, group, modulus, ncw);
    c.out = out;
    c.keys = keys;
    c.key_bytes = key_bytes;
    c.per_key = per_key ? per_key : 1;
    c.party = party;
    c.xs = xs;
    c.npoints = npoints;
    c.levels = levels;
    c.e = e;
    size_t scratch = 16 * PT_CH * c.g.nb + 8 * ncw + 64;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, scratch, threads);
}

int secea_dpf_path_eval(uint8_t *states, const uint8_t *paths, size_t path_stride, const uint64_t *xs,
                        size_t npoints, size_t per_key, unsigned levels, int threads)
{
    pt_ctx c;
    memset(&c, 0, sizeof c);
    c.im = impl_cur();
    c.states = states;
    c.keys = paths;
    c.key_bytes = path_stride;
    c.per_key = per_key ? per_key : 1;
    c.xs = xs;
    c.npoints = npoints;
    c.levels = levels;
    return secea__pool_run(pt_unit, &c, (npoints + PT_CH - 1) / PT_CH, 0, threads);
}

int secea_dpf_convert_eval(uint64_t *out, const uint8_t *states, size_t n, int party, const uint64_t *cw,
                           unsigned group, uint64_t modulus, size_t ncw, uint64_t domain)
{
    const secea__dpf_impl *im = impl_cur();
    grp_t g;
    grp_init(&g, group, modulus, ncw);
    blk *conv = aligned_alloc(64, ((size_t)CONV_CH * g.nb * 16 + 63) & ~(size_t)63);
    blk leaves[CONV_CH];
    if (!conv) return -1;
    for (size_t i0 = 0; i0 < n; i0 += CONV_CH) {
        size_t c = n - i0 < CONV_CH ? n - i0 : CONV_CH;
        memcpy(leaves, states + 16 * i0, 16 * c);
        for (size_t i = 0; i < c; i++) leaves[i].hi ^= domain;
        leaf_values(im, &g, leaves, c, cw, party & 1, conv, out + i0 * ncw, c * ncw);
    }
    free(conv);
    return 0;
}

/* ------------------------------------------------- full-domain evaluation */

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
    part_range(c->nleaves, L < SUB_LOG ? L : SUB_LOG, c->parts, r, &lo, &hi);
    if (lo >= hi) return 0;
    const uint8_t *kb = c->keys + key * c->key_bytes;
    tree_load(&s->tree, kb, L);
    int party = c->party ? c->party[key] & 1 : 0;
    if (c->out) load_fcw(g, kb + path_bytes(L), s->cw);
    walk_t w;
    walk_begin(&w, im, &s->tree, lo, hi, s->topA, s->topB);
    for (uint64_t q = w.qlo; q <= w.qhi; q++) {
        uint64_t slo, shi;
        const blk *leaves = walk_sub(&w, im, &s->tree, q, lo, hi, &slo, &shi, s->subA, s->subB);
        size_t cnt = (size_t)(shi - slo);
        if (c->states) {
            memcpy(c->states + 16 * (key * c->nleaves + slo), leaves, 16 * cnt);
        } else {
            uint64_t first = slo * g->ncw;
            uint64_t avail = c->nout - first;
            size_t nout = avail < (uint64_t)cnt * g->ncw ? (size_t)avail : cnt * g->ncw;
            leaf_values(im, g, leaves, cnt, s->cw, party, s->conv, c->out + key * c->nout + first, nout);
        }
    }
    return 0;
}

static int full_run(full_ctx *c, size_t count, int threads)
{
    unsigned L = c->levels;
    unsigned b = L < SUB_LOG ? L : SUB_LOG;
    c->parts = choose_parts(count, threads, c->nleaves);
    uint64_t chunks = (c->nleaves + ((uint64_t)1 << b) - 1) >> b;
    c->topcap = walk_top_cap(chunks / c->parts + 2);
    size_t bytes = full_scratch_bytes(c->topcap, c->g.nb, c->g.ncw, NULL);
    return secea__pool_run(full_unit, c, count * c->parts, bytes, threads);
}

int secea_dpf_eval_full(uint64_t *out, const uint8_t *keys, size_t key_bytes, const uint8_t *party,
                        size_t count, uint64_t m, unsigned levels, unsigned e, unsigned group,
                        uint64_t modulus, size_t ncw, int threads)
{
    if (count == 0 || m == 0) return 0;
    full_ctx c;
    memset(&c, 0, sizeof c);
    c.im = impl_cur();
    grp_init(&c.g, group, modulus, ncw);
    c.keys = keys;
    c.key_bytes = key_bytes;
    c.party = party;
    c.levels = levels;
    c.nleaves = (m + ((uint64_t)1 << e) - 1) >> e;
    c.nout = e ? m : m * ncw;
    c.out = out;
    return full_run(&c, count, threads);
}

int secea_dpf_path_eval_full(uint8_t *states, const uint8_t *paths, size_t path_stride, size_t count,
                             uint64_t m, unsigned levels, int threads)
{
    if (count == 0 || m == 0) return 0;
    full_ctx c;
    memset(&c, 0, sizeof c);
    c.im = impl_cur();
    grp_init(&c.g, 0, 0, 0);
    c.keys = paths;
    c.key_bytes = path_stride;
    c.levels = levels;
    c.nleaves = m;
    c.states = states;
    return full_run(&c, count, threads);
}

/* ------------------------------------------------- convert-accumulate */

#define ACC_CH 128

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
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
    const grp_t *g = &c->g;
    size_t d = c->d, nb = g->nb;
    uint64_t j0 = (uint64_t)unit * ACC_CH;
    size_t n = c->m - j0 < ACC_CH ? (size_t)(c->m - j0) : ACC_CH;
    blk *conv = scratch;
    blk st[ACC_CH];
    uint64_t *acc = c->acc + j0 * d;
    for (size_t key = 0; key < c->count; key++) {
        memcpy(st, c->states + 16 * (key * c->m + j0), 16 * n);
        for (size_t i = 0; i < n; i++) st[i].hi ^= c->domain;
        const uint64_t *cw = c->cws + key * d;
        uint64_t neg = 0 - (uint64_t)(c->party[key] & 1);
        if (im->conv_u64_vec) {
            im->conv_u64_vec(acc, st, n, cw, d, c->party[key] & 1, 1);
            continue;
        }
        if (nb == 1) {
            im->hash(conv, st, n, DPF_KV, 1);
        } else {
            conv_inputs(conv, st, n, nb);
            im->hash(conv, conv, n * nb, DPF_KV, 0);
        }
        for (size_t i = 0; i < n; i++) {
            uint64_t tm = 0 - (st[i].lo & 1);
            const uint64_t *cv = (const uint64_t *)(conv + i * nb);
            uint64_t *a = acc + i * d;
            for (size_t k = 0; k < d; k++) {
                uint64_t v = cv[k] + (cw[k] & tm);
                a[k] += (v ^ neg) - neg;
            }
        }
    }
    return 0;
}

int secea_dpf_convert_accumulate(uint64_t *acc, const uint8_t *states, const uint8_t *party,
                                 const uint64_t *cws, size_t count, uint64_t m, size_t d, uint64_t domain,
                                 int threads)
{
    if (count == 0 || m == 0 || d == 0) return 0;
    acc_ctx c;
    c.im = impl_cur();
    grp_init(&c.g, 0, 0, d);
    c.acc = acc;
    c.states = states;
    c.party = party;
    c.cws = cws;
    c.count = count;
    c.d = d;
    c.m = m;
    c.domain = domain;
    size_t units = (size_t)((m + ACC_CH - 1) / ACC_CH);
    return secea__pool_run(acc_unit, &c, units, 16 * (size_t)ACC_CH * c.g.nb + 64, threads);
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
    uint64_t m, domain;
} pca_ctx;

/* leaves per hash call of conv_acc_plain: about CONV_CH blocks of Convert per call */
static size_t pca_plain_leaves(size_t nb) { return nb >= CONV_CH ? 1 : CONV_CH / nb; }

/* plain C twin of conv_acc (portable, AES-NI and ARM variants): the Convert
 * blocks of pca_plain_leaves(nb) leaves per hash call, conv holding them */
static void conv_acc_plain(const secea__dpf_impl *im, uint8_t *acc, const blk *leaves, size_t n,
                           const uint8_t *cw, size_t d, unsigned w, blk *conv)
{
    size_t nb = (d * w + 15) / 16, ch = pca_plain_leaves(nb);
    for (size_t i0 = 0; i0 < n; i0 += ch) {
        size_t c = n - i0 < ch ? n - i0 : ch;
        conv_inputs(conv, leaves + i0, c, nb);
        im->hash(conv, conv, c * nb, DPF_KV, 0);
        for (size_t i = i0; i < i0 + c; i++) {
            uint64_t tm = 0 - (leaves[i].lo & 1);
            const blk *cb = conv + (i - i0) * nb;
            if (w == 8) {
                uint64_t *a = (uint64_t *)(acc + i * d * 8);
                const uint64_t *cv = (const uint64_t *)cb, *cq = (const uint64_t *)cw;
                for (size_t k = 0; k < d; k++) a[k] += cv[k] + (cq[k] & tm);
            } else {
                uint32_t *a = (uint32_t *)(acc + i * d * 4);
                const uint32_t *cv = (const uint32_t *)cb, *cq = (const uint32_t *)cw;
                for (size_t k = 0; k < d; k++) a[k] += cv[k] + (cq[k] & (uint32_t)tm);
            }
        }
    }
}

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
    tree_t *tree = (tree_t *)p;                    p += (sizeof(tree_t) + 63) & ~(size_t)63;
    blk *bufA = (blk *)p;                          p += 16 * (PCA_LEAVES + 4);
    blk *bufB = (blk *)p;                          p += 16 * (PCA_LEAVES + 4);
    uint8_t *cw = p;                               p += (8 * d + 63) & ~(size_t)63;
    blk *conv = (blk *)p;
    uint8_t *acc = c->acc + lo * d * w;
    /* acc += (-1)^party S  ==  acc = -(-acc + S) for party 1 */
    if (c->party) negate_rows(acc, n * d, (unsigned)w);
    for (size_t key = 0; key < c->count; key++) {
        tree_load(tree, c->paths + key * c->path_stride, c->levels);
        blk *leaves = (blk *)descend(im, tree, &tree->root, 0, 0, c->levels, lo, hi, bufA, bufB);
        for (size_t i = 0; i < n; i++) leaves[i].hi ^= c->domain;
        const uint64_t *cwk = c->cws + key * d;
        if (w == 8) memcpy(cw, cwk, 8 * d);
        else
            for (size_t k = 0; k < d; k++) ((uint32_t *)cw)[k] = (uint32_t)cwk[k];
        if (im->conv_acc) im->conv_acc(acc, leaves, n, cw, d, (unsigned)w);
        else conv_acc_plain(im, acc, leaves, n, cw, d, (unsigned)w, conv);
    }
    if (c->party) negate_rows(acc, n * d, (unsigned)w);
    secea_wipe(bufA, 32 * (PCA_LEAVES + 4));
    return 0;
}

int secea_dpf_path_convert_accumulate(void *acc, const uint8_t *paths, size_t path_stride, int party,
                                      const uint64_t *cws, size_t count, uint64_t m, size_t d, unsigned group,
                                      unsigned levels, uint64_t domain, int threads)
{
    if (group > 1) return -2;
    if (count == 0 || m == 0 || d == 0) return 0;
    pca_ctx c;
    c.im = impl_cur();
    c.acc = acc;
    c.paths = paths;
    c.path_stride = path_stride;
    c.cws = cws;
    c.count = count;
    c.d = d;
    c.levels = levels;
    c.w = group == 1 ? 4 : 8;
    c.party = party & 1;
    c.m = m;
    c.domain = domain;
    size_t nb = (d * c.w + 15) / 16;
    size_t scratch = ((sizeof(tree_t) + 63) & ~(size_t)63) + 32 * (PCA_LEAVES + 4) + ((8 * d + 63) & ~(size_t)63) +
                     16 * nb * pca_plain_leaves(nb) + 64;
    size_t units = (size_t)((m + PCA_LEAVES - 1) / PCA_LEAVES);
    return secea__pool_run(pca_unit, &c, units, scratch, threads);
}

/* ------------------------------------------------------ fused dot product */

#define DOT_KG 8   /* keys per group: one pass over a table chunk serves 8 keys */

/* acc[k*d + col] += sum_x vals[k*vs + x] * table[x*d + col] (xor_mode 0), or
 * acc[k*d + col] ^= vals[k*vs + x] & table[x*d + col] with all-ones / zero
 * masks in vals (xor_mode 1, the XOR PIR), for k < DOT_KG, x < rows.  Always
 * inlined with a constant xor_mode: one loop, two specialised kernels. */
static inline __attribute__((always_inline)) void
mac_plain_mode(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table, size_t rows, size_t d,
               const int xor_mode)
{
    for (size_t x = 0; x < rows; x++) {
        const uint64_t *row = table + x * d;
        for (size_t k = 0; k < DOT_KG; k++) {
            uint64_t v = vals[k * vs + x];
            uint64_t *a = acc + k * d;
            for (size_t col = 0; col < d; col++) a[col] = xor_mode ? a[col] ^ (v & row[col]) : a[col] + v * row[col];
        }
    }
}

static void mac_plain(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table, size_t rows,
                      size_t d)
{
    mac_plain_mode(acc, vals, vs, table, rows, d, 0);
}

static void xor_plain(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table, size_t rows,
                      size_t d)
{
    mac_plain_mode(acc, vals, vs, table, rows, d, 1);
}

#if SECEA_X86
#include <immintrin.h>
#define TGT_MAC SECEA_TARGET("avx512f,avx512dq")

/* mac_plain_mode with AVX-512 (the XOR in one ternary-logic operation) */
TGT_MAC static inline __attribute__((always_inline)) void
mac_avx512_mode(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table, size_t rows, size_t d,
                const int xor_mode)
{
    for (size_t c0 = 0; c0 < d; c0 += 16) {
        size_t wdt = d - c0 < 16 ? d - c0 : 16;
        __mmask8 m0 = (__mmask8)(wdt >= 8 ? 0xFF : (1u << wdt) - 1);
        __mmask8 m1 = (__mmask8)(wdt > 8 ? (1u << (wdt - 8)) - 1 : 0);
        __m512i a[DOT_KG][2];
        for (int k = 0; k < DOT_KG; k++) {
            a[k][0] = _mm512_maskz_loadu_epi64(m0, acc + k * d + c0);
            a[k][1] = _mm512_maskz_loadu_epi64(m1, acc + k * d + c0 + 8);
        }
        for (size_t x = 0; x < rows; x++) {
            const uint64_t *row = table + x * d + c0;
            __m512i r0 = _mm512_maskz_loadu_epi64(m0, row);
            __m512i r1 = _mm512_maskz_loadu_epi64(m1, row + 8);
            for (int k = 0; k < DOT_KG; k++) {
                __m512i v = _mm512_set1_epi64((long long)vals[k * vs + x]);
                if (xor_mode) {
                    a[k][0] = _mm512_ternarylogic_epi64(a[k][0], v, r0, 0x78);     /* a ^ (v & r) */
                    a[k][1] = _mm512_ternarylogic_epi64(a[k][1], v, r1, 0x78);
                } else {
                    a[k][0] = _mm512_add_epi64(a[k][0], _mm512_mullo_epi64(v, r0));
                    a[k][1] = _mm512_add_epi64(a[k][1], _mm512_mullo_epi64(v, r1));
                }
            }
        }
        for (int k = 0; k < DOT_KG; k++) {
            _mm512_mask_storeu_epi64(acc + k * d + c0, m0, a[k][0]);
            _mm512_mask_storeu_epi64(acc + k * d + c0 + 8, m1, a[k][1]);
        }
    }
}

TGT_MAC static void mac_avx512(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table,
                               size_t rows, size_t d)
{
    mac_avx512_mode(acc, vals, vs, table, rows, d, 0);
}

TGT_MAC static void xor_avx512(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table,
                               size_t rows, size_t d)
{
    mac_avx512_mode(acc, vals, vs, table, rows, d, 1);
}
#endif

typedef struct {
    const secea__dpf_impl *im;
    grp_t g;
    const uint8_t *keys, *party;
    size_t key_bytes, count, ngroups, parts, d, topcap;
    unsigned levels, e;
    const uint64_t *table;
    uint64_t m, nleaves;
    uint64_t *partial;     /* units x DOT_KG x d */
    int mac512;
    int xor_mode;          /* path keys: XOR of the rows whose leaf has t = 1 */
} dot_ctx;

static int dot_unit(void *vctx, size_t unit, void *scratch)
{
    dot_ctx *c = vctx;
    const secea__dpf_impl *im = c->im;
    const grp_t *g = &c->g;
    size_t grp = unit / c->parts, r = unit % c->parts, d = c->d, ncw = g->ncw;
    unsigned L = c->levels;
    unsigned b = L < SUB_LOG ? L : SUB_LOG;
    size_t chunk_x = ((size_t)1 << b) * ncw;     /* x values per subtree */
    uint64_t *acc = c->partial + unit * DOT_KG * d;
    memset(acc, 0, 8 * DOT_KG * d);
    uint64_t lo, hi;
    part_range(c->nleaves, b, c->parts, r, &lo, &hi);
    if (lo >= hi) return 0;
    /* scratch: trees, top copies, ping-pong buffers, conv, values */
    uint8_t *p = scratch;
    tree_t *trees = (tree_t *)p;                      p += sizeof(tree_t) * DOT_KG;
    blk *tops = (blk *)p;                             p += 16 * c->topcap * DOT_KG;
    blk *tA = (blk *)p;                               p += 16 * c->topcap;
    blk *tB = (blk *)p;                               p += 16 * c->topcap;
    blk *sA = (blk *)p;                               p += 16 * sub_cap();
    blk *sB = (blk *)p;                               p += 16 * sub_cap();
    blk *conv = (blk *)p;                             p += 16 * (size_t)CONV_CH * g->nb;
    uint64_t *vals = (uint64_t *)p;                   p += 8 * chunk_x * DOT_KG;
    uint64_t cw[DOT_KG][DPF_MAX_EARLY_NCW];
    int party[DOT_KG];
    walk_t w[DOT_KG];
    size_t nk = c->count - grp * DOT_KG < DOT_KG ? c->count - grp * DOT_KG : DOT_KG;
    for (size_t k = 0; k < nk; k++) {
        const uint8_t *kb = c->keys + (grp * DOT_KG + k) * c->key_bytes;
        tree_load(&trees[k], kb, L);
        if (!c->xor_mode) load_fcw(g, kb + path_bytes(L), cw[k]);
        party[k] = c->party ? c->party[grp * DOT_KG + k] & 1 : 0;
        walk_begin(&w[k], im, &trees[k], lo, hi, tA, tB);
        memcpy(tops + k * c->topcap, w[k].top, 16 * (size_t)(w[k].qhi - w[k].qlo + 1));
        w[k].top = tops + k * c->topcap;
    }
    memset(vals, 0, 8 * chunk_x * DOT_KG);   /* rows of absent keys stay zero */
    for (uint64_t q = w[0].qlo; q <= w[0].qhi; q++) {
        uint64_t slo = 0, shi = 0;
        for (size_t k = 0; k < nk; k++) {
            const blk *leaves = walk_sub(&w[k], im, &trees[k], q, lo, hi, &slo, &shi, sA, sB);
            size_t cnt = (size_t)(shi - slo);
            uint64_t first = slo * ncw;
            uint64_t avail = c->m - first;
            size_t nout = avail < (uint64_t)cnt * ncw ? (size_t)avail : cnt * ncw;
            if (c->xor_mode)
                for (size_t i = 0; i < nout; i++) vals[k * chunk_x + i] = 0 - (leaves[i].lo & 1);
            else
                leaf_values(im, g, leaves, cnt, cw[k], party[k], conv, vals + k * chunk_x, nout);
        }
        uint64_t first = slo * ncw;
        uint64_t last = shi * ncw < c->m ? shi * ncw : c->m;
        size_t rows = (size_t)(last - first);
        const uint64_t *tab = c->table + first * d;
#if SECEA_X86
        if (c->mac512) {
            if (c->xor_mode) xor_avx512(acc, vals, chunk_x, tab, rows, d);
            else mac_avx512(acc, vals, chunk_x, tab, rows, d);
        } else
#endif
        if (c->xor_mode) xor_plain(acc, vals, chunk_x, tab, rows, d);
        else mac_plain(acc, vals, chunk_x, tab, rows, d);
    }
    return 0;
}

static int dot_run(uint64_t *out, const uint8_t *keys, size_t key_bytes, const uint8_t *party, size_t count,
                   unsigned levels, unsigned e, const uint64_t *table, uint64_t m, size_t d, int threads,
                   int xor_mode);

int secea_dpf_eval_full_dot(uint64_t *out, const uint8_t *keys, size_t key_bytes, const uint8_t *party,
                            size_t count, unsigned levels, unsigned e, const uint64_t *table, uint64_t m,
                            size_t d, int threads)
{
    return dot_run(out, keys, key_bytes, party, count, levels, e, table, m, d, threads, 0);
}

int secea_dpf_path_xor_rows(uint64_t *out, const uint8_t *paths, size_t path_stride, size_t count,
                            unsigned levels, const uint64_t *table, uint64_t m, size_t d, int threads)
{
    return dot_run(out, paths, path_stride, NULL, count, levels, 0, table, m, d, threads, 1);
}

static int dot_run(uint64_t *out, const uint8_t *keys, size_t key_bytes, const uint8_t *party, size_t count,
                   unsigned levels, unsigned e, const uint64_t *table, uint64_t m, size_t d, int threads,
                   int xor_mode)
{
    if (count == 0 || d == 0) return 0;
    if (e > 30 || ((size_t)1 << e) > DPF_MAX_EARLY_NCW) return -2;   /* cw[] below holds 2^e words */
    if (m == 0) {
        memset(out, 0, 8 * count * d);
        return 0;
    }
    dot_ctx c;
    memset(&c, 0, sizeof c);
    c.xor_mode = xor_mode;
    c.im = impl_cur();
    grp_init(&c.g, 0, 0, e ? (size_t)1 << e : 1);
    c.keys = keys;
    c.party = party;
    c.key_bytes = key_bytes;
    c.count = count;
    c.levels = levels;
    c.e = e;
    c.table = table;
    c.m = m;
    c.d = d;
    c.nleaves = (m + ((uint64_t)1 << e) - 1) >> e;
    c.ngroups = (count + DOT_KG - 1) / DOT_KG;
    c.parts = choose_parts(c.ngroups, threads, c.nleaves);
    c.mac512 = !secea__kernels_now()->portable && secea__kernels_now()->cpu.avx512dq;
    unsigned b = levels < SUB_LOG ? levels : SUB_LOG;
    uint64_t chunks = (c.nleaves + ((uint64_t)1 << b) - 1) >> b;
    c.topcap = walk_top_cap(chunks / c.parts + 2);
    size_t units = c.ngroups * c.parts;
    c.partial = malloc(8 * units * DOT_KG * d);
    if (!c.partial) return -1;
    size_t chunk_x = ((size_t)1 << b) * c.g.ncw;
    size_t scratch = sizeof(tree_t) * DOT_KG + 16 * c.topcap * (DOT_KG + 2) + 32 * sub_cap() +
                     16 * (size_t)CONV_CH * c.g.nb + 8 * chunk_x * DOT_KG + 64;
    int status = secea__pool_run(dot_unit, &c, units, scratch, threads);
    if (status == 0) {
        memset(out, 0, 8 * count * d);
        for (size_t u = 0; u < units; u++) {
            size_t grp = u / c.parts;
            size_t nk = count - grp * DOT_KG < DOT_KG ? count - grp * DOT_KG : DOT_KG;
            for (size_t k = 0; k < nk; k++)
                for (size_t col = 0; col < d; col++) {
                    uint64_t *o = &out[(grp * DOT_KG + k) * d + col], v = c.partial[(u * DOT_KG + k) * d + col];
                    *o = xor_mode ? *o ^ v : *o + v;
                }
        }
    }
    free(c.partial);
    return status;
}
