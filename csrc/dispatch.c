/* dispatch.c - the single dispatch point: picks the kernel table once (CPU
 * detection, overridden by AVGPOOL_ISA) and routes every entry point through
 * plan -> kernel. */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/kernels.h"
#include "plan.h"

#define AP_STR_(x) #x
#define AP_STR(x) AP_STR_(x)

static const ap_kernel_table *ap_table = NULL;
static ap_status ap_table_status = AP_OK;

#if defined(AP_HAVE_X86_KERNELS)
#include <cpuid.h>

/* x86 features from CPUID, and from XGETBV whether the OS saves the ymm
 * (XCR0 bits 1-2) and zmm / opmask (bits 5-7) registers on context switch. */
static int ap_x86_has(int want_avx512) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !fma || !f16c) return 0;
    unsigned xlo, xhi;
    __asm__("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x6) != 0x6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!((b >> 5) & 1)) return 0; /* AVX2 */
    if (!want_avx512) return 1;
    const unsigned f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    return (b & (f | dq | bw | vl)) == (f | dq | bw | vl) && (xlo & 0xe0) == 0xe0;
}
#endif

/* Whether this CPU runs each compiled instruction set (isa.h). */
static int ap_cpu_has_scalar(void) { return 1; }
#if defined(AP_HAVE_X86_KERNELS)
static int ap_cpu_has_avx2(void) { return ap_x86_has(0); }
static int ap_cpu_has_avx512(void) { return ap_x86_has(1); }
#endif
#if defined(AP_HAVE_NEON_KERNELS)
/* Advanced SIMD is mandatory on aarch64. */
static int ap_cpu_has_neon(void) { return 1; }
#endif

/* The kernel table for an ISA name, or NULL if unknown or unsupported here. */
static const ap_kernel_table *ap_table_for(const char *name) {
#define AP_LOOKUP(isa)                                                                     \
    AP_ISA_BUILT_##isa(if (strcmp(name, #isa) == 0) return ap_cpu_has_##isa() ? &ap_kernels_##isa : NULL;)
    AP_ISAS(AP_LOOKUP)
#undef AP_LOOKUP
    return NULL;
}

/* The best table this CPU supports: the last of the list (isa.h) it runs. */
static const ap_kernel_table *ap_best_table(void) {
    const ap_kernel_table *best = &ap_kernels_scalar;
#define AP_BETTER(isa) AP_ISA_BUILT_##isa(if (ap_cpu_has_##isa()) best = &ap_kernels_##isa;)
    AP_ISAS(AP_BETTER)
#undef AP_BETTER
    return best;
}

ap_status ap_set_isa(const char *name) {
    const ap_kernel_table *t =
        (!name || !*name || strcmp(name, "auto") == 0) ? ap_best_table() : ap_table_for(name);
    if (!t) return AP_ERR_ISA;
    ap_table = t;
    ap_table_status = AP_OK;
    return AP_OK;
}

/* First use: AVGPOOL_ISA=scalar|avx2|avx512|neon forces a path, unset or
 * "auto" picks the best; an unknown or unsupported name is an error on every
 * call (AP_ERR_ISA) rather than a silent fallback. */
static void ap_select_table(void) {
    if (ap_set_isa(getenv("AVGPOOL_ISA")) != AP_OK) ap_table_status = AP_ERR_ISA;
}

static const ap_kernel_table *ap_kernels(void) {
    /* Racing first calls compute the same answer; the pointer store is the
     * only shared write. */
    if (!ap_table && ap_table_status == AP_OK) ap_select_table();
    return ap_table;
}

static ap_status ap_run(ap_plan *plan, const void *x, void *y) {
    const ap_kernel_table *table = ap_kernels();
    if (!table) {
        ap_plan_free(plan);
        return ap_table_status;
    }
    const int64_t n_in = plan->batch * plan->channels * plan->in_plane;
    const int64_t n_out = plan->batch * plan->channels * plan->out_plane;
    if ((n_in > 0 && !x) || (n_out > 0 && !y)) {
        ap_plan_free(plan);
        return AP_ERR_NULL_POINTER;
    }
    ap_status s = n_out > 0 ? table->pool[plan->layout][plan->dtype](plan, x, y) : AP_OK;
    ap_plan_free(plan);
    return s;
}

ap_status ap_avgpool(const ap_pool_desc *desc, const ap_tensor_desc *input, ap_dtype dtype,
                     const void *x, void *y, int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    ap_status s = ap_plan_pool(&plan, desc, input, dtype, num_threads);
    if (s != AP_OK) {
        ap_plan_free(&plan);
        return s;
    }
    return ap_run(&plan, x, y);
}

ap_status ap_adaptive_avgpool(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                              ap_dtype dtype, const void *x, void *y, int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    ap_status s = ap_plan_adaptive(&plan, desc, input, dtype, num_threads);
    if (s != AP_OK) {
        ap_plan_free(&plan);
        return s;
    }
    return ap_run(&plan, x, y);
}

#define AP_TYPED(name, T, dtype)                                                           \
    ap_status ap_avgpool_##name(const ap_pool_desc *desc, const ap_tensor_desc *input,     \
                                const T *x, T *y, int num_threads) {                       \
        return ap_avgpool(desc, input, dtype, x, y, num_threads);                          \
    }                                                                                      \
    ap_status ap_adaptive_avgpool_##name(const ap_adaptive_desc *desc,                     \
                                         const ap_tensor_desc *input, const T *x, T *y,    \
                                         int num_threads) {                                \
        return ap_adaptive_avgpool(desc, input, dtype, x, y, num_threads);                 \
    }
AP_TYPED(f32, float, AP_DTYPE_F32)
AP_TYPED(f64, double, AP_DTYPE_F64)
AP_TYPED(f16, uint16_t, AP_DTYPE_F16)
AP_TYPED(bf16, uint16_t, AP_DTYPE_BF16)
#undef AP_TYPED

const char *ap_status_string(ap_status status) {
    switch (status) {
    case AP_OK: return "success";
    case AP_ERR_NULL_POINTER: return "a required pointer is NULL";
    case AP_ERR_RANK: return "spatial rank must be 1, 2 or 3 and match the descriptor";
    case AP_ERR_LAYOUT: return "unknown layout";
    case AP_ERR_DTYPE: return "unknown dtype";
    case AP_ERR_TENSOR_SIZE: return "batch and channels must be >= 0 and spatial sizes >= 1";
    case AP_ERR_WINDOW: return "window sizes must be >= 1";
    case AP_ERR_STRIDE: return "strides must be >= 1";
    case AP_ERR_DILATION: return "dilations must be >= 1";
    case AP_ERR_PADDING: return "paddings must be >= 0";
    case AP_ERR_WINDOW_TOO_LARGE:
        return "the effective window (k - 1) * d + 1 exceeds the padded input";
    case AP_ERR_OUTPUT_SIZE:
        return "output sizes must be >= 1 and every window must start before the padded end";
    case AP_ERR_OVERFLOW: return "a size or size product overflows int64";
    case AP_ERR_OUT_OF_MEMORY: return "out of memory";
    case AP_ERR_ISA:
        return "the instruction set requested (AVGPOOL_ISA or ap_set_isa) is unknown or not "
               "supported by this CPU and build";
    }
    return "unknown status";
}

const char *ap_version(void) {
    return AP_STR(AP_VERSION_MAJOR) "." AP_STR(AP_VERSION_MINOR) "." AP_STR(AP_VERSION_PATCH);
}

/* Set by CMakeLists.txt; other builds (the fuzz harness) say "unknown". */
#ifndef AP_BUILD_COMPILER
#define AP_BUILD_COMPILER "unknown"
#endif
#ifndef AP_BUILD_TYPE
#define AP_BUILD_TYPE "unknown"
#endif
#ifndef AP_BUILD_FLAGS
#define AP_BUILD_FLAGS "unknown"
#endif
/* " scalar avx2 avx512": the instruction sets compiled in, from isa.h. */
#define AP_BUILT_NAME(isa) AP_ISA_BUILT_##isa(" " #isa)
#define AP_BUILD_KERNELS "" AP_ISAS(AP_BUILT_NAME)
#ifdef _OPENMP
#define AP_BUILD_OPENMP AP_STR(_OPENMP)
#else
#define AP_BUILD_OPENMP "off"
#endif

const char *ap_build_info(void) {
    return "compiler: " AP_BUILD_COMPILER "; build type: " AP_BUILD_TYPE "; flags: " AP_BUILD_FLAGS
           "; kernels:" AP_BUILD_KERNELS "; openmp: " AP_BUILD_OPENMP;
}

const char *ap_compiled_isas(void) { return AP_BUILD_KERNELS + 1; }

const char *ap_isa(void) {
    const ap_kernel_table *t = ap_kernels();
    return t ? t->isa : "unavailable";
}

int ap_openmp_enabled(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

int ap_max_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
