/* The fast 16x8 fully connected layer (edgec_nn.h, edgec/ops/dense.py): `rows` rows through the same weights are
 * the 1x1 convolution of a rows x 1 image, edgec_conv2d_fast_s16 (its weights, records and scratch). */
#include "edgec_fast_support.h"

void edgec_fully_connected_fast_s16(const edgec_fully_connected_rows_params *p, const int16_t *input,
                                    const uint32_t *weights, const int32_t *rq, int16_t *scratch, int16_t *output)
{
    edgec_conv_fast_s16_params c;
    c.in_h = p->rows;
    c.in_w = 1;
    c.in_c = p->in_features;
    c.out_h = p->rows;
    c.out_w = 1;
    c.out_c = p->out_features;
    c.k_h = c.k_w = c.stride_h = c.stride_w = c.dil_h = c.dil_w = 1;
    c.pad_top = c.pad_left = 0;
    c.act_min = p->act_min;
    c.act_max = p->act_max;
    c.k4 = (p->in_features + 3) / 4 * 4;
    c.in_place = 0;      /* the rows' scratch is the record's (their alignment is not known) */
    edgec_conv2d_fast_s16(&c, input, weights, rq, scratch, output);
}
