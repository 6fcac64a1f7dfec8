/* edgec fast add (declared in edgec_nn.h, machinery in edgec_fast_support.h). The requantization record and
 * the activation range are read into locals once: the output is int8, which may alias anything, so a field
 * read through a pointer inside the loop would be read again after every store. Eight values a pass where the
 * activation range is all of int8 (the loop's pointer steps, compare and branch once for eight: ResNet's residual
 * adds), and the usual fused ReLU (the range [lo, 127]) as one saturation and one lower bound. The tables hold the
 * doubled rescaled inputs (edgec/ops/binary lower_add: |lut1| + |lut2| < 2^30, so the doubled sum is exact), the
 * sum the requantization's SMMLAR takes as it is: no shift an element (IC's residual adds on the Cortex-M4: 12.25
 * -> 10.63 instructions an element with the eight a pass). */
#include "edgec_fast_support.h"

/* output[i] for one i: the sum of both rescaled inputs requantized (`ng` the record's neg: the literal -1 where
 * it is known, so that the correction is one ADD with a shifted operand), `clamp` of v to the activation range */
#define EDGEC_ADD_ONE(i, clamp, ng)                                                                \
    do {                                                                                           \
        const int32_t t_ = l1[input1[(i)]] + l2[input2[(i)]];                                      \
        int32_t v = (E_SMMLAR(t_, mult, khi) + ((t_ >> 31) & (ng))) >> shift;                      \
        output[(i)] = (int8_t)(clamp);                                                             \
    } while (0)
#define EDGEC_ADD_LOOP(clamp, ng)                                                                  \
    do {                                                                                           \
        for (; n >= 8; n -= 8, input1 += 8, input2 += 8, output += 8) {                           \
            EDGEC_ADD_ONE(0, clamp, ng);                                                           \
            EDGEC_ADD_ONE(1, clamp, ng);                                                           \
            EDGEC_ADD_ONE(2, clamp, ng);                                                           \
            EDGEC_ADD_ONE(3, clamp, ng);                                                           \
            EDGEC_ADD_ONE(4, clamp, ng);                                                           \
            EDGEC_ADD_ONE(5, clamp, ng);                                                           \
            EDGEC_ADD_ONE(6, clamp, ng);                                                           \
            EDGEC_ADD_ONE(7, clamp, ng);                                                           \
        }                                                                                          \
        for (i = 0; i < n; ++i) EDGEC_ADD_ONE(i, clamp, ng);                                       \
    } while (0)
/* v clamped to [lo, 127]: where the core has USAT, the saturated v - lo saturated again to [0, 255] (v - lo <=
 * 127 - lo <= 255), plus lo: no compare and conditional move */
#ifdef EDGEC_DSP_NATIVE
#define EDGEC_ADD_RELU(v) (lo + (int32_t)__usat(EDGEC_SAT8(v) - lo, 8))
#else
#define EDGEC_ADD_RELU(v) (EDGEC_SAT8(v) < lo ? lo : EDGEC_SAT8(v))
#endif

void edgec_add_lut_s8(const edgec_add_lut_params *p, const int8_t *input1, const int8_t *input2, const int32_t *lut1,
                      const int32_t *lut2, const edgec_rq *rq, int8_t *output)
{
    const int32_t *l1 = lut1 + 128, *l2 = lut2 + 128;
    const int32_t lo = p->act_min, hi = p->act_max;
    const int32_t mult = rq->mult, khi = rq->khi, neg = rq->neg, shift = rq->shift;
    int32_t i, n = p->n;
    if (lo == -128 && hi == 127 && neg == -1) {
        EDGEC_ADD_LOOP(EDGEC_SAT8(v), -1);
    } else if (lo == -128 && hi == 127) {
        EDGEC_ADD_LOOP(EDGEC_SAT8(v), neg);
    } else if (hi == 127) {
        for (i = 0; i < n; ++i) EDGEC_ADD_ONE(i, EDGEC_ADD_RELU(v), neg);
    } else {
        for (i = 0; i < n; ++i) EDGEC_ADD_ONE(i, v < lo ? lo : (v > hi ? hi : v), neg);
    }
}
