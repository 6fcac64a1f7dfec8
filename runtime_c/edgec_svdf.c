/* edgec's TFLite integer SVDF, portable C99, computed as TFLite Micro's svdf reference kernel computes it.
 * Bit-exact with edgec/ops/svdf.py (whose doc gives the arithmetic). */
#include "edgec_nn_support.h"

void edgec_svdf_s8(const edgec_svdf_params *p, const int8_t *input, const int8_t *w_feature, const int16_t *w_time,
                   const int32_t *bias, void *scratch, int8_t *output)
{
    const int32_t filters = p->units * p->rank, memory = p->memory, n_in = p->input_size;
    const int32_t span = p->state_max - p->state_min + 1;
    int16_t *state = (int16_t *)scratch;       /* [filters][memory] of one batch row */
    int32_t b, f, u, r, j;
    for (b = 0; b < p->batch; ++b) {
        const int8_t *x = input + b * n_in;
        for (f = 0; f < filters; ++f) {
            int16_t *row = state + f * memory;
            const int8_t *w = w_feature + f * n_in;
            int32_t acc = 0, v;
            for (j = 0; j + 1 < memory; ++j) row[j] = (int16_t)p->state_zp;  /* TFLite Micro's reset, shifted */
            for (j = 0; j < n_in; ++j) acc += w[j] * ((int32_t)x[j] - p->input_zp);
            v = p->state_zp + edgec_clamp(edgec_requantize(acc, p->mult1, p->shift1), p->state_min, p->state_max);
            row[memory - 1] = (int16_t)(((v - p->state_min) % span + span) % span + p->state_min);  /* as T */
        }
        for (u = 0; u < p->units; ++u) {
            int32_t acc = bias[u];
            for (r = 0; r < p->rank; ++r) {
                const int32_t f0 = u * p->rank + r;
                for (j = 0; j < memory; ++j) {
                    acc += w_time[f0 * memory + j] * ((int32_t)state[f0 * memory + j] - p->state_zp);
                }
            }
            output[b * p->units + u] =
                (int8_t)edgec_clamp(edgec_requantize(acc, p->mult2, p->shift2) + p->output_zp, -128, 127);
        }
    }
}
