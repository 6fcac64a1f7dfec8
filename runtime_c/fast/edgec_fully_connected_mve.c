/* edgec Helium (MVE) fully connected layer (declared in edgec_nn.h, machinery in edgec_mve_support.h): 4 rows
 * at a time, 16 int8 products per VMLADAVA. Compiled only for Helium cores (EDGEC_MVE). */
#include "edgec_mve_support.h"

#ifdef EDGEC_MVE
/* Weights [out_features][k4] int8 (rows zero padded to k4). */
void edgec_fully_connected_mve_s8(const edgec_fully_connected_packed_params *p, const int8_t *input,
                                  const uint32_t *weights, const edgec_rq *rq, int8_t *scratch, int8_t *output)
{
    const int32_t n_in = p->in_features, n_out = p->out_features, k4 = p->k4;
    const int32x4_t lo = vdupq_n_s32(p->act_min), hi = vdupq_n_s32(p->act_max);
    const int8_t *w = (const int8_t *)(const void *)weights;
    int32_t r;
    (void)scratch;
    for (r = 0; r < n_out; r += 4, w += 4 * k4) {
        const int32_t valid = n_out - r < 4 ? n_out - r : 4; /* a short last block reads its first row again */
        const int8_t *w1 = w + (valid > 1 ? k4 : 0), *w2 = w + (valid > 2 ? 2 * k4 : 0);
        const int8_t *w3 = w + (valid > 3 ? 3 * k4 : 0);
        int32_t a[4];
        edgec_mve_dot4(input, w, w1, w2, w3, n_in, a);
        if (valid == 4) {
            const int32x4_t acc = vaddq_s32(vld1q_s32(a), edgec_mve_bias_four(rq + r));
            vstrbq_s32(output + r, edgec_mve_requant(acc, edgec_mve_rq_four(rq + r), lo, hi));
        } else { /* the last rows, one requantization record each */
            int32_t j;
            for (j = 0; j < valid; ++j) {
                const edgec_rq *q = rq + r + j;
                output[r + j] = edgec_out(a[j] + q->bias, q, p->act_min == -128 && p->act_max == 127,
                                          p->act_min, p->act_max);
            }
        }
    }
}
#endif /* EDGEC_MVE */
