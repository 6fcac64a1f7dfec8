/* edgec softmax and log-softmax, portable C99. Bit-exact with edgec/ops/softmax.py. */
#include "edgec_nn.h"

/* The largest value m of one row of cols values and the sum of exp_table[m - x[i]] over the row
 * (at most cols * 2^24): what softmax and log-softmax both start from. */
static inline uint64_t edgec_exp_sum(const int8_t *x, int32_t cols, const uint32_t *exp_table, int32_t *max)
{
    int32_t i, m = -128;
    uint64_t sum = 0;
    for (i = 0; i < cols; ++i) {
        m = x[i] > m ? x[i] : m;
    }
    for (i = 0; i < cols; ++i) {
        sum += exp_table[m - x[i]];
    }
    *max = m;
    return sum;
}

void edgec_softmax_s8(int32_t rows, int32_t cols, const uint32_t *exp_table, const int8_t *input,
                      int8_t *output)
{
    int32_t r, i;
    for (r = 0; r < rows; ++r) {
        const int8_t *x = input + r * cols;
        int8_t *y = output + r * cols;
        int32_t m;
        const uint64_t sum = edgec_exp_sum(x, cols, exp_table, &m), two_sum = 2u * sum;
        for (i = 0; i < cols; ++i) {
            const uint64_t e = exp_table[m - x[i]];
            const int32_t q = (int32_t)((e * 512u + sum) / two_sum) - 128;
            y[i] = (int8_t)(q > 127 ? 127 : q);
        }
    }
}

void edgec_log_softmax_s8(const edgec_log_softmax_params *p, const uint32_t *exp_table,
                          const int32_t *log_table, const int8_t *input, int8_t *output)
{
    int32_t r, i;
    for (r = 0; r < p->rows; ++r) {
        const int8_t *x = input + r * p->cols;
        int32_t m, e = 0;
        const int64_t sum = (int64_t)edgec_exp_sum(x, p->cols, exp_table, &m);
        int64_t l2, ln;
        while ((sum >> (e + 1)) != 0) {
            ++e;
        }
        l2 = (int64_t)(e - 24) * 65536 + log_table[(sum >> (e - 8)) - 256];
        ln = (l2 * 45426) >> 16;
        for (i = 0; i < p->cols; ++i) {
            const int64_t y16 = (int64_t)(x[i] - m) * p->k_in - ((ln * p->k_ln) >> 16);
            const int64_t q = edgec_round_pot64(y16, 16) + p->output_zp;
            *output++ = (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
        }
    }
}
