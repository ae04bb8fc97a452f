# Declarations of the public C API (csrc/include/avgpool.h).
from libc.stdint cimport int32_t, int64_t, uint16_t


cdef extern from "avgpool.h" nogil:
    enum: AP_MAX_SPATIAL

    ctypedef enum ap_status:
        AP_OK
        AP_ERR_NULL_POINTER
        AP_ERR_RANK
        AP_ERR_LAYOUT
        AP_ERR_DTYPE
        AP_ERR_TENSOR_SIZE
        AP_ERR_WINDOW
        AP_ERR_STRIDE
        AP_ERR_DILATION
        AP_ERR_PADDING
        AP_ERR_WINDOW_TOO_LARGE
        AP_ERR_OUTPUT_SIZE
        AP_ERR_OVERFLOW
        AP_ERR_OUT_OF_MEMORY
        AP_ERR_ISA
        AP_ERR_TILE
        AP_ERR_NAN_POLICY
        AP_ERR_THREAD_POOL
        AP_ERR_ALIGNMENT

    ctypedef enum ap_layout:
        AP_LAYOUT_NCHW
        AP_LAYOUT_NHWC

    ctypedef enum ap_dtype:
        AP_DTYPE_F32
        AP_DTYPE_F64
        AP_DTYPE_F16
        AP_DTYPE_BF16

    ctypedef struct ap_tensor_desc:
        int64_t batch
        int64_t channels
        int32_t rank
        int64_t sizes[AP_MAX_SPATIAL]
        ap_layout layout

    ctypedef struct ap_pool_desc:
        int32_t rank
        int64_t window[AP_MAX_SPATIAL]
        int64_t strides[AP_MAX_SPATIAL]
        int64_t dilations[AP_MAX_SPATIAL]
        int64_t start_padding[AP_MAX_SPATIAL]
        int64_t end_padding[AP_MAX_SPATIAL]
        int64_t output_sizes[AP_MAX_SPATIAL]
        int32_t include_padding
        int32_t count_overhang
        int64_t divisor_override
        int32_t nan_policy
        int64_t min_count

    ctypedef struct ap_adaptive_desc:
        int32_t rank
        int64_t output_sizes[AP_MAX_SPATIAL]
        int32_t nan_policy
        int64_t min_count

    ctypedef struct ap_error:
        ap_status status
        int32_t axis
        const char *field
        char detail[160]

    const char *ap_status_string(ap_status status)
    ap_status ap_pool_check(const ap_pool_desc *desc, const ap_tensor_desc *input,
                            int64_t *out_sizes, ap_error *err)
    ap_status ap_adaptive_check(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                int64_t *out_sizes, ap_error *err)
    ap_status ap_pool_output_sizes(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                   int64_t *out_sizes)
    ap_status ap_adaptive_output_sizes(const ap_adaptive_desc *desc,
                                       const ap_tensor_desc *input, int64_t *out_sizes)
    ap_status ap_avgpool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                         ap_dtype dtype, const void *x, void *y, int num_threads)
    ap_status ap_adaptive_avgpool(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                  ap_dtype dtype, const void *x, void *y, int num_threads)
    ap_status ap_avgpool_backward(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                  ap_dtype dtype, const void *gy, void *gx, int num_threads)
    ap_status ap_adaptive_avgpool_backward(const ap_adaptive_desc *desc,
                                           const ap_tensor_desc *input, ap_dtype dtype,
                                           const void *gy, void *gx, int num_threads)
    ap_status ap_explain_pool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                              ap_dtype dtype, char *buf, size_t len)
    ap_status ap_explain_adaptive(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                  ap_dtype dtype, char *buf, size_t len)
    ctypedef struct ap_tile:
        int64_t out_start[AP_MAX_SPATIAL]
        int64_t out_size[AP_MAX_SPATIAL]
        int64_t in_start[AP_MAX_SPATIAL]
        int64_t in_size[AP_MAX_SPATIAL]
        int64_t batch
        int64_t channels
    ap_status ap_pool_tile_input(const ap_pool_desc *desc, const ap_tensor_desc *whole,
                                 ap_tile *tile)
    ap_status ap_adaptive_tile_input(const ap_adaptive_desc *desc,
                                     const ap_tensor_desc *whole, ap_tile *tile)
    ap_status ap_avgpool_tile(const ap_pool_desc *desc, const ap_tensor_desc *whole,
                              ap_dtype dtype, const ap_tile *tile, const void *x, void *y,
                              int num_threads)
    ap_status ap_adaptive_avgpool_tile(const ap_adaptive_desc *desc,
                                       const ap_tensor_desc *whole, ap_dtype dtype,
                                       const ap_tile *tile, const void *x, void *y,
                                       int num_threads)
    ctypedef struct ap_operator:
        pass
    ap_status ap_operator_create_pool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                      ap_dtype dtype, int num_threads, ap_operator **op,
                                      ap_error *err)
    ap_status ap_operator_create_adaptive(const ap_adaptive_desc *desc,
                                          const ap_tensor_desc *input, ap_dtype dtype,
                                          int num_threads, ap_operator **op, ap_error *err)
    ap_status ap_operator_set_output_layout(ap_operator *op, ap_layout layout)
    ap_status ap_operator_output(const ap_operator *op, ap_tensor_desc *output)
    ap_status ap_operator_run(const ap_operator *op, const void *x, void *y)
    ap_status ap_operator_run_backward(const ap_operator *op, const void *gy, void *gx)
    void ap_operator_destroy(ap_operator *op)
    const char *ap_version()
    const char *ap_build_info()
    const char *ap_compiled_isas()
    const char *ap_isa()
    ap_status ap_set_isa(const char *name)
    int ap_openmp_enabled()
    int ap_max_threads()
    ap_status ap_relayout(const ap_tensor_desc *input, ap_dtype dtype, const void *x, void *y,
                          int num_threads)
    const char *ap_thread_pool()
    ap_status ap_set_thread_pool(const char *name)
