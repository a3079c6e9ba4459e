/* DPF primitives, portable constant-time variant.
 *
 * AES is the bitsliced constant-time AES-128 of csrc/prg/aes_portable.c (no
 * tables, no key- or data-dependent branches or addresses), called in ECB
 * mode on batches of sigma(x); the feed-forward and the control-bit
 * corrections use masks (t -> 0 - t), never branches. */
#include <string.h>
#include "dpf_internal.h"
#include "../prg/aes_internal.h"

typedef secea__dpf_blk blk;

/* blocks per AES call: each call bitslices the two round-key sets anew
 * (about 0.18 us), 6% of a 64-block call's time and 1.5% of a 256-block one;
 * the 2^20 full-domain evaluation ran 6% faster at 256 (docs/PERFORMANCE.md).
 * The three scratch arrays are 12 KB of stack. */
#define CH 256

static inline void ecb(int which, secea__dpf_blk *out, const secea__dpf_blk *in, size_t n)
{
    secea__aes_impl_portable.ecb(secea__dpf_rk[which], (uint8_t *)out, (const uint8_t *)in, n);
}

static void expand_portable(secea__dpf_blk *out, const secea__dpf_blk *in, size_t n,
                            const secea__dpf_blk cw[2])
{
    secea__dpf_blk sg[CH], hl[CH], hr[CH];
    while (n) {
        size_t m = n < CH ? n : CH;
        for (size_t i = 0; i < m; i++) {
            secea__dpf_blk s = in[i];
            s.lo &= ~(uint64_t)1;
            sg[i] = secea__dpf_sigma(s);
        }
        ecb(DPF_KL, hl, sg, m);
        ecb(DPF_KR, hr, sg, m);
        for (size_t i = 0; i < m; i++) {
            uint64_t t = 0 - (in[i].lo & 1);
            out[2 * i].lo = hl[i].lo ^ sg[i].lo ^ (cw[0].lo & t);
            out[2 * i].hi = hl[i].hi ^ sg[i].hi ^ (cw[0].hi & t);
            out[2 * i + 1].lo = hr[i].lo ^ sg[i].lo ^ (cw[1].lo & t);
            out[2 * i + 1].hi = hr[i].hi ^ sg[i].hi ^ (cw[1].hi & t);
        }
        in += m;
        out += 2 * m;
        n -= m;
    }
}

static void hash_portable(secea__dpf_blk *out, const secea__dpf_blk *in, size_t n, int which, int clear)
{
    secea__dpf_blk sg[CH];
    uint64_t keep = clear ? ~(uint64_t)1 : ~(uint64_t)0;
    while (n) {
        size_t m = n < CH ? n : CH;
        for (size_t i = 0; i < m; i++) {
            secea__dpf_blk s = in[i];
            s.lo &= keep;
            sg[i] = secea__dpf_sigma(s);
        }
        ecb(which, out, sg, m);
        for (size_t i = 0; i < m; i++) {
            out[i].lo ^= sg[i].lo;
            out[i].hi ^= sg[i].hi;
        }
        in += m;
        out += m;
        n -= m;
    }
}

static void hash_sel_portable(secea__dpf_blk *out, const secea__dpf_blk *in, const uint8_t *sel, size_t n)
{
    /* both halves, then a masked select: sel is public, but this keeps the
     * portable path free of data-dependent control flow altogether */
    secea__dpf_blk sg[CH], hl[CH], hr[CH];
    while (n) {
        size_t m = n < CH ? n : CH;
        for (size_t i = 0; i < m; i++) {
            secea__dpf_blk s = in[i];
            s.lo &= ~(uint64_t)1;
            sg[i] = secea__dpf_sigma(s);
        }
        ecb(DPF_KL, hl, sg, m);
        ecb(DPF_KR, hr, sg, m);
        for (size_t i = 0; i < m; i++) {
            uint64_t r = 0 - (uint64_t)(sel[i] & 1);
            out[i].lo = ((hl[i].lo & ~r) | (hr[i].lo & r)) ^ sg[i].lo;
            out[i].hi = ((hl[i].hi & ~r) | (hr[i].hi & r)) ^ sg[i].hi;
        }
        in += m;
        out += m;
        sel += m;
        n -= m;
    }
}

/* the slots without special code here: the plain-C conversions of
 * convert_hashed.c on this variant's own hash */

static void conv_u64_portable(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[2], int party,
                         int words)
{
    secea__dpf_conv_u64_hashed(hash_portable, out, leaves, n, cw, party, words);
}

static void conv_u64_vec_portable(uint64_t *out, const blk *leaves, size_t n, const uint64_t *cw, size_t d,
                             int party, int accumulate)
{
    secea__dpf_conv_u64_vec_hashed(hash_portable, out, leaves, n, cw, d, party, accumulate);
}

static void conv_u64x4_portable(uint64_t *out, const blk *leaves, size_t n, const uint64_t cw[4], int party)
{
    secea__dpf_conv_u64_vec_hashed(hash_portable, out, leaves, n, cw, 4, party, 0);
}

static void conv_acc_portable(void *acc, const blk *leaves, size_t n, const void *cw, size_t d, unsigned w)
{
    secea__dpf_conv_acc_hashed(hash_portable, acc, leaves, n, cw, d, w);
}

const secea__dpf_impl secea__dpf_impl_portable = {
    "portable", expand_portable, hash_portable, hash_sel_portable, conv_u64_portable, conv_u64_vec_portable,
    conv_u64x4_portable, conv_acc_portable
};
