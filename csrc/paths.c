/* paths.c - the one place where a call's kernel path is chosen.
 *
 * ap_choose_path looks at the validated plan and the float lanes of the
 * kernel that will run (0: the scalar kernels), picks one path of paths.h
 * and stores it in the plan with what its kernel needs (row buffer sizes,
 * running-sum switches). It runs once per call, after ap_plan_* and before
 * the kernel; the SIMD kernels switch on plan->path and choose nothing
 * themselves. ap_explain_* runs it with a buffer for the reason.
 *
 * The thresholds, and why:
 *   global       one window per plane covering all of it (either layout):
 *                a plain streaming sum, no row buffer;
 *   same-flat    'same' windows < 8 on planes <= 16384 elements: the whole
 *                plane's vertical and horizontal sums are flat loops (no
 *                per-row overhead, which dominates small planes);
 *   planes-cl    planes of at most 2048 input and output elements
 *                together whose windows nhwc-direct sums (not where same-flat
 *                takes planes past 10 x 10, nor windows that tile the rows,
 *                nor rows of more than 24 that rows-s2 sums in registers):
 *                groups of up to 128 planes transposed to channels last,
 *                pooled as channels;
 *   plane-flat   rows of at most 40 elements (20 for stride-2 windows that
 *                do not tile the rows) with a stride of 2+ or varying
 *                windows along W: groups of whole planes, the outputs one
 *                flat run (shuffles or gathers), no per-row work;
 *   rows-*       otherwise channels first goes row by row through a float
 *                row buffer; the horizontal pass by stride: 1 (loads),
 *                2 (even/odd shuffles), window 4 stride 4 (shuffles), a
 *                running sum when a stride-1 window is wider than two
 *                vectors (cost independent of k), gathers otherwise;
 *                vertically, windows 8 or more rows tall that move by less
 *                than a sixth of their height carry their sums from row
 *                to row; stride-2 windows 2-3 wide over at most 8 input
 *                rows sum them in registers instead (no buffer);
 *   scalar-fallback  rows whose buffer would need indices past int32 (the
 *                gathers' index width);
 *   box          windows of more than 16 taps with stride 1 and dilation 1
 *                along H and W, either layout, whose padded row of column
 *                sums fits 256 K doubles: running sums cost a few adds per
 *                output whatever the window (taken before rows-running and
 *                nhwc-separable, which remain for other strides);
 *   nhwc-*       channels last sums channel vectors directly, over a row
 *                of column sums when windows are 2+ rows tall and that
 *                saves loads enough (4 x 4 stride 1; 3 x 3 stride 1 with
 *                C of 1-2 vectors; not stride 2), unless a window has more than 16 taps and a
 *                padded (W, C) row fits a cached buffer (<= 1 M floats):
 *                then separably; windows of more than AP_NHWC_MAX_TAPS
 *                taps with longer rows take the scalar kernel.
 */
#include <stdio.h>

#include "plan.h"

/* Format into why (when given); returns nothing. */
#define AP_WHY(...)                                          \
    do {                                                     \
        if (why && why_len) snprintf(why, why_len, __VA_ARGS__); \
    } while (0)

static int ap_is_global(const ap_plan *p) {
    for (int a = 0; a < 3; ++a)
        if (p->axis[a].out != 1 || p->axis[a].taps[0] != p->axis[a].in) return 0;
    return 1;
}

/* Small 'same' windows (stride 1, output as large as the input, window
 * < 8 spanning at most AP_SAME_MAX_SPAN inputs with its dilation) on small
 * 2-D / 1-D planes, or 3-D ones of depth 1 whose depth window is exactly
 * that plane. */
static int ap_same_flat_fits(const ap_plan *p) {
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    /* the depth axis must be a no-op: a window of one plane with divisor
     * factor 1 (not empty, and no counted depth padding) */
    if (p->adaptive || ad->in != 1 || ad->out != 1 || ad->taps[0] != 1 || ad->count[0] != 1)
        return 0;
    for (int a = 1; a < 3; ++a) {
        const ap_axis_plan *ax = &p->axis[a];
        const int64_t span = (ax->window - 1) * ax->step + 1;
        if (ax->stride != 1 || ax->window >= 8 || span > AP_SAME_MAX_SPAN ||
            ax->out != ax->in || ax->in < span)
            return 0;
    }
    return ah->in * aw->in <= 16384;
}

/* Large stride-1 windows along H and W whose float64 column-sum row
 * (padded, times the channels of a row position) fits 256 K doubles.
 * Channels first, float32 direct sums stay faster for windows up to 7 x 16
 * (the rows paths), so there the box path starts at 8 rows or 17 columns. */
static int ap_box_fits(const ap_plan *p) {
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    const int nhwc = p->layout == AP_LAYOUT_NHWC;
    const int64_t C = nhwc ? p->channels : 1;
    if (p->adaptive || ah->stride != 1 || aw->stride != 1 || ah->step != 1 || aw->step != 1)
        return 0;
    if (!nhwc && ah->window < 8 && aw->window <= 16) return 0;
    return ad->window * ah->window * aw->window > 16 && p->row_len <= (1 << 18) / C;
}

static int ap_choose_box(ap_plan *p, char *why, size_t why_len) {
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    if (!ap_box_fits(p)) return 0;
    p->path = AP_PATH_BOX, p->reason = "large stride-1 window";
    AP_WHY("window %lld x %lld x %lld of more than 16 taps, stride 1 and dilation 1 along H and "
           "W: float64 running column sums and row prefix sums",
           (long long)ad->window, (long long)ah->window, (long long)aw->window);
    return 1;
}

/* How far a window moves along H from output row to output row (adaptive windows of
 * varying height: about in / out). */
static int64_t ap_vertical_step(const ap_plan *p) {
    const ap_axis_plan *ah = &p->axis[1];
    return ah->stride ? ah->stride : (ah->in + ah->out - 1) / ah->out;
}

/* The vertical half of a rows path's reason, into buf. */
static const char *ap_vertical_why(const ap_plan *p, char *buf, size_t len) {
    const long long kh = (long long)p->axis[1].window, hstep = (long long)ap_vertical_step(p);
    if (p->vertical_running)
        snprintf(buf, len, "vertical: running sums, window height %lld >= 8 moving by %lld < "
                 "height / 6", kh, hstep);
    else if (kh < 8)
        snprintf(buf, len, "vertical: direct sums, window height %lld < 8", kh);
    else
        snprintf(buf, len, "vertical: direct sums, window height %lld moving by %lld >= "
                 "height / 6", kh, hstep);
    return buf;
}

/* Floats per row buffer of the rows paths (with the slack of the widest
 * vector read past the last window and the running row sums), or 0 when
 * the gathers' int32 indices cannot reach it. row_len and the
 * vector-rounded output row are bounded first: their sum could overflow
 * int64 for a huge padding. */
static int64_t ap_rows_buflen(const ap_plan *p, int lanes) {
    const int64_t OW = p->axis[2].out, OWV = (OW + lanes - 1) / lanes * lanes;
    if (p->row_len > INT32_MAX / 16 || OWV > INT32_MAX / 16) return 0;
    const int64_t n = (p->row_len + 3 * lanes + OWV + 15) / 16 * 16;
    return n > INT32_MAX / 8 ? 0 : n;
}

/* Whether windows k = s of 2 or 4 (dilation 1) tile each row from its
 * start: no padding, every window whole (the rows' last columns may be
 * left over). */
static int ap_rows_tiled(const ap_plan *p) {
    const ap_axis_plan *aw = &p->axis[2];
    const int64_t k = aw->window;
    if ((k != 2 && k != 4) || aw->step != 1) return 0;
    for (int64_t o = 0; o < aw->out; ++o)
        if (aw->first[o] != o * k || aw->taps[o] != k) return 0;
    return 1;
}

/* Vertical sums carried from row to row (rows paths, plan->vertical_running): compensated
 * running sums cost about 3 row passes per row entering or leaving, so they pay for windows
 * 8+ rows tall that move by less than a sixth of their height. */
static int ap_vertical_running_fits(const ap_plan *p) {
    return p->axis[1].window >= 8 && ap_vertical_step(p) * 6 < p->axis[1].window;
}

/* rows-s2 windows whose output rows the kernel sums in registers from their input rows, with
 * no row buffer (plan->rows_fused, simd_rows.inc's fused rows): 2-3 wide with dilation 1,
 * over at most AP_FUSED_ROWS input rows, not carried from row to row. Same sums as through
 * the buffer; a row's fixed cost is about half. */
static int ap_rows_fused_fits(const ap_plan *p) {
    const ap_axis_plan *aw = &p->axis[2];
    return aw->stride == 2 && aw->step == 1 && (aw->window == 2 || aw->window == 3) &&
           p->axis[0].window * p->axis[1].window <= AP_FUSED_ROWS &&
           p->axis[0].out * p->axis[1].out <= INT32_MAX / AP_FUSED_ROWS &&
           !ap_vertical_running_fits(p);
}

/* Short rows on small planes, where the rows paths' fixed cost per output
 * row dominates: rows of at most AP_PLANE_FLAT_MAX_W elements, or half
 * that for stride-2 windows that do not tile the rows (gathered here,
 * shuffled by rows-s2); not stride 1 (rows-s1 and same-flat load their
 * taps unaligned), nor tall windows carried from row to row. 2 x 2 stride
 * 2, 1 thread, Intel VM: 0.5x the rows path's time at W = 16, 0.9x at
 * 32-40, 1.0x at 48; 3 x 3 stride 2 pad 1: 0.6x at 16, 0.86x at 24, 1.2x
 * at 32. */
#define AP_PLANE_FLAT_MAX_W 40
static int ap_choose_plane_flat(ap_plan *p, char *why, size_t why_len) {
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    const int64_t R = ad->out * ah->out, W = aw->in;
    if (aw->stride == 1 || p->vertical_running || W < 1 || W > AP_PLANE_FLAT_MAX_W ||
        R > 16384 / W || R * aw->out > 16384)
        return 0;
    const int tiled = ap_rows_tiled(p);
    const int64_t max_w =
        tiled || aw->stride != 2 ? AP_PLANE_FLAT_MAX_W : AP_PLANE_FLAT_MAX_W / 2;
    if (W > max_w) return 0;
    p->path = AP_PATH_PLANE_FLAT, p->reason = "short rows on a small plane";
    p->plane_tiled = tiled;
    AP_WHY("rows of %lld <= %lld elements, %lld output rows a plane: groups of whole planes, "
           "outputs %s", (long long)W, (long long)max_w, (long long)R,
           tiled ? "summed by shuffles (windows tile the rows)" : "gathered");
    return 1;
}

/* nhwc_cols windows on a small image take the plane way (simd_nhwc_direct.inc): an output row
 * sums its window's input rows into a row of column sums once, then each window adds its
 * columns, with none of the per-row lists of taps, divisor rebuilds and tap-by-tap border
 * windows that dominate a row of a few windows. Same bits. 3 x 3 s1 p1, Zen 5, 1 thread,
 * operator alone: 1 x 7 x 7 x 16 465 -> 225 ns, x 64 channels 662 -> 380, x 128 906 -> 645;
 * 14 x 14 x 64 and wider images the same or slower (56 x 56 x 16 +10 % when tried), hence
 * at most AP_NHWC_PLANE_MAX_OW outputs along W. A window one column wide at the border
 * (padding as wide as the window) of more than two rows sums its taps in another order:
 * those keep the taps. */
static int ap_nhwc_plane_fits(const ap_plan *p) {
    const ap_axis_plan *aw = &p->axis[2];
    if (!p->nhwc_cols || aw->out > AP_NHWC_PLANE_MAX_OW ||
        aw->in * p->channels > AP_NHWC_PLANE_FLOATS)
        return 0;
    if (p->axis[0].window * p->axis[1].window > 2)
        for (int64_t ow = 0; ow < aw->out; ++ow)
            if (aw->taps[ow] == 1) return 0;
    return 1;
}

/* planes-cl (simd_planes.inc): channels first on planes whose input and output hold at most
 * AP_PLANES_CL_MAX elements together, where an image of AP_PLANES_CL_GROUP channels
 * of the same shape would take nhwc-direct; its switches are kept for the kernel. */
static int ap_choose_planes_cl(ap_plan *p, int lanes, char *why, size_t why_len) {
    if (p->in_plane + p->out_plane > AP_PLANES_CL_MAX) return 0;
    /* not where same-flat pools planes past 10 x 10, nor windows that tile the rows (pair
     * sums by shuffles): faster channels first; nor windows dilated along W, as channels-last
     * images of fewer channels than a vector are planned (api.c ap_flatten_channels: each
     * image one plane) */
    if ((ap_same_flat_fits(p) && p->in_plane > 100) || ap_rows_tiled(p) || p->axis[2].step != 1)
        return 0;
    /* nor rows of more than 24 that rows-s2 sums in registers: faster from 26 on (Zen 5, 1
     * thread, 3 x 3 s2 p1: 8x128x26x26 123 against 98 us, 8x64x20x60 119 against 64, 1-D
     * 32x256x1000 4311 against 1362; 8x128x22x22 101 against 146) */
    if (ap_rows_fused_fits(p) && p->axis[2].in > 24) return 0;
    ap_plan cl = *p;
    cl.layout = AP_LAYOUT_NHWC, cl.batch = 1, cl.channels = AP_PLANES_CL_GROUP;
    if (ap_choose_path(&cl, lanes, NULL, 0) != AP_PATH_NHWC_DIRECT) return 0;
    p->path = AP_PATH_PLANES_CL, p->reason = "small planes, pooled as channels";
    p->nhwc_rowsums = cl.nhwc_rowsums, p->nhwc_cols = cl.nhwc_cols;
    p->nhwc_plane = cl.nhwc_plane && p->dtype == AP_DTYPE_F32; /* (simd_planes.inc) */
    AP_WHY("planes of %lld + %lld output elements <= %d: groups of up to %d planes transposed to "
           "channels last, nhwc-direct%s", (long long)p->in_plane, (long long)p->out_plane,
           AP_PLANES_CL_MAX, AP_PLANES_CL_GROUP,
           p->nhwc_rowsums ? " over a row of column sums"
           : p->nhwc_plane ? " by columns: each output row from a row of column sums"
           : p->nhwc_cols  ? " by columns shared by 4 outputs along W"
                           : "");
    return 1;
}

ap_path ap_choose_tile_path(ap_plan *p, const ap_plan *whole, int lanes) {
    ap_choose_path(p, lanes, NULL, 0); /* the tile's row_off and row_len */
    ap_path path = whole->path;
    /* same-flat pools whole 'same' planes; rows-s1 sums in the same order */
    if (path == AP_PATH_SAME_FLAT) path = AP_PATH_ROWS_S1;
    switch (path) {
    case AP_PATH_ROWS_S1: case AP_PATH_ROWS_S2: case AP_PATH_ROWS_S4K4:
    case AP_PATH_ROWS_RUNNING: case AP_PATH_ROWS_GATHER:
        /* a tile's buffer is at most the whole array's, which fitted */
        p->row_buflen = ap_rows_buflen(p, lanes);
        break;
    default: break;
    }
    p->path = path;
    p->reason = whole->reason;
    p->vertical_running = whole->vertical_running;
    p->rows_fused = whole->rows_fused;
    p->horizontal_running = whole->horizontal_running;
    p->nhwc_rowsums = whole->nhwc_rowsums;
    p->nhwc_cols = whole->nhwc_cols;
    /* the tile's own size: the same sums either way (planes-cl: a group's, as the whole's) */
    p->nhwc_plane = path == AP_PATH_PLANES_CL ? whole->nhwc_plane : ap_nhwc_plane_fits(p);
    p->plane_tiled = whole->plane_tiled;
    return path;
}

ap_path ap_choose_path(ap_plan *p, int lanes, char *why, size_t why_len) {
    const ap_axis_plan *ad = &p->axis[0], *ah = &p->axis[1], *aw = &p->axis[2];
    p->vertical_running = p->horizontal_running = p->nhwc_rowsums = p->plane_tiled = 0;
    p->rows_fused = 0;
    p->nhwc_cols = p->nhwc_plane = 0;
    p->row_off = p->row_len = p->row_buflen = 0;
    if (p->batch == 0 || p->channels == 0) {
        p->path = AP_PATH_NONE, p->reason = "no output element";
        AP_WHY("batch %lld, channels %lld: no output element, no kernel runs",
               (long long)p->batch, (long long)p->channels);
        return p->path;
    }
    if (lanes == 0) {
        p->path = AP_PATH_SCALAR, p->reason = "no vector kernel for this isa and dtype";
        AP_WHY("no vector kernel for this instruction set and dtype");
        return p->path;
    }
    if (p->dtype == AP_DTYPE_F64) {
        const int nhwc = p->layout == AP_LAYOUT_NHWC;
        const int64_t n = aw->in * (nhwc ? p->channels : 1);
        /* adds per output: kd kh kw taps directly; by column sums, kd kh for each input
         * column a window moves past (the stride, about in / out for adaptive windows) and
         * kw along W (in double: windows and strides may be huge, their products past int64) */
        const double kdh = (double)ad->window * (double)ah->window, kw = (double)aw->window;
        const double sw = aw->stride > 0 ? (double)aw->stride
                                         : (double)((aw->in + aw->out - 1) / aw->out);
        const double via_cols = kdh * sw + kw, taps = kdh * kw;
        if (!nhwc && ap_is_global(p)) { /* torch's float64 mean of 7 x 7 planes took a fifth
                                         * of the scalar kernels' time */
            p->path = AP_PATH_F64_GLOBAL, p->reason = "float64, one window over each plane";
            AP_WHY("float64: one window covers each plane of %lld x %lld x %lld: 8 interleaved "
                   "partial sums", (long long)ad->in, (long long)ah->in, (long long)aw->in);
            return p->path;
        }
        /* Channels last where the column sums save no adds: the taps directly, channels in
         * vectors (Zen 5, 1 thread: 3 x 3 s2 p1 on 8x56x56x64 712 -> 499 us and global on
         * 32x7x7x512 127 -> 97 us against the column sums; 2 x 2 s2 on 1x256x256x64 3.3 ->
         * 1.4 ms against the scalar kernels). Channels first on small planes (input and
         * output of at most AP_F64_PLANES_MAX values together) with rows of at most 32
         * values or windows whose column sums save no adds, the same on groups of planes
         * transposed to channels last: a row's fixed cost in the column sums outweighs 7-30
         * outputs (Zen 5, 1 thread, builds alternated, against the column sums or the scalar
         * kernels: 3 x 3 s1 p1 on 32x512x7x7 4.3 -> 0.56 ms, on 8x64x32x32 0.60 -> 0.48; 2 x 2
         * s2 on 32x512x14x14 3.1 -> 2.0; 3 x 3 s2 p1 on 8x32x56x56 0.40 -> 0.26), though few
         * planes fill few lanes (1x1x32x32 3 x 3 s1 1 -> 6 us, 1x8x32x32 10 -> 10). Slower
         * on longer rows at stride 1, where the column sums run along the row (3 x 3 s1 p1 on
         * 8x64x20x100 0.67 -> 1.02 ms, 7 x 7 s1 p3 on 8x64x40x40 1.5 -> 1.9) and on larger
         * planes (3 x 3 s1 p1 on 8x32x64x64 0.80 -> 1.09). Larger planes on rows of fewer
         * than 8 values, or fewer than 10 where the column sums save no adds: the scalar
         * kernels. Decided by the shape only, not the batch or the channels (tiles and
         * channel chunks keep the whole call's sums). */
        if (nhwc && via_cols >= taps) {
            p->path = AP_PATH_F64_DIRECT, p->reason = "float64, taps summed directly";
            AP_WHY("float64: column sums would take %.0f adds per output against %.0f taps: "
                   "the taps summed directly, channels in vectors", via_cols, taps);
            return p->path;
        }
        if (!nhwc && p->in_plane + p->out_plane <= AP_F64_PLANES_MAX &&
            (aw->in <= 32 || via_cols >= taps)) {
            p->path = AP_PATH_F64_DIRECT, p->reason = "float64 small planes, taps summed directly";
            AP_WHY("float64: planes of %lld + %lld output values <= %d, rows of %lld values: "
                   "groups of planes as channels last, the taps summed directly, planes in "
                   "vectors", (long long)p->in_plane, (long long)p->out_plane,
                   AP_F64_PLANES_MAX, (long long)aw->in);
            return p->path;
        }
        if (!nhwc && (aw->in < 8 || (aw->in < 10 && via_cols >= taps))) {
            p->path = AP_PATH_SCALAR, p->reason = "float64 short rows";
            AP_WHY("float64: rows of %lld values (< 8, or < 10 with column sums of %.0f adds "
                   "per output against %.0f taps), the scalar kernels", (long long)aw->in,
                   via_cols, taps);
            return p->path;
        }
        /* one row of column sums per thread: W * C doubles */
        if (n > (INT64_C(1) << 26)) {
            p->path = AP_PATH_SCALAR_FALLBACK, p->reason = "float64 row too long to buffer";
            AP_WHY("float64: a row of %lld values > 64 Mi, too long for a buffer of column sums",
                   (long long)n);
            return p->path;
        }
        p->path = AP_PATH_F64_SEPARABLE, p->reason = "float64, column sums";
        AP_WHY("float64: column sums over the window's %lld x %lld rows, then windows of %lld "
               "along W (%.0f adds per output against %.0f taps)",
               (long long)ad->window, (long long)ah->window, (long long)aw->window, via_cols,
               taps);
        return p->path;
    }
    /* Row buffer: input position q lives at buf[row_off + q]; uniform
     * windows (stride > 0) read zeros for their padded taps, so the buffer
     * reaches the last window's end. The plan has checked that the last
     * window's extent fits in int64. */
    const int64_t s = aw->stride, k = aw->window, d = aw->step, OW = aw->out;
    p->row_off = s ? aw->pad_begin : 0;
    p->row_len = p->row_off + aw->in;
    if (s && (OW - 1) * s + (k - 1) * d + 1 > p->row_len) p->row_len = (OW - 1) * s + (k - 1) * d + 1;

    if (p->layout == AP_LAYOUT_NHWC) {
        if (ap_is_global(p)) {
            p->path = AP_PATH_GLOBAL, p->reason = "one window covers each plane";
            AP_WHY("one window covers each whole plane of %lld x %lld x %lld: channel blocks "
                   "summed in registers over every position",
                   (long long)ad->in, (long long)ah->in, (long long)aw->in);
            return p->path;
        }
        if (ap_choose_box(p, why, why_len)) return p->path;
        const int64_t C = p->channels;
        int64_t taps;
        if (ap_mul_overflow(ad->window, ah->window, &taps) ||
            ap_mul_overflow(taps, aw->window, &taps))
            taps = INT64_MAX;
        if (taps > 16 && p->row_len <= (1 << 20) / C) {
            p->path = AP_PATH_NHWC_SEPARABLE, p->reason = "window of more than 16 taps";
            /* wide stride-1 windows slide along W */
            p->horizontal_running = s == 1 && d == 1 && k > 4;
            AP_WHY("window of %lld taps > 16, padded (W, C) row of %lld x %lld floats <= 1 M; "
                   "horizontal: %s (stride %lld, dilation %lld, window width %lld)",
                   (long long)taps, (long long)p->row_len, (long long)C,
                   p->horizontal_running ? "sliding sums" : "direct sums", (long long)s,
                   (long long)d, (long long)k);
        } else if (taps > AP_NHWC_MAX_TAPS) {
            p->path = AP_PATH_SCALAR_FALLBACK, p->reason = "large window, rows too long to buffer";
            AP_WHY("window of %lld taps > %d, but a padded (W, C) row of %lld x %lld floats > 1 M",
                   (long long)taps, AP_NHWC_MAX_TAPS, (long long)p->row_len, (long long)C);
        } else {
            p->path = AP_PATH_NHWC_DIRECT, p->reason = taps > 16 ? "row too long to buffer"
                                                                : "window of at most 16 taps";
            /* Column sums pay when they save enough loads. Per output, in channel
             * vectors, with kh window rows: direct reads kh * k; the row of column
             * sums reads kh * s and writes s (its input positions), then reads k.
             * The direct reads mostly hit L1 (neighbouring windows share columns)
             * while the row's pass streams whole rows from L2, so the row wins
             * only by a third (4 x 4 stride 1: 16 against 9), or when C is one or
             * two vectors and the per-tap cost of the direct sums dominates
             * (3 x 3 stride 1: 9 against 7; measured on Zen 4). Adaptive: s = 0. */
            /* kh * k <= 64 taps here, but s may be huge */
            const int64_t kh = ad->window * ah->window;
            const int64_t via_row = s < kh * k ? (kh + 1) * s + k : INT64_MAX;
            /* But windows 2-3 columns wide at stride 1 take neither: 4 at a time sum
             * the 5-6 columns they cover once each, in registers (a 3 x 3 window reads
             * 4.5 vectors per output instead of 9; 1.4-2.3x faster than both ways on
             * the Intel VM, C = 16 to 192). So do 3 columns at stride 2: 4 windows
             * share 9 columns (6.75 vectors per output of a 3 x 3 window instead of 9;
             * x 16 channels 2x and x 3 channels 2.3-3x faster, Zen 5). But not on
             * more than 2 vectors of channels, unless the plane way takes the image:
             * there each window's 9 taps, a pixel's vectors one after another, come
             * in faster than 27 columns a vector at a time (Zen 5, 3 x 3 s2, 1 / 2
             * threads, us: 8 x 112 x 112 x 64 950 -> 853 / 503 -> 440, 8 x 56 x 56 x
             * 128 233 -> 209 / 118 -> 103; AVX2 kernels 1398 -> 915 / 287 -> 250, x 32
             * channels 298 -> 285; level at 2 vectors, 1.2-1.5x slower at 1). A tile
             * keeps the whole call's choice (ap_choose_tile_path). */
            const int cols_s2 = d == 1 && s == 2 && k == 3;
            p->nhwc_cols = d == 1 && ((s == 1 && (k == 2 || k == 3)) || cols_s2);
            p->nhwc_plane = ap_nhwc_plane_fits(p);
            if (cols_s2 && !p->nhwc_plane && C > 2 * lanes) p->nhwc_cols = 0;
            p->nhwc_rowsums = !p->nhwc_cols && kh >= 2 && aw->in <= (1 << 20) / C &&
                              (s == 0 || (via_row < kh * k &&
                                          (2 * kh * k >= 3 * via_row || C <= 2 * lanes)));
            AP_WHY("window of %lld taps%s: channel vectors summed over the taps%s", (long long)taps,
                   taps > 16 ? " (a padded (W, C) row > 1 M floats)" : " <= 16",
                   p->nhwc_rowsums ? " of a row of column sums (a third fewer loads than "
                                     "the window's taps, or C of 1-2 vectors)"
                   : p->nhwc_plane ? " of the input, by columns: a small image's output row "
                                     "from a row of column sums"
                   : p->nhwc_cols ? " of the input, by columns shared by 4 outputs along W"
                                  : " of the input");
        }
        return p->path;
    }

    if (ap_is_global(p)) {
        p->path = AP_PATH_GLOBAL, p->reason = "one window covers each plane";
        AP_WHY("one window covers each whole plane of %lld x %lld x %lld", (long long)ad->in,
               (long long)ah->in, (long long)aw->in);
        return p->path;
    }
    if (ap_choose_planes_cl(p, lanes, why, why_len)) return p->path;
    if (ap_same_flat_fits(p)) {
        p->path = AP_PATH_SAME_FLAT, p->reason = "small 'same' windows on a small plane";
        AP_WHY("'same' window %lld x %lld < 8 (dilation %lld x %lld), stride 1, output = "
               "input, plane %lld x %lld <= 16384 elements",
               (long long)ah->window, (long long)aw->window, (long long)ah->step,
               (long long)aw->step, (long long)ah->in, (long long)aw->in);
        return p->path;
    }
    if (ap_choose_box(p, why, why_len)) return p->path;
    /* The gathers index the row buffer with int32 (ap_rows_buflen). */
    if (!(p->row_buflen = ap_rows_buflen(p, lanes))) {
        p->path = AP_PATH_SCALAR_FALLBACK, p->reason = "row buffer past int32 indices";
        AP_WHY("row buffer of %lld positions for %lld outputs exceeds int32 gather indices",
               (long long)p->row_len, (long long)OW);
        return p->path;
    }
    p->vertical_running = ap_vertical_running_fits(p);
    if (ap_choose_plane_flat(p, why, why_len)) return p->path;
    char vbuf[120];
    const char *vwhy = why ? ap_vertical_why(p, vbuf, sizeof vbuf) : "";
    if (s == 1 && d == 1 && k > 2 * lanes) {
        p->path = AP_PATH_ROWS_RUNNING, p->reason = "wide stride-1 window";
        AP_WHY("stride 1 along W, window width %lld > 2 x %d lanes: running sums; %s",
               (long long)k, lanes, vwhy);
    } else if (s == 1) {
        p->path = AP_PATH_ROWS_S1, p->reason = "stride 1 along W";
        AP_WHY("stride 1 along W, window width %lld, dilation %lld%s; %s", (long long)k,
               (long long)d, d == 1 && k == 3 ? " (3 taps unrolled)" : "", vwhy);
    } else if (s == 2) {
        p->path = AP_PATH_ROWS_S2, p->reason = "stride 2 along W";
        p->rows_fused = ap_rows_fused_fits(p);
        AP_WHY("stride 2 along W, window width %lld, dilation %lld%s; %s", (long long)k,
               (long long)d,
               p->rows_fused ? " (summed in registers, no row buffer)"
               : d == 1 && (k == 2 || k == 3) ? " (taps unrolled)" : "", vwhy);
    } else if (s == 4 && k == 4 && d == 1) {
        p->path = AP_PATH_ROWS_S4K4, p->reason = "window 4, stride 4 along W";
        AP_WHY("window 4, stride 4 along W: pair sums by shuffles; %s", vwhy);
    } else {
        p->path = AP_PATH_ROWS_GATHER, p->reason = s ? "stride along W without shuffles"
                                                     : "windows of varying length along W";
        if (s)
            AP_WHY("stride %lld along W (window width %lld, dilation %lld): masked gathers; %s",
                   (long long)s, (long long)k, (long long)d, vwhy);
        else
            AP_WHY("adaptive windows of varying length along W (%lld -> %lld): masked gathers; %s",
                   (long long)aw->in, (long long)OW, vwhy);
    }
    return p->path;
}
