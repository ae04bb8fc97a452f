/* kernels.h - the kernel table shared by the dispatch layer and every ISA.
 *
 * A kernel pools a whole tensor described by a validated plan. Kernels are
 * named ap_avgpool_<layout>_<dtype>_<isa>; every ISA provides the full set
 * (falling back to the scalar kernel where it has nothing better).
 */
#ifndef AP_KERNELS_H
#define AP_KERNELS_H

#include "../plan.h"

typedef ap_status (*ap_kernel_fn)(const ap_plan *plan, const void *x, void *y);

/* Indexed [layout][dtype]. */
typedef struct ap_kernel_table {
    const char *isa;
    ap_kernel_fn pool[2][4];
} ap_kernel_table;

ap_status ap_avgpool_nchw_f32_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_f64_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_f16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_bf16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f32_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f64_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_bf16_scalar(const ap_plan *plan, const void *x, void *y);

extern const ap_kernel_table ap_kernels_scalar;
#if defined(AP_HAVE_X86_KERNELS)
extern const ap_kernel_table ap_kernels_avx2;
extern const ap_kernel_table ap_kernels_avx512;
#endif
#if defined(AP_HAVE_NEON_KERNELS)
extern const ap_kernel_table ap_kernels_neon;
#endif

#endif /* AP_KERNELS_H */
