/* The requantization of the fast 16x8 convolutions (fast/edgec_conv2d_fast_s16.c,
 * fast/edgec_depthwise_conv2d_fast_s16.c): TFLite's MultiplyByQuantizedMultiplier(int64_t, int32_t, int) of an
 * int32 sum plus an int32 bias, as edgec_requantize64 computes it, with the multiplier's reduction to Q15 and the
 * total shift done at build time (edgec/ops/conv/s16.py). Private to fast/. */
#ifndef EDGEC_RQ16_H
#define EDGEC_RQ16_H

#include "edgec_fast_support.h"

/* r: {bias, reduced multiplier (0..2^15), total shift (1..46)}; |acc + bias| < 2^31 (the lowering's bound) */
EDGEC_INLINE int16_t edgec_rq16_out(int32_t acc, const int32_t *r, int32_t lo, int32_t hi)
{
    const int32_t total = r[2];
    const int64_t v = (int64_t)(acc + r[0]) * r[1] + ((int64_t)1 << (total - 1));
    const int32_t y = (int32_t)(v >> total);   /* arithmetic: floor, as edgec_requantize64 */
    return (int16_t)(y < lo ? lo : (y > hi ? hi : y));
}

#endif
