/* edgec's TFLite integer SVDF, portable C99, computed as TFLite Micro's svdf reference kernel computes it.
 * Bit-exact with edgec/ops/svdf.py (whose doc gives the arithmetic). */
#include "edgec_nn_support.h"

/* an int32 sum kept modulo 2^32 (TFLite Micro's int32 accumulators wrap on overflow; here without the undefined
 * behaviour), back to int32 */
static int32_t wrap32(uint32_t v)
{
    return v < 0x80000000u ? (int32_t)v : -(int32_t)(~v) - 1;
}

void edgec_svdf_s8(const edgec_svdf_params *p, const int8_t *input, const int8_t *w_feature, const int16_t *w_time,
                   const int32_t *bias, int16_t *state, int8_t *output)
{
    const int32_t filters = p->units * p->rank, memory = p->memory, n_in = p->input_size;
    const int32_t span = p->state_max - p->state_min + 1;
    int32_t b, f, u, r, j;
    for (b = 0; b < p->batch; ++b) {
        const int8_t *x = input + b * n_in;
        int16_t *const rows = state + b * filters * memory;   /* this batch row's [filters][memory] */
        for (f = 0; f < filters; ++f) {
            int16_t *row = rows + f * memory;
            const int8_t *w = w_feature + f * n_in;
            uint32_t acc = 0;
            int32_t v;
            for (j = 0; j + 1 < memory; ++j) row[j] = row[j + 1];     /* the oldest column drops out */
            for (j = 0; j < n_in; ++j) acc += (uint32_t)(w[j] * ((int32_t)x[j] - p->input_zp));
            v = p->state_zp +
                edgec_clamp(edgec_requantize(wrap32(acc), p->mult1, p->shift1), p->state_min, p->state_max);
            row[memory - 1] = (int16_t)(((v - p->state_min) % span + span) % span + p->state_min);  /* as T */
        }
        for (u = 0; u < p->units; ++u) {
            uint32_t acc = (uint32_t)bias[u];
            for (r = 0; r < p->rank; ++r) {
                const int32_t f0 = u * p->rank + r;
                for (j = 0; j < memory; ++j) {     /* (an int16 weight times an int16 difference: up to 2^31) */
                    acc += (uint32_t)w_time[f0 * memory + j] * (uint32_t)((int32_t)rows[f0 * memory + j] - p->state_zp);
                }
            }
            output[b * p->units + u] =
                (int8_t)edgec_clamp(edgec_requantize(wrap32(acc), p->mult2, p->shift2) + p->output_zp, -128, 127);
        }
    }
}
