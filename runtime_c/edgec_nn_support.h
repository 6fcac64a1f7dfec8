/* edgec neural-network kernels' support header: what the kernel files share and a caller of the kernels does not
 * need (C99, no allocation, no I/O). Every kernel file of runtime_c/ includes it (the fast kernels through
 * fast/edgec_fast_support.h); the generated model code and applications include edgec_nn.h alone.
 *
 * The inline requantization, rounding and clamping helpers (TFLite's arithmetic), int4 nibble access, the window
 * helpers of the reference kernels, and the recurrence's function table (edgec_recurrent_run and the products
 * behind it, shared by the portable and fast LSTM / GRU kernels). */
#ifndef EDGEC_NN_SUPPORT_H
#define EDGEC_NN_SUPPORT_H

#include "edgec_nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ requantization, rounding, clamping */

/* SaturatingRoundingDoublingHighMul. gemmlowp's (ab + nudge) / 2^31, truncating, with nudge = 2^30 for
 * ab >= 0 and 1 - 2^30 below, equals floor((ab + 2^30) / 2^31) on both sides: one arithmetic shift (>> of a
 * negative value is arithmetic on every compiler edgec supports, as in the fast kernels). */
static inline int32_t edgec_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN) {
        return INT32_MAX;
    }
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

/* TFLite MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul(acc << left, mult)
 * followed by RoundingDivideByPOT(., right), with shift > 0 meaning a left shift.
 * Valid shifts are -31..30. Free of undefined behaviour (no left shifts of negative values); the
 * implementation-defined steps are the int64 -> int32 cast of acc << left, which wraps (as in TFLite's
 * int32 arithmetic) on gcc/clang/arm-none-eabi-gcc and never overflows for valid inputs, and the arithmetic
 * right shifts (edgec_srdhm's and the division's). */
static inline int32_t edgec_requantize(int32_t acc, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t hi = edgec_srdhm((int32_t)((int64_t)acc * ((int64_t)1 << left)), mult);
    const int32_t mask = (int32_t)(((uint32_t)1 << right) - 1u);
    const int32_t threshold = (mask >> 1) + (hi < 0 ? 1 : 0);
    return (hi >> right) + ((hi & mask) > threshold ? 1 : 0);
}

/* TFLite MultiplyByQuantizedMultiplier(int64_t, int32_t, int) of the 16x8 kernels: the Q31 multiplier
 * reduced to Q15, one rounding right shift by 15 - shift (shift in -31..7, |acc| < 2^47). */
static inline int32_t edgec_requantize64(int64_t acc, int32_t mult, int32_t shift)
{
    const int64_t reduced = mult < 0x7FFF0000 ? ((int64_t)mult + (1 << 15)) / ((int64_t)1 << 16) : 0x7FFF;
    const int32_t total = 15 - shift;
    const int64_t r = acc * reduced + ((int64_t)1 << (total - 1));
    /* floor division by 2^total, without right-shifting a negative value */
    return (int32_t)(r >= 0 ? r >> total : ~((~r) >> total));
}

static inline int32_t edgec_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Round half away from zero of v / 2^bits. */
/* ================================================================ gemmlowp fixed point
 * int32 raw values, wrapping adds done in uint32: TFLite's softmax, DIV, L2_NORMALIZATION, LOG_SOFTMAX */
static inline int32_t edgec_add32(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t edgec_sat_shl(int32_t x, int32_t e) /* SaturatingRoundingMultiplyByPOT, e > 0 */
{
    const int32_t threshold = (int32_t)(((uint32_t)1 << (31 - e)) - 1u);
    if (x > threshold) {
        return INT32_MAX;
    }
    if (x < -threshold) {
        return INT32_MIN;
    }
    return (int32_t)((uint32_t)x << e);
}

/* srdhm of operands that are never both INT32_MIN (one of them positive): no saturation case */
static inline int32_t edgec_rdhm(int32_t a, int32_t b)
{
    return (int32_t)(((int64_t)a * (int64_t)b + ((int64_t)1 << 30)) >> 31);
}

static inline int32_t edgec_one_over_one_plus_x(int32_t a) /* Q0.31 in [0, 1) -> Q0.31 */
{
    const int64_t s = (int64_t)a + INT32_MAX;                 /* > 0 */
    const int32_t half = (int32_t)((s + 1) / 2);              /* RoundingHalfSum(a, 1): in [2^30, 2^31) */
    int32_t x = edgec_add32(1515870810, edgec_rdhm(half, -1010580540));
    int k;
    for (k = 0; k < 3; ++k) {
        const int32_t one_minus = edgec_add32((int32_t)1 << 29, -edgec_rdhm(half, x));
        x = edgec_add32(x, edgec_sat_shl(edgec_srdhm(x, one_minus), 2));
    }
    return edgec_sat_shl(x, 1);
}

static inline int64_t edgec_round_pot64(int64_t v, int32_t bits)
{
    const int64_t half = (int64_t)1 << (bits - 1);
    return v >= 0 ? (v + half) >> bits : -((-v + half) >> bits);
}

/* Value i of int4 weights packed two per byte (value 2k in the low nibble of byte k, TFLite's
 * PackInt4ValuesDensely order), sign-extended. */
static inline int32_t edgec_int4_at(const int8_t *packed, int32_t i)
{
    const uint32_t b = (uint8_t)packed[i >> 1];
    const uint32_t n = (i & 1) ? (b >> 4) : (b & 15u);
    return (int32_t)(n ^ 8u) - 8;
}

/* The weight at index i: int8, or int4 packed two per byte (edgec_int4_at); `packed` is a constant at every
 * call, so a reference kernel shared by the s8 and s4 entry points compiles to one loop for each. */
static inline int32_t edgec_weight_at(const int8_t *weights, int32_t i, int packed)
{
    return packed ? edgec_int4_at(weights, i) : (int32_t)weights[i];
}

/* First tap index k in [0, k_max) with 0 <= origin + k*dil, and one past the last with origin + k*dil < size. */
static inline int32_t edgec_tap_begin(int32_t origin, int32_t dil)
{
    return origin >= 0 ? 0 : (-origin + dil - 1) / dil;
}

static inline int32_t edgec_tap_end(int32_t origin, int32_t dil, int32_t size, int32_t k_max)
{
    int32_t end;
    if (size - origin <= 0) {
        return 0;
    }
    end = (size - origin + dil - 1) / dil;
    return end < k_max ? end : k_max;
}

/* ================================================================ recurrence
 * edgec_recurrent.c (the portable products) and fast/edgec_recurrent_fast.c (the SMLAD ones) */

/* The recurrence with its requantized matrix products behind two functions (rows [row0, row0 + rows) of
 * rq(w_x . x + bias_x, mult_x, shift_x) and of rq(w_h . h, mult_h, shift_h)): the four LSTM / GRU kernels of
 * edgec_nn.h (edgec_recurrent_s8, _s4, edgec_recurrent_fast_s8, _s4) are edgec_recurrent_run with their own
 * products, and share every other line. */
typedef struct edgec_recurrent_weights edgec_recurrent_weights;
typedef struct edgec_recurrent_products edgec_recurrent_products;
struct edgec_recurrent_products {
    void (*mv_x)(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int8_t *x, int32_t *out);
    void (*mv_h)(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *h, int32_t *out);
    /* the x product of an int16 input (edgec_recurrent_run16), with w_x, bias_x and the x requantization */
    void (*mv_x16)(const edgec_recurrent_weights *w, int32_t row0, int32_t rows, const int16_t *x, int32_t *out);
    int32_t pad;                                       /* stored rows are padded to a multiple of pad weights */
    int32_t packed;                                    /* 0: int8 weights, 1: int4 packed two per byte */
};
struct edgec_recurrent_weights {
    const edgec_recurrent_products *mv;
    const void *w_x, *w_h;
    int32_t x_stride, h_stride, input_size, hidden;    /* strides: weights per stored row */
    const int32_t *bias_x, *mult_x, *shift_x, *mult_h, *shift_h, *wb, *rb;
    const int16_t *init_h, *init_c, *sigmoid, *tanh_table;
    const int32_t *rq_x, *rq_h;                        /* the fast kernels' edgec_rq records, 5 int32 a row */
    void *work;                                        /* the products' own scratch, after the recurrence's */
};
/* (rq_x, rq_h: null for the portable kernels) */
void edgec_recurrent_run(const edgec_recurrent_params *p, const edgec_recurrent_products *mv, const void *w_x,
                         const void *w_h, const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                         const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                         const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                         const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, const int8_t *input,
                         void *scratch, int8_t *output);
/* the same with an int16 input and output, zero points 0 (edgec_recurrent_s16, edgec_recurrent_fast_s16) */
void edgec_recurrent_run16(const edgec_recurrent_params *p, const edgec_recurrent_products *mv, const void *w_x,
                           const void *w_h, const int32_t *bias_x, const int32_t *mult_x, const int32_t *shift_x,
                           const int32_t *mult_h, const int32_t *shift_h, const int32_t *wb, const int32_t *rb,
                           const int16_t *init_h, const int16_t *init_c, const int16_t *sigmoid,
                           const int16_t *tanh_table, const int32_t *rq_x, const int32_t *rq_h, const int16_t *input,
                           void *scratch, int16_t *output);

#ifdef __cplusplus
}
#endif

/* sorts idx[0..n) (indices into v) by v[idx] descending, equal values keeping their order (a stable merge sort
 * through tmp[0..n)): TFLM's stable sort and its partial sort by (value, index), and ONNX Runtime's NMS order by
 * (score, lower index first) give this same order (edgec_detection.c, edgec_nms.c) */
static inline void edgec_sort_decreasing(const float *v, int32_t *idx, int32_t *tmp, int32_t n)
{
    int32_t width, lo, i;
    for (width = 1; width < n; width *= 2) {
        for (lo = 0; lo < n; lo += 2 * width) {
            const int32_t mid = lo + width < n ? lo + width : n;
            const int32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            int32_t a = lo, b = mid, k = lo;
            while (k < hi) {
                if (a >= mid || (b < hi && v[idx[b]] > v[idx[a]])) {
                    tmp[k++] = idx[b++];
                } else {
                    tmp[k++] = idx[a++];
                }
            }
        }
        for (i = 0; i < n; ++i) {
            idx[i] = tmp[i];
        }
    }
}

#endif /* EDGEC_NN_SUPPORT_H */
