/* convert.h - float16 / bfloat16 <-> float32, portable and exact.
 *
 * Widening is exact. Narrowing rounds to nearest, ties to even, keeps
 * NaN a (quiet) NaN and overflows to infinity, as IEEE 754 says.
 */
#ifndef AP_CONVERT_H
#define AP_CONVERT_H

#include <stdint.h>
#include <string.h>

static inline uint32_t ap_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float ap_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float ap_bf16_to_f32(uint16_t h) { return ap_bits_f32((uint32_t)h << 16); }

static inline uint16_t ap_f32_to_bf16(float f) {
    uint32_t u = ap_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float ap_f16_to_f32(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1fu) return ap_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf / NaN */
    if (exp != 0) return ap_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
    /* zero or subnormal: man * 2^-24, exact in float32 */
    const float v = (float)man * 5.9604644775390625e-08f;
    return sign ? -v : v;
}

static inline uint16_t ap_f32_to_f16(float f) {
    const uint32_t u = ap_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {
        /* below the smallest normal (2^-14): a subnormal or zero result.
         * Shift the 24-bit significand into place, rounding to even. */
        if (a < 0x33000000u) return sign; /* < 2^-25: rounds to zero */
        const uint32_t e = a >> 23;
        const uint32_t m = (a & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e; /* 14..24 */
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return (uint16_t)(sign | r);
    }
    /* normal: rebias the exponent and round the mantissa to 10 bits; a carry
     * out of the mantissa correctly bumps the exponent. */
    uint32_t v = a - 0x38000000u; /* exponent bias 127 -> 15, at bit 23 */
    v += 0xfffu + ((v >> 13) & 1u);
    return (uint16_t)(sign | (v >> 13));
}

#endif /* AP_CONVERT_H */
