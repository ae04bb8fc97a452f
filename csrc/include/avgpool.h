/*
 * avgpool.h - public C API of the avgpool core.
 *
 * Average pooling (windowed and adaptive) over tensors with 1 to 3 spatial
 * axes, in channels-first (N, C, [D,] [H,] W) or channels-last
 * (N, [D,] [H,] W, C) layout, for float32, float64, float16 and bfloat16.
 *
 * Model (one per spatial axis, see SEMANTICS.md of the project):
 *   effective window   ek  = (k - 1) * d + 1
 *   default output     out = floor((in + pb + pe - ek) / s) + 1
 *   window of o        p_j = o * s - pb + j * d,  j = 0 .. k-1
 *   summed positions   0 <= p_j < in
 *   divisor            product over axes of the per-axis counts:
 *                      exclude padding: the valid positions;
 *                      include padding: positions in [-pb, in + pe) and,
 *                      with count_overhang, also positions >= in + pe;
 *                      or divisor_override when non-zero.
 *   A window with divisor 0 (exclude padding, no valid position) gives NaN.
 * Adaptive pooling: window of o is [floor(o*in/out), ceil((o+1)*in/out)).
 *
 * Conventions
 *   - Every function validates all of its arguments and returns an
 *     ap_status; nothing is written to the output on error.
 *   - Buffers are dense (C-contiguous in the given layout) and owned by the
 *     caller; the library never keeps a pointer after a call returns.
 *     Input and output must not overlap.
 *   - float16 and bfloat16 buffers are passed as uint16_t bit patterns;
 *     they are computed in float32 and rounded to nearest-even on store.
 *   - Thread safety: all entry points are re-entrant and may be called
 *     concurrently from several threads on distinct outputs. num_threads
 *     <= 0 means the OpenMP default; the setting applies to that call only.
 */
#ifndef AVGPOOL_H
#define AVGPOOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(AVGPOOL_SHARED)
#  ifdef AVGPOOL_BUILDING
#    define AP_API __declspec(dllexport)
#  else
#    define AP_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define AP_API __attribute__((visibility("default")))
#else
#  define AP_API
#endif

#define AP_VERSION_MAJOR 0
#define AP_VERSION_MINOR 1
#define AP_VERSION_PATCH 0

/* Largest number of spatial axes. */
#define AP_MAX_SPATIAL 3

/* Status codes. AP_OK is 0; every error is positive. */
typedef enum ap_status {
    AP_OK = 0,
    AP_ERR_NULL_POINTER = 1,   /* a required pointer is NULL                      */
    AP_ERR_RANK = 2,           /* spatial rank not in 1..3, or desc/tensor differ */
    AP_ERR_LAYOUT = 3,         /* unknown layout value                            */
    AP_ERR_DTYPE = 4,          /* unknown dtype value                             */
    AP_ERR_TENSOR_SIZE = 5,    /* batch or channels < 0, spatial size < 1         */
    AP_ERR_WINDOW = 6,         /* window size < 1                                 */
    AP_ERR_STRIDE = 7,         /* stride < 1                                      */
    AP_ERR_DILATION = 8,       /* dilation < 1                                    */
    AP_ERR_PADDING = 9,        /* negative padding                                */
    AP_ERR_WINDOW_TOO_LARGE = 10, /* effective window exceeds the padded input    */
    AP_ERR_OUTPUT_SIZE = 11,   /* output size < 0, or a window starts past the
                                  padded end                                      */
    AP_ERR_OVERFLOW = 12,      /* a size or size product overflows int64          */
    AP_ERR_OUT_OF_MEMORY = 13, /* a work buffer could not be allocated            */
    AP_ERR_ISA = 14            /* requested instruction set not available         */
} ap_status;

typedef enum ap_layout {
    AP_LAYOUT_NCHW = 0,  /* channels first: N, C, spatial...  */
    AP_LAYOUT_NHWC = 1   /* channels last:  N, spatial..., C  */
} ap_layout;

typedef enum ap_dtype {
    AP_DTYPE_F32 = 0,
    AP_DTYPE_F64 = 1,
    AP_DTYPE_F16 = 2,   /* IEEE binary16, passed as uint16_t */
    AP_DTYPE_BF16 = 3   /* bfloat16, passed as uint16_t       */
} ap_dtype;

/* Shape of a dense input tensor. sizes[0 .. rank-1] are the spatial sizes,
 * outermost first (D, H, W for rank 3). */
typedef struct ap_tensor_desc {
    int64_t batch;                   /* N >= 0              */
    int64_t channels;                /* C >= 0              */
    int32_t rank;                    /* spatial rank 1..3   */
    int64_t sizes[AP_MAX_SPATIAL];   /* each >= 1           */
    ap_layout layout;
} ap_tensor_desc;

/* Windowed average pooling (DirectML AVERAGE_POOLING1 plus the switches the
 * other standards need). Entries past rank are ignored. */
typedef struct ap_pool_desc {
    int32_t rank;                            /* spatial rank 1..3           */
    int64_t window[AP_MAX_SPATIAL];          /* k >= 1                      */
    int64_t strides[AP_MAX_SPATIAL];         /* s >= 1                      */
    int64_t dilations[AP_MAX_SPATIAL];       /* d >= 1                      */
    int64_t start_padding[AP_MAX_SPATIAL];   /* pb >= 0                     */
    int64_t end_padding[AP_MAX_SPATIAL];     /* pe >= 0                     */
    int64_t output_sizes[AP_MAX_SPATIAL];    /* 0: floor rule; else >= 1 and
                                                (out-1)*s - pb < in + pe
                                                unless count_overhang       */
    int32_t include_padding;                 /* padded positions count      */
    int32_t count_overhang;                  /* OpenVINO ceil rounding: with
                                                include_padding, positions
                                                >= in + pe count too; and a
                                                window may start at or past
                                                in + pe (its sum is 0)      */
    int64_t divisor_override;                /* non-zero: divide by this    */
} ap_pool_desc;

/* Adaptive average pooling: output sizes per spatial axis, each >= 1. */
typedef struct ap_adaptive_desc {
    int32_t rank;
    int64_t output_sizes[AP_MAX_SPATIAL];
} ap_adaptive_desc;

/* A human-readable, static description of a status code (never NULL). */
AP_API const char *ap_status_string(ap_status status);

/* Fill a descriptor with the defaults for `rank` spatial axes and window
 * `window[0..rank-1]`: strides 1, dilations 1, no padding, floor rule. */
AP_API ap_status ap_pool_desc_init(ap_pool_desc *desc, int32_t rank, const int64_t *window);

/* Validate desc against input and write the output spatial sizes to
 * out_sizes[0 .. rank-1]. */
AP_API ap_status ap_pool_output_sizes(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                      int64_t out_sizes[AP_MAX_SPATIAL]);
AP_API ap_status ap_adaptive_output_sizes(const ap_adaptive_desc *desc,
                                          const ap_tensor_desc *input,
                                          int64_t out_sizes[AP_MAX_SPATIAL]);

/* Windowed average pooling. x holds the input described by `input`; y
 * receives the output: same batch, channels and layout, spatial sizes from
 * ap_pool_output_sizes. dtype selects the element type of both buffers.
 * x and y may be NULL only when the tensor they describe has no element. */
AP_API ap_status ap_avgpool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                            ap_dtype dtype, const void *x, void *y, int num_threads);
AP_API ap_status ap_adaptive_avgpool(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                     ap_dtype dtype, const void *x, void *y, int num_threads);

/* Typed conveniences for ap_avgpool / ap_adaptive_avgpool. */
AP_API ap_status ap_avgpool_f32(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                const float *x, float *y, int num_threads);
AP_API ap_status ap_avgpool_f64(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                const double *x, double *y, int num_threads);
AP_API ap_status ap_avgpool_f16(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                const uint16_t *x, uint16_t *y, int num_threads);
AP_API ap_status ap_avgpool_bf16(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                 const uint16_t *x, uint16_t *y, int num_threads);
AP_API ap_status ap_adaptive_avgpool_f32(const ap_adaptive_desc *desc,
                                         const ap_tensor_desc *input, const float *x, float *y,
                                         int num_threads);
AP_API ap_status ap_adaptive_avgpool_f64(const ap_adaptive_desc *desc,
                                         const ap_tensor_desc *input, const double *x,
                                         double *y, int num_threads);
AP_API ap_status ap_adaptive_avgpool_f16(const ap_adaptive_desc *desc,
                                         const ap_tensor_desc *input, const uint16_t *x,
                                         uint16_t *y, int num_threads);
AP_API ap_status ap_adaptive_avgpool_bf16(const ap_adaptive_desc *desc,
                                          const ap_tensor_desc *input, const uint16_t *x,
                                          uint16_t *y, int num_threads);

/* Build information. */
AP_API const char *ap_version(void);
/* Instruction set the kernels use ("scalar", "avx2", "avx512", "neon"), or
 * "unavailable" when AVGPOOL_ISA names one this CPU lacks. Chosen at the
 * first call: the environment variable AVGPOOL_ISA forces one, else the best
 * the CPU supports. */
AP_API const char *ap_isa(void);
/* Switch the kernels to `name` ("scalar", "avx2", "avx512", "neon"; NULL or
 * "auto": the best available). Returns AP_ERR_ISA if this CPU or build lacks
 * it, leaving the choice unchanged. Not thread-safe: call it while no other
 * avgpool call is running (tests use it to compare every path). */
AP_API ap_status ap_set_isa(const char *name);
/* Whether the library was built with OpenMP, and its default thread count. */
AP_API int ap_openmp_enabled(void);
AP_API int ap_max_threads(void);

#ifdef __cplusplus
}
#endif

#endif /* AVGPOOL_H */
