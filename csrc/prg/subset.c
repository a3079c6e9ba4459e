/* A random subset of fixed size that prefers marked elements, drawn from
 * given random words (secea_fast.prg.priority_subset; SecEmb's PadOrTrunc,
 * Mai et al. 2025, Algorithm 1, draws it).
 *
 * Element j < m gets the key k_j = (words[j] >> 1) | (u_j << 63), u_j = 0 if
 * j is one of the n marked items and 1 otherwise; the subset is the mp
 * elements of smallest (k_j, j) -- a uniform mp-subset of the marked ones if
 * there are at least mp of them, else all of them and a uniform subset of
 * the rest -- listed in ascending order and then permuted by the stable
 * ascending order of words[m .. m + mp) (a uniform permutation).  The
 * NumPy twin is secea_fast.prg's priority_subset(..., impl="numpy").
 *
 * Constant work: every step below runs over arrays whose sizes depend on
 * m, mp and the histogram width only, never on n, except the sort of the
 * boundary bucket's candidates (the elements whose key's top bits equal
 * those of the mp-th smallest key: a handful, expected about m / 2^HB of
 * one half of the keys, 2^HB >= m / 4).  Branches and addresses depend on the keys (the
 * histogram, the compactions, the sorts), as those of a selection in
 * NumPy do; the marked items steer only the scatter of their positions.
 * The scratch memory, which holds the secret selection, is wiped. */
#include <stdlib.h>
#include <string.h>
#include "secea.h"
#include "../common/internal.h"

#define HB_MAX 16   /* histogram bits at most: 2^16 buckets (256 KiB of counters) */

/* stable insertion sort of pairs [lo, hi) by key */
static void insertion_sort(uint64_t *key, uint32_t *val, size_t lo, size_t hi)
{
    for (size_t i = lo + 1; i < hi; i++) {
        uint64_t k = key[i];
        uint32_t v = val[i];
        size_t j = i;
        for (; j > lo && key[j - 1] > k; j--) {
            key[j] = key[j - 1];
            val[j] = val[j - 1];
        }
        key[j] = k;
        val[j] = v;
    }
}

/* Stable sort of n (key, val) pairs by key: insertion sort within the 256
 * buckets of the 8 key bits below the highest bit on which the keys differ
 * (the keys are random, so a bucket holds a few; any input is sorted
 * correctly).  tk/tv: n entries of scratch. */
static void sort_pairs(uint64_t *key, uint32_t *val, uint64_t *tk, uint32_t *tv, size_t n)
{
    if (n <= 32) {          /* the boundary candidates: a handful */
        insertion_sort(key, val, 0, n);
        return;
    }
    uint64_t diff = 0;
    for (size_t i = 1; i < n; i++) diff |= key[i] ^ key[0];
    unsigned sh = 0;
    while (sh + 8 < 64 && (diff >> (sh + 8))) sh++;
    uint32_t cnt[257];
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++) cnt[((key[i] >> sh) & 255) + 1]++;
    for (int b = 0; b < 256; b++) cnt[b + 1] += cnt[b];
    uint32_t start[257];
    memcpy(start, cnt, sizeof start);
    for (size_t i = 0; i < n; i++) {
        uint32_t d = cnt[(key[i] >> sh) & 255]++;
        tk[d] = key[i];
        tv[d] = val[i];
    }
    for (int b = 0; b < 256; b++) insertion_sort(tk, tv, start[b], start[b + 1]);
    memcpy(key, tk, 8 * n);
    memcpy(val, tv, 4 * n);
}

int secea_priority_subset(int64_t *idx, int64_t *pos, const int64_t *items, size_t n, uint64_t m, uint64_t mp,
                          const uint64_t *words)
{
    if (m < 1 || m > ((uint64_t)1 << 31) || mp < 1 || mp > m) return SECEA_EINVAL;
    unsigned hb = 1;
    while (hb < HB_MAX && ((uint64_t)4 << hb) < m) hb++;   /* 2^hb >= m / 4 */
    size_t nb = (size_t)1 << hb;
    /* scratch: key, tk (u64 m), slot (i32 m), hist (nb), sel, cv, tv (u32 m) */
    size_t bytes = 16 * (size_t)m + 4 * (size_t)m + 4 * nb + 12 * (size_t)m;
    uint8_t *mem = malloc(bytes);
    if (!mem) return SECEA_ENOMEM;
    uint64_t *key = (uint64_t *)mem, *tk = key + m;
    int32_t *slot = (int32_t *)(tk + m);
    uint32_t *hist = (uint32_t *)(slot + m), *sel = hist + nb, *cv = sel + m, *tv = cv + m;
    int rc = 0;

    memset(slot, 0xFF, 4 * (size_t)m);                 /* -1: not an item */
    for (size_t i = 0; i < n; i++) {
        if (items[i] < 0 || (uint64_t)items[i] >= m) {
            rc = SECEA_EINVAL;
            goto out;
        }
        slot[items[i]] = (int32_t)i;
    }
    if (n > m) {                          /* all in range, more than m of them: a duplicate (after the
                                           * range check, as the NumPy twin, whose error it then gives) */
        rc = 1;
        goto out;
    }
    /* keys, the histogram of their top hb bits, and the marked count
     * (duplicate items leave fewer marked slots than items) */
    memset(hist, 0, 4 * nb);
    size_t marked = 0;
    for (uint64_t j = 0; j < m; j++) {
        uint64_t u = (uint64_t)slot[j] >> 63;
        uint64_t k = (words[j] >> 1) | (u << 63);
        key[j] = k;
        hist[k >> (64 - hb)]++;
        marked += 1 - u;
    }
    if (marked != n) {
        rc = 1;
        goto out;
    }
    /* the boundary bucket B: the number of buckets whose running total stays
     * below mp (every bucket visited); `below` elements lie in buckets < B */
    uint64_t run = 0, below = 0;
    uint64_t B = 0;
    for (size_t b = 0; b < nb; b++) {
        run += hist[b];
        uint64_t lt = run < mp;
        B += lt;
        below += (run - below) & (0 - lt);
    }
    /* the sure elements (buckets < B) in ascending order, and bucket B's
     * candidates by id */
    size_t ns = 0, nc = 0;
    for (uint64_t j = 0; j < m; j++) {
        uint64_t b = key[j] >> (64 - hb);
        sel[ns] = (uint32_t)j;
        ns += b < B;
        tk[nc] = key[j];
        cv[nc] = (uint32_t)j;
        nc += b == B;
    }
    /* the mp - below smallest candidates by (key, id), then by id */
    size_t r = mp - below;
    sort_pairs(tk, cv, key, tv, nc);
    for (size_t i = 0; i < r; i++) tk[i] = cv[i];
    sort_pairs(tk, cv, key, tv, r);
    /* merged into the sure ones: the selection in ascending order, in cv */
    {
        size_t a = ns, c = r, o = ns + r;
        while (c) {
            if (a && sel[a - 1] > cv[c - 1]) sel[--o] = sel[--a];
            else sel[--o] = cv[--c];
        }
    }
    /* permuted by the stable order of words[m .. m + mp) */
    for (uint64_t i = 0; i < mp; i++) {
        key[i] = words[m + i];
        cv[i] = (uint32_t)i;
    }
    sort_pairs(key, cv, tk, tv, mp);
    for (uint64_t i = 0; i < mp; i++) {
        uint32_t j = sel[cv[i]];
        idx[i] = j;
        pos[i] = slot[j];
    }
out:
    secea_wipe(mem, bytes);
    free(mem);
    return rc;
}
