/* The requantization of the fast 16x8 convolutions (fast/edgec_conv2d_fast_s16.c,
 * fast/edgec_depthwise_conv2d_fast_s16.c): TFLite's MultiplyByQuantizedMultiplier(int64_t, int32_t, int) of an
 * int32 sum plus an int32 bias, as edgec_requantize64 computes it, with the multiplier's reduction to Q15 and the
 * total shift (15 - shift) done at build time (edgec/ops/conv/s16.py). Private to fast/. */
#ifndef EDGEC_RQ16_H
#define EDGEC_RQ16_H

#include "edgec_fast_support.h"

/* r: {bias, m, t}; |acc + bias| < 2^31 (the lowering's bound). With t = 0, m is the multiplier reduced to Q15
 * times 2^(32 - total shift), below 2^31: (x * R + 2^(T-1)) >> T == (x * m + 2^31) >> 32, one SMMULR. Else m is
 * the reduced multiplier and t the total shift (1..31): (v >> t) mod 2^32 of the 64-bit v = hi:lo is
 * (hi << (32 - t)) | (lo >> t), one SMLAL and no 64-bit shift. */
EDGEC_INLINE int16_t edgec_rq16_out(int32_t acc, const int32_t *r, int32_t lo, int32_t hi)
{
    const int32_t t = r[2];
    int32_t y;
    if (t == 0) {
        y = E_SMMLAR(acc + r[0], r[1], 0);
    } else {
        const int64_t v = (int64_t)(acc + r[0]) * r[1] + (int64_t)((uint32_t)1 << (t - 1));
        const uint32_t word_hi = (uint32_t)((uint64_t)v >> 32), word_lo = (uint32_t)v;
        y = (int32_t)((word_hi << (32 - t)) | (word_lo >> t));   /* floor, as edgec_requantize64 */
    }
    return (int16_t)(y < lo ? lo : (y > hi ? hi : y));
}

#endif
