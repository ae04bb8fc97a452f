/* test_isa.c - every instruction set against the scalar oracle, and the
 * scalar oracle against a float64 reference written from the model of
 * avgpool.h, over many random descriptors: ranks 1-3, both layouts, all four
 * dtypes, strides, dilations, paddings, include_padding, count_overhang,
 * divisor_override, explicit output sizes, adaptive pooling, empty batches,
 * inf / NaN inputs, one or more threads.
 *
 * Kernel paths (csrc/paths.h): first one fixed case per path, with a shape
 * only that path takes, must be named so by ap_explain_* on every SIMD
 * instruction set. The random cases are weighted towards each path and
 * towards edges a uniform draw rarely meets (enum flavor: 'same' windows,
 * depth / height 1, vector tails of sizes and channels, windows as large as
 * the padded input, wide windows, strides 2 and 4, channels-last windows of
 * more than 16 taps, row buffers past int32 indices); the summary prints
 * how many cases took each path, and a run of 2000 cases or more fails if
 * a SIMD instruction set left a path untaken. (The uniform generator
 * missed the depth-1 'same'-window bug that hypothesis found; this one
 * finds it in 8 of the default 10000 cases.)
 *
 * Input and output buffers sit against a PROT_NONE guard page (after the
 * last element in even cases, before the first in odd ones), so a kernel
 * reading or writing outside the tensor crashes the test.
 *
 *   test_isa [cases [seed [case]]]   default: 10000 cases, seed 1; `case` reruns
 *                                    that case only (as printed by a failure)
 */
#if defined(__linux__) || defined(__APPLE__)
#define _DEFAULT_SOURCE
#define TU_GUARD_PAGES 1
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "../../csrc/paths.h"

/* Whether odd cases run on the OpenMP team: not under ThreadSanitizer, which cannot see
 * libgomp's (uninstrumented) barriers and would report every OpenMP call as a race. */
#if defined(__SANITIZE_THREAD__)
#define TU_OPENMP_CASES 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_OPENMP_CASES 0
#endif
#endif
#ifndef TU_OPENMP_CASES
#define TU_OPENMP_CASES 1
#endif

static const ap_dtype DTYPES[4] = {AP_DTYPE_F32, AP_DTYPE_F64, AP_DTYPE_F16, AP_DTYPE_BF16};

/* Error bounds, as a fraction of |expected| + the window's mean |x|
 * (sum of |x| over the window / |divisor|): float32 sums of up to a few
 * hundred terms, plus one rounding to the 16-bit formats. */
static double tol_ref(ap_dtype dt) {
    switch (dt) {
    case AP_DTYPE_F32: return 3e-5;
    case AP_DTYPE_F64: return 1e-12;
    case AP_DTYPE_F16: return 1.5e-3;
    case AP_DTYPE_BF16: return 1e-2;
    }
    return 0;
}
static double tol_isa(ap_dtype dt) { /* summation order and reciprocals only */
    switch (dt) {
    case AP_DTYPE_F32: return 2e-6;
    case AP_DTYPE_F64: return 1e-12;
    case AP_DTYPE_F16: return 1e-3;
    case AP_DTYPE_BF16: return 8e-3;
    }
    return 0;
}

/* ---- guarded buffers ---------------------------------------------------------- */

typedef struct {
    void *map;
    size_t maplen;
    void *p;
} gbuf;

static void *gbuf_alloc(gbuf *g, size_t bytes, int at_end) {
    memset(g, 0, sizeof *g);
    if (bytes == 0) return NULL;
#ifdef TU_GUARD_PAGES
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const size_t pages = (bytes + pg - 1) / pg;
    g->maplen = (pages + 2) * pg;
    char *m = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) abort();
    if (mprotect(m, pg, PROT_NONE) || mprotect(m + (pages + 1) * pg, pg, PROT_NONE)) abort();
    g->map = m;
    g->p = at_end ? m + (pages + 1) * pg - bytes : m + pg;
#else
    (void)at_end;
    g->p = g->map = malloc(bytes);
    if (!g->p) abort();
#endif
    /* written once, so that its pages are in memory: outputs then take streaming stores where
     * a call's size calls for them (fresh pages take plain ones, ap_pages_resident) */
    memset(g->p, 0xff, bytes);
    return g->p;
}

static void gbuf_readonly(gbuf *g) {
#ifdef TU_GUARD_PAGES
    if (g->map) {
        const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
        if (mprotect((char *)g->map + pg, g->maplen - 2 * pg, PROT_READ)) abort();
    }
#else
    (void)g;
#endif
}

static void gbuf_free(gbuf *g) {
#ifdef TU_GUARD_PAGES
    if (g->map) munmap(g->map, g->maplen);
#else
    free(g->map);
#endif
    memset(g, 0, sizeof *g);
}

/* ---- random cases --------------------------------------------------------------- */

typedef struct {
    int adaptive;
    ap_pool_desc pd;
    ap_adaptive_desc ad;
    ap_tensor_desc t;
    ap_dtype dt;
    int threads;
    int specials;
    int explicit_out;
    int64_t out[AP_MAX_SPATIAL];
    int64_t nx, ny;
    int flavor; /* enum flavor (random cases) */
} tcase;

static int64_t prod(const tcase *c, const int64_t *s) {
    int64_t n = c->t.batch * c->t.channels;
    for (int a = 0; a < c->t.rank; ++a) n *= s[a];
    return n;
}

/* Sizes next to multiples of 8 and 16 (vector tails of 4, 8 and 16 lanes). */
static int64_t tail_size(void) {
    static const int64_t t[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49};
    return t[tu_range(0, (int64_t)(sizeof t / sizeof t[0]) - 1)];
}

/* The kinds of random case, each weighted towards a path or an edge that a
 * uniform draw rarely meets (a 'same' window on depth 1 was such a gap). */
enum flavor {
    F_GENERIC,   /* the original mix: any rank, small windows, strides 1-5   */
    F_SAME,      /* 'same' windows < 8 on H / W: stride 1, dilation 1-3      */
    F_FULL,      /* windows as large as the padded input (global, one row)   */
    F_WIDE,      /* windows wider than two vectors along W (running sums)    */
    F_S2S4,      /* strides 2 and 4 with windows 2 to 4 (shuffle paths)      */
    F_SEPARABLE, /* channels last, windows of more than 16 taps              */
    F_FALLBACK,  /* row buffers past int32 indices (huge dilation, padding)  */
    F_COUNT
};
static const char *const FLAVOR_NAMES[F_COUNT] = {"generic", "same", "full", "wide",
                                                  "s2/s4",   "separable", "fallback"};

/* A random valid case (retries until ap_*_output_sizes accepts it). */
static void gen_case(tcase *c) {
    for (;;) {
        memset(c, 0, sizeof *c);
        const double u = tu_uniform();
        c->flavor = u < 0.40 ? F_GENERIC : u < 0.58 ? F_SAME : u < 0.66 ? F_FULL
                  : u < 0.74 ? F_WIDE : u < 0.86 ? F_S2S4 : u < 0.96 ? F_SEPARABLE : F_FALLBACK;
        const int rank = (int)tu_range(1, 3);
        const int big = tu_chance(0.03); /* large enough for several threads */
        ap_tensor_desc *t = &c->t;
        t->rank = rank;
        t->layout = tu_chance(0.5) ? AP_LAYOUT_NHWC : AP_LAYOUT_NCHW;
        if (c->flavor == F_SEPARABLE) t->layout = AP_LAYOUT_NHWC;
        if (c->flavor == F_FALLBACK) t->layout = AP_LAYOUT_NCHW;
        t->batch = tu_chance(0.03) ? 0 : tu_range(1, 2);
        t->channels = t->layout == AP_LAYOUT_NHWC ? tu_range(1, 37) : tu_range(1, 5);
        if (tu_chance(0.3)) t->channels = t->layout == AP_LAYOUT_NHWC ? tail_size() : tu_range(1, 3);
        for (int a = 0; a < rank; ++a)
            t->sizes[a] = rank == 1 ? tu_range(1, big ? 4000 : 80)
                        : rank == 2 ? tu_range(1, big ? 90 : 24)
                                    : tu_range(1, big ? 24 : 9);
        if (big && t->layout == AP_LAYOUT_NCHW) t->channels = tu_range(4, 12);
        /* vector tails along W */
        if (tu_chance(0.3)) t->sizes[rank - 1] = tail_size();
        /* depth and / or height 1 */
        if (rank == 3 && tu_chance(0.35)) t->sizes[0] = 1;
        if (rank >= 2 && tu_chance(0.25)) t->sizes[rank - 2] = 1;
        c->dt = DTYPES[tu_range(0, 3)];
        c->threads = tu_chance(0.4) ? (int)tu_range(2, 3) : (int)tu_range(0, 1);
        c->specials = tu_chance(0.15) ? (int)tu_range(1, 3) : 0;
        c->adaptive = c->flavor == F_GENERIC ? tu_chance(0.4)
                    : c->flavor == F_FULL || c->flavor == F_SEPARABLE ? tu_chance(0.2) : 0;
        ap_status s;
        if (c->adaptive) {
            c->ad.rank = rank;
            for (int a = 0; a < rank; ++a)
                c->ad.output_sizes[a] = c->flavor == F_FULL ? 1
                                      : tu_chance(0.1) ? t->sizes[a]
                                                       : tu_range(1, t->sizes[a] + 2);
            s = ap_adaptive_output_sizes(&c->ad, t, c->out);
        } else {
            ap_pool_desc *d = &c->pd;
            d->rank = rank;
            for (int a = 0; a < rank; ++a) {
                const int64_t in = t->sizes[a];
                const int w_axis = a == rank - 1;
                d->start_padding[a] = tu_chance(0.5) ? 0 : tu_range(0, 3);
                d->end_padding[a] = tu_chance(0.5) ? 0 : tu_range(0, 3);
                d->dilations[a] = tu_chance(0.2) ? tu_range(2, 3) : 1;
                d->strides[a] = tu_chance(0.6) ? tu_range(1, 2) : tu_range(1, 5);
                int64_t padded = in + d->start_padding[a] + d->end_padding[a];
                d->window[a] = tu_chance(0.15) ? tu_range(1, padded) : tu_range(1, 5);
                switch (c->flavor) {
                case F_SAME: /* the depth axis of rank 3 keeps its random window */
                    if (rank == 3 && a == 0 && tu_chance(0.5)) break;
                    d->window[a] = tu_range(1, 7);
                    d->strides[a] = 1;
                    d->dilations[a] = tu_chance(0.3) ? tu_range(2, 3) : 1;
                    {
                        const int64_t span = (d->window[a] - 1) * d->dilations[a] + 1;
                        d->start_padding[a] = tu_range(0, span - 1);
                        d->end_padding[a] = span - 1 - d->start_padding[a];
                    }
                    break;
                case F_FULL:
                    d->dilations[a] = 1;
                    d->window[a] = padded;
                    break;
                case F_WIDE:
                    if (w_axis) {
                        d->strides[a] = tu_chance(0.7) ? 1 : tu_range(2, 3);
                        d->dilations[a] = tu_chance(0.8) ? 1 : 2;
                        t->sizes[a] = tu_range(34, 140);
                        padded = t->sizes[a] + d->start_padding[a] + d->end_padding[a];
                        d->window[a] = tu_range(9, padded < 70 ? padded : 70);
                        if ((d->window[a] - 1) * d->dilations[a] + 1 > padded) d->dilations[a] = 1;
                    } else if (tu_chance(0.5)) {
                        d->window[a] = tu_range(1, padded < 12 ? padded : 12); /* tall: vertical running sums */
                    }
                    break;
                case F_S2S4:
                    d->strides[a] = tu_chance(0.5) ? 2 : 4;
                    d->window[a] = tu_chance(0.5) ? 4 : tu_range(2, 3);
                    d->dilations[a] = tu_chance(0.85) ? 1 : 2;
                    if (w_axis && t->sizes[a] < 8) t->sizes[a] = tu_range(8, 45);
                    break;
                case F_SEPARABLE:
                    d->window[a] = tu_range(rank == 1 ? 17 : 3, rank == 1 ? 40 : 7);
                    if (t->sizes[a] + d->start_padding[a] + d->end_padding[a] < d->window[a])
                        t->sizes[a] = d->window[a];
                    break;
                case F_FALLBACK:
                    if (w_axis) {
                        /* effective window 2^28 + 1 over a huge end padding,
                         * or a huge stride over a huge start padding (few
                         * taps either way: the reference walks every tap) */
                        if (tu_chance(0.6)) {
                            d->window[a] = 2, d->dilations[a] = INT64_C(1) << 28;
                            d->end_padding[a] = INT64_C(1) << 28;
                        } else {
                            d->start_padding[a] = INT64_C(1) << 28;
                            d->strides[a] = INT64_C(1) << tu_range(20, 30);
                            d->window[a] = tu_range(1, 3), d->dilations[a] = 1;
                        }
                    }
                    break;
                default: break;
                }
            }
            d->include_padding = tu_chance(0.5);
            d->count_overhang = tu_chance(0.2);
            if (tu_chance(0.1)) {
                d->divisor_override = tu_range(-5, 20);
                if (d->divisor_override == 0) d->divisor_override = 7;
            }
            s = ap_pool_output_sizes(d, t, c->out);
            if (s == AP_OK && c->flavor != F_SAME && tu_chance(0.25)) {
                /* explicit, around the floor rule */
                c->explicit_out = 1;
                for (int a = 0; a < rank; ++a) {
                    int64_t o = c->out[a] + tu_range(-1, 2);
                    d->output_sizes[a] = o < 1 ? 1 : o;
                }
                s = ap_pool_output_sizes(d, t, c->out);
            }
        }
        if (s != AP_OK) continue;
        c->nx = prod(c, t->sizes);
        c->ny = prod(c, c->out);
        if (c->nx > 400000 || c->ny > 400000) continue;
        return;
    }
}

/* ---- float64 reference ------------------------------------------------------------ */

/* Axis a (0..2 of the D, H, W view) of case c: its taps for output o. */
typedef struct {
    int64_t in, out, k, s, d, pb, pe;
    int adaptive;
} axis;

static axis axis_of(const tcase *c, int a3) {
    axis x = {1, 1, 1, 1, 1, 0, 0, 0};
    const int lead = 3 - c->t.rank, a = a3 - lead;
    if (a < 0) return x;
    x.in = c->t.sizes[a];
    x.out = c->out[a];
    if (c->adaptive) {
        x.adaptive = 1;
        return x;
    }
    x.k = c->pd.window[a], x.s = c->pd.strides[a], x.d = c->pd.dilations[a];
    x.pb = c->pd.start_padding[a], x.pe = c->pd.end_padding[a];
    return x;
}

/* Valid positions of output o (up to cap), and this axis' divisor factor. */
static int taps_of(const tcase *c, const axis *x, int64_t o, int64_t *pos, int64_t *count) {
    int n = 0;
    if (x->adaptive) {
        const int64_t start = (o * x->in) / x->out;
        const int64_t end = ((o + 1) * x->in + x->out - 1) / x->out;
        for (int64_t p = start; p < end; ++p) pos[n++] = p;
        *count = n;
        return n;
    }
    const int64_t base = o * x->s - x->pb;
    int64_t padded = 0;
    for (int64_t j = 0; j < x->k; ++j) {
        const int64_t p = base + j * x->d;
        if (p >= 0 && p < x->in) pos[n++] = p;
        if (p < x->in + x->pe) ++padded;
    }
    if (!c->pd.include_padding && c->pd.count_overhang && base >= x->in)
        *count = x->in - base; /* OpenVINO: 0 at the end (NaN), negative past it (-0) */
    else if (!c->pd.include_padding)
        *count = n;
    else
        *count = c->pd.count_overhang ? x->k : padded;
    return n;
}

/* visit(ctx, yi, div, xi, n) for every output element yi of case c: its divisor and the n
 * input elements xi[0 .. n) its window sums (the float64 references' one walk over the
 * windows, forward and backward). */
typedef void (*window_visit)(void *ctx, int64_t yi, double div, const int64_t *xi, int64_t n);

static void for_each_window(const tcase *c, window_visit visit, void *ctx) {
    axis ax[3];
    for (int a = 0; a < 3; ++a) ax[a] = axis_of(c, a);
    const int64_t C = c->t.channels, N = c->t.batch;
    const int64_t D = ax[0].in, H = ax[1].in, W = ax[2].in;
    const int64_t OD = ax[0].out, OH = ax[1].out, OW = ax[2].out;
    const int nhwc = c->t.layout == AP_LAYOUT_NHWC;
    int64_t *pd = malloc(sizeof(int64_t) * (size_t)(D + H + W + 3) * 8);
    int64_t *ph = pd + (D + 1) * 8, *pw = ph + (H + 1) * 8;
    int64_t *xi = malloc(sizeof(int64_t) * (size_t)(D * H * W * 8 + 1));
    if (!pd || !xi) abort();
    for (int64_t n = 0; n < N; ++n)
        for (int64_t od = 0; od < OD; ++od)
            for (int64_t oh = 0; oh < OH; ++oh)
                for (int64_t ow = 0; ow < OW; ++ow) {
                    int64_t cd, ch, cw;
                    const int nd = taps_of(c, &ax[0], od, pd, &cd);
                    const int nh = taps_of(c, &ax[1], oh, ph, &ch);
                    const int nw = taps_of(c, &ax[2], ow, pw, &cw);
                    const double div = c->adaptive || !c->pd.divisor_override
                                           ? (double)(cd * ch * cw)
                                           : (double)c->pd.divisor_override;
                    for (int64_t ch_ = 0; ch_ < C; ++ch_) {
                        int64_t k = 0;
                        for (int i = 0; i < nd; ++i)
                            for (int j = 0; j < nh; ++j)
                                for (int q = 0; q < nw; ++q) {
                                    const int64_t sp = (pd[i] * H + ph[j]) * W + pw[q];
                                    xi[k++] = nhwc ? (n * D * H * W + sp) * C + ch_
                                                   : (n * C + ch_) * D * H * W + sp;
                                }
                        const int64_t o = (od * OH + oh) * OW + ow;
                        visit(ctx, nhwc ? (n * OD * OH * OW + o) * C + ch_
                                        : (n * C + ch_) * OD * OH * OW + o,
                              div, xi, k);
                    }
                }
    free(pd);
    free(xi);
}

typedef struct {
    const double *x;
    double *ref, *mag;
} forward_ref;

static void visit_forward(void *ctx, int64_t yi, double div, const int64_t *xi, int64_t n) {
    forward_ref *f = (forward_ref *)ctx;
    double sum = 0, abssum = 0;
    for (int64_t k = 0; k < n; ++k) {
        sum += f->x[xi[k]];
        if (isfinite(f->x[xi[k]])) abssum += fabs(f->x[xi[k]]);
    }
    f->ref[yi] = div == 0 ? NAN : sum / div;
    f->mag[yi] = div == 0 ? 0 : abssum / fabs(div);
}

/* ref[i] = reference mean, mag[i] = sum of finite |x| over the window / |divisor|. */
static void reference(const tcase *c, const double *x, double *ref, double *mag) {
    forward_ref f = {x, ref, mag};
    for_each_window(c, visit_forward, &f);
}

/* ---- per-ISA statistics ------------------------------------------------------------ */

typedef struct {
    int available;
    long cases, adaptive, explicit_out, threaded, specials, outputs;
    long by_dtype[4], by_layout[2], by_rank[4];
    long by_path[AP_PATH_COUNT]; /* cases per kernel path (ap_explain_*) */
    long by_flavor[F_COUNT];
    double worst_isa, worst_ref; /* largest error / bound seen */
} stats;

static int dtype_index(ap_dtype dt) { return (int)dt; }

static const char *describe(const tcase *c, char *buf, size_t len) {
    int n = snprintf(buf, len, "%s %s rank %d N%lld C%lld in", c->adaptive ? "adaptive" : "pool",
                     c->t.layout == AP_LAYOUT_NHWC ? "NHWC" : "NCHW", c->t.rank,
                     (long long)c->t.batch, (long long)c->t.channels);
    for (int a = 0; a < c->t.rank; ++a)
        n += snprintf(buf + n, len - (size_t)n, " %lld", (long long)c->t.sizes[a]);
    n += snprintf(buf + n, len - (size_t)n, " out");
    for (int a = 0; a < c->t.rank; ++a)
        n += snprintf(buf + n, len - (size_t)n, " %lld", (long long)c->out[a]);
    if (!c->adaptive) {
        const ap_pool_desc *d = &c->pd;
        for (int a = 0; a < c->t.rank; ++a)
            n += snprintf(buf + n, len - (size_t)n, " | k%lld s%lld d%lld p%lld,%lld",
                          (long long)d->window[a], (long long)d->strides[a],
                          (long long)d->dilations[a], (long long)d->start_padding[a],
                          (long long)d->end_padding[a]);
        n += snprintf(buf + n, len - (size_t)n, " incl %d overhang %d override %lld explicit %d",
                      d->include_padding, d->count_overhang, (long long)d->divisor_override,
                      c->explicit_out);
    }
    snprintf(buf + n, len - (size_t)n, " %s threads %d", tu_dtype_name(c->dt), c->threads);
    return buf;
}

/* Spacing of the smallest values (subnormals) of dt: results that small
 * have an absolute, not relative, rounding error. */
static double quantum(ap_dtype dt) {
    switch (dt) {
    case AP_DTYPE_F32: return 0x1p-149;
    case AP_DTYPE_F64: return 0x1p-1074;
    case AP_DTYPE_F16: return 0x1p-24;
    case AP_DTYPE_BF16: return 0x1p-133;
    }
    return 0;
}

/* got within tol of want (NaN where want is NaN, the same infinity);
 * returns the error / bound (<= 1 passes). */
static double excess(double got, double want, double mag, double tol, ap_dtype dt) {
    if (isnan(want)) return isnan(got) ? 0 : INFINITY;
    if (isinf(want)) return got == want ? 0 : INFINITY;
    if (!isfinite(got)) return INFINITY;
    const double bound = tol * (fabs(want) + mag) + quantum(dt);
    return fabs(got - want) / bound;
}

static ap_status run_case(const tcase *c, const void *x, void *y) {
    return c->adaptive ? ap_adaptive_avgpool(&c->ad, &c->t, c->dt, x, y, c->threads)
                       : ap_avgpool(&c->pd, &c->t, c->dt, x, y, c->threads);
}

/* ---- kernel paths (csrc/paths.h) ------------------------------------------------------ */

#define PATH_NAME_(suffix, name, skips_nan, when) name,
static const char *const PATH_NAMES[AP_PATH_COUNT] = {AP_PATHS(PATH_NAME_)};
#undef PATH_NAME_

/* The path the call of case c takes on the instruction set in use, from
 * ap_explain_*: the name between the first ": " and the next " (". */
static int path_of(const tcase *c, char *line, size_t len) {
    const ap_status s = c->adaptive ? ap_explain_adaptive(&c->ad, &c->t, c->dt, line, len)
                                    : ap_explain_pool(&c->pd, &c->t, c->dt, line, len);
    CHECK(s == AP_OK, "ap_explain_*: status %d", (int)s);
    const char *p = strstr(line, ": ");
    if (s != AP_OK || !p) return -1;
    p += 2;
    const char *e = strstr(p, " (");
    const size_t n = e ? (size_t)(e - p) : strlen(p);
    for (int i = 0; i < AP_PATH_COUNT; ++i)
        if (strlen(PATH_NAMES[i]) == n && strncmp(p, PATH_NAMES[i], n) == 0) return i;
    return -1;
}

/* Run case c (number ci) on every available instruction set: against the
 * float64 reference, and the SIMD ones against scalar. want_path >= 0: the
 * path every SIMD instruction set must take (f32 / f16 / bf16); WANT_F64:
 * float64's own paths or the scalar one. */
enum { WANT_F64 = -2 };
static void check_case(const tcase *c, long ci, stats *st, int want_path) {
    char desc[512], line[512];
    const size_t es = tu_elem_size(c->dt);
    gbuf gx, gy;
    void *x = gbuf_alloc(&gx, (size_t)c->nx * es, ci % 2 == 0);
    double *xd = malloc(sizeof(double) * (size_t)(c->nx + 1));
    double *ref = malloc(sizeof(double) * (size_t)(c->ny + 1));
    double *mag = malloc(sizeof(double) * (size_t)(c->ny + 1));
    double *ys = malloc(sizeof(double) * (size_t)(c->ny + 1));
    if (!xd || !ref || !mag || !ys) abort();
    const double scale = pow(10.0, (double)tu_range(-2, 2));
    for (int64_t i = 0; i < c->nx; ++i) tu_set(c->dt, x, i, (2 * tu_uniform() - 1) * scale);
    for (int s = 0; s < c->specials && c->nx > 0; ++s) {
        static const double sv[3] = {INFINITY, -INFINITY, NAN};
        tu_set(c->dt, x, tu_range(0, c->nx - 1), sv[tu_range(0, 2)]);
    }
    for (int64_t i = 0; i < c->nx; ++i) xd[i] = tu_get(c->dt, x, i);
    reference(c, xd, ref, mag);
    gbuf_readonly(&gx); /* the input is never written */

    for (int ii = 0; ii < TU_N_ISAS; ++ii) {
        if (!st[ii].available) continue;
        if (ap_set_isa(tu_isas[ii]) != AP_OK) abort();
        const int path = path_of(c, line, sizeof line);
        if (path >= 0) ++st[ii].by_path[path];
        if (want_path == WANT_F64 && ii > 0) /* paths.c: the column sums where they pay */
            CHECK(path == AP_PATH_F64_SEPARABLE || path == AP_PATH_F64_DIRECT ||
                      path == AP_PATH_F64_GLOBAL || path == AP_PATH_SCALAR,
                  "[%s] float64 case %ld takes %s: %s", tu_isas[ii], ci, line,
                  describe(c, desc, sizeof desc));
        if (want_path >= 0 && ii > 0)
            CHECK(path == want_path, "[%s] case %ld takes %s, expected %s: %s", tu_isas[ii], ci,
                  line, PATH_NAMES[want_path], describe(c, desc, sizeof desc));
        void *y = gbuf_alloc(&gy, (size_t)c->ny * es, ci % 2 == 1);
        const ap_status s = run_case(c, x, y);
        CHECK(s == AP_OK, "[%s] case %ld: status %d (%s): %s", tu_isas[ii], ci, (int)s,
              ap_status_string(s), describe(c, desc, sizeof desc));
        stats *t = &st[ii];
        ++t->cases;
        t->adaptive += c->adaptive;
        t->explicit_out += c->explicit_out;
        t->threaded += c->threads > 1;
        t->specials += c->specials > 0;
        t->outputs += (long)c->ny;
        ++t->by_dtype[dtype_index(c->dt)];
        ++t->by_layout[c->t.layout];
        ++t->by_rank[c->t.rank];
        ++t->by_flavor[c->flavor];
        long bad = 0;
        for (int64_t i = 0; s == AP_OK && i < c->ny; ++i) {
            const double g = tu_get(c->dt, y, i);
            if (ii == 0) ys[i] = g;
            const double er = excess(g, ref[i], mag[i], tol_ref(c->dt), c->dt);
            if (er > t->worst_ref) t->worst_ref = er;
            double ei = 0;
            if (ii > 0) {
                ei = excess(g, ys[i], mag[i], tol_isa(c->dt), c->dt);
                if (ei > t->worst_isa) t->worst_isa = ei;
            }
            if ((er > 1 || ei > 1) && bad++ < 3)
                tu_fail(__FILE__, __LINE__,
                        "[%s] case %ld y[%lld] = %.9g, scalar %.9g, reference %.9g "
                        "(mean |x| %.3g), path %s: %s",
                        tu_isas[ii], ci, (long long)i, g, ii ? ys[i] : g, ref[i], mag[i],
                        path >= 0 ? PATH_NAMES[path] : "?", describe(c, desc, sizeof desc));
        }
        ++tu_checks;
        if (s == AP_OK && c->ny > 0 && c->threads != 1) { /* the same bits on one thread */
            tcase one = *c;
            one.threads = 1;
            void *y1 = malloc((size_t)c->ny * es + 1);
            if (!y1) abort();
            CHECK(run_case(&one, x, y1) == AP_OK &&
                      memcmp(y1, y, (size_t)c->ny * es) == 0,
                  "[%s] case %ld: %d threads differ from 1: %s", tu_isas[ii], ci, c->threads,
                  describe(c, desc, sizeof desc));
            free(y1);
        }
        gbuf_free(&gy);
    }
    gbuf_free(&gx);
    free(xd);
    free(ref);
    free(mag);
    free(ys);
}

/* ---- backward ------------------------------------------------------------------------ */

typedef struct {
    const double *gy;
    double *gref, *mag;
} backward_ref;

static void visit_backward(void *ctx, int64_t yi, double div, const int64_t *xi, int64_t n) {
    backward_ref *f = (backward_ref *)ctx;
    if (div == 0) return;
    const double term = f->gy[yi] / div;
    for (int64_t k = 0; k < n; ++k) {
        f->gref[xi[k]] += term;
        f->mag[xi[k]] += fabs(term);
    }
}

/* gref[i] = sum over the windows o that count input i of gy[o] / divisor(o) (a divisor of 0
 * sends nothing back), mag[i] = the same sum of |terms|: the float64 reference of the
 * backward, scattered from the outputs (the library gathers per input). */
static void reference_backward(const tcase *c, const double *gy, double *gref, double *mag) {
    for (int64_t i = 0; i < c->nx; ++i) gref[i] = mag[i] = 0;
    backward_ref f = {gy, gref, mag};
    for_each_window(c, visit_backward, &f);
}

static ap_status run_backward(const tcase *c, const void *gy, void *gx, int threads) {
    return c->adaptive ? ap_adaptive_avgpool_backward(&c->ad, &c->t, c->dt, gy, gx, threads)
                       : ap_avgpool_backward(&c->pd, &c->t, c->dt, gy, gx, threads);
}

/* Backward of case c on every instruction set: against the float64 reference, the SIMD
 * ones against scalar, and bitwise the same on one thread as on c->threads. Returns the
 * worst error / bound against the reference. */
static double check_backward_case(const tcase *c, long ci, long *per_isa) {
    char desc[512];
    const size_t es = tu_elem_size(c->dt);
    gbuf ggy, ggx, gg1;
    void *gy = gbuf_alloc(&ggy, (size_t)c->ny * es, ci % 2 == 0);
    double *gyd = malloc(sizeof(double) * (size_t)(c->ny + 1));
    double *ref = malloc(sizeof(double) * (size_t)(c->nx + 1));
    double *mag = malloc(sizeof(double) * (size_t)(c->nx + 1));
    double *gs = malloc(sizeof(double) * (size_t)(c->nx + 1));
    if (!gyd || !ref || !mag || !gs) abort();
    for (int64_t i = 0; i < c->ny; ++i) tu_set(c->dt, gy, i, 2 * tu_uniform() - 1);
    for (int64_t i = 0; i < c->ny; ++i) gyd[i] = tu_get(c->dt, gy, i);
    reference_backward(c, gyd, ref, mag);
    gbuf_readonly(&ggy); /* grad_out is never written */
    double worst = 0;
    for (int ii = 0; ii < TU_N_ISAS; ++ii) {
        if (ap_set_isa(tu_isas[ii]) != AP_OK) continue;
        void *gx = gbuf_alloc(&ggx, (size_t)c->nx * es, ci % 2 == 1);
        void *g1 = gbuf_alloc(&gg1, (size_t)c->nx * es, 0);
        const ap_status s = run_backward(c, gy, gx, c->threads);
        CHECK(s == AP_OK, "[%s] backward case %ld: status %d (%s): %s", tu_isas[ii], ci, (int)s,
              ap_status_string(s), describe(c, desc, sizeof desc));
        CHECK_STATUS(run_backward(c, gy, g1, 1), AP_OK);
        CHECK(c->nx == 0 || memcmp(gx, g1, (size_t)c->nx * es) == 0,
              "[%s] backward case %ld: %d threads differ from 1: %s", tu_isas[ii], ci,
              c->threads, describe(c, desc, sizeof desc));
        ++per_isa[ii];
        long bad = 0;
        for (int64_t i = 0; s == AP_OK && i < c->nx; ++i) {
            const double g = tu_get(c->dt, gx, i);
            if (ii == 0) gs[i] = g;
            const double er = excess(g, ref[i], mag[i], tol_ref(c->dt), c->dt);
            const double ei = ii ? excess(g, gs[i], mag[i], tol_isa(c->dt), c->dt) : 0;
            if (er > worst) worst = er;
            if ((er > 1 || ei > 1) && bad++ < 3)
                tu_fail(__FILE__, __LINE__,
                        "[%s] backward case %ld gx[%lld] = %.9g, scalar %.9g, reference %.9g: %s",
                        tu_isas[ii], ci, (long long)i, g, ii ? gs[i] : g, ref[i],
                        describe(c, desc, sizeof desc));
        }
        gbuf_free(&ggx);
        gbuf_free(&gg1);
    }
    gbuf_free(&ggy);
    free(gyd);
    free(ref);
    free(mag);
    free(gs);
    return worst;
}

/* A windowed case: rank, layout, N, C, sizes, windows, strides, paddings
 * (both ends), dilations, all per axis of `rank` entries. */
static tcase fixed_pool(int rank, ap_layout layout, int64_t n, int64_t ch, const int64_t *sizes,
                        const int64_t *k, const int64_t *s, const int64_t *pb, const int64_t *pe,
                        const int64_t *d) {
    tcase c;
    memset(&c, 0, sizeof c);
    c.t.rank = c.pd.rank = rank;
    c.t.layout = layout;
    c.t.batch = n, c.t.channels = ch;
    for (int a = 0; a < rank; ++a) {
        c.t.sizes[a] = sizes[a];
        c.pd.window[a] = k[a];
        c.pd.strides[a] = s ? s[a] : 1;
        c.pd.start_padding[a] = pb ? pb[a] : 0;
        c.pd.end_padding[a] = pe ? pe[a] : 0;
        c.pd.dilations[a] = d ? d[a] : 1;
    }
    c.dt = AP_DTYPE_F32;
    c.threads = 1;
    return c;
}

#define AP_PATH_CASES_MAX 40
/* One case per path, with a shape only that path takes (on every SIMD
 * instruction set: 4 to 16 lanes); run on every dtype. */
static int path_cases(tcase *cases, int *paths) {
    int n = 0;
#define SZ(...) ((const int64_t[]){__VA_ARGS__})
    /* global: one window over each 9 x 11 plane */
    paths[n] = AP_PATH_GLOBAL;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 2, 3, SZ(9, 11), SZ(9, 11), NULL, NULL, NULL, NULL);
    /* global, channels last: 300 channels, blocks of 8 vectors and a tail */
    paths[n] = AP_PATH_GLOBAL;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 2, 300, SZ(9, 11), SZ(9, 11), NULL, NULL, NULL,
                            NULL);
    /* same-flat: 3 x 3 'same' windows on a 10 x 12 plane */
    paths[n] = AP_PATH_SAME_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(10, 12), SZ(3, 3), NULL, SZ(1, 1),
                            SZ(1, 1), NULL);
    /* same-flat, dilated: 3 x 3 taps 2 and 3 apart, padding unequal at the two ends */
    paths[n] = AP_PATH_SAME_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(13, 17), SZ(3, 3), NULL, SZ(1, 4),
                            SZ(3, 2), SZ(2, 3));
    /* rows-s1: 3 x 5 windows, stride 1, no padding (output smaller than input); here and
     * below, planes past planes-cl's 2048 input and output elements */
    paths[n] = AP_PATH_ROWS_S1;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(20, 60), SZ(3, 5), NULL, NULL, NULL, NULL);
    /* rows-s2 */
    paths[n] = AP_PATH_ROWS_S2;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(17, 121), SZ(3, 3), SZ(2, 2), SZ(1, 1),
                            SZ(1, 1), NULL);
    /* rows-s2 summed in registers (plan->rows_fused), not planes-cl: 1-D rows of 50 > 24 */
    paths[n] = AP_PATH_ROWS_S2;
    cases[n++] = fixed_pool(1, AP_LAYOUT_NCHW, 2, 70, SZ(50), SZ(3), SZ(2), SZ(1), NULL, NULL);
    /* rows-s4k4 (rows longer than plane-flat's) */
    paths[n] = AP_PATH_ROWS_S4K4;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 3, SZ(12, 177), SZ(4, 4), SZ(4, 4), NULL,
                            SZ(0, 3), NULL);
    /* plane-flat, windows tiling the rows: 2 x 2 stride 2 on rows of 15 (the last column
     * left over), 4 x 4 stride 4 on 3-D planes; shuffles over groups of whole planes */
    paths[n] = AP_PATH_PLANE_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 2, 37, SZ(14, 15), SZ(2, 2), SZ(2, 2), NULL, NULL,
                            NULL);
    paths[n] = AP_PATH_PLANE_FLAT;
    cases[n++] = fixed_pool(3, AP_LAYOUT_NCHW, 1, 5, SZ(3, 9, 34), SZ(2, 4, 4), SZ(1, 4, 4), NULL,
                            NULL, NULL);
    /* plane-flat, gathered: 3 x 3 stride 2 pad 1 (divisors vary at the borders), and
     * stride 3 dilation 2 */
    paths[n] = AP_PATH_PLANE_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 9, SZ(130, 13), SZ(3, 3), SZ(2, 2), SZ(1, 1),
                            SZ(1, 1), NULL);
    paths[n] = AP_PATH_PLANE_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 2, 3, SZ(10, 29), SZ(3, 3), SZ(3, 3), SZ(1, 1),
                            NULL, SZ(1, 2));
    /* planes-cl: a 'same' 3 x 3 on 7 x 7 planes (200: groups of up to 128 and a smaller last
     * one), 3 x 3 stride 2 on 14 x 14 */
    paths[n] = AP_PATH_PLANES_CL;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 2, 100, SZ(7, 7), SZ(3, 3), NULL, SZ(1, 1),
                            SZ(1, 1), NULL);
    paths[n] = AP_PATH_PLANES_CL;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 150, SZ(14, 14), SZ(3, 3), SZ(2, 2), SZ(1, 1),
                            SZ(1, 1), NULL);
    /* rows-s1 in column strips: rows of 1100, a 7-row window (rows_nchw_ strips) */
    paths[n] = AP_PATH_ROWS_S1;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(37, 1100), SZ(7, 5), NULL, SZ(3, 2),
                            SZ(3, 2), NULL);
    /* rows-running: window width 40 > 2 x 16 lanes; 9 rows tall (vertical running sums);
     * stride 2 along H, else box */
    paths[n] = AP_PATH_ROWS_RUNNING;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(12, 100), SZ(9, 40), SZ(2, 1), SZ(2, 3),
                            SZ(2, 3), NULL);
    /* box: 9 x 9 stride 1 on 150 rows (3 bands of 72), 1 channel per row position */
    paths[n] = AP_PATH_BOX;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(150, 50), SZ(9, 9), NULL, SZ(4, 4),
                            SZ(4, 4), NULL);
    /* box, channels last: 3 channels (interleaved segments) and 7 (channel loops); windows
     * wider than 8 along W (narrower ones with few channels are flattened, below) */
    paths[n] = AP_PATH_BOX;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 1, 3, SZ(30, 40), SZ(5, 9), NULL, SZ(2, 4),
                            SZ(2, 4), NULL);
    paths[n] = AP_PATH_BOX;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 2, 7, SZ(20, 25), SZ(5, 9), NULL, SZ(3, 3),
                            SZ(1, 1), NULL);
    /* channels last with fewer channels than a vector (3 < 4, NEON's float lanes) and a
     * stride-1 window of at most 8 taps along W: one channel of W x C, a window of dilation C
     * (api.c ap_flatten_channels): a 'same' window on a small plane is same-flat's, a
     * stride along H leaves it to rows-s1 */
    paths[n] = AP_PATH_SAME_FLAT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 1, 3, SZ(30, 40), SZ(5, 5), NULL, SZ(2, 2),
                            SZ(2, 2), NULL);
    paths[n] = AP_PATH_ROWS_S1;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 2, 2, SZ(20, 25), SZ(3, 3), SZ(2, 1), SZ(1, 1),
                            SZ(1, 1), NULL);
    /* rows-gather: stride 3, dilation 2 along W (rows longer than plane-flat's) */
    paths[n] = AP_PATH_ROWS_GATHER;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 1, 2, SZ(15, 49), SZ(3, 3), SZ(3, 3), SZ(1, 1),
                            NULL, SZ(1, 2));
    /* scalar-fallback: effective window 2^28 + 1 (dilation 2^28), end padding
     * 2^28: row buffers past int32 indices; each window holds one input */
    paths[n] = AP_PATH_SCALAR_FALLBACK;
    cases[n++] = fixed_pool(1, AP_LAYOUT_NCHW, 1, 3, SZ(5), SZ(2), NULL, NULL,
                            SZ(INT64_C(1) << 28), SZ(INT64_C(1) << 28));
    /* nhwc-direct: 3 x 3 windows (9 taps) at stride 1, by column sums shared along W (a run
     * of 9 full windows: 2 blocks of 4 and a single), 19 channels (vector tails) */
    paths[n] = AP_PATH_NHWC_DIRECT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 1, 19, SZ(9, 11), SZ(3, 3), NULL, SZ(1, 1), SZ(1, 1),
                            NULL);
    /* nhwc-direct over the input: stride 3 windows do not overlap */
    paths[n] = AP_PATH_NHWC_DIRECT;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 2, 37, SZ(10, 11), SZ(3, 3), SZ(3, 3), SZ(1, 1),
                            NULL, SZ(1, 2));
    /* scalar-fallback, channels last: 65 taps on a (W, C) row of 129 x 9000 > 1 M floats */
    paths[n] = AP_PATH_SCALAR_FALLBACK;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 1, 9000, SZ(1, 1), SZ(1, 65), SZ(1, 2), SZ(0, 64),
                            SZ(0, 64), NULL);
    /* nhwc-separable: 5 x 5 windows (25 taps), stride 1 along W (sliding sums), 2 along H
     * (else box), 21 channels */
    paths[n] = AP_PATH_NHWC_SEPARABLE;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NHWC, 2, 21, SZ(12, 14), SZ(5, 5), SZ(2, 1), SZ(2, 2),
                            SZ(2, 2), NULL);
    /* nhwc-separable, stride 2: direct horizontal sums */
    paths[n] = AP_PATH_NHWC_SEPARABLE;
    cases[n++] = fixed_pool(3, AP_LAYOUT_NHWC, 1, 9, SZ(4, 9, 11), SZ(2, 3, 3), SZ(1, 2, 2), NULL,
                            NULL, NULL);
    /* none: an empty batch */
    paths[n] = AP_PATH_NONE;
    cases[n++] = fixed_pool(2, AP_LAYOUT_NCHW, 0, 2, SZ(6, 6), SZ(2, 2), NULL, NULL, NULL, NULL);
#undef SZ
    for (int i = 0; i < n; ++i) {
        const ap_status s = ap_pool_output_sizes(&cases[i].pd, &cases[i].t, cases[i].out);
        if (s != AP_OK) {
            fprintf(stderr, "path case %d (%s) is invalid: %d\n", i, PATH_NAMES[paths[i]], (int)s);
            abort();
        }
        cases[i].nx = prod(&cases[i], cases[i].t.sizes);
        cases[i].ny = prod(&cases[i], cases[i].out);
    }
    return n;
}

/* Every path case on every dtype (float64 takes its own paths, or the scalar one). */
static void check_paths(stats *st) {
    tcase cases[AP_PATH_CASES_MAX];
    int paths[AP_PATH_CASES_MAX];
    const int n = path_cases(cases, paths);
    for (int i = 0; i < n; ++i)
        for (int di = 0; di < 4; ++di) {
            tcase c = cases[i];
            c.dt = DTYPES[di];
            c.threads = di % 2 ? 2 : 1;
            tu_seed(777u + (uint64_t)(i * 4 + di));
            check_case(&c, -1 - (i * 4 + di), st,
                       c.dt == AP_DTYPE_F64 && paths[i] != AP_PATH_NONE ? WANT_F64 : paths[i]);
        }
    printf("path cases: %d shapes x 4 dtypes, each path named by ap_explain_* and compared with "
           "scalar and the float64 reference\n", n);
}

/* The backward's stride-1 route (gy / divisor summed by the forward kernels) on images
 * whose gy passes 1 MiB (in bands of rows, each a tile of the forward; the buffer of a band
 * holds its rows and the window's dilated extent) and on smaller ones (whole images), with
 * dilations, few channels last (planned flattened: dilation C along rows of W x C) and
 * planes of more than 64 Ki outputs (the divisor by its factors). Under the sanitizers, a
 * band buffer too short for a dilated window is a heap overflow. */
static void check_backward_routes(void) {
#define SZ(...) ((const int64_t[]){__VA_ARGS__})
    const tcase cases[] = {
        /* channels first, 3 x 3 dilation 2: bands (a middle one, whose buffer the window
         * reaches past at both ends), factored divisors */
        fixed_pool(2, AP_LAYOUT_NCHW, 1, 1, SZ(3000, 200), SZ(3, 3), NULL, SZ(2, 2), SZ(2, 2),
                   SZ(2, 2)),
        /* channels last, 3 channels (flattened): bands; and a whole image, 5 x 5 */
        fixed_pool(2, AP_LAYOUT_NHWC, 1, 3, SZ(300, 301), SZ(3, 3), NULL, SZ(1, 1), SZ(1, 1),
                   NULL),
        fixed_pool(2, AP_LAYOUT_NHWC, 2, 3, SZ(60, 61), SZ(5, 5), NULL, SZ(2, 2), SZ(2, 2), NULL),
        /* 3-D, dilation 3 along D: whole images */
        fixed_pool(3, AP_LAYOUT_NCHW, 1, 2, SZ(9, 20, 21), SZ(2, 3, 3), NULL, SZ(1, 1, 1),
                   SZ(2, 1, 1), SZ(3, 1, 1)),
    };
#undef SZ
    const int n = (int)(sizeof cases / sizeof cases[0]);
    long per_isa[TU_N_ISAS] = {0};
    double worst = 0;
    for (int i = 0; i < n; ++i) {
        tcase c = cases[i];
        if (ap_pool_output_sizes(&c.pd, &c.t, c.out) != AP_OK) abort();
        c.nx = prod(&c, c.t.sizes);
        c.ny = prod(&c, c.out);
        c.threads = 2;
        tu_seed(4242u + (uint64_t)i);
        const double w = check_backward_case(&c, 100000 + i, per_isa);
        if (w > worst) worst = w;
    }
    ap_set_isa("auto");
    printf("backward stride-1 route cases: %d, worst error/bound vs reference %.3f\n", n, worst);
}

int main(int argc, char **argv) {
    const long ncases = argc > 1 ? atol(argv[1]) : 10000;
    const uint64_t seed = argc > 2 ? (uint64_t)atoll(argv[2]) : 1;
    const long only = argc > 3 ? atol(argv[3]) : -1; /* rerun one failing case */
    stats st[TU_N_ISAS];
    memset(st, 0, sizeof st);
    for (int i = 0; i < TU_N_ISAS; ++i) st[i].available = ap_set_isa(tu_isas[i]) == AP_OK;
    ap_set_isa("auto");
    printf("test_isa: %ld random cases (seed %llu), default isa %s, openmp %d\n", ncases,
           (unsigned long long)seed, ap_isa(), ap_openmp_enabled());
    for (int i = 0; i < TU_N_ISAS; ++i)
        printf("  %-7s %s\n", tu_isas[i], st[i].available ? "available" : "not available, skipped");

    if (only < 0) {
        check_paths(st);
        check_backward_routes();
        memset(st, 0, sizeof st); /* the statistics below are the random cases' */
        for (int i = 0; i < TU_N_ISAS; ++i) st[i].available = ap_set_isa(tu_isas[i]) == AP_OK;
    }
    /* odd cases run their threads on the OpenMP team, even ones on the own pool (all on the
     * own pool under ThreadSanitizer, which cannot see libgomp's barriers) */
    long on_openmp = 0;
    for (long ci = only >= 0 ? only : 0; ci < (only >= 0 ? only + 1 : ncases); ++ci) {
        tu_seed(seed * 1000003u + (uint64_t)ci);
        tcase c;
        gen_case(&c);
        const int openmp = TU_OPENMP_CASES && ap_openmp_enabled() && ci % 2 == 1;
        if (ap_set_thread_pool(openmp ? "openmp" : "own") != AP_OK) abort();
        on_openmp += openmp && c.threads > 1;
        check_case(&c, ci, st, -1);
    }
    ap_set_isa("auto");

    /* the backward pass on a quarter as many random cases */
    long bwd[TU_N_ISAS] = {0};
    double bwd_worst = 0;
    for (long ci = only >= 0 ? only : 0; ci < (only >= 0 ? only + 1 : (ncases + 3) / 4); ++ci) {
        tu_seed(seed * 1000033u + (uint64_t)ci);
        tcase c;
        gen_case(&c);
        const int openmp = TU_OPENMP_CASES && ap_openmp_enabled() && ci % 2 == 1;
        if (ap_set_thread_pool(openmp ? "openmp" : "own") != AP_OK) abort();
        on_openmp += openmp && c.threads > 1;
        const double w = check_backward_case(&c, ci, bwd);
        if (w > bwd_worst) bwd_worst = w;
    }
    ap_set_isa("auto");
    ap_set_thread_pool("own");
    printf("threaded cases on the OpenMP team (forward and backward): %ld\n", on_openmp);
    printf("backward:");
    for (int i = 0; i < TU_N_ISAS; ++i)
        if (st[i].available) printf(" %s %ld cases", tu_isas[i], bwd[i]);
    printf("; worst error/bound vs reference %.3f\n", bwd_worst);

    int compared = 0;
    for (int i = 0; i < TU_N_ISAS; ++i) {
        const stats *t = &st[i];
        if (!t->available) continue;
        compared += i > 0;
        printf("isa %-7s %ld cases (%ld adaptive, %ld explicit output sizes, %ld with num_threads > 1, "
               "%ld with inf/NaN; f32 %ld f64 %ld f16 %ld bf16 %ld; NCHW %ld NHWC %ld; "
               "rank 1/2/3 %ld/%ld/%ld), %ld outputs; worst error/bound: vs reference %.3f",
               tu_isas[i], t->cases, t->adaptive, t->explicit_out, t->threaded, t->specials,
               t->by_dtype[0], t->by_dtype[1], t->by_dtype[2], t->by_dtype[3], t->by_layout[0],
               t->by_layout[1], t->by_rank[1], t->by_rank[2], t->by_rank[3], t->outputs,
               t->worst_ref);
        if (i > 0) printf(", vs scalar %.3f", t->worst_isa);
        printf("\n    kinds:");
        for (int f = 0; f < F_COUNT; ++f) printf(" %s %ld", FLAVOR_NAMES[f], t->by_flavor[f]);
        printf("\n    paths:");
        for (int pth = 0; pth < AP_PATH_COUNT; ++pth) printf(" %s %ld", PATH_NAMES[pth], t->by_path[pth]);
        printf("\n");
        /* every path of a SIMD instruction set must have been exercised (a
         * full run; a handful of cases or one rerun case cannot), but the
         * scalar instruction set's own */
        if (i > 0 && only < 0 && ncases >= 2000)
            for (int pth = 0; pth < AP_PATH_COUNT; ++pth)
                CHECK(pth == AP_PATH_SCALAR || t->by_path[pth] > 0,
                      "[%s] no random case took path %s", tu_isas[i], PATH_NAMES[pth]);
    }
    printf("ISA paths compared with scalar:");
    for (int i = 1; i < TU_N_ISAS; ++i)
        if (st[i].available) printf(" %s", tu_isas[i]);
    if (!compared) printf(" none (no SIMD path on this machine)");
    printf("\n");
    return tu_exit("test_isa");
}
