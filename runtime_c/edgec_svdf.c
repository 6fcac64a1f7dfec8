/* edgec's TFLite integer SVDF, portable C99, computed as TFLite Micro's svdf reference kernel computes it.
 * Bit-exact with edgec/ops/svdf.py (whose doc gives the arithmetic). */
#include "edgec_nn_support.h"

#include <string.h>

/* an int32 sum kept modulo 2^32 (TFLite Micro's int32 accumulators wrap on overflow; here without the undefined
 * behaviour), back to int32 */
static int32_t wrap32(uint32_t v)
{
    return v < 0x80000000u ? (int32_t)v : -(int32_t)(~v) - 1;
}

/* s[j] = s[j + 1] for j < n - 1 over n entries of `size` bytes (4 bytes at a time by memcpy: one LDR / STR where
 * unaligned words may be read; each word read before the one below it is written): the byte loop of the C
 * library's memmove, which the compiler makes of an element loop, cost more than the SVDF's products */
static void shift_left(uint8_t *s, int32_t n, int32_t size)
{
    const int32_t bytes = (n - 1) * size;
    int32_t j;
    for (j = 0; j + 4 <= bytes; j += 4) {
        uint32_t v;
        memcpy(&v, s + j + size, 4);
        memcpy(s + j, &v, 4);
    }
    for (; j < bytes; ++j) {
        s[j] = s[j + size];
    }
}

/* the state's entry i (int8 storage where the state's type is int8, else int16) */
#define STATE_AT(i) (eight ? (int32_t)((int8_t *)state)[(i)] : (int32_t)((int16_t *)state)[(i)])

void edgec_svdf_s8(const edgec_svdf_params *p, const int8_t *input, const int8_t *w_feature, const int16_t *w_time,
                   const int32_t *bias, void *state, int8_t *output)
{
    const int32_t filters = p->units * p->rank, memory = p->memory, n_in = p->input_size;
    const int32_t input_zp = p->input_zp, state_zp = p->state_zp, lo = p->state_min, hi = p->state_max;
    const int32_t span = hi - lo + 1, eight = hi == 127;
    int32_t b, f, u, j;
    for (b = 0; b < p->batch; ++b) {
        const int8_t *x = input + b * n_in;
        const int32_t rows = b * filters * memory;   /* this batch row's [filters][memory]: its first entry */
        /* the oldest column drops out: the whole [filters][memory] one element to the left (each row's last entry
         * then holds the next row's first, overwritten below) */
        shift_left((uint8_t *)state + rows * (eight ? 1 : 2), filters * memory, eight ? 1 : 2);
        for (f = 0; f < filters; ++f) {
            const int8_t *w = w_feature + f * n_in;
            /* sum w (x - zp) = sum w x - zp sum w, modulo 2^32 as TFLite Micro's wrapping int32 sum */
            uint32_t acc = 0, sum_w = 0;
            int32_t v;
            for (j = 0; j + 4 <= n_in; j += 4) {
                acc += (uint32_t)(w[j] * x[j] + w[j + 1] * x[j + 1] + w[j + 2] * x[j + 2] + w[j + 3] * x[j + 3]);
                sum_w += (uint32_t)(w[j] + w[j + 1] + w[j + 2] + w[j + 3]);
            }
            for (; j < n_in; ++j) {
                acc += (uint32_t)(w[j] * x[j]);
                sum_w += (uint32_t)w[j];
            }
            acc -= sum_w * (uint32_t)input_zp;
            v = state_zp + edgec_clamp(edgec_requantize(wrap32(acc), p->mult1, p->shift1), lo, hi);
            while (v > hi) v -= span;          /* stored as T: wraps, as TFLite Micro's cast does */
            while (v < lo) v += span;
            if (eight) {
                ((int8_t *)state)[rows + f * memory + memory - 1] = (int8_t)v;
            } else {
                ((int16_t *)state)[rows + f * memory + memory - 1] = (int16_t)v;
            }
        }
        for (u = 0; u < p->units; ++u) {
            /* the rank's filters of this unit are p->rank rows in a row: one run of rank * memory entries */
            const int32_t s = rows + u * p->rank * memory;
            const int16_t *wt = w_time + u * p->rank * memory;
            uint32_t acc = (uint32_t)bias[u], sum_wt = 0;
            for (j = 0; j < p->rank * memory; ++j) {  /* (an int16 weight times an int16 entry: up to 2^30) */
                acc += (uint32_t)(wt[j] * STATE_AT(s + j));
                sum_wt += (uint32_t)wt[j];
            }
            acc -= sum_wt * (uint32_t)state_zp;
            output[b * p->units + u] =
                (int8_t)edgec_clamp(edgec_requantize(wrap32(acc), p->mult2, p->shift2) + p->output_zp, -128, 127);
        }
    }
}
