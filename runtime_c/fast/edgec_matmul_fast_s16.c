/* The fast 16x8 matrix product of two activations (edgec_nn.h, edgec/ops/matmul.py): TFLite's
 * BatchMatMul<int16_t, int64_t> with B^T gathered into scratch once per batch (k rounded up to even, zero padded)
 * and each row of A beside it, the int64 sum two products an instruction (SMLALD), then TFLite's 64-bit
 * requantization: edgec_rq16_out where the sum fits int32 (one SMMULR for most scales), else edgec_requantize64. */
#include "edgec_rq16.h"

#ifdef EDGEC_DSP_NATIVE
#define E_SMLALD(a, b, acc) __smlald((int32_t)(a), (int32_t)(b), (acc))
#else
EDGEC_INLINE int64_t E_SMLALD(uint32_t a, uint32_t b, int64_t acc)
{
    return acc + (int64_t)((int32_t)(int16_t)(a & 0xffffu) * (int32_t)(int16_t)(b & 0xffffu)) +
           (int64_t)((int32_t)(int16_t)(a >> 16) * (int32_t)(int16_t)(b >> 16));
}
#endif

void edgec_matmul_fast_s16(const edgec_matmul_params *p, const int16_t *a, const int16_t *b, int16_t *scratch,
                           int16_t *output)
{
    const int32_t k = p->k, n = p->n, pairs = (k + 1) / 2, k2 = 2 * pairs, lo = p->act_min, hi = p->act_max;
    const int32_t mult = p->mult, total = 15 - p->shift;
    const int32_t reduced = mult < 0x7FFF0000 ? (int32_t)(((int64_t)mult + (1 << 15)) / 65536) : 0x7FFF;
    int16_t *bt_cols = scratch, *row = scratch + k2 * n;
    int32_t rec[3] = {0, 0, 0};
    int32_t bt, i, j, kk, g;
    const int32_t fits = mult >= 0 && total >= 1 && total <= 31;    /* edgec_rq16_out's range */
    if (fits) {
        const int64_t scaled = (int64_t)reduced << (32 - total);
        rec[1] = scaled < ((int64_t)1 << 31) ? (int32_t)scaled : reduced;
        rec[2] = scaled < ((int64_t)1 << 31) ? 0 : total;
    }
    for (bt = 0; bt < p->batch; ++bt) {
        const int16_t *am = a + bt * p->a_batch_stride, *bm = b + bt * p->b_batch_stride;
        int16_t *om = output + bt * p->out_batch_stride;
        if (bt == 0 || p->b_batch_stride != 0) {
            for (j = 0; j < n; ++j) {
                int16_t *col = bt_cols + j * k2;
                for (kk = 0; kk < k; ++kk) {
                    col[kk] = bm[kk * p->b_row_stride + j * p->b_col_stride];
                }
                if (k2 > k) {
                    col[k] = 0;
                }
            }
        }
        for (i = 0; i < p->m; ++i) {
            const edgec_w32 *x = (const edgec_w32 *)(const void *)row;
            for (kk = 0; kk < k; ++kk) {
                row[kk] = am[i * p->a_row_stride + kk * p->a_col_stride];
            }
            if (k2 > k) {
                row[k] = 0;
            }
            for (j = 0; j < n; ++j) {
                const edgec_w32 *y = (const edgec_w32 *)(const void *)(bt_cols + j * k2);
                int64_t acc = 0;
                int32_t v;
                for (g = 0; g < pairs; ++g) {
                    acc = E_SMLALD(x[g], y[g], acc);
                }
                if (fits && acc >= INT32_MIN && acc <= INT32_MAX) {
                    v = edgec_rq16_out((int32_t)acc, rec, lo, hi);
                } else {
                    v = edgec_clamp(edgec_requantize64(acc, mult, p->shift), lo, hi);
                }
                om[i * p->out_row_stride + j * p->out_col_stride] = (int16_t)v;
            }
        }
    }
}
