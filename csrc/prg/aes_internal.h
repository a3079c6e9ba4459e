/* Internal interface of the AES-128 kernel family (csrc/prg/).
 *
 * Every variant works on the standard FIPS-197 expanded key: 11 round keys of
 * 16 bytes each (176 bytes), in the byte order of the KeyExpansion words.
 * The public drivers in aes_dispatch.c expand the key once per call, split a
 * CTR request where the low 64-bit counter word wraps, and handle the final
 * partial block; the variants only see whole blocks. */
#ifndef SECEA_AES_INTERNAL_H
#define SECEA_AES_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "internal.h"

#define SECEA_AES_RK_BYTES 176

typedef struct secea__aes_impl {
    const char *name;
    /* rk (176 bytes, 64-byte aligned) := KeyExpansion(key). */
    void (*expand)(uint8_t *rk, const uint8_t *key);
    /* out[16*i .. 16*i+15] = AES_rk(counter (hi, lo) + i) for i < nblocks,
     * the counter written big-endian (hi first).  The caller guarantees that
     * the low word does not wrap: lo + (nblocks - 1) < 2^64. */
    void (*ctr)(const uint8_t *rk, uint8_t *out, size_t nblocks, uint64_t hi, uint64_t lo);
    /* ECB encryption of nblocks blocks; out may alias in (exactly). */
    void (*ecb)(const uint8_t *rk, uint8_t *out, const uint8_t *in, size_t nblocks);
    /* Fused CTR encryption: out = in XOR the ctr keystream above (same
     * counters and no-wrap guarantee), 16 nblocks bytes; out may alias in
     * (exactly).  flags as secea_prg_xor's: SECEA_PRG_XOR_STREAM writes with
     * non-temporal stores where out is 64-byte aligned; with
     * SECEA_PRG_XOR_CHECK the result is nonzero iff some output 64-bit word
     * is >= p.  NULL for variants without one (the caller then XORs a
     * keystream buffer). */
    uint64_t (*ctr_xor)(const uint8_t *rk, uint8_t *out, const uint8_t *in, size_t nblocks,
                        uint64_t hi, uint64_t lo, uint64_t p, int flags);
    /* Rejection sampling from that keystream, read as little-endian 64-bit
     * words from block (hi, lo) on, at most nblocks blocks (no low-word
     * wrap): the words x & mask that are < p are written to out, in order,
     * until count are kept.  Returns the words read (through the last kept
     * one when count are reached); *kept = how many were kept.  NULL for
     * variants without one. */
    size_t (*ctr_field)(const uint8_t *rk, uint64_t *out, size_t count, size_t nblocks,
                        uint64_t hi, uint64_t lo, uint64_t mask, uint64_t p, size_t *kept);
} secea__aes_impl;

extern const secea__aes_impl secea__aes_impl_portable;
#if SECEA_X86
extern const secea__aes_impl secea__aes_impl_aesni;
extern const secea__aes_impl secea__aes_impl_vaes;
uint64_t secea__aes_peak_vaes(size_t nblocks);
uint64_t secea__aes_peak_aesni(size_t nblocks);
#endif
#if SECEA_ARMCE
extern const secea__aes_impl secea__aes_impl_armce;   /* aes_arm.c */
#endif

/* Selects a variant by name ("vaes", "aesni", "armce", "portable") if this CPU can run
 * it.  Returns 0 on success, -1 (selection unchanged) otherwise.  Used by
 * tests and benchmarks to compare variants. */
int secea__aes_select_named(const char *name);

/* out = in XOR AES-128-CTR(key, iv) keystream, nblocks whole blocks, with
 * the selected variant's fused kernel (flags as ctr_xor above; with
 * SECEA_PRG_XOR_CHECK a word >= p sets *bad nonzero: *bad is OR-ed into, so
 * the caller zeroes it).  Returns -1, doing nothing, when that variant has
 * none. */
int secea__aes128_ctr_xor(uint8_t *out, const uint8_t *in, size_t nblocks, const uint8_t *key,
                          const uint8_t *iv, uint64_t p, int flags, uint64_t *bad);

/* count words sampled by ctr_field from the keystream of (key, iv), crossing
 * low-word wraps; *consumed = keystream words read.  Returns -1, doing
 * nothing, when the selected variant has no ctr_field. */
int secea__aes128_ctr_field(uint64_t *out, size_t count, const uint8_t *key, const uint8_t *iv,
                            uint64_t mask, uint64_t p, uint64_t *consumed);

#endif
