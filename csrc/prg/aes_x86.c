/* AES-128 (FIPS-197) with the x86 AES instructions: "aesni" (128-bit AES-NI,
 * 8 blocks in flight) and "vaes" (VAES on AVX-512 zmm registers, 4 blocks
 * per register, 8 registers = 32 blocks in flight).
 *
 * The key schedule uses AESKEYGENASSIST (FIPS-197 Sec. 5.2 KeyExpansion).
 * CTR mode (NIST SP 800-38A Sec. 6.5, Appendix B.1 standard incrementing
 * function applied to the whole 128-bit block): the counter is kept as
 * little-endian (lo, hi) qword pairs, incremented with a 64-bit vector add
 * and byte-reversed per 128-bit lane with PSHUFB to get the big-endian
 * counter block.  The driver (aes_dispatch.c) guarantees that the low word
 * does not wrap within one call, so the carry into the high word is never
 * needed here.  Long VAES requests also skip the first AES round with a
 * per-call table of first-round differences (see ctr_vaes).
 *
 * The AES instructions are constant time; there are no data-dependent
 * branches or addresses.  Every function using intrinsics carries a target
 * attribute, so this file compiles with baseline flags. */
#include "aes_internal.h"
#include "secea.h"

#if SECEA_X86
#include <immintrin.h>
#include <wmmintrin.h>

#define TGT_NI SECEA_TARGET("aes,sse4.1")
#define TGT_VAES SECEA_TARGET("aes,sse4.1,avx2,vaes,avx512f,avx512bw")

/* ---------------------------------------------------------------- keys */

TGT_NI static inline __m128i expand_step(__m128i k, __m128i g)
{
    g = _mm_shuffle_epi32(g, 0xFF);             /* SubWord(RotWord(w3)) ^ Rcon */
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));  /* prefix XOR of w0..w3 */
    k = _mm_xor_si128(k, _mm_slli_si128(k, 8));
    return _mm_xor_si128(k, g);
}

TGT_NI static void expand_aesni(uint8_t *rk, const uint8_t *key)
{
    __m128i k = _mm_loadu_si128((const __m128i *)key);
    __m128i *o = (__m128i *)rk;
    _mm_storeu_si128(o + 0, k);
#define STEP(i, rc)                                              \
    k = expand_step(k, _mm_aeskeygenassist_si128(k, rc));        \
    _mm_storeu_si128(o + (i), k);
    STEP(1, 0x01) STEP(2, 0x02) STEP(3, 0x04) STEP(4, 0x08) STEP(5, 0x10)
    STEP(6, 0x20) STEP(7, 0x40) STEP(8, 0x80) STEP(9, 0x1B) STEP(10, 0x36)
#undef STEP
}

/* ---------------------------------------------------------------- AES-NI */

#define NI_ROUNDS8(b, rk)                                                     \
    do {                                                                      \
        for (int r_ = 1; r_ < 10; r_++) {                                     \
            for (int j_ = 0; j_ < 8; j_++) (b)[j_] = _mm_aesenc_si128((b)[j_], (rk)[r_]); \
        }                                                                     \
        for (int j_ = 0; j_ < 8; j_++) (b)[j_] = _mm_aesenclast_si128((b)[j_], (rk)[10]); \
    } while (0)

TGT_NI static inline __m128i ni_encrypt1(__m128i x, const __m128i rk[11])
{
    x = _mm_xor_si128(x, rk[0]);
    for (int r = 1; r < 10; r++) x = _mm_aesenc_si128(x, rk[r]);
    return _mm_aesenclast_si128(x, rk[10]);
}

TGT_NI static void ctr_aesni(const uint8_t *rkb, uint8_t *out, size_t n,
                             uint64_t hi, uint64_t lo)
{
    __m128i rk[11];
    for (int i = 0; i < 11; i++) rk[i] = _mm_loadu_si128((const __m128i *)rkb + i);
    const __m128i rev = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m128i one = _mm_set_epi64x(0, 1);
    __m128i ctr = _mm_set_epi64x((long long)hi, (long long)lo);
    while (n >= 8) {
        __m128i b[8], c = ctr;
        for (int j = 0; j < 8; j++) {
            b[j] = _mm_xor_si128(_mm_shuffle_epi8(c, rev), rk[0]);
            c = _mm_add_epi64(c, one);
        }
        ctr = c;
        NI_ROUNDS8(b, rk);
        for (int j = 0; j < 8; j++) _mm_storeu_si128((__m128i *)out + j, b[j]);
        out += 128;
        n -= 8;
    }
    while (n--) {
        _mm_storeu_si128((__m128i *)out, ni_encrypt1(_mm_shuffle_epi8(ctr, rev), rk));
        ctr = _mm_add_epi64(ctr, one);
        out += 16;
    }
}

TGT_NI static void ecb_aesni(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t n)
{
    __m128i rk[11];
    for (int i = 0; i < 11; i++) rk[i] = _mm_loadu_si128((const __m128i *)rkb + i);
    while (n >= 8) {
        __m128i b[8];
        for (int j = 0; j < 8; j++)
            b[j] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)in + j), rk[0]);
        NI_ROUNDS8(b, rk);
        for (int j = 0; j < 8; j++) _mm_storeu_si128((__m128i *)out + j, b[j]);
        in += 128;
        out += 128;
        n -= 8;
    }
    while (n--) {
        _mm_storeu_si128((__m128i *)out, ni_encrypt1(_mm_loadu_si128((const __m128i *)in), rk));
        in += 16;
        out += 16;
    }
}

/* ---------------------------------------------------------------- VAES */

#define VW 8  /* zmm registers in flight per iteration (4 blocks each) */

TGT_VAES static inline __m512i v_encrypt1(__m512i x, const __m512i rk[11])
{
    x = _mm512_xor_si512(x, rk[0]);
    for (int r = 1; r < 10; r++) x = _mm512_aesenc_epi128(x, rk[r]);
    return _mm512_aesenclast_epi128(x, rk[10]);
}

/* Where a zmm of keystream (4 blocks, 8 little-endian 64-bit words) goes,
 * by mode: SINK_KS stores it as is (ctr); SINK_XOR (fused encryption,
 * ctr_xor) XORs the input first, checks the words against p and writes with
 * non-temporal stores when asked and out is 64-byte aligned; SINK_FIELD
 * (rejection sampling, ctr_field) keeps the words x & mask that are < p, in
 * order, until `need` are kept.  The fused forms never write the keystream
 * to memory: the keystream-buffer route spends as long again re-reading it. */
enum { SINK_KS, SINK_XOR, SINK_FIELD };

typedef struct {
    const uint8_t *in;          /* SINK_XOR: the input, advancing with out */
    int stream, check;
    __m512i vp, vmask;
    __mmask8 bad;
    uint64_t *fout;             /* SINK_FIELD: next kept word goes here */
    size_t need, consumed;      /* words still to keep; words read so far */
} vaes_sink;

/* SINK_FIELD: the words of x in lanes `valid` */
TGT_VAES static inline __attribute__((always_inline)) void
vaes_keep(vaes_sink *k, __m512i x, __mmask8 valid)
{
    if (!k->need) return;
    x = _mm512_and_si512(x, k->vmask);
    __mmask8 m = _mm512_mask_cmplt_epu64_mask(valid, x, k->vp);
    if (m == 0xFF && k->need > 8) {              /* all kept: the usual case for p near 2^bits */
        _mm512_storeu_si512((void *)k->fout, x);
        k->fout += 8;
        k->need -= 8;
        k->consumed += 8;
        return;
    }
    size_t c = (size_t)__builtin_popcount((unsigned)m);
    __m512i kept = _mm512_maskz_compress_epi64(m, x);     /* register form: fast on Zen 4 */
    if (c < k->need) {
        _mm512_mask_storeu_epi64((void *)k->fout, (__mmask8)((1u << c) - 1), kept);
        k->fout += c;
        k->need -= c;
        k->consumed += (size_t)__builtin_popcount((unsigned)valid);
        return;
    }
    /* the need-th kept word ends the request: lanes up to its lane are read */
    unsigned last = 0, seen = 0;
    for (unsigned i = 0; i < 8; i++)
        if ((m >> i) & 1 && ++seen == k->need) { last = i; break; }
    _mm512_mask_storeu_epi64((void *)k->fout, (__mmask8)((1u << k->need) - 1), kept);
    k->fout += k->need;
    k->need = 0;
    k->consumed += last + 1;
}

TGT_VAES static inline __attribute__((always_inline)) void
vaes_emit(uint8_t *out, __m512i x, vaes_sink *k, const int mode, size_t at)
{
    if (mode == SINK_FIELD) {
        vaes_keep(k, x, 0xFF);
        return;
    }
    if (mode == SINK_XOR) {
        x = _mm512_xor_si512(x, _mm512_loadu_si512((const void *)(k->in + at)));
        if (k->check) k->bad |= _mm512_cmpge_epu64_mask(x, k->vp);
        if (k->stream && !((uintptr_t)(out + at) & 63)) {
            _mm512_stream_si512((void *)(out + at), x);
            return;
        }
    }
    _mm512_storeu_si512((void *)(out + at), x);
}

/* the last n < 4 blocks (2 n 64-bit lanes) */
TGT_VAES static inline __attribute__((always_inline)) void
vaes_emit_tail(uint8_t *out, __m512i x, size_t n, vaes_sink *k, const int mode)
{
    __mmask8 m = (__mmask8)((1u << (2 * n)) - 1);
    if (mode == SINK_FIELD) {
        vaes_keep(k, x, m);
        return;
    }
    if (mode == SINK_XOR) {
        x = _mm512_xor_si512(x, _mm512_maskz_loadu_epi64(m, (const void *)k->in));
        if (k->check) k->bad |= _mm512_mask_cmpge_epu64_mask(m, x, k->vp);
    }
    _mm512_mask_storeu_epi64((void *)out, m, x);
}

/* out (and SINK_XOR's input) past `bytes` of keystream; SINK_FIELD has no out */
TGT_VAES static inline __attribute__((always_inline)) void
vaes_advance(uint8_t **out, vaes_sink *k, const int mode, size_t bytes)
{
    if (mode != SINK_FIELD) *out += bytes;
    if (mode == SINK_XOR) k->in += bytes;
}

/* a request is over (SINK_FIELD: enough words kept) */
#define SINK_DONE(k, mode) ((mode) == SINK_FIELD && !(k)->need)

/* Plain CTR on whole blocks: counters (hi, lo + i), no low-word wrap.
 * SINK_XOR: k->in advances with out; SINK_FIELD stops once enough words
 * are kept (out is not used). */
TGT_VAES static inline __attribute__((always_inline)) void
vaes_ctr_plain(const __m512i rk[11], uint8_t *out, size_t n, uint64_t hi, uint64_t lo,
               vaes_sink *k, const int mode)
{
    const __m512i rev = _mm512_broadcast_i32x4(
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const __m512i four = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
    /* lanes: counters lo+0 .. lo+3 as (lo, hi) qword pairs */
    __m512i ctr = _mm512_add_epi64(
        _mm512_broadcast_i32x4(_mm_set_epi64x((long long)hi, (long long)lo)),
        _mm512_set_epi64(0, 3, 0, 2, 0, 1, 0, 0));
    while (n >= 4 * VW) {
        __m512i b[VW], c = ctr;
        for (int j = 0; j < VW; j++) {
            b[j] = _mm512_xor_si512(_mm512_shuffle_epi8(c, rev), rk[0]);
            c = _mm512_add_epi64(c, four);
        }
        ctr = c;
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < VW; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
        for (int j = 0; j < VW; j++) vaes_emit(out, _mm512_aesenclast_epi128(b[j], rk[10]), k, mode, 64 * (size_t)j);
        vaes_advance(&out, k, mode, 64 * VW);
        if (SINK_DONE(k, mode)) return;
        n -= 4 * VW;
    }
    while (n >= 4) {
        vaes_emit(out, v_encrypt1(_mm512_shuffle_epi8(ctr, rev), rk), k, mode, 0);
        ctr = _mm512_add_epi64(ctr, four);
        vaes_advance(&out, k, mode, 64);
        if (SINK_DONE(k, mode)) return;
        n -= 4;
    }
    if (n) {
        vaes_emit_tail(out, v_encrypt1(_mm512_shuffle_epi8(ctr, rev), rk), n, k, mode);
        vaes_advance(&out, k, mode, 16 * n);        /* the table loop may follow */
    }
}

/* Long requests skip the first AES round.  Write a counter block as U || b
 * (U the top 15 bytes, b the last byte).  SubBytes acts bytewise and the rest
 * of a round is affine, so the state after round 1 is
 *     R1(U || b) = R1(U || 0) ^ D[b],   D[b] = R1(0 || b) ^ R1(0 || 0),
 * with D independent of U.  D (256 x 16 bytes) is built once per call; R1(U||0)
 * once per 256 counters.  Each block then needs 9 AES instructions instead
 * of 10.  The table is read sequentially, at addresses given by the (public)
 * counter only, never by key-dependent data. */
#define VAES_TABLE_MIN 1024  /* blocks; below this the plain loop is used: the table costs 256 rounds to build */

TGT_VAES static inline __attribute__((always_inline)) void
vaes_ctr(const uint8_t *rkb, uint8_t *out, size_t n, uint64_t hi, uint64_t lo, vaes_sink *k,
         const int mode, int table)
{
    __m512i rk[11];
    for (int i = 0; i < 11; i++)
        rk[i] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)rkb + i));
    if (n < VAES_TABLE_MIN || !table) {
        vaes_ctr_plain(rk, out, n, hi, lo, k, mode);
        return;
    }
    const __m128i rev128 = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i rev = _mm512_broadcast_i32x4(rev128);
    _Alignas(64) __m512i D[64];
    {
        __m512i r0 = _mm512_aesenc_epi128(rk[0], rk[1]);        /* R1(0) */
        __m512i c = _mm512_set_epi64(0, 3, 0, 2, 0, 1, 0, 0);
        const __m512i four = _mm512_set_epi64(0, 4, 0, 4, 0, 4, 0, 4);
        for (int i = 0; i < 64; i++) {
            __m512i x = _mm512_xor_si512(_mm512_shuffle_epi8(c, rev), rk[0]);
            D[i] = _mm512_xor_si512(_mm512_aesenc_epi128(x, rk[1]), r0);
            c = _mm512_add_epi64(c, four);
        }
    }
    /* align the counter to a multiple of 4*VW (divides 256) */
    size_t pre = (size_t)((0 - lo) & (4 * VW - 1));
    vaes_ctr_plain(rk, out, pre, hi, lo, k, mode);
    if (SINK_DONE(k, mode)) goto wipe;
    if (mode != SINK_FIELD) out += 16 * pre;
    n -= pre;
    lo += pre;
    __m512i base = _mm512_setzero_si512();
    int have_base = 0;
    while (n >= 4 * VW) {
        unsigned b = (unsigned)(lo & 255);
        if (b == 0 || !have_base) {
            __m128i u = _mm_set_epi64x((long long)hi, (long long)(lo & ~(uint64_t)255));
            u = _mm_aesenc_si128(_mm_xor_si128(_mm_shuffle_epi8(u, rev128),
                                               _mm512_castsi512_si128(rk[0])),
                                 _mm512_castsi512_si128(rk[1]));
            base = _mm512_broadcast_i32x4(u);
            have_base = 1;
        }
        const __m512i *d = D + b / 4;
        __m512i s[VW];
        for (int j = 0; j < VW; j++) s[j] = _mm512_xor_si512(base, _mm512_load_si512((const void *)(d + j)));
        for (int r = 2; r < 10; r++)
            for (int j = 0; j < VW; j++) s[j] = _mm512_aesenc_epi128(s[j], rk[r]);
        for (int j = 0; j < VW; j++) vaes_emit(out, _mm512_aesenclast_epi128(s[j], rk[10]), k, mode, 64 * (size_t)j);
        vaes_advance(&out, k, mode, 64 * VW);
        n -= 4 * VW;
        lo += 4 * VW;
        if (SINK_DONE(k, mode)) break;          /* through the table wipe below */
    }
    if (!SINK_DONE(k, mode)) vaes_ctr_plain(rk, out, n, hi, lo, k, mode);
wipe:
    for (int i = 0; i < 64; i++) D[i] = _mm512_setzero_si512();
    __asm__ __volatile__("" : : "r"(D) : "memory");
}

TGT_VAES static void ctr_vaes(const uint8_t *rkb, uint8_t *out, size_t n, uint64_t hi, uint64_t lo)
{
    vaes_ctr(rkb, out, n, hi, lo, NULL, SINK_KS, 1);
}

/* fused CTR encryption (aes_internal.h, ctr_xor): 2.3-2.6 cycles per block
 * against 4.1-4.6 for the keystream written to a buffer and XOR'ed after
 * (16 MB messages and 128 KB ones, Zen 4, where VAES alone takes 2.25).
 * With SECEA_PRG_XOR_STREAM and out 16-byte aligned every full 64-byte
 * store from out's first 64-byte boundary on is non-temporal (the masked
 * store of a last partial zmm is not); an out that is only 8-byte aligned
 * gets ordinary stores, still faster here than the buffer route's streamed
 * ones (16 MB: 1.04-1.15 against 1.50 ms). */
TGT_VAES static uint64_t ctr_xor_vaes(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t n,
                                      uint64_t hi, uint64_t lo, uint64_t p, int flags)
{
    vaes_sink k;
    k.in = in;
    k.stream = (flags & SECEA_PRG_XOR_STREAM) != 0;
    k.check = (flags & SECEA_PRG_XOR_CHECK) != 0;
    k.vp = _mm512_set1_epi64((long long)p);
    k.bad = 0;
    if (k.stream && !((uintptr_t)out & 15) && ((uintptr_t)out & 63)) {
        /* non-temporal stores need 64-byte aligned zmm stores: the first
         * blocks up to out's next 64-byte boundary go with ordinary stores.
         * The table loop then keeps that alignment only if it starts at a
         * counter of the same phase mod 4 (its counters are multiples of
         * 32); otherwise the plain loop (one AES round more) runs it all. */
        size_t head = (size_t)(64 - ((uintptr_t)out & 63)) / 16;
        if (head > n) head = n;
        vaes_ctr(rkb, out, head, hi, lo, &k, SINK_XOR, 0);
        out += 16 * head;
        n -= head;
        lo += head;
    }
    vaes_ctr(rkb, out, n, hi, lo, &k, SINK_XOR, !(k.stream && (lo & 3)));
    return k.bad;
}

/* rejection sampling (aes_internal.h, ctr_field) */
TGT_VAES static size_t ctr_field_vaes(const uint8_t *rkb, uint64_t *out, size_t count, size_t nblocks,
                                      uint64_t hi, uint64_t lo, uint64_t mask, uint64_t p, size_t *kept)
{
    vaes_sink k;
    k.fout = out;
    k.need = count;
    k.consumed = 0;
    k.vp = _mm512_set1_epi64((long long)p);
    k.vmask = _mm512_set1_epi64((long long)mask);
    vaes_ctr(rkb, NULL, nblocks, hi, lo, &k, SINK_FIELD, 1);
    *kept = count - k.need;
    return k.consumed;
}

TGT_VAES static void ecb_vaes(const uint8_t *rkb, uint8_t *out, const uint8_t *in, size_t n)
{
    __m512i rk[11];
    for (int i = 0; i < 11; i++)
        rk[i] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)rkb + i));
    while (n >= 4 * VW) {
        __m512i b[VW];
        for (int j = 0; j < VW; j++)
            b[j] = _mm512_xor_si512(_mm512_loadu_si512((const void *)(in + 64 * j)), rk[0]);
        for (int r = 1; r < 10; r++)
            for (int j = 0; j < VW; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
        for (int j = 0; j < VW; j++) {
            b[j] = _mm512_aesenclast_epi128(b[j], rk[10]);
            _mm512_storeu_si512((void *)(out + 64 * j), b[j]);
        }
        in += 64 * VW;
        out += 64 * VW;
        n -= 4 * VW;
    }
    while (n >= 4) {
        _mm512_storeu_si512((void *)out, v_encrypt1(_mm512_loadu_si512((const void *)in), rk));
        in += 64;
        out += 64;
        n -= 4;
    }
    if (n) {
        __mmask8 m = (__mmask8)((1u << (2 * n)) - 1);
        __m512i x = _mm512_maskz_loadu_epi64(m, (const void *)in);
        _mm512_mask_storeu_epi64((void *)out, m, v_encrypt1(x, rk));
    }
}

const secea__aes_impl secea__aes_impl_aesni = {
    "aesni", expand_aesni, ctr_aesni, ecb_aesni, NULL, NULL
};

const secea__aes_impl secea__aes_impl_vaes = {
    "vaes", expand_aesni, ctr_vaes, ecb_vaes, ctr_xor_vaes, ctr_field_vaes
};

/* The AES ceiling of this core (benchmarks): nblocks AES-128 encryptions
 * on registers only, 8 independent chains of 4 (VAES) or 1 (AES-NI) blocks,
 * no loads or stores; the XOR of the results keeps the work observable. */
TGT_VAES uint64_t secea__aes_peak_vaes(size_t nblocks)
{
    __m512i rk[11], b[16];
    for (int r = 0; r < 11; r++) rk[r] = _mm512_set1_epi64(0x0123456789abcdefLL * (r + 1));
    for (int j = 0; j < 16; j++) b[j] = _mm512_set1_epi64(j);
    for (size_t i = 0; i < nblocks; i += 64) {
        for (int r = 0; r < 9; r++)
            for (int j = 0; j < 16; j++) b[j] = _mm512_aesenc_epi128(b[j], rk[r]);
        for (int j = 0; j < 16; j++) b[j] = _mm512_aesenclast_epi128(b[j], rk[10]);
    }
    __m512i x = b[0];
    for (int j = 1; j < 16; j++) x = _mm512_xor_si512(x, b[j]);
    return (uint64_t)_mm_cvtsi128_si64(_mm512_castsi512_si128(x));
}

TGT_NI uint64_t secea__aes_peak_aesni(size_t nblocks)
{
    __m128i rk[11], b[8];
    for (int r = 0; r < 11; r++) rk[r] = _mm_set1_epi64x(0x0123456789abcdefLL * (r + 1));
    for (int j = 0; j < 8; j++) b[j] = _mm_set1_epi64x(j);
    for (size_t i = 0; i < nblocks; i += 8) {
        for (int r = 0; r < 9; r++)
            for (int j = 0; j < 8; j++) b[j] = _mm_aesenc_si128(b[j], rk[r]);
        for (int j = 0; j < 8; j++) b[j] = _mm_aesenclast_si128(b[j], rk[10]);
    }
    __m128i x = b[0];
    for (int j = 1; j < 8; j++) x = _mm_xor_si128(x, b[j]);
    return (uint64_t)_mm_cvtsi128_si64(x);
}

#else
/* Non-x86 build: only the portable variant exists.  Keep the translation
 * unit non-empty (ISO C). */
typedef int secea__aes_x86_unused;
#endif
