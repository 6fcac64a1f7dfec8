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

/* A kernel's 2x4 block over `blocks` blocks of 4 channels of 2 pixels: (columns, column words, weights, records,
 * blocks, o0, o1, act_min, act_max) */
typedef void (*edgec_b24_pixels_fn)(const edgec_w32 *, int32_t, const edgec_w32 *, const edgec_rq *, int32_t, int8_t *,
                                    int8_t *, int32_t, int32_t);

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
/* The assembly loop over the 16-word passes (x from x0 to end16; at least one pass), and the tails of 4 or 8 words
 * (2 or 4 k-steps) after it */
#define EDGEC_B24_ASM_LOOP16                                                                       \
    "1:\n\t" EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP              \
        EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP                    \
        "ldr %[xa], %[end]\n\t"                                                                    \
        "cmp %[x], %[xa]\n\t"                                                                      \
        "bne 1b\n\t"
#define EDGEC_B24_ASM_TAIL4 EDGEC_B24_ASM_STEP EDGEC_B24_ASM_STEP
#define EDGEC_B24_ASM_TAIL8 EDGEC_B24_ASM_TAIL4 EDGEC_B24_ASM_TAIL4

/* Requantize the doubled sums a (pixel 0) and b (pixel 1) of one channel with the edgec_rq record at byte `off` of
 * x, in place: ANY with the record's neg, ALL where every record's neg is -1 (the correction is acc >> 31: one
 * ADD with a shifted operand, no load of neg) */
#define EDGEC_B24_RQ_ANY(a, b, off)                                                                   \
    "ldrd %[wa], %[wb], [%[x], #" #off "+4]\n\t"                                                  \
    "ldrd %[xa], %[xb], [%[x], #" #off "+12]\n\t"                                                 \
    "and %[w], %[xa], %[" #a "], asr #31\n\t"                                                     \
    "smmlar %[" #a "], %[" #a "], %[wa], %[wb]\n\t"                                               \
    "add %[" #a "], %[" #a "], %[w]\n\t"                                                          \
    "asr %[" #a "], %[" #a "], %[xb]\n\t"                                                         \
    "ssat %[" #a "], #8, %[" #a "]\n\t"                                                           \
    "and %[w], %[xa], %[" #b "], asr #31\n\t"                                                     \
    "smmlar %[" #b "], %[" #b "], %[wa], %[wb]\n\t"                                               \
    "add %[" #b "], %[" #b "], %[w]\n\t"                                                          \
    "asr %[" #b "], %[" #b "], %[xb]\n\t"                                                         \
    "ssat %[" #b "], #8, %[" #b "]\n\t"
#define EDGEC_B24_RQ_ALL(a, b, off)                                                                \
    "ldrd %[wa], %[wb], [%[x], #" #off "+4]\n\t"                                                  \
    "ldr %[xb], [%[x], #" #off "+16]\n\t"                                                         \
    "smmlar %[xa], %[" #a "], %[wa], %[wb]\n\t"                                                   \
    "add %[" #a "], %[xa], %[" #a "], asr #31\n\t"                                                \
    "asr %[" #a "], %[" #a "], %[xb]\n\t"                                                         \
    "ssat %[" #a "], #8, %[" #a "]\n\t"                                                           \
    "smmlar %[xa], %[" #b "], %[wa], %[wb]\n\t"                                                   \
    "add %[" #b "], %[xa], %[" #b "], asr #31\n\t"                                                \
    "asr %[" #b "], %[" #b "], %[xb]\n\t"                                                         \
    "ssat %[" #b "], #8, %[" #b "]\n\t"

/* The full-range 2x4 block, the whole loop over `blocks` blocks of 4 channels one block of assembly, the
 * requantization included: columns x0 (n words: `loop` over the 16-word passes, then `tail`), weights w (each
 * block's 4 doubled biases, then its 2 * n words), records q, outputs o0, o1 (pixel 1 stored first: a lone last
 * pixel's o1 is o0; each pixel's 4 bytes packed with BFI into one word store, unaligned where out_c is not a
 * multiple of 4, which the cores with the DSP extension allow). gcc's C for it spilled and reloaded about 30 values a block (114 instructions a block outside
 * the loop over the taps; 62 here): its 14 registers are the 8 sums, 4 operands and the 2 pointers, and what the
 * requantization needs besides (the records' pointer, the outputs', the count of blocks) stays on the stack, read
 * when it is needed. */
#define EDGEC_B24_ASM_PIXELS(name, loop, tail, rq)                                                                              \
static EDGEC_HOT void name(const edgec_w32 *x0, int32_t n, const edgec_w32 *w,                                         \
                                                  const edgec_rq *q, int32_t blocks, int8_t *o0, int8_t *o1,           \
                                                  int32_t lo, int32_t hi)                                              \
{                                                                                                                      \
    const edgec_w32 *const end16 = x0 + (n & ~15), *x, *wsave;                                                         \
    uint32_t a0, a1, a2, a3, b0, b1, b2, b3, xa, xb, wa, wb;                                                           \
    (void)lo;                                                                                                          \
    (void)hi;                                                                                                          \
    if (blocks <= 0) return;                                                                                           \
    __asm__ volatile("2:\n\t"                                                                                          \
                     "ldrd %[a0], %[a1], [%[w]], #8\n\t"                                                               \
                     "ldrd %[a2], %[a3], [%[w]], #8\n\t"                                                               \
                     "mov %[b0], %[a0]\n\t"                                                                            \
                     "mov %[b1], %[a1]\n\t"                                                                            \
                     "mov %[b2], %[a2]\n\t"                                                                            \
                     "mov %[b3], %[a3]\n\t"                                                                            \
                     "ldr %[x], %[x0]\n\t"                                                                             \
                     loop tail                                                                                         \
                     "str %[w], %[ws]\n\t"                                                                             \
                     "ldr %[x], %[q]\n\t"                                                                              \
                     rq(a0, b0, 0) rq(a1, b1, 20) rq(a2, b2, 40) rq(a3, b3, 60)                                        \
                     "add %[x], %[x], #80\n\t"                                                                         \
                     "str %[x], %[q]\n\t"                                                                              \
                     "ldr %[w], %[o1]\n\t" /* pixel 1 first: a lone last pixel's o1 is o0 */                           \
                     "bfi %[b0], %[b1], #8, #8\n\t" /* the 4 bytes of a pixel in one word */                         \
                     "bfi %[b0], %[b2], #16, #8\n\t"                                                                   \
                     "bfi %[b0], %[b3], #24, #8\n\t"                                                                   \
                     "str %[b0], [%[w]], #4\n\t"                                                                       \
                     "str %[w], %[o1]\n\t"                                                                             \
                     "ldr %[w], %[o0]\n\t"                                                                             \
                     "bfi %[a0], %[a1], #8, #8\n\t"                                                                   \
                     "bfi %[a0], %[a2], #16, #8\n\t"                                                                  \
                     "bfi %[a0], %[a3], #24, #8\n\t"                                                                  \
                     "str %[a0], [%[w]], #4\n\t"                                                                       \
                     "str %[w], %[o0]\n\t"                                                                             \
                     "ldr %[w], %[ws]\n\t"                                                                             \
                     "ldr %[xa], %[blocks]\n\t"                                                                        \
                     "subs %[xa], %[xa], #1\n\t"                                                                       \
                     "str %[xa], %[blocks]\n\t"                                                                        \
                     "bne 2b\n\t"                                                                                      \
                     : [a0] "=&r"(a0), [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [b0] "=&r"(b0),                 \
                       [b1] "=&r"(b1), [b2] "=&r"(b2), [b3] "=&r"(b3), [x] "=&r"(x), [w] "+r"(w), [xa] "=&r"(xa),      \
                       [xb] "=&r"(xb), [wa] "=&r"(wa), [wb] "=&r"(wb), [q] "+m"(q), [o0] "+m"(o0), [o1] "+m"(o1),      \
                       [blocks] "+m"(blocks), [ws] "=m"(wsave)                                                         \
                     : [x0] "m"(x0), [end] "m"(end16)                                                                  \
                     : "cc", "memory");                                                                                \
}

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
