/* edgec fast depthwise 3x3 convolutions' window (private to fast/): shared by
 * fast/edgec_depthwise_conv2d_3x3.c and fast/edgec_depthwise_conv2d_3x3_fused.c. Static (not inline: it keeps
 * its own register allocation, EDGEC_NOINLINE), like edgec_conv_taps.h: each kernel file gets its own copy. */
#ifndef EDGEC_DEPTHWISE_CONV2D_3X3_WINDOW_H
#define EDGEC_DEPTHWISE_CONV2D_3X3_WINDOW_H

#include "edgec_fast_support.h"

/* The window: for each strip column j and each of 4 channels, a record of four int16 values
 * (slot 0, slot 1, slot 2, unused), 8 bytes; column j's records are 32 bytes at 32 * j. Input row r
 * lives in slot r % 3 (a rolling window: going down one output row loads only the new rows), so the
 * kernel row each slot holds rotates, and the weights are packed for the rotation once per channel
 * and output row: P[kx] = (w[ky of slot 0][kx], w[ky of slot 1][kx]) for SMLAD on the word
 * (slot 0, slot 1), Q = w[ky of slot 2][kx] for SMLABB/SMLABT on the word (slot 2, unused). */

/* Input row r (or the zero point for a padded row) into slot `slot` of strip columns [x0, x1). */
static EDGEC_NOINLINE EDGEC_NOCLONE void edgec_dw_load_row(const edgec_depthwise_conv2d_3x3_params *p, const int8_t *src,
                                                           int32_t x0, int32_t x1, int32_t slot, int16_t *win, int valid)
{
    edgec_h16 *d = (edgec_h16 *)win + 16 * x0 + slot;
    const int32_t cs = p->in_col_step;
    int32_t j;
    if (!valid) {
        const int16_t zp = (int16_t)p->input_zp;
        for (j = x0; j < x1; ++j, d += 16) d[0] = d[4] = d[8] = d[12] = zp;
        return;
    }
    for (j = x0; j < x1; ++j, d += 16, src += cs) {
        d[0] = src[0];
        d[4] = src[1];
        d[8] = src[2];
        d[12] = src[3];
    }
}

#endif /* EDGEC_DEPTHWISE_CONV2D_3X3_WINDOW_H */
