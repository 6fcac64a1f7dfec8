/* edgec fast add (declared in edgec_nn.h, machinery in edgec_fast_support.h). */
#include "edgec_fast_support.h"

void edgec_add_lut_s8(const edgec_add_lut_params *p, const int32_t *lut1, const int32_t *lut2,
                      const edgec_rq *rq, const int8_t *input1, const int8_t *input2, int8_t *output)
{
    const int32_t *l1 = lut1 + 128, *l2 = lut2 + 128;
    const int32_t lo = p->act_min, hi = p->act_max, full = lo == -128 && hi == 127;
    int32_t i;
    for (i = 0; i < p->n; ++i) {
        output[i] = edgec_out(l1[input1[i]] + l2[input2[i]], rq, full, lo, hi);
    }
}
