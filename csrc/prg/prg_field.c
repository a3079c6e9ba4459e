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
 * Returns the number of 8-byte words consumed, or UINT64_MAX if some base
 * entry was >= p (out is then unspecified). */
#include <string.h>
#include "secea.h"
#include "../common/internal.h"
#include "aes_internal.h"

#define PRGF_CHUNK 32768u

static void iv_add(uint8_t iv[16], uint64_t blocks)
{
    /* big-endian 128-bit add */
    for (int i = 15; i >= 0 && blocks; i--) {
        uint64_t s = (uint64_t)iv[i] + (blocks & 0xff);
        iv[i] = (uint8_t)s;
        blocks = (blocks >> 8) + (s >> 8);
    }
}


/* Keep the words x & mask that are < p, in order: dst[0..j) (returns j).
 * dst must have room for nw entries. */
static size_t compact_portable(uint64_t *dst, const uint8_t *src, size_t nw, uint64_t mask, uint64_t p)
{
    size_t j = 0;
    for (size_t w = 0; w < nw; w++) {
        uint64_t x;
        memcpy(&x, src + 8 * w, 8);
        x &= mask;
        dst[j] = x;
        j += (x < p);
    }
    return j;
}

#if SECEA_X86
#include <immintrin.h>
SECEA_TARGET("avx512f")
static size_t compact_avx512(uint64_t *dst, const uint8_t *src, size_t nw, uint64_t mask, uint64_t p)
{
    size_t j = 0, w = 0;
    const __m512i vm = _mm512_set1_epi64((long long)mask), vp = _mm512_set1_epi64((long long)p);
    for (; w + 8 <= nw; w += 8) {
        __m512i x = _mm512_and_si512(_mm512_loadu_si512((const void *)(src + 8 * w)), vm);
        __mmask8 k = _mm512_cmplt_epu64_mask(x, vp);
        /* register compress + full store: the memory form of vpcompressq
         * is microcoded and ~10x slower on Zen 4; dst has room for nw words */
        _mm512_storeu_si512((void *)(dst + j), _mm512_maskz_compress_epi64(k, x));
        j += (size_t)__builtin_popcount((unsigned)k);
    }
    return j + compact_portable(dst + j, src + 8 * w, nw - w, mask, p);
}
#endif

static size_t compact(uint64_t *dst, const uint8_t *src, size_t nw, uint64_t mask, uint64_t p)
{
#if SECEA_X86
    if (secea__kernels_now()->field_avx512)
        return compact_avx512(dst, src, nw, mask, p);
#endif
    return compact_portable(dst, src, nw, mask, p);
}

/* out[i] = ks[i] ^ in[i]; returns nonzero if check and some out[i] >= p */
static uint64_t xor_words_portable(uint64_t *out, const uint8_t *ks, const uint64_t *in, size_t n,
                                   uint64_t p, int check)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x;
        memcpy(&x, ks + 8 * i, 8);
        x ^= in[i];
        out[i] = x;
        bad |= (uint64_t)(x >= p);
    }
    return check ? bad : 0;
}

#if SECEA_X86
SECEA_TARGET("avx512f")
static uint64_t xor_words_avx512(uint64_t *out, const uint8_t *ks, const uint64_t *in, size_t n,
                                 uint64_t p, int check, int stream)
{
    const __m512i vp = _mm512_set1_epi64((long long)p);
    __mmask8 bad = 0;
    size_t i = 0;
    if (stream) {
        /* non-temporal stores from the first 64-byte boundary: the output is
         * a message far larger than the caches, not read back soon */
        for (; i < n && ((uintptr_t)(out + i) & 63); i++) {
            uint64_t x;
            memcpy(&x, ks + 8 * i, 8);
            out[i] = x ^ in[i];
            bad |= (__mmask8)(out[i] >= p);
        }
        for (; i + 8 <= n; i += 8) {
            __m512i x = _mm512_xor_si512(_mm512_loadu_si512((const void *)(ks + 8 * i)),
                                         _mm512_loadu_si512((const void *)(in + i)));
            _mm512_stream_si512((void *)(out + i), x);
            bad |= _mm512_cmpge_epu64_mask(x, vp);
        }
    }
    for (; i + 8 <= n; i += 8) {
        __m512i x = _mm512_xor_si512(_mm512_loadu_si512((const void *)(ks + 8 * i)),
                                     _mm512_loadu_si512((const void *)(in + i)));
        _mm512_storeu_si512((void *)(out + i), x);
        bad |= _mm512_cmpge_epu64_mask(x, vp);
    }
    return (check ? (uint64_t)bad : 0) | xor_words_portable(out + i, ks + 8 * i, in + i, n - i, p, check);
}
#endif

/* orders the non-temporal stores before whatever the caller does next */
static void store_fence(void)
{
#if SECEA_X86
    __builtin_ia32_sfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static uint64_t xor_words(uint64_t *out, const uint8_t *ks, const uint64_t *in, size_t n,
                          uint64_t p, int check, int stream)
{
#if SECEA_X86
    if (secea__kernels_now()->field_avx512)
        return xor_words_avx512(out, ks, in, n, p, check, stream);
#endif
    (void)stream;
    return xor_words_portable(out, ks, in, n, p, check);
}

static int any_ge(const uint64_t *a, size_t n, uint64_t p)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < n; i++) bad |= (uint64_t)(a[i] >= p);
    return bad != 0;
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
    int bad_base = 0;
    size_t k = 0;
    unsigned off = skip & 8u;
    if (!base && count) {
        /* straight from the keystream with the AES variant's sampler when it
         * has one (secea__aes128_ctr_field: the keystream never touches
         * memory), from a block boundary: a lone word at byte 8 first */
        if (off) {
            secea_aes128_ctr(buf, 16, key, ctr);
            uint64_t x;
            memcpy(&x, buf + 8, 8);
            x &= mask;
            if (x < p) out[k++] = x;
            consumed = 1;
            iv_add(ctr, 1);
            off = 0;
        }
        uint64_t used;
        if (k < count && secea__aes128_ctr_field(out + k, count - k, key, ctr, mask, p, &used) == 0) {
            consumed += used;
            k = count;
        }
    }
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
        size_t k0 = k;
        /* accepted words land in cbuf, then go to out (directly or through
         * the fused add/sub); a chunk never holds more than PRGF_CHUNK/8 */
        size_t j = compact(cbuf, src, nw, mask, p);
        size_t w = nw;
        if (j >= count - k) {
            /* stop at the count-th accepted word: find how many words that
             * took (rejected words after it stay unread, as in the fused
             * sampler: the stream position never depends on the chunking) */
            size_t want = count - k, seen = 0;
            for (w = 0; w < nw; w++) {
                uint64_t x;
                memcpy(&x, src + 8 * w, 8);
                if ((x & mask) < p && ++seen == want) { w++; break; }
            }
            j = want;
        }
        k += j;
        if (!base) {
            memcpy(out + k0, cbuf, j * 8);
        } else {
            const uint64_t *b = base + k0;
            if (any_ge(b, j, p)) { bad_base = 1; }
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
    secea_wipe(buf, sizeof buf);
    secea_wipe(cbuf, sizeof cbuf);
    return bad_base ? UINT64_MAX : consumed;
}

/* out[i] = in[i] written with non-temporal stores (xor_words against zero
 * words, PRGF_CHUNK bytes at a time): a copy into a message far larger
 * than the caches that is not read back soon (the SecEA querier's own
 * query, the others being padded by secea_prg_xor with the same flag). */
void secea_copy_stream(uint64_t *out, const uint64_t *in, size_t nwords)
{
    static const uint8_t zero[PRGF_CHUNK];
    for (size_t k = 0; k < nwords; k += PRGF_CHUNK / 8) {
        size_t nw = nwords - k < PRGF_CHUNK / 8 ? nwords - k : PRGF_CHUNK / 8;
        xor_words(out + k, zero, in + k, nw, 0, 0, 1);
    }
    store_fence();
}

/* out[0, nw) = inp XOR the keystream words from byte off (0 or 8) of block
 * ctr.  From a block boundary the bulk goes through the AES variant's fused
 * kernel when it has one (secea__aes128_ctr_xor: the keystream never touches
 * memory; any nw); otherwise, and for an odd last word, the keystream is
 * written to buf (PRGF_CHUNK bytes) and XOR'ed, a buffer at a time. */
static uint64_t prg_xor_chunk(uint64_t *out, const uint64_t *inp, size_t nw, const uint8_t *key,
                              const uint8_t *ctr, unsigned off, uint64_t p, int flags, uint8_t *buf)
{
    const int check = flags & SECEA_PRG_XOR_CHECK, stream = (flags & SECEA_PRG_XOR_STREAM) != 0;
    uint64_t bad = 0;
    uint8_t c[16];
    memcpy(c, ctr, 16);
    if (!off && nw >= 2 &&
        secea__aes128_ctr_xor((uint8_t *)out, (const uint8_t *)inp, nw / 2, key, c, p, flags, &bad) == 0) {
        if (!(nw & 1)) return bad;  /* nonzero only with SECEA_PRG_XOR_CHECK */
        iv_add(c, nw / 2);          /* the odd last word: first half of the next block */
        out += nw - 1;
        inp += nw - 1;
        nw = 1;
    }
    while (nw) {
        /* a piece ends on a block boundary unless it is the last */
        size_t n = nw < (PRGF_CHUNK - off) / 8 ? nw : (PRGF_CHUNK - off) / 8;
        size_t nbytes = (n * 8 + off + 15) & ~(size_t)15;
        secea_aes128_ctr(buf, nbytes, key, c);
        bad |= xor_words(out, buf + off, inp, n, p, check, stream);
        iv_add(c, nbytes / 16);
        out += n;
        inp += n;
        nw -= n;
        off = 0;
    }
    return bad;
}

/* out[i] = c_i XOR keystream word i, for nwords 64-bit words read from
 * byte skip (0 or 8) of block iv, where c_i = in[i], or coef * in[i] mod p
 * when coef != 1 (in reduced): AES-CTR encryption of a relayed message under
 * a one-time key (SecEA Remark 1's pad, as a stream cipher).  flags: with
 * SECEA_PRG_XOR_CHECK, returns 1 if some output word is >= p (a decrypted
 * message that is not a vector of field elements), else 0; with
 * SECEA_PRG_XOR_STREAM, out is written with non-temporal stores (a message
 * larger than the caches: the SecEA queries).  in may alias out.  A lone word
 * first when skip is 8; then the rest in one piece, or PRGF_CHUNK bytes at a
 * time when coef != 1 (the scaled input goes through sbuf). */
int secea_prg_xor(uint64_t *out, const uint64_t *in, size_t nwords, const uint8_t *key,
                  const uint8_t *iv, unsigned skip, uint64_t p, uint64_t coef, int flags)
{
    const int stream = (flags & SECEA_PRG_XOR_STREAM) != 0;
    _Alignas(64) uint64_t sbuf[PRGF_CHUNK / 8];
    _Alignas(64) uint8_t buf[PRGF_CHUNK];
    uint8_t ctr[16];
    memcpy(ctr, iv, 16);
    unsigned off = skip & 8u;
    uint64_t bad = 0;
    size_t k = 0;
    while (k < nwords) {
        size_t nw = nwords - k;
        if (off) nw = 1;
        else if (coef != 1 && nw > PRGF_CHUNK / 8) nw = PRGF_CHUNK / 8;
        const uint64_t *inp = in + k;
        if (coef != 1) {              /* fused scaling: (coef * in mod p) XOR ks */
            secea_fp_mul_scalar(sbuf, inp, coef, nw, p);
            inp = sbuf;
        }
        bad |= prg_xor_chunk(out + k, inp, nw, key, ctr, off, p, flags, buf);
        k += nw;
        iv_add(ctr, (nw * 8 + off + 15) / 16);
        off = 0;
    }
    if (stream) store_fence();     /* once per call: a fence per chunk drains the write combining buffers each time */
    secea_wipe(buf, sizeof buf);
    if (coef != 1) secea_wipe(sbuf, sizeof sbuf);
    return bad != 0;
}
