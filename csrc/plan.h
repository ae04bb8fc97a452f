/* plan.h - the per-call plan shared by every kernel.
 *
 * Validation turns a descriptor and a tensor description into per-axis
 * tables (first valid tap, number of valid taps, divisor factor) computed
 * once per call. Every rank is padded to three spatial axes (D, H, W) with
 * trivial leading axes, so kernels handle one shape only.
 */
#ifndef AP_PLAN_H
#define AP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "avgpool.h"
#include "paths.h"

typedef struct ap_axis_plan {
    int64_t in;          /* input size                                      */
    int64_t out;         /* output size                                     */
    int64_t step;        /* distance between taps (dilation; 1 if adaptive) */
    int64_t window;      /* k (adaptive: largest window length)             */
    int64_t stride;      /* s; adaptive: in / out when out divides in, else 0
                            (0 marks windows of varying length)             */
    int64_t pad_begin;   /* pb (adaptive: 0)                                */
    int64_t *first;      /* [out] input index of the first valid tap        */
    int64_t *taps;       /* [out] number of valid taps                      */
    int64_t *count;      /* [out] this axis' factor of the divisor          */
    int64_t origin;      /* a tile's plan: the whole array's index of output
                            0 (0 otherwise); sums that slide along an axis
                            restart at whole-array positions               */
} ap_axis_plan;

typedef struct ap_plan {
    int64_t batch, channels;
    ap_layout layout;
    ap_dtype dtype;
    ap_axis_plan axis[3];       /* D, H, W                                  */
    int64_t divisor_override;   /* 0: product of the axis counts            */
    int nan_omit;               /* AP_NAN_OMIT: NaN taps leave the sum and
                                   the divisor (SIMD: nan_omit.c)           */
    int64_t min_count;          /* nan_omit: least non-NaN taps, else NaN   */
    int adaptive;
    int num_threads;            /* > 0                                      */
    int out_channels_first;     /* channels-last input, output stored channels
                                   first (ap_operator_set_output_layout):
                                   nhwc-direct and nhwc-separable transpose
                                   each output row into place (ap_transpose) */
    int64_t in_plane, out_plane; /* elements of one spatial volume         */
    int64_t *storage;           /* owns every per-axis table                */
    /* The kernel path, set by ap_choose_path (paths.c) for the kernel
     * table in use; the kernels read these and decide nothing else. */
    ap_path path;
    const char *reason;         /* why, in a few words (static string)      */
    int vertical_running;       /* rows paths: vertical sums carried from
                                   row to row (tall windows), else direct
                                   sums in groups of rows                   */
    int rows_fused;             /* rows-s2: output rows summed in registers
                                   from their input rows, no row buffer
                                   (ap_rows_fused_fits)                     */
    int horizontal_running;     /* nhwc-separable: sliding sums along W     */
    int nhwc_rowsums;           /* nhwc-direct: an output row's window rows
                                   summed into a (W, C) row first           */
    int nhwc_cols;              /* nhwc-direct: windows 2-3 wide at stride 1
                                   or 3 wide at stride 2 share column sums,
                                   4 outputs at a time                      */
    int nhwc_plane;             /* nhwc-direct, nhwc_cols on a small image:
                                   each output row from a (W, C) row of
                                   column sums (ap_nhwc_plane_fits)         */
    int plane_tiled;            /* plane-flat: windows k = stride (2 or 4)
                                   tile each row from its start: shuffles
                                   over the whole buffer, else gathers      */
    int64_t row_off;            /* rows paths and nhwc-separable: input
                                   position q at row buffer position
                                   row_off + q (uniform windows read their
                                   padded taps as zeros)                    */
    int64_t row_len;            /* positions a row buffer needs: the input
                                   row and the last window's extent         */
    int64_t row_buflen;         /* rows paths: floats per row buffer (with
                                   vector slack and the row sums), < 2^31   */
} ap_plan;

/* Bytes per element of a valid dtype. */
static inline size_t ap_dtype_bytes(ap_dtype dtype) {
    return dtype == AP_DTYPE_F64 ? 8 : dtype == AP_DTYPE_F32 ? 4 : 2;
}

/* Whether p is aligned for an element of a valid dtype (avgpool.h's buffer rule: the kernels
 * read and write elements, and float64 vectors, through pointers of the element's type). */
static inline int ap_aligned_for(const void *p, ap_dtype dtype) {
    const size_t a = dtype == AP_DTYPE_F64   ? _Alignof(double)
                     : dtype == AP_DTYPE_F32 ? _Alignof(float)
                                             : _Alignof(uint16_t);
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* The buffers of a call that reads n_in elements at in and writes n_out at out: each must be
 * non-NULL and aligned for dtype where it has elements (avgpool.h: AP_ERR_NULL_POINTER, then
 * AP_ERR_ALIGNMENT). */
static inline ap_status ap_check_buffers(const void *in, int64_t n_in, const void *out,
                                         int64_t n_out, ap_dtype dtype) {
    if ((n_in > 0 && !in) || (n_out > 0 && !out)) return AP_ERR_NULL_POINTER;
    if ((n_in > 0 && !ap_aligned_for(in, dtype)) || (n_out > 0 && !ap_aligned_for(out, dtype)))
        return AP_ERR_ALIGNMENT;
    return AP_OK;
}

/* A tensor description's own rules (rank, layout, sizes, overflow), as the
 * pooling calls check them; *plane: its elements per spatial volume. */
ap_status ap_tensor_check(const ap_tensor_desc *t, int64_t *plane);

ap_status ap_plan_pool(ap_plan *plan, const ap_pool_desc *desc, const ap_tensor_desc *input,
                       ap_dtype dtype, int num_threads);
ap_status ap_plan_adaptive(ap_plan *plan, const ap_adaptive_desc *desc,
                           const ap_tensor_desc *input, ap_dtype dtype, int num_threads);
void ap_plan_free(ap_plan *plan);

/* The divisor of output (od, oh, ow): divisor_override, or the product of
 * the axes' factors. */
static inline int64_t ap_plan_divisor(const ap_plan *p, int64_t od, int64_t oh, int64_t ow) {
    return p->divisor_override
               ? p->divisor_override
               : p->axis[0].count[od] * p->axis[1].count[oh] * p->axis[2].count[ow];
}

/* Tiles (ap_avgpool_tile). ap_plan_tile_input checks tile's output box
 * against the whole plan (a plan of one plane) and fills its input box;
 * ap_plan_tile makes the tile's plan: the whole plan's tables for the
 * output box, taps moved to the input box, divisors unchanged, so every
 * kernel runs it as an ordinary call. rank: the spatial rank of the boxes. */
ap_status ap_plan_tile_input(const ap_plan *whole, int rank, ap_tile *tile);
ap_status ap_plan_tile(ap_plan *sub, const ap_plan *whole, int rank, const ap_tile *tile);

/* The plan's taps inverted, for the backward pass: per axis, the outputs
 * whose windows count input position i are list[off[i] .. off[i + 1]), in
 * ascending order (the taps of every output, once each, so at most
 * out * window entries per axis). */
typedef struct ap_axis_inverse {
    int64_t *off;  /* [in + 1] */
    int64_t *list; /* [off[in]] */
} ap_axis_inverse;

typedef struct ap_inverse {
    ap_axis_inverse axis[3]; /* D, H, W, as in the plan */
    int64_t *storage;        /* owns every table        */
} ap_inverse;

/* AP_OK, AP_ERR_OVERFLOW or AP_ERR_OUT_OF_MEMORY; free with ap_inverse_free
 * (also after a failure). */
ap_status ap_inverse_make(ap_inverse *inv, const ap_plan *plan);
void ap_inverse_free(ap_inverse *inv);

/* Choose the kernel path of a validated plan for a kernel of `lanes` float
 * lanes (0: the scalar kernel) and store it, with the fields above. When
 * `why` is not NULL, also write a sentence with the numbers that decided
 * it (ap_explain_*); kernels pass NULL. Returns plan->path. */
ap_path ap_choose_path(ap_plan *plan, int lanes, char *why, size_t why_len);

/* The path of a tile's plan (ap_plan_tile): the path and switches that
 * ap_choose_path chose for `whole` (the whole array's plan, for its own
 * channels), so that every output sums its taps in the order of
 * the whole call; buffer sizes follow the tile. Same-flat, which pools
 * whole 'same' planes, becomes rows-s1, whose sums are the same. */
ap_path ap_choose_tile_path(ap_plan *plan, const ap_plan *whole, int lanes);

/* Whether the box path can carry its inputs' non-finite values as counts
 * (simd_box.inc): the NaN, +inf and -inf taps of a window each fewer than
 * 2^AP_BOX_FIELD_BITS, and every row prefix sum of the packed counts below
 * 2^53. Then the box path runs nan_policy omit itself, and inf or NaN in a
 * row costs no direct sums. */
#define AP_BOX_SEGMENT 512 /* outputs per prefix-sum restart (simd_box.inc) */
#define AP_BOX_FIELD_BITS 17
static inline int ap_box_counts_fit(const ap_plan *p) {
    const int64_t kd = p->axis[0].window, kh = p->axis[1].window, kw = p->axis[2].window;
    return p->path == AP_PATH_BOX && kd * kh * kw < (INT64_C(1) << AP_BOX_FIELD_BITS) &&
           (AP_BOX_SEGMENT + kw + 1) * kh * kd < (INT64_C(1) << (53 - 2 * AP_BOX_FIELD_BITS));
}

/* Whether the plan's kernels leave NaN out themselves under AP_NAN_OMIT; else the
 * call runs through ap_omit_run (nan_omit.c). */
static inline int ap_plan_skips_nan(const ap_plan *p) {
    return ap_path_skips_nan(p->path) && (p->path != AP_PATH_BOX || ap_box_counts_fit(p));
}

/* Overflow-checked int64 arithmetic: return 0 and store the result, or
 * return 1 on overflow. */
static inline int ap_mul_overflow(int64_t a, int64_t b, int64_t *r) {
    return __builtin_mul_overflow(a, b, r);
}
static inline int ap_add_overflow(int64_t a, int64_t b, int64_t *r) {
    return __builtin_add_overflow(a, b, r);
}

#endif /* AP_PLAN_H */
