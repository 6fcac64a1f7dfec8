/* edgec fast convolutions' 2 x 2 register block (private to fast/): 2 output pixels x 2 output channels, shared by
 * fast/edgec_conv2d_blocked.c, fast/edgec_conv2d_window.c and fast/edgec_conv2d_pointwise.c. Macros only:
 * they expand inside each kernel's loop, over its accumulators a00 (pixel 0, channel c), a01 (pixel 0, channel
 * c + 1), a10, a11 (pixel 1), its tap pointer x and its weight pointer w (both edgec_w32 *). */
#ifndef EDGEC_CONV_BLOCK2X2_H
#define EDGEC_CONV_BLOCK2X2_H

#include "edgec_fast_support.h"

/* One group of 4 taps at word offset `off`: x holds 2 words of pixel 0's int16 taps (t0, t2) (t1, t3), then 2 of
 * pixel 1's; w holds 2 words of channel c's int16 weights in the same order, then 2 of channel c + 1's. On the DSP
 * path 4 LDRD and 8 SMLAD (16 MACs); EDGEC_2X2_REGS declares the registers it loads into. */
#ifdef EDGEC_DSP
#define EDGEC_2X2_GROUP(off)                                                                       \
    do {                                                                                           \
        E_LDRD(xa, xb, x, (off));                                                                  \
        E_LDRD(wa, wb, w, (off));                                                                  \
        E_LDRD(xc, xd, x, (off) + 2);                                                              \
        a00 = E_SMLAD(xa, wa, a00);                                                                \
        a00 = E_SMLAD(xb, wb, a00);                                                                \
        a10 = E_SMLAD(xc, wa, a10);                                                                \
        a10 = E_SMLAD(xd, wb, a10);                                                                \
        E_LDRD(wa, wb, w, (off) + 2);                                                              \
        a01 = E_SMLAD(xa, wa, a01);                                                                \
        a01 = E_SMLAD(xb, wb, a01);                                                                \
        a11 = E_SMLAD(xc, wa, a11);                                                                \
        a11 = E_SMLAD(xd, wb, a11);                                                                \
    } while (0)
#define EDGEC_2X2_REGS uint32_t xa, xb, xc, xd, wa, wb;
#else
/* tap i of the group for both pixels and both channels (unrolled by hand: gcc keeps a 4-step loop) */
#define EDGEC_2X2_TAP(i)                                                                           \
    do {                                                                                           \
        const int32_t p_ = xs_[(i)], r_ = xs_[4 + (i)], u_ = ws_[(i)], v_ = ws_[4 + (i)];          \
        a00 += p_ * u_;                                                                            \
        a10 += r_ * u_;                                                                            \
        a01 += p_ * v_;                                                                            \
        a11 += r_ * v_;                                                                            \
    } while (0)
#define EDGEC_2X2_GROUP(off)                                                                       \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)(x + (off));                       \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + (off));                       \
        EDGEC_2X2_TAP(0);                                                                          \
        EDGEC_2X2_TAP(1);                                                                          \
        EDGEC_2X2_TAP(2);                                                                          \
        EDGEC_2X2_TAP(3);                                                                          \
    } while (0)
#define EDGEC_2X2_REGS
#endif

/* Requantize the doubled accumulators ta and tb of one channel (record q) of the two pixels and store them at
 * oa[d], then ob[d] (the window kernel stores pixel 1 first: a lone last pixel's o1 is o0, and pixel 0's value
 * must be the one that stays); `clamp` of v_ to the activation range, `fix` the correction of a negative
 * accumulator (EDGEC_NEG_ALL or EDGEC_NEG_ANY). */
#define EDGEC_2X2_STORE(ta, oa, tb, ob, q, d, clamp, fix)                                         \
    do {                                                                                           \
        const int32_t m_ = (q)->mult, k_ = (q)->khi, n_ = (q)->neg, s_ = (q)->shift;               \
        const int32_t ta_ = (ta), tb_ = (tb);                                                      \
        int32_t v_ = (E_SMMLAR(ta_, m_, k_) + fix(ta_, n_)) >> s_;                                 \
        (oa)[d] = (int8_t)(clamp);                                                                 \
        v_ = (E_SMMLAR(tb_, m_, k_) + fix(tb_, n_)) >> s_;                                         \
        (void)n_;                                                                                  \
        (ob)[d] = (int8_t)(clamp);                                                                 \
    } while (0)
#define EDGEC_NEG_ALL(t, neg) ((t) >> 31)        /* every record's neg is -1 (shift > 0: the usual case) */
#define EDGEC_NEG_ANY(t, neg) (((t) >> 31) & (neg))  /* the record's own */

#endif /* EDGEC_CONV_BLOCK2X2_H */
