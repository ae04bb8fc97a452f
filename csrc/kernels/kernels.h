/* kernels.h - the kernel table shared by the dispatch layer and every ISA.
 *
 * A kernel pools a whole tensor described by a validated plan. Kernels are
 * named ap_avgpool_<layout>_<dtype>_<isa>; every ISA provides the full set
 * (falling back to the scalar kernel where it has nothing better).
 */
#ifndef AP_KERNELS_H
#define AP_KERNELS_H

#include <math.h>

#include "../isa.h"
#include "../plan.h"

/* The mean of a window (docs/semantics.md): sum over its counted taps, count its divisor;
 * nan_omit: `nans` of its `taps` valid taps were NaN and left both, and a window with fewer
 * than min_count valid values is NaN. ap_mean_float and ap_mean_double, for the scalar
 * kernels' accumulators and the float64 vector paths. */
#define AP_DEFINE_MEAN_(ACC)                                                                 \
    static inline ACC ap_mean_##ACC(const ap_plan *p, ACC sum, int64_t count, int64_t taps,  \
                                    int64_t nans) {                                          \
        if (p->nan_omit && taps - nans < p->min_count) return (ACC)NAN;                      \
        if (p->divisor_override != 0) return sum / (ACC)p->divisor_override;                 \
        count -= nans;                                                                       \
        if (count == 0) return (ACC)NAN; /* empty window */                                  \
        return sum / (ACC)count;                                                             \
    }
AP_DEFINE_MEAN_(float)
AP_DEFINE_MEAN_(double)
#undef AP_DEFINE_MEAN_

typedef ap_status (*ap_kernel_fn)(const ap_plan *plan, const void *x, void *y);

/* Backward: gx (input shape) from gy (output shape), either layout. */
typedef ap_status (*ap_backward_fn)(const ap_plan *plan, const ap_inverse *inv, const void *gy,
                                    void *gx);

/* Indexed [layout][dtype]; lanes[dtype] is the float lanes of that dtype's
 * kernels, 0 where they are the scalar ones (ap_choose_path needs it); float64's
 * vector kernel (simd_f64.inc, plain C over double) has 1. */
typedef struct ap_kernel_table {
    const char *isa;
    ap_kernel_fn pool[2][4];
    int lanes[4];
    ap_backward_fn backward[4]; /* [dtype], both layouts */
} ap_kernel_table;

ap_status ap_avgpool_nchw_f32_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_f64_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_f16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nchw_bf16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f32_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f64_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_f16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_nhwc_bf16_scalar(const ap_plan *plan, const void *x, void *y);
ap_status ap_avgpool_backward_f32_scalar(const ap_plan *plan, const ap_inverse *inv,
                                         const void *gy, void *gx);
ap_status ap_avgpool_backward_f64_scalar(const ap_plan *plan, const ap_inverse *inv,
                                         const void *gy, void *gx);
ap_status ap_avgpool_backward_f16_scalar(const ap_plan *plan, const ap_inverse *inv,
                                         const void *gy, void *gx);
ap_status ap_avgpool_backward_bf16_scalar(const ap_plan *plan, const ap_inverse *inv,
                                          const void *gy, void *gx);

/* AP_NAN_OMIT through a table's vector float32 kernels (nan_omit.c): two
 * window sums and a pass that divides; for plans whose path is not a
 * scalar one. */
ap_status ap_omit_run(const ap_plan *p, const ap_kernel_table *table, const void *x, void *y);

/* The kernel table in use (dispatch.c): chosen at the first call from
 * AVGPOOL_ISA or the CPU, or by ap_set_isa. NULL when AVGPOOL_ISA names an
 * unavailable instruction set; *status (if not NULL) then says AP_ERR_ISA. */
const ap_kernel_table *ap_kernels(ap_status *status);

/* dst[c * dst_ld + r] = src[r * src_ld + c] for r < rows, c < cols, elements of es
 * bytes (2, 4 or 8); src and dst do not overlap (relayout.c). In passes of 16 columns,
 * so that the lines read and written stay in L1; 4-byte elements in 4 x 4 register
 * transposes on x86-64. */
void ap_transpose(const void *src, int64_t src_ld, void *dst, int64_t dst_ld, int64_t rows,
                  int64_t cols, size_t es);

/* Bytes a call must move (input read + output written) for its float32
 * output to be written with streaming stores (dispatch.c). */
int64_t ap_stream_bytes(void);

/* Whether the pages of [p, p + bytes) are in memory already (dispatch.c):
 * streaming stores go only to those. */
int ap_pages_resident(const void *p, int64_t bytes);

/* ap_kernels_<isa> for every instruction set compiled in (isa.h). */
#define AP_DECLARE_TABLE(isa) AP_ISA_BUILT_##isa(extern const ap_kernel_table ap_kernels_##isa;)
AP_ISAS(AP_DECLARE_TABLE)
#undef AP_DECLARE_TABLE

/* The table that runs a tile's plan: `table`, or the scalar one (with the
 * plan's path set to scalar) for a tile of windows lying wholly past the
 * input's end, which reads one input position before them (pad_begin < 0):
 * its outputs sum no tap, and the scalar kernels read the taps tables only. */
static inline const ap_kernel_table *ap_tile_table(ap_plan *tile, const ap_kernel_table *table) {
    for (int a = 0; a < 3; ++a)
        if (tile->axis[a].pad_begin < 0) {
            tile->path = AP_PATH_SCALAR;
            return &ap_kernels_scalar;
        }
    return table;
}

#endif /* AP_KERNELS_H */
