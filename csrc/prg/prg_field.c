/* Uniform field elements from the AES-128-CTR keystream (secea_fast.prg.Prg).
 *
 * The stream is read as little-endian 64-bit words starting `skip` bytes
 * (0 or 8) into the block `iv`; each word is masked to bitlen(p - 1) bits
 * and accepted iff it is below p (rejection sampling: no modulo bias).  This
 * is exactly the canonical consumption rule of Prg.field, so the result does
 * not depend on the chunk size used here.  The keystream is produced in
 * 32 KiB chunks that stay in L1/L2 and are wiped afterwards.
 *
 * base == NULL: out[i] = r_i; otherwise out[i] = coef base[i] + r_i
 * (negate = 0) or coef base[i] - r_i (negate = 1) mod p (coef < p): the
 * one-time-pad mask and unmask of a relayed message in one pass (SecEA
 * Remark 1), with the query's scaling fused in.  base may alias out.
 * Returns the number of 8-byte words consumed. */
#include <string.h>
#include "secea.h"
#include "../common/internal.h"

#define PRGF_CHUNK 32768u

static void prgf_wipe(void *p, size_t n)
{
    static void *(*const volatile memset_v)(void *, int, size_t) = memset;
    memset_v(p, 0, n);
}

static void iv_add(uint8_t iv[16], uint64_t blocks)
{
    /* big-endian 128-bit add */
    for (int i = 15; i >= 0 && blocks; i--) {
        uint64_t s = (uint64_t)iv[i] + (blocks & 0xff);
        iv[i] = (uint8_t)s;
        blocks = (blocks >> 8) + (s >> 8);
    }
}

uint64_t secea_prg_field(uint64_t *out, size_t count, const uint8_t *key, const uint8_t *iv,
                         unsigned skip, uint64_t p, const uint64_t *base, uint64_t coef, int negate)
{
    _Alignas(64) uint8_t buf[PRGF_CHUNK];
    _Alignas(64) uint64_t cbuf[PRGF_CHUNK / 8];
    uint8_t ctr[16];
    memcpy(ctr, iv, 16);
    unsigned bits = 64 - (unsigned)__builtin_clzll(p - 1 | 1);
    uint64_t mask = bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
    uint64_t consumed = 0;
    size_t k = 0;
    unsigned off = skip & 8u;
    while (k < count) {
        /* enough blocks for the words still needed (plus slack for rejections),
         * capped at one chunk */
        size_t need_words = (count - k) + (count - k) / 16 + 2;
        size_t nbytes = need_words * 8 + off;
        nbytes = (nbytes + 15) & ~(size_t)15;
        if (nbytes > PRGF_CHUNK) nbytes = PRGF_CHUNK;
        secea_aes128_ctr(buf, nbytes, key, ctr);
        size_t nw = (nbytes - off) / 8;
        const uint8_t *src = buf + off;
        size_t w = 0, k0 = k;
        uint64_t *dst = base ? cbuf : out + k;
        size_t cap = base ? (count - k < PRGF_CHUNK / 8 ? count - k : PRGF_CHUNK / 8) : count - k;
        size_t j = 0;
        for (; w < nw && j < cap; w++) {
            uint64_t x;
            memcpy(&x, src + 8 * w, 8);
            x &= mask;
            dst[j] = x;
            j += (x < p);
        }
        k += j;
        if (base) {
            /* second pass over the accepted words on the dispatched
             * (AVX-512 / AVX2) field kernels */
            const uint64_t *b = base + k0;
            if (coef != 1) {
                secea_fp_mul_scalar(out + k0, b, coef, j, p);
                b = out + k0;
            }
            if (!negate) secea_fp_add(out + k0, b, cbuf, j, p);
            else secea_fp_sub(out + k0, b, cbuf, j, p);
        }
        consumed += w;
        iv_add(ctr, nbytes / 16);
        off = 0;
    }
    prgf_wipe(buf, sizeof buf);
    prgf_wipe(cbuf, sizeof cbuf);
    return consumed;
}
