/* neon.c - aarch64 NEON (Advanced SIMD) kernels: 4 float lanes; every tail
 * (float and 16-bit) goes through a small stack buffer, so no access ever
 * touches an element past n; gathers are per-lane scalar loads of the active
 * lanes only. float16 converts with the hardware instructions (FCVTL/FCVTN,
 * round to nearest even), bfloat16 by integer rounding as in avx2.c.
 * NEON is part of armv8-a, so this file needs no extra flags; it is the same
 * vector layer as avx2.c / avx512.c, function for function. */
#include <arm_neon.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../convert.h"
#include "../threading.h"
#include "kernels.h"

#define VL 4
typedef float32x4_t vf;
typedef int32x4_t vi;

static inline vf v_zero(void) { return vdupq_n_f32(0.0f); }
static inline vf v_set1(float f) { return vdupq_n_f32(f); }
static inline vf v_loadu(const float *p) { return vld1q_f32(p); }
static inline vf v_loadu_n(const float *p, int n) { /* n <= 4 */
    float tmp[VL] = {0.0f, 0.0f, 0.0f, 0.0f};
    memcpy(tmp, p, (size_t)n * sizeof(float));
    return vld1q_f32(tmp);
}
static inline void v_storeu(float *p, vf v) { vst1q_f32(p, v); }
/* No cache-bypassing store here: a plain store, and no fence to order. */
static inline void v_stream(float *p, vf v) { vst1q_f32(p, v); }
static inline void v_fence(void) {}
static inline void v_storeu_n(float *p, vf v, int n) {
    float tmp[VL];
    vst1q_f32(tmp, v);
    memcpy(p, tmp, (size_t)n * sizeof(float));
}
static inline vf v_add(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf v_sub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf v_mul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf v_div(vf a, vf b) { return vdivq_f32(a, b); }
static inline float v_hsum(vf v) { return vaddvq_f32(v); }
/* Even lanes of the 8-lane concatenation (a, b): the stride-2 taps. */
static inline vf v_even(vf a, vf b) { return vuzp1q_f32(a, b); }
/* Odd lanes of the concatenation (a, b): the second tap of each stride-2 window. */
static inline vf v_odd(vf a, vf b) { return vuzp2q_f32(a, b); }
/* r[i][j] <-> r[j][i]: a 4 x 4 block in registers. */
static inline void v_transpose(vf r[VL]) {
    const float32x4x2_t a = vtrnq_f32(r[0], r[1]), b = vtrnq_f32(r[2], r[3]);
    r[0] = vcombine_f32(vget_low_f32(a.val[0]), vget_low_f32(b.val[0]));
    r[1] = vcombine_f32(vget_low_f32(a.val[1]), vget_low_f32(b.val[1]));
    r[2] = vcombine_f32(vget_high_f32(a.val[0]), vget_high_f32(b.val[0]));
    r[3] = vcombine_f32(vget_high_f32(a.val[1]), vget_high_f32(b.val[1]));
}
static inline vi vi_loadu(const int32_t *p) { return vld1q_s32(p); }
/* Lane i of the result: lane idx[i] of the 2 VL lanes a then b (0 <= idx[i] < 2 VL): a
 * byte table lookup, lane j's bytes at 4 j .. 4 j + 3. */
static inline vf v_perm2(vf a, vf b, vi idx) {
    const uint32x4_t lane = vreinterpretq_u32_s32(idx);
    const uint8x16_t bytes = vreinterpretq_u8_u32(
        vaddq_u32(vmulq_n_u32(lane, 0x04040404u), vdupq_n_u32(0x03020100u)));
    const uint8x16x2_t table = {{vreinterpretq_u8_f32(a), vreinterpretq_u8_f32(b)}};
    return vreinterpretq_f32_u8(vqtbl2q_u8(table, bytes));
}
static inline vi vi_set1(int32_t v) { return vdupq_n_s32(v); }
static inline vi vi_add(vi a, vi b) { return vaddq_s32(a, b); }
/* base[idx] in lanes where j < ntaps, 0 elsewhere (no access there). NEON
 * has no gather: one scalar load per active lane. */
static inline vf v_gather_lt(const float *base, vi idx, vi ntaps, int32_t j) {
    int32_t ix[VL], nt[VL];
    float r[VL];
    vst1q_s32(ix, idx);
    vst1q_s32(nt, ntaps);
    for (int l = 0; l < VL; ++l) r[l] = j < nt[l] ? base[ix[l]] : 0.0f;
    return vld1q_f32(r);
}

static inline uint16x4_t ap_load16_n(const uint16_t *p, int n) {
    uint16_t tmp[VL] = {0, 0, 0, 0};
    memcpy(tmp, p, (size_t)n * sizeof(uint16_t));
    return vld1_u16(tmp);
}
static inline void ap_store16_n(uint16_t *p, uint16x4_t v, int n) {
    uint16_t tmp[VL];
    vst1_u16(tmp, v);
    memcpy(p, tmp, (size_t)n * sizeof(uint16_t));
}

static inline vf ap_f16_widen(uint16x4_t h) { return vcvt_f32_f16(vreinterpret_f16_u16(h)); }
static inline vf v_load_f16(const uint16_t *p) { return ap_f16_widen(vld1_u16(p)); }
static inline vf v_load_f16_n(const uint16_t *p, int n) { return ap_f16_widen(ap_load16_n(p, n)); }
/* FCVTN rounds by FPCR, nearest even by default. */
static inline uint16x4_t ap_to_f16(vf v) { return vreinterpret_u16_f16(vcvt_f16_f32(v)); }
static inline void v_store_f16(uint16_t *p, vf v) { vst1_u16(p, ap_to_f16(v)); }
static inline void v_store_f16_n(uint16_t *p, vf v, int n) { ap_store16_n(p, ap_to_f16(v), n); }

static inline vf ap_bf16_widen(uint16x4_t h) { return vreinterpretq_f32_u32(vshll_n_u16(h, 16)); }
static inline vf v_load_bf16(const uint16_t *p) { return ap_bf16_widen(vld1_u16(p)); }
static inline vf v_load_bf16_n(const uint16_t *p, int n) { return ap_bf16_widen(ap_load16_n(p, n)); }
/* Round to nearest even on the upper 16 bits; NaN stays a quiet NaN. */
static inline uint16x4_t ap_to_bf16(vf v) {
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
    uint32x4_t r = vaddq_u32(u, vaddq_u32(lsb, vdupq_n_u32(0x7fff)));
    const uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
    const uint32x4_t quiet = vorrq_u32(u, vdupq_n_u32(0x00400000));
    r = vbslq_u32(nan, quiet, r);
    return vshrn_n_u32(r, 16);
}
static inline void v_store_bf16(uint16_t *p, vf v) { vst1_u16(p, ap_to_bf16(v)); }
static inline void v_store_bf16_n(uint16_t *p, vf v, int n) { ap_store16_n(p, ap_to_bf16(v), n); }

#define AP_STR_(x) #x
#define AP_STR(x) AP_STR_(x)
#define AP_ISA_SUFFIX _neon
#define AP_ISA_NAME neon
#include "simd_dtypes.inc"
