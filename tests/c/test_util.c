/* test_util.c - see test_util.h. */
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

long tu_checks = 0, tu_failures = 0;
#define TU_ISA_NAME(isa) #isa,
const char *const tu_isas[TU_N_ISAS] = {AP_ISAS(TU_ISA_NAME)};

void tu_fail(const char *file, int line, const char *fmt, ...) {
    ++tu_failures;
    fprintf(stderr, "%s:%d: FAILED: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (tu_failures > 200) {
        fprintf(stderr, "too many failures, stopping\n");
        exit(1);
    }
}

int tu_exit(const char *name) {
    printf("%s: %ld checks, %ld failed\n", name, tu_checks, tu_failures);
    return tu_failures ? 1 : 0;
}

static uint64_t tu_state = 0x9e3779b97f4a7c15ull;
void tu_seed(uint64_t seed) { tu_state = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull; }
uint64_t tu_next(void) {
    uint64_t z = (tu_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
int64_t tu_range(int64_t lo, int64_t hi) {
    return lo + (int64_t)(tu_next() % (uint64_t)(hi - lo + 1));
}
double tu_uniform(void) { return (double)(tu_next() >> 11) * 0x1p-53; }
int tu_chance(double p) { return tu_uniform() < p; }

double tu_f16_to_double(uint16_t h) {
    const int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v;
    if (e == 0x1f)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp((double)(m | 0x400), e - 25);
    return sign ? -v : v;
}

double tu_bf16_to_double(uint16_t h) {
    const int sign = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
    double v;
    if (e == 0xff)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -133);
    else
        v = ldexp((double)(m | 0x80), e - 134);
    return sign ? -v : v;
}

/* Round |v| to a multiple of 2^q (nearest even) with rint, for a format of
 * `mbits` mantissa bits, minimum normal exponent emin and maximum emax. */
static uint16_t tu_encode(double v, int mbits, int ebits, int emin, int emax) {
    const uint16_t sign = (uint16_t)(signbit(v) ? 1u << 15 : 0u);
    const uint16_t inf = (uint16_t)(((1u << ebits) - 1u) << mbits);
    if (isnan(v)) return (uint16_t)(inf | (1u << (mbits - 1)));
    double a = fabs(v);
    if (isinf(a)) return (uint16_t)(sign | inf);
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1) */
    e -= 1;       /* a = g * 2^e, g in [1, 2) */
    if (e < emin) e = emin;
    const double q = ldexp(1.0, e - mbits); /* the spacing at a's binade */
    double r = rint(a / q) * q;             /* nearest even multiple */
    if (r == 0.0) return sign;
    frexp(r, &e);
    e -= 1;
    if (e > emax) return (uint16_t)(sign | inf);
    if (e < emin) /* subnormal */
        return (uint16_t)(sign | (uint16_t)(r / ldexp(1.0, emin - mbits)));
    const uint32_t man = (uint32_t)(r / ldexp(1.0, e - mbits)) - (1u << mbits);
    return (uint16_t)(sign | (uint32_t)(e - emin + 1) << mbits | man);
}
uint16_t tu_f16_from_double(double v) { return tu_encode(v, 10, 5, -14, 15); }
uint16_t tu_bf16_from_double(double v) { return tu_encode(v, 7, 8, -126, 127); }

size_t tu_elem_size(ap_dtype dtype) { return dtype == AP_DTYPE_F32 ? 4 : dtype == AP_DTYPE_F64 ? 8 : 2; }

const char *tu_dtype_name(ap_dtype dtype) {
    switch (dtype) {
    case AP_DTYPE_F32: return "f32";
    case AP_DTYPE_F64: return "f64";
    case AP_DTYPE_F16: return "f16";
    case AP_DTYPE_BF16: return "bf16";
    }
    return "?";
}

double tu_get(ap_dtype dtype, const void *buf, int64_t i) {
    switch (dtype) {
    case AP_DTYPE_F32: return ((const float *)buf)[i];
    case AP_DTYPE_F64: return ((const double *)buf)[i];
    case AP_DTYPE_F16: return tu_f16_to_double(((const uint16_t *)buf)[i]);
    case AP_DTYPE_BF16: return tu_bf16_to_double(((const uint16_t *)buf)[i]);
    }
    return NAN;
}

void tu_set(ap_dtype dtype, void *buf, int64_t i, double v) {
    switch (dtype) {
    case AP_DTYPE_F32: ((float *)buf)[i] = (float)v; break;
    case AP_DTYPE_F64: ((double *)buf)[i] = v; break;
    case AP_DTYPE_F16: ((uint16_t *)buf)[i] = tu_f16_from_double(v); break;
    case AP_DTYPE_BF16: ((uint16_t *)buf)[i] = tu_bf16_from_double(v); break;
    }
}
