/* Runtime CPU dispatch: the package is compiled with portable baseline flags;
 * hot kernels carry __attribute__((target(...))) variants that are selected
 * here with __builtin_cpu_supports (docs/ARCHITECTURE.md, "Run-time CPU
 * dispatch"). */
#include <string.h>
#include "secea.h"
#include "internal.h"

#if SECEA_ARM64 && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)      /* the arm64 Linux ABI's bits (asm/hwcap.h) */
#endif
#ifndef HWCAP_AES
#define HWCAP_AES (1UL << 3)
#endif
#ifndef HWCAP_PMULL
#define HWCAP_PMULL (1UL << 4)
#endif
#elif SECEA_ARM64 && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

#if SECEA_ARM64
/* ARM features by name: "asimd" (NEON), "aes" (ARMv8 Crypto Extensions
 * AESE/AESD/AESMC/AESIMC), "pmull".  On an OS without a query here, only
 * what the compiler's baseline promises. */
static int arm_supports(const char *f)
{
#if defined(__linux__)
    unsigned long hw = getauxval(AT_HWCAP);
    if (!strcmp(f, "asimd")) return (hw & HWCAP_ASIMD) ? 1 : 0;
    if (!strcmp(f, "aes")) return (hw & HWCAP_AES) && (hw & HWCAP_ASIMD) ? 1 : 0;
    if (!strcmp(f, "pmull")) return (hw & HWCAP_PMULL) ? 1 : 0;
#elif defined(__APPLE__)
    const char *key = !strcmp(f, "aes") ? "hw.optional.arm.FEAT_AES"
                      : !strcmp(f, "pmull") ? "hw.optional.arm.FEAT_PMULL"
                      : !strcmp(f, "asimd") ? "hw.optional.AdvSIMD" : NULL;
    if (key) {
        int v = 0;
        size_t len = sizeof v;
        if (sysctlbyname(key, &v, &len, NULL, 0) == 0) return v ? 1 : 0;
        /* older macOS without the FEAT_ names: every Apple arm64 core has
         * AES, PMULL and AdvSIMD, and the compiler says so */
#if defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO)
        return 1;
#endif
    }
#else
#if defined(__ARM_NEON)
    if (!strcmp(f, "asimd")) return 1;
#endif
#if defined(__ARM_FEATURE_AES) || defined(__ARM_FEATURE_CRYPTO)
    if (!strcmp(f, "aes") || !strcmp(f, "pmull")) return 1;
#endif
#endif
    return 0;
}
#endif

int secea_cpu_supports(const char *f)
{
#if SECEA_X86
    __builtin_cpu_init();
    if (!strcmp(f, "aes")) return __builtin_cpu_supports("aes") ? 1 : 0;
    if (!strcmp(f, "vaes")) return __builtin_cpu_supports("vaes") && __builtin_cpu_supports("avx512f") ? 1 : 0;
    if (!strcmp(f, "avx2")) return __builtin_cpu_supports("avx2") ? 1 : 0;
    if (!strcmp(f, "bmi2")) return __builtin_cpu_supports("bmi2") ? 1 : 0;
    if (!strcmp(f, "avx512dq"))
        return __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") ? 1 : 0;
    if (!strcmp(f, "avx512f")) return __builtin_cpu_supports("avx512f") ? 1 : 0;
    if (!strcmp(f, "avx512ifma"))
        return __builtin_cpu_supports("avx512ifma") && __builtin_cpu_supports("avx512f")
               && __builtin_cpu_supports("avx512vl") ? 1 : 0;          /* VL: the 4-lane powm */
#elif SECEA_ARM64
    return arm_supports(f);
#else
    (void)f;
#endif
    return 0;
}

/* 0: every feature the CPU has; 2: at most AVX2, BMI2 and AES-NI (no VAES,
 * no AVX-512; on ARM the same as 0: nothing there is above that level) */
static int ceiling;

int secea__cpu_allowed(const char *f)
{
    if (ceiling == 2 && (!strncmp(f, "avx512", 6) || !strcmp(f, "vaes"))) return 0;
    return secea_cpu_supports(f);
}

/* level 0: auto; 1: the portable C everywhere; 2: at most AVX2 / AES-NI */
void secea_dispatch_init(int level)
{
    int force_portable = level == 1;
    ceiling = level == 2 ? 2 : 0;
    secea__field_select(force_portable);
    secea__matmul_select(force_portable);
    secea__aes_select(force_portable);
    secea__ntt_select(force_portable);
    secea__dpf_select(force_portable);
    secea__bignum_select(force_portable);
}

const char *secea_kernel_variant(const char *kernel)
{
    if (!strcmp(kernel, "field")) return secea__field_variant();
    if (!strcmp(kernel, "matmul")) return secea__matmul_variant();
    if (!strcmp(kernel, "aes")) return secea__aes_variant();
    if (!strcmp(kernel, "bignum")) return secea__bignum_variant();
    if (!strcmp(kernel, "ntt")) return secea__ntt_variant();
    if (!strcmp(kernel, "dpf")) return secea__dpf_variant();
    return NULL;
}
