/* SecEmb's retrieval on the servers: sum_x Eval(key, x) * table[x] for each
 * key without materialising the 2^n shares (the fused dot product), and
 * the two-server XOR PIR on path keys (rows selected by the leaves' control
 * bits).  DOT_KG keys walk one leaf range together, so one pass over a
 * table chunk serves DOT_KG keys, and their subtrees' top levels descend
 * interleaved (secea__dpf_descend_multi); the multiply-accumulate is plain C
 * or AVX-512 (secea__dpf_mac512, chosen with the variant table), the XOR
 * also AVX2 where AVX-512 is missing.  secea_dpf_set_interleave(0) selects
 * the reference: one tree at a time and the plain-C XOR.  On x86 with AVX2
 * the XOR PIR's whole 256-key batches go to xor4r.c (a Four-Russians
 * product indexed by the table's bits; secea_dpf_set_xor4r(0): these
 * kernels, its twins). */
#include <stdlib.h>
#include "dpf_tree.h"

#define DOT_KG 8   /* keys per group: one pass over a table chunk serves 8 keys */
_Static_assert(DOT_KG <= MULTI_KEYS, "a key group's subtree tops descend in one interleaved batch");

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

#define TGT_AVX2 SECEA_TARGET("avx2")
#define XOR2_ROWS 48   /* rows per block: 48 x 64 words x 8 B = 24 KiB of table stay in L1 across the column passes */

/* xor_plain with AVX2 (CPUs without AVX-512): per block of rows and 4-word
 * column slice, the DOT_KG accumulators live in registers, each row slice is
 * loaded once and ANDed with each key's broadcast mask.  The masks (control
 * bits) only mask: no address depends on them. */
TGT_AVX2 static void xor_avx2(uint64_t *acc, const uint64_t *vals, size_t vs, const uint64_t *table, size_t rows,
                              size_t d)
{
    size_t d4 = d & ~(size_t)3;
    for (size_t x0 = 0; x0 < rows; x0 += XOR2_ROWS) {
        size_t xn = rows - x0 < XOR2_ROWS ? rows - x0 : XOR2_ROWS;
        for (size_t c0 = 0; c0 < d4; c0 += 4) {
            __m256i a[DOT_KG];
            for (int k = 0; k < DOT_KG; k++) a[k] = _mm256_loadu_si256((const __m256i *)(acc + k * d + c0));
            for (size_t x = x0; x < x0 + xn; x++) {
                __m256i r = _mm256_loadu_si256((const __m256i *)(table + x * d + c0));
                for (int k = 0; k < DOT_KG; k++) {
                    __m256i v = _mm256_set1_epi64x((long long)vals[k * vs + x]);
                    a[k] = _mm256_xor_si256(a[k], _mm256_and_si256(v, r));
                }
            }
            for (int k = 0; k < DOT_KG; k++) _mm256_storeu_si256((__m256i *)(acc + k * d + c0), a[k]);
        }
        for (size_t x = x0; x < x0 + xn; x++)          /* the last d mod 4 columns */
            for (int k = 0; k < DOT_KG; k++) {
                uint64_t v = vals[k * vs + x];
                for (size_t col = d4; col < d; col++) acc[k * d + col] ^= v & table[x * d + col];
            }
    }
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
    int xor256;            /* the XOR retrieval with AVX2 (xor_avx2): the CPU has it, no AVX-512, interleaved mode */
    int xor_mode;          /* path keys: XOR of the rows whose leaf has t = 1 */
    int multi;             /* the DOT_KG keys' subtree tops interleaved (secea__dpf_descend_multi) */
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
    secea__dpf_part_range(c->nleaves, b, c->parts, r, &lo, &hi);
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
    blk *mout = (blk *)p;                             p += 16 * (size_t)MULTI_OUT * DOT_KG;
    blk *mtmp = (blk *)p;                             p += 16 * (size_t)MULTI_TMP;
    uint64_t cw[DOT_KG][DPF_MAX_EARLY_NCW];
    int party[DOT_KG];
    walk_t w[DOT_KG];
    size_t nk = c->count - grp * DOT_KG < DOT_KG ? c->count - grp * DOT_KG : DOT_KG;
    for (size_t k = 0; k < nk; k++) {
        const uint8_t *kb = c->keys + (grp * DOT_KG + k) * c->key_bytes;
        secea__dpf_tree_load(&trees[k], kb, L);
        if (!c->xor_mode) secea__dpf_load_fcw(g, kb + path_bytes(L), cw[k]);
        party[k] = c->party ? c->party[grp * DOT_KG + k] & 1 : 0;
        secea__dpf_walk_begin(&w[k], im, &trees[k], lo, hi, tA, tB);
        memcpy(tops + k * c->topcap, w[k].top, 16 * (size_t)(w[k].qhi - w[k].qlo + 1));
        w[k].top = tops + k * c->topcap;
    }
    memset(vals, 0, 8 * chunk_x * DOT_KG);   /* rows of absent keys stay zero */
    for (uint64_t q = w[0].qlo; q <= w[0].qhi; q++) {
        uint64_t slo = 0, shi = 0, am = 0;
        size_t nm = 0;
        unsigned dm = 0;
        if (c->multi) {
            /* the subtrees' top levels of the nk keys interleaved, then one key at a time */
            uint64_t a = q << w[0].b, z = (q + 1) << w[0].b;
            slo = lo > a ? lo : a;
            shi = hi < z ? hi : z;
            blk start[DOT_KG];
            for (size_t k = 0; k < nk; k++) start[k] = w[k].top[q - w[k].qlo];
            dm = secea__dpf_descend_multi(im, trees, nk, start, q, w[0].D, L, slo, shi, mout, &am, &nm, mtmp);
        }
        for (size_t k = 0; k < nk; k++) {
            const blk *leaves = c->multi
                ? secea__dpf_descend(im, &trees[k], mout + k * MULTI_OUT, am, dm, L, slo, shi, sA, sB)
                : secea__dpf_walk_sub(&w[k], im, &trees[k], q, lo, hi, &slo, &shi, sA, sB);
            size_t cnt = (size_t)(shi - slo);
            uint64_t first = slo * ncw;
            uint64_t avail = c->m - first;
            size_t nout = avail < (uint64_t)cnt * ncw ? (size_t)avail : cnt * ncw;
            if (c->xor_mode)
                for (size_t i = 0; i < nout; i++) vals[k * chunk_x + i] = 0 - (leaves[i].lo & 1);
            else
                secea__dpf_leaf_values(im, g, leaves, cnt, cw[k], party[k], conv, vals + k * chunk_x, nout);
        }
        uint64_t first = slo * ncw;
        uint64_t last = shi * ncw < c->m ? shi * ncw : c->m;
        size_t rows = (size_t)(last - first);
        const uint64_t *tab = c->table + first * d;
#if SECEA_X86
        if (c->mac512) {
            if (c->xor_mode) xor_avx512(acc, vals, chunk_x, tab, rows, d);
            else mac_avx512(acc, vals, chunk_x, tab, rows, d);
        } else if (c->xor_mode && c->xor256) {
            xor_avx2(acc, vals, chunk_x, tab, rows, d);
        } else
#endif
        if (c->xor_mode) xor_plain(acc, vals, chunk_x, tab, rows, d);
        else mac_plain(acc, vals, chunk_x, tab, rows, d);
    }
    return 0;
}

static int dot_run(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                   size_t count, const uint64_t *table, uint64_t m, size_t d, int threads, int xor_mode)
{
    if (!secea__dpf_shape_ok(shape, xor_mode ? SHAPE_TREE : SHAPE_TREE | SHAPE_CW | SHAPE_CONV)) return SECEA_EINVAL;
    unsigned levels = shape->levels, e = xor_mode ? 0 : shape->early;
    /* values: scalar Z_2^64 keys, one element per leaf or 2^e per early leaf */
    if (!xor_mode && (shape->group != SECEA_DPF_GROUP_U64 || shape->ncw != ((size_t)1 << e))) return SECEA_EINVAL;
    if (count == 0 || d == 0) return 0;
    if (m == 0) {
        memset(out, 0, 8 * count * d);
        return 0;
    }
    if (xor_mode) {
        /* the Four-Russians product for whole batches; a short tail below */
        size_t head = secea__dpf_xor4r_keys(count, secea__dpf_mac512(), m, d);
        if (head) {
            int st = secea__dpf_xor4r_rows(shape, out, keys, head, table, m, d, threads);
            if (st || head == count) return st;
            keys += head * shape->stride;
            out += head * d;
            count -= head;
        }
    }
    dot_ctx c;
    memset(&c, 0, sizeof c);
    c.xor_mode = xor_mode;
    c.multi = secea__dpf_interleave();
    c.im = secea__dpf_impl_cur();
    secea__dpf_grp_init(&c.g, 0, 0, e ? (size_t)1 << e : 1);
    c.keys = keys;
    c.party = party;
    c.key_bytes = shape->stride;
    c.count = count;
    c.levels = levels;
    c.e = e;
    c.table = table;
    c.m = m;
    c.d = d;
    c.nleaves = (m + ((uint64_t)1 << e) - 1) >> e;
    c.ngroups = (count + DOT_KG - 1) / DOT_KG;
    c.parts = secea__dpf_choose_parts(c.ngroups, threads, c.nleaves);
    c.mac512 = secea__dpf_mac512();
    {
        const secea__kernels *kn = secea__kernels_now();
        c.xor256 = c.multi && !kn->portable && kn->cpu.avx2;
    }
    unsigned b = levels < SUB_LOG ? levels : SUB_LOG;
    uint64_t chunks = (c.nleaves + ((uint64_t)1 << b) - 1) >> b;
    c.topcap = walk_top_cap(chunks / c.parts + 2);
    size_t units = c.ngroups * c.parts;
    c.partial = malloc(8 * units * DOT_KG * d);
    if (!c.partial) return SECEA_ENOMEM;
    size_t chunk_x = ((size_t)1 << b) * c.g.ncw;
    size_t scratch = sizeof(tree_t) * DOT_KG + 16 * c.topcap * (DOT_KG + 2) + 32 * sub_cap() +
                     16 * (size_t)CONV_CH * c.g.nb + 8 * chunk_x * DOT_KG +
                     16 * ((size_t)MULTI_OUT * DOT_KG + MULTI_TMP) + 64;
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

int secea_dpf_eval_full_dot(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *keys, const uint8_t *party,
                            size_t count, const uint64_t *table, uint64_t m, size_t d, int threads)
{
    return dot_run(shape, out, keys, party, count, table, m, d, threads, 0);
}

int secea_dpf_path_xor_rows(const secea_dpf_shape *shape, uint64_t *out, const uint8_t *paths, size_t count,
                            const uint64_t *table, uint64_t m, size_t d, int threads)
{
    return dot_run(shape, out, paths, NULL, count, table, m, d, threads, 1);
}
