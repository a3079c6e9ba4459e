/* secea_fast C API.  This header is the whole C surface of the package and
 * also the cffi cdef source: the build script strips preprocessor lines, so
 * keep every declaration on plain C lines (no macros in prototypes).
 *
 * Conventions (ARCHITECTURE.md "raw versus managed"): every function here is
 * a raw kernel.  It assumes valid, allocated, non-overlapping buffers (unless
 * documented otherwise), a prime modulus p with 2 <= p < 2^64 and inputs
 * already reduced below p.  Validation happens once, in Python.
 */
#ifndef SECEA_H
#define SECEA_H
#include <stddef.h>
#include <stdint.h>

/* ---- runtime CPU dispatch (csrc/common/dispatch.c) ---- */
/* Re-selects every kernel variant.  force_portable != 0 selects the portable
 * C path everywhere (SECEA_FAST_BACKEND=portable). */
void secea_dispatch_init(int force_portable);
/* Name of the variant currently used by a kernel family ("aes", "matmul",
 * "field"), e.g. "vaes", "aesni", "ifma", "avx512", "avx2", "portable"; NULL if unknown. */
const char *secea_kernel_variant(const char *kernel);
/* 1 if the CPU supports the named feature ("aes", "vaes", "avx2",
 * "avx512f", "avx512dq", "avx512ifma", "bmi2"), else 0. */
int secea_cpu_supports(const char *feature);

/* ---- prime field vectors (csrc/field/fp_vec.c) ---- */
void secea_fp_add(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_sub(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_neg(uint64_t *out, const uint64_t *a, size_t n, uint64_t p);
void secea_fp_mul(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n, uint64_t p);
void secea_fp_mul_scalar(uint64_t *out, const uint64_t *a, uint64_t c, size_t n, uint64_t p);
/* out[i] = a[i]^e[i]; exponents are plain integers (0^0 = 1). */
void secea_fp_pow(uint64_t *out, const uint64_t *a, const uint64_t *e, size_t n, uint64_t p);
void secea_fp_pow_scalar(uint64_t *out, const uint64_t *a, uint64_t e, size_t n, uint64_t p);
/* Montgomery's trick.  out must not alias a.  Returns 0 on success, or 1 + the
 * index of the first zero element (out is then unspecified). */
size_t secea_fp_batch_inv(uint64_t *out, const uint64_t *a, size_t n, uint64_t p);
/* out[r] = sum_i a[r*len + i] * b[r*b_stride + i] mod p, for r < rows.
 * b_stride = len: row-wise dot products; b_stride = 0: matrix-vector product. */
void secea_fp_dot_rows(uint64_t *out, const uint64_t *a, const uint64_t *b, size_t rows, size_t len, size_t b_stride, uint64_t p);
/* out[i] = x[i] mod p for arbitrary uint64 x (used by samplers and codecs). */
void secea_fp_reduce(uint64_t *out, const uint64_t *x, size_t n, uint64_t p);

/* ---- exact matrix product (csrc/linalg/) ---- */
/* C (m x n) = A (m x k) * B (k x n) mod p, all row-major and reduced.
 * threads >= 1.  Returns 0, or -1 if memory could not be allocated. */
int secea_fp_mat_mul(uint64_t *C, const uint64_t *A, const uint64_t *B,
                     size_t m, size_t k, size_t n, uint64_t p, int threads);

/* ---- AES-128 (csrc/prg/) ---- */
/* Keystream of AES-128 in CTR mode (NIST SP 800-38A): block i is
 * AES_key(iv + i), the 16-byte iv read as a big-endian 128-bit counter that
 * wraps mod 2^128.  Writes nbytes bytes to out. */
void secea_aes128_ctr(uint8_t *out, size_t nbytes, const uint8_t *key, const uint8_t *iv);
/* ECB encryption of nblocks independent 16-byte blocks (known-answer tests,
 * fixed-key hashing).  out may alias in. */
void secea_aes128_ecb_encrypt(uint8_t *out, const uint8_t *in, size_t nblocks, const uint8_t *key);

#endif
