/* api.c - the public entry points: validate and plan (plan.c), take the
 * kernel table dispatch.c chose, run the kernel; status strings, version and
 * build information. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "plan.h"

#define AP_STR_(x) #x
#define AP_STR(x) AP_STR_(x)

/* A compiled operator: a plan whose path was chosen for `kernel`'s table. */
struct ap_operator {
    ap_plan plan;
    const ap_kernel_table *table;
    ap_kernel_fn kernel;
    ap_backward_fn backward;
    ap_inverse inverse; /* the taps inverted for the backward pass, made at creation */
    ap_tensor_desc output;
    ap_layout in_layout; /* the input's (output.layout may differ, set by
                            ap_operator_set_output_layout) */
    int moved_output;    /* output.layout is not in_layout, and that moves elements
                            (more than one channel and output position) */
};

/* Finish an operator from a plan (planned: its status): take the kernel
 * table in use, choose the path. The one-shot calls below go through here
 * too, with an operator on the stack. */
static ap_status ap_operator_init(ap_operator *op, ap_status planned,
                                  const ap_tensor_desc *input) {
    if (planned != AP_OK) return planned;
    ap_status isa_status = AP_OK;
    const ap_kernel_table *table = ap_kernels(&isa_status);
    if (!table) return isa_status;
    ap_plan *plan = &op->plan;
    op->table = table;
    op->kernel = table->pool[plan->layout][plan->dtype];
    op->backward = table->backward[plan->dtype];
    ap_choose_path(plan, table->lanes[plan->dtype], NULL, 0);
    op->output = *input;
    op->in_layout = input->layout;
    op->moved_output = 0;
    for (int a = 0; a < input->rank; ++a)
        op->output.sizes[a] = plan->axis[3 - input->rank + a].out;
    if (plan->layout != input->layout) /* planned flattened (ap_flatten_channels): W x C */
        op->output.sizes[input->rank - 1] /= input->channels;
    return AP_OK;
}

/* Channels last with fewer channels than a vector holds, and a window of stride 1 and at most
 * AP_FLAT_TAPS taps along W (fewer along H): in memory an image is then one channel of rows of
 * W*C elements, and the window along W one of dilation d*C, padding p*C and stride 1 over them
 * (output o*C + c reads the taps (o - p + j*d)*C + c: channel c of the window's positions, and
 * the same number of valid and padded taps, so the same divisors). Planned so, the call takes
 * the channels-first rows path, whose vectors run along the rows, instead of channel vectors a
 * few lanes full (3x3 s1 on 1x1080x1920x3, 1 thread, Intel: 16.4 -> 2.9 ms). The scalar
 * kernels (one lane) and count_overhang (its 0 and -1 divisors do not carry over) keep the
 * layout; so do wider windows, for which the box path is faster. Fills *fd and *ft and returns
 * 1 when it applies to a valid desc and input (invalid ones are planned as given, to fail). */
enum { AP_FLAT_TAPS = 8 };
static int ap_flatten_channels(const ap_pool_desc *d, const ap_tensor_desc *t, ap_dtype dtype,
                               ap_pool_desc *fd, ap_tensor_desc *ft) {
    if (t->layout != AP_LAYOUT_NHWC || d->count_overhang || t->channels < 1 ||
        (unsigned)dtype > AP_DTYPE_BF16 || ap_pool_check(d, t, NULL, NULL) != AP_OK)
        return 0;
    const ap_kernel_table *table = ap_kernels(NULL);
    const int w = d->rank - 1;
    if (!table || t->channels >= table->lanes[dtype] || d->strides[w] != 1 ||
        d->window[w] > AP_FLAT_TAPS || (w > 0 && d->window[w - 1] >= AP_FLAT_TAPS))
        return 0;
    *fd = *d;
    *ft = *t;
    const int64_t C = t->channels;
    if (ap_mul_overflow(t->sizes[w], C, &ft->sizes[w]) ||
        ap_mul_overflow(d->dilations[w], C, &fd->dilations[w]) ||
        ap_mul_overflow(d->start_padding[w], C, &fd->start_padding[w]) ||
        ap_mul_overflow(d->end_padding[w], C, &fd->end_padding[w]) ||
        ap_mul_overflow(d->output_sizes[w], C, &fd->output_sizes[w]))
        return 0;
    ft->layout = AP_LAYOUT_NCHW;
    ft->channels = 1;
    return 1;
}

/* ap_plan_pool of the call as it runs: flattened when ap_flatten_channels applies (the plan's
 * layout then differs from input's). */
static ap_status ap_plan_pool_as_run(ap_plan *plan, const ap_pool_desc *desc,
                                     const ap_tensor_desc *input, ap_dtype dtype,
                                     int num_threads) {
    ap_pool_desc fd;
    ap_tensor_desc ft;
    if (ap_flatten_channels(desc, input, dtype, &fd, &ft))
        return ap_plan_pool(plan, &fd, &ft, dtype, num_threads);
    return ap_plan_pool(plan, desc, input, dtype, num_threads);
}

/* The operator's kernel on x into y, y in the input's layout unless the plan's path writes
 * the other one itself (plan->out_channels_first). */
static ap_status ap_operator_kernel(const ap_operator *op, const void *x, void *y) {
    const ap_plan *plan = &op->plan;
    if (plan->nan_omit && !ap_plan_skips_nan(plan)) return ap_omit_run(plan, op->table, x, y);
    return op->kernel(plan, x, y);
}

/* An output wanted in the layout other than the one the kernel writes: into a buffer first,
 * then across (ap_relayout). */
static ap_status ap_run_then_relayout(const ap_operator *op, const void *x, void *y,
                                      int64_t n_out) {
    void *buf = malloc((size_t)n_out * ap_dtype_bytes(op->plan.dtype));
    if (!buf) return AP_ERR_OUT_OF_MEMORY;
    ap_tensor_desc written = op->output;
    written.layout = op->in_layout;
    ap_status s = ap_operator_kernel(op, x, buf);
    if (s == AP_OK) s = ap_relayout(&written, op->plan.dtype, buf, y, op->plan.num_threads);
    free(buf);
    return s;
}

ap_status ap_operator_run(const ap_operator *op, const void *x, void *y) {
    if (!op) return AP_ERR_NULL_POINTER;
    const ap_plan *plan = &op->plan;
    const int64_t n_in = plan->batch * plan->channels * plan->in_plane;
    const int64_t n_out = plan->batch * plan->channels * plan->out_plane;
    const ap_status s = ap_check_buffers(x, n_in, y, n_out, plan->dtype);
    if (s != AP_OK) return s;
    if (n_out == 0) return AP_OK;
    if (op->moved_output && !plan->out_channels_first)
        return ap_run_then_relayout(op, x, y, n_out);
    return ap_operator_kernel(op, x, y);
}

ap_status ap_avgpool(const ap_pool_desc *desc, const ap_tensor_desc *input, ap_dtype dtype,
                     const void *x, void *y, int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_operator op;
    ap_status s = ap_operator_init(
        &op, ap_plan_pool_as_run(&op.plan, desc, input, dtype, num_threads), input);
    if (s == AP_OK) s = ap_operator_run(&op, x, y);
    ap_plan_free(&op.plan);
    return s;
}

ap_status ap_adaptive_avgpool(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                              ap_dtype dtype, const void *x, void *y, int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_operator op;
    ap_status s = ap_operator_init(
        &op, ap_plan_adaptive(&op.plan, desc, input, dtype, num_threads), input);
    if (s == AP_OK) s = ap_operator_run(&op, x, y);
    ap_plan_free(&op.plan);
    return s;
}

/* Tiles: plan one plane of the whole array (the tables need no batch or
 * channels, and an empty batch still has a tile box to check), then the
 * tile's part of that plan (plan.c, ap_plan_tile), and run it as one call
 * on the tile's batch and channels (the whole's channels choose its path). */
static ap_tensor_desc ap_one_plane(const ap_tensor_desc *t) {
    ap_tensor_desc one = *t;
    one.batch = one.channels = 1;
    return one;
}

/* The images and channels a tile holds (ap_tile: 0 for all of input's), or AP_ERR_TILE when it
 * claims more than input has. */
static ap_status ap_tile_counts(const ap_tensor_desc *input, const ap_tile *tile,
                                int64_t *batch, int64_t *channels) {
    *batch = tile->batch ? tile->batch : input->batch;
    *channels = tile->channels ? tile->channels : input->channels;
    if (*batch < 0 || *batch > input->batch || *channels < 0 || *channels > input->channels)
        return AP_ERR_TILE;
    return AP_OK;
}

/* `paths`: the plan whose path the tile takes, its images and channels set (a flattened
 * tile's: the whole array flattened with all its channels, see ap_avgpool_tile); NULL: whole,
 * with input's images and channels. */
static ap_status ap_tile_run(ap_plan *whole, ap_status planned, const ap_tensor_desc *input,
                             const ap_tile *tile, const void *x, void *y, ap_plan *paths) {
    if (planned != AP_OK) return planned;
    if (!tile) return AP_ERR_NULL_POINTER;
    int64_t tile_batch, tile_channels;
    if (ap_tile_counts(input, tile, &tile_batch, &tile_channels) != AP_OK) return AP_ERR_TILE;
    ap_tile want = *tile;
    ap_status s = ap_plan_tile_input(whole, input->rank, &want);
    if (s != AP_OK) return s;
    for (int a = 0; a < input->rank; ++a)
        if (want.in_start[a] != tile->in_start[a] || want.in_size[a] != tile->in_size[a])
            return AP_ERR_TILE;
    ap_operator op;
    ap_tensor_desc part = *input;
    for (int a = 0; a < input->rank; ++a) part.sizes[a] = tile->in_size[a];
    part.batch = tile_batch;
    part.channels = tile_channels;
    s = ap_plan_tile(&op.plan, whole, input->rank, tile);
    op.plan.batch = tile_batch;
    op.plan.channels = tile_channels;
    s = ap_operator_init(&op, s, &part);
    if (s == AP_OK) { /* the whole array's path (its channels decide too), for the same sums */
        if (!paths) {
            whole->batch = input->batch;
            whole->channels = input->channels;
            paths = whole;
        }
        const int lanes = op.table->lanes[paths->dtype];
        ap_choose_path(paths, lanes, NULL, 0);
        ap_choose_tile_path(&op.plan, paths, lanes);
    }
    if (s == AP_OK) { /* windows wholly past the input's end: the scalar kernels */
        op.table = ap_tile_table(&op.plan, op.table);
        op.kernel = op.table->pool[op.plan.layout][op.plan.dtype];
    }
    if (s == AP_OK) s = ap_operator_run(&op, x, y);
    ap_plan_free(&op.plan);
    return s;
}

ap_status ap_avgpool_tile(const ap_pool_desc *desc, const ap_tensor_desc *whole, ap_dtype dtype,
                          const ap_tile *tile, const void *x, void *y, int num_threads) {
    if (!desc || !whole) return AP_ERR_NULL_POINTER;
    ap_status s = ap_pool_check(desc, whole, NULL, NULL);
    if (s != AP_OK) return s;
    /* flattened when the whole call is (the same path, the same sums): the tile's own images
     * and channels as one channel of rows W * C long, the W entries of the boxes times C, when
     * the flattened plan reads that input box (a box of windows that hold only padding reads
     * one position, which does not scale: such tiles, whose outputs sum nothing, keep the
     * layout). A tile of some of the channels flattens with its own C (its windows' dilation),
     * but takes the path of the whole array flattened with all of them: the path sums a
     * window's taps in the same order whatever the dilation, while choosing one for the tile
     * alone could give another (one channel of a 4-wide window over W = 4 is a whole plane,
     * the global path, where the whole call's dilated windows take rows-s1). */
    ap_pool_desc fd, wd;
    ap_tensor_desc fw, ww, own = *whole;
    ap_tile ft, want;
    ap_plan paths;
    paths.storage = NULL;
    int flat = 0;
    if (tile && ap_tile_counts(whole, tile, &own.batch, &own.channels) == AP_OK &&
        ap_flatten_channels(desc, whole, dtype, &wd, &ww) &&
        ap_flatten_channels(desc, &own, dtype, &fd, &fw)) {
        const int w = whole->rank - 1;
        const int64_t C = own.channels;
        ft = *tile;
        ft.batch = ft.channels = 0; /* all of fw's */
        if (!ap_mul_overflow(tile->out_start[w], C, &ft.out_start[w]) &&
            !ap_mul_overflow(tile->out_size[w], C, &ft.out_size[w]) &&
            !ap_mul_overflow(tile->in_start[w], C, &ft.in_start[w]) &&
            !ap_mul_overflow(tile->in_size[w], C, &ft.in_size[w])) {
            want = ft;
            const ap_tensor_desc wone = ap_one_plane(&ww);
            if (ap_pool_tile_input(&fd, &fw, &want) == AP_OK &&
                memcmp(want.in_start, ft.in_start, sizeof want.in_start) == 0 &&
                memcmp(want.in_size, ft.in_size, sizeof want.in_size) == 0 &&
                ap_plan_pool(&paths, &wd, &wone, dtype, num_threads) == AP_OK) {
                paths.batch = ww.batch;
                paths.channels = ww.channels;
                desc = &fd, whole = &fw, tile = &ft, flat = 1;
            }
        }
    }
    const ap_tensor_desc one = ap_one_plane(whole);
    ap_plan plan;
    s = ap_tile_run(&plan, ap_plan_pool(&plan, desc, &one, dtype, num_threads), whole, tile, x, y,
                    flat ? &paths : NULL);
    ap_plan_free(&plan);
    ap_plan_free(&paths);
    return s;
}

ap_status ap_adaptive_avgpool_tile(const ap_adaptive_desc *desc, const ap_tensor_desc *whole,
                                   ap_dtype dtype, const ap_tile *tile, const void *x, void *y,
                                   int num_threads) {
    if (!desc || !whole) return AP_ERR_NULL_POINTER;
    ap_status s = ap_adaptive_check(desc, whole, NULL, NULL);
    if (s != AP_OK) return s;
    const ap_tensor_desc one = ap_one_plane(whole);
    ap_plan plan;
    s = ap_tile_run(&plan, ap_plan_adaptive(&plan, desc, &one, dtype, num_threads), whole, tile,
                    x, y, NULL);
    ap_plan_free(&plan);
    return s;
}

ap_status ap_pool_tile_input(const ap_pool_desc *desc, const ap_tensor_desc *whole,
                             ap_tile *tile) {
    if (!desc || !whole || !tile) return AP_ERR_NULL_POINTER;
    const ap_tensor_desc one = ap_one_plane(whole);
    ap_plan plan;
    ap_status s = ap_plan_pool(&plan, desc, &one, AP_DTYPE_F32, 1);
    if (s == AP_OK) s = ap_plan_tile_input(&plan, whole->rank, tile);
    ap_plan_free(&plan);
    return s;
}

ap_status ap_adaptive_tile_input(const ap_adaptive_desc *desc, const ap_tensor_desc *whole,
                                 ap_tile *tile) {
    if (!desc || !whole || !tile) return AP_ERR_NULL_POINTER;
    const ap_tensor_desc one = ap_one_plane(whole);
    ap_plan plan;
    ap_status s = ap_plan_adaptive(&plan, desc, &one, AP_DTYPE_F32, 1);
    if (s == AP_OK) s = ap_plan_tile_input(&plan, whole->rank, tile);
    ap_plan_free(&plan);
    return s;
}

/* The backward pass of a made plan: invert its taps, run the table's
 * backward kernel. */
static ap_status ap_backward_run(ap_plan *plan, const void *gy, void *gx) {
    ap_status isa_status = AP_OK;
    const ap_kernel_table *table = ap_kernels(&isa_status);
    if (!table) return isa_status;
    const int64_t n_in = plan->batch * plan->channels * plan->in_plane;
    const int64_t n_out = plan->batch * plan->channels * plan->out_plane;
    const ap_status checked = ap_check_buffers(gy, n_out, gx, n_in, plan->dtype);
    if (checked != AP_OK) return checked;
    if (plan->nan_omit) return AP_ERR_NAN_POLICY;
    if (n_in == 0) return AP_OK;
    ap_inverse inv;
    ap_status s = ap_inverse_make(&inv, plan);
    if (s == AP_OK) s = table->backward[plan->dtype](plan, &inv, gy, gx);
    ap_inverse_free(&inv);
    return s;
}

ap_status ap_avgpool_backward(const ap_pool_desc *desc, const ap_tensor_desc *input,
                              ap_dtype dtype, const void *gy, void *gx, int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    ap_status s = ap_plan_pool_as_run(&plan, desc, input, dtype, num_threads);
    if (s == AP_OK) s = ap_backward_run(&plan, gy, gx);
    ap_plan_free(&plan);
    return s;
}

ap_status ap_adaptive_avgpool_backward(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                       ap_dtype dtype, const void *gy, void *gx,
                                       int num_threads) {
    if (!desc || !input) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    ap_status s = ap_plan_adaptive(&plan, desc, input, dtype, num_threads);
    if (s == AP_OK) s = ap_backward_run(&plan, gy, gx);
    ap_plan_free(&plan);
    return s;
}

/* Heap operators: the plan as above, or the error's details. */
static ap_status ap_operator_make(ap_operator *op, ap_status planned,
                                  const ap_tensor_desc *input, ap_operator **out) {
    ap_status s = ap_operator_init(op, planned, input);
    if (s == AP_OK && op->plan.batch * op->plan.channels > 0)
        s = ap_inverse_make(&op->inverse, &op->plan);
    if (s != AP_OK) {
        ap_inverse_free(&op->inverse);
        ap_plan_free(&op->plan);
        free(op);
        return s;
    }
    *out = op;
    return AP_OK;
}

ap_status ap_operator_create_pool(const ap_pool_desc *desc, const ap_tensor_desc *input,
                                  ap_dtype dtype, int num_threads, ap_operator **op,
                                  ap_error *err) {
    int64_t sizes[AP_MAX_SPATIAL];
    if (op) *op = NULL;
    const ap_status checked = ap_pool_check(desc, input, sizes, err);
    if (checked != AP_OK) return checked;
    if (!op) return AP_ERR_NULL_POINTER;
    ap_operator *o = (ap_operator *)calloc(1, sizeof *o);
    if (!o) return AP_ERR_OUT_OF_MEMORY;
    return ap_operator_make(o, ap_plan_pool_as_run(&o->plan, desc, input, dtype, num_threads),
                            input, op);
}

ap_status ap_operator_create_adaptive(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                                      ap_dtype dtype, int num_threads, ap_operator **op,
                                      ap_error *err) {
    int64_t sizes[AP_MAX_SPATIAL];
    if (op) *op = NULL;
    const ap_status checked = ap_adaptive_check(desc, input, sizes, err);
    if (checked != AP_OK) return checked;
    if (!op) return AP_ERR_NULL_POINTER;
    ap_operator *o = (ap_operator *)calloc(1, sizeof *o);
    if (!o) return AP_ERR_OUT_OF_MEMORY;
    return ap_operator_make(o, ap_plan_adaptive(&o->plan, desc, input, dtype, num_threads),
                            input, op);
}

ap_status ap_operator_set_output_layout(ap_operator *op, ap_layout layout) {
    if (!op) return AP_ERR_NULL_POINTER;
    if (layout != AP_LAYOUT_NCHW && layout != AP_LAYOUT_NHWC) return AP_ERR_LAYOUT;
    op->output.layout = layout;
    int64_t out_plane = 1;
    for (int a = 0; a < op->output.rank; ++a) out_plane *= op->output.sizes[a];
    op->moved_output = layout != op->in_layout && op->output.channels > 1 && out_plane > 1;
    /* the paths that write a channels-first row from channels-last input themselves; the
     * rest (and flattened plans, whose layout is NCHW) go through ap_relayout */
    ap_plan *plan = &op->plan;
    plan->out_channels_first =
        op->moved_output && layout == AP_LAYOUT_NCHW && plan->layout == AP_LAYOUT_NHWC &&
        !plan->nan_omit &&
        (plan->path == AP_PATH_NHWC_DIRECT || plan->path == AP_PATH_NHWC_SEPARABLE);
    return AP_OK;
}

ap_status ap_operator_output(const ap_operator *op, ap_tensor_desc *output) {
    if (!op || !output) return AP_ERR_NULL_POINTER;
    *output = op->output;
    return AP_OK;
}

static ap_status ap_operator_backward(const ap_operator *op, const void *gy, void *gx) {
    return op->backward(&op->plan, &op->inverse, gy, gx);
}

/* gy stored in the output's layout: moved into the input's first (ap_relayout), as the
 * backward kernels take both in one layout. */
static ap_status ap_relayout_then_backward(const ap_operator *op, const void *gy, void *gx,
                                           int64_t n_out) {
    void *buf = malloc((size_t)n_out * ap_dtype_bytes(op->plan.dtype));
    if (!buf) return AP_ERR_OUT_OF_MEMORY;
    ap_status s = ap_relayout(&op->output, op->plan.dtype, gy, buf, op->plan.num_threads);
    if (s == AP_OK) s = ap_operator_backward(op, buf, gx);
    free(buf);
    return s;
}

ap_status ap_operator_run_backward(const ap_operator *op, const void *gy, void *gx) {
    if (!op) return AP_ERR_NULL_POINTER;
    const ap_plan *plan = &op->plan;
    const int64_t n_in = plan->batch * plan->channels * plan->in_plane;
    const int64_t n_out = plan->batch * plan->channels * plan->out_plane;
    const ap_status checked = ap_check_buffers(gy, n_out, gx, n_in, plan->dtype);
    if (checked != AP_OK) return checked;
    if (plan->nan_omit) return AP_ERR_NAN_POLICY;
    if (n_in == 0) return AP_OK;
    if (op->moved_output && n_out > 0) return ap_relayout_then_backward(op, gy, gx, n_out);
    return ap_operator_backward(op, gy, gx);
}

void ap_operator_destroy(ap_operator *op) {
    if (!op) return;
    ap_inverse_free(&op->inverse);
    ap_plan_free(&op->plan);
    free(op);
}

/* Plan the call, choose its path for the table in use, and describe both. */
static ap_status ap_explain(ap_plan *plan, ap_status planned, ap_dtype dtype, int64_t flat_c,
                            char *buf, size_t len) {
    if (planned != AP_OK) {
        ap_plan_free(plan);
        return planned;
    }
    ap_status isa_status = AP_OK;
    const ap_kernel_table *table = ap_kernels(&isa_status);
    if (!table) {
        ap_plan_free(plan);
        return isa_status;
    }
    static const char *const dtypes[4] = {"f32", "f64", "f16", "bf16"};
#define AP_PATH_NAME_(suffix, name, skips_nan, when) name,
    static const char *const names[AP_PATH_COUNT] = {AP_PATHS(AP_PATH_NAME_)};
#undef AP_PATH_NAME_
    char why[320];
    const ap_path path = ap_choose_path(plan, table->lanes[dtype], why, sizeof why);
    char flat[96] = "";
    if (flat_c) /* ap_flatten_channels */
        snprintf(flat, sizeof flat, "; channels last, %lld channels taken as one channel of W x %lld",
                 (long long)flat_c, (long long)flat_c);
    if (len > 0)
        snprintf(buf, len, "isa %s, layout %s, %s: %s (%s%s)", table->isa,
                 plan->layout == AP_LAYOUT_NHWC || flat_c ? "NHWC" : "NCHW", dtypes[dtype],
                 names[path], why, flat);
    ap_plan_free(plan);
    return AP_OK;
}

ap_status ap_explain_pool(const ap_pool_desc *desc, const ap_tensor_desc *input, ap_dtype dtype,
                          char *buf, size_t len) {
    if (!desc || !input || (!buf && len > 0)) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    const ap_status s = ap_plan_pool_as_run(&plan, desc, input, dtype, 1);
    return ap_explain(&plan, s, dtype, s == AP_OK && plan.layout != input->layout
                                           ? input->channels : 0, buf, len);
}

ap_status ap_explain_adaptive(const ap_adaptive_desc *desc, const ap_tensor_desc *input,
                              ap_dtype dtype, char *buf, size_t len) {
    if (!desc || !input || (!buf && len > 0)) return AP_ERR_NULL_POINTER;
    ap_plan plan;
    const ap_status s = ap_plan_adaptive(&plan, desc, input, dtype, 1);
    return ap_explain(&plan, s, dtype, 0, buf, len);
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
    case AP_ERR_NAN_POLICY:
        return "nan_policy must be AP_NAN_PROPAGATE or AP_NAN_OMIT and min_count >= 0; backward "
               "passes propagate only";
    case AP_ERR_THREAD_POOL:
        return "the thread pool requested (AVGPOOL_THREAD_POOL or ap_set_thread_pool) is unknown "
               "(\"own\", \"openmp\") or needs OpenMP, which this build lacks";
    case AP_ERR_ALIGNMENT:
        return "x and y (gy and gx) must be aligned for their element type: 2 bytes for float16 "
               "and bfloat16, 4 for float32, 8 for float64";
    case AP_ERR_TILE:
        return "a tile's output box must be non-empty and inside the whole output, and its input "
               "box the one those outputs read";
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

const char *ap_compiled_isas(void) { return &AP_BUILD_KERNELS[1]; /* without the leading space */ }
