/* edgec fast convolutions' 2 x 4 register block (private to fast/): 2 output pixels x 4 output channels, for
 * fast/edgec_conv2d_window.c's edgec_conv2d_window4_s8 and fast/edgec_conv2d_blocked4.c's 1x1 convolutions.
 * Per k-step (2 taps of both pixels) one LDRD of the pixels' int16 words, two LDRD of the 4 channels' doubled
 * weight words and 8 SMLAD: 11 instructions for 16 MACs, against the 2 x 2 block's 12.
 *
 * Columns, per group of 4 taps (t0..t3): (t0, t2) of pixel 0, of pixel 1, then (t1, t3) of pixel 0, of pixel 1.
 * Weights, per block of 4 output channels: the 4 doubled biases, then per group the doubled int16 words (w0, w2)
 * of channels 0..3, then (w1, w3) of channels 0..3 (edgec/ops/fast.py `blocks`). Macros only: they expand inside
 * the kernel's loop over its accumulators a0..a3 (pixel 0), b0..b3 (pixel 1), its column pointer x and its weight
 * pointer w (both edgec_w32 *). */
#ifndef EDGEC_CONV_BLOCK2X4_H
#define EDGEC_CONV_BLOCK2X4_H

#include "edgec_fast_support.h"

#ifdef EDGEC_DSP
#define EDGEC_B24_STEP(xo, wo)                                                                     \
    do {                                                                                           \
        E_LDRD(xa, xb, x, (xo));                                                                   \
        E_LDRD(wa, wb, w, (wo));                                                                   \
        a0 = E_SMLAD(xa, wa, a0);                                                                  \
        b0 = E_SMLAD(xb, wa, b0);                                                                  \
        a1 = E_SMLAD(xa, wb, a1);                                                                  \
        b1 = E_SMLAD(xb, wb, b1);                                                                  \
        E_LDRD(wa, wb, w, (wo) + 2);                                                               \
        a2 = E_SMLAD(xa, wa, a2);                                                                  \
        b2 = E_SMLAD(xb, wa, b2);                                                                  \
        a3 = E_SMLAD(xa, wb, a3);                                                                  \
        b3 = E_SMLAD(xb, wb, b3);                                                                  \
    } while (0)
#define EDGEC_B24_REGS uint32_t xa, xb, wa, wb;
#else
/* the k-step by halves (8 accumulators are what a core without the DSP extension keeps in registers) */
#define EDGEC_B24_HALF(h)                                                                          \
    do {                                                                                           \
        const int32_t p_ = xs_[(h)], r_ = xs_[2 + (h)];                                            \
        int32_t u_ = ws_[(h)];                                                                     \
        a0 += p_ * u_;                                                                             \
        b0 += r_ * u_;                                                                             \
        u_ = ws_[2 + (h)];                                                                         \
        a1 += p_ * u_;                                                                             \
        b1 += r_ * u_;                                                                             \
        u_ = ws_[4 + (h)];                                                                         \
        a2 += p_ * u_;                                                                             \
        b2 += r_ * u_;                                                                             \
        u_ = ws_[6 + (h)];                                                                         \
        a3 += p_ * u_;                                                                             \
        b3 += r_ * u_;                                                                             \
    } while (0)
#define EDGEC_B24_STEP(xo, wo)                                                                     \
    do {                                                                                           \
        const edgec_h16 *xs_ = (const edgec_h16 *)(const void *)(x + (xo));                        \
        const edgec_h16 *ws_ = (const edgec_h16 *)(const void *)(w + (wo));                        \
        EDGEC_B24_HALF(0);                                                                         \
        EDGEC_B24_HALF(1);                                                                         \
    } while (0)
#define EDGEC_B24_REGS
#endif
/* group g from x, w: column words 4g.., weight words 8g.. */
#define EDGEC_B24_GROUP(g)                                                                         \
    do {                                                                                           \
        EDGEC_B24_STEP(4 * (g), 8 * (g));                                                          \
        EDGEC_B24_STEP(4 * (g) + 2, 8 * (g) + 4);                                                  \
    } while (0)

/* The groups from x to end16 (16 column words a pass; x and w advanced). The Arm build runs them as one block of
 * assembly: the 14 registers it needs are all the core has (8 accumulators, 4 operands, 2 pointers; the end is
 * read from the stack), which gcc's allocation of the C loop does not manage without spills. */
#if defined(EDGEC_DSP_NATIVE) && !defined(__clang__) /* clang cannot give an asm statement 14 registers */
#define EDGEC_B24_ASM_STEP                                                                         \
    "ldrd %[xa], %[xb], [%[x]], #8\n\t"                                                           \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                                                           \
    "smlad %[a0], %[xa], %[wa], %[a0]\n\t"                                                        \
    "smlad %[b0], %[xb], %[wa], %[b0]\n\t"                                                        \
    "smlad %[a1], %[xa], %[wb], %[a1]\n\t"                                                        \
    "smlad %[b1], %[xb], %[wb], %[b1]\n\t"                                                        \
    "ldrd %[wa], %[wb], [%[w]], #8\n\t"                                                           \
    "smlad %[a2], %[xa], %[wa], %[a2]\n\t"                                                        \
    "smlad %[b2], %[xb], %[wa], %[b2]\n\t"                                                        \
    "smlad %[a3], %[xa], %[wb], %[a3]\n\t"                                                        \
    "smlad %[b3], %[xb], %[wb], %[b3]\n\t"
#define EDGEC_B24_CHUNKS16(end16)                                                                  \
    do {                                                                                           \
        if (x < (end16)) {                                                                         \
            __asm__ volatile("1:\n\t" EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP     \
                             EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP \
                             EDGEC_B24_ASM_STEP "ldr %[xa], %[end]\n\t"                             \
                             "cmp %[x], %[xa]\n\t"                                                 \
                             "bne 1b\n\t"                                                          \
                             : [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3),         \
                               [b0] "+r"(b0), [b1] "+r"(b1), [b2] "+r"(b2), [b3] "+r"(b3),         \
                               [x] "+r"(x), [w] "+r"(w), [xa] "=&r"(xa), [xb] "=&r"(xb),           \
                               [wa] "=&r"(wa), [wb] "=&r"(wb)                                      \
                             : [end] "m"(end16)                                                    \
                             : "cc", "memory");                                                    \
        }                                                                                          \
    } while (0)
#else
#define EDGEC_B24_CHUNKS16(end16)                                                                  \
    do {                                                                                           \
        for (; x < (end16); x += 4, w += 8) EDGEC_B24_GROUP(0);                                    \
    } while (0)
#endif

/* Requantize channel d's doubled accumulators of both pixels with record q[d]: pixel 1's stored first at o1[d],
 * then pixel 0's at o0[d] (a lone last pixel has o1 == o0, and pixel 0's value is the one that must stay);
 * `clamp` of v_ to the activation range. */
#define EDGEC_B24_STORE(acc0, acc1, d, clamp)                                                      \
    do {                                                                                           \
        const edgec_rq *r_ = q + (d);                                                              \
        const int32_t m_ = r_->mult, k_ = r_->khi, n_ = r_->neg, s_ = r_->shift;                   \
        int32_t v_ = (E_SMMLAR((acc1), m_, k_) + (((acc1) >> 31) & n_)) >> s_;                     \
        o1[(d)] = (int8_t)(clamp);                                                                 \
        v_ = (E_SMMLAR((acc0), m_, k_) + (((acc0) >> 31) & n_)) >> s_;                             \
        o0[(d)] = (int8_t)(clamp);                                                                 \
    } while (0)

#endif /* EDGEC_CONV_BLOCK2X4_H */
