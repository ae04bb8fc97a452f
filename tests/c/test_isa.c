/* test_isa.c - every instruction set against the scalar oracle, and the
 * scalar oracle against a float64 reference written from the model of
 * avgpool.h, over many random descriptors: ranks 1-3, both layouts, all four
 * dtypes, strides, dilations, paddings, include_padding, count_overhang,
 * divisor_override, explicit output sizes, adaptive pooling, empty batches,
 * inf / NaN inputs, one or more threads.
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
} tcase;

static int64_t prod(const tcase *c, const int64_t *s) {
    int64_t n = c->t.batch * c->t.channels;
    for (int a = 0; a < c->t.rank; ++a) n *= s[a];
    return n;
}

/* A random valid case (retries until ap_*_output_sizes accepts it). */
static void gen_case(tcase *c) {
    for (;;) {
        memset(c, 0, sizeof *c);
        const int rank = (int)tu_range(1, 3);
        const int big = tu_chance(0.03); /* large enough for several threads */
        ap_tensor_desc *t = &c->t;
        t->rank = rank;
        t->layout = tu_chance(0.5) ? AP_LAYOUT_NHWC : AP_LAYOUT_NCHW;
        t->batch = tu_chance(0.03) ? 0 : tu_range(1, 2);
        t->channels = t->layout == AP_LAYOUT_NHWC ? tu_range(1, 37) : tu_range(1, 5);
        for (int a = 0; a < rank; ++a)
            t->sizes[a] = rank == 1 ? tu_range(1, big ? 4000 : 80)
                        : rank == 2 ? tu_range(1, big ? 90 : 24)
                                    : tu_range(1, big ? 24 : 9);
        if (big && t->layout == AP_LAYOUT_NCHW) t->channels = tu_range(4, 12);
        c->dt = DTYPES[tu_range(0, 3)];
        c->threads = tu_chance(0.4) ? (int)tu_range(2, 3) : (int)tu_range(0, 1);
        c->specials = tu_chance(0.15) ? (int)tu_range(1, 3) : 0;
        c->adaptive = tu_chance(0.25);
        ap_status s;
        if (c->adaptive) {
            c->ad.rank = rank;
            for (int a = 0; a < rank; ++a)
                c->ad.output_sizes[a] = tu_chance(0.1) ? t->sizes[a] : tu_range(1, t->sizes[a] + 2);
            s = ap_adaptive_output_sizes(&c->ad, t, c->out);
        } else {
            ap_pool_desc *d = &c->pd;
            d->rank = rank;
            for (int a = 0; a < rank; ++a) {
                const int64_t in = t->sizes[a];
                d->start_padding[a] = tu_chance(0.5) ? 0 : tu_range(0, 3);
                d->end_padding[a] = tu_chance(0.5) ? 0 : tu_range(0, 3);
                d->dilations[a] = tu_chance(0.2) ? tu_range(2, 3) : 1;
                d->strides[a] = tu_chance(0.6) ? tu_range(1, 2) : tu_range(1, 5);
                const int64_t padded = in + d->start_padding[a] + d->end_padding[a];
                d->window[a] = tu_chance(0.15) ? tu_range(1, padded) : tu_range(1, 5);
            }
            d->include_padding = tu_chance(0.5);
            d->count_overhang = tu_chance(0.2);
            if (tu_chance(0.1)) {
                d->divisor_override = tu_range(-5, 20);
                if (d->divisor_override == 0) d->divisor_override = 7;
            }
            s = ap_pool_output_sizes(d, t, c->out);
            if (s == AP_OK && tu_chance(0.25)) { /* explicit, around the floor rule */
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

/* ref[i] = reference mean, mag[i] = sum of finite |x| over the window / |divisor|. */
static void reference(const tcase *c, const double *x, double *ref, double *mag) {
    axis ax[3];
    for (int a = 0; a < 3; ++a) ax[a] = axis_of(c, a);
    const int64_t C = c->t.channels, N = c->t.batch;
    const int64_t D = ax[0].in, H = ax[1].in, W = ax[2].in;
    const int64_t OD = ax[0].out, OH = ax[1].out, OW = ax[2].out;
    const int nhwc = c->t.layout == AP_LAYOUT_NHWC;
    int64_t *pd = malloc(sizeof(int64_t) * (size_t)(D + H + W + 3) * 8);
    int64_t *ph = pd + (D + 1) * 8, *pw = ph + (H + 1) * 8;
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
                        double sum = 0, abssum = 0;
                        for (int i = 0; i < nd; ++i)
                            for (int j = 0; j < nh; ++j)
                                for (int k = 0; k < nw; ++k) {
                                    const int64_t sp = (pd[i] * H + ph[j]) * W + pw[k];
                                    const int64_t xi = nhwc ? (n * D * H * W + sp) * C + ch_
                                                            : (n * C + ch_) * D * H * W + sp;
                                    sum += x[xi];
                                    if (isfinite(x[xi])) abssum += fabs(x[xi]);
                                }
                        const int64_t o = (od * OH + oh) * OW + ow;
                        const int64_t yi = nhwc ? (n * OD * OH * OW + o) * C + ch_
                                                : (n * C + ch_) * OD * OH * OW + o;
                        ref[yi] = div == 0 ? NAN : sum / div;
                        mag[yi] = div == 0 ? 0 : abssum / fabs(div);
                    }
                }
    free(pd);
}

/* ---- per-ISA statistics ------------------------------------------------------------ */

typedef struct {
    int available;
    long cases, adaptive, explicit_out, threaded, specials, outputs;
    long by_dtype[4], by_layout[2], by_rank[4];
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

    char desc[512];
    for (long ci = only >= 0 ? only : 0; ci < (only >= 0 ? only + 1 : ncases); ++ci) {
        tu_seed(seed * 1000003u + (uint64_t)ci);
        tcase c;
        gen_case(&c);
        const size_t es = tu_elem_size(c.dt);
        gbuf gx, gy;
        void *x = gbuf_alloc(&gx, (size_t)c.nx * es, ci % 2 == 0);
        double *xd = malloc(sizeof(double) * (size_t)(c.nx + 1));
        double *ref = malloc(sizeof(double) * (size_t)(c.ny + 1));
        double *mag = malloc(sizeof(double) * (size_t)(c.ny + 1));
        double *ys = malloc(sizeof(double) * (size_t)(c.ny + 1));
        if (!xd || !ref || !mag || !ys) abort();
        const double scale = pow(10.0, (double)tu_range(-2, 2));
        for (int64_t i = 0; i < c.nx; ++i) tu_set(c.dt, x, i, (2 * tu_uniform() - 1) * scale);
        for (int s = 0; s < c.specials && c.nx > 0; ++s) {
            static const double sv[3] = {INFINITY, -INFINITY, NAN};
            tu_set(c.dt, x, tu_range(0, c.nx - 1), sv[tu_range(0, 2)]);
        }
        for (int64_t i = 0; i < c.nx; ++i) xd[i] = tu_get(c.dt, x, i);
        reference(&c, xd, ref, mag);
        gbuf_readonly(&gx); /* the input is never written */

        for (int ii = 0; ii < TU_N_ISAS; ++ii) {
            if (!st[ii].available) continue;
            if (ap_set_isa(tu_isas[ii]) != AP_OK) abort();
            void *y = gbuf_alloc(&gy, (size_t)c.ny * es, ci % 2 == 1);
            const ap_status s = run_case(&c, x, y);
            CHECK(s == AP_OK, "[%s] case %ld: status %d (%s): %s", tu_isas[ii], ci, (int)s,
                  ap_status_string(s), describe(&c, desc, sizeof desc));
            stats *t = &st[ii];
            ++t->cases;
            t->adaptive += c.adaptive;
            t->explicit_out += c.explicit_out;
            t->threaded += c.threads > 1;
            t->specials += c.specials > 0;
            t->outputs += (long)c.ny;
            ++t->by_dtype[dtype_index(c.dt)];
            ++t->by_layout[c.t.layout];
            ++t->by_rank[c.t.rank];
            long bad = 0;
            for (int64_t i = 0; s == AP_OK && i < c.ny; ++i) {
                const double g = tu_get(c.dt, y, i);
                if (ii == 0) ys[i] = g;
                const double er = excess(g, ref[i], mag[i], tol_ref(c.dt), c.dt);
                if (er > t->worst_ref) t->worst_ref = er;
                double ei = 0;
                if (ii > 0) {
                    ei = excess(g, ys[i], mag[i], tol_isa(c.dt), c.dt);
                    if (ei > t->worst_isa) t->worst_isa = ei;
                }
                if ((er > 1 || ei > 1) && bad++ < 3)
                    tu_fail(__FILE__, __LINE__,
                            "[%s] case %ld y[%lld] = %.9g, scalar %.9g, reference %.9g "
                            "(mean |x| %.3g): %s",
                            tu_isas[ii], ci, (long long)i, g, ii ? ys[i] : g, ref[i], mag[i],
                            describe(&c, desc, sizeof desc));
            }
            ++tu_checks;
            gbuf_free(&gy);
        }
        gbuf_free(&gx);
        free(xd);
        free(ref);
        free(mag);
        free(ys);
    }
    ap_set_isa("auto");

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
        printf("\n");
    }
    printf("ISA paths compared with scalar:");
    for (int i = 1; i < TU_N_ISAS; ++i)
        if (st[i].available) printf(" %s", tu_isas[i]);
    if (!compared) printf(" none (no SIMD path on this machine)");
    printf("\n");
    return tu_exit("test_isa");
}
