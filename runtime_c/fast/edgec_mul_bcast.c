/* edgec fast broadcast multiply (declared in edgec_nn.h, lowered by edgec/ops/binary/mul.py): out = rq((a - za) *
 * (b - zb)) over [rows][cols], each operand advancing by its row stride (cols: read whole; 0: the same row again,
 * squeeze-excite's gate over every pixel). The parameters and the requantization record are read into locals
 * once (the int8 output may alias anything), and the activation range is chosen outside the loop: all of int8
 * is one saturation. */
#include "edgec_fast_support.h"

#define EDGEC_MUL_ROWS(clamp)                                                                                    \
    do {                                                                                                         \
        for (r = 0; r < rows; ++r, a += sa, b += sb, output += cols) {                                           \
            for (j = 0; j < cols; ++j) {                                                                         \
                const int32_t v = edgec_rq_value(((int32_t)a[j] - za) * ((int32_t)b[j] - zb), mult, khi, neg,     \
                                                 shift);                                                         \
                output[j] = (int8_t)(clamp);                                                                     \
            }                                                                                                    \
        }                                                                                                        \
    } while (0)

void edgec_mul_bcast_s8(const edgec_mul_bcast_params *p, const int8_t *a, const int8_t *b, const edgec_rq *rq,
                        int8_t *output)
{
    const int32_t rows = p->rows, cols = p->cols, sa = p->a_row_stride, sb = p->b_row_stride;
    const int32_t za = p->a_zp, zb = p->b_zp, lo = p->act_min, hi = p->act_max;
    const int32_t mult = rq->mult, khi = rq->khi, neg = rq->neg, shift = rq->shift;
    int32_t r, j;
    if (lo == -128 && hi == 127) {
        EDGEC_MUL_ROWS(EDGEC_SAT8(v));
    } else {
        EDGEC_MUL_ROWS(v < lo ? lo : (v > hi ? hi : v));
    }
}
