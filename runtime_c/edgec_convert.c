/* edgec type conversions, portable C99: int8 <-> int16 at the boundaries of 16x8 layers. Bit-exact with
 * edgec/ops/convert.py. */
#include "edgec_nn_support.h"

void edgec_requantize_s8_s16(int32_t n, const int8_t *input, int32_t input_zp, int32_t mult, int32_t shift,
                             int16_t *output)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int16_t)edgec_clamp(edgec_requantize((int32_t)input[i] - input_zp, mult, shift), -32768, 32767);
    }
}

void edgec_requantize_s16_s8(int32_t n, const int16_t *input, int32_t output_zp, int32_t mult, int32_t shift,
                             int8_t *output)
{
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int8_t)edgec_clamp(edgec_requantize(input[i], mult, shift) + output_zp, -128, 127);
    }
}
