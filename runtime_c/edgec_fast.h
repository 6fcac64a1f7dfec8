/* edgec fast INT8 kernels: what generated models call for the layers edgec/fastkernels.py lowers.
 *
 * Bit-exact with the portable reference kernels (edgec_kernels.c) and edgec/kernels_ref.py, but with
 * the work moved to build time: the input zero point is folded into the bias (padded taps read the
 * zero point itself), weights are padded/reordered for the inner loops, and requantization uses one
 * record per output channel (edgec_rq) that turns TFLite's two rounding steps into one 64-bit
 * multiply-add and a shift. Two inner-loop paths, chosen when compiling:
 *   - Arm DSP extension (__ARM_FEATURE_DSP: Cortex-M4/M7/M33/M55): SXTB16 + SMLAD dot products;
 *   - portable C (Cortex-M0/M3, RISC-V, host), blocked the same way.
 * Define EDGEC_EMULATE_DSP to run the DSP path on any compiler with C emulations of the intrinsics
 * (tests), EDGEC_NO_DSP to force the portable path on a DSP core.
 *
 * Layouts (all built by edgec/fastkernels.py; words are little-endian):
 *   conv   weights [out_c][k4] int8, k4 = k_h*k_w*in_c rounded up to 4, zero padded
 *   fc     weights in blocks of 4 rows: [block][k4/4][row 0..3][4 int8], remaining rows [row][k4]
 *   dw3x3  weights [c][3][3] int16, in the kernel's sweep orientation (see edgec_fast_dw_params)
 * Scratch memory (planned into the arena): see edgec/fastkernels.py scratch_bytes(). */
#ifndef EDGEC_FAST_H
#define EDGEC_FAST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Requantization of one output channel: with acc the int32 accumulator (bias included),
 *   out = (((2*acc*mult + khi * 2^32 + 2^31) >> 32) + (acc < 0 ? neg : 0)) >> shift
 * (one SMMLAR, an AND/ADD and a shift on Arm), equal to TFLite's MultiplyByQuantizedMultiplier plus
 * the output zero point for the multipliers fastkernels.py accepts; neg is -1 if shift > 0, else 0. */
typedef struct {
    int32_t bias, mult, khi, neg, shift;
} edgec_rq;

typedef struct {
    int32_t in_h, in_w, in_c, out_h, out_w, out_c, k_h, k_w, stride_h, stride_w, pad_top, pad_left,
        input_zp, output_zp, act_min, act_max, k4;
} edgec_fast_conv_params;

/* Depthwise 3x3 in "sweep" orientation: the kernel walks `rows` x `cols` where a row is the longer
 * of the image's two axes (for an image taller than wide, rows are the image's columns and the
 * weights are transposed at build time); steps are in bytes. */
typedef struct {
    int32_t rows, cols, c, out_rows, out_cols, stride, pad_top, pad_left, in_row_step, in_col_step,
        out_row_step, out_col_step, input_zp, act_min, act_max;
} edgec_fast_dw_params;

typedef struct {
    int32_t in_features, out_features, output_zp, act_min, act_max, k4;
} edgec_fast_fc_params;

typedef struct {
    int32_t n, output_zp, act_min, act_max;
} edgec_fast_add_params;

/* Convolution (any kernel size, stride, padding; dilation 1) as a matrix product over an int16
 * im2col of 4 output pixels at a time. scratch: k4 * 9 + 256 bytes, 4-byte aligned. */
void edgec_fast_conv_s8(const edgec_fast_conv_params *p, const int8_t *input, const uint32_t *weights,
                        const edgec_rq *rq, int8_t *scratch, int8_t *output);

/* Depthwise 3x3 (depth multiplier 1, c a multiple of 4, stride 1 or 2 on both axes): 4 channels at
 * a time, over a rolling window of 3 input rows widened to int16 and laid out so that one SMLAD
 * does two taps of one channel. scratch: 36 * ((out_cols-1)*stride + 3) bytes, 4-byte aligned. */
void edgec_fast_dw3x3_s8(const edgec_fast_dw_params *p, const int8_t *input, const uint32_t *weights,
                         const edgec_rq *rq, int8_t *scratch, int8_t *output);

/* Fully connected, 4 output rows at a time. scratch: k4 * 2 bytes, 4-byte aligned. */
void edgec_fast_fc_s8(const edgec_fast_fc_params *p, const int8_t *input, const uint32_t *weights,
                      const edgec_rq *rq, int8_t *scratch, int8_t *output);

/* Add: lut1/lut2[v + 128] is input v rescaled to the common scale (TFLite's first two
 * requantizations, done at build time); the sum is requantized with rq (bias unused). */
void edgec_fast_add_s8(const edgec_fast_add_params *p, const int32_t *lut1, const int32_t *lut2,
                       const edgec_rq *rq, const int8_t *input1, const int8_t *input2, int8_t *output);

/* Average over all pixels of [pixels][c] (global average pooling), TFLite rounding. */
void edgec_fast_global_avg_pool_s8(int32_t pixels, int32_t c, int32_t act_min, int32_t act_max,
                                   const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* EDGEC_FAST_H */
