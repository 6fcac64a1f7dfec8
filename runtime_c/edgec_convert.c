/* edgec type conversions, portable C99: int8 <-> int16 at the boundaries of 16x8 layers, and TFLite's QUANTIZE
 * between int8, uint8 and int16 (a uint8 or int16 graph input or output) and from int8 or int16 to int32 (an int32
 * graph output). Bit-exact with edgec/ops/convert.py. */
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

/* The loop of edgec_quantize8 over inputs of type IN_T (the output type's store a switch: cheap beside the
 * requantization). */
#define EDGEC_QUANTIZE8_LOOP(IN_T)                                                                          \
    for (i = 0; i < n; ++i) {                                                                               \
        const int64_t w = (int64_t)edgec_requantize((int32_t)((const IN_T *)input)[i] - input_zp, mult, shift) + \
                          output_zp;                                                                        \
        const int32_t v = w < lo ? lo : (w > hi ? hi : (int32_t)w);                                         \
        switch (p->output_type) {                                                                           \
        case 3: ((int32_t *)output)[i] = v; break;                                                          \
        case 1: ((uint8_t *)output)[i] = (uint8_t)v; break;                                                 \
        case 2: ((int16_t *)output)[i] = (int16_t)v; break;                                                 \
        default: ((int8_t *)output)[i] = (int8_t)v; break;                                                  \
        }                                                                                                   \
    }

/* The loop of edgec_quantize8 to int8 with a right shift of 1 to 31 (TFLM's QUANTIZE of an int16 or 8-bit graph
 * input): edgec_requantize with the store's switch out of the loop and the rounding in one sum. The doubling high
 * multiply is floor((v * mult + 2^30) / 2^31) on both signs (gemmlowp's nudge below 0 with its truncating division
 * is the same), exact and without saturation for |v| < 2^17 (mult < 2^31: |h| <= 2^17); the rounding division by
 * 2^right is (h + 2^(right - 1) - [h < 0]) >> right (RoundingDivideByPOT), its sum far from overflow. */
#define EDGEC_QUANTIZE8_S8_LOOP(IN_T)                                                                      \
    for (i = 0; i < n; ++i) {                                                                              \
        const int32_t v = (int32_t)((const IN_T *)input)[i] - input_zp;                                    \
        const int32_t h = (int32_t)(((int64_t)v * mult + ((int64_t)1 << 30)) >> 31);                     \
        const int32_t y = ((h + half - (h < 0 ? 1 : 0)) >> right) + output_zp;                            \
        ((int8_t *)output)[i] = (int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));                         \
    }

/* The loop of edgec_quantize8 to int8 with the multiplier 1 (2^30 and a left shift of 1: the same scale, a uint8
 * input's zero point moved to int8's): the doubling high multiply of 2v by 2^30 is v exactly (|v| < 2^30) */
#define EDGEC_QUANTIZE8_S8_SAME_LOOP(IN_T)                                                                 \
    for (i = 0; i < n; ++i) {                                                                              \
        const int32_t y = (int32_t)((const IN_T *)input)[i] - input_zp + output_zp;                       \
        ((int8_t *)output)[i] = (int8_t)(y < -128 ? -128 : (y > 127 ? 127 : y));                         \
    }

void edgec_quantize8(const edgec_quantize8_params *p, const void *input, void *output)
{
    static const int32_t lows[4] = {-128, 0, -32768, INT32_MIN}, highs[4] = {127, 255, 32767, INT32_MAX};
    const int32_t n = p->n, input_zp = p->input_zp, mult = p->mult, shift = p->shift, output_zp = p->output_zp;
    const int32_t lo = lows[p->output_type], hi = highs[p->output_type];
    int32_t i;
    if (p->output_type == 0 && shift <= -1 && shift >= -31) {
        const int32_t right = -shift, half = (int32_t)((uint32_t)1 << (right - 1));
        if (p->input_type == 2) {
            EDGEC_QUANTIZE8_S8_LOOP(int16_t)
        } else if (p->input_type == 1) {
            EDGEC_QUANTIZE8_S8_LOOP(uint8_t)
        } else {
            EDGEC_QUANTIZE8_S8_LOOP(int8_t)
        }
        return;
    }
    if (p->output_type == 0 && shift == 1 && mult == 1 << 30) {
        if (p->input_type == 2) {
            EDGEC_QUANTIZE8_S8_SAME_LOOP(int16_t)
        } else if (p->input_type == 1) {
            EDGEC_QUANTIZE8_S8_SAME_LOOP(uint8_t)
        } else {
            EDGEC_QUANTIZE8_S8_SAME_LOOP(int8_t)
        }
        return;
    }
    if (p->input_type == 1) {
        EDGEC_QUANTIZE8_LOOP(uint8_t)
    } else if (p->input_type == 2) {
        EDGEC_QUANTIZE8_LOOP(int16_t)
    } else {
        EDGEC_QUANTIZE8_LOOP(int8_t)
    }
}
