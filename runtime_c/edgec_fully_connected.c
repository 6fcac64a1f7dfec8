/* edgec fully connected layers, portable C99: int8 and 16x8. Bit-exact with
 * edgec/ops/dense.py. */
#include "edgec_nn_support.h"

static void edgec_fully_connected_any(const edgec_fully_connected_params *p, const int8_t *input,
                                      const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                      const int32_t *shift, int8_t *output, int packed)
{
    const int32_t n_in = p->in_features, input_zp = p->input_zp;
    int32_t o, i;
    for (o = 0; o < p->out_features; ++o) {
        const int32_t w = o * n_in;        /* index of the row's first weight */
        int32_t acc = 0;
        for (i = 0; i < n_in; ++i) {
            acc += ((int32_t)input[i] - input_zp) * edgec_weight_at(weights, w + i, packed);
        }
        acc += bias[o];
        acc = edgec_requantize(acc, mult[o], shift[o]) + p->output_zp;
        output[o] = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
    }
}

void edgec_fully_connected_s8(const edgec_fully_connected_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output)
{
    edgec_fully_connected_any(p, input, weights, bias, mult, shift, output, 0);
}

void edgec_fully_connected_s4(const edgec_fully_connected_params *p, const int8_t *input, const int8_t *weights,
                              const int32_t *bias, const int32_t *mult, const int32_t *shift,
                              int8_t *output)
{
    edgec_fully_connected_any(p, input, weights, bias, mult, shift, output, 1);
}

void edgec_fully_connected_rows_s8(const edgec_fully_connected_rows_params *p, const int8_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int8_t *output)
{
    const edgec_fully_connected_params row = {p->in_features, p->out_features, p->input_zp, p->output_zp,
                                              p->act_min, p->act_max};
    int32_t r;
    for (r = 0; r < p->rows; ++r) {
        edgec_fully_connected_s8(&row, input + r * row.in_features, weights, bias, mult, shift,
                                 output + r * row.out_features);
    }
}

void edgec_fully_connected_s16(const edgec_fully_connected_params *p, const int16_t *input, const int8_t *weights,
                               const int64_t *bias, const int32_t *mult, const int32_t *shift,
                               int16_t *output)
{
    int32_t o, i;
    for (o = 0; o < p->out_features; ++o) {
        const int8_t *w = weights + (int64_t)o * p->in_features;
        int64_t acc = bias[o];
        for (i = 0; i < p->in_features; ++i) {
            acc += (int64_t)input[i] * w[i];
        }
        output[o] = (int16_t)edgec_clamp(edgec_requantize64(acc, mult[o], shift[o]), p->act_min, p->act_max);
    }
}

void edgec_fully_connected_rows_s16(const edgec_fully_connected_rows_params *p, const int16_t *input,
                                    const int8_t *weights, const int64_t *bias, const int32_t *mult,
                                    const int32_t *shift, int16_t *output)
{
    const edgec_fully_connected_params row = {p->in_features, p->out_features, p->input_zp, p->output_zp,
                                              p->act_min, p->act_max};
    int32_t r;
    for (r = 0; r < p->rows; ++r) {
        edgec_fully_connected_s16(&row, input + r * row.in_features, weights, bias, mult, shift,
                                  output + r * row.out_features);
    }
}

/* 16x8 with an int32 bias (TFLite's FullyConnected with AccumScalar int32): the sum in int32 (wrapping), the 32-bit
 * requantization. */
void edgec_fully_connected_s16_b32(const edgec_fully_connected_params *p, const int16_t *input,
                                   const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                   const int32_t *shift, int16_t *output)
{
    int32_t o, i;
    for (o = 0; o < p->out_features; ++o) {
        const int8_t *w = weights + (int64_t)o * p->in_features;
        uint32_t acc = (uint32_t)bias[o];
        for (i = 0; i < p->in_features; ++i) {
            acc += (uint32_t)((int32_t)input[i] * w[i]);
        }
        output[o] = (int16_t)edgec_clamp(edgec_requantize((int32_t)acc, mult[o], shift[o]), p->act_min, p->act_max);
    }
}

void edgec_fully_connected_rows_s16_b32(const edgec_fully_connected_rows_params *p, const int16_t *input,
                                        const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                        const int32_t *shift, int16_t *output)
{
    const edgec_fully_connected_params row = {p->in_features, p->out_features, p->input_zp, p->output_zp,
                                              p->act_min, p->act_max};
    int32_t r;
    for (r = 0; r < p->rows; ++r) {
        edgec_fully_connected_s16_b32(&row, input + r * row.in_features, weights, bias, mult, shift,
                                      output + r * row.out_features);
    }
}
