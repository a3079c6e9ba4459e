/* Runtime CPU dispatch: the package is compiled with portable baseline flags;
 * hot kernels carry __attribute__((target(...))) variants that are selected
 * here with __builtin_cpu_supports (docs/ARCHITECTURE.md, "Run-time CPU
 * dispatch"). */
#include <string.h>
#include "secea.h"
#include "internal.h"

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
        return __builtin_cpu_supports("avx512ifma") && __builtin_cpu_supports("avx512f") ? 1 : 0;
#else
    (void)f;
#endif
    return 0;
}

/* 0: every feature the CPU has; 2: at most AVX2, BMI2 and AES-NI (no VAES, no AVX-512) */
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
