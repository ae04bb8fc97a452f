/* test_util.h - checks, a seeded PRNG, 16-bit float helpers and the list of
 * instruction sets for the avgpool C tests. No framework: a failed CHECK
 * prints file:line and a message and counts; main returns tu_exit(). */
#ifndef AP_TEST_UTIL_H
#define AP_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

#include "avgpool.h"
#include "../../csrc/isa.h"

extern long tu_checks, tu_failures;

void tu_fail(const char *file, int line, const char *fmt, ...);

/* CHECK(cond, printf-style message): counts a check, reports a failure. */
#define CHECK(cond, ...)                                       \
    do {                                                       \
        ++tu_checks;                                           \
        if (!(cond)) tu_fail(__FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

/* CHECK_STATUS(expr, expected): an ap_status call returns `expected`. */
#define CHECK_STATUS(expr, expected)                                                      \
    do {                                                                                  \
        const ap_status tu_got_ = (expr), tu_want_ = (expected);                          \
        CHECK(tu_got_ == tu_want_, "%s returned %d (%s), expected %d (%s)", #expr,        \
              (int)tu_got_, ap_status_string(tu_got_), (int)tu_want_,                     \
              ap_status_string(tu_want_));                                                \
    } while (0)

/* Summary line and exit status. */
int tu_exit(const char *name);

/* splitmix64: deterministic, seedable. */
void tu_seed(uint64_t seed);
uint64_t tu_next(void);
int64_t tu_range(int64_t lo, int64_t hi); /* uniform in [lo, hi] */
double tu_uniform(void);                  /* [0, 1) */
int tu_chance(double p);

/* 16-bit floats, written independently of the library's conversions:
 * decoding is exact; encoding rounds to nearest even (used for inputs). */
double tu_f16_to_double(uint16_t h);
double tu_bf16_to_double(uint16_t h);
uint16_t tu_f16_from_double(double v);
uint16_t tu_bf16_from_double(double v);

/* Element i of a buffer of dtype as a double; element size in bytes. */
double tu_get(ap_dtype dtype, const void *buf, int64_t i);
void tu_set(ap_dtype dtype, void *buf, int64_t i, double v);
size_t tu_elem_size(ap_dtype dtype);
const char *tu_dtype_name(ap_dtype dtype);

/* The instruction-set names ap_set_isa knows, from the library's one list
 * (csrc/isa.h): the scalar oracle first. */
#define TU_ISA_ONE(isa) +1
enum { TU_N_ISAS = 0 AP_ISAS(TU_ISA_ONE) };
extern const char *const tu_isas[TU_N_ISAS];

#endif
