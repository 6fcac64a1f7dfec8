/* edgec INT8 kernels (C99, no allocation, no I/O).
 *
 * Bit-exact with edgec/kernels_ref.py; numerics follow the TFLite / TFLM int8
 * reference kernels. Activations are int8 NHWC without a batch dimension.
 * Parameter structs are passed by const pointer so generated code can keep
 * them `static const` (in flash).
 */
#ifndef EDGEC_KERNELS_H
#define EDGEC_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TFLite MultiplyByQuantizedMultiplier: SaturatingRoundingDoublingHighMul(acc << left, mult)
 * followed by RoundingDivideByPOT(., right), with shift > 0 meaning a left shift.
 * Valid shifts are -31..30. Free of undefined behaviour (no shifts of negative values); the one
 * implementation-defined step is the int64 -> int32 cast of acc << left, which wraps (as in TFLite's
 * int32 arithmetic) on gcc/clang/arm-none-eabi-gcc and never overflows for valid inputs. */
static inline int32_t edgec_requantize(int32_t acc, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t x = (int32_t)((int64_t)acc * ((int64_t)1 << left));
    int32_t hi;
    int32_t mask, remainder, threshold, floored;
    if (x == INT32_MIN && mult == INT32_MIN) {
        hi = INT32_MAX;
    } else {
        const int64_t ab = (int64_t)x * (int64_t)mult;
        const int64_t nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
        hi = (int32_t)((ab + nudge) / ((int64_t)1 << 31)); /* C division truncates toward zero */
    }
    mask = (int32_t)(((uint32_t)1 << right) - 1u);
    remainder = hi & mask;
    threshold = (mask >> 1) + (hi < 0 ? 1 : 0);
    floored = hi >= 0 ? (hi >> right) : ~((~hi) >> right); /* arithmetic shift, portably */
    return floored + (remainder > threshold ? 1 : 0);
}

static inline int32_t edgec_clamp(int32_t v, int32_t lo, int32_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* Convolution / depthwise convolution. Output (oy, ox) reads input row
 * oy*stride_h - pad_top + ky*dil_h (same for x); padded taps contribute nothing.
 * depth_multiplier is used only by the depthwise kernel (out_c = in_c * depth_multiplier). */
typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
        pad_top, pad_left, input_zp, output_zp, act_min, act_max, depth_multiplier;
} edgec_conv_params;

/* weights OHWI [out_c][k_h][k_w][in_c]; bias/mult/shift per output channel. */
void edgec_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *output);
/* weights [k_h][k_w][out_c]; output channel oc reads input channel oc / depth_multiplier. */
void edgec_depthwise_conv2d_s8(const edgec_conv_params *p, const int8_t *input, const int8_t *weights,
                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                               int8_t *output);

typedef struct {
    int32_t in_features, out_features, input_zp, output_zp, act_min, act_max;
} edgec_fc_params;

/* weights [out_features][in_features]. */
void edgec_fully_connected_s8(const edgec_fc_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output);

typedef struct {
    int32_t in_h, in_w, c, out_h, out_w, k_h, k_w, stride_h, stride_w, pad_top, pad_left, act_min,
        act_max;
} edgec_pool_params;

void edgec_max_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output);
void edgec_avg_pool_s8(const edgec_pool_params *p, const int8_t *input, int8_t *output);

typedef struct {
    int32_t n, input1_zp, input1_mult, input1_shift, input2_zp, input2_mult, input2_shift,
        output_mult, output_shift, output_zp, left_shift, act_min, act_max;
} edgec_add_params;

void edgec_add_s8(const edgec_add_params *p, const int8_t *input1, const int8_t *input2,
                  int8_t *output);

/* Softmax over the last axis of [rows][cols]; exp_table[d] = round(exp(-d*scale*beta) * 2^24).
 * Output scale 1/256, zero point -128. */
void edgec_softmax_s8(int32_t rows, int32_t cols, const uint32_t *exp_table, const int8_t *input,
                      int8_t *output);

/* Rank-4 transpose (pad lower ranks with leading 1s): like numpy.transpose(x, perm). */
void edgec_transpose_s8(const int32_t dims[4], const int32_t perm[4], const int8_t *input,
                        int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* EDGEC_KERNELS_H */
