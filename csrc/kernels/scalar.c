/* scalar.c - the reference kernels: every layout and dtype, plain loops over
 * the plan's valid taps. Each SIMD kernel is tested against these. float16
 * and bfloat16 accumulate in float32, float32 in float32, float64 in float64. */
#include <math.h>

#include "../convert.h"
#include "../threading.h"
#include "kernels.h"

#define AP_IDENTITY(v) (v)

#define AP_T float
#define AP_ACC float
#define AP_LOAD AP_IDENTITY
#define AP_STORE AP_IDENTITY
#define AP_SUFFIX f32
#include "scalar_impl.inc"
#undef AP_T
#undef AP_ACC
#undef AP_LOAD
#undef AP_STORE
#undef AP_SUFFIX

#define AP_T double
#define AP_ACC double
#define AP_LOAD AP_IDENTITY
#define AP_STORE AP_IDENTITY
#define AP_SUFFIX f64
#include "scalar_impl.inc"
#undef AP_T
#undef AP_ACC
#undef AP_LOAD
#undef AP_STORE
#undef AP_SUFFIX

#define AP_T uint16_t
#define AP_ACC float
#define AP_LOAD ap_f16_to_f32
#define AP_STORE ap_f32_to_f16
#define AP_SUFFIX f16
#include "scalar_impl.inc"
#undef AP_T
#undef AP_ACC
#undef AP_LOAD
#undef AP_STORE
#undef AP_SUFFIX

#define AP_T uint16_t
#define AP_ACC float
#define AP_LOAD ap_bf16_to_f32
#define AP_STORE ap_f32_to_bf16
#define AP_SUFFIX bf16
#include "scalar_impl.inc"
#undef AP_T
#undef AP_ACC
#undef AP_LOAD
#undef AP_STORE
#undef AP_SUFFIX

const ap_kernel_table ap_kernels_scalar = {
    "scalar",
    {{ap_avgpool_nchw_f32_scalar, ap_avgpool_nchw_f64_scalar, ap_avgpool_nchw_f16_scalar,
      ap_avgpool_nchw_bf16_scalar},
     {ap_avgpool_nhwc_f32_scalar, ap_avgpool_nhwc_f64_scalar, ap_avgpool_nhwc_f16_scalar,
      ap_avgpool_nhwc_bf16_scalar}},
    {0, 0, 0, 0},
    {ap_avgpool_backward_f32_scalar, ap_avgpool_backward_f64_scalar,
     ap_avgpool_backward_f16_scalar, ap_avgpool_backward_bf16_scalar},
};
