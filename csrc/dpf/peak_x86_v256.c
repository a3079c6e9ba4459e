/* Synthetic ceilings of the "vaes256" fused conversion (benchmarks only):
 * what bounds conv_acc_v256 (dpf_x86_v256.c) at the SecEmb shape, rows of
 * 256 bytes (d = 64 over Z_2^32, 8 ymm registers per leaf), measured
 * rather than read from instruction counts.  Each variant runs groups of
 * `chains` ymm registers (8, 12 or 16), independent of one another as the
 * real kernel's groups are:
 *
 *   mix 0  AES only, round keys read from memory once per round and group
 *          (as the real kernel reads them), the result XORed into a sink:
 *          the AES cost of the real loop shape without its adds;
 *   mix 1  the real kernel's per-register instruction mix (what gcc emits
 *          for y_conv_rows, objdump of the built library): per leaf the
 *          scalar set-up of sigma(s) and the control-bit mask; per register
 *          a counter add and XOR, 9 VAESENC + VAESENCLAST (the last key
 *          XORed with sigma and the counter), then AND of the correction
 *          word (a load), add of the accumulator (a load), add, store;
 *          on `rows` accumulator rows cycled (16 rows = 4 KB stay in L1;
 *          512 rows = 128 KB is the real work unit's accumulator, in L2);
 *   mix 2  the real slot, conv_acc_v256 over Z_2^32 with d = 64, called on
 *          the `rows` leaves again and again (chains ignored: its own 8);
 *   mix 3, 4, 5  the AES ceiling's loop (8 chains carried over, round keys
 *          from memory) plus 0, 2 or 6 AVX2 operations per register that
 *          feed nothing back (chains ignored: 8; pk_asm*).
 *
 * A group of 12 or 16 registers spans 2 leaves (sigma and the mask set up
 * for each; the 12-register group uses 4 of the second leaf's registers),
 * so the set-up per register is that of the real kernel or slightly more.
 * The AES-only ceiling on registers is secea__dpf_aes_peak_v256. */
#include "dpf_internal.h"
#include <stdlib.h>
#include "secea.h"

#if SECEA_X86
#include <immintrin.h>
#include <wmmintrin.h>

#define TGT_Y SECEA_TARGET("aes,sse4.1,avx2,vaes")
#define INL inline __attribute__((always_inline))
#define PK_MAX 16

typedef secea__dpf_blk blk;

TGT_Y static INL uint64_t pk_run(size_t ngroups, const int CH, int mix, const blk *leaves, size_t rows, uint8_t *acc,
                                  const uint8_t *cw, const __m256i *k)
{
    const __m256i step = _mm256_set_epi64x(2, 0, 2, 0), ctr0 = _mm256_set_epi64x(1, 0, 0, 0);
    __m256i sink = _mm256_setzero_si256();
    size_t li = 0;
    for (size_t g = 0; g < ngroups; g++) {
        const __m256i *kq = k;
        __asm__("" : "+r"(kq));
        __m256i sg[2], tm[2], b[PK_MAX], c[PK_MAX];
        uint8_t *row[2];
        for (int l = 0; l < (CH + 7) / 8; l++) {
            blk x = leaves[li];
            uint64_t lo = x.lo & ~(uint64_t)1;
            sg[l] = _mm256_set_epi64x((long long)(x.hi ^ lo), (long long)x.hi, (long long)(x.hi ^ lo), (long long)x.hi);
            tm[l] = _mm256_set1_epi64x(-(long long)(x.lo & 1));
            row[l] = acc + 256 * li;
            li = li + 1 == rows ? 0 : li + 1;
        }
        __m256i ctr = ctr0;
        for (int j = 0; j < CH; j++) {
            if (j % 8 == 0) ctr = ctr0;
            c[j] = ctr;
            b[j] = _mm256_xor_si256(_mm256_xor_si256(sg[j / 8], kq[0]), ctr);
            ctr = _mm256_add_epi64(ctr, step);
        }
        for (int r = 1; r < 10; r++) {
            __m256i kr = _mm256_loadu_si256(kq + r);
            for (int j = 0; j < CH; j++) b[j] = _mm256_aesenc_epi128(b[j], kr);
        }
        __m256i k10 = _mm256_loadu_si256(kq + 10);
        for (int j = 0; j < CH; j++) {
            __m256i h = _mm256_aesenclast_epi128(b[j], _mm256_xor_si256(_mm256_xor_si256(k10, sg[j / 8]), c[j]));
            if (mix == 0) {
                sink = _mm256_xor_si256(sink, h);
            } else {
                uint8_t *dst = row[j / 8] + 32 * (j % 8);
                __m256i w = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(cw + 32 * (j % 8))), tm[j / 8]);
                h = _mm256_add_epi32(_mm256_add_epi32(h, w), _mm256_loadu_si256((const __m256i *)dst));
                _mm256_storeu_si256((__m256i *)dst, h);
            }
        }
    }
    return (uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(sink)) ^ (uint64_t)acc[0];
}

/* mixes 3, 4 and 5 (inline assembly, so the compiler neither folds the
 * fixed keys nor spills the chains): 8 chains in ymm0-7 carried from group
 * to group as in secea__dpf_aes_peak_v256, the round keys memory operands
 * as in the real kernel, plus E = 0, 2 or 6 AVX2 operations per register
 * and 10 rounds that feed nothing back into the chains (sinks ymm8-11):
 * whether VAESENC loses issue slots to the conversion's AVX2 work. */
#if defined(__x86_64__)
#define PK_ROUNDS                                                                                                \
    ".irp k,16,32,48,64,80,96,112,128,144\n"                                                                    \
    ".irp j,0,1,2,3,4,5,6,7\n vaesenc \\k*2(%[kp]), %%ymm\\j, %%ymm\\j\n .endr\n .endr\n"
#define PK_ASM(NAME, EXTRA)                                                                                      \
    TGT_Y static uint64_t NAME(size_t ngroups, const __m256i *kp)                                                \
    {                                                                                                            \
        uint64_t out;                                                                                            \
        __asm__ volatile(".irp j,0,1,2,3,4,5,6,7,8,9,10,11\n vmovdqu (%[kp]), %%ymm\\j\n .endr\n"               \
                         "test %[n], %[n]\n jz 2f\n"                                                             \
                         "1:\n" PK_ROUNDS                                                                        \
                         ".irp j,0,1,2,3,4,5,6,7\n vaesenclast 320(%[kp]), %%ymm\\j, %%ymm\\j\n" EXTRA ".endr\n" \
                         "dec %[n]\n jnz 1b\n"                                                                   \
                         "2:\n vpxor %%ymm0, %%ymm8, %%ymm8\n vpxor %%ymm9, %%ymm8, %%ymm8\n"                    \
                         " vpxor %%ymm10, %%ymm8, %%ymm8\n vpxor %%ymm11, %%ymm8, %%ymm8\n vmovq %%xmm8, %[o]\n" \
                         " vzeroupper\n"                                                                         \
                         : [n] "+r"(ngroups), [o] "=r"(out)                                                      \
                         : [kp] "r"(kp)                                                                          \
                         : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",      \
                           "xmm10", "xmm11", "memory", "cc");                                                    \
        return out;                                                                                              \
    }
PK_ASM(pk_asm0, "")
PK_ASM(pk_asm2, " vpxor %%ymm\\j, %%ymm8, %%ymm8\n vpaddd %%ymm\\j, %%ymm9, %%ymm9\n")
PK_ASM(pk_asm6, " vpxor %%ymm\\j, %%ymm8, %%ymm8\n vpaddd %%ymm\\j, %%ymm9, %%ymm9\n"
                " vpand %%ymm\\j, %%ymm10, %%ymm10\n vpsubd %%ymm\\j, %%ymm11, %%ymm11\n"
                " vpaddq %%ymm\\j, %%ymm8, %%ymm8\n vpor %%ymm\\j, %%ymm9, %%ymm9\n")
#else
#define pk_asm0(n, k) pk_8_0(n / 2, leaves, rows, acc, cw, k)
#define pk_asm2 pk_asm0
#define pk_asm6 pk_asm0
#endif

#define PK_FN(CH, MIX)                                                                                            \
    TGT_Y static uint64_t pk_##CH##_##MIX(size_t ngroups, const blk *leaves, size_t rows, uint8_t *acc,           \
                                          const uint8_t *cw, const __m256i *k)                                    \
    {                                                                                                             \
        return pk_run(ngroups, CH, MIX, leaves, rows, acc, cw, k);                                                \
    }
PK_FN(8, 0)
PK_FN(12, 0)
PK_FN(16, 0)
PK_FN(8, 1)
PK_FN(12, 1)
PK_FN(16, 1)

TGT_Y static uint64_t pk_dispatch(size_t nblocks, int chains, int mix, size_t rows, const blk *leaves, uint8_t *acc,
                                  const uint8_t *cw)
{
    __m256i k[11];
    for (int r = 0; r < 11; r++)
        k[r] = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)secea__dpf_rk[DPF_KV] + r));
    size_t ngroups = nblocks / (2 * (size_t)chains);
    if (mix == 3) return pk_asm0(nblocks / 16, k);
    if (mix == 4) return pk_asm2(nblocks / 16, k);
    if (mix == 5) return pk_asm6(nblocks / 16, k);
    switch (chains * 2 + mix) {
    case 16: return pk_8_0(ngroups, leaves, rows, acc, cw, k);
    case 24: return pk_12_0(ngroups, leaves, rows, acc, cw, k);
    case 32: return pk_16_0(ngroups, leaves, rows, acc, cw, k);
    case 17: return pk_8_1(ngroups, leaves, rows, acc, cw, k);
    case 25: return pk_12_1(ngroups, leaves, rows, acc, cw, k);
    default: return pk_16_1(ngroups, leaves, rows, acc, cw, k);
    }
}
#endif

int secea_dpf_convacc_peak(size_t nblocks, int chains, int mix, size_t rows, uint64_t *check)
{
    if ((chains != 8 && chains != 12 && chains != 16) || (mix < 0 || mix > 5) || rows < 2 || rows > 4096)
        return SECEA_EINVAL;
#if SECEA_X86
    const secea__kernels *kn = secea__kernels_now();
    if (!kn->cpu.vaes256) return SECEA_EINVAL;   /* the CPU, as secea_dpf_select_variant */
    secea__dpf_keys_init();
    blk *leaves = malloc(16 * rows);
    uint8_t *acc = aligned_alloc(64, 256 * rows), *cw = aligned_alloc(64, 256);
    if (!leaves || !acc || !cw) {
        free(leaves);
        free(acc);
        free(cw);
        return SECEA_ENOMEM;
    }
    for (size_t i = 0; i < rows; i++) {
        leaves[i].lo = 0x9e3779b97f4a7c15ULL * (i + 1);
        leaves[i].hi = 0xbf58476d1ce4e5b9ULL * (i + 3);
    }
    memset(acc, 0, 256 * rows);
    for (int i = 0; i < 256; i++) cw[i] = (uint8_t)(31 * i + 7);
    if (mix == 2) {
        /* the real slot, conv_acc_v256, over the rows (chains ignored) */
        for (size_t done = 0; done < nblocks; done += 16 * rows)
            secea__dpf_impl_vaes256.conv_acc(acc, leaves, rows, cw, 64, 4);
        *check = (uint64_t)acc[0];
    } else {
        *check = pk_dispatch(nblocks, chains, mix, rows, leaves, acc, cw);
    }
    free(leaves);
    free(acc);
    free(cw);
    return 0;
#else
    (void)nblocks;
    (void)check;
    return SECEA_EINVAL;
#endif
}
