/* edgec fast fully connected layer for any int32 bias (declared in edgec_nn.h; edgec/ops/dense.py lower_fc_bias32):
 * the layers the packed kernel declines because a bias is beyond its |acc| < 2^30 (TFLite files with random or
 * saturated biases: TFLite Micro's keyword benchmark). 4 rows at a time over int16 weights (fast/edgec_rows16.h),
 * the sums modulo 2^32 as TFLite's int32 sums, and TFLite's requantization of any int32 sum. */
#include "edgec_rows16.h"

void edgec_fully_connected_bias32_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                     const uint32_t *weights, const int32_t *rq, int8_t *output)
{
    const int32_t n_in = p->in_features, n_out = p->out_features, zp = p->output_zp, lo = p->act_min,
                  hi = p->act_max, step = 2 * p->k4; /* weight words of a block of 4 rows */
    int32_t o, r;
    for (o = 0; o < n_out; o += 4, rq += 16, weights += step) {
        uint32_t acc[4];
        const int32_t n = n_out - o < 4 ? n_out - o : 4;
        acc[0] = (uint32_t)rq[0];
        acc[1] = (uint32_t)rq[4];
        acc[2] = (uint32_t)rq[8];
        acc[3] = (uint32_t)rq[12];
        edgec_r16_dot4(input, n_in, (const edgec_w32 *)weights, acc);
        for (r = 0; r < n; ++r) {
            const int32_t *q = rq + 4 * r, right = q[3];
            const int32_t v = edgec_rq_any(acc[r], q[1], q[2], right, right > 0 ? 1 << (right - 1) : 0, right > 0);
            output[o + r] = (int8_t)edgec_clamp(v + zp, lo, hi);
        }
    }
}
