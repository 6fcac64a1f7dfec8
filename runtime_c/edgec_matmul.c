/* edgec matrix product of two activations, portable C99 (strided operands and output). Bit-exact with
 * edgec/ops/matmul.py. */
#include "edgec_nn_support.h"

void edgec_matmul_s8(const edgec_matmul_params *p, const int8_t *a, const int8_t *b, int8_t *output)
{
    int32_t bt, i, j, k;
    for (bt = 0; bt < p->batch; ++bt) {
        const int8_t *am = a + bt * p->a_batch_stride, *bm = b + bt * p->b_batch_stride;
        int8_t *om = output + bt * p->out_batch_stride;
        for (i = 0; i < p->m; ++i) {
            for (j = 0; j < p->n; ++j) {
                int32_t acc = 0;
                for (k = 0; k < p->k; ++k) {
                    acc += ((int32_t)am[i * p->a_row_stride + k * p->a_col_stride] - p->a_zp) *
                           ((int32_t)bm[k * p->b_row_stride + j * p->b_col_stride] - p->b_zp);
                }
                acc = edgec_requantize(acc, p->mult, p->shift) + p->output_zp;
                om[i * p->out_row_stride + j * p->out_col_stride] = (int8_t)edgec_clamp(acc, p->act_min, p->act_max);
            }
        }
    }
}

/* TFLite's BatchMatMul<int16_t, int64_t> (16x8): an int64 sum, the 64-bit requantization, zero points 0. */
void edgec_matmul_s16(const edgec_matmul_params *p, const int16_t *a, const int16_t *b, int16_t *output)
{
    int32_t bt, i, j, k;
    for (bt = 0; bt < p->batch; ++bt) {
        const int16_t *am = a + bt * p->a_batch_stride, *bm = b + bt * p->b_batch_stride;
        int16_t *om = output + bt * p->out_batch_stride;
        for (i = 0; i < p->m; ++i) {
            for (j = 0; j < p->n; ++j) {
                int64_t acc = 0;
                for (k = 0; k < p->k; ++k) {
                    acc += (int64_t)am[i * p->a_row_stride + k * p->a_col_stride] *
                           bm[k * p->b_row_stride + j * p->b_col_stride];
                }
                om[i * p->out_row_stride + j * p->out_col_stride] =
                    (int16_t)edgec_clamp(edgec_requantize64(acc, p->mult, p->shift), p->act_min, p->act_max);
            }
        }
    }
}
