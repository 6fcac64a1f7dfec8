/* edgec type conversions, portable C99: int8 <-> int16 at the boundaries of 16x8 layers, and TFLite's QUANTIZE
 * between int8 and uint8 (a uint8 graph input or output). Bit-exact with edgec/ops/convert.py. */
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

void edgec_quantize8(const edgec_quantize8_params *p, const void *input, void *output)
{
    const int32_t n = p->n, input_zp = p->input_zp, mult = p->mult, shift = p->shift, output_zp = p->output_zp;
    const int32_t lo = p->output_unsigned ? 0 : -128, hi = p->output_unsigned ? 255 : 127;
    const uint8_t *xu = (const uint8_t *)input;
    const int8_t *xs = (const int8_t *)input;
    int32_t i;
    for (i = 0; i < n; ++i) {
        const int32_t x = p->input_unsigned ? (int32_t)xu[i] : (int32_t)xs[i];
        const int32_t v = edgec_clamp(edgec_requantize(x - input_zp, mult, shift) + output_zp, lo, hi);
        if (p->output_unsigned) {
            ((uint8_t *)output)[i] = (uint8_t)v;
        } else {
            ((int8_t *)output)[i] = (int8_t)v;
        }
    }
}
