/* The conversion slots of the DPF variant tables in plain C, on a variant's
 * own fixed-key hash (dpf_internal.h): what the portable, AES-NI and ARM
 * variants put in the slots they have no special code for, so every table
 * is complete and callers never test for a missing slot.
 *
 * Convert(s) of a leaf is the stream of blocks H_V((s & ~1) xor j) (the
 * caller has XORed the conversion domain into the high word); element k of
 * w bytes is bytes [k w, (k + 1) w) of that stream.  Blocks are hashed
 * HCH at a time into a stack buffer: several leaves per call when a leaf
 * needs fewer, a leaf in several calls when it needs more. */
#include "dpf_internal.h"

typedef secea__dpf_blk blk;

#define HCH 256     /* blocks per hash call (4 KiB of stack) */

typedef struct {
    size_t leaf, j0, c;     /* Convert blocks j0 .. j0 + c - 1 of leaves[leaf] */
} seg_t;

/* The rows of hashed_convert when a leaf's nb Convert blocks fit in one hash
 * call (nb <= HCH, every payload the protocols use): whole leaves per call,
 * one loop per row.  Always inlined with w and accumulate constant, so each
 * of the four callers gets straight loops: the general segmented scheme
 * below (a segment record per leaf, the width and accumulate tests inside
 * the per-word loop) cost the early-terminated full-domain evaluation over
 * Z_2^64 (8 words per leaf) 18% more instructions in its conversion than
 * this shape did before the variant tables were completed. */
static inline __attribute__((always_inline)) void whole_leaves(secea__dpf_hash_fn hash, uint8_t *out,
                                                               const blk *leaves, size_t n, const uint8_t *cw,
                                                               size_t d, size_t nb, blk *conv, unsigned w,
                                                               uint64_t neg, int accumulate)
{
    size_t lpc = HCH / nb;          /* leaves per hash call */
    for (size_t i0 = 0; i0 < n; i0 += lpc) {
        size_t c = n - i0 < lpc ? n - i0 : lpc;
        if (nb == 1) {
            hash(conv, leaves + i0, c, DPF_KV, 1);
        } else {
            for (size_t i = 0; i < c; i++) {
                blk s = leaves[i0 + i];
                s.lo &= ~(uint64_t)1;
                for (size_t q = 0; q < nb; q++) {
                    conv[i * nb + q].lo = s.lo ^ (uint64_t)q;
                    conv[i * nb + q].hi = s.hi;
                }
            }
            hash(conv, conv, c * nb, DPF_KV, 0);
        }
        for (size_t i = 0; i < c; i++) {
            uint64_t tm = 0 - (leaves[i0 + i].lo & 1);
            if (w == 8) {
                uint64_t *o = (uint64_t *)out + (i0 + i) * d;
                const uint64_t *cv = (const uint64_t *)(conv + i * nb), *cq = (const uint64_t *)cw;
                if (accumulate)
                    for (size_t k = 0; k < d; k++) o[k] += ((cv[k] + (cq[k] & tm)) ^ neg) - neg;
                else
                    for (size_t k = 0; k < d; k++) o[k] = ((cv[k] + (cq[k] & tm)) ^ neg) - neg;
            } else {
                uint32_t *o = (uint32_t *)out + (i0 + i) * d;
                const uint32_t *cv = (const uint32_t *)(conv + i * nb), *cq = (const uint32_t *)cw;
                uint32_t n32 = (uint32_t)neg, t32 = (uint32_t)tm;
                if (accumulate)
                    for (size_t k = 0; k < d; k++) o[k] += ((cv[k] + (cq[k] & t32)) ^ n32) - n32;
                else
                    for (size_t k = 0; k < d; k++) o[k] = ((cv[k] + (cq[k] & t32)) ^ n32) - n32;
            }
        }
    }
}

/* out row i (d elements of w bytes at out + i d w):
 *     v = word_k(Convert(s_i)) + t_i * cw[k]  (mod 2^(8w)),  v = (v ^ neg) - neg,
 *     out = v, or out += v if accumulate. */
static void hashed_convert(secea__dpf_hash_fn hash, uint8_t *out, const blk *leaves, size_t n,
                           const uint8_t *cw, size_t d, unsigned w, uint64_t neg, int accumulate)
{
    size_t per = 16 / w, nb = (d + per - 1) / per;
    blk conv[HCH];
    if (nb <= HCH) {
        if (w == 8 && !accumulate) whole_leaves(hash, out, leaves, n, cw, d, nb, conv, 8, neg, 0);
        else if (w == 8) whole_leaves(hash, out, leaves, n, cw, d, nb, conv, 8, neg, 1);
        else if (!accumulate) whole_leaves(hash, out, leaves, n, cw, d, nb, conv, 4, neg, 0);
        else whole_leaves(hash, out, leaves, n, cw, d, nb, conv, 4, neg, 1);
        secea_wipe(conv, sizeof conv);
        return;
    }
    seg_t seg[HCH];
    size_t i = 0, j = 0;            /* next block to schedule: block j of leaf i */
    while (i < n) {
        size_t used = 0, nseg = 0;
        while (i < n && used < HCH) {
            size_t c = nb - j < HCH - used ? nb - j : HCH - used;
            blk s = leaves[i];
            s.lo &= ~(uint64_t)1;
            for (size_t q = 0; q < c; q++) {
                conv[used + q].lo = s.lo ^ (uint64_t)(j + q);
                conv[used + q].hi = s.hi;
            }
            seg[nseg].leaf = i;
            seg[nseg].j0 = j;
            seg[nseg].c = c;
            nseg++;
            used += c;
            j += c;
            if (j == nb) {
                j = 0;
                i++;
            }
        }
        hash(conv, conv, used, DPF_KV, 0);
        const blk *cb = conv;
        for (size_t q = 0; q < nseg; q++) {
            size_t k0 = per * seg[q].j0, k1 = per * (seg[q].j0 + seg[q].c);
            if (k1 > d) k1 = d;
            uint64_t tm = 0 - (leaves[seg[q].leaf].lo & 1);
            if (w == 8) {
                uint64_t *o = (uint64_t *)out + seg[q].leaf * d;
                const uint64_t *cv = (const uint64_t *)cb, *cq = (const uint64_t *)cw;
                for (size_t k = k0; k < k1; k++) {
                    uint64_t v = ((cv[k - k0] + (cq[k] & tm)) ^ neg) - neg;
                    o[k] = accumulate ? o[k] + v : v;
                }
            } else {
                uint32_t *o = (uint32_t *)out + seg[q].leaf * d;
                const uint32_t *cv = (const uint32_t *)cb, *cq = (const uint32_t *)cw;
                uint32_t n32 = (uint32_t)neg;
                for (size_t k = k0; k < k1; k++) {
                    uint32_t v = ((cv[k - k0] + (cq[k] & (uint32_t)tm)) ^ n32) - n32;
                    o[k] = accumulate ? o[k] + v : v;
                }
            }
            cb += seg[q].c;
        }
    }
    secea_wipe(conv, sizeof conv);
}

void secea__dpf_conv_u64_hashed(secea__dpf_hash_fn hash, uint64_t *out, const blk *leaves, size_t n,
                                const uint64_t cw[2], int party, int words)
{
    hashed_convert(hash, (uint8_t *)out, leaves, n, (const uint8_t *)cw, (size_t)words, 8,
                   0 - (uint64_t)(party & 1), 0);
}

void secea__dpf_conv_u64_vec_hashed(secea__dpf_hash_fn hash, uint64_t *out, const blk *leaves, size_t n,
                                    const uint64_t *cw, size_t d, int party, int accumulate)
{
    hashed_convert(hash, (uint8_t *)out, leaves, n, (const uint8_t *)cw, d, 8, 0 - (uint64_t)(party & 1),
                   accumulate);
}

void secea__dpf_conv_acc_hashed(secea__dpf_hash_fn hash, void *acc, const blk *leaves, size_t n, const void *cw,
                                size_t d, unsigned w)
{
    hashed_convert(hash, acc, leaves, n, cw, d, w, 0, 1);
}
