/* The evaluator layer of the DPF family (csrc/dpf/): what key generation
 * and every evaluator share above the AES primitives of dpf_internal.h --
 * the shape checks, the groups, the correction-word layout, the tree and
 * its breadth-first walk.  One file per evaluator family uses it:
 *     keygen.c       key generation and ConvertGen
 *     eval_points.c  point evaluation, PathEval, ConvertEval
 *     eval_full.c    full-domain evaluation and leaf states
 *     aggregate.c    convert-accumulate, stored and fused (SecEmb aggregation)
 *     retrieve.c     the fused dot product and the XOR PIR (SecEmb retrieval)
 *     xor4r.c        the XOR PIR as a Four-Russians product (AVX2; retrieve.c its twin)
 *     tree.c         this header's functions; variants.c the variant tables.
 * Conventions (secea.h has the key layout):
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
 *  - early termination (Boyle et al. 2016): the tree stops e levels early
 *    and Convert of a leaf holds the 2^e outputs x = leaf * 2^e + k;
 *  - evaluation: party b outputs (-1)^b (Convert(s) + t * CW^{n+1}).
 * Constant time: key generation selects with masks derived from alpha,
 * never branches on alpha, beta or seeds; evaluation corrects with masks
 * derived from t.  Only lengths, the party bit and the (public) evaluation
 * points steer control flow. */
#ifndef SECEA_DPF_TREE_H
#define SECEA_DPF_TREE_H
#include <string.h>
#include "secea.h"
#include "dpf_internal.h"

typedef secea__dpf_blk blk;

/* the variant table in use (fixed keys initialised) and whether the fused
 * dot product may use its AVX-512 multiply-accumulate (variants.c) */
const secea__dpf_impl *secea__dpf_impl_cur(void);
int secea__dpf_mac512(void);

/* What an entry point needs of its shape (secea.h), or'ed: */
enum {
    SHAPE_TREE = 1,     /* a tree of shape->levels levels in bodies shape->stride apart */
    SHAPE_CW = 2,       /* key bodies with their final correction word (ncw >= 1, 2^e if early) */
    SHAPE_CONV = 4,     /* a conversion into shape->group (ncw elements; 0: nothing to do) */
};
/* 1 if the shape is inside the kernels' limits for that use, else 0 */
int secea__dpf_shape_ok(const secea_dpf_shape *s, unsigned need);

/* ---------------------------------------------------------- blocks, bytes */

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

void secea__dpf_grp_init(grp_t *g, unsigned group, uint64_t p, size_t ncw);

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

/* the final correction word of a key body at p <-> ncw uint64 elements */
void secea__dpf_load_fcw(const grp_t *g, const uint8_t *p, uint64_t *cw);
void secea__dpf_store_fcw(const grp_t *g, uint8_t *p, const uint64_t *cw);
/* Convert inputs: conv[i*nb + j] = (x_i & ~1) xor j */
void secea__dpf_conv_inputs(blk *conv, const blk *x, size_t n, size_t nb);

/* ------------------------------------------------------------- the tree */

#define SUB_LOG 12        /* subtree height: 2^12 leaves = 64 KiB per ping-pong buffer (L2) */
#define CONV_CH 256       /* leaves per conversion batch */

typedef struct {
    unsigned levels;
    blk root;
    blk cw[64][2];   /* per level: s_CW | t_CW^L, s_CW | t_CW^R */
} tree_t;

void secea__dpf_tree_load(tree_t *t, const uint8_t *body, unsigned levels);
/* nodes[0..] are the nodes of depth d0 with indices a0, a0 + 1, ...;
 * returns the nodes of depth d1 with indices [lo, hi) (descendants of the
 * given ones), expanding only what is needed.  bufA/bufB hold hi - lo + 4
 * blocks each and must differ from nodes. */
const blk *secea__dpf_descend(const secea__dpf_impl *im, const tree_t *t, const blk *nodes, uint64_t a0,
                              unsigned d0, unsigned d1, uint64_t lo, uint64_t hi, blk *bufA, blk *bufB);
/* Interleaved descent of several trees (the latency-bound top levels).
 * nk <= MULTI_KEYS trees t[0..nk) start from one node each, start[k], all
 * with index a0 at depth d0, toward the nodes of depth d1 with indices
 * [lo, hi) (descendants of a0).  While a level has fewer than MULTI_MIN
 * parent nodes per tree, the level of all nk trees is hashed in one batch
 * (the variant's hash slot under k_L, then k_R: nk times the blocks in
 * flight), then corrected in C; it stops at the first wider level.  Returns
 * the depth dm reached; tree k's nodes of depth dm covering [lo, hi), *nm of
 * them with indices *am, *am + 1, ..., are at out + k * MULTI_OUT, ready for
 * secea__dpf_descend(..., out + k * MULTI_OUT, *am, dm, d1, lo, hi, ...).
 * tmp: MULTI_TMP blocks.  Bit-identical to secea__dpf_descend per tree. */
#define MULTI_KEYS 8
#define MULTI_MIN 16
#define MULTI_OUT (2 * MULTI_MIN + 2)
#define MULTI_TMP (MULTI_KEYS * 7 * MULTI_MIN)
unsigned secea__dpf_descend_multi(const secea__dpf_impl *im, const tree_t *t, size_t nk, const blk *start,
                                  uint64_t a0, unsigned d0, unsigned d1, uint64_t lo, uint64_t hi, blk *out,
                                  uint64_t *am, size_t *nm, blk *tmp);
/* 1 (the default) if the server kernels (path_xor_rows, eval_full_dot,
 * path_convert_accumulate) descend their top levels interleaved, 0 for the
 * reference walk of one tree at a time (secea_dpf_set_interleave) */
int secea__dpf_interleave(void);
/* The XOR retrieval as a transposed Four-Russians product (xor4r.c): how
 * many of count keys secea_dpf_path_xor_rows gives it (the first ones; the
 * rest take the masked XOR): 0 unless the secea_dpf_set_xor4r mode is on,
 * the interleaved walk on, the CPU has AVX2 and the backend is not
 * portable and the table's bit index (as many bytes as the m x d table)
 * stays within 256 MiB; in auto mode also 0 with the AVX-512
 * multiply-accumulate, and a last batch of too few keys left out.  Then the
 * kernel itself (arguments as secea_dpf_path_xor_rows, d >= 1). */
size_t secea__dpf_xor4r_keys(size_t count, int mac512, uint64_t m, size_t d);
int secea__dpf_xor4r_rows(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *paths, size_t count,
                          const uint64_t *table, uint64_t m, size_t d, int threads);

/* Writes the values of leaves[0..cnt) (out[i*ncw + k]), at most nout of
 * them.  conv: CONV_CH * nb blocks of scratch. */
void secea__dpf_leaf_values(const secea__dpf_impl *im, const grp_t *g, const blk *leaves, size_t cnt,
                            const uint64_t *cw, int party, blk *conv, uint64_t *out, size_t nout);

/* A leaf-range walker: top nodes (depth L - b) for [lo, hi), then subtrees. */
typedef struct {
    unsigned b, D;        /* subtree height, depth of the top nodes */
    uint64_t qlo, qhi;    /* top node indices [qlo, qhi] */
    const blk *top;
} walk_t;

static inline size_t walk_top_cap(uint64_t chunks) { return (size_t)chunks + 4; }
static inline size_t sub_cap(void) { return ((size_t)1 << SUB_LOG) + 4; }

void secea__dpf_walk_begin(walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t lo, uint64_t hi,
                           blk *topA, blk *topB);
/* leaves [slo, shi) of top node q */
const blk *secea__dpf_walk_sub(const walk_t *w, const secea__dpf_impl *im, const tree_t *t, uint64_t q,
                               uint64_t lo, uint64_t hi, uint64_t *slo, uint64_t *shi, blk *subA, blk *subB);
/* split [0, nleaves) into `parts` chunk-aligned ranges; part r -> [lo, hi) */
void secea__dpf_part_range(uint64_t nleaves, unsigned b, size_t parts, size_t r, uint64_t *lo, uint64_t *hi);
size_t secea__dpf_choose_parts(size_t count, int threads, uint64_t nleaves);

/* ------------------------------------------------ interleaved point walks */

/* Walks n paths down their own keys' trees at once (eval_points.c; the x86
 * variants in points_x86.c): st[i] = the state (seed | t) of the leaf that
 * path i reaches in the tree whose body starts at kp[i] (levels L >= 1):
 * bit dep of xr[i] is the branch taken at tree level dep + 1 (1: right),
 * bit dep of tsel[i] the t_CW of that branch (t_CW^R if right, else
 * t_CW^L).  The branches are public (evaluation points). */
typedef void (*secea__dpf_walk_fn)(blk *st, const uint8_t *const *kp, const uint64_t *xr, const uint64_t *tsel,
                                   size_t n, unsigned levels);
/* the interleaved walk of variant im, or NULL (then the walk runs on
 * im->hash_sel, one call per level) */
secea__dpf_walk_fn secea__dpf_points_walk_for(const secea__dpf_impl *im);

#endif
