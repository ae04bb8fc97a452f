/* paths.h - the kernel paths: one list, X(SUFFIX, "name", SKIPS_NAN, "when
 * it is taken"), expanded into enum ap_path (AP_PATH_<SUFFIX>), into the names
 * ap_explain_* writes, and into ap_path_skips_nan: SKIPS_NAN is 1 where the
 * path's kernels leave NaN out of sums and counts themselves under
 * AP_NAN_OMIT (the others run through nan_omit.c). The choice itself is
 * ap_choose_path (paths.c), made once per call from the plan; the SIMD
 * kernels (simd_impl.inc) switch on the stored path. The C tests include this
 * file to count the paths their random cases take.
 */
#ifndef AP_PATHS_H
#define AP_PATHS_H

#define AP_PATHS(X)                                                                         \
    X(NONE, "none", 0, "batch or channels 0: no output element, no kernel runs")            \
    X(SCALAR, "scalar", 1, "the scalar kernels: the scalar instruction set")                \
    X(SCALAR_FALLBACK, "scalar-fallback", 1,                                                \
      "SIMD, channels first, a row buffer too long for int32 gather indices; channels "     \
      "last, a window of more than AP_NHWC_MAX_TAPS taps whose rows are too long to buffer") \
    X(GLOBAL, "global", 0, "either layout, one window covering each whole plane")           \
    X(SAME_FLAT, "same-flat", 0,                                                            \
      "channels first, 'same' windows < 8 (stride 1, output = input, dilated over at "     \
      "most 16 inputs) on planes of at most 16384 elements with a trivial depth axis: "     \
      "whole planes at once")                                                               \
    X(ROWS_S1, "rows-s1", 0, "channels first rows, stride 1 along W, unaligned loads")      \
    X(ROWS_S2, "rows-s2", 0, "channels first rows, stride 2 along W, even/odd shuffles")    \
    X(ROWS_S4K4, "rows-s4k4", 0, "channels first rows, window 4 stride 4 along W, shuffles") \
    X(ROWS_RUNNING, "rows-running", 0,                                                      \
      "channels first rows, stride 1 along W, window wider than two vectors: running sums") \
    X(ROWS_GATHER, "rows-gather", 0,                                                        \
      "channels first rows, any other stride or varying windows along W: masked gathers")   \
    X(PLANE_FLAT, "plane-flat", 0,                                                          \
      "channels first, short rows on small planes, stride 2+ or varying windows along W: "  \
      "groups of whole planes, rows summed into a dense buffer, outputs as one flat run")   \
    X(PLANES_CL, "planes-cl", 0,                                                            \
      "channels first, small planes whose windows nhwc-direct sums: groups of planes "      \
      "transposed to channels last and pooled by nhwc-direct, written back channels first") \
    X(NHWC_DIRECT, "nhwc-direct", 0,                                                        \
      "channels last, small windows (or rows too long for a cached buffer): channel "       \
      "vectors summed over the taps")                                                       \
    X(NHWC_SEPARABLE, "nhwc-separable", 0,                                                  \
      "channels last, windows of more than 16 taps: vertical then horizontal sums")         \
    X(BOX, "box", 1,                                                                        \
      "either layout, windows of more than 16 taps with stride 1 and dilation 1 along H "   \
      "and W: float64 running column sums and row prefix sums (a few adds per output)")     \
    X(F64_SEPARABLE, "f64-separable", 1,                                                    \
      "float64 on a vector instruction set, any window: column sums over the window's "     \
      "rows, then along W, in plain C that the compiler vectorizes")                        \
    X(F64_DIRECT, "f64-direct", 1,                                                          \
      "float64 on a vector instruction set, channels last with windows whose column sums "  \
      "save no adds, channels first on small planes (groups of planes transposed): the "    \
      "taps summed in the scalar kernels' order, in vectors of channels or planes")         \
    X(F64_GLOBAL, "f64-global", 1,                                                          \
      "float64 channels first on a vector instruction set, one window over each plane: "    \
      "8 interleaved partial sums")

/* same-flat: a window spans at most this many inputs along H and W (taps and the gaps of
 * their dilation), so a row has fewer border columns, and the kernel's buffer less slack. */
#define AP_SAME_MAX_SPAN 16

/* f64-direct takes channels-first planes whose input and output have at most this many
 * values together (its buffer: 32 planes of both, 1 MiB) */
#define AP_F64_PLANES_MAX 4096

/* planes-cl: the channels that nhwc-direct's switches are chosen for, and the most planes a
 * group (the channels of its channels-last image); the most elements of a plane's input and
 * output together */
#define AP_PLANES_CL_GROUP 128
#define AP_PLANES_CL_MAX 2048

/* rows-s2 sums in registers (plan->rows_fused) the output rows of at most this many input
 * rows (the kernel's array of row pointers) */
#define AP_FUSED_ROWS 8

/* nhwc-direct lists a window's taps in an array of this many pointers. */
#define AP_NHWC_MAX_TAPS 64

/* nhwc-direct's plane way (nhwc_plane in plan.h, ap_nhwc_plane_fits in paths.c): at most
 * this many outputs along W, and a row of W x C column sums of at most this many floats (the
 * kernel's buffer on the stack). */
#define AP_NHWC_PLANE_MAX_OW 8
#define AP_NHWC_PLANE_FLOATS 4096

#define AP_PATH_ENUM_(suffix, name, skips_nan, when) AP_PATH_##suffix,
typedef enum ap_path { AP_PATHS(AP_PATH_ENUM_) AP_PATH_COUNT } ap_path;
#undef AP_PATH_ENUM_

/* Whether the path's kernels leave NaN out themselves under AP_NAN_OMIT (the box
 * path only while its packed counts fit: ap_plan_skips_nan in plan.h). */
static inline int ap_path_skips_nan(ap_path path) {
#define AP_PATH_SKIPS_(suffix, name, skips_nan, when) \
    case AP_PATH_##suffix:                            \
        return skips_nan;
    switch (path) {
        AP_PATHS(AP_PATH_SKIPS_)
    default:
        return 0;
    }
#undef AP_PATH_SKIPS_
}

#endif /* AP_PATHS_H */
