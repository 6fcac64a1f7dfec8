/* edgec running sums (ONNX CumSum, TFLite's CUMSUM), portable C99. Bit-exact with edgec/ops/cumsum.py. */
#include "edgec_nn_support.h"

void edgec_cumsum_s8(const edgec_cumsum_params *p, const int8_t *input, int8_t *output)
{
    const int32_t n = p->n, inner = p->inner;
    int32_t o, i, k;
    for (o = 0; o < p->outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const int32_t base = o * n * inner + i;
            int32_t acc = 0;
            for (k = 0; k < n; ++k) {
                const int32_t at = base + (p->reverse ? n - 1 - k : k) * inner;
                const int32_t v = (int32_t)input[at] - p->input_zp;
                int32_t y;
                if (!p->exclusive) {
                    acc += v;
                }
                y = edgec_requantize(acc, p->mult, p->shift) + p->output_zp;
                output[at] = (int8_t)edgec_clamp(y, p->act_min, p->act_max);
                if (p->exclusive) {
                    acc += v;
                }
            }
        }
    }
}

void edgec_cumsum_tflite_s8(const edgec_cumsum_tflite_params *p, const int8_t *input, int8_t *output)
{
    const int32_t n = p->n, inner = p->inner, scale = (int32_t)1 << p->left_shift;
    int32_t o, i, k;
    for (o = 0; o < p->outer; ++o) {
        for (i = 0; i < inner; ++i) {
            const int32_t base = o * n * inner + i;
            /* TFLite starts its sum from the rescaled -input_zp (its input1_offset) */
            uint32_t acc = (uint32_t)edgec_requantize(-p->input_zp * scale, p->input_mult, p->input_shift);
            for (k = 0; k < n; ++k) {
                const int32_t at = base + (p->reverse ? n - 1 - k : k) * inner;
                const int32_t v = edgec_requantize(((int32_t)input[at] - p->input_zp) * scale, p->input_mult,
                                                   p->input_shift);
                int32_t y;
                if (!p->exclusive) {
                    acc += (uint32_t)v;
                }
                y = edgec_requantize((int32_t)acc, p->mult, p->shift) + p->output_zp;
                output[at] = (int8_t)edgec_clamp(y, p->act_min, p->act_max);
                if (p->exclusive) {
                    acc += (uint32_t)v;
                }
            }
        }
    }
}
