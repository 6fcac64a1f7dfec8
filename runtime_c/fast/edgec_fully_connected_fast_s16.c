/* The fast 16x8 fully connected layer (edgec_nn.h, edgec/ops/dense.py): `rows` rows through the same weights are
 * the 1x1 convolution of a rows x 1 image, edgec_conv2d_fast_s16 (its weights, records and scratch). Its params
 * are that convolution's, a const record made at build time (edgec/ops/conv/s16.py fc_params): a tail call, no
 * frame of its own. */
#include "edgec_fast_support.h"

void edgec_fully_connected_fast_s16(const edgec_conv_fast_s16_params *p, const int16_t *input,
                                    const uint32_t *weights, const int32_t *rq, int16_t *scratch, int16_t *output)
{
    edgec_conv2d_fast_s16(p, input, weights, rq, scratch, output);
}
