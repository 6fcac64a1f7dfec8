/* edgec type conversions, portable C99: int8 <-> int16 at the boundaries of 16x8 layers. Bit-exact with
 * edgec/ops/convert.py. */
#include "edgec_nn_support.h"

void edgec_requantize_s8_s16(const edgec_requantize_params *p, const int8_t *input, int16_t *output)
{
    const int32_t n = p->n, input_zp = p->zero_point, mult = p->mult, shift = p->shift;
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int16_t)edgec_clamp(edgec_requantize((int32_t)input[i] - input_zp, mult, shift), -32768, 32767);
    }
}

void edgec_requantize_s16_s8(const edgec_requantize_params *p, const int16_t *input, int8_t *output)
{
    const int32_t n = p->n, output_zp = p->zero_point, mult = p->mult, shift = p->shift;
    int32_t i;
    for (i = 0; i < n; ++i) {
        output[i] = (int8_t)edgec_clamp(edgec_requantize(input[i], mult, shift) + output_zp, -128, 127);
    }
}
