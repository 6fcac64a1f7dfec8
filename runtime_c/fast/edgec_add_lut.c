/* edgec fast add (declared in edgec_nn.h, machinery in edgec_fast_support.h). The requantization record and
 * the activation range are read into locals once: the output is int8, which may alias anything, so a field
 * read through a pointer inside the loop would be read again after every store. */
#include "edgec_fast_support.h"

void edgec_add_lut_s8(const edgec_add_lut_params *p, const int8_t *input1, const int8_t *input2, const int32_t *lut1,
                      const int32_t *lut2, const edgec_rq *rq, int8_t *output)
{
    const int32_t *l1 = lut1 + 128, *l2 = lut2 + 128;
    const int32_t lo = p->act_min, hi = p->act_max, n = p->n;
    const int32_t mult = rq->mult, khi = rq->khi, neg = rq->neg, shift = rq->shift;
    int32_t i;
    if (lo == -128 && hi == 127) {
        for (i = 0; i < n; ++i) {
            output[i] = (int8_t)EDGEC_SAT8(edgec_rq_value(l1[input1[i]] + l2[input2[i]], mult, khi, neg, shift));
        }
    } else {
        for (i = 0; i < n; ++i) {
            int32_t v = edgec_rq_value(l1[input1[i]] + l2[input2[i]], mult, khi, neg, shift);
            v = v < lo ? lo : v;
            output[i] = (int8_t)(v > hi ? hi : v);
        }
    }
}
