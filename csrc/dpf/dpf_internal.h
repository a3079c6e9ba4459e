/* Internal interface of the distributed point function family (csrc/dpf/).
 *
 * Blocks.  A 128-bit block is two little-endian 64-bit words (lo = bytes
 * 0..7, hi = bytes 8..15), i.e. the 16 bytes read as a little-endian
 * integer; bit 0 is the least significant bit of byte 0.  A tree node is one
 * block: its seed is the block with bit 0 cleared (127 bits) and its control
 * bit t is bit 0.
 *
 * Fixed-key hash (correlation robust, Guo, Katz, Wang, Yu, "Efficient and
 * Secure Multiparty Computation from Fixed-Key Block Ciphers", S&P 2020,
 * Sec. 7.3; the same construction as Google distributed_point_functions'
 * aes_128_fixed_key_hash):
 *     H_k(x) = AES_k(sigma(x)) xor sigma(x),
 *     sigma(lo, hi) = (lo' = hi, hi' = hi xor lo)   (a linear orthomorphism).
 * Three public fixed AES-128 keys (variants.c, DPF_FIXED_KEYS) separate the uses:
 * k_L and k_R give the left and right halves of the length-doubling PRG
 * G(s) = H_L(s) || H_R(s), k_V the value conversion Convert(s), block j =
 * H_V(s xor j).
 *
 * Variants ("vaes", "vaes256", "aesni", "armce", "portable") implement the batched
 * primitives below, each in a complete table: a slot a variant has no
 * special code for holds the plain-C conversion built on that variant's own
 * hash (convert_hashed.c), named explicitly, never NULL.  Everything else
 * (key generation, tree walks, group arithmetic, threads) is shared C: the
 * evaluator layer of dpf_tree.h, one file per evaluator family. */
#ifndef SECEA_DPF_INTERNAL_H
#define SECEA_DPF_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "csrc/dpf assumes a little-endian host (blocks are read as two little-endian words)"
#endif

typedef struct {
    uint64_t lo, hi;
} __attribute__((aligned(16))) secea__dpf_blk;

enum { DPF_KL = 0, DPF_KR = 1, DPF_KV = 2 };

/* Expanded fixed keys: 3 x 11 round keys (FIPS-197 byte order), set by
 * secea__dpf_keys_init (idempotent, thread safe; variants.c). */
extern uint8_t secea__dpf_rk[3][176];
void secea__dpf_keys_init(void);

/* Early keys pack 2^e outputs per leaf: e <= 3 for Z_2^64 and e <= 4 for
 * Z_2^32 (secea_fast.dpf._early_e), so at most 16 final correction words. */
#define DPF_MAX_EARLY_NCW 16

typedef struct {
    const char *name;
    /* Tree expansion with correction (Algorithm 6, one level, all nodes):
     *   out[2i]   = H_L(s_i) xor (t_i ? cw[0] : 0),
     *   out[2i+1] = H_R(s_i) xor (t_i ? cw[1] : 0),
     * with s_i = in[i] & ~1 and t_i = in[i] & 1; cw[0] = s_CW | t_CW^L and
     * cw[1] = s_CW | t_CW^R.  out must not overlap in. */
    void (*expand)(secea__dpf_blk *out, const secea__dpf_blk *in, size_t n,
                   const secea__dpf_blk cw[2]);
    /* (A multi-key expansion, several keys' nodes of one level in one
     * pipeline, would be one more slot here with its hashed twin beside the
     * others: descend() in tree.c is its only caller shape.) */
    /* out[i] = H_which(in[i] with bit 0 cleared if clear).  out may alias in
     * exactly. */
    void (*hash)(secea__dpf_blk *out, const secea__dpf_blk *in, size_t n, int which, int clear);
    /* out[i] = H_{sel[i]}(in[i] & ~1), sel[i] in {0 (L), 1 (R)}; sel is public
     * (the evaluation point), so it may steer addresses.  out may alias in. */
    void (*hash_sel)(secea__dpf_blk *out, const secea__dpf_blk *in, const uint8_t *sel, size_t n);
    /* Fused leaf conversion over Z_2^64 for words = 1 or 2 elements per leaf:
     * out[words*i + k] = (-1)^party (word_k(H_V(s_i)) + t_i * cw[k]) mod 2^64
     * (cw[1] must be 0 if words == 1). */
    void (*conv_u64)(uint64_t *out, const secea__dpf_blk *leaves, size_t n,
                     const uint64_t cw[2], int party, int words);
    /* The same for d >= 1 elements per leaf (Convert blocks H_V(s xor j),
     * j < ceil(d/2)): v = (-1)^party (word_k + t_i * cw[k]), then
     * out[i*d + k] = v, or out[i*d + k] += v if accumulate. */
    void (*conv_u64_vec)(uint64_t *out, const secea__dpf_blk *leaves, size_t n, const uint64_t *cw,
                         size_t d, int party, int accumulate);
    /* Four words per leaf (vector payloads of d = 4 over Z_2^64): Convert blocks
     * H_V(s) and H_V(s xor 1), two leaves per 512-bit register:
     * out[4i + k] = (-1)^party (word_k + t_i * cw[k]). */
    void (*conv_u64x4)(uint64_t *out, const secea__dpf_blk *leaves, size_t n, const uint64_t cw[4],
                       int party);
    /* Accumulating conversion of d elements of w bytes (8: Z_2^64, 4: Z_2^32)
     * per leaf, no negation: acc[i*d + k] += word_k(Convert(s_i)) + t_i * cw[k]
     * mod 2^(8w), i < n, with Convert blocks H_V(s_i xor j) (the caller has
     * XORed the conversion domain into the leaves' high words); cw holds d
     * elements of w bytes. */
    void (*conv_acc)(void *acc, const secea__dpf_blk *leaves, size_t n, const void *cw, size_t d,
                     unsigned w);
} secea__dpf_impl;

typedef void (*secea__dpf_hash_fn)(secea__dpf_blk *out, const secea__dpf_blk *in, size_t n, int which,
                                   int clear);

/* The conversion slots in plain C on a variant's hash (convert_hashed.c):
 * what a variant without special code puts in its table, through a
 * one-line wrapper that names its own hash.  Same contracts as the slots;
 * they hash at most 256 blocks per call, on the stack. */
void secea__dpf_conv_u64_hashed(secea__dpf_hash_fn hash, uint64_t *out, const secea__dpf_blk *leaves, size_t n,
                                const uint64_t cw[2], int party, int words);
void secea__dpf_conv_u64_vec_hashed(secea__dpf_hash_fn hash, uint64_t *out, const secea__dpf_blk *leaves,
                                    size_t n, const uint64_t *cw, size_t d, int party, int accumulate);
void secea__dpf_conv_acc_hashed(secea__dpf_hash_fn hash, void *acc, const secea__dpf_blk *leaves, size_t n,
                                const void *cw, size_t d, unsigned w);

extern const secea__dpf_impl secea__dpf_impl_portable;
#if SECEA_X86
extern const secea__dpf_impl secea__dpf_impl_aesni;
extern const secea__dpf_impl secea__dpf_impl_vaes;
extern const secea__dpf_impl secea__dpf_impl_vaes256;   /* dpf_x86_v256.c */
uint64_t secea__dpf_aes_peak_v256(size_t nblocks);
#endif
#if SECEA_ARMCE
extern const secea__dpf_impl secea__dpf_impl_armce;   /* dpf_arm.c */
#endif

static inline secea__dpf_blk secea__dpf_sigma(secea__dpf_blk x)
{
    secea__dpf_blk r = {x.hi, x.hi ^ x.lo};
    return r;
}

#endif
