/* edgec fast depthwise kernels' tap loop over 4 channels (private to fast/): used by the 1-D kernel
 * (edgec_depthwise_conv2d_line.c) and the k x k one (edgec_depthwise_conv2d_kxk.c). */
#ifndef EDGEC_DEPTHWISE_TAPS_H
#define EDGEC_DEPTHWISE_TAPS_H

#include "edgec_fast_support.h"

/* acc[0..4) += the n taps of 4 channels read at x, x + step, ... (step 0: the same word, the zero point's) times
 * their weights w (per tap 2 words: the int16 pairs (w0, w2) and (w1, w3)); returns the weights after them */
#ifdef EDGEC_DSP
EDGEC_INLINE const edgec_w32 *edgec_dw4_taps(const edgec_w32 *w, const int8_t *x, int32_t step, int32_t n,
                                             int32_t *acc)
{
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], t;
    for (t = 0; t < n; ++t, x += step, w += 2) {
        const uint32_t v = *(const edgec_w32 *)(const void *)x;
        const uint32_t we = w[0], wo = w[1];
        const uint32_t xe = E_SXTB16(v), xo = E_SXTB16_ROR8(v);
        a0 = E_SMLABB(xe, we, a0);
        a2 = E_SMLATT(xe, we, a2);
        a1 = E_SMLABB(xo, wo, a1);
        a3 = E_SMLATT(xo, wo, a3);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
    return w;
}
#else
EDGEC_INLINE const edgec_w32 *edgec_dw4_taps(const edgec_w32 *w, const int8_t *x, int32_t step, int32_t n,
                                             int32_t *acc)
{
    int32_t t;
    for (t = 0; t < n; ++t, x += step, w += 2) {
        const edgec_h16 *wt = (const edgec_h16 *)(const void *)w;
        acc[0] += (int32_t)x[0] * wt[0];
        acc[2] += (int32_t)x[2] * wt[1];
        acc[1] += (int32_t)x[1] * wt[2];
        acc[3] += (int32_t)x[3] * wt[3];
    }
    return w;
}
#endif

#endif /* EDGEC_DEPTHWISE_TAPS_H */
