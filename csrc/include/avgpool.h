/*
 * avgpool.h - public C API of the avgpool core (libavgpool).
 *
 * Average pooling (windowed and adaptive) over tensors with 1 to 3 spatial
 * axes, in channels-first (N, C, [D,] [H,] W) or channels-last
 * (N, [D,] [H,] W, C) layout, for float32, float64, float16 and bfloat16.
 *
 * Model (one per spatial axis, see docs/semantics.md):
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
 * Adaptive pooling: window of o is [floor(o*in/out), ceil((o+1)*in/out)),
 * divided by its length.
 *
 * Conventions
 *   - Status: every function that can fail validates all of its arguments
 *     and returns an ap_status (AP_OK = 0). On error nothing is written to
 *     the output buffer or out_sizes, except after AP_ERR_OUT_OF_MEMORY
 *     from a pooling call, when the output's contents are unspecified.
 *   - Buffers: dense (C-contiguous in the given layout), aligned for their
 *     element type (checked: AP_ERR_ALIGNMENT), owned by the caller.
 *     Element (n, c, d, h, w) lives at
 *       NCHW: (((n * C + c) * D + d) * H + h) * W + w
 *       NHWC: (((n * D + d) * H + h) * W + w) * C + c
 *     (ranks 1 and 2 drop D, or D and H). The input is only read; input and
 *     output must not overlap. The library keeps no pointer after a call
 *     returns; work buffers are allocated and freed inside each call.
 *     Strings returned by the library are static: never free them.
 *   - Element types: float16 and bfloat16 are passed as uint16_t bit
 *     patterns; they and float32 accumulate in float32 and round once to
 *     nearest-even on store; float64 accumulates in float64. NaN and inf
 *     propagate as IEEE arithmetic says.
 *   - Sizes are int64_t; every element count times 8 must fit in int64_t
 *     (else AP_ERR_OVERFLOW).
 *   - Thread safety: all entry points except ap_set_isa are re-entrant and
 *     may be called concurrently from several threads (on distinct outputs).
 *     num_threads > 0 caps the OpenMP threads of that call only (small
 *     tensors use fewer: about one per 16 K input elements); <= 0 means the
 *     OpenMP default (OMP_NUM_THREADS). No global state changes, except the
 *     kernel choice: made at the first call (environment variable
 *     AVGPOOL_ISA, read once) or by ap_set_isa.
 *   - Linking: libavgpool.so exports only the AP_API functions below;
 *     Windows DLL users define AVGPOOL_SHARED before including this file.
 */
#ifndef AVGPOOL_H
#define AVGPOOL_H

#include <stddef.h>
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

/* Status codes. AP_OK is 0; every error is positive. ap_status_string gives
 * each a message. The size checks apply per spatial axis. */
typedef enum ap_status {
    AP_OK = 0,
    AP_ERR_NULL_POINTER = 1,   /* a required pointer is NULL (x / y only when
                                  their tensor has elements)                  */
    AP_ERR_RANK = 2,           /* rank not in 1..3, or desc and tensor ranks
                                  differ                                      */
    AP_ERR_LAYOUT = 3,         /* layout is not an ap_layout value            */
    AP_ERR_DTYPE = 4,          /* dtype is not an ap_dtype value              */
    AP_ERR_TENSOR_SIZE = 5,    /* batch or channels < 0, a spatial size < 1   */
    AP_ERR_WINDOW = 6,         /* a window size < 1                           */
    AP_ERR_STRIDE = 7,         /* a stride < 1                                */
    AP_ERR_DILATION = 8,       /* a dilation < 1                              */
    AP_ERR_PADDING = 9,        /* a negative padding                          */
    AP_ERR_WINDOW_TOO_LARGE = 10, /* floor rule: effective window ek exceeds
                                     the padded input in + pb + pe            */
    AP_ERR_OUTPUT_SIZE = 11,   /* an output size < 0 (adaptive: < 1), or,
                                  without count_overhang, an explicit output
                                  size whose last window starts at or past
                                  in + pe                                     */
    AP_ERR_OVERFLOW = 12,      /* a size, padded size, window extent or
                                  element count overflows int64               */
    AP_ERR_OUT_OF_MEMORY = 13, /* a work buffer could not be allocated        */
    AP_ERR_ISA = 14,           /* ap_set_isa: unknown or unsupported name;
                                  pooling calls: AVGPOOL_ISA named one        */
    AP_ERR_TILE = 15,          /* a tile's output box is empty or leaves the
                                  whole output, or its input box is not the
                                  one its outputs read (ap_*_tile_input)      */
    AP_ERR_NAN_POLICY = 16,    /* nan_policy not an ap_nan_policy value, a
                                  negative min_count, or a backward pass of
                                  AP_NAN_OMIT (its gradient depends on x)     */
    AP_ERR_THREAD_POOL = 17,   /* ap_set_thread_pool: unknown name, or
                                  "openmp" in a build without OpenMP       */
    AP_ERR_ALIGNMENT = 18      /* x / y (gy / gx) of a non-empty tensor not
                                  aligned for its element type (2, 4 or 8
                                  bytes: float16 / bfloat16, float32,
                                  float64)                                  */
} ap_status;

/* What a NaN input does to its windows (docs/semantics.md, "NaN-aware
 * averaging"). The standards' front ends propagate. */
typedef enum ap_nan_policy {
    AP_NAN_PROPAGATE = 0, /* IEEE arithmetic: a NaN in a window gives NaN   */
    AP_NAN_OMIT = 1       /* a NaN input position leaves both the sum and
                             the divisor, as if outside the window; padding
                             is never NaN (include_padding still counts it);
                             a window with fewer than min_count non-NaN
                             input positions gives NaN                      */
} ap_nan_policy;

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
 * outermost first (D, H, W for rank 3); entries past rank are ignored. A
 * tensor with batch or channels 0 is valid and has no element. */
typedef struct ap_tensor_desc {
    int64_t batch;                   /* N >= 0              */
    int64_t channels;                /* C >= 0              */
    int32_t rank;                    /* spatial rank 1..3   */
    int64_t sizes[AP_MAX_SPATIAL];   /* each >= 1           */
    ap_layout layout;                /* of input and output */
} ap_tensor_desc;

/* Windowed average pooling (DirectML AVERAGE_POOLING1 plus the switches the
 * other standards need). Entries past rank are ignored. Fill it with
 * ap_pool_desc_init, then change fields. */
typedef struct ap_pool_desc {
    int32_t rank;                            /* spatial rank 1..3           */
    int64_t window[AP_MAX_SPATIAL];          /* k >= 1                      */
    int64_t strides[AP_MAX_SPATIAL];         /* s >= 1                      */
    int64_t dilations[AP_MAX_SPATIAL];       /* d >= 1                      */
    int64_t start_padding[AP_MAX_SPATIAL];   /* pb >= 0                     */
    int64_t end_padding[AP_MAX_SPATIAL];     /* pe >= 0                     */
    int64_t output_sizes[AP_MAX_SPATIAL];    /* 0: floor rule; else >= 1 and
                                                (out-1)*s - pb < in + pe
                                                unless count_overhang (ceil
                                                rounding passes floor + 1)  */
    int32_t include_padding;                 /* non-zero: padded positions
                                                count in the divisor        */
    int32_t count_overhang;                  /* OpenVINO ceil rounding: with
                                                include_padding, positions
                                                >= in + pe count too; and a
                                                window may start at or past
                                                in + pe (its sum is 0). Without
                                                include_padding, a window
                                                starting at or past the
                                                input's end divides by
                                                OpenVINO's in - start: NaN at
                                                the end, -0 past it (+0 when
                                                an even number of axes are
                                                past their end)             */
    int64_t divisor_override;                /* non-zero (may be negative):
                                                every window divides by this,
                                                empty ones too (giving 0)   */
    int32_t nan_policy;                      /* ap_nan_policy (0: propagate) */
    int64_t min_count;                       /* AP_NAN_OMIT: least non-NaN
                                                input positions a window
                                                needs, >= 0 (init: 1)       */
} ap_pool_desc;

/* Adaptive average pooling: output sizes per spatial axis, each >= 1 (may
 * exceed the input size: windows then overlap). Entries past rank are
 * ignored. */
typedef struct ap_adaptive_desc {
    int32_t rank;                            /* spatial rank 1..3           */
    int64_t output_sizes[AP_MAX_SPATIAL];
    int32_t nan_policy;                      /* as in ap_pool_desc          */
    int64_t min_count;                       /* as in ap_pool_desc          */
} ap_adaptive_desc;

/* Where a call broke a rule: filled by ap_pool_check / ap_adaptive_check,
 * so that callers can name the argument without re-deriving the rules. */
typedef struct ap_error {
    ap_status status;   /* the status returned (AP_OK: the fields below are
                           -1, "" and "")                                   */
    int32_t axis;       /* the spatial axis (0 = outermost) whose rule broke,
                           -1 when the rule is not about one axis          */
    const char *field;  /* static string, never NULL: the field that broke
                           the rule: of ap_pool_desc / ap_adaptive_desc
                           "window", "strides", "dilations",
                           "start_padding", "end_padding", "output_sizes",
                           "rank"; of ap_tensor_desc "rank", "layout",
                           "batch", "channels", "sizes"; or two joined by
                           '/' when the rule involves both
                           ("window/dilations": the effective window
                           overflows; "start_padding/end_padding": the
                           padded size overflows; "output_sizes/strides":
                           the last window's end overflows); "desc" or
                           "input" for AP_ERR_NULL_POINTER              */
    char detail[160];   /* the rule with the call's numbers, e.g.
                           "effective window 7 > padded input 5 = 3 + 1
                           + 1"; "" when there is nothing to add        */
} ap_error;

/* A human-readable description of a status code: a static string, never
 * NULL (an unknown value gives "unknown status"). */
AP_API const char *ap_status_string(ap_status status);

/* Fill *desc for `rank` spatial axes with window sizes window[0 .. rank-1]
 * (copied, not validated here): strides 1, dilations 1, no padding, output
 * sizes 0 (floor rule), exclude padding, no count_overhang, no override,
 * NaN propagate (min_count 1, for a switch to AP_NAN_OMIT).
 * Errors: AP_ERR_NULL_POINTER (desc or window), AP_ERR_RANK. */
AP_API ap_status ap_pool_desc_init(ap_pool_desc *desc, int32_t rank, const int64_t *window);

/* Validate desc against the input shape and write the output spatial sizes
 * to out_sizes[0 .. rank-1] (other entries untouched). The output tensor has
 * the input's batch, channels and layout. Pure: no allocation, no kernel.
 * Errors: AP_ERR_NULL_POINTER, AP_ERR_RANK, AP_ERR_LAYOUT,
 * AP_ERR_TENSOR_SIZE, AP_ERR_WINDOW, AP_ERR_STRIDE, AP_ERR_DILATION,
 * AP_ERR_PADDING, AP_ERR_WINDOW_TOO_LARGE, AP_ERR_OUTPUT_SIZE,
 * AP_ERR_OVERFLOW. */
AP_API ap_status ap_pool_output_sizes(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                      int64_t out_sizes[AP_MAX_SPATIAL]);
/* ap_pool_output_sizes that also says where a rule broke: when err is not
 * NULL it receives the status, the spatial axis, the field and the numbers
 * (see ap_error; on AP_OK, status AP_OK, axis -1, field and detail "").
 * out_sizes may be NULL (validation only); otherwise as ap_pool_output_sizes.
 * The rules are checked in the same order, so the status is always the one
 * ap_pool_output_sizes and ap_avgpool return.
 * Errors: those of ap_pool_output_sizes (AP_ERR_NULL_POINTER: desc or
 * input). */
AP_API ap_status ap_pool_check(const ap_pool_desc *desc, const ap_tensor_desc *input,
                               int64_t out_sizes[AP_MAX_SPATIAL], ap_error *err);
/* The same for adaptive pooling (out_sizes = desc->output_sizes once valid).
 * Errors: AP_ERR_NULL_POINTER, AP_ERR_RANK, AP_ERR_LAYOUT,
 * AP_ERR_TENSOR_SIZE, AP_ERR_OUTPUT_SIZE, AP_ERR_OVERFLOW. */
AP_API ap_status ap_adaptive_output_sizes(const ap_adaptive_desc *desc,
                                          const ap_tensor_desc *input,
                                          int64_t out_sizes[AP_MAX_SPATIAL]);
/* ap_adaptive_output_sizes with an optional ap_error, as ap_pool_check. */
AP_API ap_status ap_adaptive_check(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                   int64_t out_sizes[AP_MAX_SPATIAL], ap_error *err);

/* Windowed average pooling.
 *   desc         the window; validated as by ap_pool_output_sizes
 *   input        shape and layout of x (and, with the output sizes, of y)
 *   dtype        element type of both x and y
 *   x            the input, read only; may be NULL if it has no element
 *   y            receives the output (batch x channels x output sizes
 *                elements, input's layout); may be NULL if it has no element
 *   num_threads  > 0: at most this many threads; <= 0: OpenMP default
 * Errors: those of ap_pool_output_sizes, AP_ERR_DTYPE, AP_ERR_NULL_POINTER
 * (desc, input, or x / y of a non-empty tensor), AP_ERR_ALIGNMENT (x / y of
 * a non-empty tensor), AP_ERR_OUT_OF_MEMORY, AP_ERR_ISA (AVGPOOL_ISA named an
 * unavailable instruction set). */
AP_API ap_status ap_avgpool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                            ap_dtype dtype, const void *x, void *y, int num_threads);
/* Adaptive average pooling; arguments and errors as for ap_avgpool, with
 * those of ap_adaptive_output_sizes. */
AP_API ap_status ap_adaptive_avgpool(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                     ap_dtype dtype, const void *x, void *y, int num_threads);

/* The backward pass (gradient) of ap_avgpool: given gy, the gradient of a
 * loss with respect to the output y, write gx, its gradient with respect to
 * the input x. Every input position that a window o counts (a valid tap,
 * not padding) receives gy[o] / divisor(o) from each such window, the same
 * divisor as the forward (divisor_override included); a window whose
 * divisor is 0 sends nothing back (its output is NaN whatever x holds).
 * docs/semantics.md, section "Backward".
 *   desc, input, dtype, num_threads   as for ap_avgpool
 *   gy   the output's gradient: batch x channels x output sizes elements in
 *        input's layout, read only; may be NULL if it has no element
 *   gx   receives the input's gradient (every element written, 0 where no
 *        window counts the position); may be NULL if it has no element
 * float16 and bfloat16 sum in float32, float32 in float32, float64 in
 * float64, gathering per input element: no atomics, and the result is the
 * same for any num_threads. Errors: those of ap_avgpool. */
AP_API ap_status ap_avgpool_backward(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                     ap_dtype dtype, const void *gy, void *gx, int num_threads);
/* The backward pass of ap_adaptive_avgpool; arguments and errors as for
 * ap_avgpool_backward and ap_adaptive_avgpool. */
AP_API ap_status ap_adaptive_avgpool_backward(const ap_adaptive_desc *desc,
                                              const ap_tensor_desc *input, ap_dtype dtype,
                                              const void *gy, void *gx, int num_threads);

/* Tiles of a larger array. A tile computes a box of the whole array's
 * output from the box of the whole input that those outputs read (their
 * windows' taps, the halo included): padding, divisors, ceil-rule and
 * adaptive windows are decided by position in the whole array, so a tile's
 * outputs are those of ap_avgpool on the whole array. Chunked and
 * distributed callers (avgpool.dask) pool each output chunk from its tile.
 * Boxes are in the whole array's spatial coordinates, outermost axis
 * first. A tile may hold any of the whole array's images and channels (they
 * need no halo): `batch` and `channels` are how many (0: all of them).
 *
 *   ap_tile t = {.out_start = {0, 64}, .out_size = {32, 32}};
 *   ap_pool_tile_input(&desc, &whole, &t);         fills in_start, in_size
 *   ... x = the whole input's box t.in_start, t.in_size (dense, whole's layout)
 *   ap_avgpool_tile(&desc, &whole, AP_DTYPE_F32, &t, x, y, 0);
 */
typedef struct ap_tile {
    int64_t out_start[AP_MAX_SPATIAL]; /* the output box: first position   */
    int64_t out_size[AP_MAX_SPATIAL];  /*   and size, each >= 1            */
    int64_t in_start[AP_MAX_SPATIAL];  /* the input box it reads: first    */
    int64_t in_size[AP_MAX_SPATIAL];   /*   position and size (>= 1)       */
    int64_t batch;                     /* the tile's images and channels, */
    int64_t channels;                  /*   at most whole's; 0: whole's    */
} ap_tile;

/* Fill tile->in_start and in_size with the smallest input box that holds
 * every tap of the windows of the output box (a box of one position when
 * those windows hold only padding).
 *   whole   the whole input: spatial sizes and layout (batch and channels
 *           are not read)
 * Errors: those of ap_pool_output_sizes; AP_ERR_TILE when the output box is
 * empty or leaves the whole output. */
AP_API ap_status ap_pool_tile_input(const ap_pool_desc *desc, const ap_tensor_desc *whole,
                                    ap_tile *tile);
AP_API ap_status ap_adaptive_tile_input(const ap_adaptive_desc *desc,
                                        const ap_tensor_desc *whole, ap_tile *tile);
/* Pool one tile: x holds the input box (tile->batch x tile->channels x
 * in_size, in whole's layout, dense), y receives the output box (the same
 * batch and channels x out_size), equal to those outputs of ap_avgpool on
 * the whole input.
 *   whole   the whole input: its sizes, channels and layout decide the
 *           kernel path, as for ap_avgpool on it, so that every tile sums
 *           as the whole call does (a tile of a few of many channels is
 *           not planned as a call with few channels)
 * Errors: those of ap_avgpool; AP_ERR_TILE when the output box leaves the
 * whole output, in_start / in_size differ from what ap_pool_tile_input
 * gives, or the tile holds more images or channels than whole. */
AP_API ap_status ap_avgpool_tile(const ap_pool_desc *desc, const ap_tensor_desc *whole,
                                 ap_dtype dtype, const ap_tile *tile, const void *x, void *y,
                                 int num_threads);
AP_API ap_status ap_adaptive_avgpool_tile(const ap_adaptive_desc *desc,
                                          const ap_tensor_desc *whole, ap_dtype dtype,
                                          const ap_tile *tile, const void *x, void *y,
                                          int num_threads);

/* Compiled operators: validate and plan once, run many times (DirectML's
 * compiled operator, XNNPACK's create / reshape / setup). The operator holds
 * the per-axis tables, the kernel path and the kernel of the instruction
 * set in use at creation (a later ap_set_isa leaves it unchanged) and the
 * thread count (num_threads as for ap_avgpool, resolved at creation). It is
 * read only once made: several threads may run one operator at once, each
 * on its own x and y.
 *
 *   ap_operator *op;
 *   ap_error err;
 *   if (ap_operator_create_pool(&desc, &input, AP_DTYPE_F32, 0, &op, &err) != AP_OK)
 *       fprintf(stderr, "%s: %s\n", err.field, err.detail);
 *   for (...) ap_operator_run(op, x, y);
 *   ap_operator_destroy(op);
 */
typedef struct ap_operator ap_operator;

/* Make a windowed pooling operator for tensors described by `input` and
 * elements of `dtype`; *op receives it (NULL on error). err (may be NULL)
 * receives the details of a rule broken, as ap_pool_check fills them.
 * Errors: those of ap_avgpool except the x / y pointers, AP_ERR_NULL_POINTER
 * (desc, input or op). */
AP_API ap_status ap_operator_create_pool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                         ap_dtype dtype, int num_threads, ap_operator **op,
                                         ap_error *err);
/* The same for adaptive pooling (errors of ap_adaptive_avgpool). */
AP_API ap_status ap_operator_create_adaptive(const ap_adaptive_desc *desc,
                                             const ap_tensor_desc *input, ap_dtype dtype,
                                             int num_threads, ap_operator **op, ap_error *err);
/* Store the operator's output in `layout` instead of the input's, e.g. a
 * channels-first result of a channels-last input (what PyTorch returns for
 * 3-D pools of channels_last_3d tensors): the channels-last kernels that
 * take most windows write it row by row, the others through ap_relayout.
 * ap_operator_run_backward then takes gy in this layout too (gx stays in
 * the input's). Part of making the operator: call it before the operator
 * runs, not while other threads run it. Errors: AP_ERR_NULL_POINTER,
 * AP_ERR_LAYOUT. */
AP_API ap_status ap_operator_set_output_layout(ap_operator *op, ap_layout layout);
/* The output's description: input's batch, channels and rank, the output
 * sizes, and the output's layout (the input's unless set above). Errors:
 * AP_ERR_NULL_POINTER. */
AP_API ap_status ap_operator_output(const ap_operator *op, ap_tensor_desc *output);
/* Pool x (the input described at creation) into y (the output described by
 * ap_operator_output), as ap_avgpool does. Errors: AP_ERR_NULL_POINTER (op,
 * or x / y of a non-empty tensor), AP_ERR_ALIGNMENT, AP_ERR_OUT_OF_MEMORY. */
AP_API ap_status ap_operator_run(const ap_operator *op, const void *x, void *y);
/* The backward pass of the operator: gx (the input's gradient, input shape) from gy (the
 * output's gradient), as ap_avgpool_backward computes it, with the taps inverted once at
 * creation. Several threads may run it at once, as ap_operator_run. Errors:
 * AP_ERR_NULL_POINTER (op, or gy / gx of a non-empty tensor), AP_ERR_ALIGNMENT,
 * AP_ERR_OUT_OF_MEMORY. */
AP_API ap_status ap_operator_run_backward(const ap_operator *op, const void *gy, void *gx);
/* Free the operator; NULL is allowed. */
AP_API void ap_operator_destroy(ap_operator *op);

/* Which kernel path ap_avgpool(desc, input, dtype, ...) would take with the
 * instruction set in use (ap_isa), and why, as one line written to
 * buf[0 .. len-1] (NUL-terminated, truncated to fit; nothing written when
 * len is 0), e.g.
 *   "isa avx2, layout NCHW, f32: rows-s2 (stride 2 along W, window width 3,
 *    dilation 1 (taps unrolled); vertical: direct sums, window height 3 < 8)"
 * The path name follows the first ": " and ends before the next " (". The
 * paths (and the names this line uses for them) are an implementation
 * detail that may change between versions: "none", "scalar",
 * "scalar-fallback", "global", "same-flat", "rows-s1", "rows-s2",
 * "rows-s4k4", "rows-running", "rows-gather", "plane-flat", "nhwc-direct",
 * "nhwc-separable", "box". Nothing is pooled.
 * Errors: those of ap_pool_output_sizes, AP_ERR_DTYPE, AP_ERR_NULL_POINTER
 * (desc, input, or buf with len > 0), AP_ERR_OUT_OF_MEMORY (the per-axis
 * tables), AP_ERR_ISA (AVGPOOL_ISA named an unavailable instruction set). */
AP_API ap_status ap_explain_pool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                 ap_dtype dtype, char *buf, size_t len);
/* The same for ap_adaptive_avgpool; errors as for ap_explain_pool, with
 * those of ap_adaptive_output_sizes. */
AP_API ap_status ap_explain_adaptive(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                     ap_dtype dtype, char *buf, size_t len);

/* Typed conveniences: ap_avgpool / ap_adaptive_avgpool with the dtype of
 * the name (f16 and bf16 take uint16_t bit patterns). */
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

/* Library version "MAJOR.MINOR.PATCH" (static string), equal to the
 * AP_VERSION_* macros of the header it was built with. */
AP_API const char *ap_version(void);
/* Copy x, stored in input->layout, into y in the other layout (NCHW <->
 * NHWC, the same batch, channels and spatial sizes): for a result wanted in
 * the layout its input was not in. Copied in tiles that keep both sides'
 * cache lines in use (a strided copy is several times slower);
 * num_threads as for ap_avgpool. y must not overlap x. Errors: those of the
 * tensor description (AP_ERR_RANK, AP_ERR_LAYOUT, AP_ERR_TENSOR_SIZE,
 * AP_ERR_OVERFLOW), AP_ERR_DTYPE, AP_ERR_NULL_POINTER, AP_ERR_ALIGNMENT. */
AP_API ap_status ap_relayout(const ap_tensor_desc *input, ap_dtype dtype, const void *x,
                             void *y, int num_threads);

/* How the library was built (static string), e.g. "compiler: GNU 12.2.0;
 * build type: Release; flags: -O3 -DNDEBUG; kernels: scalar avx2 avx512;
 * openmp: 201511": the kernels compiled in, not the ones this CPU can run
 * (ap_isa says which one is used). */
AP_API const char *ap_build_info(void);
/* The instruction sets whose kernels this build holds (static string),
 * separated by spaces, from the scalar oracle to the widest: e.g. "scalar
 * avx2 avx512" on x86-64, "scalar neon" on aarch64. This CPU may lack some
 * (ap_set_isa says which it runs). */
AP_API const char *ap_compiled_isas(void);
/* Instruction set the kernels use ("scalar", "avx2", "avx512", "neon"), or
 * "unavailable" when AVGPOOL_ISA names one this CPU or build lacks (static
 * string). Chosen at the first call of ap_isa or of a pooling function:
 * AVGPOOL_ISA=scalar|avx2|avx512|neon forces one, unset or "auto" picks the
 * best the CPU supports (avx512 > avx2 on x86-64, neon on aarch64). */
AP_API const char *ap_isa(void);
/* Switch the kernels to `name` ("scalar", "avx2", "avx512", "neon"; NULL, ""
 * or "auto": the best available), overriding AVGPOOL_ISA. Returns AP_ERR_ISA
 * if the name is unknown or this CPU or build lacks it, leaving the choice
 * unchanged. Not thread-safe: call it while no other avgpool call runs
 * (tests use it to compare every path). */
AP_API ap_status ap_set_isa(const char *name);
/* 1 if the library was built with OpenMP, else 0 (kernels single-threaded). */
AP_API int ap_openmp_enabled(void);
/* The thread count num_threads <= 0 stands for (omp_get_max_threads(); 1
 * without OpenMP). */
AP_API int ap_max_threads(void);
/* Which threads run a call's work besides the calling thread (static string):
 *   "own"     avgpool's pool (the default): its workers spin briefly, then
 *             sleep; one that the OS has not scheduled misses the job
 *             instead of holding up the call, and the pool survives fork().
 *   "openmp"  the calling thread's OpenMP team (`omp parallel`): in a
 *             program whose other work runs on the same OpenMP runtime
 *             (PyTorch's), its threads are already awake between that work
 *             and avgpool's, and no second set of threads competes with
 *             them for the cores. A child process after fork() uses "own"
 *             (libgomp's team does not survive fork).
 * Chosen at the first call: AVGPOOL_THREAD_POOL=own|openmp, unset: "own". */
AP_API const char *ap_thread_pool(void);
/* Switch to the pool `name` ("own", "openmp"; NULL or "": "own"),
 * overriding AVGPOOL_THREAD_POOL. Returns AP_ERR_THREAD_POOL if the name is
 * unknown or names "openmp" in a build without OpenMP, leaving the choice
 * unchanged. Calls running meanwhile finish on the pool they started on. */
AP_API ap_status ap_set_thread_pool(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* AVGPOOL_H */
