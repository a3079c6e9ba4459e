/* AES-128 public entry points and run-time variant selection.
 *
 * secea_aes128_ctr: CTR keystream per NIST SP 800-38A Sec. 6.5 with the
 * whole 16-byte block as a big-endian counter incremented mod 2^128 (the
 * convention of OpenSSL's EVP_aes_128_ctr): keystream block i is
 * AES-128_key(iv + i) (FIPS-197).  The request is split where the low 64-bit
 * counter word wraps (at most once per 2^64 blocks) so the variants never
 * handle the carry; the last partial block is truncated.
 * secea_aes128_ecb_encrypt: independent block encryptions.
 * secea__aes128_ctr_xor (internal): CTR encryption fused with the XOR, for
 * variants that have it (secea_prg_xor's bulk).
 *
 * Variants (aes_portable.c, aes_x86.c, aes_arm.c): "vaes", "aesni", "armce"
 * (ARMv8 Crypto Extensions), "portable", chosen by secea__aes_choose into
 * the kernel table (internal.h; a call before secea_dispatch_init gets the
 * level-0 table).  Expanded keys are wiped. */
#include <string.h>
#include "secea.h"
#include "aes_internal.h"

/* the variant of the kernel table in force (internal.h, "run-time CPU dispatch") */
static inline const secea__aes_impl *aes_current(void)
{
    return secea__kernels_now()->aes;
}

static inline uint64_t ld64be(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return v;
}

/* Zero the stack where a kernel just ran.  The vectorised kernels' frames
 * (up to about 4.8 KB: ctr_xor_vaes) hold spilled round keys and AES states,
 * which register allocation puts there and no source-level wipe reaches; a
 * call made from the same frame as the kernel's reuses that memory. */
static __attribute__((noinline)) void scrub_stack(void)
{
    uint8_t pad[8192];
    secea_wipe(pad, sizeof pad);
    __asm__ __volatile__("" : : "r"(pad) : "memory");
}

/* the end of every driver: the kernel's frame, then the expanded key */
static void wipe_key_and_stack(uint8_t *rk)
{
    scrub_stack();
    secea_wipe(rk, SECEA_AES_RK_BYTES);
}

/* of n blocks from counter (hi, lo), how many come before the low word
 * wraps (2^64 - lo; all n when lo == 0 or n is smaller) */
static size_t before_wrap(uint64_t lo, size_t n)
{
    uint64_t until = (uint64_t)0 - lo;
    return (lo != 0 && (uint64_t)n > until) ? (size_t)until : n;
}

/* the counter n blocks on (n never crosses a low-word wrap: before_wrap) */
static void ctr_advance(uint64_t *hi, uint64_t *lo, size_t n)
{
    *lo += (uint64_t)n;
    if (*lo == 0) (*hi)++;      /* carry into the high word; wraps mod 2^128 */
}

void secea_aes128_ctr(uint8_t *out, size_t nbytes, const uint8_t *key, const uint8_t *iv)
{
    if (nbytes == 0) return;
    const secea__aes_impl *impl = aes_current();
    _Alignas(64) uint8_t rk[SECEA_AES_RK_BYTES];
    impl->expand(rk, key);
    uint64_t hi = ld64be(iv), lo = ld64be(iv + 8);
    size_t nb = nbytes / 16;
    while (nb) {
        size_t n = before_wrap(lo, nb);
        impl->ctr(rk, out, n, hi, lo);
        out += 16 * n;
        nb -= n;
        ctr_advance(&hi, &lo, n);
    }
    size_t tail = nbytes & 15;
    if (tail) {
        uint8_t tmp[16];
        impl->ctr(rk, tmp, 1, hi, lo);
        memcpy(out, tmp, tail);
        secea_wipe(tmp, sizeof tmp);
    }
    wipe_key_and_stack(rk);
}

int secea__aes128_ctr_field(uint64_t *out, size_t count, const uint8_t *key, const uint8_t *iv,
                            uint64_t mask, uint64_t p, uint64_t *consumed)
{
    const secea__aes_impl *impl = aes_current();
    if (!impl->ctr_field) return -1;
    *consumed = 0;
    if (count == 0) return 0;
    _Alignas(64) uint8_t rk[SECEA_AES_RK_BYTES];
    impl->expand(rk, key);
    uint64_t hi = ld64be(iv), lo = ld64be(iv + 8);
    /* blocks per kernel call: enough for count words at the worst
     * acceptance (p just above a power of two: 1/2) only when needed; a first
     * range sized for the usual case keeps small requests off the 4 KB
     * first-round table (VAES_TABLE_MIN) */
    size_t want = count / 2 + count / 16 + 8;
    while (count) {
        size_t n = before_wrap(lo, want), kept;
        *consumed += impl->ctr_field(rk, out, count, n, hi, lo, mask, p, &kept);
        out += kept;
        count -= kept;
        if (count) {                            /* the range ran out: all of it was read */
            ctr_advance(&hi, &lo, n);
            want = count + 8;                   /* about one word in two kept, at worst */
        }
    }
    wipe_key_and_stack(rk);
    return 0;
}

int secea__aes128_ctr_xor(uint8_t *out, const uint8_t *in, size_t nblocks, const uint8_t *key,
                          const uint8_t *iv, uint64_t p, int flags, uint64_t *bad)
{
    const secea__aes_impl *impl = aes_current();
    if (!impl->ctr_xor) return -1;
    if (nblocks == 0) return 0;
    _Alignas(64) uint8_t rk[SECEA_AES_RK_BYTES];
    impl->expand(rk, key);
    uint64_t hi = ld64be(iv), lo = ld64be(iv + 8);
    while (nblocks) {
        size_t n = before_wrap(lo, nblocks);
        *bad |= impl->ctr_xor(rk, out, in, n, hi, lo, p, flags);
        out += 16 * n;
        in += 16 * n;
        nblocks -= n;
        ctr_advance(&hi, &lo, n);
    }
    wipe_key_and_stack(rk);
    return 0;
}

void secea_aes128_ecb_encrypt(uint8_t *out, const uint8_t *in, size_t nblocks, const uint8_t *key)
{
    if (nblocks == 0) return;
    const secea__aes_impl *impl = aes_current();
    _Alignas(64) uint8_t rk[SECEA_AES_RK_BYTES];
    impl->expand(rk, key);
    impl->ecb(rk, out, in, nblocks);
    wipe_key_and_stack(rk);
}

/* the variant named, if the features of the table in force allow it, else NULL */
static const secea__aes_impl *aes_by_name(const secea__cpu_features *c, const char *name)
{
    if (!strcmp(name, "portable")) return &secea__aes_impl_portable;
#if SECEA_X86
    if (!strcmp(name, "aesni") && c->aes) return &secea__aes_impl_aesni;
    if (!strcmp(name, "vaes") && c->vaes) return &secea__aes_impl_vaes;
#endif
#if SECEA_ARMCE
    if (!strcmp(name, "armce") && c->aes) return &secea__aes_impl_armce;
#endif
    (void)c;
    return NULL;
}

void secea__aes_choose(secea__kernels *k)
{
    const secea__aes_impl *p = &secea__aes_impl_portable;
    if (!k->portable) {
        const char *best[] = {"vaes", "aesni", "armce"};
        for (int i = 0; i < 3 && p == &secea__aes_impl_portable; i++) {
            const secea__aes_impl *q = aes_by_name(&k->cpu, best[i]);
            if (q) p = q;
        }
    }
    k->aes = p;
}

int secea__aes_select_named(const char *name)
{
    const secea__aes_impl *p = aes_by_name(&secea__kernels_now()->cpu, name);
    if (!p) return -1;
    return secea__kernels_override(p, NULL);
}

const char *secea__aes_variant(const secea__kernels *k)
{
    return k->aes->name;
}

uint64_t secea_aes_peak(size_t nblocks)
{
    const secea__aes_impl *impl = aes_current();
#if SECEA_X86
    if (impl == &secea__aes_impl_vaes) return secea__aes_peak_vaes(nblocks);
    if (impl == &secea__aes_impl_aesni) return secea__aes_peak_aesni(nblocks);
#endif
    /* other variants: their ECB kernel on one cache-resident buffer */
    _Alignas(64) uint8_t rk[SECEA_AES_RK_BYTES], buf[4096];
    memset(buf, 0, sizeof buf);
    memset(rk, 0, sizeof rk);
    for (size_t i = 0; i < nblocks; i += 256) impl->ecb(rk, buf, buf, 256);
    uint64_t x;
    memcpy(&x, buf, 8);
    return x;
}
