/* edgec 16x8 kernels: int16 activations (zero point 0), int8 weights, int64 bias (C99, no allocation).
 *
 * The escape hatch for layers whose activations do not survive int8 (TFLite's 16x8 scheme).
 * Bit-exact with edgec/kernels_ref_s16.py. The parameter structs are the int8 kernels'; their
 * zero points must be 0 and act_min/act_max are int16 bounds. */
#ifndef EDGEC_KERNELS_S16_H
#define EDGEC_KERNELS_S16_H

#include <stdint.h>
#include "edgec_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* TFLite MultiplyByQuantizedMultiplier(int64_t, int32_t, int): the Q31 multiplier reduced to Q15,
 * one rounding right shift by 15 - shift (shift in -31..7, |acc| < 2^47). */
int32_t edgec_requantize64(int64_t acc, int32_t mult, int32_t shift);

void edgec_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                      const int64_t *bias, const int32_t *mult, const int32_t *shift, int16_t *output);
void edgec_depthwise_conv2d_s16(const edgec_conv_params *p, const int16_t *input, const int8_t *weights,
                                const int64_t *bias, const int32_t *mult, const int32_t *shift,
                                int16_t *output);
void edgec_fully_connected_s16(const edgec_fc_params *p, const int16_t *input, const int8_t *weights,
                               const int64_t *bias, const int32_t *mult, const int32_t *shift,
                               int16_t *output);

/* Boundary conversions: int8 (zero point zp) <-> int16 (zero point 0), by a Q31 multiplier + shift. */
void edgec_requantize_s8_s16(int32_t n, const int8_t *input, int32_t input_zp, int32_t mult, int32_t shift,
                             int16_t *output);
void edgec_requantize_s16_s8(int32_t n, const int16_t *input, int32_t output_zp, int32_t mult, int32_t shift,
                             int8_t *output);

#ifdef __cplusplus
}
#endif

#endif
